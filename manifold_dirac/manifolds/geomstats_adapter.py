"""Embedded manifolds with the Riemannian exp/log as the retraction, in closed form on JAX.

A :class:`GeomstatsManifold` is an embedded manifold whose points are ambient
vectors ``(*batch, ambient_dim)``, given by

* a smooth local orthonormal **frame** ``E(q)`` ``(*batch, ambient_dim, dim)``
  whose columns span ``T_q Q``; frame coordinates ``xi`` stand for the
  ambient tangent vector ``E(q) xi``;
* the **retraction** ``R_q(xi) = exp_q(E(q) xi)`` and its inverse
  ``R_{q0}^{-1}(q1) = E(q0)^T log_{q0}(q1)``, the metric's exp and log in
  closed form (``jax.numpy``, NaN-free under autodiff);
* **exact Jacobians** by forward-mode autodiff of those closed forms along
  the frame, e.g. ``J1[:, j] = d/de xi(q0, q1 + e E(q1) e_j)`` at ``e = 0``
  and ``J_xi = E(q1)^T d/dxi exp_q(E(q) xi)`` -- exact to round-off (the
  numpy engine took the same derivatives by the complex step). Moving
  ``q`` along its first-order curve ``q + e E(q) eta`` instead of the
  retraction changes no first derivative.

:class:`Sphere2` is the unit sphere ``S^2`` (geomstats' ``Hypersphere(2)``)::

    exp_q(v)     = cos|v| q + (sin|v| / |v|) v,
    log_{q0}(q1) = (theta / s) w,   w = q1 - c q0,  c = q0 . q1,  s = |w|,  theta = atan2(s, c).

geomstats is **not** imported for these closed forms. ``values="geomstats"``
is the documented slower path that computes the values of ``retract`` and
``inverse_retract`` with geomstats' own ``metric.exp``/``metric.log``
(numpy, eager: not under ``jit``); it exists to cross-check the closed forms.
geomstats' ``HypersphereMetric.log`` goes through ``arccos`` of the inner
product and loses digits near ``0`` and near the antipode (measured with its
2.8.0 release: relative error 2e-7 at ``|xi| = 1e-9``, 4e-10 at ``1e-6``,
4e-4 at ``pi - 1e-6``), which would break the round trip
``R_q^{-1}(R_q(xi)) = xi`` the integrators rely on; hence the closed forms
are the default.

The retraction is **not symmetric** in the frames: ``R_{q1}^{-1}(q0)`` is
``-R_{q0}^{-1}(q1)`` transported by the geodesic, and read in the frame at
``q1``, which is not parallel along it (a frame of ``S^2`` cannot be), so
the two differ at second order in ``|xi|``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .base import (
    VALUE_ATOL,
    Manifold,
    Retraction,
    concrete_array,
    first_index,
    first_member,
    register_retraction,
    resolve_retraction,
)

__all__ = ["GeomstatsManifold", "MetricExp", "Sphere2", "sphere_exp", "sphere_frame", "sphere_log"]

_INV_SQRT2 = 1.0 / np.sqrt(2.0)
_CHART_BAND = 1e-3  # random points keep this distance (in |z|) from the chart switch
_VALUES = ("closed_form", "geomstats")
_SPHERE_MAX_ANGLE = float(np.pi - 1e-8)


def _dot(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.sum(a * b, axis=-1)


def _index_str(mask: np.ndarray) -> str:
    return str(np.argwhere(np.atleast_1d(mask))[0].tolist() if np.ndim(mask) else [])


# --------------------------------------------------- sphere closed forms
def _cos_sinc_of_sq(t2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``cos t`` and ``sin t / t`` from ``t^2`` (Taylor below ``t^2 < 1e-6``, next term < 1e-27)."""
    small = t2 < 1e-6
    t = jnp.sqrt(jnp.where(small, 1.0, t2))
    cos = jnp.where(small, 1 - t2 / 2 * (1 - t2 / 12 * (1 - t2 / 30 * (1 - t2 / 56))), jnp.cos(t))
    sinc = jnp.where(small, 1 - t2 / 6 * (1 - t2 / 20 * (1 - t2 / 42 * (1 - t2 / 72))), jnp.sin(t) / t)
    return cos, sinc


