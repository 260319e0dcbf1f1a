"""manifold_dirac: structure-preserving integrators for Lagrange--Dirac systems on manifolds."""

from .errors import (
    ConvergenceError,
    IllPosedStepError,
    NonFiniteError,
    RetractionDomainError,
    StepError,
)
from .manifolds import (
    SE2,
    SO3,
    Chart,
    Euclidean,
    GeomstatsManifold,
    Manifold,
    MatrixLieGroup,
    ProductManifold,
    Sphere2,
)
from .mechanics import (
    DiscreteLagrangian,
    Integrator,
    LagrangeDiracSystem,
    SolverOptions,
    State,
    StepInfo,
    Trajectory,
    integrate,
    register_discrete_lagrangian,
)

__version__ = "0.1.0"

__all__ = [
    "Manifold",
    "Chart",
    "MatrixLieGroup",
    "Euclidean",
    "SO3",
    "SE2",
    "ProductManifold",
    "GeomstatsManifold",
    "Sphere2",
    "LagrangeDiracSystem",
    "DiscreteLagrangian",
    "register_discrete_lagrangian",
    "SolverOptions",
    "Integrator",
    "State",
    "StepInfo",
    "integrate",
    "Trajectory",
    "RetractionDomainError",
    "StepError",
    "ConvergenceError",
    "IllPosedStepError",
    "NonFiniteError",
]
