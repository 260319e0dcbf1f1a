"""Electrical circuits as degenerate Lagrange--Dirac systems.

The LC loop with the capacitor charge ``q_C`` and the inductor charge
``q_L`` as separate coordinates: ``L = l/2 v_L^2 - q_C^2/(2C)`` does not
depend on ``v_C`` (degenerate: ``p_C = 0`` is a primary constraint) and
Kirchhoff's current law ``v_C - v_L = 0`` is the constraint. The charge
oscillates at ``1/sqrt(l C)``.
"""

from __future__ import annotations

import numpy as np

from ..manifolds import Euclidean
from ..mechanics.system import LagrangeDiracSystem

__all__ = ["KIRCHHOFF_LC", "lc_circuit", "lc_circuit_exact"]

KIRCHHOFF_LC = np.array([[1.0, -1.0]])
"""Kirchhoff's current law ``v_C - v_L = 0`` on coordinates ``(q_C, q_L)``."""


def lc_circuit(inductance: float = 1.0, capacitance: float = 0.25) -> LagrangeDiracSystem:
    """The LC loop on ``R^2 = (q_C, q_L)`` with Kirchhoff's law as the constraint."""
    l, C = inductance, capacitance

    def L(q, v):
        return 0.5 * l * v[..., 1] ** 2 - 0.5 * q[..., 0] ** 2 / C + 0 * v[..., 0]

    def partials(q, v):
        z = np.zeros_like(q[..., 0] + v[..., 0])
        return np.stack([-q[..., 0] / C + z, z], -1), np.stack([z, l * v[..., 1] + z], -1)

    return LagrangeDiracSystem(Euclidean(2, names=("q_C", "q_L")), L, KIRCHHOFF_LC, partials=partials, name="lc_circuit")


def lc_circuit_exact(t, q0: float, i0: float, inductance: float = 1.0, capacitance: float = 0.25):
    """Capacitor charge ``q_C(t)`` from ``q_C(0) = q0``, current ``i(0) = i0``."""
    w = 1.0 / np.sqrt(inductance * capacitance)
    t = np.asarray(t, dtype=float)
    return q0 * np.cos(w * t) + i0 / w * np.sin(w * t)
