"""Pendulums and oscillators on vector spaces (Euclidean coordinates), and the
spherical pendulum on S^2.

Lagrangians, forces and analytic partials are written for one point with
``jax.numpy``. The physical parameters are the system's ``params`` (traced:
a system built with other values reuses the compiled step, and they are
differentiable); called without them, the functions use the system's own.
The exact solutions and the momentum map work on numpy arrays over leading
axes.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._manifolds import Euclidean
from .._mechanics.system import LagrangeDiracSystem

__all__ = [
    "damped_oscillator",
    "damped_oscillator_exact",
    "double_pendulum",
    "harmonic_oscillator",
    "harmonic_oscillator_exact",
    "pendulum",
    "cartesian_spherical_pendulum",
    "spherical_pendulum",
    "spherical_pendulum_vertical_momentum",
]


def _oscillator():
    """The oscillator's ``L(q, v, p)`` and its analytic partials (shared by the damped one)."""

    def L(q, v, p):
        return 0.5 * p["mass"] * jnp.sum(v * v) - 0.5 * p["stiffness"] * jnp.sum(q * q)

    def partials(q, v, p):
        return -p["stiffness"] * q, p["mass"] * v

    return L, partials


def harmonic_oscillator(n: int = 1, mass: float = 1.0, stiffness: float = 1.0) -> LagrangeDiracSystem:
    """``L = m/2 |v|^2 - k/2 |q|^2`` on ``R^n``; exact solution :func:`harmonic_oscillator_exact`.

    Parameters
    ----------
    n : int
        Dimension.
    mass, stiffness : float
        ``m`` and ``k``.

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(n)`` with analytic partials; ``params = {"mass", "stiffness"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> osc = md.systems.harmonic_oscillator(n=2, stiffness=4.0)
    >>> osc.Q
    Euclidean(2)
    >>> sorted(osc.params)
    ['mass', 'stiffness']
    """
    P = {"mass": np.float64(mass), "stiffness": np.float64(stiffness)}
    L, partials = _oscillator()
    return LagrangeDiracSystem(Euclidean(n), L, partials=partials, name="harmonic_oscillator", params=P)


def harmonic_oscillator_exact(t, q0, v0, mass: float = 1.0, stiffness: float = 1.0):
    """``q(t), v(t)`` of :func:`harmonic_oscillator`.

    Parameters
    ----------
    t : array-like, shape=[T]
        Times.
    q0, v0 : array-like, shape=[n]
        Initial position and velocity.
    mass, stiffness : float
        As in :func:`harmonic_oscillator`.

    Returns
    -------
    q, v : numpy.ndarray, shape=[T, n]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> q, v = md.systems.harmonic_oscillator_exact(np.array([0.0, np.pi / 2]), np.array([1.0]), np.array([0.0]))
    >>> q.round(6), v.round(6)
    (array([[1.],
           [0.]]), array([[ 0.],
           [-1.]]))
    """
    w = np.sqrt(stiffness / mass)
    t = np.asarray(t, dtype=float)[..., None]
    q = q0 * np.cos(w * t) + v0 / w * np.sin(w * t)
    v = -q0 * w * np.sin(w * t) + v0 * np.cos(w * t)
    return q, v


def damped_oscillator(mass: float = 1.0, stiffness: float = 1.0, damping: float = 0.2) -> LagrangeDiracSystem:
    """Oscillator on ``R^1`` with the force ``F = -c v`` (Lagrange--d'Alembert--Pontryagin, (24)).

    Parameters
    ----------
    mass, stiffness : float
        As in :func:`harmonic_oscillator`.
    damping : float
        ``c``.

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(1)`` with analytic partials;
        ``params = {"mass", "stiffness", "damping"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> osc = md.systems.damped_oscillator(damping=0.5)
    >>> osc.Q, osc.has_force
    (Euclidean(1), True)
    """
    P = {"mass": np.float64(mass), "stiffness": np.float64(stiffness), "damping": np.float64(damping)}
    L, partials = _oscillator()

    def force(t, q, v, p):
        return -p["damping"] * v

    return LagrangeDiracSystem(Euclidean(1), L, force=force, partials=partials, name="damped_oscillator",
                               params=P)


