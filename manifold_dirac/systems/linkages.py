"""Closed kinematic chains: holonomic constraints ``g(q) = 0`` held on positions.

* :func:`four_bar` -- the planar four-bar linkage in its three joint angles,
  with the two loop-closure equations as holonomic constraints;
* :func:`four_bar_initial` -- a consistent ``(q0, v0)`` from the crank angle
  and rate (closed form: the intersection of two circles).

Written for one point with ``jax.numpy``; the physical parameters are the
system's ``params``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._manifolds import Euclidean
from .._mechanics.system import LagrangeDiracSystem

__all__ = ["FOUR_BAR", "four_bar", "four_bar_initial", "rigid_double_pendulum", "rigid_double_pendulum_initial"]

FOUR_BAR = {"crank": 1.0, "coupler": 3.0, "rocker": 2.5, "ground": 3.0,
            "masses": (1.0, 1.0, 1.0), "gravity": 9.81}
"""The default four-bar: a crank-rocker (Grashof: 1 + 3 <= 3 + 2.5, the crank the shortest link)."""


def _e(t):
    return jnp.stack([jnp.cos(t), jnp.sin(t)])


def _perp(t):
    return jnp.stack([-jnp.sin(t), jnp.cos(t)])


def four_bar(crank: float = FOUR_BAR["crank"], coupler: float = FOUR_BAR["coupler"],
             rocker: float = FOUR_BAR["rocker"], ground: float = FOUR_BAR["ground"],
             masses=FOUR_BAR["masses"], gravity: float = FOUR_BAR["gravity"]) -> LagrangeDiracSystem:
    """A planar four-bar linkage of uniform rods in a vertical plane, in its joint angles.

    The crank (length ``l1``) turns about the origin ``O``, the rocker
    (``l3``) about ``D = (d, 0)``, the coupler (``l2``) joins their free
    ends; ``q = (theta1, theta2, theta3)`` are the absolute angles of crank,
    coupler and rocker from the ``x`` axis (``y`` up, gravity ``-g e_y``)::

        L = m1 l1^2/6 th1'^2 + m2/2 |v_C2|^2 + m2 l2^2/24 th2'^2 + m3 l3^2/6 th3'^2 - V,
        v_C2 = l1 th1' e_perp(th1) + l2/2 th2' e_perp(th2),
        V = g [m1 l1/2 sin th1 + m2 (l1 sin th1 + l2/2 sin th2) + m3 l3/2 sin th3]

    with the loop closure (two holonomic constraints, one degree of freedom)::

        g(q) = l1 e(th1) + l2 e(th2) - l3 e(th3) - (d, 0) = 0

    Parameters
    ----------
    crank, coupler, rocker, ground : float
        ``l1, l2, l3, d``: the links' lengths and the distance between the
        two ground pivots (m).
    masses : tuple of 3 float
        ``m1, m2, m3``: the masses of crank, coupler and rocker (kg).
    gravity : float
        The gravitational acceleration ``g`` (m/s^2), along ``-e_y``.

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(3)`` (names ``theta1, theta2, theta3``) with
        ``holonomic=g``; ``params`` holds the lengths, masses and ``g``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> linkage = md.systems.four_bar()
    >>> linkage.Q, linkage.n_holonomic
    (Euclidean(3), 2)
    """
    m1, m2, m3 = (float(m) for m in masses)
    P = {"l": np.array([crank, coupler, rocker], dtype=float), "d": np.float64(ground),
         "m": np.array([m1, m2, m3]), "g": np.float64(gravity)}

    def L(q, v, p):
        (l1, l2, l3), (m1, m2, m3), grav = p["l"], p["m"], p["g"]
        vc2 = l1 * v[0] * _perp(q[0]) + 0.5 * l2 * v[1] * _perp(q[1])
        T = (m1 * l1**2 / 6.0 * v[0] ** 2 + 0.5 * m2 * jnp.sum(vc2 * vc2) + m2 * l2**2 / 24.0 * v[1] ** 2
             + m3 * l3**2 / 6.0 * v[2] ** 2)
        V = grav * (0.5 * m1 * l1 * jnp.sin(q[0]) + m2 * (l1 * jnp.sin(q[0]) + 0.5 * l2 * jnp.sin(q[1]))
                    + 0.5 * m3 * l3 * jnp.sin(q[2]))
        return T - V

    def g(q, p):
        l1, l2, l3 = p["l"]
        return l1 * _e(q[0]) + l2 * _e(q[1]) - l3 * _e(q[2]) - jnp.stack([p["d"], 0.0 * p["d"]])

    return LagrangeDiracSystem(Euclidean(3, names=("theta1", "theta2", "theta3")), L, holonomic=g,
                               name="four_bar", params=P)


def four_bar_initial(theta1: float = 0.5, rate: float = 2.0, crank: float = FOUR_BAR["crank"],
                     coupler: float = FOUR_BAR["coupler"], rocker: float = FOUR_BAR["rocker"],
                     ground: float = FOUR_BAR["ground"]) -> tuple[np.ndarray, np.ndarray]:
    """A consistent ``(q0, v0)`` of :func:`four_bar`: crank angle ``theta1`` and rate, coupler above the ground.

    ``B`` is the intersection of the circles of radius ``l2`` about
    ``A = l1 e(theta1)`` and ``l3`` about ``D``, on the upper side of ``AD``;
    the rates solve ``dg(q0) v0 = 0`` with ``theta1' = rate``.

    Parameters
    ----------
    theta1 : float
        The crank's angle from the ``x`` axis (rad).
    rate : float
        The crank's angular rate ``theta1'`` (rad/s).
    crank, coupler, rocker, ground : float
        ``l1, l2, l3, d`` (m), as in :func:`four_bar`.

    Returns
    -------
    q0 : numpy.ndarray, shape (3,), float64
        ``(theta1, theta2, theta3)`` (rad), on the loop closure ``g(q0) = 0``.
    v0 : numpy.ndarray, shape (3,), float64
        The angular rates (rad/s), with ``dg(q0) v0 = 0``.

    Raises
    ------
    ValueError
        When the linkage cannot close at ``theta1``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> q0, v0 = md.systems.four_bar_initial(theta1=0.5, rate=2.0)
    >>> q0.round(3), v0.round(3)
    (array([0.5  , 0.738, 1.532]), array([ 2.   , -0.802, -0.265]))
    """
    l1, l2, l3, d = crank, coupler, rocker, ground
    A = l1 * np.array([np.cos(theta1), np.sin(theta1)])
    D = np.array([d, 0.0])
    AD = D - A
    s = np.linalg.norm(AD)
    if not abs(l2 - l3) < s < l2 + l3:
        raise ValueError(f"four_bar_initial: the linkage does not close at theta1 = {theta1} "
                         f"(|AD| = {s:.4g} not in ({abs(l2 - l3):.4g}, {l2 + l3:.4g}))")
    a = (l2**2 - l3**2 + s**2) / (2 * s)
    hgt = np.sqrt(l2**2 - a**2)
    u = AD / s
    B = A + a * u + hgt * np.array([-u[1], u[0]])
    th2 = np.arctan2(*(B - A)[::-1])
    th3 = np.arctan2(*(B - D)[::-1])
    # l1 w1 perp1 + l2 w2 perp2 - l3 w3 perp3 = 0 for w2, w3
    perp = lambda t: np.array([-np.sin(t), np.cos(t)])
    M = np.stack([l2 * perp(th2), -l3 * perp(th3)], axis=1)
    w2, w3 = np.linalg.solve(M, -l1 * rate * perp(theta1))
    return np.array([theta1, th2, th3]), np.array([rate, w2, w3])


_ROD_INERTIA = np.array([1 / 12, 1 / 12, 1 / 120])
"""A slender rod's principal moments over ``m l^2`` (about ``e1, e2`` and a small one about its axis ``e3``)."""
_ROD_AXIS = np.array([0.0, 0.0, 1.0])


