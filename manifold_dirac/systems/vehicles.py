"""Vehicles on SE(2): knife edge (Chaplygin skate), inclined knife edge,
Chaplygin sled, and a differential-drive vehicle with inputs.

Points are poses ``[[R, x], [0, 1]]``, velocities body twists
``(omega, v_x, v_y)`` of the body frame whose origin is the blade's contact
point and whose x-axis is the blade. "No sideways slip" is ``v_y = 0``:
``A = [0, 0, 1]``, constant in the body frame.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..manifolds import SE2
from ..mechanics.system import LagrangeDiracSystem

__all__ = [
    "KNIFE_EDGE_CONSTRAINT",
    "chaplygin_sled",
    "chaplygin_sled_reference",
    "differential_drive",
    "inclined_knife_edge",
    "inclined_knife_edge_exact",
    "knife_edge",
]

KNIFE_EDGE_CONSTRAINT = np.array([[0.0, 0.0, 1.0]])
"""``v_y = 0`` in the body frame."""


def _x_partial(q, weight):
    # d/de x(q exp(e eta)) = R[0, :] . (eta_vx, eta_vy)
    z = np.zeros(np.shape(q)[:-2])
    return weight * np.stack([z, q[..., 0, 0], q[..., 0, 1]], -1)


def inclined_knife_edge(
    mass: float = 1.0, inertia: float = 0.5, gravity: float = 9.81, incline: float = 0.3, retraction: str = "exp"
) -> LagrangeDiracSystem:
    """A knife edge on a plane inclined by ``incline`` (downhill along ``+x``).

    ``L = m/2 (v_x^2 + v_y^2) + J/2 omega^2 + m g sin(alpha) x``, ``v_y = 0``.
    Exact solution from rest at the origin with ``omega(0) = w``:
    :func:`inclined_knife_edge_exact`. With ``incline = 0`` it is the free
    knife edge (Chaplygin skate).
    """
    w = mass * gravity * np.sin(incline)

    def L(q, v):
        return 0.5 * mass * (v[..., 1] ** 2 + v[..., 2] ** 2) + 0.5 * inertia * v[..., 0] ** 2 + w * q[..., 0, 2]

    def partials(q, v):
        dv = np.stack([inertia * v[..., 0], mass * v[..., 1], mass * v[..., 2]], -1)
        return _x_partial(q, w) + 0 * dv, dv

    name = "inclined_knife_edge" if incline else "knife_edge"
    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, partials=partials, name=name)


def knife_edge(mass: float = 1.0, inertia: float = 0.5, retraction: str = "exp") -> LagrangeDiracSystem:
    """The free knife edge (Chaplygin skate): ``omega``, ``v_x`` constant, a circle."""
    return inclined_knife_edge(mass, inertia, 0.0, 0.0, retraction)


def inclined_knife_edge_exact(t, omega: float = 1.0, gravity: float = 9.81, incline: float = 0.3):
    """``(x, y, theta)`` at times ``t`` ``(T,)`` -> ``(T, 3)``, from rest at the origin, ``theta' = omega``.

    ``theta = w t``, ``x = g sin(a)/(2 w^2) sin^2(w t)``,
    ``y = g sin(a)/(2 w^2) (w t - sin(2 w t)/2)``, for any mass and inertia.
    """
    t = np.asarray(t, dtype=float)
    c = gravity * np.sin(incline) / (2 * omega**2)
    return np.stack([c * np.sin(omega * t) ** 2, c * (omega * t - 0.5 * np.sin(2 * omega * t)), omega * t], -1)


def chaplygin_sled(mass: float = 1.0, inertia: float = 0.2, offset: float = 0.5, retraction: str = "exp") -> LagrangeDiracSystem:
    """Chaplygin sled: blade at the body origin, centre of mass at ``(a, 0)``.

    The centre of mass moves with body velocity ``(v_x, v_y + a omega)``:
    ``L = m/2 (v_x^2 + (v_y + a omega)^2) + J/2 omega^2`` (``J`` about the
    centre of mass), ``v_y = 0``. Energy is conserved; the sled settles into
    straight-line motion (``omega -> 0``) as ``t -> +inf``.
    """
    a = offset

    def L(q, v):
        return 0.5 * mass * (v[..., 1] ** 2 + (v[..., 2] + a * v[..., 0]) ** 2) + 0.5 * inertia * v[..., 0] ** 2

    def partials(q, v):
        s = mass * (v[..., 2] + a * v[..., 0])
        dv = np.stack([a * s + inertia * v[..., 0], mass * v[..., 1], s], -1)
        return np.zeros_like(dv) + 0 * _x_partial(q, 0.0), dv

    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, partials=partials, name="chaplygin_sled")


def differential_drive(
    mass: float = 1.0,
    inertia: float = 0.1,
    drive: Callable[[float], float] | None = None,
    steer: Callable[[float], float] | None = None,
    damping: float = 0.1,
    retraction: str = "exp",
) -> LagrangeDiracSystem:
    """A differential-drive vehicle: a knife edge with forward force and yaw torque inputs.

    ``F(t, q, v) = (tau(t) - c omega, f(t) - c v_x, 0)``: ``f`` the sum of the
    wheel forces, ``tau`` their difference times the half track, ``c`` a
    linear rolling resistance. Defaults: ``f = 1`` for ``t < 2`` then ``0``,
    ``tau = 0.5 sin(t)``.
    """
    f = drive if drive is not None else (lambda t: np.where(t < 2.0, 1.0, 0.0))
    tq = steer if steer is not None else (lambda t: 0.5 * np.sin(t))

    def L(q, v):
        return 0.5 * mass * (v[..., 1] ** 2 + v[..., 2] ** 2) + 0.5 * inertia * v[..., 0] ** 2

    def partials(q, v):
        dv = np.stack([inertia * v[..., 0], mass * v[..., 1], mass * v[..., 2]], -1)
        return np.zeros_like(dv), dv

    def force(t, q, v):
        z = np.zeros_like(v[..., 0])
        return np.stack([tq(t) - damping * v[..., 0] + z, f(t) - damping * v[..., 1] + z, z], -1)

    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, force=force, partials=partials, name="differential_drive")


def chaplygin_sled_reference(t, pose0=(0.0, 0.0, 0.0), omega0: float = 1.0, vx0: float = 1.0,
                             mass: float = 1.0, inertia: float = 0.2, offset: float = 0.5):
    """Tight-tolerance reference ``(x, y, theta)`` of the Chaplygin sled at times ``t`` ``(T,)``.

    Solves the reduced equations ``(J + m a^2) omega' = -m a v_x omega``,
    ``v_x' = a omega^2`` with ``theta' = omega``, ``(x, y)' = v_x (cos, sin)(theta)``
    by ``scipy.integrate.solve_ivp`` (DOP853, rtol = atol = 1e-12).
    """
    from scipy.integrate import solve_ivp

    a, m, J = offset, mass, inertia
    t = np.atleast_1d(np.asarray(t, dtype=float))

    def f(_, y):
        x, yy, th, w, vx = y
        return [vx * np.cos(th), vx * np.sin(th), w, -m * a * vx * w / (J + m * a * a), a * w * w]

    y0 = [pose0[0], pose0[1], pose0[2], omega0, vx0]
    sol = solve_ivp(f, (0.0, float(t.max())), y0, t_eval=t, rtol=1e-12, atol=1e-12, method="DOP853")
    return sol.y[:3].T
