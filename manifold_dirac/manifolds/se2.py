"""The planar rigid-motion group SE(2), points as 3x3 homogeneous matrices.

Tangent vectors are body twists in the order ``(omega, v_x, v_y)``: angular
velocity first, then the body-frame velocity of the origin of the body
frame, so a knife edge (no sideways slip) is ``A = [0, 0, 1]``.

Retractions ``R_q(xi) = q tau(xi)``:

* ``"exp"``: the group exponential, ``tau(w, v) = (rot(w), V(w) v)``;
* ``"cayley"``: the Cayley map of se(2) (generic matrix formula);
* ``"so2xr2"``: rotation and translation retracted separately, like
  SO(2) x R^2: ``tau(w, v) = (rot(w), v)``, i.e. the new position is
  ``x + R v``. Its inverse is ``(angle(R0^T R1), R0^T (x1 - x0))``. It is *not*
  symmetric (``tau(-xi) != tau(xi)^{-1}``), which costs the midpoint and
  trapezoid rules their second order (see ``docs/schemes.md``).

``J_r``/``J_l`` of ``exp`` are from Sola et al. (arXiv 1812.01537, eqs.
163-164), reordered to ``(omega, v)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .lie_group import MatrixLieGroup

__all__ = ["SE2"]

_SMALL = 1e-3


def _abcd(w: np.ndarray):
    """``A = sin w/w``, ``B = (1-cos w)/w``, ``C = (w - sin w)/w^2``, ``D = (1-cos w)/w^2``."""
    w2 = w * w
    small = w2 < _SMALL
    ws = np.where(small, 1.0, w)
    s, c = np.sin(ws), np.cos(ws)
    hc = 2 * np.sin(ws / 2) ** 2  # 1 - cos, without cancellation
    A = np.where(small, 1 - w2 / 6 * (1 - w2 / 20 * (1 - w2 / 42)), s / ws)
    B = np.where(small, w / 2 * (1 - w2 / 12 * (1 - w2 / 30 * (1 - w2 / 56))), hc / ws)
    C = np.where(small, w / 6 * (1 - w2 / 20 * (1 - w2 / 42 * (1 - w2 / 72))), (ws - s) / (ws * ws))
    D = np.where(small, 0.5 - w2 / 24 * (1 - w2 / 30 * (1 - w2 / 56)), hc / (ws * ws))
    del c
    return A, B, C, D


def _rot(w: np.ndarray) -> np.ndarray:
    c, s = np.cos(w), np.sin(w)
    return np.stack([np.stack([c, -s], -1), np.stack([s, c], -1)], -2)


def _pose(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    batch = np.broadcast_shapes(R.shape[:-2], t.shape[:-1])
    g = np.zeros((*batch, 3, 3), dtype=np.result_type(R, t))
    g[..., :2, :2] = R
    g[..., :2, 2] = t
    g[..., 2, 2] = 1.0
    return g


class SE2(MatrixLieGroup):
    """The special Euclidean group SE(2), left-trivialized.

    Points are ``(*batch, 3, 3)`` homogeneous matrices ``[[R, x], [0, 1]]``;
    tangent vectors are body twists ``(omega, v_x, v_y)``.

    Parameters
    ----------
    retraction : {"exp", "cayley", "so2xr2"}
        See the module docstring. ``exp``'s inverse is defined for
        ``|omega| < pi`` (the principal angle); Cayley's is singular at a
        rotation by pi and raises there.

    Notes
    -----
    Human coordinates (:meth:`to_coordinates`) are ``(x, y, theta)`` with
    ``theta`` in ``(-pi, pi]``.
    """

    dim = 3
    matrix_size: ClassVar[int] = 3
    retractions: ClassVar[tuple[str, ...]] = ("exp", "cayley", "so2xr2")
    coordinate_names = ("x", "y", "theta")

    def hat(self, xi):
        xi = np.asarray(xi)
        w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
        z = np.zeros_like(w)
        return np.stack(
            [np.stack([z, -w, vx], -1), np.stack([w, z, vy], -1), np.stack([z, z, z], -1)], -2
        )

    def vee(self, X):
        X = np.asarray(X)
        return np.stack([0.5 * (X[..., 1, 0] - X[..., 0, 1]), X[..., 0, 2], X[..., 1, 2]], -1)

    def inverse(self, g):
        g = np.asarray(g)
        Rt = np.swapaxes(g[..., :2, :2], -1, -2)
        return _pose(Rt, -np.einsum("...ij,...j->...i", Rt, g[..., :2, 2]))

    def adjoint(self, g):
        g = np.asarray(g)
        R, t = g[..., :2, :2], g[..., :2, 2]
        Ad = np.zeros((*g.shape[:-2], 3, 3), dtype=g.dtype)
        Ad[..., 0, 0] = 1.0
        Ad[..., 1, 0] = t[..., 1]
        Ad[..., 2, 0] = -t[..., 0]
        Ad[..., 1:, 1:] = R
        return Ad

    # ---------------------------------------------------------------- exp/log
    @staticmethod
    def _V(w: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return np.stack([np.stack([A, -B], -1), np.stack([B, A], -1)], -2)

    def exp(self, xi):
        xi = np.asarray(xi)
        w = xi[..., 0]
        A, B, _, _ = _abcd(w)
        t = np.einsum("...ij,...j->...i", self._V(w, A, B), xi[..., 1:])
        return _pose(_rot(w), t)

    def log(self, g):
        g = np.asarray(g)
        w = np.arctan2(g[..., 1, 0], g[..., 0, 0])
        A, B, _, _ = _abcd(w)
        n = A * A + B * B  # = (sin(w/2)/(w/2))^2 > 0 for |w| <= pi
        Vinv = np.stack([np.stack([A, B], -1), np.stack([-B, A], -1)], -2) / n[..., None, None]
        v = np.einsum("...ij,...j->...i", Vinv, g[..., :2, 2])
        return np.concatenate([w[..., None], v], -1)

    def exp_right_jacobian(self, xi):
        xi = np.asarray(xi)
        w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
        A, B, C, D = _abcd(w)
        J = np.zeros((*xi.shape[:-1], 3, 3), dtype=xi.dtype)
        J[..., 0, 0] = 1.0
        J[..., 1, 0] = vx * C - vy * D
        J[..., 2, 0] = vx * D + vy * C
        J[..., 1, 1], J[..., 1, 2] = A, B
        J[..., 2, 1], J[..., 2, 2] = -B, A
        return J

    def exp_right_jacobian_inv(self, xi):
        return _block_inverse(self.exp_right_jacobian(xi))

    # ------------------------------------------------ fused fast paths
    # With ``exp``, one evaluation of ``A, B, C, D`` (and of cos/sin of the
    # angle) serves tau, J_r, J_r^{-1}, J_l^{-1} = J_r^{-1}(-xi) (A, D even
    # and B, C odd in the angle) and Ad_{tau^{-1}}; the matrices are written
    # entry by entry into one buffer. Other retractions, and subclasses that
    # replace one of the fused primitives, use the generic composition.
    _FUSED_INV = ("retract", "_tau", "exp", "hat", "tau_left_jacobian_inv", "tau_right_jacobian_inv",
                  "exp_right_jacobian_inv", "exp_right_jacobian")
    _FUSED_FWD = ("retract", "retract_jacobians", "_tau", "exp", "hat", "adjoint", "inverse",
                  "tau_right_jacobian", "exp_right_jacobian")

    @staticmethod
    def _exp_parts(xi: np.ndarray):
        w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
        A, B, C, D = _abcd(w)
        c, s = np.cos(w), np.sin(w)
        tau = np.zeros((*xi.shape[:-1], 3, 3), dtype=np.result_type(xi, float))
        tau[..., 0, 0] = c
        tau[..., 0, 1] = -s
        tau[..., 1, 0] = s
        tau[..., 1, 1] = c
        tau[..., 0, 2] = A * vx - B * vy
        tau[..., 1, 2] = B * vx + A * vy
        tau[..., 2, 2] = 1.0
        return w, vx, vy, A, B, C, D, c, s, tau

    def retract_with_inverse_jacobians(self, q0, xi):
        if self.retraction != "exp" or not self._inherits(SE2, self._FUSED_INV):
            return super().retract_with_inverse_jacobians(q0, xi)
        xi = np.asarray(xi)
        w, vx, vy, A, B, C, D, c, s, tau = self._exp_parts(xi)
        n = A * A + B * B
        An, Bn = A / n, B / n
        # J_r = [[1, 0], [cr, M]], M = [[A, B], [-B, A]]: J_r^{-1} = [[1, 0], [-M^{-1} cr, M^{-1}]]
        cr0, cr1 = vx * C - vy * D, vx * D + vy * C
        # J_l = J_r(-xi) = [[1, 0], [cl, M^T]]
        cl0, cl1 = vx * C + vy * D, vy * C - vx * D
        J = np.zeros((2, *xi.shape[:-1], 3, 3), dtype=tau.dtype)
        J[..., 0, 0] = 1.0
        J[0, ..., 1, 1] = An
        J[0, ..., 1, 2] = -Bn
        J[0, ..., 2, 1] = Bn
        J[0, ..., 2, 2] = An
        J[0, ..., 1, 0] = -(An * cr0 - Bn * cr1)
        J[0, ..., 2, 0] = -(Bn * cr0 + An * cr1)
        J[1, ..., 1, 1] = An
        J[1, ..., 1, 2] = Bn
        J[1, ..., 2, 1] = -Bn
        J[1, ..., 2, 2] = An
        J[1, ..., 1, 0] = -(An * cl0 + Bn * cl1)
        J[1, ..., 2, 0] = -(An * cl1 - Bn * cl0)
        J0 = J[1]
        J0 *= -1.0
        return q0 @ tau, J0, J[0]

    def retract_with_jacobians(self, q, xi):
        if self.retraction != "exp" or not self._inherits(SE2, self._FUSED_FWD):
            return super().retract_with_jacobians(q, xi)
        xi = np.asarray(xi)
        w, vx, vy, A, B, C, D, c, s, tau = self._exp_parts(xi)
        tx, ty = tau[..., 0, 2], tau[..., 1, 2]
        J = np.zeros((2, *xi.shape[:-1], 3, 3), dtype=tau.dtype)
        # Ad of tau^{-1} = (R^T, -R^T t)
        J[0, ..., 0, 0] = 1.0
        J[0, ..., 1, 0] = s * tx - c * ty
        J[0, ..., 2, 0] = c * tx + s * ty
        J[0, ..., 1, 1] = c
        J[0, ..., 1, 2] = s
        J[0, ..., 2, 1] = -s
        J[0, ..., 2, 2] = c
        # J_r
        J[1, ..., 0, 0] = 1.0
        J[1, ..., 1, 0] = vx * C - vy * D
        J[1, ..., 2, 0] = vx * D + vy * C
        J[1, ..., 1, 1] = A
        J[1, ..., 1, 2] = B
        J[1, ..., 2, 1] = -B
        J[1, ..., 2, 2] = A
        q1 = q @ tau
        if J.shape[1:] != q1.shape:  # q carries batch axes that xi does not
            return q1, np.broadcast_to(J[0], q1.shape), np.broadcast_to(J[1], q1.shape)
        return q1, J[0], J[1]

    # ---------------------------------------------------------- Cayley, SO2xR2
    def cayley_inv(self, g):
        g = np.asarray(g)
        self._check_cayley_domain(1.0 + g[..., 0, 0], 1e-12, g)
        return super().cayley_inv(g)

    def _tau(self, xi):
        if self.retraction == "so2xr2":
            xi = np.asarray(xi)
            return _pose(_rot(xi[..., 0]), xi[..., 1:])
        return super()._tau(xi)

    def _tau_inv(self, g):
        if self.retraction == "so2xr2":
            w = np.arctan2(g[..., 1, 0], g[..., 0, 0])
            return np.concatenate([w[..., None], g[..., :2, 2]], -1)
        return super()._tau_inv(g)

    def _so2xr2_jacobians(self, xi):
        # tau(xi)^{-1} tau(xi + d) = (rot(dw), rot(-w) dv)  -> J_r = diag(1, rot(-w))
        # tau(xi + d) tau(xi)^{-1} = (rot(dw), dv - dw J v)  -> J_l = [[1, 0], [-J v, I]]
        xi = np.asarray(xi)
        batch = xi.shape[:-1]
        Jr = np.zeros((*batch, 3, 3), dtype=xi.dtype)
        Jr[..., 0, 0] = 1.0
        Jr[..., 1:, 1:] = _rot(-xi[..., 0])
        Jl_inv = np.zeros((*batch, 3, 3), dtype=xi.dtype)
        Jl_inv[..., 0, 0] = 1.0
        Jl_inv[..., 1:, 1:] = np.eye(2)
        # J_l^{-1} = [[1, 0], [+J v, I]], J v = (-v_y, v_x)
        Jl_inv[..., 1, 0] = -xi[..., 2]
        Jl_inv[..., 2, 0] = xi[..., 1]
        return Jr, Jl_inv

    def tau_right_jacobian(self, xi):
        if self.retraction == "so2xr2":
            return self._so2xr2_jacobians(xi)[0]
        return super().tau_right_jacobian(xi)

    def tau_right_jacobian_inv(self, xi):
        if self.retraction == "so2xr2":
            return np.swapaxes(self._so2xr2_jacobians(xi)[0], -1, -2)
        return super().tau_right_jacobian_inv(xi)

    def tau_left_jacobian_inv(self, xi):
        if self.retraction == "so2xr2":
            return self._so2xr2_jacobians(xi)[1]
        return super().tau_left_jacobian_inv(xi)

    # ------------------------------------------------------------- sampling
    def random_point(self, rng, batch_shape=()):
        th = rng.uniform(-np.pi, np.pi, batch_shape)
        t = rng.standard_normal((*batch_shape, 2))
        return _pose(_rot(th), t)

    def sample_tangent(self, rng, batch_shape, regime):
        if regime == "near_singular":
            xi = rng.standard_normal((*batch_shape, 3))
            sign = rng.choice([-1.0, 1.0], batch_shape)
            if self.retraction == "cayley":
                xi[..., 0] = sign * 10.0 ** rng.uniform(1, 3, batch_shape)  # angle -> pi
            else:
                xi[..., 0] = sign * (np.pi - 10.0 ** rng.uniform(-8, -2, batch_shape))
            return xi
        return super().sample_tangent(rng, batch_shape, regime)

    # ---------------------------------------------------------- validation
    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> np.ndarray:
        a = self._as_matrix_array(q, 3, name, "SE2")
        R = a[..., :2, :2]
        err_r = np.linalg.norm(np.swapaxes(R, -1, -2) @ R - np.eye(2), axis=(-2, -1))
        err_row = np.linalg.norm(a[..., 2, :] - np.array([0.0, 0.0, 1.0]), axis=-1)
        det = np.linalg.det(R)
        if err_r.size and np.max(err_r) > atol:
            idx = np.unravel_index(np.argmax(err_r), err_r.shape) if err_r.ndim else ()
            raise ValueError(
                f"{name}: rotation block is not a rotation at batch index {[int(i) for i in idx]}: "
                f"|R^T R - I| = {np.max(err_r):.3e} > atol = {atol:.1e}"
            )
        if np.any(det < 0):
            idx = np.argwhere(det < 0)[0].tolist() if np.ndim(det) else []
            raise ValueError(f"{name}: rotation block has det = -1 (a reflection) at batch index {idx}")
        if err_row.size and np.max(err_row) > atol:
            idx = np.unravel_index(np.argmax(err_row), err_row.shape) if err_row.ndim else ()
            raise ValueError(
                f"{name}: last row of a homogeneous SE(2) matrix must be [0, 0, 1] at batch index "
                f"{[int(i) for i in idx]}; off by {np.max(err_row):.3e}"
            )
        return a

    # ------------------------------------------------------ human coordinates
    def to_coordinates(self, q):
        """``(x, y, theta)``, ``(*batch, 3)``, ``theta`` in ``(-pi, pi]``."""
        q = np.asarray(q)
        th = np.arctan2(q[..., 1, 0], q[..., 0, 0])
        return np.stack([q[..., 0, 2], q[..., 1, 2], th], -1)

    def from_coordinates(self, c):
        """The pose with ``(x, y, theta)`` ``(*batch, 3)``."""
        c = np.asarray(c, dtype=float)
        if c.shape[-1:] != (3,):
            raise ValueError(f"SE2 coordinates are (..., 3) = (x, y, theta), got {c.shape}")
        return _pose(_rot(c[..., 2]), c[..., :2])


def _block_inverse(J: np.ndarray) -> np.ndarray:
    """Inverse of ``[[1, 0], [c, M]]`` with ``M = [[A, B], [-B, A]]``."""
    M = J[..., 1:, 1:]
    A, B = M[..., 0, 0], M[..., 0, 1]
    n = A * A + B * B
    Minv = np.stack([np.stack([A, -B], -1), np.stack([B, A], -1)], -2) / n[..., None, None]
    out = np.zeros_like(J)
    out[..., 0, 0] = 1.0
    out[..., 1:, 1:] = Minv
    out[..., 1:, 0] = -np.einsum("...ij,...j->...i", Minv, J[..., 1:, 0])
    return out
