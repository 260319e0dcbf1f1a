"""The worked interconnected systems (``docs/interconnection.md``).

1. a mass--spring chain torn into two subsystems and joined by ``Sigma``;
2. the LC loop assembled from an inductor and a capacitor (Kirchhoff's current law);
3. the vertical rolling disk: a planar body on SE(2) and a wheel angle,
   rolling without slipping;
4. a homogeneous ball rolling on a plane: SO(3) x R^2;
5. a two-wheeled cart: two rolling disks (each an interconnection) joined by
   an axle -- an interconnection of interconnections.

Every Lagrangian and partial is written for ONE point with ``jax.numpy``
(``v[0]``, never ``v[..., 0]``); the engine batches with ``jax.vmap``. The
physical constants are ``params`` -- each subsystem's its own, the
interaction's (a radius, an axle's length) the interconnection's -- so a
system built again with other constants runs the programs compiled for the
first. The closed-form reference solutions (``*_exact``) are plain numpy
functions of time.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._interconnection import (
    InterconnectedSystem,
    Interaction,
    equal_velocities,
    interconnect,
    linear_interaction,
    rolling_ball_on_plane,
    rolling_without_slipping,
)
from .._manifolds.euclidean import Euclidean
from .._manifolds.se2 import SE2
from .._manifolds.so3 import SO3
from .._mechanics.system import LagrangeDiracSystem
from .vehicles import KNIFE_EDGE_CONSTRAINT

__all__ = [
    "lc_from_elements",
    "mass_spring_monolithic",
    "mass_spring_torn",
    "rolling_ball",
    "rolling_ball_exact",
    "rolling_disk",
    "rolling_disk_exact",
    "two_wheel_cart",
    "two_wheel_cart_flat",
]



# 1 ----------------------------------------------------------------- springs
def mass_spring_monolithic(m1=1.0, m2=2.0, k1=3.0, k12=1.5, k2=2.0) -> LagrangeDiracSystem:
    """Two masses on a line, walls -- k1 -- m1 -- k12 -- m2 -- k2 -- walls, on ``R^2``.

    ``L = m1/2 x1'^2 + m2/2 x2'^2 - k1/2 x1^2 - k12/2 (x2 - x1)^2 - k2/2 x2^2``;
    ``params = {"m1", "m2", "k1", "k12", "k2"}``.

    Parameters
    ----------
    m1, m2 : float
        The two masses (kg).
    k1, k12, k2 : float
        The stiffnesses of the left wall spring, the coupling spring and the
        right wall spring (N/m).

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(2)``, coordinates ``(x1, x2)`` (m).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> chain = md.systems.mass_spring_monolithic(k12=2.0)
    >>> chain.Q
    Euclidean(2)
    >>> float(chain.params["k12"])
    2.0
    """
    P = {"m1": np.float64(m1), "m2": np.float64(m2), "k1": np.float64(k1), "k12": np.float64(k12),
         "k2": np.float64(k2)}

    def L(q, v, p):
        x1, x2 = q[0], q[1]
        return (0.5 * p["m1"] * v[0] ** 2 + 0.5 * p["m2"] * v[1] ** 2
                - 0.5 * p["k1"] * x1**2 - 0.5 * p["k12"] * (x2 - x1) ** 2 - 0.5 * p["k2"] * x2**2)

    def partials(q, v, p):
        x1, x2 = q[0], q[1]
        dq = jnp.stack([-p["k1"] * x1 + p["k12"] * (x2 - x1), -p["k12"] * (x2 - x1) - p["k2"] * x2])
        return dq, jnp.stack([p["m1"] * v[0], p["m2"] * v[1]])

    return LagrangeDiracSystem(Euclidean(2, names=("x1", "x2")), L, partials=partials, name="mass_spring",
                               params=P)


def mass_spring_torn(m1=1.0, m2=2.0, k1=3.0, k12=1.5, k2=2.0) -> InterconnectedSystem:
    """The same chain torn at the second mass.

    ``left`` on ``(x1, y)`` holds m1 and both springs k1, k12, ending at a
    massless port ``y`` (degenerate in ``y'``); ``right`` on ``x2`` holds m2
    and k2. ``Sigma``: ``y' = x2'`` (so ``y = x2`` along motions that start so).

    Parameters
    ----------
    m1, m2 : float
        The two masses (kg).
    k1, k12, k2 : float
        The stiffnesses of the left wall spring, the coupling spring and the
        right wall spring (N/m).

    Returns
    -------
    InterconnectedSystem
        On ``Euclidean(2) x Euclidean(1)``, coordinates ``(x1, y, x2)`` (m),
        with one interaction constraint; ``params`` ``({"m1", "k1", "k12"},
        {"m2", "k2"}, {"interaction": ({"ratio": 1},)})``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> torn = md.systems.mass_spring_torn()
    >>> torn.Q
    ProductManifold(Euclidean(2), Euclidean(1))
    >>> torn.n_constraints
    1
    """

    def L_left(q, v, p):
        x1, y = q[0], q[1]
        return 0.5 * p["m1"] * v[0] ** 2 - 0.5 * p["k1"] * x1**2 - 0.5 * p["k12"] * (y - x1) ** 2 + 0.0 * v[1]

    def dL_left(q, v, p):
        x1, y = q[0], q[1]
        return (jnp.stack([-p["k1"] * x1 + p["k12"] * (y - x1), -p["k12"] * (y - x1)]),
                jnp.stack([p["m1"] * v[0], jnp.zeros_like(v[1])]))

    def L_right(q, v, p):
        return 0.5 * p["m2"] * v[0] ** 2 - 0.5 * p["k2"] * q[0] ** 2

    def dL_right(q, v, p):
        return -p["k2"] * q, p["m2"] * v

    left = LagrangeDiracSystem(Euclidean(2, names=("x1", "y")), L_left, partials=dL_left, name="left",
                               params={"m1": np.float64(m1), "k1": np.float64(k1), "k12": np.float64(k12)})
    right = LagrangeDiracSystem(Euclidean(1, names=("x2",)), L_right, partials=dL_right, name="right",
                                params={"m2": np.float64(m2), "k2": np.float64(k2)})
    return interconnect(left, right, interaction=equal_velocities(("left", 1), ("right", 0)),
                        name="mass_spring_torn")


# 2 ------------------------------------------------------------------ circuit
def lc_from_elements(inductance=1.0, capacitance=0.25) -> InterconnectedSystem:
    """An inductor (``L = l/2 i^2``) and a capacitor (``L = -q^2/(2C)``, degenerate)
    joined by Kirchhoff's current law ``q_C' = q_L'``; oscillates at ``1/sqrt(l C)``.

    Parameters
    ----------
    inductance : float
        The inductance ``l`` (H).
    capacitance : float
        The capacitance ``C`` (F).

    Returns
    -------
    InterconnectedSystem
        On ``Euclidean(1) x Euclidean(1)``: the charges ``(q_C, q_L)`` (C);
        ``params`` ``({"capacitance"}, {"inductance"}, {"interaction": ({"ratio": 1},)})``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> lc = md.systems.lc_from_elements(inductance=2.0, capacitance=0.5)
    >>> lc.Q
    ProductManifold(Euclidean(1), Euclidean(1))
    >>> lc.names
    ('capacitor', 'inductor')
    """
    inductor = LagrangeDiracSystem(
        Euclidean(1, names=("q_L",)), lambda q, v, p: 0.5 * p["inductance"] * v[0] ** 2,
        partials=lambda q, v, p: (jnp.zeros_like(q), p["inductance"] * v), name="inductor",
        params={"inductance": np.float64(inductance)})
    capacitor = LagrangeDiracSystem(
        Euclidean(1, names=("q_C",)), lambda q, v, p: -0.5 * q[0] ** 2 / p["capacitance"] + 0.0 * v[0],
        partials=lambda q, v, p: (-q / p["capacitance"], jnp.zeros_like(v)), name="capacitor",
        params={"capacitance": np.float64(capacitance)})
    return interconnect(capacitor, inductor, interaction=equal_velocities(("capacitor", 0), ("inductor", 0)),
                        name="lc_from_elements")


# 3 ------------------------------------------------------------- rolling disk
def _planar_body(mass, yaw_inertia, name="body", retraction="exp") -> LagrangeDiracSystem:
    """A planar body on SE(2) that cannot slip sideways: ``L = m/2 (v_x^2 + v_y^2) + I/2 w^2``;
    ``params = {"mass", "yaw_inertia"}``."""

    def L(q, v, p):
        return 0.5 * p["mass"] * (v[1] ** 2 + v[2] ** 2) + 0.5 * p["yaw_inertia"] * v[0] ** 2

    def partials(q, v, p):
        dv = jnp.stack([p["yaw_inertia"] * v[0], p["mass"] * v[1], p["mass"] * v[2]])
        return jnp.zeros_like(dv), dv

    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, partials=partials, name=name,
                               params={"mass": np.float64(mass), "yaw_inertia": np.float64(yaw_inertia)})


def _wheel(roll_inertia, name="wheel") -> LagrangeDiracSystem:
    """A wheel's rolling angle on ``R``: ``L = I/2 phi'^2``; ``params = {"roll_inertia"}``."""
    return LagrangeDiracSystem(
        Euclidean(1, names=("phi",)), lambda q, v, p: 0.5 * p["roll_inertia"] * v[0] ** 2,
        partials=lambda q, v, p: (jnp.zeros_like(v), p["roll_inertia"] * v), name=name,
        params={"roll_inertia": np.float64(roll_inertia)})


def rolling_disk(radius=0.5, mass=1.0, yaw_inertia=0.0625, roll_inertia=0.125, name="rolling_disk",
                 retraction="exp") -> InterconnectedSystem:
    """The vertical rolling disk: ``body`` (SE(2), no sideways slip) and ``wheel``
    (rolling angle), joined by rolling without slipping ``v_x = R phi'``.

    The heading rate and the rolling rate are constant; the contact point runs
    on a circle of radius ``R phi'/theta'`` (:func:`rolling_disk_exact`).

    Parameters
    ----------
    radius : float
        The disk's radius ``R`` (m).
    mass : float
        The disk's mass (kg).
    yaw_inertia : float
        The moment of inertia about the vertical axis (kg m^2).
    roll_inertia : float
        The moment of inertia about the rolling axis (kg m^2).
    name : str
        The interconnected system's name (the prefix of its parts' names when
        it is itself a part, as in :func:`two_wheel_cart`).
    retraction : str
        The retraction on SE(2), ``"exp"`` or ``"cayley"``.

    Returns
    -------
    InterconnectedSystem
        On ``SE2 x Euclidean(1)``: ``(theta, x, y)`` and the rolling angle
        ``phi``; ``params`` ``({"mass", "yaw_inertia"}, {"roll_inertia"},
        {"interaction": ({"radius": R},)})``: another radius or mass runs the
        programs compiled for the first, and ``rollout`` differentiates
        with respect to them.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> disk = md.systems.rolling_disk(radius=0.5)
    >>> disk.Q
    ProductManifold(SE2(retraction='exp'), Euclidean(1))
    >>> disk.names
    ('body', 'wheel')
    >>> float(disk.params[2]["interaction"][0]["radius"])
    0.5
    """
    body = _planar_body(mass, yaw_inertia, retraction=retraction)
    wheel = _wheel(roll_inertia)
    return interconnect(body, wheel, interaction=rolling_without_slipping("body", "wheel", radius), name=name)


def rolling_disk_exact(t, radius, theta_rate, phi_rate, x0=0.0, y0=0.0, theta0=0.0):
    """``(x, y, theta, phi - phi0)`` of the rolling disk at times ``t`` ``(T,)`` -> ``(T, 4)``.

    Parameters
    ----------
    t : array_like, shape (T,), float64
        The times (s).
    radius : float
        The disk's radius ``R`` (m).
    theta_rate : float
        The constant heading rate ``theta'`` (rad/s); 0 gives a straight line.
    phi_rate : float
        The constant rolling rate ``phi'`` (rad/s).
    x0, y0 : float
        The contact point at ``t = 0`` (m).
    theta0 : float
        The heading at ``t = 0`` (rad).

    Returns
    -------
    numpy.ndarray, shape (T, 4), float64
        ``(x, y, theta, phi - phi0)`` at each time.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.rolling_disk_exact(np.array([0.0, 1.0]), 0.5, 1.0, 2.0).round(3)
    array([[0.   , 0.   , 0.   , 0.   ],
           [0.841, 0.46 , 1.   , 2.   ]])
    """
    t = np.asarray(t, dtype=float)
    th = theta0 + theta_rate * t
    speed = radius * phi_rate
    if theta_rate == 0:
        x = x0 + speed * t * np.cos(theta0)
        y = y0 + speed * t * np.sin(theta0)
    else:
        rho = speed / theta_rate
        x = x0 + rho * (np.sin(th) - np.sin(theta0))
        y = y0 - rho * (np.cos(th) - np.cos(theta0))
    return np.stack([x, y, th, phi_rate * t], -1)


# 4 --------------------------------------------------------------- the ball
def rolling_ball(radius=0.5, mass=1.0, retraction="exp") -> InterconnectedSystem:
    """A homogeneous ball (``I = 2/5 m r^2``) rolling on a plane: ``ball`` on
    SO(3) joined to ``centre`` on R^2 by ``x' = r (R w) x e3``.

    Parameters
    ----------
    radius : float
        The ball's radius ``r`` (m).
    mass : float
        The ball's mass ``m`` (kg).
    retraction : str
        The retraction on SO(3), ``"exp"`` or ``"cayley"``.

    Returns
    -------
    InterconnectedSystem
        On ``SO3 x Euclidean(2)``: the attitude and the centre ``(x, y)`` (m);
        ``params`` ``({"mass", "radius"}, {"mass"}, {"interaction": ({"radius": r},)})``
        (the radius sets the ball's inertia and the rolling constraint: a
        consistent change changes both).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> ball = md.systems.rolling_ball(radius=0.5, retraction="cayley")
    >>> ball.Q
    ProductManifold(SO3(retraction='cayley'), Euclidean(2))
    """
    def inertia(p):
        return 0.4 * p["mass"] * p["radius"] ** 2

    ball = LagrangeDiracSystem(
        SO3(retraction), lambda q, v, p: 0.5 * inertia(p) * jnp.sum(v * v),
        partials=lambda q, v, p: (jnp.zeros_like(v), inertia(p) * v), name="ball",
        params={"mass": np.float64(mass), "radius": np.float64(radius)})
    centre = LagrangeDiracSystem(
        Euclidean(2, names=("x", "y")), lambda q, v, p: 0.5 * p["mass"] * jnp.sum(v * v),
        partials=lambda q, v, p: (jnp.zeros_like(v), p["mass"] * v), name="centre",
        params={"mass": np.float64(mass)})
    return interconnect(ball, centre, interaction=rolling_ball_on_plane("ball", "centre", radius),
                        name="rolling_ball")


def rolling_ball_exact(t, radius, spatial_omega, x0=(0.0, 0.0)):
    """Centre ``x(t)`` (``(T, 2)``): constant spatial angular velocity ``W``, ``x' = r (W_y, -W_x)``.

    Parameters
    ----------
    t : array_like, shape (T,), float64
        The times (s).
    radius : float
        The ball's radius ``r`` (m).
    spatial_omega : array_like, shape (3,), float64
        The constant spatial angular velocity ``W`` (rad/s).
    x0 : array_like, shape (2,), float64
        The centre at ``t = 0`` (m).

    Returns
    -------
    numpy.ndarray, shape (T, 2), float64
        The centre at each time.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.rolling_ball_exact(np.array([0.0, 1.0]), 0.5, [1.0, 2.0, 0.0])
    array([[ 0. ,  0. ],
           [ 1. , -0.5]])
    """
    W = np.asarray(spatial_omega, dtype=float)
    vel = radius * np.array([W[1], -W[0]])
    return np.asarray(x0) + np.asarray(t, dtype=float)[..., None] * vel


# 5 ------------------------------------------------------------ hierarchy
def _minus_track(p):
    return -p["track"]


def _axle(track, prefix_left="left.body", prefix_right="right.body") -> Interaction:
    # headings equal, and the right contact point moves like a point of the
    # left body at body offset (0, -track): v_Rx = v_Lx + track * omega.
    return linear_interaction([{(prefix_right, 0): 1.0, (prefix_left, 0): -1.0},
                               {(prefix_right, 1): 1.0, (prefix_left, 1): -1.0, (prefix_left, 0): _minus_track}],
                              label="axle", params={"track": np.float64(track)})


def two_wheel_cart(track=1.0, radius=0.5, **disk) -> InterconnectedSystem:
    """Two rolling disks (``left``, ``right``; each an interconnected system)
    joined by an axle of length ``track``: equal headings and the right wheel's
    contact point rigidly at body offset ``(0, -track)`` from the left's.

    Parameters
    ----------
    track : float
        The axle's length, between the two contact points (m).
    radius : float
        The wheels' radius (m).
    **disk
        Further keyword arguments of :func:`rolling_disk` (``mass``,
        ``yaw_inertia``, ``roll_inertia``, ``retraction``), the same for both wheels.

    Returns
    -------
    InterconnectedSystem
        Two interconnected :func:`rolling_disk` parts, ``left`` and ``right``;
        ``params`` ``(left, right, {"interaction": ({"track": track},)})``
        with each disk's params as in :func:`rolling_disk`.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> cart = md.systems.two_wheel_cart(track=1.0)
    >>> cart.names
    ('left', 'right')
    >>> cart.Q.dim
    8
    """
    left = rolling_disk(radius, name="left", **disk)
    right = rolling_disk(radius, name="right", **disk)
    return interconnect(left, right, interaction=_axle(track), name="two_wheel_cart")


def two_wheel_cart_flat(track=1.0, radius=0.5, mass=1.0, yaw_inertia=0.0625,
                        roll_inertia=0.125) -> InterconnectedSystem:
    """The same cart as one flat interconnection of its four elementary parts.

    Parameters
    ----------
    track : float
        The axle's length, between the two contact points (m).
    radius : float
        The wheels' radius (m).
    mass : float
        Each body's mass (kg).
    yaw_inertia : float
        Each body's moment of inertia about the vertical axis (kg m^2).
    roll_inertia : float
        Each wheel's moment of inertia about its rolling axis (kg m^2).

    Returns
    -------
    InterconnectedSystem
        The parts ``left_body``, ``left_wheel``, ``right_body``,
        ``right_wheel``; ``params`` are theirs and ``{"interaction":
        ({"radius": R}, {"radius": R}, {"track": track})}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> cart = md.systems.two_wheel_cart_flat(track=1.0)
    >>> cart.names
    ('left_body', 'left_wheel', 'right_body', 'right_wheel')
    >>> cart.Q.dim
    8
    """
    parts = [_planar_body(mass, yaw_inertia, "left_body"), _wheel(roll_inertia, "left_wheel"),
             _planar_body(mass, yaw_inertia, "right_body"), _wheel(roll_inertia, "right_wheel")]
    inter = (rolling_without_slipping("left_body", "left_wheel", radius)
             + rolling_without_slipping("right_body", "right_wheel", radius)
             + _axle(track, prefix_left="left_body", prefix_right="right_body"))
    return interconnect(*parts, interaction=inter, name="two_wheel_cart_flat")