def _rod(mass: float, length: float, gravity: float, name: str) -> LagrangeDiracSystem:
    """A free slender rod in gravity on ``SO(3) x R^3``: ``q = (R, x)``, ``v = (Omega, xdot)``;
    ``params = {"mass", "length", "gravity"}``."""
    from .._manifolds import SO3, ProductManifold

    P = {"mass": np.float64(mass), "length": np.float64(length), "gravity": np.float64(gravity)}

    def L(q, v, p):
        Om, xd = v[:3], v[3:]
        J = p["mass"] * p["length"] ** 2 * _ROD_INERTIA
        return 0.5 * p["mass"] * jnp.sum(xd * xd) + 0.5 * jnp.sum(J * Om * Om) - p["mass"] * p["gravity"] * q[1][2]

    return LagrangeDiracSystem(ProductManifold(SO3(), Euclidean(3)), L, name=name, params=P)


def rigid_double_pendulum(length: float = 1.0, mass: float = 1.0, gravity: float = 9.81):
    """Two slender rods in space joined by spherical joints: interconnected through :func:`pin_joint`.

    Each rod (mass ``m``, length ``l``, axis the body ``e3``, principal
    moments ``m l^2/12`` about ``e1, e2`` and a small ``m l^2/120`` about
    ``e3`` so that the Lagrangian is regular) is a subsystem on
    ``SO(3) x R^3`` (attitude and centre of mass). The upper rod's top end
    ``(0, 0, l/2)`` is pinned at the origin, the lower rod's top end to the
    upper rod's bottom end ``(0, 0, -l/2)``: six holonomic constraints
    ``g(q) = 0`` of the interaction, six degrees of freedom left.

    Parameters
    ----------
    length : float
        Each rod's length ``l`` (m).
    mass : float
        Each rod's mass ``m`` (kg).
    gravity : float
        The gravitational acceleration (m/s^2), along ``-e_z``.

    Returns
    -------
    InterconnectedSystem
        Subsystems ``"upper"`` and ``"lower"``; energy is conserved. Its
        ``params`` are ``(upper, lower, {"holonomic": {"length": l}})``, each
        rod's ``{"mass", "length", "gravity"}`` and the length that places
        the joints: a system built with other constants runs the programs
        compiled for the first (a consistent change of the length changes
        all three).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> pendulum = md.systems.rigid_double_pendulum(length=1.0)
    >>> pendulum.names, pendulum.n_holonomic
    (('upper', 'lower'), 6)
    """
    from .._interconnection import interconnect, pin_joint

    up = _rod(mass, length, gravity, "upper")
    low = _rod(mass, length, gravity, "lower")
    # the anchors are computed from the length in params (the values given here are replaced)
    pin_up = pin_joint("upper", None, np.zeros(3), np.zeros(3))
    pin_low = pin_joint("upper", "lower", np.zeros(3), np.zeros(3))

    def build(layout):
        g1, g2 = pin_up(layout), pin_low(layout)

        def g(q, p):
            top = 0.5 * p["length"] * _ROD_AXIS
            return jnp.concatenate([g1(q, {"anchor_a": top, "anchor_b": jnp.zeros(3)}),
                                    g2(q, {"anchor_a": -top, "anchor_b": top})])

        return g

    build.needs_layout = True
    build.params = {"length": np.float64(length)}  # type: ignore[attr-defined]
    return interconnect(up, low, holonomic=build, name="rigid_double_pendulum")