def sphere_exp(q: jax.Array, v: jax.Array) -> jax.Array:
    """Exponential map of the unit sphere, ``cos|v| q + (sin|v|/|v|) v``.

    Parameters
    ----------
    q : array-like, shape=[..., n+1]
        Base points (unit vectors).
    v : array-like, shape=[..., n+1]
        Ambient tangent vectors at ``q``.

    Returns
    -------
    jax.Array, shape=[..., n+1]
    """
    q, v = jnp.asarray(q), jnp.asarray(v)
    cos, sinc = _cos_sinc_of_sq(_dot(v, v))
    return cos[..., None] * q + sinc[..., None] * v


def _arctan_over_z_of_sq(z2: jax.Array) -> jax.Array:
    """``arctan(z)/z`` as a function of ``z^2`` (series below 1e-6)."""
    small = z2 < 1e-6
    z = jnp.sqrt(jnp.where(small, 1.0, z2))
    return jnp.where(small, 1 - z2 / 3 * (1 - 3 * z2 / 5 * (1 - 5 * z2 / 7)), jnp.arctan(z) / z)


def sphere_log(q0: jax.Array, q1: jax.Array) -> jax.Array:
    """Logarithm of the unit sphere, ``log_{q0}(q1) = (theta / s) w``.

    With ``c = q0 . q1``, ``w = q1 - c q0``, ``s = |w|``,
    ``theta = atan2(s, c)``, written as ``theta/s = (arctan(z)/z)/c``,
    ``z = s/c``, for ``c > 0`` (a function of ``s^2``: smooth at ``q1 = q0``)
    and ``(pi/2 - arctan(c/s))/s`` otherwise -- as accurate as ``atan2``.
    Not defined at the antipode (``s = 0``, ``c < 0``; non-finite there).

    Parameters
    ----------
    q0, q1 : array-like, shape=[..., n+1]
        Unit vectors.

    Returns
    -------
    jax.Array, shape=[..., n+1]
        The tangent vector at ``q0``.
    """
    q0, q1 = jnp.asarray(q0), jnp.asarray(q1)
    c = _dot(q0, q1)
    w = q1 - c[..., None] * q0
    s2 = _dot(w, w)
    front = c > 0
    cs = jnp.where(front, c, 1.0)
    ratio_front = _arctan_over_z_of_sq(s2 / (cs * cs)) / cs
    sb = jnp.sqrt(jnp.where(front, 1.0, s2))
    ratio_back = (np.pi / 2 - jnp.arctan(jnp.where(front, 0.0, c) / sb)) / sb
    return jnp.where(front, ratio_front, ratio_back)[..., None] * w


def sphere_frame(q: jax.Array) -> jax.Array:
    """A smooth local orthonormal frame of ``S^2``, ``(*batch, 3, 2)``.

    Two charts, switched on ``|z|`` (the third coordinate of ``q``):

    * ``|z| <= 1/sqrt(2)`` (the band around the equator): ``e1 = z^ x q /
      |z^ x q|`` (east), ``e2 = q x e1`` (north); singular only at the poles
      ``+-z^``, at least 45 degrees away;
    * ``|z| > 1/sqrt(2)`` (the polar caps): the same with the axis ``y^``
      instead of ``z^``, singular only at ``+-y^``, again at least 45 degrees
      away.

    The chart is selected before normalizing, so neither value nor
    derivative is NaN. ``(e1, e2, q)`` is right-handed.
    """
    q = jnp.asarray(q)
    qn = q / jnp.sqrt(_dot(q, q))[..., None]
    x, y, z = qn[..., 0], qn[..., 1], qn[..., 2]
    zero = jnp.zeros_like(x)
    polar = jnp.abs(z) > _INV_SQRT2
    a = jnp.where(polar[..., None], jnp.stack([z, zero, -x], -1), jnp.stack([-y, x, zero], -1))
    e1 = a / jnp.sqrt(_dot(a, a))[..., None]
    return jnp.stack([e1, jnp.cross(qn, e1)], -1)


