"""manifold_dirac: structure-preserving integrators for Lagrange--Dirac systems on manifolds.

The engine is compiled with JAX: importing the package enables float64 in JAX
and the persistent compilation cache (:mod:`manifold_dirac.config`).
"""

from . import config as _config

_config.configure()

from .errors import (  # noqa: E402
    ConvergenceError,
    DegenerateLagrangianWarning,
    IllPosedStepError,
    NonFiniteError,
    RetractionDomainError,
    RunInterrupted,
    StepDomainError,
    StepError,
)
from .manifolds import (  # noqa: E402
    SE2,
    SE3,
    SO3,
    Euclidean,
    GeomstatsManifold,
    GroupRetraction,
    Manifold,
    MatrixLieGroup,
    ProductManifold,
    Retraction,
    Sphere2,
    register_retraction,
)
from .mechanics import (  # noqa: E402
    Integrator,
    LagrangeDiracSystem,
    QuadratureRule,
    RunState,
    Scheme,
    SolverOptions,
    State,
    Status,
    StepRecord,
    Trajectory,
    integrate,
    register_rule,
    Rollout,
    rollout,
    register_scheme,
)
from .interconnection import (  # noqa: E402
    Interaction,
    InterconnectedSystem,
    equal_velocities,
    interconnect,
    linear_interaction,
    rolling_ball_on_plane,
    rolling_without_slipping,
)

__version__ = "0.2.0"

__all__ = [
    "Manifold", "Retraction", "GroupRetraction", "register_retraction", "MatrixLieGroup", "Euclidean",
    "SO3", "SE2", "SE3", "ProductManifold", "GeomstatsManifold", "Sphere2",
    "LagrangeDiracSystem", "QuadratureRule", "register_rule", "Scheme", "register_scheme", "SolverOptions",
    "Integrator", "RunState", "State", "StepRecord", "Status", "integrate", "Trajectory", "rollout", "Rollout",
    "interconnect", "Interaction", "InterconnectedSystem", "equal_velocities", "linear_interaction",
    "rolling_without_slipping", "rolling_ball_on_plane",
    "RetractionDomainError", "StepError", "ConvergenceError", "IllPosedStepError", "NonFiniteError",
    "StepDomainError", "RunInterrupted", "DegenerateLagrangianWarning",
]