def rigid_double_pendulum_initial(angle1: float = 0.8, angle2: float = -0.4, spin: float = 1.0,
                                  length: float = 1.0):
    """A consistent ``(q0, v0)`` of :func:`rigid_double_pendulum`: rods tilted about ``e_x``, the upper turning.

    The upper rod turns about the vertical through the pivot at rate ``spin``
    (its joint at the origin at rest), the lower one rigidly with it, so
    every joint velocity matches.

    Parameters
    ----------
    angle1, angle2 : float
        The upper and the lower rod's tilt about ``e_x`` from hanging down (rad).
    spin : float
        The upper rod's turning rate about the vertical (rad/s).
    length : float
        Each rod's length (m), as in :func:`rigid_double_pendulum`.

    Returns
    -------
    q0 : tuple of two (R (3, 3), x (3,)) tuples of numpy.ndarray, float64
        The upper and the lower rod's attitude and centre of mass (m).
    v0 : numpy.ndarray, shape (12,), float64
        Each rod's body angular velocity (rad/s) and centre velocity (m/s).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> (upper, lower), v0 = md.systems.rigid_double_pendulum_initial()
    >>> upper[1].round(3), v0.shape
    (array([ 0.   , -0.359,  0.348]), (12,))
    """
    def rot_x(a):
        return np.array([[1.0, 0.0, 0.0], [0.0, np.cos(a), -np.sin(a)], [0.0, np.sin(a), np.cos(a)]])

    R1, R2 = rot_x(np.pi + angle1), rot_x(np.pi + angle2)
    top, bottom = np.array([0.0, 0.0, length / 2]), np.array([0.0, 0.0, -length / 2])
    x1 = -R1 @ top
    x2 = x1 + R1 @ bottom - R2 @ top
    w = np.array([0.0, 0.0, spin])  # spatial angular velocity of both (a rigid rotation about e_z)
    v1, v2 = np.cross(w, x1), np.cross(w, x2)
    return ((R1, x1), (R2, x2)), np.concatenate([R1.T @ w, v1, R2.T @ w, v2])
