"""Products ``Q1 x Q2 x ...`` with the product retraction (factor by factor).

A point is a tuple of the factors' points (a pytree: ``jax.tree`` utilities,
``jit``, ``vmap`` and ``scan`` treat it like any other point); tangent
vectors and covectors are the factors' frame coordinates concatenated,
``xi = (xi_1, xi_2, ...)``; the retraction is
``R_(q_1, q_2, ...)(xi) = (R_{q_1}(xi_1), R_{q_2}(xi_2), ...)``, so every
Jacobian is block diagonal, ``J = diag(J^(1), J^(2), ...)``, and the inverse
is defined where every factor's is. The product retraction is what makes
"discretize the subsystems, then interconnect" equal "interconnect, then
discretize" (``docs/interconnection.md``). It is symmetric exactly when
every factor's retraction is.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
import jax
import jax.numpy as jnp
import numpy as np

from .._types import ArrayLike, Point
from .base import Manifold, Retraction, concrete_array, register_retraction, resolve_retraction, shape_of

__all__ = ["ProductManifold", "ProductRetraction", "block_diag"]


def block_diag(blocks: Sequence[jax.Array]) -> jax.Array:
    """The block-diagonal matrix of ``blocks`` ``(*batch_i, d_i, d_i)``, batched.

    Unlike ``jax.scipy.linalg.block_diag`` it keeps leading batch axes
    (broadcast between the blocks): the result is ``(*batch, D, D)`` with
    ``D = sum(d_i)``.
    """
    blocks = [jnp.asarray(b) for b in blocks]
    batch = jnp.broadcast_shapes(*(b.shape[:-2] for b in blocks))
    dims = [b.shape[-1] for b in blocks]
    dtype = jnp.result_type(*blocks)
    rows = []
    for i, b in enumerate(blocks):
        row = [
            jnp.broadcast_to(b, (*batch, dims[i], dims[i])).astype(dtype) if j == i
            else jnp.zeros((*batch, dims[i], dims[j]), dtype)
            for j in range(len(blocks))
        ]
        rows.append(jnp.concatenate(row, -1))
    return jnp.concatenate(rows, -2)


class ProductRetraction(Retraction):
    """The product of the factors' retractions (held in ``factors``).

    ``symmetric`` is true exactly when every factor's retraction is. Two
    product retractions are equal when their factors' are, in order.
    """

    name = "product"

    def __init__(self, factors: Sequence[Retraction] = ()):
        self.factors = tuple(factors)

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return all(r.symmetric for r in self.factors)

    def __repr__(self) -> str:
        return "ProductRetraction(" + ", ".join(repr(r) for r in self.factors) + ")"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.factors == other.factors  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self.factors))


class ProductManifold(Manifold):
    """The product of manifolds with the product retraction.

    Parameters
    ----------
    *factors : Manifold
        At least one factor; the product's frame coordinates are the
        factors' concatenated in this order.
    retraction : {"product"} or ProductRetraction
        The only retraction of a product (the factors choose theirs).

    Attributes
    ----------
    factors : tuple of Manifold
        The factors, in the order given.
    dims : tuple of int
        The factors' dimensions.
    offsets : tuple of int
        Start index of each factor's block in frame coordinates.

    Notes
    -----
    Argument checks (the rules of every :class:`Manifold`): in every call a
    point must be a tuple (or list) with one point per factor, each of its
    factor's shape (named ``q[i]`` in the message), and a tangent vector
    must have the total length ``dim = sum(dims)``; in eager calls each
    factor checks the values of its part as that factor does.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> Q = md.ProductManifold(md.SO3(), md.Euclidean(3))          # a rigid body: attitude and centre
    >>> Q.dim, Q.dims
    (6, (3, 3))
    >>> R, x = Q.retract((np.eye(3), np.zeros(3)), np.array([0.0, 0.0, 0.1, 1.0, 0.0, 0.0]))
    >>> np.asarray(x)
    array([1., 0., 0.])
    """

    def __init__(self, *factors: Manifold, retraction: str | ProductRetraction = "product"):
        if not factors or not all(isinstance(f, Manifold) for f in factors):
            raise TypeError("ProductManifold: give one or more Manifold instances as factors")
        self.factors = tuple(factors)
        self.dims = tuple(int(f.dim) for f in factors)
        self.offsets = tuple(int(x) for x in np.cumsum((0,) + self.dims[:-1]))
        self.dim = int(sum(self.dims))
        self.point_shape = ()
        own = ProductRetraction(tuple(f.retraction for f in factors))
        if isinstance(retraction, ProductRetraction) and retraction != own:
            raise ValueError(
                f"ProductManifold: retraction {retraction!r} does not match the factors' {own!r}"
            )
        resolve_retraction(type(self), retraction)  # an unknown name lists the valid ones
        self.retraction = own
        self.coordinate_names = tuple(f"{i}.{n}" for i, f in enumerate(factors) for n in f.coordinate_names)

    def __repr__(self) -> str:
        return "ProductManifold(" + ", ".join(repr(f) for f in self.factors) + ")"

    def _key(self) -> tuple:
        return ("ProductManifold",) + tuple(f._key() for f in self.factors)

    # -------------------------------------------------------------- slicing
    def slice(self, i: int) -> slice:
        """The slice of factor ``i``'s block in a tangent vector or covector."""
        return slice(self.offsets[i], self.offsets[i] + self.dims[i])

    def split(self, v: ArrayLike) -> tuple[jax.Array, ...]:
        """Split ``(*batch, dim)`` into the factors' parts ``(*batch, dim_i)``."""
        v = jnp.asarray(v)
        return tuple(v[..., self.slice(i)] for i in range(len(self.factors)))

    def join(self, parts: Sequence[jax.Array | np.ndarray]) -> jax.Array:
        """Concatenate the factors' parts (batch axes broadcast) into ``(*batch, dim)``."""
        parts = [jnp.asarray(p) for p in parts]
        batch = jnp.broadcast_shapes(*(p.shape[:-1] for p in parts))
        return jnp.concatenate([jnp.broadcast_to(p, (*batch, p.shape[-1])) for p in parts], -1)

    def _zip(self, *points: Point):
        return zip(self.factors, *points)

    # ------------------------------------------------------ argument checks
    def _tangent_layout(self) -> str:
        return " (the factors' frame coordinates concatenated: " + " + ".join(str(d) for d in self.dims) + ")"

    def _point_batch(self, where: str, name: str, q: object) -> tuple[int, ...]:
        n = len(self.factors)
        if not isinstance(q, (tuple, list)) or len(q) != n:
            got = f"{type(q).__name__} of length {len(q)}" if isinstance(q, (tuple, list)) else (
                f"{type(q).__name__} of shape {shape_of(q)}" if shape_of(q) is not None else type(q).__name__)
            raise ValueError(
                f"{where}: {name} must be a point of the product, a tuple of {n} factor points "
                f"({', '.join(repr(f) for f in self.factors)}), got {got}"
            )
        batches = [f._point_batch(where, f"{name}[{i}]", qi) for i, (f, qi) in enumerate(self._zip(q))]
        try:
            return tuple(np.broadcast_shapes(*batches))
        except ValueError:
            raise ValueError(f"{where}: the batch shapes of the factors of {name}, {batches}, do not broadcast") from None

    def _check_values(self, where: str, name: str, q: object) -> None:
        for i, (f, qi) in enumerate(self._zip(q)):
            f._check_values(where, f"{name}[{i}]", qi)

    # -------------------------------------------------------------- manifold
    def retract(self, q, xi):
        return tuple(f.retract(qi, x) for f, qi, x in self._zip(q, self.split(xi)))

    def inverse_retract(self, q0, q1):
        return self.join([f.inverse_retract(a, b) for f, a, b in self._zip(q0, q1)])

    def retract_with_inverse_jacobians(self, q0, xi):
        out = [f.retract_with_inverse_jacobians(a, x) for f, a, x in self._zip(q0, self.split(xi))]
        return tuple(o[0] for o in out), block_diag([o[1] for o in out]), block_diag([o[2] for o in out])

    def retract_with_jacobians(self, q, xi):
        out = [f.retract_with_jacobians(a, x) for f, a, x in self._zip(q, self.split(xi))]
        return tuple(o[0] for o in out), block_diag([o[1] for o in out]), block_diag([o[2] for o in out])

    def in_domain(self, xi):
        return functools.reduce(jnp.logical_and, [f.in_domain(x) for f, x in self._zip(self.split(xi))])

    def ambient_tangent(self, q, eta):
        return tuple(f.ambient_tangent(qi, e) for f, qi, e in self._zip(q, self.split(eta)))

    # ---------------------------------------------------- points and checks
    def default_point(self) -> Point:
        return tuple(f.default_point() for f in self.factors)

    def check_point(self, q: object, atol: float = 1e-9, name: str = "q") -> Point:
        q = self._check_tuple(q, name)
        return tuple(f.check_point(qi, atol, f"{name}[{i}]") for i, (f, qi) in enumerate(self._zip(q)))

    def _check_point_host(self, q: object, atol: float = 1e-9, name: str = "q") -> Point:
        q = self._check_tuple(q, name)
        return tuple(f._check_point_host(qi, atol, f"{name}[{i}]") for i, (f, qi) in enumerate(self._zip(q)))

    def _check_tuple(self, q: object, name: str) -> tuple[Point, ...]:
        """``q`` as a tuple if it is a tuple (or list) of one point per factor, else the error saying so."""
        n = len(self.factors)
        what = f"{name}: a point of a product of {n} manifolds is a tuple of {n} factor points, got "
        if not isinstance(q, (tuple, list)):
            raise TypeError(what + type(q).__name__)
        if len(q) != n:
            raise ValueError(what + f"{type(q).__name__} of length {len(q)}")
        return tuple(q)

    def batch_shape(self, q: Point) -> tuple[int, ...]:
        return tuple(jnp.broadcast_shapes(*(f.batch_shape(qi) for f, qi in zip(self.factors, q))))

    def broadcast_point(self, q: Point, batch_shape: tuple[int, ...]) -> Point:
        return tuple(f.broadcast_point(qi, batch_shape) for f, qi in zip(self.factors, q))

    def random_point(self, rng, batch_shape=()):
        return tuple(f.random_point(rng, batch_shape) for f in self.factors)

    def sample_tangent(self, rng, batch_shape, regime):
        return self.join([f.sample_tangent(rng, batch_shape, regime) for f in self.factors])

    # ------------------------------------------------------ human coordinates
    def to_coordinates(self, q):
        """The factors' coordinates concatenated (names ``"<factor>.<name>"``)."""
        return self.join([f.to_coordinates(qi) for f, qi in zip(self.factors, q)])

    def from_coordinates(self, c):
        """The point with the factors' coordinates concatenated (concrete input: sliced in NumPy, see the factors')."""
        a = concrete_array(c)
        c = a if a is not None else jnp.asarray(c, dtype=float)
        sizes = [len(f.coordinate_names) for f in self.factors]
        if c.shape[-1:] != (sum(sizes),):
            raise ValueError(f"ProductManifold.from_coordinates: coordinates have length {sum(sizes)} "
                             f"({', '.join(self.coordinate_names)}), got shape {c.shape}")
        idx = np.cumsum([0] + sizes)
        return tuple(f.from_coordinates(c[..., a:b]) for f, a, b in zip(self.factors, idx[:-1], idx[1:]))


register_retraction(ProductManifold)(ProductRetraction)
