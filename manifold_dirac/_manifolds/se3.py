"""The rigid-motion group SE(3): points as 4x4 homogeneous poses, body twists.

A tangent vector is a body twist ``xi = (w, v)`` ``(*batch, 6)``: the body
angular velocity ``w`` first, then the velocity ``v`` of the body frame's
origin in body axes (``qdot = q hat(xi)``, ``hat(w, v) = [[W, v], [0, 0]]``,
``W = hat(w)``). Retractions ``R_q(xi) = q tau(xi)``, each a registered
class with closed forms (``t = |w|``; ``J_l^{SO3}``, ``J_r^{SO3}`` the
Jacobians of SO(3)'s ``exp``):

* ``"exp"`` (:class:`SE3Exp`): the coupled exponential
  ``tau = (exp W, V(w) v)`` with ``V = J_l^{SO3}(w) = I + b W + c W^2``
  (Sola et al., arXiv 1812.01537, eqs. 172-174; ``b = (1 - cos t)/t^2``,
  ``c = (t - sin t)/t^3``); ``log``: ``w = log R``, ``v = V^{-1} x`` with
  ``V^{-1} = I - W/2 + k W^2``, ``k = (1 - (t/2) cot(t/2))/t^2``. In the
  order ``(w, v)`` the left Jacobian is block lower triangular (eqs.
  179-180, reordered)::

      J_l(w, v) = [[J_l^{SO3}(w), 0], [Q(v, w), J_l^{SO3}(w)]],   J_r(xi) = J_l(-xi),
      Q(v, w) = P/2 + c (W P + P W + W P W) - d (W W P + P W W - 3 W P W)
                - (d - 3 e)/2 (W P W W + W W P W),

  ``P = hat(v)``, ``d = (1 - t^2/2 - cos t)/t^4``, ``e = (t - sin t - t^3/6)/t^5``
  (Barfoot, *State Estimation for Robotics*, 2017, eq. 7.86), and
  ``J^{-1} = [[A^{-1}, 0], [-A^{-1} Q A^{-1}, A^{-1}]]`` for ``A = J_l^{SO3}``.
  Domain ``|w| < pi``.
* ``"cayley"`` (:class:`SE3Cayley`): ``cay(xi) = (I - X/2)^{-1}(I + X/2) =
  (cay W, M v)`` with ``M = (I - W/2)^{-1} = I + f (W/2 + W^2/4)``,
  ``f = 1/(1 + t^2/4)``; ``cay^{-1}``: ``w = cay^{-1}(R)``, ``v = (I - W/2) x``;
  ``J_r^{-1} = [[I + W/2 + w w^T/4, 0], [(I + W/2) P/2, I + W/2]]``,
  ``J_l^{-1}(xi) = J_r^{-1}(-xi)``, ``J_r = [[B, 0], [-P B/2, (I + W/2)^{-1}]]``
  with ``B = 2 (2 I - W)/(4 + t^2)`` (SO(3)'s Cayley ``J_r``). Domain: the
  rotation only, as on SO(3).
* ``"so3xr3"`` (:class:`SO3xR3`): rotation and translation retracted
  separately, ``tau = (exp W, v)``: the new position is ``x + R v`` with the
  *old* attitude. ``J_r = diag(J_r^{SO3}(w), exp(W)^T)``,
  ``J_l^{-1} = [[J_l^{SO3}(w)^{-1}, 0], [-P, I]]``. Not symmetric:
  ``tau(xi)^{-1} = (exp(-W), -exp(-W) v) != tau(-xi)``.

``J_q = Ad_{tau^{-1}}`` with ``Ad_g = [[R, 0], [hat(x) R, R]]`` for
``g = (R, x)`` (the order ``(w, v)``). The small-angle branches share SO(3)'s
coefficients and their double-``where`` (below ``t^2 < 1e-3``; the
higher coefficients ``d``, ``e`` below ``t^2 < 0.1``, where their closed forms
lose digits to cancellation), so neither values nor derivatives are NaN.

Which retraction to use (``docs/manifolds.md`` has the measurements): with
the frame at the centre of mass of a free or falling body, the exact motion
is a rotation and a *straight* (or parabolic) flight, and the coupled
``exp`` bends the flight into a helix: its error grows with the speed, and
``so3xr3`` or ``ProductManifold(SO3(), Euclidean(3))`` are better. Where
the exact motion is a screw -- a body whose velocity is constant in its own
frame, as under a body-frame constraint -- ``exp`` is exact.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._types import ArrayLike
from .base import concrete_array, register_retraction
from .lie_group import Cayley, Exp, GroupRetraction, MatrixLieGroup
from .so3 import (SO3, coefficients, host_coefficients, host_mm, host_rodrigues, host_skew, mm, rodrigues,
                  rotation_log, skew)

__all__ = ["SE3", "SE3Cayley", "SE3Exp", "SO3xR3"]

_EYE3 = np.eye(3)
_HIGH = 0.1  # threshold on t^2 for the series of d and e (next term < 1e-17 relative)


def _c(x: jax.Array) -> jax.Array:
    return x[..., None, None]


def _mv(A: jax.Array, x: jax.Array) -> jax.Array:
    """``A x`` for ``(*batch, 3, 3)`` and ``(*batch, 3)``."""
    return jnp.sum(A * x[..., None, :], axis=-1)


def _high_coefficients(t2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``d = (1 - t^2/2 - cos t)/t^4`` and ``e = (t - sin t - t^3/6)/t^5``, NaN-free (double-``where``)."""
    small = t2 < _HIGH
    s2 = jnp.where(small, 1.0, t2)
    t = jnp.sqrt(s2)
    d_direct = (2.0 * jnp.sin(0.5 * t) ** 2 - 0.5 * s2) / (s2 * s2)
    e_direct = (t - jnp.sin(t) - s2 * t / 6.0) / (s2 * s2 * t)
    d_series = -(1 / 24 - t2 / 720 * (1 - t2 / 56 * (1 - t2 / 90 * (1 - t2 / 132))))
    e_series = -(1 / 120 - t2 / 5040 * (1 - t2 / 72 * (1 - t2 / 110 * (1 - t2 / 156))))
    return jnp.where(small, d_series, d_direct), jnp.where(small, e_series, e_direct)


