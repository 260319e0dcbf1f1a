"""The rotation group SO(3): points as 3x3 matrices, body angular velocities.

Formulas: Rodrigues for ``exp``; the logarithm through a unit quaternion
(Shepperd's method), accurate on the whole domain including rotations by
nearly pi; ``J_r`` and ``J_r^{-1}`` from Sola et al. (arXiv 1812.01537,
eqs. 143-145) with ``cot`` written as ``cot(t/2)`` so that they stay finite
up to pi; Cayley in closed form (Bou-Rabee & Marsden, FoCM 2009). Each
closed form has a Taylor branch below ``theta^2 < 1e-3`` (truncated after
``theta^6``, exact to round-off there); both branches are evaluated at safe
arguments and then selected, so neither values nor derivatives are NaN.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._types import ArrayLike
from .base import concrete_array, register_retraction
from .lie_group import Cayley, Exp, MatrixLieGroup

__all__ = ["SO3", "SO3Cayley", "SO3Exp", "host_coefficients", "host_rodrigues", "rodrigues", "rotation_log"]

_SMALL = 1e-3  # threshold on theta^2 for the Taylor branches (next term < 1e-17)
_EYE = np.eye(3)


def mm(A: jax.Array, B: jax.Array) -> jax.Array:
    """``A @ B`` for small matrices, as broadcast-and-sum (faster than ``@`` for 3x3 on CPU)."""
    return jnp.sum(A[..., :, :, None] * B[..., None, :, :], axis=-2)


_HAT = np.zeros((3, 3, 3))
_HAT[2, 1, 0] = _HAT[0, 2, 1] = _HAT[1, 0, 2] = 1.0
_HAT[1, 2, 0] = _HAT[2, 0, 1] = _HAT[0, 1, 2] = -1.0


def skew(w: jax.Array) -> jax.Array:
    """``hat(w)``: ``(*batch, 3) -> (*batch, 3, 3)`` with ``hat(w) x = w x x``.

    One product with the constant tensor ``_HAT`` (``hat(w)_ij = sum_k _HAT_ijk w_k``) and a sum,
    instead of nine entries sliced, negated and stacked: under Newton's ``vmap(jvp(...))`` the stacked
    form was about a sixth of a rigid-body loop program's operations, and a smaller program compiles
    sooner (``docs/performance.md``). The values are the same; a NaN or infinite component now makes
    every entry NaN, where it made only its own entries so before.
    """
    w = jnp.asarray(w)
    hat = _HAT.astype(w.dtype) if jnp.issubdtype(w.dtype, jnp.inexact) else _HAT  # the input's float type
    return jnp.sum(hat * w[..., None, None, :], axis=-1)


def computed_once(*xs: jax.Array) -> tuple[jax.Array, ...]:
    """The arrays ``xs`` (one shape) themselves, each computed once in the compiled program.

    XLA:CPU counts ``sin`` and ``cos`` as cheap and recomputes them in every
    fused kernel that reads them (each a call of the math library: ~20 per
    knife-edge step before this, half its time); a reduction counts as
    expensive and is computed once. So the values go through one: the sum
    of ``xs`` and ``0 xs`` (exact: the values themselves, NaN included).
    """
    t = jnp.stack(xs, -1)
    t = jnp.sum(jnp.stack([t, 0.0 * t]), axis=0)
    return tuple(t[..., i] for i in range(len(xs)))


_TRIG = {"s": jnp.sin, "c": jnp.cos, "sh": lambda t: jnp.sin(0.5 * t), "ch": lambda t: jnp.cos(0.5 * t)}
_TRIG_DERIVATIVE = {"s": ("c", 1.0), "c": ("s", -1.0), "sh": ("ch", 0.5), "ch": ("sh", -0.5)}


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _trig(t: jax.Array, names: tuple[str, ...]) -> tuple[jax.Array, ...]:
    """``sin t``, ``cos t``, ``sin(t/2)``, ``cos(t/2)`` (``names`` among ``s, c, sh, ch``, closed under
    differentiation: ``s`` with ``c``, ``sh`` with ``ch``), each computed once (:func:`computed_once`), their
    derivatives from the same values: a Newton iteration's Jacobian adds no ``sin``/``cos`` of its own."""
    return computed_once(*(_TRIG[n](t) for n in names))


