"""The planar rigid-motion group SE(2): points as 3x3 homogeneous poses, body twists.

A tangent vector is a body twist ``xi = (w, v_x, v_y)``: angular velocity
first, then the velocity of the body origin in body axes (a knife edge is
``A = [0, 0, 1]``). Retractions ``R_q(xi) = q tau(xi)``, each a registered
class with closed forms (``c = cos w``, ``s = sin w``):

* ``"exp"`` (:class:`SE2Exp`): ``tau = (rot w, V(w) v)``, ``V = [[A, -B], [B, A]]``
  with ``A = sin w / w``, ``B = (1 - cos w)/w`` (Sola et al., arXiv
  1812.01537, eq. 156); ``log``: ``w = atan2(s, c)``, ``v = V^{-1} t`` with
  ``V^{-1} = [[h, w/2], [-w/2, h]]``, ``h = (w/2) cot(w/2)`` (App. C). The
  right Jacobian (eq. 163, reordered to ``(w, v)``; ``C = (w - sin w)/w^2``,
  ``D = (1 - cos w)/w^2``) and its inverse (``k = (1 - h)/w^2``)::

      J_r = [[1, 0, 0], [C v_x - D v_y, A, B], [D v_x + C v_y, -B, A]],
      J_r^{-1} = [[1, 0, 0], [k w v_x + v_y/2, h, -w/2], [k w v_y - v_x/2, w/2, h]];

  ``J_l(xi) = J_r(-xi)`` (eq. 164). Domain ``|w| < pi``.
* ``"cayley"`` (:class:`SE2Cayley`): with ``f = 1/(1 + w^2/4)``,
  ``cay(xi) = (rot, f (v_x - w v_y/2, v_y + w v_x/2))``, ``c = f (1 - w^2/4)``,
  ``s = f w``; ``cay^{-1}``: ``w = 2 sin/(1 + cos)``, ``v = (I - W/2) t``;
  ``J_r^{-1} = [[1 + w^2/4, 0, 0], [v_y/2 + w v_x/4, 1, -w/2], [-v_x/2 + w v_y/4, w/2, 1]]``,
  ``J_r = f [[1, 0, 0], [-v_y/2, 1, w/2], [v_x/2, -w/2, 1]]``. The rotation
  angle is ``2 atan(w/2)``; only ``w`` bounds the domain.
* ``"so2xr2"`` (:class:`SO2xR2`): rotation and translation retracted
  separately, ``tau = (rot w, v)``: the new position is ``x + R v`` with the
  *old* heading. ``J_r = diag(1, rot(-w))``, ``J_l^{-1} = [[1, 0], [J v, I]]``
  with ``J v = (-v_y, v_x)``. Not symmetric: ``tau(xi)^{-1} = (rot(-w),
  -rot(-w) v) != tau(-xi)``, so the midpoint and trapezoid rules lose their
  second order with it.

``J_q = Ad_{tau^{-1}}`` with ``Ad_g = [[1, 0], [(t_y, -t_x), R]]`` (App. C, reordered).
Small-angle branches below ``w^2 < 1e-3`` share the SO(3) series
(``sin w/w``, ``(1 - cos w)/w^2``, ...) behind a NaN-free double-``where``.
Every closed form of ``exp`` reads one ``sin``/``cos`` pair: of ``w`` for
``tau`` and ``J_r``, of ``w/2`` where ``J_r^{-1}`` needs ``cot(w/2)``
(``sin w = 2 sin(w/2) cos(w/2)``, ``1 - cos w = 2 sin^2(w/2)``), and the pair
is computed once in the compiled program (:func:`_sincos`): a midpoint step
evaluates the end point at ``xi`` and the node at ``xi/2``, whose angle is
the end point's half angle, so one ``sin``/``cos`` serves the whole residual.
"""

from __future__ import annotations

from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .base import concrete_array, register_retraction
from .lie_group import Cayley, Exp, GroupRetraction, MatrixLieGroup
from .so3 import _SMALL, _series, _trig, mm

__all__ = ["SE2", "SE2Cayley", "SE2Exp", "SO2xR2"]

