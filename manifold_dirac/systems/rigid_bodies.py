"""Rigid bodies: the free rigid body and the heavy top on SO(3), the tumbling brick on SE(3).

On SO(3) points are rotation matrices ``R`` (body to space), velocities body
angular velocities ``w`` (``Rdot = R hat(w)``), momenta body angular
momenta. On SE(3) points are poses ``[[R, x], [0, 1]]`` with ``x`` the
centre of mass, velocities body twists ``(w, v)`` (angular velocity first,
then the velocity of the centre of mass in body axes), momenta
``(I w, m v)``.

The Lagrangians and analytic partials are written for one point with
``jax.numpy``. The physical parameters are the system's ``params`` (traced:
a system built with other values reuses the compiled step, and they are
differentiable); called without them, the functions use the system's own.
:func:`spatial_angular_momentum` and :func:`heavy_top_reference` work on
recorded numpy arrays.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._manifolds import SE3, SO3, Euclidean, ProductManifold
from .._mechanics.system import LagrangeDiracSystem

__all__ = [
    "BRICK_SIDES",
    "brick_inertia",
    "free_rigid_body",
    "heavy_top",
    "heavy_top_reference",
    "se3_spatial_momentum",
    "spatial_angular_momentum",
    "tumbling_brick",
    "tumbling_brick_on_product",
    "tumbling_brick_reference",
]

DEFAULT_INERTIA = (1.0, 2.0, 3.0)


def _principal_moments(inertia, who: str) -> np.ndarray:
    moments = np.asarray(inertia, dtype=float)
    if moments.shape != (3,) or np.any(moments <= 0):
        raise ValueError(f"{who}: inertia must be 3 positive principal moments, got {inertia!r}")
    return moments


def free_rigid_body(inertia=DEFAULT_INERTIA, retraction: str = "exp") -> LagrangeDiracSystem:
    """``L = 1/2 w^T I w`` with ``I = diag(inertia)``.

    Invariants: energy, ``|p|`` and the spatial angular momentum ``R p``
    (a discrete Noether invariant of every left-invariant ``L_d``).

    Parameters
    ----------
    inertia : array-like, shape=[3]
        Positive principal moments of inertia.
    retraction : {"exp", "cayley"}
        Retraction of SO(3).

    Returns
    -------
    LagrangeDiracSystem
        On ``SO3(retraction)`` with analytic partials; ``params = {"inertia"}``.

    Raises
    ------
    ValueError
        If ``inertia`` is not 3 positive numbers.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> body = md.systems.free_rigid_body(inertia=(1.0, 2.0, 3.0))
    >>> body.Q
    SO3(retraction='exp')
    >>> body.params["inertia"]
    array([1., 2., 3.])
    """
    P = {"inertia": _principal_moments(inertia, "free_rigid_body")}

    def L(q, v, p):
        return 0.5 * jnp.sum(p["inertia"] * v * v)

    def partials(q, v, p):
        return jnp.zeros(3, dtype=v.dtype), p["inertia"] * v

    return LagrangeDiracSystem(SO3(retraction), L, partials=partials, name="free_rigid_body", params=P)


def heavy_top(
    inertia=DEFAULT_INERTIA, mgl: float = 1.0, chi=(0.0, 0.0, 1.0), retraction: str = "exp"
) -> LagrangeDiracSystem:
    """Heavy top with a fixed point: ``L = 1/2 w^T I w - m g l e3 . (R chi)``.

    ``chi`` is the unit vector from the fixed point to the centre of mass in
    the body frame, ``mgl`` the product mass * gravity * distance.

    Parameters
    ----------
    inertia : array-like, shape=[3]
        Positive principal moments of inertia about the fixed point.
    mgl : float
        Mass times gravity times the distance to the centre of mass.
    chi : array-like, shape=[3]
        Unit vector to the centre of mass, body frame.
    retraction : {"exp", "cayley"}
        Retraction of SO(3).

    Returns
    -------
    LagrangeDiracSystem
        On ``SO3(retraction)`` with analytic partials;
        ``params = {"inertia", "mgl", "chi"}``.

    Raises
    ------
    ValueError
        If ``inertia`` is not 3 positive numbers or ``chi`` not a 3-vector.

    Notes
    -----
    ``dL/dq`` along ``R -> R exp(e eta)`` is ``-mgl chi x (R^T e3)``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> top = md.systems.heavy_top(mgl=2.0, retraction="cayley")
    >>> top.Q
    SO3(retraction='cayley')
    >>> float(top.params["mgl"])
    2.0
    """
    c = np.asarray(chi, dtype=float)
    if c.shape != (3,):
        raise ValueError(f"heavy_top: chi must be a 3-vector, got {chi!r}")
    P = {"inertia": _principal_moments(inertia, "heavy_top"), "mgl": np.float64(mgl), "chi": c}

    def L(q, v, p):
        return 0.5 * jnp.sum(p["inertia"] * v * v) - p["mgl"] * jnp.sum(q[2, :] * p["chi"])

    def partials(q, v, p):
        up = q[2, :]  # R^T e3
        return -p["mgl"] * jnp.cross(p["chi"], up), p["inertia"] * v

    return LagrangeDiracSystem(SO3(retraction), L, partials=partials, name="heavy_top", params=P)


def spatial_angular_momentum(q, p):
    """``R p``: the body momentum seen in space (numpy, over leading axes).

    Parameters
    ----------
    q : array-like, shape=[..., 3, 3]
        Rotation matrices (body to space).
    p : array-like, shape=[..., 3]
        Body angular momenta.

    Returns
    -------
    numpy.ndarray, shape=[..., 3]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.spatial_angular_momentum(np.eye(3), np.array([1.0, 2.0, 3.0]))
    array([1., 2., 3.])
    """
    return np.einsum("...ij,...j->...i", np.asarray(q), np.asarray(p))


def heavy_top_reference(T: float, R0, w0, inertia=DEFAULT_INERTIA, mgl: float = 1.0, chi=(0.0, 0.0, 1.0)):
    """Rotation matrix of the heavy top at time ``T`` by a tight ``solve_ivp``.

    Integrates ``R' = R hat(w)``, ``I w' = (I w) x w - mgl chi x (R^T e3)``
    with DOP853 at ``rtol = atol = 1e-12`` (the reference of the tests and
    the retraction study).

    Parameters
    ----------
    T : float
        Final time.
    R0 : array-like, shape=[3, 3]
        Initial rotation.
    w0 : array-like, shape=[3]
        Initial body angular velocity.
    inertia, mgl, chi
        As in :func:`heavy_top`.

    Returns
    -------
    numpy.ndarray, shape=[3, 3]
        The rotation at ``T``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> R = md.systems.heavy_top_reference(0.5, np.eye(3), np.array([0.0, 0.0, 1.0]))
    >>> R.shape, bool(np.allclose(R.T @ R, np.eye(3)))
    ((3, 3), True)
    """
    from scipy.integrate import solve_ivp

    moments = np.asarray(inertia, dtype=float)
    c = np.asarray(chi, dtype=float)

    def hat(w):
        return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])

    def f(_, y):
        R = y[:9].reshape(3, 3)
        w = y[9:]
        torque = -mgl * np.cross(c, R.T @ np.array([0.0, 0.0, 1.0]))
        return np.concatenate([(R @ hat(w)).ravel(), (np.cross(moments * w, w) + torque) / moments])

    y0 = np.concatenate([np.asarray(R0, dtype=float).ravel(), np.asarray(w0, dtype=float)])
    sol = solve_ivp(f, (0.0, float(T)), y0, rtol=1e-12, atol=1e-12, method="DOP853")
    return sol.y[:9, -1].reshape(3, 3)


# ------------------------------------------------------------------ SE(3)
BRICK_SIDES = (0.2, 0.1, 0.05)
"""Side lengths (m) of the default brick along its body axes (a common building brick)."""


def brick_inertia(mass: float = 1.0, sides=BRICK_SIDES) -> np.ndarray:
    """Principal moments of a homogeneous box about its centre: ``m/12 (b^2 + c^2, a^2 + c^2, a^2 + b^2)``.

    Parameters
    ----------
    mass : float
        Positive mass.
    sides : array-like, shape=[3]
        Positive side lengths ``(a, b, c)`` along the body axes.

    Returns
    -------
    numpy.ndarray, shape=[3]
    """
    a = np.asarray(sides, dtype=float)
    if a.shape != (3,) or np.any(~(a > 0)) or not (float(mass) > 0):
        raise ValueError(f"brick_inertia: need a positive mass and 3 positive sides, got {mass!r}, {sides!r}")
    s2 = a * a
    return float(mass) / 12.0 * np.array([s2[1] + s2[2], s2[0] + s2[2], s2[0] + s2[1]])


def tumbling_brick(
    mass: float = 1.0, sides=BRICK_SIDES, gravity: float = 9.81, retraction: str = "exp"
) -> LagrangeDiracSystem:
    """A free rigid body (a brick) in gravity on SE(3), the body frame at its centre of mass.

    ``L = 1/2 w^T I w + m/2 |v|^2 - m g e3 . x`` with ``I = diag(brick_inertia(mass, sides))``,
    twist ``(w, v)`` (``v`` the centre of mass's velocity in body axes, so
    ``|x'| = |v|``). The Newton-Euler equations: ``I w' = (I w) x w`` (the
    rotation is torque-free) and ``x'' = -g e3`` (a parabola):
    :func:`tumbling_brick_reference`.

    Invariants: energy; the horizontal spatial linear momentum and the
    vertical spatial angular momentum about the origin
    (:func:`se3_spatial_momentum`); with ``gravity = 0`` the whole spatial
    momentum, a discrete Noether invariant of every retraction ``q tau(xi)``.

    Parameters
    ----------
    mass : float
        Positive mass ``m``.
    sides : array-like, shape=[3]
        Side lengths along the body axes (``brick_inertia``).
    gravity : float
        Gravitational acceleration ``g`` along ``-e3``.
    retraction : {"exp", "cayley", "so3xr3"}
        Retraction of SE(3) (``docs/manifolds.md``: which to pick).

    Returns
    -------
    LagrangeDiracSystem
        On ``SE3(retraction)`` with analytic partials;
        ``params = {"inertia", "mass", "gravity"}``.

    Notes
    -----
    Along ``q -> q exp(e eta)``, ``eta = (dw, dv)``, the centre of mass moves
    by ``R dv`` and the kinetic energy (left-invariant) does not change, so
    ``dL/dq = (0, -m g R^T e3)`` and ``dL/dv = (I w, m v)``. The schemes
    discretize the Lagrange-d'Alembert-Pontryagin principle (Parks & Leok
    2017, eqs. (3.4)-(3.6)) in the retraction chart.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> brick = md.systems.tumbling_brick(mass=2.0)
    >>> brick.Q
    SE3(retraction='exp')
    >>> float(brick.params["mass"])
    2.0
    """
    P = {
        "inertia": brick_inertia(mass, sides),
        "mass": np.float64(mass),
        "gravity": np.float64(gravity),
    }

    def L(q, v, p):
        w, u = v[:3], v[3:]
        return (0.5 * jnp.sum(p["inertia"] * w * w) + 0.5 * p["mass"] * jnp.sum(u * u)
                - p["mass"] * p["gravity"] * q[2, 3])

    def partials(q, v, p):
        dq = jnp.concatenate([jnp.zeros(3, dtype=v.dtype), -p["mass"] * p["gravity"] * q[2, :3]])
        return dq, jnp.concatenate([p["inertia"] * v[:3], p["mass"] * v[3:]])

    return LagrangeDiracSystem(SE3(retraction), L, partials=partials, name="tumbling_brick", params=P)


def tumbling_brick_on_product(
    mass: float = 1.0, sides=BRICK_SIDES, gravity: float = 9.81, retraction: str = "exp"
) -> LagrangeDiracSystem:
    """The brick of :func:`tumbling_brick` on ``ProductManifold(SO3(retraction), Euclidean(3))``.

    Points are pairs ``(R, x)``, velocities ``(w, u)`` with ``u = x'`` in
    *space* axes (the product's frame), ``L = 1/2 w^T I w + m/2 |u|^2 - m g x_3``:
    the same body, with rotation and translation retracted independently
    and the translation velocity in the fixed frame (``u = R v``).

    Parameters
    ----------
    mass, sides, gravity
        As in :func:`tumbling_brick`.
    retraction : {"exp", "cayley"}
        Retraction of the SO(3) factor.

    Returns
    -------
    LagrangeDiracSystem
        On ``ProductManifold(SO3(retraction), Euclidean(3))`` with analytic
        partials ``dL/dq = (0, -m g e3)``, ``dL/dv = (I w, m u)``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> brick = md.systems.tumbling_brick_on_product()
    >>> brick.Q
    ProductManifold(SO3(retraction='exp'), Euclidean(3))
    """
    P = {
        "inertia": brick_inertia(mass, sides),
        "mass": np.float64(mass),
        "gravity": np.float64(gravity),
    }

    def L(q, v, p):
        w, u = v[:3], v[3:]
        return (0.5 * jnp.sum(p["inertia"] * w * w) + 0.5 * p["mass"] * jnp.sum(u * u)
                - p["mass"] * p["gravity"] * q[1][2])

    def partials(q, v, p):
        dq = jnp.zeros(6, dtype=v.dtype).at[5].set(-p["mass"] * p["gravity"])
        return dq, jnp.concatenate([p["inertia"] * v[:3], p["mass"] * v[3:]])

    Q = ProductManifold(SO3(retraction), Euclidean(3))
    return LagrangeDiracSystem(Q, L, partials=partials, name="tumbling_brick_on_product", params=P)


def se3_spatial_momentum(q, p):
    """The spatial momentum ``Ad*_{q^{-1}} p`` of body momenta on SE(3) (numpy, over leading axes).

    For ``q = (R, x)`` and ``p = (pi, P)`` (body angular momentum about the
    body origin, body linear momentum): ``(R pi + x x R P, R P)``, the
    angular momentum about the spatial origin, then the linear momentum.

    Parameters
    ----------
    q : array-like, shape=[..., 4, 4], float64
        Poses ``(R, x)`` as homogeneous matrices (``x`` in m).
    p : array-like, shape=[..., 6], float64
        Body momenta ``(pi, P)``: angular (kg m^2/s) then linear (kg m/s).

    Returns
    -------
    numpy.ndarray, shape=[..., 6]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> q = np.eye(4); q[:3, 3] = [1.0, 0.0, 0.0]
    >>> md.systems.se3_spatial_momentum(q, np.array([0.0, 0.0, 0.0, 0.0, 1.0, 0.0]))
    array([0., 0., 1., 0., 1., 0.])
    """
    q, p = np.asarray(q), np.asarray(p)
    R, x = q[..., :3, :3], q[..., :3, 3]
    lin = np.einsum("...ij,...j->...i", R, p[..., 3:])
    ang = np.einsum("...ij,...j->...i", R, p[..., :3]) + np.cross(x, lin)
    return np.concatenate([ang, lin], axis=-1)


def tumbling_brick_reference(t, q0, v0, mass: float = 1.0, sides=BRICK_SIDES, gravity: float = 9.81):
    """Poses of the tumbling brick at times ``t`` by a tight ``solve_ivp`` of the Newton-Euler equations.

    ``R' = R hat(w)``, ``I w' = (I w) x w`` with DOP853 at
    ``rtol = atol = 1e-13``; the centre of mass in closed form,
    ``x = x0 + t R0 v0 - g t^2/2 e3``.

    Parameters
    ----------
    t : float or array-like, shape=[T]
        Times (``>= 0``).
    q0 : array-like, shape=[4, 4]
        Initial pose.
    v0 : array-like, shape=[6]
        Initial body twist ``(w, v)``.
    mass, sides, gravity
        As in :func:`tumbling_brick`.

    Returns
    -------
    numpy.ndarray, shape=[4, 4] or [T, 4, 4]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> poses = md.systems.tumbling_brick_reference(np.array([0.0, 1.0]), np.eye(4), np.zeros(6))
    >>> poses.shape, poses[1, :3, 3].round(3)
    ((2, 4, 4), array([ 0.   ,  0.   , -4.905]))
    """
    from scipy.integrate import solve_ivp

    ts = np.atleast_1d(np.asarray(t, dtype=float))
    moments = brick_inertia(mass, sides)
    q0, v0 = np.asarray(q0, dtype=float), np.asarray(v0, dtype=float)
    R0, x0 = q0[:3, :3], q0[:3, 3]

    def hat(w):
        return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])

    def f(_, y):
        R, w = y[:9].reshape(3, 3), y[9:]
        return np.concatenate([(R @ hat(w)).ravel(), np.cross(moments * w, w) / moments])

    if float(np.max(ts)) == 0.0:  # solve_ivp has no interval to integrate over
        Rs = np.broadcast_to(R0, (len(ts), 3, 3))
    else:
        sol = solve_ivp(f, (0.0, float(np.max(ts))), np.concatenate([R0.ravel(), v0[:3]]), t_eval=np.sort(ts),
                        rtol=1e-13, atol=1e-13, method="DOP853")
        order = np.argsort(np.argsort(ts))
        Rs = sol.y[:9].T.reshape(-1, 3, 3)[order]
    xs = x0 + ts[:, None] * (R0 @ v0[3:]) - 0.5 * gravity * ts[:, None] ** 2 * np.array([0.0, 0.0, 1.0])
    out = np.zeros((len(ts), 4, 4))
    out[:, :3, :3], out[:, :3, 3], out[:, 3, 3] = Rs, xs, 1.0
    return out[0] if np.ndim(t) == 0 else out