@_trig.defjvp
def _trig_jvp(names, primals, tangents):
    (t,), (dt,) = primals, tangents
    vals = dict(zip(names, _trig(t, names)))
    return tuple(vals.values()), tuple(f * vals[d] * dt for d, f in (_TRIG_DERIVATIVE[n] for n in names))


def _direct(t2: jax.Array, which: str) -> tuple:
    t = jnp.sqrt(t2)
    # the sines and cosines the wanted coefficients read (with their derivatives' partners), once
    full, half = any(w in "ac" for w in which), any(w in "bk" for w in which)
    names = ("s", "c") * full + ("sh", "ch") * half
    return _closed_forms(t, t2, dict(zip(names, _trig(t, names))), which)


def _closed_forms(t, t2, g: dict, which: str) -> tuple:
    """The closed forms of :func:`coefficients` from ``t``, ``t^2`` and the sines and cosines ``g`` (jnp or NumPy)."""
    table = {
        "a": lambda: g["s"] / t,
        "b": lambda: 2.0 * g["sh"] * g["sh"] / t2,
        "c": lambda: (t - g["s"]) / (t2 * t),
        "k": lambda: (1.0 - 0.5 * t * g["ch"] / g["sh"]) / t2,  # (1 - (t/2) cot(t/2)) / t^2
    }
    return tuple(table[w]() for w in which)


def _series(t2: jax.Array | np.ndarray, which: str) -> tuple:
    table = {
        "a": lambda: 1 - t2 / 6 * (1 - t2 / 20 * (1 - t2 / 42)),
        "b": lambda: 0.5 - t2 / 24 * (1 - t2 / 30 * (1 - t2 / 56)),
        "c": lambda: 1 / 6 - t2 / 120 * (1 - t2 / 42 * (1 - t2 / 72)),
        "k": lambda: 1 / 12 + t2 / 720 + t2 * t2 / 30240 + t2**3 / 1209600,
    }
    return tuple(table[w]() for w in which)


def coefficients(t2: jax.Array, which: str = "abc") -> tuple:
    """The scalar coefficients of ``X`` and ``X^2`` in the closed forms, from ``t^2 = |xi|^2``.

    ``a = sin t / t``, ``b = (1 - cos t)/t^2``, ``c = (t - sin t)/t^3``,
    ``k = (1 - (t/2) cot(t/2))/t^2``; ``which`` names those wanted, in order.
    Below ``t^2 < 1e-3`` the Taylor series; the closed form is evaluated at
    the safe ``t^2 = 1`` there (the double-``where``), so no branch is NaN.
    """
    small = t2 < _SMALL
    safe = jnp.where(small, 1.0, t2)
    return tuple(jnp.where(small, s, d) for s, d in zip(_series(t2, which), _direct(safe, which)))


def _c(x: jax.Array) -> jax.Array:
    return x[..., None, None]