def _m3(rows) -> jax.Array:
    """A ``(*batch, 3, 3)`` matrix from a 3x3 nested list of broadcastable arrays or numbers."""
    flat = jnp.broadcast_arrays(*(jnp.asarray(x, dtype=float) for r in rows for x in r))
    return jnp.stack([jnp.stack(flat[3 * i : 3 * i + 3], -1) for i in range(3)], -2)


def _pose(c, s, tx, ty) -> jax.Array:
    """``[[c, -s, t_x], [s, c, t_y], [0, 0, 1]]``."""
    return _m3([[c, -s, tx], [s, c, ty], [0.0, 0.0, 1.0]])


def _ad_inv(c, s, tx, ty) -> jax.Array:
    """``Ad_{g^{-1}}`` of ``g = (rot, t)``: ``[[1, 0], [(s t_x - c t_y, c t_x + s t_y), rot^T]]``."""
    return _m3([[1.0, 0.0, 0.0], [s * tx - c * ty, c, s], [c * tx + s * ty, -s, c]])


def _parts(xi: jax.Array):
    xi = jnp.asarray(xi)
    return xi[..., 0], xi[..., 1], xi[..., 2]


def _sincos(x1: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``sin x, cos x`` ``(*batch,)`` of angles ``x1`` ``(*batch, 1)``, each computed once per evaluation.

    SO(3)'s :func:`~manifold_dirac._manifolds.so3._trig` (XLA:CPU would
    otherwise recompute them in every fused kernel that reads them), with
    their derivatives from the same two values (a Newton iteration's
    Jacobian adds no ``sin``/``cos`` of its own). The angle comes with a
    trailing axis (a slice of the twist, ``xi[..., 0:1]``, not a reshape of
    it) so that the same angle from two places is one computation for XLA.
    """
    s, c = _trig(x1, ("s", "c"))
    return s[..., 0], c[..., 0]


def _angle(xi: jax.Array) -> jax.Array:
    """The rotation part of twists ``(*batch, 3)`` as ``(*batch, 1)`` (see :func:`_sincos`)."""
    return jnp.asarray(xi)[..., 0:1]


def _small(w: jax.Array, xp=jnp) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(w^2, small, w_safe)``: the Taylor branch's flag and ``w`` for the closed forms' divisions (1 where small)."""
    w2 = w * w
    small = w2 < _SMALL
    return w2, small, xp.where(small, 1.0, w)


def _exp_coefficients(w: jax.Array, w1: jax.Array | None = None):
    """``cos w, sin w, A, B, C, D`` of the module docstring from one ``sin``/``cos`` of ``w``, NaN-free at ``w = 0``.

    ``1 - cos w`` is ``sin^2 w / (1 + cos w)`` where ``cos w >= 0`` (no
    cancellation at small ``w``), ``1 - cos w`` itself elsewhere. Below
    ``w^2 < 1e-3`` the Taylor series (SO(3)'s); the closed forms divide by
    ``w`` made safe there (the double-``where``), so no branch is NaN, in
    value or derivative. ``w1``: ``w`` as ``(*batch, 1)`` (:func:`_angle`), if at hand.
    """
    s, c = _sincos(jnp.asarray(w)[..., None] if w1 is None else w1)
    return _closed_forms(w, c, s, jnp)


def _closed_forms(w, c, s, xp) -> tuple:
    """:func:`_exp_coefficients` from ``cos w``, ``sin w``, with the array module ``xp`` (``jax.numpy``, or NumPy on the host)."""
    w2, small, ws = _small(w, xp)
    pos = c >= 0.0
    omc = xp.where(pos, s * s / xp.where(pos, 1.0 + c, 1.0), 1.0 - c)  # 1 - cos w
    a, d, c3 = _series(w2, "abc")  # sin/w, (1 - cos)/w^2, (w - sin)/w^3
    return (c, s, xp.where(small, a, s / ws), xp.where(small, w * d, omc / ws),
            xp.where(small, w * c3, (ws - s) / (ws * ws)), xp.where(small, d, omc / (ws * ws)))