def _columns(f: Callable[[jax.Array], jax.Array], x: jax.Array, V: jax.Array) -> jax.Array:
    """Derivatives of ``f`` at ``x`` along the columns of ``V`` ``(*batch, n, k)``: ``(*batch, m, k)``."""
    x = jnp.broadcast_to(x, V.shape[:-1])
    return jax.vmap(lambda v: jax.jvp(f, (x,), (v,))[1], in_axes=-1, out_axes=-1)(V)


def _to_ambient(E: jax.Array, xi: jax.Array) -> jax.Array:
    """``E xi``: ``(*batch, n, k)``, ``(*batch, k)`` -> ``(*batch, n)``."""
    return jnp.sum(E * xi[..., None, :], -1)


def _to_frame(E: jax.Array, v: jax.Array) -> jax.Array:
    """``E^T v``: ``(*batch, n, k)``, ``(*batch, n)`` -> ``(*batch, k)``."""
    return jnp.sum(E * v[..., :, None], -2)


def _to_frame_columns(E: jax.Array, V: jax.Array) -> jax.Array:
    """``E^T V``: ``(*batch, n, k)``, ``(*batch, n, m)`` -> ``(*batch, k, m)``."""
    return jnp.sum(E[..., :, :, None] * V[..., :, None, :], -3)