class SO3(MatrixLieGroup):
    """The rotation group SO(3), left-trivialized.

    Points are rotation matrices ``(*batch, 3, 3)`` (body to space); a tangent
    vector ``w`` ``(*batch, 3)`` at ``R`` stands for ``R hat(w)`` (body angular
    velocity).

    Parameters
    ----------
    retraction : {"exp", "cayley"} or GroupRetraction
        ``exp`` (Rodrigues; its inverse is defined for rotations by less than
        pi) or ``cayley`` (``cay(w) = (I - w^/2)^{-1}(I + w^/2)``; its inverse
        is singular at rotations by pi).

    Attributes
    ----------
    matrix_size : int
        ``3``: points are ``3 x 3`` rotation matrices.

    Notes
    -----
    Argument checks (the rules of every :class:`Manifold`): the primitives
    refuse arguments of the wrong shape in every call (a tangent vector is
    ``(..., 3)``, a point ``(..., 3, 3)``); in eager calls ``log``,
    ``retract``, ``inverse_retract`` and the fused Jacobian methods also
    refuse a concrete point that is not a rotation (tolerance ``1e-6``).

    Human coordinates (:meth:`to_coordinates`) are the rotation vector;
    quaternions (scipy's scalar-last order ``(x, y, z, w)``) through
    :meth:`as_quaternion` / :meth:`from_quaternion`, Euler angles in scipy's
    conventions (``"xyz"`` extrinsic, ``"XYZ"`` intrinsic, the twelve
    sequences) through :meth:`as_euler` / :meth:`from_euler`; each agrees
    with :class:`scipy.spatial.transform.Rotation` to round-off.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> Q = md.SO3("cayley")
    >>> R = Q.exp(np.array([0.0, 0.0, np.pi / 2]))            # a quarter turn about z
    >>> np.round(np.asarray(R) @ np.array([1.0, 0.0, 0.0]), 12)
    array([0., 1., 0.])
    >>> np.round(np.asarray(Q.to_coordinates(R)), 12)         # back to the rotation vector
    array([0.        , 0.        , 1.57079633])
    """

    dim = 3
    matrix_size: ClassVar[int] = 3
    rotation_axes = (0, 3)
    coordinate_names = ("rx", "ry", "rz")

    def hat(self, xi):
        return skew(xi)

    def vee(self, X):
        return 0.5 * jnp.stack(
            [X[..., 2, 1] - X[..., 1, 2], X[..., 0, 2] - X[..., 2, 0], X[..., 1, 0] - X[..., 0, 1]], -1
        )

    def inverse(self, g):
        return jnp.swapaxes(g, -1, -2)

    def compose(self, a, b):
        return mm(a, b)

    def adjoint(self, g):
        return g

    def ad(self, xi):
        return skew(xi)

    def ambient_tangent(self, q, eta):
        return mm(q, skew(eta))

    # ---------------------------------------------------------------- exp/log
    def exp(self, xi):
        """``exp(hat(xi))`` ``(*batch, 3, 3)`` of rotation vectors ``xi`` ``(*batch, 3)`` (Rodrigues).

        Concrete input (a NumPy array, or a JAX array outside any trace) is
        evaluated in NumPy with the same formulas (:func:`host_rodrigues`) and
        put on the device: eager ``jax.numpy`` would compile some thirty
        one-operation XLA programs at the first call of a process (about 1 s
        on two cores) for what is usually an initial condition. Traced input
        takes the ``jax.numpy`` path.
        """
        a = concrete_array(xi)
        return rodrigues(xi) if a is None else jax.device_put(host_rodrigues(a))

    def log(self, g):
        """The rotation vector ``(*batch, 3)`` of rotations ``g`` ``(*batch, 3, 3)``, angle in ``[0, pi]``."""
        return rotation_log(g)

    def exp_right_jacobian(self, xi):
        xi = jnp.asarray(xi)
        b, c = coefficients(jnp.sum(xi * xi, axis=-1), "bc")
        X = skew(xi)
        return _EYE - _c(b) * X + _c(c) * mm(X, X)

    def exp_right_jacobian_inv(self, xi):
        xi = jnp.asarray(xi)
        (k,) = coefficients(jnp.sum(xi * xi, axis=-1), "k")
        X = skew(xi)
        return _EYE + 0.5 * X + _c(k) * mm(X, X)

    # ------------------------------------------------------------- sampling
    def random_point(self, rng, batch_shape=()):
        q = rng.standard_normal((*batch_shape, 4))
        return self.from_quaternion(q / np.linalg.norm(q, axis=-1, keepdims=True))

    # ---------------------------------------------------------- validation
    _noun = "a rotation matrix"
    _reflection = "det = -1 (a reflection)"

    def _point_defects(self, a):
        return (("|R^T R - I| =", np.linalg.norm(np.swapaxes(a, -1, -2) @ a - _EYE, axis=(-2, -1))),)

    def _rotation_block(self, a):
        return a

    def _defects(self, a):
        return (
            ("|g^T g - I|", np.linalg.norm(np.swapaxes(a, -1, -2) @ a - _EYE, axis=(-2, -1))),
            ("|det g - 1| (det -1: a reflection)", np.abs(np.linalg.det(a) - 1.0)),
        )

    # ------------------------------------------------------ human coordinates
    def to_coordinates(self, q):
        """The rotation vector ``(*batch, 3)`` (the principal logarithm).

        Concrete input (a NumPy array, or a JAX array outside any trace) is
        converted in NumPy, with the same formulas as the traced path: eager
        ``jax.numpy`` on concrete arrays would compile a small XLA program per
        operation and shape (dozens per call, on every fresh process), which
        plotting a trajectory should not cost. Traced input (under ``jit``,
        ``grad``, ``vmap``) takes the ``jax.numpy`` path.
        """
        a = concrete_array(q)
        return self.log(jnp.asarray(q)) if a is None else jax.device_put(rotation_log(a, xp=np))

    def from_coordinates(self, c):
        """The rotation with rotation vector ``c`` ``(*batch, 3)`` (concrete input: on the host, as :func:`rodrigues`)."""
        a = concrete_array(c)
        c = a if a is not None else jnp.asarray(c, dtype=float)  # (a list of tracers converts here, not in NumPy)
        if c.shape[-1:] != (3,):
            raise ValueError(f"SO3.from_coordinates: a rotation vector has shape (..., 3), got {tuple(c.shape)}")
        return self.exp(c)

    @staticmethod
    def as_quaternion(g):
        """Unit quaternion ``(x, y, z, w)``, ``w >= 0``, of rotation matrices (Shepperd's method).

        The largest of ``1 + tr R`` and ``1 + 2 R_ii - tr R`` is the pivot, so
        the result is accurate for every rotation.
        """
        return _quaternion(jnp.asarray(g), jnp)

    @staticmethod
    def from_euler(seq: str, angles: ArrayLike, degrees: bool = False) -> jax.Array:
        """Rotation matrices ``(*batch, 3, 3)`` from Euler angles ``(*batch, 3)``, as scipy's ``Rotation.from_euler``.

        Parameters
        ----------
        seq : str
            Three axes from ``"xyz"``, no two consecutive equal: lower case
            for rotations about the fixed (extrinsic) axes, upper case for
            the rotating (intrinsic) ones, never mixed. ``"xyz"`` with
            angles ``(a, b, c)`` is ``R_z(c) R_y(b) R_x(a)``; ``"XYZ"`` is
            ``R_x(a) R_y(b) R_z(c)``; ``"ZYX"`` is yaw-pitch-roll.
        angles : array-like, shape=[..., 3]
            The three angles, in the order of ``seq``.
        degrees : bool
            Angles in degrees instead of radians.

        Raises
        ------
        ValueError
            For a sequence scipy refuses, or angles not of shape ``(..., 3)``.
        """
        axes, extrinsic = _parse_euler(seq, "SO3.from_euler")
        a = jnp.asarray(angles, dtype=float)
        if a.shape[-1:] != (3,):
            raise ValueError(f"SO3.from_euler: angles must have shape (..., 3) in the order of {seq!r}, got {a.shape}")
        if degrees:
            a = jnp.deg2rad(a)
        mats = [_axis_rotation(i, a[..., n]) for n, i in enumerate(axes)]
        if extrinsic:  # fixed axes: the later rotations act from the left
            return mm(mats[2], mm(mats[1], mats[0]))
        return mm(mats[0], mm(mats[1], mats[2]))

    @staticmethod
    def as_euler(g: ArrayLike, seq: str, degrees: bool = False) -> jax.Array:
        """Euler angles ``(*batch, 3)`` of rotation matrices, as scipy's ``Rotation.as_euler``.

        The algorithm of scipy (Bernardes & Viollet, PLoS ONE 17, 2022: from
        the quaternion, with scipy's choice at gimbal lock: the middle angle
        within ``1e-7`` of ``0`` or ``pi`` sets the third angle (extrinsic)
        or the first (intrinsic) to 0). Angles in ``[-pi, pi]``, the middle
        one in ``[0, pi]`` for proper Euler sequences (``"zxz"``) and in
        ``[-pi/2, pi/2]`` for Tait-Bryan ones (``"xyz"``). Written in
        ``jax.numpy`` (jit- and vmap-able; no warning at gimbal lock).

        Parameters
        ----------
        g : array-like, shape=[..., 3, 3]
        seq : str
            As in :meth:`from_euler`.
        degrees : bool
            Return degrees instead of radians.
        """
        axes, extrinsic = _parse_euler(seq, "SO3.as_euler")
        q = SO3.as_quaternion(g)
        if not extrinsic:
            axes = axes[::-1]
        i, j, k = axes
        symmetric = i == k
        if symmetric:
            k = 3 - i - j
        sign = (i - j) * (j - k) * (k - i) // 2
        if symmetric:
            a, b, c, d = q[..., 3], q[..., i], q[..., j], q[..., k] * sign
        else:
            a, b = q[..., 3] - q[..., j], q[..., i] + q[..., k] * sign
            c, d = q[..., j] + q[..., 3], q[..., k] * sign - q[..., i]
        mid = 2.0 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
        half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
        lock0 = jnp.abs(mid) <= 1e-7
        lockpi = jnp.abs(mid - np.pi) <= 1e-7
        locked = jnp.where(lock0, 2.0 * half_sum, 2.0 * half_diff * (-1.0 if extrinsic else 1.0))
        first = jnp.where(lock0 | lockpi, 0.0 if not extrinsic else locked, half_sum - half_diff)
        third = jnp.where(lock0 | lockpi, locked if not extrinsic else 0.0, half_sum + half_diff)
        if not symmetric:
            third = third * sign
            mid = mid - 0.5 * np.pi
        angles = [first, mid, third]
        if not extrinsic:
            angles = angles[::-1]
        out = jnp.stack(angles, -1)
        out = jnp.where(out < -np.pi, out + 2 * np.pi, jnp.where(out > np.pi, out - 2 * np.pi, out))
        return jnp.rad2deg(out) if degrees else out

    @staticmethod
    def from_quaternion(quat):
        """Rotation matrices from quaternions ``(x, y, z, w)`` (normalized first)."""
        qv = np.asarray(quat, dtype=float)
        if qv.shape[-1:] != (4,):
            raise ValueError(f"SO3.from_quaternion: expected shape (..., 4) in (x, y, z, w) order, got {qv.shape}")
        n = np.linalg.norm(qv, axis=-1, keepdims=True)
        if np.any(~np.isfinite(n)) or np.any(n == 0):
            raise ValueError("SO3.from_quaternion: zero or non-finite quaternion")
        x, y, z, w = np.moveaxis(qv / n, -1, 0)
        return jnp.asarray(
            np.stack(
                [
                    np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                    np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                    np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
                ],
                -2,
            )
        )


