"""Pendulums and oscillators on vector spaces (Euclidean coordinates)."""

from __future__ import annotations

import numpy as np

from ..manifolds import Euclidean
from ..mechanics.system import LagrangeDiracSystem

__all__ = [
    "damped_oscillator",
    "damped_oscillator_exact",
    "double_pendulum",
    "harmonic_oscillator",
    "harmonic_oscillator_exact",
    "pendulum",
    "spherical_pendulum",
    "spherical_pendulum_vertical_momentum",
]


def harmonic_oscillator(n: int = 1, mass: float = 1.0, stiffness: float = 1.0) -> LagrangeDiracSystem:
    """``L = m/2 |v|^2 - k/2 |q|^2`` on ``R^n``; exact solution :func:`harmonic_oscillator_exact`."""

    def L(q, v):
        return 0.5 * mass * np.sum(v * v, axis=-1) - 0.5 * stiffness * np.sum(q * q, axis=-1)

    def partials(q, v):
        return -stiffness * q, mass * v

    return LagrangeDiracSystem(Euclidean(n), L, partials=partials, name="harmonic_oscillator")


def harmonic_oscillator_exact(t, q0, v0, mass: float = 1.0, stiffness: float = 1.0):
    """``q(t), v(t)`` of :func:`harmonic_oscillator`, ``t`` of shape ``(T,)`` -> ``(T, n)``."""
    w = np.sqrt(stiffness / mass)
    t = np.asarray(t, dtype=float)[..., None]
    q = q0 * np.cos(w * t) + v0 / w * np.sin(w * t)
    v = -q0 * w * np.sin(w * t) + v0 * np.cos(w * t)
    return q, v


def damped_oscillator(mass: float = 1.0, stiffness: float = 1.0, damping: float = 0.2) -> LagrangeDiracSystem:
    """Oscillator on ``R^1`` with the force ``F = -c v`` (Lagrange--d'Alembert--Pontryagin, (24))."""
    sysm = harmonic_oscillator(1, mass, stiffness)

    def force(t, q, v):
        return -damping * v

    return LagrangeDiracSystem(sysm.Q, sysm.lagrangian, force=force, partials=sysm.analytic_partials, name="damped_oscillator")


def damped_oscillator_exact(t, q0: float, v0: float, mass: float = 1.0, stiffness: float = 1.0, damping: float = 0.2):
    """Exact ``q(t)`` of the underdamped :func:`damped_oscillator`."""
    t = np.asarray(t, dtype=float)
    g = damping / (2 * mass)
    wd = np.sqrt(stiffness / mass - g * g)
    return np.exp(-g * t) * (q0 * np.cos(wd * t) + (v0 + g * q0) / wd * np.sin(wd * t))


def pendulum(length: float = 1.0, mass: float = 1.0, gravity: float = 9.81) -> LagrangeDiracSystem:
    """Planar pendulum, angle from the downward vertical: ``L = m l^2/2 v^2 + m g l cos q``."""

    def L(q, v):
        return 0.5 * mass * length**2 * v[..., 0] ** 2 + mass * gravity * length * np.cos(q[..., 0])

    def partials(q, v):
        return -mass * gravity * length * np.sin(q), mass * length**2 * v

    return LagrangeDiracSystem(Euclidean(1, names=("theta",)), L, partials=partials, name="pendulum")


def double_pendulum(
    l1: float = 1.0, l2: float = 1.0, m1: float = 1.0, m2: float = 1.0, gravity: float = 9.81
) -> LagrangeDiracSystem:
    """Planar double pendulum, absolute angles from the downward vertical."""

    def L(q, v):
        a, b = q[..., 0], q[..., 1]
        va, vb = v[..., 0], v[..., 1]
        T = 0.5 * (m1 + m2) * l1**2 * va**2 + 0.5 * m2 * l2**2 * vb**2 + m2 * l1 * l2 * va * vb * np.cos(a - b)
        V = -(m1 + m2) * gravity * l1 * np.cos(a) - m2 * gravity * l2 * np.cos(b)
        return T - V

    def partials(q, v):
        a, b = q[..., 0], q[..., 1]
        va, vb = v[..., 0], v[..., 1]
        s = np.sin(a - b)
        c = np.cos(a - b)
        dqa = -m2 * l1 * l2 * va * vb * s - (m1 + m2) * gravity * l1 * np.sin(a)
        dqb = m2 * l1 * l2 * va * vb * s - m2 * gravity * l2 * np.sin(b)
        dva = (m1 + m2) * l1**2 * va + m2 * l1 * l2 * vb * c
        dvb = m2 * l2**2 * vb + m2 * l1 * l2 * va * c
        return np.stack([dqa, dqb], -1), np.stack([dva, dvb], -1)

    return LagrangeDiracSystem(Euclidean(2, names=("theta1", "theta2")), L, partials=partials, name="double_pendulum")


def spherical_pendulum(length: float = 1.0, mass: float = 1.0, gravity: float = 9.81) -> LagrangeDiracSystem:
    """Spherical pendulum on S^2 through the geomstats adapter (needs the ``geomstats`` extra).

    Points are unit vectors ``q`` (the bob's direction from the pivot, ``z`` up),
    velocities frame coordinates in the adapter's orthonormal frame ``E(q)``:
    ``L = m l^2/2 |v|^2 - m g l q_z``. Invariants: the energy and the vertical
    angular momentum ``m l^2 e3 . (q x E(q) v)`` (rotations about ``e3``).

    Notes
    -----
    ``dL/dq`` along ``q -> R_q(e eta)`` with ``v`` fixed is ``-m g l E(q)^T e3``
    (the frame is orthonormal, so ``|v|`` does not depend on ``q``).
    """
    from ..manifolds.geomstats_adapter import Sphere2

    S2 = Sphere2()
    ml2, mgl = mass * length**2, mass * gravity * length

    def L(q, v):
        return 0.5 * ml2 * np.sum(v * v, axis=-1) - mgl * q[..., 2]

    def partials(q, v):
        E = S2.frame(q)
        return -mgl * E[..., 2, :] + 0 * v, ml2 * v + 0 * E[..., 2, :]

    return LagrangeDiracSystem(S2, L, partials=partials, name="spherical_pendulum")


def spherical_pendulum_vertical_momentum(Q, q, p):
    """``e3 . (q x E(q) p)``: the momentum map of rotations about the vertical, ``(..., )``."""
    Ep = np.einsum("...ij,...j->...i", Q.frame(q), p)
    return np.cross(q, Ep)[..., 2]