def _host_pose(c, s, tx, ty) -> np.ndarray:
    """:func:`_pose` in NumPy: ``[[c, -s, t_x], [s, c, t_y], [0, 0, 1]]`` ``(*batch, 3, 3)``."""
    g = np.zeros((*np.shape(c), 3, 3))
    g[..., 0, 0], g[..., 0, 1], g[..., 0, 2] = c, -s, tx
    g[..., 1, 0], g[..., 1, 1], g[..., 1, 2] = s, c, ty
    g[..., 2, 2] = 1.0
    return g


def _host_exp(xi: np.ndarray) -> np.ndarray:
    """``SE2.exp`` in NumPy, ``(*batch, 3) -> (*batch, 3, 3)``: :func:`_exp_coefficients`' branches, on the host."""
    w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
    with np.errstate(all="ignore"):  # as the compiled path: non-finite values propagate (the checks refuse them)
        c, s, A, B = _closed_forms(w, np.cos(w), np.sin(w), np)[:4]
        return _host_pose(c, s, A * vx - B * vy, B * vx + A * vy)


def _half_angle_coefficients(w: jax.Array, half1: jax.Array | None = None):
    """``cos w, sin w, A, B, h, k`` of the module docstring from one ``sin``/``cos`` of ``w/2``, NaN-free at ``w = 0``.

    ``sin w = 2 sin(w/2) cos(w/2)``, ``1 - cos w = 2 sin^2(w/2)`` and
    ``h = (w/2) cos(w/2) / sin(w/2)``: what ``J_r^{-1}`` needs (``cot(w/2)``,
    finite up to ``|w| < 2 pi``) with ``tau`` from the same two values. The
    midpoint node ``tau(xi/2)`` (:func:`_exp_coefficients` of ``w/2``)
    evaluates the same ``sin``/``cos``, so a step computes them once: ``half1``, ``w/2`` as
    ``(*batch, 1)`` computed as the node computes its angle (``_angle(0.5 * xi)``), lets XLA see that they
    are the same.
    """
    sh, ch = _sincos(0.5 * jnp.asarray(w)[..., None] if half1 is None else half1)
    w2, small, ws = _small(w)
    s, omc = 2.0 * sh * ch, 2.0 * sh * sh
    h = 0.5 * ws * ch / jnp.where(small, 1.0, sh)
    a, d, k = _series(w2, "abk")
    k = jnp.where(small, k, (1.0 - h) / (ws * ws))
    return (1.0 - omc, s, jnp.where(small, a, s / ws), jnp.where(small, w * d, omc / ws),
            jnp.where(small, 1.0 - w2 * k, h), k)