def rodrigues(xi: jax.Array) -> jax.Array:
    """``exp`` of SO(3), ``(*batch, 3) -> (*batch, 3, 3)`` (Rodrigues; unchecked: :meth:`SO3.exp` checks)."""
    xi = jnp.asarray(xi)
    a, b = coefficients(jnp.sum(xi * xi, axis=-1), "ab")
    X = skew(xi)
    return jnp.asarray(_EYE) + _c(a) * X + _c(b) * mm(X, X)


def host_coefficients(t2: np.ndarray, which: str = "abc") -> tuple[np.ndarray, ...]:
    """:func:`coefficients` in NumPy: the same Taylor and closed-form branches, on the host (concrete input)."""
    t2 = np.asarray(t2, dtype=float)
    with np.errstate(all="ignore"):  # as the compiled path: an overflow or a NaN propagates, silently here
        small = t2 < _SMALL
        safe = np.where(small, 1.0, t2)
        t = np.sqrt(safe)
        g = {"s": np.sin(t), "c": np.cos(t), "sh": np.sin(0.5 * t), "ch": np.cos(0.5 * t)}
        return tuple(np.where(small, x, y) for x, y in zip(_series(t2, which), _closed_forms(t, safe, g, which)))


def host_skew(w: np.ndarray) -> np.ndarray:
    """:func:`skew` in NumPy."""
    return np.sum(_HAT * np.asarray(w, dtype=float)[..., None, None, :], axis=-1)


