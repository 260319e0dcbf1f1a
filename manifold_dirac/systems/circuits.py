"""Electrical circuits as degenerate Lagrange--Dirac systems.

The LC loop with the capacitor charge ``q_C`` and the inductor charge
``q_L`` as separate coordinates: ``L = l/2 v_L^2 - q_C^2/(2C)`` does not
depend on ``v_C`` (degenerate: ``p_C = 0`` is a primary constraint) and
Kirchhoff's current law ``v_C - v_L = 0`` is the constraint. The charge
oscillates at ``1/sqrt(l C)``. The Lagrangian is written for one point with
``jax.numpy``; the inductance and capacitance are the system's ``params``
(another circuit reuses the compiled step).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._manifolds import Euclidean
from .._mechanics.system import LagrangeDiracSystem

__all__ = ["KIRCHHOFF_LC", "lc_circuit", "lc_circuit_exact"]

KIRCHHOFF_LC = np.array([[1.0, -1.0]])
"""Kirchhoff's current law ``v_C - v_L = 0`` on coordinates ``(q_C, q_L)``."""


def lc_circuit(inductance: float = 1.0, capacitance: float = 0.25) -> LagrangeDiracSystem:
    """The LC loop on ``R^2 = (q_C, q_L)`` with Kirchhoff's law as the constraint.

    Parameters
    ----------
    inductance, capacitance : float
        ``l`` and ``C``.

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(2)`` with the constraint :data:`KIRCHHOFF_LC` and
        analytic partials; ``params = {"inductance", "capacitance"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> lc = md.systems.lc_circuit(inductance=2.0)
    >>> lc.Q, lc.n_constraints
    (Euclidean(2), 1)
    """
    P = {"inductance": np.float64(inductance), "capacitance": np.float64(capacitance)}

    def L(q, v, p):
        return 0.5 * p["inductance"] * v[1] ** 2 - 0.5 * q[0] ** 2 / p["capacitance"]

    def partials(q, v, p):
        z = jnp.zeros_like(q[0])
        return jnp.stack([-q[0] / p["capacitance"], z]), jnp.stack([z, p["inductance"] * v[1]])

    Q = Euclidean(2, names=("q_C", "q_L"))
    return LagrangeDiracSystem(Q, L, KIRCHHOFF_LC, partials=partials, name="lc_circuit", params=P)


def lc_circuit_exact(t, q0: float, i0: float, inductance: float = 1.0, capacitance: float = 0.25):
    """Capacitor charge ``q_C(t)`` from ``q_C(0) = q0``, current ``i(0) = i0``.

    Parameters
    ----------
    t : array-like
        Times.
    q0, i0 : float
        Initial charge and current.
    inductance, capacitance : float
        As in :func:`lc_circuit`.

    Returns
    -------
    numpy.ndarray
        Of the shape of ``t``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.lc_circuit_exact(np.array([0.0, np.pi / 4]), 1.0, 0.0).round(6)
    array([1., 0.])
    """
    w = 1.0 / np.sqrt(inductance * capacitance)
    t = np.asarray(t, dtype=float)
    return q0 * np.cos(w * t) + i0 / w * np.sin(w * t)