class SE2(MatrixLieGroup):
    """The special Euclidean group SE(2), left-trivialized.

    Points are ``(*batch, 3, 3)`` homogeneous matrices ``[[R, x], [0, 1]]``;
    tangent vectors are body twists ``(w, v_x, v_y)`` ``(*batch, 3)``.

    Parameters
    ----------
    retraction : {"exp", "cayley", "so2xr2"} or GroupRetraction
        See the module docstring. ``exp``'s and ``so2xr2``'s inverses give
        the principal angle ``(-pi, pi]``; Cayley's is singular at a rotation
        by pi.

    Attributes
    ----------
    matrix_size : int
        ``3``: points are ``3 x 3`` homogeneous matrices of SE(2).

    Notes
    -----
    Argument checks (the rules of every :class:`Manifold`): the primitives
    refuse arguments of the wrong shape in every call (a twist is
    ``(..., 3)``, a pose ``(..., 3, 3)``); in eager calls ``log``,
    ``retract``, ``inverse_retract`` and the fused Jacobian methods also
    refuse a concrete point that is not a pose (tolerance ``1e-6``).

    Human coordinates (:meth:`to_coordinates`) are ``(x, y, theta)`` with
    ``theta`` in ``(-pi, pi]``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> Q = md.SE2("cayley")
    >>> g = Q.from_coordinates([1.0, 2.0, np.pi / 2])          # at (1, 2), heading along y
    >>> np.round(np.asarray(Q.to_coordinates(g)), 12)
    array([1.        , 2.        , 1.57079633])
    """

    dim = 3
    matrix_size: ClassVar[int] = 3
    rotation_axes = (0, 1)
    coordinate_names = ("x", "y", "theta")

    def hat(self, xi):
        w, vx, vy = _parts(xi)
        return _m3([[0.0, -w, vx], [w, 0.0, vy], [0.0, 0.0, 0.0]])

    def vee(self, X):
        return jnp.stack([0.5 * (X[..., 1, 0] - X[..., 0, 1]), X[..., 0, 2], X[..., 1, 2]], -1)

    def inverse(self, g):
        r00, r01, r10, r11 = g[..., 0, 0], g[..., 0, 1], g[..., 1, 0], g[..., 1, 1]
        tx, ty = g[..., 0, 2], g[..., 1, 2]
        return _m3([[r00, r10, -(r00 * tx + r10 * ty)], [r01, r11, -(r01 * tx + r11 * ty)], [0.0, 0.0, 1.0]])

    def between(self, g0, g1):
        """``g0^{-1} g1``, its translation as ``R0^T (t1 - t0)`` (no cancellation at large ``|t|``)."""
        R0t = jnp.swapaxes(g0[..., :2, :2], -1, -2)
        R = mm(R0t, g1[..., :2, :2])
        t = jnp.sum(R0t * (g1[..., :2, 2] - g0[..., :2, 2])[..., None, :], -1)
        return _m3([[R[..., 0, 0], R[..., 0, 1], t[..., 0]],
                    [R[..., 1, 0], R[..., 1, 1], t[..., 1]],
                    [0.0, 0.0, 1.0]])

    def compose(self, a, b):
        return mm(a, b)

    def adjoint(self, g):
        return _m3([[1.0, 0.0, 0.0],
                    [g[..., 1, 2], g[..., 0, 0], g[..., 0, 1]],
                    [-g[..., 0, 2], g[..., 1, 0], g[..., 1, 1]]])

    def ad(self, xi):
        w, vx, vy = _parts(xi)
        return _m3([[0.0, 0.0, 0.0], [vy, 0.0, -w], [-vx, w, 0.0]])

    def ambient_tangent(self, q, eta):
        return mm(q, self.hat(eta))

    # ---------------------------------------------------------------- exp/log
    def exp(self, xi):
        """``exp`` of twists ``(w, v_x, v_y)`` ``(*batch, 3)``.

        Concrete input is evaluated in NumPy with the same formulas (eager
        ``jax.numpy`` compiled some thirty small XLA programs at the first
        call of a process), traced input in ``jax.numpy``.
        """
        a = concrete_array(xi)
        if a is not None:
            return jax.device_put(_host_exp(a))
        w, vx, vy = _parts(xi)
        c, s, A, B = _exp_coefficients(w, _angle(xi))[:4]
        return _pose(c, s, A * vx - B * vy, B * vx + A * vy)

    def log(self, g):
        """The twist ``(w, v_x, v_y)`` ``(*batch, 3)`` of poses ``g`` ``(*batch, 3, 3)``, ``w`` in ``(-pi, pi]``."""
        w = jnp.arctan2(g[..., 1, 0], g[..., 0, 0])
        h = _half_angle_coefficients(w)[4]
        tx, ty = g[..., 0, 2], g[..., 1, 2]
        return jnp.stack([w, h * tx + 0.5 * w * ty, h * ty - 0.5 * w * tx], -1)

    def exp_right_jacobian(self, xi):
        w, vx, vy = _parts(xi)
        A, B, C, D = _exp_coefficients(w, _angle(xi))[2:]
        return _m3([[1.0, 0.0, 0.0], [C * vx - D * vy, A, B], [D * vx + C * vy, -B, A]])

    def exp_right_jacobian_inv(self, xi):
        w, vx, vy = _parts(xi)
        h, k = _half_angle_coefficients(w)[4:]
        return _m3([[1.0, 0.0, 0.0],
                    [k * w * vx + 0.5 * vy, h, -0.5 * w],
                    [k * w * vy - 0.5 * vx, 0.5 * w, h]])

    # ------------------------------------------------------------- sampling
    def random_point(self, rng, batch_shape=()):
        th = rng.uniform(-np.pi, np.pi, batch_shape)
        t = rng.standard_normal((*batch_shape, 2))
        return _pose(np.cos(th), np.sin(th), t[..., 0], t[..., 1])

    # ---------------------------------------------------------- validation
    _noun = "a pose"

    def _point_defects(self, a):
        R = a[..., :2, :2]
        return (
            ("the rotation block is not a rotation, |R^T R - I|",
             np.linalg.norm(np.swapaxes(R, -1, -2) @ R - np.eye(2), axis=(-2, -1))),
            ("the last row is not [0, 0, 1], off by", np.linalg.norm(a[..., 2, :] - np.array([0.0, 0.0, 1.0]), axis=-1)),
        )

    def _rotation_block(self, a):
        return a[..., :2, :2]

    def _defects(self, a):
        R = a[..., :2, :2]
        return (
            ("|R^T R - I| of the rotation block", np.linalg.norm(np.swapaxes(R, -1, -2) @ R - np.eye(2), axis=(-2, -1))),
            ("|last row - [0, 0, 1]|", np.linalg.norm(a[..., 2, :] - np.array([0.0, 0.0, 1.0]), axis=-1)),
            ("|det R - 1| of the rotation block (det -1: a reflection)", np.abs(np.linalg.det(R) - 1.0)),
        )

    # ------------------------------------------------------ human coordinates
    def to_coordinates(self, q):
        """``(x, y, theta)``, ``(*batch, 3)``, ``theta`` in ``(-pi, pi]``.

        Concrete input is converted in NumPy (eager ``jax.numpy`` would compile
        a program per operation and shape), traced input in ``jax.numpy``.
        """
        a = concrete_array(q)
        xp, q = (jnp, jnp.asarray(q)) if a is None else (np, a)
        c = xp.stack([q[..., 0, 2], q[..., 1, 2], xp.arctan2(q[..., 1, 0], q[..., 0, 0])], -1)
        return c if a is None else jax.device_put(c)

    def from_coordinates(self, c):
        """The pose with ``(x, y, theta)`` ``(*batch, 3)``.

        Concrete input is converted in NumPy (eager ``jax.numpy`` would compile
        a program per operation and shape), traced input in ``jax.numpy``.
        """
        a = concrete_array(c)
        c = a if a is not None else jnp.asarray(c, dtype=float)  # (a list of tracers converts here, not in NumPy)
        if tuple(c.shape[-1:]) != (3,):
            raise ValueError(
                f"SE2.from_coordinates: coordinates are (..., 3) = (x, y, theta), got shape {tuple(c.shape)}"
            )
        if a is None:
            return _pose(jnp.cos(c[..., 2]), jnp.sin(c[..., 2]), c[..., 0], c[..., 1])
        with np.errstate(all="ignore"):  # as the compiled path: a non-finite angle gives NaN, silently
            return jax.device_put(_host_pose(np.cos(a[..., 2]), np.sin(a[..., 2]), a[..., 0], a[..., 1]))