def host_mm(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """:func:`mm` in NumPy (the same broadcast-and-sum)."""
    return np.sum(A[..., :, :, None] * B[..., None, :, :], axis=-2)


def host_rodrigues(xi: np.ndarray) -> np.ndarray:
    """:func:`rodrigues` in NumPy, ``(*batch, 3) -> (*batch, 3, 3)``: the same branches and operations, on the host.

    Values agree with the compiled path to round-off (``tests/manifolds/test_host_paths.py``).
    """
    xi = np.asarray(xi, dtype=float)
    with np.errstate(all="ignore"):
        a, b = host_coefficients(np.sum(xi * xi, axis=-1), "ab")
        X = host_skew(xi)
        return _EYE + a[..., None, None] * X + b[..., None, None] * host_mm(X, X)


def _quaternion(R, xp):
    """:meth:`SO3.as_quaternion` of ``R`` ``(*batch, 3, 3)`` with the array module ``xp`` (``jax.numpy``
    when traced, ``numpy`` for concrete host arrays)."""
    r00, r11, r22 = R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]
    tr = r00 + r11 + r22
    piv = xp.stack([1 + tr, 1 + 2 * r00 - tr, 1 + 2 * r11 - tr, 1 + 2 * r22 - tr], -1)
    k = xp.argmax(piv, axis=-1)
    d21, d02, d10 = R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]
    s01, s02, s12 = R[..., 0, 1] + R[..., 1, 0], R[..., 0, 2] + R[..., 2, 0], R[..., 1, 2] + R[..., 2, 1]
    cand = xp.stack(
        [
            xp.stack([d21, d02, d10, piv[..., 0]], -1),
            xp.stack([piv[..., 1], s01, s02, d21], -1),
            xp.stack([s01, piv[..., 2], s12, d02], -1),
            xp.stack([s02, s12, piv[..., 3], d10], -1),
        ],
        -2,
    )
    # select the pivot's row with where (a gather is slow on XLA CPU inside loops)
    qk = cand[..., 3, :]
    for i in (2, 1, 0):
        qk = xp.where((k == i)[..., None], cand[..., i, :], qk)
    qk = qk / xp.linalg.norm(qk, axis=-1, keepdims=True)
    return xp.where(qk[..., 3:] < 0, -qk, qk)


