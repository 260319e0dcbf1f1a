"""An embedded manifold with its metric's exp/log as the retraction, with geomstats as an optional source of values.

A :class:`GeomstatsManifold` is an embedded manifold whose points are ambient
vectors ``(*batch, ambient_dim)``, given by

* a smooth local orthonormal **frame** ``E(q)`` ``(*batch, ambient_dim, dim)``
  whose columns span ``T_q Q``; frame coordinates ``xi`` stand for the
  ambient tangent vector ``E(q) xi``;
* the **retraction** ``R_q(xi) = exp_q(E(q) xi)`` and its inverse
  ``R_{q0}^{-1}(q1) = E(q0)^T log_{q0}(q1)``, the metric's exp and log in
  closed form (``jax.numpy``, NaN-free under autodiff), given by the caller;
* **exact Jacobians** by forward-mode autodiff of those closed forms along
  the frame, e.g. ``J1[:, j] = d/de xi(q0, q1 + e E(q1) e_j)`` at ``e = 0``
  and ``J_xi = E(q1)^T d/dxi exp_q(E(q) xi)`` -- exact to round-off. Moving
  ``q`` along its first-order curve ``q + e E(q) eta`` instead of the
  retraction changes no first derivative.

geomstats is optional and imported only on demand: ``values="geomstats"``
computes the values of ``retract`` and ``inverse_retract`` with the geomstats
manifold's own ``metric.exp``/``metric.log`` (numpy, eager: not under
``jit``), a cross-check of the closed forms; :attr:`GeomstatsManifold.space`
gives the geomstats object. The unit sphere, in closed form, is
:class:`~manifold_dirac._manifolds.sphere.Sphere2` (:mod:`manifold_dirac._manifolds.sphere`).

The retraction is **not symmetric** in the frames: ``R_{q1}^{-1}(q0)`` is
``-R_{q0}^{-1}(q1)`` transported by the geodesic, and read in the frame at
``q1``, which is not parallel along it (a frame of ``S^2`` cannot be), so
the two differ at second order in ``|xi|``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from .._types import ArrayLike
from .base import Manifold, Retraction, register_retraction, resolve_retraction

if TYPE_CHECKING:
    from .sphere import Sphere2

# Any here: a geomstats space is an object of an untyped third-party package.

__all__ = ["GeomstatsManifold", "MetricExp"]

_VALUES = ("closed_form", "geomstats")


def _index_str(mask: np.ndarray) -> str:
    return str(np.argwhere(np.atleast_1d(mask))[0].tolist() if np.ndim(mask) else [])


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
    retraction : {"metric"} or Retraction
        The metric exponential ``R_q(xi) = exp_q(E(q) xi)``, the one
        retraction registered for these manifolds.

    Notes
    -----
    Argument checks (the rules of every :class:`Manifold`): the primitives
    refuse points whose last axis is not ``ambient_dim`` and tangent vectors
    whose last axis is not ``dim`` in every call; values are not checked
    here (subclasses may: :class:`Sphere2` does, in eager calls).

    Examples
    --------
    The sphere :class:`Sphere2` is one (closed forms; geomstats only for a cross-check):

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> S = md.Sphere2()
    >>> isinstance(S, md.GeomstatsManifold), S.dim, S.ambient_dim
    (True, 2, 3)
    >>> E = np.asarray(S.frame(np.array([0.0, 0.0, 1.0])))   # a basis of the tangent plane
    >>> E.shape, np.allclose(E.T @ E, np.eye(2))
    ((3, 2), True)
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
        from .sphere import Sphere2

        return Sphere2(values=values)

    # ----------------------------------------------------------- helpers
    def frame(self, q: jax.Array) -> jax.Array:
        """The frame ``E(q)``, ``(*batch, ambient_dim, dim)``."""
        return self._frame(jnp.asarray(q))

    def _retract_cf(self, q, xi):
        return self._exp(q, _to_ambient(self._frame(q), xi))

    def _xi(self, q0, q1):
        return _to_frame(self._frame(q0), self._log(q0, q1))

    def _geomstats_call(self, fn: Callable, a: ArrayLike, b: ArrayLike) -> jax.Array:
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
        q = np.zeros(self.ambient_dim)
        q[-1] = 1.0
        return jax.device_put(q)  # built on the host: eager jnp.zeros(...).at[].set compiles programs

    def random_point(self, rng, batch_shape=()):
        x = rng.standard_normal((*batch_shape, self.ambient_dim))
        p = np.asarray(self.space.projection(x.reshape(-1, self.ambient_dim)))
        return jnp.asarray(p.reshape(x.shape))

    def check_point(self, q: object, atol: float = 1e-9, name: str = "q") -> jax.Array:
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