@register_retraction(SE2)
class SE2Exp(Exp):
    """``exp`` on SE(2) with fused closed forms: one evaluation of the angle's
    coefficients serves ``tau``, ``J_r``, ``J_r^{-1}``, ``J_l^{-1}(xi) = J_r^{-1}(-xi)``
    and ``Ad_{tau^{-1}}``."""

    def tau_with_inverse_jacobians(self, G, xi):
        w, vx, vy = _parts(xi)
        c, s, A, B, h, k = _half_angle_coefficients(w, _angle(0.5 * jnp.asarray(xi)))
        kw, hw = k * w, 0.5 * w
        tau = _pose(c, s, A * vx - B * vy, B * vx + A * vy)
        J0 = _m3([[-1.0, 0.0, 0.0], [0.5 * vy - kw * vx, -h, -hw], [-kw * vy - 0.5 * vx, hw, -h]])
        J1 = _m3([[1.0, 0.0, 0.0], [kw * vx + 0.5 * vy, h, -hw], [kw * vy - 0.5 * vx, hw, h]])
        return tau, J0, J1

    def tau_with_jacobians(self, G, xi):
        w, vx, vy = _parts(xi)
        c, s, A, B, C, D = _exp_coefficients(w, _angle(xi))
        tx, ty = A * vx - B * vy, B * vx + A * vy
        Jxi = _m3([[1.0, 0.0, 0.0], [C * vx - D * vy, A, B], [D * vx + C * vy, -B, A]])
        return _pose(c, s, tx, ty), _ad_inv(c, s, tx, ty), Jxi