def rotation_log(g: jax.Array, xp=jnp) -> jax.Array:
    """The principal rotation vector ``(*batch, 3)`` of rotations ``(*batch, 3, 3)`` (unchecked: :meth:`SO3.log` checks).

    ``xp`` is the array module: ``jax.numpy`` (default; traceable), or ``numpy``
    for concrete host arrays (no XLA program compiled).
    """
    q = _quaternion(xp.asarray(g), xp)  # (x, y, z, w) with w >= 0
    v, w = q[..., :3], q[..., 3]
    s2 = xp.sum(v * v, axis=-1)
    # xi = (2 atan2(s, w) / s) v; at s -> 0, 2 atan(x)/(x w) = (2/w)(1 - x^2/3), x = s/w
    small = s2 < 1e-16 * w * w
    ws = xp.where(small, w, 1.0)
    series = 2.0 / ws * (1 - s2 / (3 * ws * ws))
    ss = xp.sqrt(xp.where(small, 1.0, s2))
    direct = 2.0 * xp.arctan2(ss, w) / ss
    return xp.where(small, series, direct)[..., None] * v


def _parse_euler(seq: str, who: str) -> tuple[list[int], bool]:
    """Axes (0, 1, 2) and whether extrinsic, of an Euler sequence in scipy's conventions."""
    ok = isinstance(seq, str) and len(seq) == 3 and (seq.islower() or seq.isupper())
    ok = ok and set(seq.lower()) <= set("xyz")
    axes = ["xyz".index(ch) for ch in seq.lower()] if ok else []
    if not ok or axes[0] == axes[1] or axes[1] == axes[2]:
        raise ValueError(
            f"{who}: {seq!r} is not an Euler sequence: three axes from 'xyz', no two consecutive equal, "
            "all lower case (extrinsic: 'xyz', 'zxz', ...) or all upper case (intrinsic: 'XYZ', 'ZYX', ...)"
        )
    return axes, seq.islower()