def _pose(R: jax.Array, x: jax.Array) -> jax.Array:
    """``[[R, x], [0, 1]]`` ``(*batch, 4, 4)`` from ``R`` ``(*batch, 3, 3)`` and ``x`` ``(*batch, 3)``."""
    R, x = jnp.asarray(R), jnp.asarray(x)
    batch = jnp.broadcast_shapes(R.shape[:-2], x.shape[:-1])
    R = jnp.broadcast_to(R, (*batch, 3, 3))
    x = jnp.broadcast_to(x, (*batch, 3))
    top = jnp.concatenate([R, x[..., :, None]], axis=-1)
    bottom = jnp.broadcast_to(jnp.array([0.0, 0.0, 0.0, 1.0]), (*batch, 1, 4))
    return jnp.concatenate([top, bottom], axis=-2)


def _host_pose(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """:func:`_pose` in NumPy: ``[[R, x], [0, 1]]`` ``(*batch, 4, 4)``."""
    g = np.zeros((*np.broadcast_shapes(R.shape[:-2], x.shape[:-1]), 4, 4))
    g[..., :3, :3], g[..., :3, 3], g[..., 3, 3] = R, x, 1.0
    return g


def _blocks(A: jax.Array, B: jax.Array, C: jax.Array, D: jax.Array) -> jax.Array:
    """``[[A, B], [C, D]]`` ``(*batch, 6, 6)`` from four broadcastable ``(*batch, 3, 3)`` blocks."""
    A, B, C, D = jnp.broadcast_arrays(*(jnp.asarray(m, dtype=float) for m in (A, B, C, D)))
    return jnp.concatenate([jnp.concatenate([A, B], -1), jnp.concatenate([C, D], -1)], -2)


def _lower(A: jax.Array, C: jax.Array, D: jax.Array) -> jax.Array:
    """``[[A, 0], [C, D]]``."""
    return _blocks(A, jnp.zeros_like(A), C, D)


def _split(xi: jax.Array) -> tuple[jax.Array, jax.Array]:
    xi = jnp.asarray(xi)
    return xi[..., :3], xi[..., 3:]


def _ad_inv(R: jax.Array, x: jax.Array) -> jax.Array:
    """``Ad_{g^{-1}}`` of ``g = (R, x)``: ``[[R^T, 0], [-R^T hat(x), R^T]]``."""
    Rt = jnp.swapaxes(R, -1, -2)
    return _lower(Rt, -mm(Rt, skew(x)), Rt)


def _q_block(W: jax.Array, P: jax.Array, c: jax.Array, d: jax.Array, e: jax.Array) -> jax.Array:
    """Barfoot's ``Q(v, w)`` from ``W = hat(w)``, ``P = hat(v)`` and the coefficients ``c, d, e``."""
    WP, PW = mm(W, P), mm(P, W)
    WPW = mm(WP, W)
    WWP, PWW = mm(W, WP), mm(PW, W)
    WPWW, WWPW = mm(WPW, W), mm(W, WPW)
    return (
        0.5 * P
        + _c(c) * (WP + PW + WPW)
        - _c(d) * (WWP + PWW - 3.0 * WPW)
        - _c(0.5 * (d - 3.0 * e)) * (WPWW + WWPW)
    )


class _ExpParts:
    """Everything ``exp`` needs at ``xi``, from one evaluation of the coefficients."""

    def __init__(self, xi: jax.Array, sign: float = 1.0):
        w, v = _split(sign * jnp.asarray(xi))
        t2 = jnp.sum(w * w, axis=-1)
        self.a, self.b, self.c, self.k = coefficients(t2, "abck")
        self.d, self.e = _high_coefficients(t2)
        self.w, self.v = w, v
        self.W = skew(w)
        self.WW = mm(self.W, self.W)
        self.P = skew(v)

    def rotation(self) -> jax.Array:
        return _EYE3 + _c(self.a) * self.W + _c(self.b) * self.WW

    def V(self) -> jax.Array:
        """``J_l^{SO3}(w) = I + b W + c W^2``."""
        return _EYE3 + _c(self.b) * self.W + _c(self.c) * self.WW

    def V_inv(self) -> jax.Array:
        """``J_l^{SO3}(w)^{-1} = I - W/2 + k W^2``."""
        return _EYE3 - 0.5 * self.W + _c(self.k) * self.WW

    def left_jacobian(self) -> jax.Array:
        V = self.V()
        return _lower(V, _q_block(self.W, self.P, self.c, self.d, self.e), V)

    def left_jacobian_inv(self) -> jax.Array:
        Vi = self.V_inv()
        Q = _q_block(self.W, self.P, self.c, self.d, self.e)
        return _lower(Vi, -mm(Vi, mm(Q, Vi)), Vi)


class SE3(MatrixLieGroup):
    """The special Euclidean group SE(3), left-trivialized.

    Points are ``(*batch, 4, 4)`` homogeneous matrices ``[[R, x], [0, 1]]``
    (``R`` body to space, ``x`` the body origin in space); tangent vectors
    are body twists ``(w_1, w_2, w_3, v_1, v_2, v_3)`` ``(*batch, 6)``:
    **angular velocity first**, then the velocity of the body origin in body
    axes (the order of SE(2)'s ``(omega, v_x, v_y)``).

    Parameters
    ----------
    retraction : {"exp", "cayley", "so3xr3"} or GroupRetraction
        See the module docstring: ``exp`` couples rotation and translation
        (a screw), ``cayley`` is its rational analogue, ``so3xr3`` retracts
        them separately (not symmetric).

    Attributes
    ----------
    matrix_size : int
        ``4``: points are ``4 x 4`` homogeneous matrices of SE(3).

    Notes
    -----
    Argument checks (the rules of every :class:`Manifold`): the primitives
    refuse arguments of the wrong shape in every call (a twist is
    ``(..., 6)``, a pose ``(..., 4, 4)``); in eager calls ``log``,
    ``retract``, ``inverse_retract`` and the fused Jacobian methods also
    refuse a concrete point that is not a pose (tolerance ``1e-6``).

    Human coordinates (:meth:`to_coordinates`) are ``(x, y, z, r_x, r_y, r_z)``:
    the position, then the rotation vector of ``R``. Quaternions (scipy's
    scalar-last ``(q_x, q_y, q_z, q_w)``) through
    :meth:`to_position_quaternion` / :meth:`from_position_quaternion`, Euler
    angles through :meth:`to_position_euler` / :meth:`from_position_euler`
    (scipy's sequences, :meth:`SO3.as_euler`).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> Q = md.SE3("exp")
    >>> g = Q.from_coordinates([1.0, 0.0, 0.0, 0.0, 0.0, np.pi / 2])   # at x = 1, turned about z
    >>> np.asarray(g).shape
    (4, 4)
    >>> np.round(np.asarray(Q.to_coordinates(g)), 12)
    array([1.        , 0.        , 0.        , 0.        , 0.        ,
           1.57079633])
    """

    dim = 6
    matrix_size: ClassVar[int] = 4
    rotation_axes = (0, 3)
    coordinate_names = ("x", "y", "z", "rx", "ry", "rz")

    # ------------------------------------------------------------ structure
    def hat(self, xi):
        w, v = _split(xi)
        W = skew(w)
        top = jnp.concatenate([W, v[..., :, None]], axis=-1)
        bottom = jnp.zeros((*top.shape[:-2], 1, 4), dtype=top.dtype)
        return jnp.concatenate([top, bottom], axis=-2)

    def vee(self, X):
        w = _vee3(X)
        return jnp.concatenate([w, X[..., :3, 3]], axis=-1)

    def inverse(self, g):
        Rt = jnp.swapaxes(g[..., :3, :3], -1, -2)
        return _pose(Rt, -_mv(Rt, g[..., :3, 3]))

    def between(self, g0, g1):
        """``g0^{-1} g1``, its translation as ``R0^T (x1 - x0)`` (no cancellation at large ``|x|``)."""
        R0t = jnp.swapaxes(g0[..., :3, :3], -1, -2)
        return _pose(mm(R0t, g1[..., :3, :3]), _mv(R0t, g1[..., :3, 3] - g0[..., :3, 3]))

    def adjoint(self, g):
        R, x = g[..., :3, :3], g[..., :3, 3]
        return _lower(R, mm(skew(x), R), R)

    def ad(self, xi):
        w, v = _split(xi)
        W = skew(w)
        return _lower(W, skew(v), W)

    def compose(self, a, b):
        return mm(a, b)

    def ambient_tangent(self, q, eta):
        return mm(q, self.hat(eta))

    # ---------------------------------------------------------------- exp/log
    def exp(self, xi):
        """``exp`` of twists ``(w, v)`` ``(*batch, 6)``: ``[[R(w), V(w) v], [0, 1]]``.

        Concrete input is evaluated in NumPy with the same formulas (eager
        ``jax.numpy`` compiled some fifty small XLA programs at the first call
        of a process), traced input in ``jax.numpy``.
        """
        a = concrete_array(xi)
        if a is None:
            p = _ExpParts(xi)
            return _pose(p.rotation(), _mv(p.V(), p.v))
        w, v = a[..., :3], a[..., 3:]
        with np.errstate(all="ignore"):  # as the compiled path: an overflow propagates (the checks refuse it)
            a_, b, c = (x[..., None, None] for x in host_coefficients(np.sum(w * w, axis=-1), "abc"))
            W = host_skew(w)
            WW = host_mm(W, W)
            V = _EYE3 + b * W + c * WW
            return jax.device_put(_host_pose(_EYE3 + a_ * W + b * WW, np.sum(V * v[..., None, :], axis=-1)))

    def log(self, g):
        """The twist ``(w, v)`` ``(*batch, 6)`` of poses ``g`` ``(*batch, 4, 4)``, ``|w|`` in ``[0, pi]``."""
        w = rotation_log(g[..., :3, :3])
        (k,) = coefficients(jnp.sum(w * w, axis=-1), "k")
        W = skew(w)
        Vi = _EYE3 - 0.5 * W + _c(k) * mm(W, W)
        return jnp.concatenate([w, _mv(Vi, g[..., :3, 3])], axis=-1)

    def exp_right_jacobian(self, xi):
        return _ExpParts(xi, -1.0).left_jacobian()

    def exp_right_jacobian_inv(self, xi):
        return _ExpParts(xi, -1.0).left_jacobian_inv()

    # ------------------------------------------------------------- sampling
    def random_point(self, rng, batch_shape=()):
        R = _SO3.random_point(rng, batch_shape)
        return _pose(R, jnp.asarray(rng.standard_normal((*batch_shape, 3))))

    # ---------------------------------------------------------- validation
    _noun = "a pose"

    def _point_defects(self, a):
        R = a[..., :3, :3]
        return (
            ("the rotation block is not a rotation, |R^T R - I|",
             np.linalg.norm(np.swapaxes(R, -1, -2) @ R - _EYE3, axis=(-2, -1))),
            ("the last row is not [0, 0, 0, 1], off by", np.linalg.norm(a[..., 3, :] - np.array([0.0, 0.0, 0.0, 1.0]), axis=-1)),
        )

    def _rotation_block(self, a):
        return a[..., :3, :3]

    def _defects(self, a):
        R = a[..., :3, :3]
        return (
            ("|R^T R - I| of the rotation block", np.linalg.norm(np.swapaxes(R, -1, -2) @ R - _EYE3, axis=(-2, -1))),
            ("|last row - [0, 0, 0, 1]|", np.linalg.norm(a[..., 3, :] - np.array([0.0, 0.0, 0.0, 1.0]), axis=-1)),
            ("|det R - 1| of the rotation block (det -1: a reflection)", np.abs(np.linalg.det(R) - 1.0)),
        )

    # ------------------------------------------------------ human coordinates
    @staticmethod
    def from_rotation_position(R: ArrayLike, x: ArrayLike) -> jax.Array:
        """The pose ``[[R, x], [0, 1]]`` from rotations ``(*batch, 3, 3)`` and positions ``(*batch, 3)``."""
        return _pose(jnp.asarray(R, dtype=float), jnp.asarray(x, dtype=float))

    @staticmethod
    def rotation(q: ArrayLike) -> jax.Array:
        """The rotation block ``R`` ``(*batch, 3, 3)`` of poses ``q``."""
        return jnp.asarray(q)[..., :3, :3]

    @staticmethod
    def position(q: ArrayLike) -> jax.Array:
        """The position ``x`` ``(*batch, 3)`` of poses ``q``."""
        return jnp.asarray(q)[..., :3, 3]

    def to_coordinates(self, q):
        """``(x, y, z, r_x, r_y, r_z)`` ``(*batch, 6)``: position, then rotation vector (angle in ``[0, pi]``).

        Concrete input is converted in NumPy (no XLA program compiled), traced
        input in ``jax.numpy``, as :meth:`SO3.to_coordinates`.
        """
        a = concrete_array(q)
        xp, q = (jnp, jnp.asarray(q)) if a is None else (np, a)
        c = xp.concatenate([q[..., :3, 3], rotation_log(q[..., :3, :3], xp=xp)], axis=-1)
        return c if a is None else jax.device_put(c)

    def from_coordinates(self, c):
        """The pose with ``(x, y, z, r_x, r_y, r_z)`` ``(*batch, 6)``.

        Concrete input is converted in NumPy (:func:`~manifold_dirac._manifolds.so3.host_rodrigues`:
        eager ``jax.numpy`` would compile a program per operation and shape), traced input in ``jax.numpy``.
        """
        a = concrete_array(c)
        if a is None:
            c = _last_axis(c, 6, "SE3.from_coordinates", "(x, y, z, rx, ry, rz)")
            return _pose(rodrigues(c[..., 3:]), c[..., :3])
        _last_axis_shape(a.shape, 6, "SE3.from_coordinates", "(x, y, z, rx, ry, rz)")
        return jax.device_put(_host_pose(host_rodrigues(a[..., 3:]), a[..., :3]))

    def to_position_quaternion(self, q) -> jax.Array:
        """``(x, y, z, q_x, q_y, q_z, q_w)`` ``(*batch, 7)``: position, unit quaternion (scalar last, ``q_w >= 0``)."""
        q = jnp.asarray(q)
        return jnp.concatenate([q[..., :3, 3], SO3.as_quaternion(q[..., :3, :3])], axis=-1)

    def from_position_quaternion(self, c) -> jax.Array:
        """The pose with ``(x, y, z, q_x, q_y, q_z, q_w)`` ``(*batch, 7)`` (the quaternion is normalized)."""
        c = _last_axis(c, 7, "SE3.from_position_quaternion", "(x, y, z, qx, qy, qz, qw)")
        return _pose(SO3.from_quaternion(c[..., 3:]), c[..., :3])

    def to_position_euler(self, q, seq: str, degrees: bool = False) -> jax.Array:
        """``(x, y, z, a_1, a_2, a_3)`` ``(*batch, 6)``: position, Euler angles of ``seq`` (:meth:`SO3.as_euler`)."""
        q = jnp.asarray(q)
        return jnp.concatenate([q[..., :3, 3], SO3.as_euler(q[..., :3, :3], seq, degrees)], axis=-1)

    def from_position_euler(self, c, seq: str, degrees: bool = False) -> jax.Array:
        """The pose with ``(x, y, z, a_1, a_2, a_3)`` ``(*batch, 6)``, Euler angles of ``seq`` (:meth:`SO3.from_euler`)."""
        c = _last_axis(c, 6, "SE3.from_position_euler", "(x, y, z, a1, a2, a3)")
        return _pose(SO3.from_euler(seq, c[..., 3:], degrees), c[..., :3])


_SO3 = SO3("exp")


def _vee3(X: jax.Array) -> jax.Array:
    return 0.5 * jnp.stack([X[..., 2, 1] - X[..., 1, 2], X[..., 0, 2] - X[..., 2, 0], X[..., 1, 0] - X[..., 0, 1]], -1)


def _last_axis(c: ArrayLike, n: int, who: str, names: str) -> jax.Array:
    c = jnp.asarray(c, dtype=float)
    _last_axis_shape(c.shape, n, who, names)
    return c


def _last_axis_shape(shape: tuple[int, ...], n: int, who: str, names: str) -> None:
    if tuple(shape[-1:]) != (n,):
        raise ValueError(f"{who}: coordinates are (..., {n}) = {names}, got shape {tuple(shape)}")


@register_retraction(SE3)
class SE3Exp(Exp):
    """``exp`` on SE(3) (the coupled screw) with fused closed forms: one set of
    coefficients serves ``tau``, ``J_r``, ``J_r^{-1}``, ``J_l^{-1}`` and
    ``Ad_{tau^{-1}}`` (module docstring)."""

    def tau_with_inverse_jacobians(self, G, xi):
        p = _ExpParts(xi)
        Vi = p.V_inv()
        Q = _q_block(p.W, p.P, p.c, p.d, p.e)
        Qm = _q_block(-p.W, -p.P, p.c, p.d, p.e)  # Q(-v, -w): J_r(xi) = J_l(-xi)
        Vi_m = jnp.swapaxes(Vi, -1, -2)  # J_l^{SO3}(-w)^{-1} = J_l^{SO3}(w)^{-T}
        tau = _pose(p.rotation(), _mv(p.V(), p.v))
        J0 = -_lower(Vi, -mm(Vi, mm(Q, Vi)), Vi)
        J1 = _lower(Vi_m, -mm(Vi_m, mm(Qm, Vi_m)), Vi_m)
        return tau, J0, J1

    def tau_with_jacobians(self, G, xi):
        p = _ExpParts(xi)
        R = p.rotation()
        x = _mv(p.V(), p.v)
        Vm = jnp.swapaxes(p.V(), -1, -2)  # J_r^{SO3}(w) = J_l^{SO3}(w)^T
        Jxi = _lower(Vm, _q_block(-p.W, -p.P, p.c, p.d, p.e), Vm)
        return _pose(R, x), _ad_inv(R, x), Jxi


@register_retraction(SE3)
class SE3Cayley(Cayley):
    """The Cayley map of se(3) in closed form (module docstring); symmetric.

    Its domain is bounded by the rotation only: ``|w| < 2 tan((pi - 0.1)/2)``
    (the generic Cayley's band), whatever the translation.
    """

    @staticmethod
    def _parts(xi):
        w, v = _split(xi)
        f = 1.0 / (1.0 + 0.25 * jnp.sum(w * w, axis=-1))
        W = skew(w)
        WW = mm(W, W)
        M = _EYE3 + _c(f) * (0.5 * W + 0.25 * WW)  # (I - W/2)^{-1}
        R = _EYE3 + _c(f) * (W + 0.5 * WW)
        return w, v, f, W, M, R

    def tau(self, G, xi):
        _, v, _, _, M, R = self._parts(xi)
        return _pose(R, _mv(M, v))

    def tau_inv(self, G, g):
        R, x = g[..., :3, :3], g[..., :3, 3]
        margin = 1.0 + jnp.trace(R, axis1=-2, axis2=-1)  # 2 + 2 cos(theta), 0 at pi
        w = 2.0 * _vee3(R - jnp.swapaxes(R, -1, -2)) / margin[..., None]
        return jnp.concatenate([w, x - 0.5 * jnp.cross(w, x)], axis=-1)

    def _jac_inv(self, G, xi, sign):
        w, v = _split(sign * jnp.asarray(xi))  # sign -1: J_l^{-1}(xi) = J_r^{-1}(-xi)
        D = _EYE3 + 0.5 * skew(w)
        A = D + 0.25 * (w[..., :, None] * w[..., None, :])
        return _lower(A, 0.5 * mm(D, skew(v)), D)

    def right_jacobian(self, G, xi):
        w, v, f, W, M, _ = self._parts(xi)
        B = _c(0.5 * f) * (2.0 * _EYE3 - W)  # 2 (2I - W)/(4 + t^2)
        Dinv = _EYE3 + _c(f) * (-0.5 * W + 0.25 * mm(W, W))  # (I + W/2)^{-1}
        return _lower(B, -0.5 * mm(skew(v), B), Dinv)

    def tau_with_jacobians(self, G, xi):
        tau = self.tau(G, xi)
        return tau, _ad_inv(tau[..., :3, :3], tau[..., :3, 3]), self.right_jacobian(G, xi)


@register_retraction(SE3)
class SO3xR3(GroupRetraction):
    """``tau(w, v) = (exp W, v)``: SO(3) x R^3 inside SE(3); not symmetric.

    ``tau^{-1}(g) = (log R, x)``, ``J_r = diag(J_r^{SO3}(w), exp(W)^T)``,
    ``J_l^{-1} = [[J_l^{SO3}(w)^{-1}, 0], [-hat(v), I]]``; domain ``|w| < pi``.
    The new position is ``x + R v`` with the old attitude ``R``: a body
    whose frame is at its centre of mass flies straight between the nodes.
    """

    name = "so3xr3"
    symmetric = False

    def tau(self, G, xi):
        w, v = _split(xi)
        return _pose(rodrigues(w), v)

    def tau_inv(self, G, g):
        return jnp.concatenate([rotation_log(g[..., :3, :3]), g[..., :3, 3]], axis=-1)

    def right_jacobian(self, G, xi):
        w, _ = _split(xi)
        a, b, c = coefficients(jnp.sum(w * w, axis=-1), "abc")
        W = skew(w)
        WW = mm(W, W)
        Rt = _EYE3 - _c(a) * W + _c(b) * WW  # exp(W)^T
        return _lower(_EYE3 - _c(b) * W + _c(c) * WW, jnp.zeros_like(W), Rt)

    def right_jacobian_inv(self, G, xi):
        w, _ = _split(xi)
        a, b, k = coefficients(jnp.sum(w * w, axis=-1), "abk")
        W = skew(w)
        WW = mm(W, W)
        return _lower(_EYE3 + 0.5 * W + _c(k) * WW, jnp.zeros_like(W), _EYE3 + _c(a) * W + _c(b) * WW)

    def left_jacobian_inv(self, G, xi):
        w, v = _split(xi)
        (k,) = coefficients(jnp.sum(w * w, axis=-1), "k")
        W = skew(w)
        return _lower(_EYE3 - 0.5 * W + _c(k) * mm(W, W), -skew(v), jnp.broadcast_to(_EYE3, W.shape))

    def inverse_jacobian_domain(self, G, xi):
        return G.exp_jacobian_inv_domain(xi)  # J_r^{SO3}(w)^{-1} and J_l^{SO3}(w)^{-1}, singular at |w| = 2 pi

    def tau_with_jacobians(self, G, xi):
        w, v = _split(xi)
        a, b, c = coefficients(jnp.sum(w * w, axis=-1), "abc")
        W = skew(w)
        WW = mm(W, W)
        R = _EYE3 + _c(a) * W + _c(b) * WW
        Rt = jnp.swapaxes(R, -1, -2)
        return _pose(R, v), _ad_inv(R, v), _lower(_EYE3 - _c(b) * W + _c(c) * WW, jnp.zeros_like(W), Rt)
