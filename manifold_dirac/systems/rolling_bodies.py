"""A disk rolling on a plane in space: ``SO(3) x R^3`` with the contact height held as ``g(q) = 0``.

The thin disk (radius ``r``, mass ``m``, symmetry axis the body ``e3``) rolls
without slipping on the horizontal plane ``z = 0``: the contact height is a
holonomic constraint (held on positions by the schemes), the two horizontal
components of the contact point's velocity are nonholonomic one-forms.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._manifolds import SO3, Euclidean, ProductManifold
from .._mechanics.small import mm
from .._mechanics.system import LagrangeDiracSystem

__all__ = ["rolling_disk_3d", "rolling_disk_3d_contact", "rolling_disk_3d_initial"]


def _hat(w):
    return jnp.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def rolling_disk_3d_contact(R, radius):
    """The contact point relative to the centre, ``rho = -r (e_z - n_z n)/|e_z - n_z n|``, ``n = R e3`` (one point).

    A NumPy ``R`` gives a NumPy ``rho`` (computed on the host, as the initial data are); anything else, JAX.

    Its height ``rho_z = -r sqrt(1 - n_z^2)``; singular when the disk lies
    flat (``n_z = +-1``).
    """
    xp = np if isinstance(R, np.ndarray) else jnp  # a NumPy R (the initial data): NumPy out, no XLA program
    n = R[:, 2]
    w = xp.asarray([0.0, 0.0, 1.0]) - n[2] * n
    with np.errstate(all="ignore"):  # (NumPy) flat on the plane: NaN, silently, as with jax.numpy
        return -radius * w / xp.sqrt(xp.sum(w * w))


def rolling_disk_3d(radius: float = 0.5, mass: float = 1.0, gravity: float = 9.81,
                    retraction: str = "exp") -> LagrangeDiracSystem:
    """A thin disk rolling without slipping on the plane ``z = 0``, on ``SO(3) x R^3``.

    ``q = (R, x)``: attitude (body ``e3`` the disk's normal) and centre;
    ``v = (Omega, xdot)``: body angular velocity and the centre's velocity::

        L = m/2 |xdot|^2 + 1/2 Omega^T I Omega - m g x_z,   I = m r^2 diag(1/4, 1/4, 1/2)

    Constraints, with ``rho`` the contact point relative to the centre
    (:func:`rolling_disk_3d_contact`):

    * holonomic: the contact height ``g(q) = x_z - r sqrt(1 - n_z^2) = 0``,
      ``n = R e3``;
    * nonholonomic: the horizontal velocity of the material contact point
      vanishes, ``P (xdot + (R Omega) x rho) = 0`` (``P`` the first two rows
      of the identity), i.e. ``A(q) = P [-hat(rho) R, I]``.

    ``dg(q) v`` is the vertical velocity of the contact point,
    ``e_z . (xdot + (R Omega) x rho)``: the three rows together say the
    contact point is at rest. Energy is conserved.

    Parameters
    ----------
    radius : float
        The disk's radius ``r`` (m).
    mass : float
        The disk's mass ``m`` (kg).
    gravity : float
        The gravitational acceleration ``g`` (m/s^2), along ``-e_z``.
    retraction : str
        Of ``SO3``: ``"exp"`` or ``"cayley"``.

    Returns
    -------
    LagrangeDiracSystem
        With ``holonomic=g`` (1) and the one-forms (2): three degrees of
        freedom. ``params = {"radius", "mass", "gravity"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> disk = md.systems.rolling_disk_3d(radius=0.5)
    >>> disk.Q
    ProductManifold(SO3(retraction='exp'), Euclidean(3))
    >>> disk.n_holonomic, disk.n_one_forms
    (1, 2)
    """
    P = {"radius": np.float64(radius), "mass": np.float64(mass), "gravity": np.float64(gravity)}
    Q = ProductManifold(SO3(retraction=retraction), Euclidean(3))

    def L(q, v, p):
        m, r = p["mass"], p["radius"]
        Om, xd = v[:3], v[3:]
        inertia = m * r**2 * jnp.array([0.25, 0.25, 0.5])
        return 0.5 * m * jnp.sum(xd * xd) + 0.5 * jnp.sum(inertia * Om * Om) - m * p["gravity"] * q[1][2]

    def A(q, p):
        R = q[0]
        rho = rolling_disk_3d_contact(R, p["radius"])
        rows = jnp.concatenate([-mm(_hat(rho), R), jnp.eye(3)], axis=1)
        return rows[:2]

    def g(q, p):
        n = q[0][:, 2]
        return jnp.array([q[1][2] - p["radius"] * jnp.sqrt(1.0 - n[2] ** 2)])

    return LagrangeDiracSystem(Q, L, constraint=A, holonomic=g, name="rolling_disk_3d", params=P)


def rolling_disk_3d_initial(tilt: float = 0.3, spin: float = 5.0, turn: float = 0.5, radius: float = 0.5):
    """A consistent ``(q0, v0)`` of :func:`rolling_disk_3d`: tilted by ``tilt`` from upright, rolling.

    ``R0`` is the rotation about ``e_x`` by ``pi/2 + tilt``, so the normal
    ``n = R0 e3 = (0, -cos tilt, -sin tilt)`` leans by ``tilt`` from the
    horizontal; the body angular velocity is ``(0, turn, spin)`` (spin about
    the normal, a turning rate about the body ``e2``), the centre at the
    contact height and ``xdot = -(R0 Omega) x rho`` (the contact point at rest).

    Parameters
    ----------
    tilt : float
        The normal's lean from the horizontal (rad); 0 is upright.
    spin : float
        The body angular velocity about the normal (rad/s).
    turn : float
        The body angular velocity about the body ``e2`` (rad/s).
    radius : float
        The disk's radius (m), as in :func:`rolling_disk_3d`.

    Returns
    -------
    q0 : tuple (R0 (3, 3), x0 (3,)) of numpy.ndarray, float64
        The attitude and the centre (m), at the contact height.
    v0 : numpy.ndarray, shape (6,), float64
        ``(Omega, xdot)``: body angular velocity (rad/s), centre velocity (m/s).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> (R0, x0), v0 = md.systems.rolling_disk_3d_initial(tilt=0.3, spin=5.0, turn=0.5)
    >>> x0.round(3), v0[:3].round(3)
    (array([0.   , 0.   , 0.478]), array([0. , 0.5, 5. ]))
    """
    a = np.pi / 2 + tilt
    R0 = np.array([[1.0, 0.0, 0.0], [0.0, np.cos(a), -np.sin(a)], [0.0, np.sin(a), np.cos(a)]])
    rho = rolling_disk_3d_contact(R0, radius)
    x0 = np.array([0.0, 0.0, -rho[2]])
    Om = np.array([0.0, turn, spin])
    xd = -np.cross(R0 @ Om, rho)
    return (R0, x0), np.concatenate([Om, xd])
