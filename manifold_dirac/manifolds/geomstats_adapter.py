"""Embedded manifolds from geomstats, with the Riemannian exp/log as the retraction.

Needs the optional extra (``pip install manifold_dirac[geomstats]``); geomstats
is imported through :func:`manifold_dirac._compat.import_geomstats`, which
works around geomstats 2.8.0's import failure with numpy >= 2.4.

A :class:`GeomstatsManifold` wraps an embedded geomstats manifold (points are
ambient vectors ``(*batch, ambient_dim)``) together with

* a smooth local orthonormal **frame** ``E(q)`` ``(*batch, ambient_dim, dim)``
  whose columns span ``T_q Q``; frame coordinates ``xi`` stand for the
  ambient tangent vector ``E(q) xi``;
* the **retraction** ``R_q(xi) = exp_q(E(q) xi)`` and its inverse
  ``R_{q0}^{-1}(q1) = E(q0)^T log_{q0}(q1)`` -- the metric's exp and log,
  ``space.metric.exp(E(q) xi, q)`` and ``E(q0)^T space.metric.log(q1, q0)``;
* **exact Jacobians** ``J0, J1, J_q, J_xi`` by the complex step through
  complex-safe closed forms of exp, log and the frame, e.g.
  ``J1[:, j] = Im xi(q0, q1 + i h E(q1) e_j) / h`` with ``h = 1e-30``: no
  subtraction, so exact to round-off (Squire & Trapp, SIAM Rev. 1998).

The closed forms are also what the values are computed with by default
(``values="closed_form"``): geomstats' ``HypersphereMetric.log`` goes
through ``arccos`` of the inner product and loses digits near ``0`` and near
the antipode (measured: relative error 2e-7 at ``|xi| = 1e-9``, 4e-10 at
``1e-6``, 4e-4 at ``pi - 1e-6``), which would break the round trip
``R_q^{-1}(R_q(xi)) = xi`` the integrators rely on. With
``values="geomstats"`` the values come from geomstats' metric itself; the
tests check the two agree where geomstats is accurate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from .._compat import import_geomstats
from ..errors import RetractionDomainError
from .base import Manifold, check_retraction_name

__all__ = ["GeomstatsManifold", "Sphere2", "sphere_exp", "sphere_frame", "sphere_log"]

_H = 1e-30  # complex step
_INV_SQRT2 = 1.0 / np.sqrt(2.0)
_CHART_BAND = 1e-3  # random points keep this distance (in |z|) from the chart switch


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Bilinear (not Hermitian) dot product over the last axis: complex-step safe."""
    return np.sum(a * b, axis=-1)


def _index_str(mask: np.ndarray) -> str:
    idx = np.argwhere(np.atleast_1d(mask))[0].tolist() if np.ndim(mask) else []
    return str(idx)