def damped_oscillator_exact(t, q0: float, v0: float, mass: float = 1.0, stiffness: float = 1.0,
                            damping: float = 0.2):
    """Exact ``q(t)`` of the underdamped :func:`damped_oscillator`.

    Parameters
    ----------
    t : array-like, shape=[T]
        Times.
    q0, v0 : float
        Initial position and velocity.
    mass, stiffness, damping : float
        As in :func:`damped_oscillator` (underdamped: ``c^2 < 4 m k``).

    Returns
    -------
    numpy.ndarray, shape=[T]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.damped_oscillator_exact(np.array([0.0, 1.0]), 1.0, 0.0).round(6)
    array([1.      , 0.568972])
    """
    t = np.asarray(t, dtype=float)
    g = damping / (2 * mass)
    wd = np.sqrt(stiffness / mass - g * g)
    return np.exp(-g * t) * (q0 * np.cos(wd * t) + (v0 + g * q0) / wd * np.sin(wd * t))


def pendulum(length: float = 1.0, mass: float = 1.0, gravity: float = 9.81) -> LagrangeDiracSystem:
    """Planar pendulum, angle from the downward vertical: ``L = m l^2/2 v^2 + m g l cos q``.

    Parameters
    ----------
    length, mass, gravity : float
        ``l``, ``m``, ``g``.

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(1)`` (coordinate ``theta``) with analytic partials;
        ``params = {"ml2", "mgl"}`` (``m l^2`` and ``m g l``).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> pend = md.systems.pendulum(length=2.0)
    >>> pend.Q
    Euclidean(1)
    >>> float(pend.params["mgl"])
    19.62
    >>> tr = md.integrate(pend, [0.3], v0=[0.0], h=0.05, n_steps=10)
    >>> tr.q.shape, tr.ok
    ((11, 1), True)
    """
    P = {"ml2": np.float64(mass * length**2), "mgl": np.float64(mass * gravity * length)}

    def L(q, v, p):
        return 0.5 * p["ml2"] * v[0] ** 2 + p["mgl"] * jnp.cos(q[0])

    def partials(q, v, p):
        return -p["mgl"] * jnp.sin(q), p["ml2"] * v

    Q = Euclidean(1, names=("theta",))
    return LagrangeDiracSystem(Q, L, partials=partials, name="pendulum", params=P)


def double_pendulum(
    l1: float = 1.0, l2: float = 1.0, m1: float = 1.0, m2: float = 1.0, gravity: float = 9.81
) -> LagrangeDiracSystem:
    """Planar double pendulum, absolute angles from the downward vertical.

    Parameters
    ----------
    l1, l2 : float
        Lengths of the rods.
    m1, m2 : float
        Masses of the bobs.
    gravity : float
        ``g``.

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(2)`` (coordinates ``theta1, theta2``) with analytic
        partials; ``params = {"l1", "l2", "m1", "m2", "gravity"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> dp = md.systems.double_pendulum(l2=0.5)
    >>> dp.Q
    Euclidean(2)
    >>> float(dp.params["l2"])
    0.5
    """
    P = {"l1": np.float64(l1), "l2": np.float64(l2), "m1": np.float64(m1), "m2": np.float64(m2),
         "gravity": np.float64(gravity)}

    def unpack(p):
        return p["l1"], p["l2"], p["m1"], p["m2"], p["gravity"]

    def L(q, v, p):
        l1, l2, m1, m2, g = unpack(p)
        a, b = q[0], q[1]
        va, vb = v[0], v[1]
        T = (0.5 * (m1 + m2) * l1**2 * va**2 + 0.5 * m2 * l2**2 * vb**2
             + m2 * l1 * l2 * va * vb * jnp.cos(a - b))
        V = -(m1 + m2) * g * l1 * jnp.cos(a) - m2 * g * l2 * jnp.cos(b)
        return T - V

    def partials(q, v, p):
        l1, l2, m1, m2, g = unpack(p)
        a, b = q[0], q[1]
        va, vb = v[0], v[1]
        s = jnp.sin(a - b)
        c = jnp.cos(a - b)
        dqa = -m2 * l1 * l2 * va * vb * s - (m1 + m2) * g * l1 * jnp.sin(a)
        dqb = m2 * l1 * l2 * va * vb * s - m2 * g * l2 * jnp.sin(b)
        dva = (m1 + m2) * l1**2 * va + m2 * l1 * l2 * vb * c
        dvb = m2 * l2**2 * vb + m2 * l1 * l2 * va * c
        return jnp.stack([dqa, dqb]), jnp.stack([dva, dvb])

    Q = Euclidean(2, names=("theta1", "theta2"))
    return LagrangeDiracSystem(Q, L, partials=partials, name="double_pendulum", params=P)


