"""Configuration manifolds: one file per manifold, the base and the product.

* :mod:`.base` -- the abstract :class:`Manifold` and :class:`Chart`;
* :mod:`.lie_group` -- :class:`MatrixLieGroup`, the shared Lie-group layer;
* :mod:`.euclidean`, :mod:`.so3`, :mod:`.se2` -- concrete manifolds;
* :mod:`.product` -- :class:`ProductManifold`;
* :mod:`.geomstats_adapter` -- :class:`GeomstatsManifold` (needs the
  ``geomstats`` extra), e.g. the sphere S^2.
"""

from .base import Chart, Manifold
from .euclidean import Euclidean
from .geomstats_adapter import GeomstatsManifold, Sphere2  # geomstats itself is imported on first use
from .lie_group import MatrixLieGroup
from .product import ProductManifold
from .se2 import SE2
from .so3 import SO3

__all__ = [
    "Chart",
    "Manifold",
    "MatrixLieGroup",
    "Euclidean",
    "SO3",
    "SE2",
    "ProductManifold",
    "GeomstatsManifold",
    "Sphere2",
]