# --------------------------------------------------- sphere closed forms
def _cos_sinc_of_sq(t2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``cos t`` and ``sin t / t`` as analytic functions of ``t^2`` (complex-safe).

    Taylor series below ``|t^2| < 1e-6`` (the next term is below 1e-27), so
    that no square root of a (complex) number near zero is taken.
    """
    small = np.real(t2) < 1e-6
    ts = np.where(small, 1.0, t2)
    t = np.sqrt(ts)
    cos = np.where(small, 1 - t2 / 2 * (1 - t2 / 12 * (1 - t2 / 30 * (1 - t2 / 56))), np.cos(t))
    sinc = np.where(small, 1 - t2 / 6 * (1 - t2 / 20 * (1 - t2 / 42 * (1 - t2 / 72))), np.sin(t) / t)
    return cos, sinc


def sphere_exp(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Exponential map of the unit sphere, ``cos|v| q + (sin|v|/|v|) v``.

    Parameters
    ----------
    q : array-like, shape=[..., n+1]
        Base points (unit vectors).
    v : array-like, shape=[..., n+1]
        Ambient tangent vectors at ``q``; may be complex (complex step).

    Returns
    -------
    ndarray, shape=[..., n+1]
    """
    q = np.asarray(q)
    v = np.asarray(v)
    cos, sinc = _cos_sinc_of_sq(_dot(v, v))
    return cos[..., None] * q + sinc[..., None] * v


def _arctan_over_z_of_sq(z2: np.ndarray) -> np.ndarray:
    """``arctan(z)/z`` as an analytic function of ``z^2`` (series below 1e-6)."""
    small = np.abs(z2) < 1e-6
    zs = np.where(small, 1.0, z2)
    z = np.sqrt(zs)
    return np.where(small, 1 - z2 / 3 * (1 - 3 * z2 / 5 * (1 - 5 * z2 / 7)), np.arctan(z) / z)


def sphere_log(q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    """Logarithm of the unit sphere, ``log_{q0}(q1) = (theta / s) w``.

    With ``c = q0 . q1``, ``w = q1 - c q0``, ``s = |w|`` and
    ``theta = atan2(s, c)``, written with ``arctan`` only (``arctan(s/c)``
    for ``c > 0``, ``pi/2 - arctan(c/s)`` otherwise) so that it is analytic
    and accepts complex input, and as accurate as ``atan2``. Not defined at
    the antipode (``s = 0``, ``c < 0``); the caller checks the domain.

    Parameters
    ----------
    q0, q1 : array-like, shape=[..., n+1]
        Unit vectors; may be complex (complex step).

    Returns
    -------
    ndarray, shape=[..., n+1]
        The tangent vector at ``q0``.
    """
    q0 = np.asarray(q0)
    q1 = np.asarray(q1)
    c = _dot(q0, q1)
    w = q1 - c[..., None] * q0
    s2 = _dot(w, w)
    front = np.real(c) > 0
    # c > 0: theta/s = (arctan(z)/z) / c with z = s/c, an analytic function of z^2
    cs = np.where(front, c, 1.0)
    ratio_front = _arctan_over_z_of_sq(s2 / (cs * cs)) / cs
    # c <= 0: theta = pi/2 - arctan(c/s), s >= sin(theta) > 0 away from the antipode
    s2b = np.where(front, 1.0, s2)
    sb = np.sqrt(s2b)
    ratio_back = (np.pi / 2 - np.arctan(np.where(front, 0.0, c) / sb)) / sb
    return np.where(front, ratio_front, ratio_back)[..., None] * w


def sphere_frame(q: np.ndarray) -> np.ndarray:
    """A smooth local orthonormal frame of ``S^2``, ``(*batch, 3, 2)``.

    Two charts, switched on ``|z|`` (the third coordinate of ``q``):

    * ``|z| <= 1/sqrt(2)`` (the band around the equator): ``e1 = z^ x q /
      |z^ x q|`` (east), ``e2 = q x e1`` (north); singular only at the poles
      ``+-z^``, which are at least 45 degrees away;
    * ``|z| > 1/sqrt(2)`` (the polar caps): the same with the axis ``y^``
      instead of ``z^``, singular only at ``+-y^``, again at least 45 degrees
      away.

    Each chart is an analytic function of ``q`` (complex-step safe; the
    switch looks at the real part only). ``(e1, e2, q)`` is right-handed.
    """
    q = np.asarray(q)
    qn = q / np.sqrt(_dot(q, q))[..., None]
    polar = np.abs(np.real(qn[..., 2])) > _INV_SQRT2
    x, y, z = qn[..., 0], qn[..., 1], qn[..., 2]
    zero = np.zeros_like(x)
    east_z = np.stack([-y, x, zero], -1)  # z^ x q
    east_y = np.stack([z, zero, -x], -1)  # y^ x q
    a = np.where(polar[..., None], east_y, east_z)
    e1 = a / np.sqrt(_dot(a, a))[..., None]
    e2 = np.cross(qn, e1)
    return np.stack([e1, e2], -1)


# ------------------------------------------------------------- the adapter
class GeomstatsManifold(Manifold):
    """An embedded geomstats manifold with its metric exp/log as the retraction.

    Parameters
    ----------
    space : geomstats manifold
        An embedded manifold with a Riemannian ``metric`` (e.g.
        ``Hypersphere(2)``), whose points are ambient vectors.
    frame : callable
        ``frame(q) -> E`` ``(*batch, ambient_dim, dim)``, an orthonormal basis
        of ``T_q``, smooth in ``q`` locally and analytic (complex-step safe).
    exp, log : callable
        Complex-safe closed forms of the metric's exp
        ``exp(q, v) -> q'`` and log ``log(q0, q1) -> v`` (ambient vectors).
        They give the exact Jacobians, and the values when
        ``values="closed_form"``.
    values : {"closed_form", "geomstats"}
        What computes ``retract``/``inverse_retract``: the closed forms
        (default; accurate to round-off) or ``space.metric`` itself.
    name : str, optional
        For ``repr``.

    Notes
    -----
    Subclasses supply :meth:`random_point`, :meth:`sample_tangent`,
    :meth:`check_point`, human coordinates and :meth:`_check_log_domain`
    where the generic versions (ambient coordinates, projection of a
    Gaussian) do not fit.
    """

    retractions: ClassVar[tuple[str, ...]] = ("metric",)

    def __init__(
        self,
        space: Any,
        frame: Callable[[np.ndarray], np.ndarray],
        exp: Callable[[np.ndarray, np.ndarray], np.ndarray],
        log: Callable[[np.ndarray, np.ndarray], np.ndarray],
        *,
        values: str = "closed_form",
        name: str | None = None,
    ) -> None:
        import_geomstats()
        self.space = space
        self.dim = int(space.dim)
        shape = tuple(int(s) for s in getattr(space, "shape", ()))
        if len(shape) != 1:
            raise ValueError(
                f"GeomstatsManifold: only manifolds whose points are vectors are supported, got shape {shape}"
            )
        self.ambient_dim = shape[0]
        self.point_shape = shape
        self.retraction = "metric"
        self.values = check_retraction_name(values, ("closed_form", "geomstats"), "GeomstatsManifold values")
        self._frame = frame
        self._exp = exp
        self._log = log
        self._name = name or type(space).__name__
        self.coordinate_names = tuple(f"u{i}" for i in range(self.ambient_dim))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name}, values={self.values!r})"

    def _key(self) -> tuple:
        return (type(self).__name__, self._name, self.values)

    @classmethod
    def hypersphere(cls, n: int = 2, values: str = "closed_form") -> Sphere2:
        """The unit sphere ``S^n`` (only ``n = 2`` has a frame here): :class:`Sphere2`."""
        if n != 2:
            raise ValueError(
                f"GeomstatsManifold.hypersphere: only n = 2 is implemented (a frame of S^2), got {n}"
            )
        return Sphere2(values=values)

    # ----------------------------------------------------------- helpers
    def frame(self, q: np.ndarray) -> np.ndarray:
        """The frame ``E(q)``, ``(*batch, ambient_dim, dim)``."""
        return self._frame(q)

    def _to_ambient(self, q: np.ndarray, xi: np.ndarray) -> np.ndarray:
        return np.einsum("...ai,...i->...a", self._frame(q), xi)

    def _xi(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        """Frame coordinates of the closed-form log (complex-safe, no domain check)."""
        return np.einsum("...ai,...a->...i", self._frame(q0), self._log(q0, q1))

    def _check_log_domain(self, q0: np.ndarray, q1: np.ndarray) -> None:
        """Raise :class:`RetractionDomainError` where ``log_{q0}(q1)`` is undefined."""

    def _geomstats_call(self, fn: Callable, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        batch = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
        a2 = np.broadcast_to(a, (*batch, a.shape[-1])).reshape(-1, a.shape[-1])
        b2 = np.broadcast_to(b, (*batch, b.shape[-1])).reshape(-1, b.shape[-1])
        out = np.asarray(fn(a2, b2))
        return out.reshape(*batch, out.shape[-1])

    # ------------------------------------------------------------ manifold
    def retract(self, q, xi):
        q = np.asarray(q, dtype=float)
        xi = np.asarray(xi)
        v = self._to_ambient(q, xi)
        if self.values == "geomstats":
            return self._geomstats_call(self.space.metric.exp, v, q)
        return self._exp(q, v)

    def inverse_retract(self, q0, q1):
        q0 = np.asarray(q0, dtype=float)
        q1 = np.asarray(q1, dtype=float)
        self._check_log_domain(q0, q1)
        if self.values == "geomstats":
            v = self._geomstats_call(self.space.metric.log, q1, q0)
            return np.einsum("...ai,...a->...i", self._frame(q0), v)
        return self._xi(q0, q1)

    def inverse_retract_jacobians(self, q0, q1):
        q0 = np.asarray(q0, dtype=float)
        q1 = np.asarray(q1, dtype=float)
        self._check_log_domain(q0, q1)
        q0, q1 = np.broadcast_arrays(q0, q1)
        # one complex-step direction per column j, on a new axis -2
        d0 = 1j * _H * np.swapaxes(self._frame(q0), -1, -2)  # (*b, dim, amb)
        d1 = 1j * _H * np.swapaxes(self._frame(q1), -1, -2)
        J0 = np.imag(self._xi(q0[..., None, :] + d0, q1[..., None, :])) / _H  # (*b, j, i)
        J1 = np.imag(self._xi(q0[..., None, :], q1[..., None, :] + d1)) / _H
        return np.swapaxes(J0, -1, -2), np.swapaxes(J1, -1, -2)

    def retract_jacobians(self, q, xi):
        q = np.asarray(q, dtype=float)
        xi = np.asarray(xi, dtype=float)
        batch = np.broadcast_shapes(q.shape[:-1], xi.shape[:-1])
        q = np.broadcast_to(q, (*batch, self.ambient_dim))
        xi = np.broadcast_to(xi, (*batch, self.dim))
        Ep = self._frame(self._exp(q, self._to_ambient(q, xi)))  # frame at q'
        qc = q[..., None, :] + 1j * _H * np.swapaxes(self._frame(q), -1, -2)  # (*b, j, amb)
        xib = np.broadcast_to(xi[..., None, :], (*batch, self.dim, self.dim))
        vq = np.imag(self._exp(qc, self._to_ambient(qc, xib))) / _H  # (*b, j, amb)
        xic = xib + 1j * _H * np.eye(self.dim)
        vxi = np.imag(self._exp(q[..., None, :], self._to_ambient(q[..., None, :], xic))) / _H
        Jq = np.einsum("...ai,...ja->...ij", Ep, vq)
        Jxi = np.einsum("...ai,...ja->...ij", Ep, vxi)
        return Jq, Jxi

    def ambient_tangent(self, q, eta):
        return np.einsum("...ai,...i->...a", self._frame(np.asarray(q, dtype=float)), np.asarray(eta))

    # ---------------------------------------------- generic (subclasses refine)
    def random_point(self, rng, batch_shape=()):
        x = rng.standard_normal((*batch_shape, self.ambient_dim))
        return np.asarray(self.space.projection(x.reshape(-1, self.ambient_dim))).reshape(x.shape)

    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> np.ndarray:
        a = np.asarray(q, dtype=float)
        if a.ndim < 1 or a.shape[-1] != self.ambient_dim:
            raise ValueError(
                f"{name}: a point of {self._name} has shape (..., {self.ambient_dim}), got {a.shape}"
            )
        bad = ~np.all(np.isfinite(a), axis=-1)
        if np.any(bad):
            raise ValueError(
                f"{name}: non-finite entries in a point of {self._name} at batch index {_index_str(bad)}"
            )
        on = np.asarray(self.space.belongs(a.reshape(-1, self.ambient_dim), atol=atol)).reshape(a.shape[:-1])
        if not np.all(on):
            raise ValueError(
                f"{name}: not a point of {self._name} at batch index {_index_str(~on)} (atol {atol:.1e})"
            )
        return a

    def to_coordinates(self, q):
        return np.asarray(q)

    def from_coordinates(self, c):
        return self.check_point(c)


class Sphere2(GeomstatsManifold):
    """The unit sphere ``S^2 = Hypersphere(2)`` with the great-circle retraction.

    Points are unit vectors ``(*batch, 3)``; frame coordinates ``xi``
    ``(*batch, 2)`` stand for ``E(q) xi`` with the two-chart frame of
    :func:`sphere_frame` (east/north away from the poles). ``R_q(xi)`` is
    the geodesic ``exp_q(E(q) xi)``; its inverse is defined except at the
    antipode ``-q`` (``|xi| = pi``), where the logarithm is not unique and
    :class:`~manifold_dirac.errors.RetractionDomainError` is raised.

    Parameters
    ----------
    values : {"closed_form", "geomstats"}
        See :class:`GeomstatsManifold`.

    Notes
    -----
    Human coordinates are ``(polar, azimuth)``: the angle from ``+z`` in
    ``[0, pi]`` and the longitude in ``(-pi, pi]``.

    The frame switches charts on the circles ``|z| = 1/sqrt(2)``; it is
    discontinuous there (a continuous frame of ``S^2`` does not exist), so
    ``J0`` and ``J_q`` -- derivatives along the frame at the moving point --
    change abruptly across them. :meth:`random_point` keeps a distance of
    ``1e-3`` (in ``|z|``) from the switch, so that finite-difference law
    checks never straddle it.
    """

    coordinate_names = ("polar", "azimuth")

    def __init__(self, values: str = "closed_form") -> None:
        gs = import_geomstats()
        del gs
        from geomstats.geometry.hypersphere import Hypersphere  # type: ignore[import-untyped]

        super().__init__(Hypersphere(2), sphere_frame, sphere_exp, sphere_log, values=values, name="Sphere2")
        self.coordinate_names = ("polar", "azimuth")

    def __repr__(self) -> str:
        return "Sphere2()" if self.values == "closed_form" else f"Sphere2(values={self.values!r})"

    def _check_log_domain(self, q0, q1):
        c = _dot(q0, q1)
        w = q1 - c[..., None] * q0
        s = np.sqrt(_dot(w, w))
        bad = (c < 0) & (s <= 1e-14)
        if np.any(bad):
            raise RetractionDomainError(
                f"Sphere2: inverse retraction at batch index {_index_str(bad)}: q1 is the antipode of q0 "
                f"(distance pi - {float(np.min(np.where(bad, s, np.inf))):.1e}); the logarithm is not "
                "unique there. Use a smaller step."
            )

    def random_point(self, rng, batch_shape=()):
        x = rng.standard_normal((*batch_shape, 3))
        x /= np.linalg.norm(x, axis=-1, keepdims=True)
        near = np.abs(np.abs(x[..., 2]) - _INV_SQRT2) < _CHART_BAND
        while np.any(near):  # resample the (rare) points next to the chart switch
            y = rng.standard_normal((*batch_shape, 3))
            y /= np.linalg.norm(y, axis=-1, keepdims=True)
            x = np.where(near[..., None], y, x)
            near = np.abs(np.abs(x[..., 2]) - _INV_SQRT2) < _CHART_BAND
        return x

    def sample_tangent(self, rng, batch_shape, regime):
        if regime == "near_singular":
            # close to the antipode, |xi| = pi - delta: the log's hard case
            # (its condition number grows like 1/delta)
            d = rng.standard_normal((*batch_shape, 2))
            d /= np.linalg.norm(d, axis=-1, keepdims=True)
            r = np.pi - 10.0 ** rng.uniform(-3, -1.5, batch_shape)
            return r[..., None] * d
        if regime == "generic":
            # a norm in (0.1, 2.5): well inside the injectivity radius pi
            d = rng.standard_normal((*batch_shape, 2))
            d /= np.linalg.norm(d, axis=-1, keepdims=True)
            return rng.uniform(0.1, 2.5, batch_shape)[..., None] * d
        return super().sample_tangent(rng, batch_shape, regime)

    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> np.ndarray:
        a = np.asarray(q, dtype=float)
        if a.ndim < 1 or a.shape[-1] != 3:
            raise ValueError(f"{name}: a point of Sphere2 is a unit 3-vector, shape (..., 3), got {a.shape}")
        bad = ~np.all(np.isfinite(a), axis=-1)
        if np.any(bad):
            raise ValueError(
                f"{name}: non-finite entries in a point of Sphere2 at batch index {_index_str(bad)}"
            )
        err = np.abs(np.linalg.norm(a, axis=-1) - 1.0)
        if np.any(err > atol):
            raise ValueError(
                f"{name}: not on the unit sphere at batch index {_index_str(err > atol)}: "
                f"| |q| - 1 | = {float(np.max(err)):.3e} > atol = {atol:.1e}"
            )
        return a

    def to_coordinates(self, q):
        """``(polar, azimuth)``, ``(*batch, 2)``: polar in ``[0, pi]``, azimuth in ``(-pi, pi]``."""
        q = np.asarray(q, dtype=float)
        polar = np.arctan2(np.hypot(q[..., 0], q[..., 1]), q[..., 2])
        azimuth = np.arctan2(q[..., 1], q[..., 0])
        return np.stack([polar, azimuth], -1)

    def from_coordinates(self, c):
        """The unit vector with ``(polar, azimuth)`` ``(*batch, 2)``."""
        c = np.asarray(c, dtype=float)
        if c.shape[-1:] != (2,):
            raise ValueError(f"Sphere2 coordinates are (..., 2) = (polar, azimuth), got {c.shape}")
        th, ph = c[..., 0], c[..., 1]
        return np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1)
