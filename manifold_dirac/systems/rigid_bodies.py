"""Rigid bodies on SO(3): the free rigid body and the heavy top.

Points are rotation matrices ``R`` (body to space), velocities body angular
velocities ``w`` (``Rdot = R hat(w)``), momenta body angular momenta.

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

from ..manifolds import SO3
from ..mechanics.system import LagrangeDiracSystem

__all__ = ["free_rigid_body", "heavy_top", "heavy_top_reference", "spatial_angular_momentum"]

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
    """
    P = {"inertia": _principal_moments(inertia, "free_rigid_body")}

    def L(q, v, p=None):
        p = P if p is None else p
        return 0.5 * jnp.sum(p["inertia"] * v * v)

    def partials(q, v, p=None):
        p = P if p is None else p
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
    """
    c = np.asarray(chi, dtype=float)
    if c.shape != (3,):
        raise ValueError(f"heavy_top: chi must be a 3-vector, got {chi!r}")
    P = {"inertia": _principal_moments(inertia, "heavy_top"), "mgl": np.float64(mgl), "chi": c}

    def L(q, v, p=None):
        p = P if p is None else p
        return 0.5 * jnp.sum(p["inertia"] * v * v) - p["mgl"] * jnp.dot(q[2, :], p["chi"])

    def partials(q, v, p=None):
        p = P if p is None else p
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
