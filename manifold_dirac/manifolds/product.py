"""Products ``Q1 x Q2 x ...`` with the product retraction (factor by factor).

Points are tuples of the factors' points; tangent vectors and covectors are
the concatenation of the factors' frame coordinates; every Jacobian is
block diagonal. The product retraction is what makes "discretize the
subsystems, then interconnect" equal "interconnect, then discretize"
(``docs/interconnection.md``).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .base import Manifold

__all__ = ["ProductManifold"]


def _block_diag(blocks: Sequence[np.ndarray], dims: Sequence[int]) -> np.ndarray:
    batch = np.broadcast_shapes(*(b.shape[:-2] for b in blocks))
    n = sum(dims)
    dtype = np.result_type(*blocks)
    out = np.zeros((*batch, n, n), dtype=dtype)
    i = 0
    for b, d in zip(blocks, dims):
        out[..., i : i + d, i : i + d] = b
        i += d
    return out


class ProductManifold(Manifold):
    """The product of manifolds with the product retraction.

    Parameters
    ----------
    *factors : Manifold
        At least one factor. The frame coordinates of the product are the
        factors' coordinates concatenated in this order.

    Attributes
    ----------
    factors : tuple of Manifold
    dims : tuple of int
        The factors' dimensions.
    offsets : tuple of int
        Start index of each factor's block in frame coordinates.
    """

    retractions = ("product",)

    def __init__(self, *factors: Manifold):
        if not factors or not all(isinstance(f, Manifold) for f in factors):
            raise ValueError("ProductManifold: give one or more Manifold instances as factors")
        self.factors = tuple(factors)
        self.dims = tuple(f.dim for f in factors)
        self.offsets = tuple(int(x) for x in np.cumsum((0,) + self.dims[:-1]))
        self.dim = int(sum(self.dims))
        self.point_shape = ()
        self.retraction = "product"
        self.symmetric_retraction = all(f.symmetric_retraction for f in factors)
        self.coordinate_names = tuple(
            f"{i}.{n}" for i, f in enumerate(factors) for n in f.coordinate_names
        )

    def __repr__(self) -> str:
        return "ProductManifold(" + ", ".join(repr(f) for f in self.factors) + ")"

    def _key(self) -> tuple:
        return ("ProductManifold",) + tuple(f._key() for f in self.factors)

    # -------------------------------------------------------------- slicing
    def slice(self, i: int) -> slice:
        """The slice of factor ``i``'s block in a tangent vector or covector."""
        return slice(self.offsets[i], self.offsets[i] + self.dims[i])

    def split(self, v: np.ndarray) -> tuple[np.ndarray, ...]:
        """Split a tangent vector or covector ``(*batch, dim)`` into the factors' parts."""
        v = np.asarray(v)
        return tuple(v[..., self.slice(i)] for i in range(len(self.factors)))

    def join(self, parts: Sequence[np.ndarray]) -> np.ndarray:
        """Concatenate the factors' parts into one ``(*batch, dim)`` array."""
        parts = [np.asarray(p) for p in parts]
        batch = np.broadcast_shapes(*(p.shape[:-1] for p in parts))
        return np.concatenate([np.broadcast_to(p, (*batch, p.shape[-1])) for p in parts], -1)

    # -------------------------------------------------------------- manifold
    def retract(self, q, xi):
        return tuple(f.retract(qi, xii) for f, qi, xii in zip(self.factors, q, self.split(xi)))

    def inverse_retract(self, q0, q1):
        return self.join([f.inverse_retract(a, b) for f, a, b in zip(self.factors, q0, q1)])

    def inverse_retract_jacobians(self, q0, q1):
        J = [f.inverse_retract_jacobians(a, b) for f, a, b in zip(self.factors, q0, q1)]
        return _block_diag([j[0] for j in J], self.dims), _block_diag([j[1] for j in J], self.dims)

    def inverse_retract_with_jacobians(self, q0, q1):
        """``(xi, J0, J1)`` computed together."""
        out = [f.inverse_retract_with_jacobians(a, b) for f, a, b in zip(self.factors, q0, q1)]
        return (
            self.join([o[0] for o in out]),
            _block_diag([o[1] for o in out], self.dims),
            _block_diag([o[2] for o in out], self.dims),
        )

    def retract_with_inverse_jacobians(self, q0, xi):
        out = [f.retract_with_inverse_jacobians(a, x) for f, a, x in zip(self.factors, q0, self.split(xi))]
        return (
            tuple(o[0] for o in out),
            _block_diag([o[1] for o in out], self.dims),
            _block_diag([o[2] for o in out], self.dims),
        )

    def retract_jacobians(self, q, xi):
        J = [f.retract_jacobians(qi, xii) for f, qi, xii in zip(self.factors, q, self.split(xi))]
        return _block_diag([j[0] for j in J], self.dims), _block_diag([j[1] for j in J], self.dims)

    def ambient_tangent(self, q, eta):
        return tuple(f.ambient_tangent(qi, e) for f, qi, e in zip(self.factors, q, self.split(eta)))

    def broadcast_point(self, q, batch_shape):
        return tuple(f.broadcast_point(qi, batch_shape) for f, qi in zip(self.factors, q))

    def stack_points(self, points):
        return tuple(f.stack_points([p[i] for p in points]) for i, f in enumerate(self.factors))

    def index_point(self, q, index):
        return tuple(f.index_point(qi, index) for f, qi in zip(self.factors, q))

    def random_point(self, rng, batch_shape=()):
        return tuple(f.random_point(rng, batch_shape) for f in self.factors)

    def sample_tangent(self, rng, batch_shape, regime):
        return self.join([f.sample_tangent(rng, batch_shape, regime) for f in self.factors])

    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q"):
        if not isinstance(q, (tuple, list)) or len(q) != len(self.factors):
            raise ValueError(
                f"{name}: a point of a product of {len(self.factors)} manifolds is a tuple of "
                f"{len(self.factors)} factor points, got {type(q).__name__}"
                + (f" of length {len(q)}" if isinstance(q, (tuple, list)) else "")
            )
        return tuple(f.check_point(qi, atol, f"{name}[{i}]") for i, (f, qi) in enumerate(zip(self.factors, q)))

    def batch_shape(self, q):
        return np.broadcast_shapes(*(f.batch_shape(qi) for f, qi in zip(self.factors, q)))

    def to_coordinates(self, q):
        return self.join([f.to_coordinates(qi) for f, qi in zip(self.factors, q)])

    def from_coordinates(self, c):
        c = np.asarray(c, dtype=float)
        sizes = [len(f.coordinate_names) for f in self.factors]
        if c.shape[-1:] != (sum(sizes),):
            raise ValueError(f"ProductManifold coordinates have length {sum(sizes)}, got {c.shape}")
        idx = np.cumsum([0] + sizes)
        return tuple(f.from_coordinates(c[..., a:b]) for f, a, b in zip(self.factors, idx[:-1], idx[1:]))