def _axis_rotation(i: int, a: jax.Array) -> jax.Array:
    """The rotation by ``a`` ``(*batch,)`` about coordinate axis ``i``, ``(*batch, 3, 3)``."""
    E = skew(jnp.asarray(_EYE[i]))
    c, s = jnp.cos(a)[..., None, None], jnp.sin(a)[..., None, None]
    return jnp.asarray(_EYE) + s * E + (1.0 - c) * mm(E, E)


@register_retraction(SO3)
class SO3Exp(Exp):
    """``exp`` on SO(3) with fused closed forms: one set of coefficients serves
    ``tau``, ``J_r``, ``J_r^{-1}`` and ``J_l^{-1}(xi) = J_r^{-1}(-xi)``."""

    def tau_with_inverse_jacobians(self, G, xi):
        a, b, k = coefficients(jnp.sum(xi * xi, axis=-1), "abk")
        X = skew(xi)
        XX = mm(X, X)
        kXX = _c(k) * XX
        half = 0.5 * X
        return _EYE + _c(a) * X + _c(b) * XX, -(_EYE - half + kXX), _EYE + half + kXX

    def tau_with_jacobians(self, G, xi):
        a, b, c = coefficients(jnp.sum(xi * xi, axis=-1), "abc")
        X = skew(xi)
        XX = mm(X, X)
        tau = _EYE + _c(a) * X + _c(b) * XX
        return tau, jnp.swapaxes(tau, -1, -2), _EYE - _c(b) * X + _c(c) * XX


@register_retraction(SO3)
class SO3Cayley(Cayley):
    """The Cayley map on SO(3) in closed form (Bou-Rabee & Marsden 2009)::

        cay(w) = I + (X + X^2/2) / (1 + |w|^2/4),   cay^{-1}(R) = 2 vee(R - R^T) / (1 + tr R),
        J_r^{-1}(w) = I + X/2 + w w^T/4,            J_l^{-1}(w) = I - X/2 + w w^T/4,
        J_r(w) = (2 I - X) 2/(4 + |w|^2).
    """

    def tau(self, G, xi):
        f = 1.0 / (1.0 + 0.25 * jnp.sum(xi * xi, axis=-1))
        X = skew(xi)
        return _EYE + _c(f) * (X + 0.5 * mm(X, X))

    def tau_inv(self, G, g):
        margin = 1.0 + jnp.trace(g, axis1=-2, axis2=-1)  # 2 + 2 cos(theta), 0 at pi
        return 2.0 * G.vee(g - jnp.swapaxes(g, -1, -2)) / margin[..., None]

    def right_jacobian(self, G, xi):
        return _c(2.0 / (4.0 + jnp.sum(xi * xi, axis=-1))) * (2.0 * _EYE - skew(xi))

    def _jac_inv(self, G, xi, sign):
        return _EYE + 0.5 * sign * skew(xi) + 0.25 * (xi[..., :, None] * xi[..., None, :])

    def tau_with_inverse_jacobians(self, G, xi):
        X = skew(xi)
        outer = 0.25 * (xi[..., :, None] * xi[..., None, :])
        f = 1.0 / (1.0 + 0.25 * jnp.sum(xi * xi, axis=-1))
        half = 0.5 * X
        return _EYE + _c(f) * (X + 0.5 * mm(X, X)), -(_EYE - half + outer), _EYE + half + outer

    def tau_with_jacobians(self, G, xi):
        t2 = jnp.sum(xi * xi, axis=-1)
        X = skew(xi)
        tau = _EYE + _c(1.0 / (1.0 + 0.25 * t2)) * (X + 0.5 * mm(X, X))
        return tau, jnp.swapaxes(tau, -1, -2), _c(2.0 / (4.0 + t2)) * (2.0 * _EYE - X)
