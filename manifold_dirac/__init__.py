"""manifold_dirac: structure-preserving integrators for Lagrange--Dirac systems on manifolds."""

from .errors import (
    ConvergenceError,
    DegenerateLagrangianWarning,
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

from .interconnection import (  # noqa: E402  (builds on the mechanics)
    Interaction,
    InterconnectedSystem,
    equal_velocities,
    interconnect,
    linear_interaction,
    rolling_ball_on_plane,
    rolling_without_slipping,
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
    "interconnect",
    "Interaction",
    "InterconnectedSystem",
    "equal_velocities",
    "linear_interaction",
    "rolling_without_slipping",
    "rolling_ball_on_plane",
    "RetractionDomainError",
    "StepError",
    "ConvergenceError",
    "IllPosedStepError",
    "NonFiniteError",
    "DegenerateLagrangianWarning",
]