def spherical_pendulum(length: float = 1.0, mass: float = 1.0, gravity: float = 9.81) -> LagrangeDiracSystem:
    """Spherical pendulum on S^2 through the geomstats adapter.

    Points are unit vectors ``q`` (the bob's direction from the pivot, ``z`` up),
    velocities frame coordinates in the adapter's orthonormal frame ``E(q)``:
    ``L = m l^2/2 |v|^2 - m g l q_z``. Invariants: the energy and the vertical
    angular momentum ``m l^2 e3 . (q x E(q) v)`` (rotations about ``e3``).
    The adapter's closed forms do not import geomstats (only its
    ``values="geomstats"`` cross-check does).

    Parameters
    ----------
    length, mass, gravity : float
        ``l``, ``m``, ``g``.

    Returns
    -------
    LagrangeDiracSystem
        On ``Sphere2()`` with analytic partials; ``params = {"ml2", "mgl"}``.

    Notes
    -----
    ``dL/dq`` along ``q -> R_q(e eta)`` with ``v`` fixed is ``-m g l E(q)^T e3``
    (the frame is orthonormal, so ``|v|`` does not depend on ``q``).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> sp = md.systems.spherical_pendulum()
    >>> sp.Q
    Sphere2()
    """
    from .._manifolds.sphere import Sphere2

    S2 = Sphere2()
    P = {"ml2": np.float64(mass * length**2), "mgl": np.float64(mass * gravity * length)}

    def L(q, v, p):
        return 0.5 * p["ml2"] * jnp.sum(v * v) - p["mgl"] * q[2]

    def partials(q, v, p):
        E = S2.frame(q)
        return -p["mgl"] * E[2, :], p["ml2"] * v

    return LagrangeDiracSystem(S2, L, partials=partials, name="spherical_pendulum", params=P)


def spherical_pendulum_vertical_momentum(Q, q, p):
    """``e3 . (q x E(q) p)``: the momentum map of rotations about the vertical (numpy).

    Parameters
    ----------
    Q : Sphere2
        The manifold (its frame ``E``).
    q : array-like, shape=[..., 3]
        Unit vectors.
    p : array-like, shape=[..., 2]
        Momenta in frame coordinates.

    Returns
    -------
    numpy.ndarray, shape=[...]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> sp = md.systems.spherical_pendulum()
    >>> q = np.array([1.0, 0.0, 0.0])
    >>> md.systems.spherical_pendulum_vertical_momentum(sp.Q, q, np.array([[1.0, 0.0], [0.0, 1.0]]))
    array([1., 0.])
    """
    q = np.asarray(q)
    Ep = np.einsum("...ij,...j->...i", np.asarray(Q.frame(q)), np.asarray(p))
    return np.cross(q, Ep)[..., 2]


def cartesian_spherical_pendulum(length: float = 1.0, mass: float = 1.0, gravity: float = 9.81
                                 ) -> LagrangeDiracSystem:
    """The spherical pendulum in Cartesian coordinates: ``R^3`` with the holonomic constraint ``|x| = l``.

    ``x`` is the bob's position from the pivot (``z`` up), ``L = m/2 |v|^2 -
    m g x_z``, ``g(x) = (|x|^2 - l^2) / (2 l) = 0`` (a length: ``dg = x^T / l``
    has unit norm on the sphere). The same motion as
    :func:`spherical_pendulum` with ``x = l q``, ``v_R3 = l E(q) v_S2``;
    invariants the energy and the vertical angular momentum
    ``m (x_1 v_2 - x_2 v_1)``.

    Parameters
    ----------
    length, mass, gravity : float
        ``l``, ``m``, ``g``.

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(3)`` with analytic partials and ``holonomic=g``;
        ``params = {"length", "mass", "gravity"}``.

    Notes
    -----
    The schemes hold ``|x_k| = l`` to round-off with the reaction
    ``dg(x_k)^T lam = lam x_k / l`` (the rod's tension times ``h``): SHAKE in
    positions, RATTLE's projection on the reported momenta
    (``docs/schemes.md``, "Holonomic constraints").

    Examples
    --------
    >>> import manifold_dirac as md
    >>> cp = md.systems.cartesian_spherical_pendulum(length=2.0)
    >>> cp.Q, cp.n_holonomic
    (Euclidean(3), 1)
    """
    P = {"length": np.float64(length), "mass": np.float64(mass), "gravity": np.float64(gravity)}

    def L(q, v, p):
        return 0.5 * p["mass"] * jnp.sum(v * v) - p["mass"] * p["gravity"] * q[2]

    def partials(q, v, p):
        return jnp.array([0.0, 0.0, -1.0]) * (p["mass"] * p["gravity"]), p["mass"] * v

    def g(q, p):
        return jnp.array([(jnp.sum(q * q) - p["length"] ** 2) / (2.0 * p["length"])])

    return LagrangeDiracSystem(Euclidean(3), L, partials=partials, holonomic=g,
                               name="cartesian_spherical_pendulum", params=P)