# ------------------------------------------------------------- the adapter
class GeomstatsManifold(Manifold):
    """An embedded manifold with its metric exp/log (closed forms) as the retraction.

    Parameters
    ----------
    frame : callable
        ``frame(q) -> E`` ``(*batch, ambient_dim, dim)``: an orthonormal basis
        of ``T_q``, smooth in ``q`` locally, written with ``jax.numpy``.
    exp, log : callable
        Closed forms of the metric's ``exp(q, v) -> q'`` and
        ``log(q0, q1) -> v`` (ambient vectors), ``jax.numpy``, NaN-free under
        autodiff. They give the exact Jacobians, and the values when
        ``values="closed_form"``.
    dim, ambient_dim : int
        Dimension of the manifold and of the ambient space.
    space : geomstats manifold or callable, optional
        The geomstats manifold (an embedded one with a Riemannian
        ``metric``), or a function returning it, called on first use: only
        ``values="geomstats"`` and :attr:`space` need geomstats.
    values : {"closed_form", "geomstats"}
        What computes ``retract``/``inverse_retract``: the closed forms
        (default; accurate to round-off, jittable) or ``space.metric``
        itself (eager numpy; a cross-check).
    name : str, optional
        For ``repr``.

    Notes
    -----
    Argument checks (:mod:`manifold_dirac.manifolds.base`): the primitives
    refuse points whose last axis is not ``ambient_dim`` and tangent vectors
    whose last axis is not ``dim`` in every call; values are not checked
    here (subclasses may: :class:`Sphere2` does, in eager calls).
    """

    def __init__(self, frame: Callable, exp: Callable, log: Callable, *, dim: int, ambient_dim: int,
                 space: Any = None, values: str = "closed_form", name: str | None = None,
                 retraction: str | Retraction = "metric") -> None:
        if values not in _VALUES:
            raise ValueError(f"{type(self).__name__}: unknown values {values!r}; valid values are "
                             + ", ".join(repr(v) for v in _VALUES))
        self.dim, self.ambient_dim = int(dim), int(ambient_dim)
        self.point_shape = (self.ambient_dim,)
        self.retraction = resolve_retraction(type(self), retraction)
        self.values = values
        self._frame, self._exp, self._log = frame, exp, log
        self._space = space
        self._name = name or type(self).__name__
        self.coordinate_names = tuple(f"u{i}" for i in range(self.ambient_dim))
        if values == "geomstats":
            _ = self.space  # fail early if geomstats is missing

    @property
    def space(self) -> Any:
        """The geomstats manifold (built, and geomstats imported, on first access)."""
        if callable(self._space) and not hasattr(self._space, "metric"):
            self._space = self._space()
        if self._space is None:
            raise ValueError(f"{self._name}: no geomstats space was given")
        return self._space

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
    def frame(self, q: jax.Array) -> jax.Array:
        """The frame ``E(q)``, ``(*batch, ambient_dim, dim)``."""
        return self._frame(jnp.asarray(q))

    def _retract_cf(self, q, xi):
        return self._exp(q, _to_ambient(self._frame(q), xi))

    def _xi(self, q0, q1):
        return _to_frame(self._frame(q0), self._log(q0, q1))

    def _geomstats_call(self, fn: Callable, a: Any, b: Any) -> jax.Array:
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        batch = np.broadcast_shapes(a.shape[:-1], b.shape[:-1])
        a2 = np.broadcast_to(a, (*batch, a.shape[-1])).reshape(-1, a.shape[-1])
        b2 = np.broadcast_to(b, (*batch, b.shape[-1])).reshape(-1, b.shape[-1])
        out = np.asarray(fn(a2, b2))
        return jnp.asarray(out.reshape(*batch, out.shape[-1]))

    # ------------------------------------------------------------ manifold
    def retract(self, q, xi):
        q, xi = jnp.asarray(q, dtype=float), jnp.asarray(xi, dtype=float)
        if self.values == "geomstats":
            return self._geomstats_call(self.space.metric.exp, self.ambient_tangent(q, xi), q)
        return self._retract_cf(q, xi)

    def inverse_retract(self, q0, q1):
        q0, q1 = jnp.asarray(q0, dtype=float), jnp.asarray(q1, dtype=float)
        if self.values == "geomstats":
            return _to_frame(self._frame(q0), self._geomstats_call(self.space.metric.log, q1, q0))
        return self._xi(q0, q1)

    def retract_with_inverse_jacobians(self, q0, xi):
        q0, xi = jnp.asarray(q0, dtype=float), jnp.asarray(xi, dtype=float)
        batch = jnp.broadcast_shapes(q0.shape[:-1], xi.shape[:-1])
        q0 = jnp.broadcast_to(q0, (*batch, self.ambient_dim))
        q1 = self._retract_cf(q0, xi)
        J0 = _columns(lambda p: self._xi(p, q1), q0, self._frame(q0))
        J1 = _columns(lambda p: self._xi(q0, p), q1, self._frame(q1))
        return (self.retract(q0, xi) if self.values == "geomstats" else q1), J0, J1

    def retract_with_jacobians(self, q, xi):
        q, xi = jnp.asarray(q, dtype=float), jnp.asarray(xi, dtype=float)
        batch = jnp.broadcast_shapes(q.shape[:-1], xi.shape[:-1])
        q, xi = jnp.broadcast_to(q, (*batch, self.ambient_dim)), jnp.broadcast_to(xi, (*batch, self.dim))
        q1 = self._retract_cf(q, xi)
        E1 = self._frame(q1)
        Jq = _to_frame_columns(E1, _columns(lambda p: self._retract_cf(p, xi), q, self._frame(q)))
        Jxi = _to_frame_columns(E1, _columns(lambda x: self._retract_cf(q, x), xi,
                                         jnp.broadcast_to(jnp.eye(self.dim), (*batch, self.dim, self.dim))))
        return (self.retract(q, xi) if self.values == "geomstats" else q1), Jq, Jxi

    def in_domain(self, xi):
        """``|xi| < pi``: inside the injectivity radius of a unit sphere (subclasses refine)."""
        return jnp.sum(jnp.asarray(xi) ** 2, axis=-1) < np.pi**2

    def ambient_tangent(self, q, eta):
        return _to_ambient(self.frame(q), jnp.asarray(eta))

    # ---------------------------------------------- generic (subclasses refine)
    def default_point(self):
        return jnp.zeros(self.ambient_dim).at[-1].set(1.0)

    def random_point(self, rng, batch_shape=()):
        x = rng.standard_normal((*batch_shape, self.ambient_dim))
        p = np.asarray(self.space.projection(x.reshape(-1, self.ambient_dim)))
        return jnp.asarray(p.reshape(x.shape))

    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> jax.Array:
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
        return jnp.asarray(a)

    def to_coordinates(self, q):
        return jnp.asarray(q)

    def from_coordinates(self, c):
        return self.check_point(c, name="coordinates")


