"""Vehicles on SE(2): knife edge (Chaplygin skate), inclined knife edge,
Chaplygin sled, and a differential-drive vehicle with inputs.

Points are poses ``[[R, x], [0, 1]]``, velocities body twists
``(omega, v_x, v_y)`` of the body frame whose origin is the blade's contact
point and whose x-axis is the blade. "No sideways slip" is ``v_y = 0``:
``A = [0, 0, 1]``, constant in the body frame.

Lagrangians, forces and analytic partials are written for one point with
``jax.numpy``. The physical parameters are the system's ``params`` (traced:
a system built with other values -- a heavier skate, another incline --
reuses the compiled step, and they are differentiable); called without
them, the functions use the system's own. The exact and reference
solutions are numpy/scipy.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from .._manifolds import SE2
from .._mechanics.system import LagrangeDiracSystem

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
    """``weight * d/de x(q exp(e eta))`` as a covector: ``weight * (0, R[0, 0], R[0, 1])``."""
    return weight * jnp.stack([jnp.zeros_like(q[0, 0]), q[0, 0], q[0, 1]])


def inclined_knife_edge(
    mass: float = 1.0,
    inertia: float = 0.5,
    gravity: float = 9.81,
    incline: float = 0.3,
    retraction: str = "exp",
) -> LagrangeDiracSystem:
    """A knife edge on a plane inclined by ``incline`` (downhill along ``+x``).

    ``L = m/2 (v_x^2 + v_y^2) + J/2 omega^2 + m g sin(alpha) x``, ``v_y = 0``.
    Exact solution from rest at the origin with ``omega(0) = w``:
    :func:`inclined_knife_edge_exact`. With ``incline = 0`` it is the free
    knife edge (Chaplygin skate).

    Parameters
    ----------
    mass : float
        Mass ``m``.
    inertia : float
        Moment of inertia ``J`` about the contact point.
    gravity : float
        Gravitational acceleration ``g``.
    incline : float
        Angle ``alpha`` of the plane (radians).
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2).

    Returns
    -------
    LagrangeDiracSystem
        On ``SE2(retraction)`` with the constraint :data:`KNIFE_EDGE_CONSTRAINT`
        and analytic partials; ``params = {"mass", "inertia", "pull"}`` with
        ``pull = m g sin(alpha)``. Named ``"knife_edge"`` when ``incline = 0``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> edge = md.systems.inclined_knife_edge(incline=0.3)
    >>> edge.Q, edge.n_constraints
    (SE2(retraction='exp'), 1)
    >>> round(float(edge.params["pull"]), 4)
    2.8991
    """
    # the downhill pull m g sin(alpha) is one parameter: the free knife edge is the same program with 0
    P = {"mass": np.float64(mass), "inertia": np.float64(inertia),
         "pull": np.float64(mass * gravity * np.sin(incline))}

    def L(q, v, p):
        kinetic = 0.5 * p["mass"] * (v[1] ** 2 + v[2] ** 2) + 0.5 * p["inertia"] * v[0] ** 2
        return kinetic + p["pull"] * q[0, 2]

    def partials(q, v, p):
        dv = jnp.stack([p["inertia"] * v[0], p["mass"] * v[1], p["mass"] * v[2]])
        return _x_partial(q, p["pull"]), dv

    name = "inclined_knife_edge" if incline else "knife_edge"
    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, partials=partials, name=name,
                               params=P)


def knife_edge(mass: float = 1.0, inertia: float = 0.5, retraction: str = "exp") -> LagrangeDiracSystem:
    """The free knife edge (Chaplygin skate): ``omega``, ``v_x`` constant, a circle.

    Parameters
    ----------
    mass, inertia : float
        As in :func:`inclined_knife_edge`.
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2).

    Returns
    -------
    LagrangeDiracSystem
        :func:`inclined_knife_edge` with ``incline = 0`` (the same compiled
        program: only a parameter differs).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> skate = md.systems.knife_edge(retraction="cayley")
    >>> skate.Q, skate.name
    (SE2(retraction='cayley'), 'knife_edge')
    """
    return inclined_knife_edge(mass, inertia, 0.0, 0.0, retraction)


def inclined_knife_edge_exact(t, omega: float = 1.0, gravity: float = 9.81, incline: float = 0.3):
    """``(x, y, theta)`` at times ``t`` ``(T,)`` -> ``(T, 3)``, from rest at the origin, ``theta' = omega``.

    ``theta = w t``, ``x = g sin(a)/(2 w^2) sin^2(w t)``,
    ``y = g sin(a)/(2 w^2) (w t - sin(2 w t)/2)``, for any mass and inertia.

    Parameters
    ----------
    t : array-like, shape=[T]
        Times.
    omega : float
        The constant heading rate ``w`` (nonzero).
    gravity, incline : float
        As in :func:`inclined_knife_edge`.

    Returns
    -------
    numpy.ndarray, shape=[T, 3]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.inclined_knife_edge_exact(np.array([0.0, np.pi]), omega=1.0).round(4)
    array([[0.    , 0.    , 0.    ],
           [0.    , 4.5538, 3.1416]])
    """
    t = np.asarray(t, dtype=float)
    c = gravity * np.sin(incline) / (2 * omega**2)
    wt = omega * t
    return np.stack([c * np.sin(wt) ** 2, c * (wt - 0.5 * np.sin(2 * wt)), wt], -1)


def chaplygin_sled(
    mass: float = 1.0, inertia: float = 0.2, offset: float = 0.5, retraction: str = "exp"
) -> LagrangeDiracSystem:
    """Chaplygin sled: blade at the body origin, centre of mass at ``(a, 0)``.

    The centre of mass moves with body velocity ``(v_x, v_y + a omega)``:
    ``L = m/2 (v_x^2 + (v_y + a omega)^2) + J/2 omega^2`` (``J`` about the
    centre of mass), ``v_y = 0``. Energy is conserved; the sled settles into
    straight-line motion (``omega -> 0``) as ``t -> +inf``.

    Parameters
    ----------
    mass : float
        Mass ``m``.
    inertia : float
        Moment of inertia ``J`` about the centre of mass.
    offset : float
        Distance ``a`` from the blade to the centre of mass along the blade.
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2).

    Returns
    -------
    LagrangeDiracSystem
        On ``SE2(retraction)`` with :data:`KNIFE_EDGE_CONSTRAINT` and analytic
        partials; ``params = {"mass", "inertia", "offset"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> sled = md.systems.chaplygin_sled(offset=0.5)
    >>> sled.Q, sorted(sled.params)
    (SE2(retraction='exp'), ['inertia', 'mass', 'offset'])
    """
    P = {"mass": np.float64(mass), "inertia": np.float64(inertia), "offset": np.float64(offset)}

    def L(q, v, p):
        m, a = p["mass"], p["offset"]
        return 0.5 * m * (v[1] ** 2 + (v[2] + a * v[0]) ** 2) + 0.5 * p["inertia"] * v[0] ** 2

    def partials(q, v, p):
        m, a = p["mass"], p["offset"]
        s = m * (v[2] + a * v[0])
        dv = jnp.stack([a * s + p["inertia"] * v[0], m * v[1], s])
        return jnp.zeros_like(dv), dv

    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, partials=partials,
                               name="chaplygin_sled", params=P)


def _default_drive(t):
    return jnp.where(t < 2.0, 1.0, 0.0)


def _default_steer(t):
    return 0.5 * jnp.sin(t)


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

    Parameters
    ----------
    mass : float
        Mass.
    inertia : float
        Yaw moment of inertia.
    drive : callable ``t -> f``, optional
        Forward force; a scalar time in, a scalar out, traced by JAX: write it
        with ``jax.numpy`` (``jnp.where``, not ``if``).
    steer : callable ``t -> tau``, optional
        Yaw torque, likewise.
    damping : float
        Linear rolling resistance ``c``.
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2).

    Returns
    -------
    LagrangeDiracSystem
        On ``SE2(retraction)`` with :data:`KNIFE_EDGE_CONSTRAINT`, the force
        above and analytic partials; ``params = {"mass", "inertia", "damping"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> robot = md.systems.differential_drive(damping=0.2)
    >>> robot.Q, robot.has_force
    (SE2(retraction='exp'), True)
    """
    f = drive if drive is not None else _default_drive
    tq = steer if steer is not None else _default_steer
    P = {"mass": np.float64(mass), "inertia": np.float64(inertia), "damping": np.float64(damping)}

    def L(q, v, p):
        return 0.5 * p["mass"] * (v[1] ** 2 + v[2] ** 2) + 0.5 * p["inertia"] * v[0] ** 2

    def partials(q, v, p):
        dv = jnp.stack([p["inertia"] * v[0], p["mass"] * v[1], p["mass"] * v[2]])
        return jnp.zeros_like(dv), dv

    def force(t, q, v, p):
        c = p["damping"]
        return jnp.stack([tq(t) - c * v[0], f(t) - c * v[1], jnp.zeros_like(v[2])]).astype(v.dtype)

    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, force=force, partials=partials,
                               name="differential_drive", params=P)