@register_retraction(SE2)
class SE2Cayley(Cayley):
    """The Cayley map of se(2) in closed form (module docstring); symmetric.

    Its domain is bounded by the rotation only: ``|w| < 2 tan((pi - 0.1)/2)``
    (the generic Cayley's band), whatever the translation.
    """

    @staticmethod
    def _tau(xi):
        w, vx, vy = _parts(xi)
        f = 1.0 / (1.0 + 0.25 * w * w)
        return f, _pose(f * (1.0 - 0.25 * w * w), f * w, f * (vx - 0.5 * w * vy), f * (vy + 0.5 * w * vx))

    def tau(self, G, xi):
        return self._tau(xi)[1]

    def tau_inv(self, G, g):
        w = 2.0 * (g[..., 1, 0] - g[..., 0, 1]) / (2.0 + g[..., 0, 0] + g[..., 1, 1])
        tx, ty = g[..., 0, 2], g[..., 1, 2]
        return jnp.stack([w, tx + 0.5 * w * ty, ty - 0.5 * w * tx], -1)

    def right_jacobian(self, G, xi):
        return self._tau_with_right_jacobian(xi)[1]

    def _jac_inv(self, G, xi, sign):
        w, vx, vy = _parts(sign * jnp.asarray(xi))  # sign -1: J_l^{-1}(xi) = J_r^{-1}(-xi)
        return _m3([[1.0 + 0.25 * w * w, 0.0, 0.0],
                    [0.5 * vy + 0.25 * w * vx, 1.0, -0.5 * w],
                    [0.25 * w * vy - 0.5 * vx, 0.5 * w, 1.0]])

    def _tau_with_right_jacobian(self, xi):
        w, vx, vy = _parts(xi)
        f, tau = self._tau(xi)
        hw = 0.5 * w
        return tau, _m3([[f, 0.0, 0.0], [-0.5 * f * vy, f, f * hw], [0.5 * f * vx, -f * hw, f]])

    def tau_with_jacobians(self, G, xi):
        tau, Jr = self._tau_with_right_jacobian(xi)
        return tau, _ad_inv(tau[..., 0, 0], tau[..., 1, 0], tau[..., 0, 2], tau[..., 1, 2]), Jr


@register_retraction(SE2)
class SO2xR2(GroupRetraction):
    """``tau(w, v) = (rot w, v)``: SO(2) x R^2 inside SE(2); not symmetric.

    ``tau^{-1}(g) = (atan2(R_10, R_00), t)``, ``J_r = diag(1, rot(-w))``,
    ``J_l^{-1} = [[1, 0, 0], [-v_y, 1, 0], [v_x, 0, 1]]``; domain ``|w| < pi``.
    """

    name = "so2xr2"
    symmetric = False

    def tau(self, G, xi):
        w, vx, vy = _parts(xi)
        s, c = _sincos(_angle(xi))
        return _pose(c, s, vx, vy)

    def tau_inv(self, G, g):
        return jnp.stack([jnp.arctan2(g[..., 1, 0], g[..., 0, 0]), g[..., 0, 2], g[..., 1, 2]], -1)

    def right_jacobian(self, G, xi):
        s, c = _sincos(_angle(xi))
        return _m3([[1.0, 0.0, 0.0], [0.0, c, s], [0.0, -s, c]])

    def right_jacobian_inv(self, G, xi):
        return jnp.swapaxes(self.right_jacobian(G, xi), -1, -2)

    def left_jacobian_inv(self, G, xi):
        _, vx, vy = _parts(xi)
        return _m3([[1.0, 0.0, 0.0], [-vy, 1.0, 0.0], [vx, 0.0, 1.0]])

    def tau_with_jacobians(self, G, xi):
        w, vx, vy = _parts(xi)
        s, c = _sincos(_angle(xi))
        Jxi = _m3([[1.0, 0.0, 0.0], [0.0, c, s], [0.0, -s, c]])
        return _pose(c, s, vx, vy), _ad_inv(c, s, vx, vy), Jxi
