"""The rotation group SO(3), points as 3x3 matrices, body angular velocities.

Formulas: Rodrigues for ``exp``; the logarithm through a unit quaternion
(Shepperd's method) so that it is accurate on the whole domain, rotations
by nearly pi included; ``J_r`` and ``J_r^{-1}`` from Sola et al. (arXiv
1812.01537, eqs. 143-145) with ``cot`` written as ``(1 + cos)/sin`` -> ``cot(t/2)``
so that they stay finite up to pi; Cayley in closed form (Bou-Rabee & Marsden,
FoCM 2009). Each closed form has a Taylor branch below ``theta^2 < 1e-3``,
where the series (truncated after theta^6) is exact to round-off and the
closed form would lose digits to cancellation; ``np.where`` picks a branch
after both sides were evaluated at safe arguments, so no NaN is produced on
either side.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .lie_group import MatrixLieGroup

__all__ = ["SO3"]

_SMALL = 1e-3  # threshold on theta^2 for the Taylor branches (next term < 1e-17)


def _skew(w: np.ndarray) -> np.ndarray:
    w = np.asarray(w)
    X = np.zeros(w.shape[:-1] + (3, 3), dtype=w.dtype)
    X[..., 0, 1] = -w[..., 2]
    X[..., 0, 2] = w[..., 1]
    X[..., 1, 0] = w[..., 2]
    X[..., 1, 2] = -w[..., 0]
    X[..., 2, 0] = -w[..., 1]
    X[..., 2, 1] = w[..., 0]
    return X


_I3 = np.eye(3)
_I3.setflags(write=False)
_SKEW_BASIS = np.zeros((3, 9))  # row j: hat(e_j) flattened, so hat(w) = w @ _SKEW_BASIS
_SKEW_BASIS[0, [7, 5]] = 1.0, -1.0
_SKEW_BASIS[1, [2, 6]] = 1.0, -1.0
_SKEW_BASIS[2, [3, 1]] = 1.0, -1.0
_SKEW_BASIS.setflags(write=False)


def _skew_fast(w: np.ndarray) -> np.ndarray:
    """``hat(w)`` of a finite real ``w`` by one matrix product (the fused paths'
    version of :func:`_skew`; equal for finite input)."""
    return (w @ _SKEW_BASIS).reshape(w.shape[:-1] + (3, 3))


def _direct(ts: np.ndarray, which: str) -> tuple:
    """Closed forms of the coefficients named in ``which`` at ``ts = t^2 > 0``
    (``sin t``, ``sin(t/2)`` and ``cos(t/2)`` evaluated once and shared)."""
    t = np.sqrt(ts)
    out = []
    s = np.sin(t) if ("a" in which or "c" in which) else None
    sh = np.sin(t / 2) if ("b" in which or "k" in which) else None
    for w in which:
        if w == "a":
            out.append(s / t)
        elif w == "b":
            out.append(2 * sh**2 / ts)
        elif w == "c":
            out.append((t - s) / (ts * t))
        else:  # "k": (1 - (t/2) cot(t/2)) / t^2, finite up to t -> 2 pi
            out.append((1.0 - 0.5 * t * np.cos(t / 2) / sh) / ts)
    return tuple(out)


def _series(t2: np.ndarray, which: str) -> tuple:
    """Taylor series of the same coefficients (truncated after t^6)."""
    out = []
    for w in which:
        if w == "a":
            out.append(1 - t2 / 6 * (1 - t2 / 20 * (1 - t2 / 42)))
        elif w == "b":
            out.append(0.5 - t2 / 24 * (1 - t2 / 30 * (1 - t2 / 56)))
        elif w == "c":
            out.append(1 / 6 - t2 / 120 * (1 - t2 / 42 * (1 - t2 / 72)))
        else:
            out.append(1 / 12 + t2 / 720 + t2 * t2 / 30240 + t2**3 / 1209600)
    return tuple(out)


def _coefficients(t2: np.ndarray, which: str = "abc") -> tuple:
    """Coefficients of ``X`` and ``X^2`` in the closed forms, as functions of ``t^2``.

    ``a = sin t / t``, ``b = (1 - cos t)/t^2``, ``c = (t - sin t)/t^3``,
    ``k = (1 - (t/2) cot(t/2))/t^2``; ``which`` names the ones wanted, in
    order. Below ``t^2 < 1e-3`` the series is used. When the whole batch is
    on one side of the threshold only that side is evaluated (the common
    case: no ``np.where`` and half the work); a mixed batch evaluates both
    sides at safe arguments (``t^2 -> 1`` on the series side of the closed
    form) so that neither produces a NaN, then picks.
    """
    small = t2 < _SMALL
    if not np.any(small):
        return _direct(t2, which)
    if np.all(small):
        return _series(np.asarray(t2, dtype=float), which)
    ts = np.where(small, 1.0, t2)
    return tuple(np.where(small, sr, dr) for sr, dr in zip(_series(t2, which), _direct(ts, which)))


class SO3(MatrixLieGroup):
    """The rotation group SO(3), left-trivialized.

    Points are rotation matrices ``(*batch, 3, 3)``; a tangent vector ``w``
    ``(*batch, 3)`` at ``R`` is ``R hat(w)`` (body angular velocity).

    Parameters
    ----------
    retraction : {"exp", "cayley"}
        ``exp`` (Rodrigues; inverse defined for rotations by less than pi,
        with pi itself mapped to one of its two logarithms) or ``cayley``
        (``cay(w) = (I - w^/2)^{-1}(I + w^/2)``; inverse singular at a
        rotation by pi, where it raises
        :class:`~manifold_dirac.errors.RetractionDomainError`).

    Notes
    -----
    Human coordinates (:meth:`to_coordinates`) are the rotation vector; the
    quaternion is available as :meth:`as_quaternion` / :meth:`from_quaternion`
    in scipy's scalar-last order ``(x, y, z, w)``.
    """

    dim = 3
    matrix_size: ClassVar[int] = 3
    retractions: ClassVar[tuple[str, ...]] = ("exp", "cayley")
    coordinate_names = ("rx", "ry", "rz")

    def hat(self, xi):
        return _skew(xi)

    def vee(self, X):
        X = np.asarray(X)
        return 0.5 * np.stack(
            [X[..., 2, 1] - X[..., 1, 2], X[..., 0, 2] - X[..., 2, 0], X[..., 1, 0] - X[..., 0, 1]], -1
        )

    def inverse(self, g):
        return np.swapaxes(g, -1, -2)

    def adjoint(self, g):
        return np.asarray(g)

    def ad(self, xi):
        return _skew(xi)

    # ---------------------------------------------------------------- exp/log
    def exp(self, xi):
        xi = np.asarray(xi)
        t2 = np.sum(xi * xi, axis=-1)
        a, b = _coefficients(t2, "ab")
        X = _skew(xi)
        return _I3 + a[..., None, None] * X + b[..., None, None] * (X @ X)

    def log(self, g):
        q = self.as_quaternion(g)  # (x, y, z, w) with w >= 0
        v, w = q[..., :3], q[..., 3]
        s2 = np.sum(v * v, axis=-1)
        s = np.sqrt(s2)
        # xi = (2 atan2(s, w) / s) v: no cancellation, only 0/0 at s = 0,
        # where 2 atan(x)/(x w) = (2/w)(1 - x^2/3), x = s/w, is exact.
        small = s2 < 1e-16 * w * w
        ws = np.where(small, w, 1.0)
        series = 2.0 / ws * (1 - s2 / (3 * ws * ws))
        ss = np.where(small, 1.0, s)
        direct = 2.0 * np.arctan2(ss, w) / ss
        return np.where(small, series, direct)[..., None] * v

    def exp_right_jacobian(self, xi):
        xi = np.asarray(xi)
        t2 = np.sum(xi * xi, axis=-1)
        b, c = _coefficients(t2, "bc")
        X = _skew(xi)
        return _I3 - b[..., None, None] * X + c[..., None, None] * (X @ X)

    def exp_right_jacobian_inv(self, xi):
        xi = np.asarray(xi)
        t2 = np.sum(xi * xi, axis=-1)
        (k,) = _coefficients(t2, "k")
        X = _skew(xi)
        return _I3 + 0.5 * X + k[..., None, None] * (X @ X)

    # ------------------------------------------------ fused fast paths
    # One evaluation of the scalar coefficients serves tau, J_r, J_r^{-1},
    # J_l^{-1} = J_r^{-1}(-xi) and Ad_{tau^{-1}} = tau^T (the Newton loop
    # needs them together at every iterate). The values equal the separate
    # methods' (same formulas); a subclass that replaces one of the fused
    # primitives gets the generic composition instead.
    _FUSED_INV = ("retract", "_tau", "exp", "cayley", "hat", "tau_left_jacobian_inv",
                  "tau_right_jacobian_inv", "exp_right_jacobian_inv", "_cayley_jac_inv")
    _FUSED_FWD = ("retract", "retract_jacobians", "_tau", "exp", "cayley", "hat", "adjoint", "inverse",
                  "tau_right_jacobian", "exp_right_jacobian")

    def retract_with_inverse_jacobians(self, q0, xi):
        if not self._inherits(SO3, self._FUSED_INV):
            return super().retract_with_inverse_jacobians(q0, xi)
        xi = np.asarray(xi)
        t2 = np.sum(xi * xi, axis=-1)
        X = _skew_fast(xi) if xi.dtype == float else _skew(xi)
        XX = X @ X
        if self.retraction == "exp":
            a, b, k = _coefficients(t2, "abk")
            tau = _I3 + a[..., None, None] * X + b[..., None, None] * XX
            kXX = k[..., None, None] * XX
            half = 0.5 * X
            return q0 @ tau, -(_I3 - half + kXX), _I3 + half + kXX
        f = 1.0 / (1.0 + t2 / 4)
        tau = _I3 + f[..., None, None] * (X + 0.5 * XX)
        outer = 0.25 * (xi[..., :, None] * xi[..., None, :])
        half = 0.5 * X
        return q0 @ tau, -(_I3 - half + outer), _I3 + half + outer

    def retract_with_jacobians(self, q, xi):
        if not self._inherits(SO3, self._FUSED_FWD):
            return super().retract_with_jacobians(q, xi)
        xi = np.asarray(xi)
        t2 = np.sum(xi * xi, axis=-1)
        X = _skew_fast(xi) if xi.dtype == float else _skew(xi)
        if self.retraction == "exp":
            XX = X @ X
            a, b, c = _coefficients(t2, "abc")
            tau = _I3 + a[..., None, None] * X + b[..., None, None] * XX
            J_xi = _I3 - b[..., None, None] * X + c[..., None, None] * XX
        else:
            f = 1.0 / (1.0 + t2 / 4)
            tau = _I3 + f[..., None, None] * (X + 0.5 * (X @ X))
            J_xi = (2.0 / (4.0 + t2))[..., None, None] * (2.0 * _I3 - X)
        q1 = q @ tau
        J_q = np.swapaxes(tau, -1, -2)
        if J_q.shape != q1.shape:  # q carries batch axes that xi does not
            J_q, J_xi = np.broadcast_to(J_q, q1.shape), np.broadcast_to(J_xi, q1.shape)
        return q1, J_q, J_xi

    # --------------------------------------------------- Cayley, closed forms
    def cayley(self, xi):
        xi = np.asarray(xi)
        n2 = np.sum(xi * xi, axis=-1)
        X = _skew(xi)
        f = 1.0 / (1.0 + n2 / 4)
        return np.eye(3) + f[..., None, None] * (X + 0.5 * (X @ X))

    def cayley_inv(self, g):
        g = np.asarray(g)
        margin = 1.0 + np.trace(g, axis1=-2, axis2=-1)  # 2 + 2 cos(theta), 0 at pi
        self._check_cayley_domain(margin, 1e-12, g)
        return 2.0 * self.vee(g - np.swapaxes(g, -1, -2)) / margin[..., None]

    def _cayley_jac_inv(self, xi, sign):
        xi = np.asarray(xi)
        X = _skew(xi)
        outer = xi[..., :, None] * xi[..., None, :]
        return np.eye(3) + 0.5 * sign * X + 0.25 * outer

    def tau_right_jacobian(self, xi):
        if self.retraction == "cayley":
            xi = np.asarray(xi)
            n2 = np.sum(xi * xi, axis=-1)
            return (2.0 / (4.0 + n2))[..., None, None] * (2.0 * np.eye(3) - _skew(xi))
        return super().tau_right_jacobian(xi)

    # ------------------------------------------------------------- sampling
    def random_point(self, rng, batch_shape=()):
        q = rng.standard_normal((*batch_shape, 4))
        q /= np.linalg.norm(q, axis=-1, keepdims=True)
        return self.from_quaternion(q)

    def sample_tangent(self, rng, batch_shape, regime):
        if regime == "near_singular":
            d = rng.standard_normal((*batch_shape, 3))
            d /= np.linalg.norm(d, axis=-1, keepdims=True)
            if self.retraction == "exp":
                # rotations by nearly pi: the log's hard case
                r = np.pi - 10.0 ** rng.uniform(-8, -2, batch_shape)
            else:
                # Cayley coordinates of rotations close to pi are large
                r = 10.0 ** rng.uniform(1, 3, batch_shape)
            return r[..., None] * d
        return super().sample_tangent(rng, batch_shape, regime)

    # ---------------------------------------------------------- validation
    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> np.ndarray:
        a = self._as_matrix_array(q, 3, name, "SO3")
        err = np.linalg.norm(np.swapaxes(a, -1, -2) @ a - np.eye(3), axis=(-2, -1))
        det = np.linalg.det(a)
        worst = np.max(err) if err.size else 0.0
        if worst > atol:
            idx = np.unravel_index(np.argmax(err), err.shape) if err.ndim else ()
            raise ValueError(
                f"{name}: not a rotation matrix at batch index {[int(i) for i in idx]}: "
                f"|R^T R - I| = {worst:.3e} > atol = {atol:.1e}"
            )
        if np.any(det < 0):
            idx = np.argwhere(det < 0)[0].tolist() if np.ndim(det) else []
            raise ValueError(f"{name}: not a rotation matrix at batch index {idx}: det = -1 (a reflection)")
        return a

    # ------------------------------------------------------ human coordinates
    def to_coordinates(self, q):
        """The rotation vector ``(*batch, 3)`` (the principal logarithm)."""
        return self.log(q)

    def from_coordinates(self, c):
        """The rotation with rotation vector ``c`` ``(*batch, 3)``."""
        return self.exp(np.asarray(c, dtype=float))

    @staticmethod
    def as_quaternion(g):
        """Unit quaternion ``(x, y, z, w)``, ``w >= 0``, of rotation matrices (Shepperd).

        The largest of ``1 + tr R``, ``1 + 2 R_ii - tr R`` is used as the
        pivot, so the result is accurate for every rotation; the input is
        projected to the nearest unit quaternion.
        """
        R = np.asarray(g)
        r00, r11, r22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
        tr = r00 + r11 + r22
        piv = np.stack([1 + tr, 1 + 2 * r00 - tr, 1 + 2 * r11 - tr, 1 + 2 * r22 - tr], -1)
        k = np.argmax(piv, axis=-1)
        d21, d02, d10 = R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]
        s01, s02, s12 = R[..., 0, 1] + R[..., 1, 0], R[..., 0, 2] + R[..., 2, 0], R[..., 1, 2] + R[..., 2, 1]
        # 4 * (q_k * q_j) for each pivot k, columns (x, y, z, w)
        cand = np.stack(
            [
                np.stack([d21, d02, d10, piv[..., 0]], -1),
                np.stack([piv[..., 1], s01, s02, d21], -1),
                np.stack([s01, piv[..., 2], s12, d02], -1),
                np.stack([s02, s12, piv[..., 3], d10], -1),
            ],
            -2,
        )
        qk = np.take_along_axis(cand, k[..., None, None], axis=-2)[..., 0, :]
        qk = qk / np.linalg.norm(qk, axis=-1, keepdims=True)
        return np.where(qk[..., 3:] < 0, -qk, qk)

    @staticmethod
    def from_quaternion(quat):
        """Rotation matrices from quaternions ``(x, y, z, w)`` (normalized first)."""
        qv = np.asarray(quat, dtype=float)
        if qv.shape[-1:] != (4,):
            raise ValueError(f"quaternion: expected shape (..., 4) in (x, y, z, w) order, got {qv.shape}")
        n = np.linalg.norm(qv, axis=-1, keepdims=True)
        if np.any(~np.isfinite(n)) or np.any(n == 0):
            raise ValueError("quaternion: zero or non-finite quaternion")
        x, y, z, w = np.moveaxis(qv / n, -1, 0)
        return np.stack(
            [
                np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
            ],
            -2,
        )
