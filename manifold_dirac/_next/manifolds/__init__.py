"""Configuration manifolds on JAX: one file per manifold, retractions as registered classes."""

from .base import Manifold, Retraction, RetractionDomainError, register_retraction, tree_where
from .euclidean import Euclidean
from .lie_group import Cayley, Exp, GroupRetraction, MatrixLieGroup
from .so3 import SO3

__all__ = [
    "Cayley", "Euclidean", "Exp", "GroupRetraction", "Manifold", "MatrixLieGroup", "Retraction",
    "RetractionDomainError", "SO3", "register_retraction", "tree_where",
]
