"""Configuration manifolds on JAX: one file per manifold, retractions as registered classes."""

from .base import (
    Manifold,
    Retraction,
    RetractionDomainError,
    register_retraction,
    resolve_retraction,
    tree_where,
)
from .euclidean import Euclidean
from .geomstats_adapter import GeomstatsManifold
from .lie_group import Cayley, Exp, GroupRetraction, MatrixLieGroup
from .product import ProductManifold, ProductRetraction, block_diag
from .se2 import SE2
from .se3 import SE3
from .so3 import SO3
from .sphere import Sphere2

__all__ = [
    "Cayley", "Euclidean", "Exp", "GeomstatsManifold", "GroupRetraction", "Manifold", "MatrixLieGroup",
    "ProductManifold", "ProductRetraction", "Retraction", "RetractionDomainError", "SE2", "SE3", "SO3", "Sphere2",
    "block_diag", "register_retraction", "resolve_retraction", "tree_where",
]