def chaplygin_sled_reference(t, pose0=(0.0, 0.0, 0.0), omega0: float = 1.0, vx0: float = 1.0,
                             mass: float = 1.0, inertia: float = 0.2, offset: float = 0.5):
    """Tight-tolerance reference ``(x, y, theta)`` of the Chaplygin sled at times ``t`` ``(T,)``.

    Solves the reduced equations ``(J + m a^2) omega' = -m a v_x omega``,
    ``v_x' = a omega^2`` with ``theta' = omega``, ``(x, y)' = v_x (cos, sin)(theta)``
    by ``scipy.integrate.solve_ivp`` (DOP853, rtol = atol = 1e-12).

    Parameters
    ----------
    t : array-like, shape=[T]
        Times (``>= 0``).
    pose0 : tuple of float
        Initial ``(x, y, theta)``.
    omega0, vx0 : float
        Initial heading rate and forward speed.
    mass, inertia, offset : float
        As in :func:`chaplygin_sled`.

    Returns
    -------
    numpy.ndarray, shape=[T, 3]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.chaplygin_sled_reference(np.array([0.0, 1.0])).round(4)
    array([[0.    , 0.    , 0.    ],
           [1.0451, 0.3891, 0.5789]])
    """
    from scipy.integrate import solve_ivp

    a, m, J = offset, mass, inertia
    t = np.atleast_1d(np.asarray(t, dtype=float))

    def f(_, y):
        _, _, th, w, vx = y
        return [vx * np.cos(th), vx * np.sin(th), w, -m * a * vx * w / (J + m * a * a), a * w * w]

    y0 = [pose0[0], pose0[1], pose0[2], omega0, vx0]
    if not t.max() > 0.0:  # only t = 0 asked for: an empty time span is not an ODE solve
        return np.broadcast_to(np.asarray(y0[:3], dtype=float), (t.size, 3)).copy()
    sol = solve_ivp(f, (0.0, float(t.max())), y0, t_eval=t, rtol=1e-12, atol=1e-12, method="DOP853")
    return sol.y[:3].T
