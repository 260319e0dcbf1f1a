"""manifold_dirac: structure-preserving integrators for Lagrange--Dirac systems on manifolds.

One flat namespace: ``import manifold_dirac as md`` reaches every common task.

* manifolds -- :class:`Euclidean`, :class:`SO3`, :class:`SE2`, :class:`SE3`,
  :class:`Sphere2`, :class:`ProductManifold`, your own :class:`MatrixLieGroup`
  or :class:`Manifold`, and their retractions;
* systems -- :class:`LagrangeDiracSystem` (a Lagrangian, constraints, forces,
  parameters), :func:`interconnect` (systems joined by interaction
  constraints), and the ready-made systems in :mod:`manifold_dirac.systems`;
* runs -- :func:`integrate` (a :class:`Trajectory`), :class:`Integrator`
  (step by step), :func:`rollout` (a run that ``jax.grad`` goes through),
  :func:`sweep` (a grid of runs on Dask, as an xarray Dataset);
* results -- :mod:`manifold_dirac.plotting` (``md.plot_trajectory`` and the
  other ``plot_*`` functions), :mod:`manifold_dirac.analysis`
  (:func:`observed_order`, :func:`energy_drift`), :func:`manifold_dirac.dirac.verify`
  (a trajectory checked against the discrete Dirac structure);
* :mod:`manifold_dirac.testing` -- the law checks for your own manifolds;
  ``python -m manifold_dirac`` (or ``manifold-dirac``) -- the command line.

The submodules ``systems``, ``plotting``, ``analysis``, ``study``, ``dirac``,
``testing`` and ``cli`` and the functions that need an optional dependency
(:func:`sweep`, the ``plot_*`` functions) are imported on first use, so
``import manifold_dirac`` stays light. The private modules (``_mechanics``,
``_run``, ``_manifolds``, ``_interconnection``, ``_errors``, ``_config``) are the
implementation: their public names are all here.

The engine is compiled with JAX: importing the package enables float64 in JAX
and the persistent compilation cache (:func:`cache_directory` says where).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version as _dist_version
from typing import Any

from . import _interrupts

with _interrupts.kept_during_import():  # a Ctrl-C while JAX imports is not swallowed by a gc callback
    from . import _config

    _config.configure()

from ._config import cache_directory  # noqa: E402
from ._errors import (  # noqa: E402
    ConvergenceError,
    DegenerateLagrangianWarning,
    IllPosedStepError,
    IllPosedSystemError,
    NonFiniteError,
    RetractionDomainError,
    RunInterrupted,
    StepDomainError,
    StepError,
)
from ._manifolds import (  # noqa: E402
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
    resolve_retraction,
)
from ._mechanics import (  # noqa: E402
    GalerkinRule,
    LagrangeDiracSystem,
    QuadratureRule,
    Scheme,
    SolverOptions,
    State,
    Status,
    StepMap,
    StepRecord,
    get_rule,
    get_scheme,
    register_rule,
    register_scheme,
)
from ._run.integrate import integrate  # noqa: E402
from ._run.integrator import Integrator  # noqa: E402
from ._run.rollout import Rollout, rollout, solve_step  # noqa: E402
from ._run.state import RunState  # noqa: E402
from ._run.trajectory import Trajectory  # noqa: E402
from ._interconnection import (  # noqa: E402
    Interaction,
    InterconnectedSystem,
    equal_velocities,
    interconnect,
    linear_interaction,
    pin_joint,
    rolling_ball_on_plane,
    rolling_without_slipping,
)


def _version() -> str:
    """The installed distribution's version (``pyproject.toml``), the one place it is written."""
    try:
        return _dist_version("manifold_dirac")
    except PackageNotFoundError:  # a source tree on sys.path, never installed
        return "0+unknown"


__version__ = _version()

# submodules imported on first access (``md.systems``, ``md.plotting``, ...)
_SUBMODULES = ("analysis", "cli", "dirac", "plotting", "study", "systems", "testing")
# names imported on first access: name -> module (relative to this package)
_LAZY = {
    "sweep": "._sweep", "save_dataset": "._sweep", "load_dataset": "._sweep", "clear_store": "._sweep",
    "plot_trajectory": ".plotting", "plot_se2_path": ".plotting", "plot_so3_body_axes": ".plotting",
    "plot_angular_momentum_sphere": ".plotting", "plot_energy_and_constraint": ".plotting",
    "plot_convergence": ".plotting", "plot_work_precision": ".plotting",
    "observed_order": ".analysis", "energy_drift": ".analysis",
    "get_example": ".systems.catalog", "Example": ".systems.catalog",
    "example_system": ".study", "retraction_study": ".study", "StudyResult": ".study",
}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value  # later lookups do not come here
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SUBMODULES) | set(_LAZY))


__all__ = [
    "Manifold", "Retraction", "GroupRetraction", "register_retraction", "resolve_retraction",
    "MatrixLieGroup", "Euclidean", "SO3", "SE2", "SE3", "ProductManifold", "GeomstatsManifold", "Sphere2",
    "LagrangeDiracSystem", "QuadratureRule", "GalerkinRule", "register_rule", "get_rule", "Scheme",
    "register_scheme", "get_scheme", "SolverOptions", "StepMap",
    "Integrator", "RunState", "State", "StepRecord", "Status", "integrate", "Trajectory",
    "rollout", "Rollout", "solve_step",
    "interconnect", "Interaction", "InterconnectedSystem", "equal_velocities", "linear_interaction",
    "pin_joint", "rolling_without_slipping", "rolling_ball_on_plane",
    "RetractionDomainError", "StepError", "ConvergenceError", "IllPosedStepError", "IllPosedSystemError",
    "NonFiniteError", "StepDomainError", "RunInterrupted", "DegenerateLagrangianWarning",
    "cache_directory",
    *_LAZY,
    *_SUBMODULES,
]