@register_retraction(GeomstatsManifold)
class MetricExp(Retraction):
    """``R_q(xi) = exp_q(E(q) xi)``: the metric's geodesics read in the frame (not symmetric: module docs)."""

    name = "metric"
    symmetric = False


def _hypersphere2() -> Any:
    from .._compat import import_geomstats

    import_geomstats()
    from geomstats.geometry.hypersphere import Hypersphere  # type: ignore[import-untyped]

    return Hypersphere(2)


class Sphere2(GeomstatsManifold):
    """The unit sphere ``S^2`` with the great-circle retraction.

    Points are unit vectors ``(*batch, 3)``; frame coordinates ``xi``
    ``(*batch, 2)`` stand for ``E(q) xi`` with the two-chart frame of
    :func:`sphere_frame` (east/north away from the poles). ``R_q(xi)`` is the
    geodesic ``exp_q(E(q) xi)``; its inverse is defined except at the
    antipode ``-q`` (``|xi| = pi``), where it is not finite
    (:meth:`checked_inverse_retract` raises).

    Parameters
    ----------
    values : {"closed_form", "geomstats"}
        See :class:`GeomstatsManifold`.

    Notes
    -----
    Argument checks (:mod:`manifold_dirac.manifolds.base`): the primitives
    refuse points not of shape ``(..., 3)`` and tangent vectors not of shape
    ``(..., 2)`` in every call; in eager calls ``retract``,
    ``inverse_retract`` and the fused Jacobian methods also refuse a concrete
    point whose norm is not 1 (``| |q| - 1 | > 1e-6``; members with NaN
    entries pass). Traced calls check shapes only.

    Human coordinates are ``(polar, azimuth)``: the angle from ``+z`` in
    ``[0, pi]`` and the longitude in ``(-pi, pi]``.

    The frame switches charts on the circles ``|z| = 1/sqrt(2)``; it is
    discontinuous there (a continuous frame of ``S^2`` does not exist), so
    ``J0`` and ``J_q`` -- derivatives along the frame at the moving point --
    change abruptly across them. :meth:`random_point` keeps a distance of
    ``1e-3`` (in ``|z|``) from the switch, so that finite-difference checks
    never straddle it.
    """

    def __init__(self, values: str = "closed_form") -> None:
        super().__init__(sphere_frame, sphere_exp, sphere_log, dim=2, ambient_dim=3, space=_hypersphere2,
                         values=values, name="Sphere2")
        self.coordinate_names = ("polar", "azimuth")

    def __repr__(self) -> str:
        return "Sphere2()" if self.values == "closed_form" else f"Sphere2(values={self.values!r})"

    def random_point(self, rng, batch_shape=()):
        def draw():
            x = rng.standard_normal((*batch_shape, 3))
            return x / np.linalg.norm(x, axis=-1, keepdims=True)

        x = draw()
        near = np.abs(np.abs(x[..., 2]) - _INV_SQRT2) < _CHART_BAND
        while np.any(near):  # resample the (rare) points next to the chart switch
            x = np.where(near[..., None], draw(), x)
            near = np.abs(np.abs(x[..., 2]) - _INV_SQRT2) < _CHART_BAND
        return jnp.asarray(x)

    def sample_tangent(self, rng, batch_shape, regime):
        if regime in ("near_singular", "generic"):
            d = rng.standard_normal((*batch_shape, 2))
            d /= np.linalg.norm(d, axis=-1, keepdims=True)
            if regime == "near_singular":  # near the antipode; conditioning ~ 1/(pi - |xi|)
                r = np.pi - 10.0 ** rng.uniform(-3, -1.5, batch_shape)
            else:  # well inside the injectivity radius pi
                r = rng.uniform(0.1, 2.5, batch_shape)
            return jnp.asarray(r[..., None] * d)
        return super().sample_tangent(rng, batch_shape, regime)

    def _domain_violations(self, method, given):
        """Eager: the inverse retraction and the inverse Jacobians refuse the antipode and its ``1e-8`` neighbourhood.

        ``log_{q0}(q1)`` is not defined at ``q1 = -q0`` and its direction is
        lost to round-off near it (relative error ``eps/(pi - angle)``); the
        inverse Jacobians, derivatives of that logarithm, blow up there.
        """
        if method == "inverse_retract":
            q0, q1 = np.broadcast_arrays(given["q0"], given["q1"])
            angle = np.arctan2(np.linalg.norm(np.cross(q0, q1), axis=-1), np.sum(q0 * q1, axis=-1))
            what = "q1 is {} rad from q0"
        elif method == "retract_with_inverse_jacobians":
            angle = np.linalg.norm(given["xi"], axis=-1)
            what = "|xi| = {}: R_q0(xi) is that far from q0"
        else:
            return []
        bad = angle > _SPHERE_MAX_ANGLE
        if not np.any(bad):
            return []
        return [(bad, what.format(first_member(angle, bad)) + "; the inverse retraction of Sphere2 (the sphere's "
                 "logarithm) is not defined at the antipode, angle pi, and is computed for angles up to "
                 f"pi - 1e-8 = {_SPHERE_MAX_ANGLE:.10g}")]

    def _check_values(self, where: str, name: str, q: Any) -> None:
        a = concrete_array(q)
        if a is None or a.size == 0:
            return
        err = np.abs(np.linalg.norm(a, axis=-1) - 1.0)
        bad = np.isfinite(err) & (err > VALUE_ATOL)  # failed batch members (NaN) pass through
        if np.any(bad):
            raise ValueError(
                f"{where}: {name} is not on the unit sphere (Sphere2) at batch index {first_index(bad)}: "
                f"| |q| - 1 | = {float(np.max(err[bad])):.3e} > {VALUE_ATOL:.0e}. Pass unit vectors "
                "(Sphere2().check_point validates one); this check runs in eager calls only"
            )

    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> jax.Array:
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
                f"{name}: not on the unit sphere (Sphere2) at batch index {_index_str(err > atol)}: "
                f"| |q| - 1 | = {float(np.max(err)):.3e} > atol = {atol:.1e}"
            )
        return jnp.asarray(a)

    def to_coordinates(self, q):
        """``(polar, azimuth)``, ``(*batch, 2)``: polar in ``[0, pi]``, azimuth in ``(-pi, pi]``."""
        q = jnp.asarray(q, dtype=float)
        polar = jnp.arctan2(jnp.hypot(q[..., 0], q[..., 1]), q[..., 2])
        return jnp.stack([polar, jnp.arctan2(q[..., 1], q[..., 0])], -1)

    def from_coordinates(self, c):
        """The unit vector with ``(polar, azimuth)`` ``(*batch, 2)``."""
        c = jnp.asarray(c, dtype=float)
        if c.shape[-1:] != (2,):
            raise ValueError(
                f"Sphere2.from_coordinates: coordinates are (..., 2) = (polar, azimuth), got shape {c.shape}"
            )
        th, ph = c[..., 0], c[..., 1]
        return jnp.stack([jnp.sin(th) * jnp.cos(ph), jnp.sin(th) * jnp.sin(ph), jnp.cos(th)], -1)
