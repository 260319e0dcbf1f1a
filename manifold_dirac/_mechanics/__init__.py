"""The mechanics: systems, discrete Lagrangians, schemes, the step map, Newton, runs, results.

* :mod:`.system` -- :class:`LagrangeDiracSystem`, exact partials by autodiff;
* :mod:`.rules` -- discrete Lagrangians: quadrature rules along the retraction;
* :mod:`.galerkin` -- the Galerkin rules ``gauss4``, ``gauss6`` (orders 4 and 6);
* :mod:`.schemes` -- the (+) (52), (-) (53) and symmetric schemes, one class each;
* :mod:`.step` -- :class:`StepMap`: ``(system, scheme, rule)`` bound into one step;
* :mod:`.newton` -- the generic compiled Newton solve;
* :mod:`.integrate` -- :class:`Integrator` and :func:`integrate` (compiled chunks of ``lax.scan``);
* :mod:`.trajectory` -- the :class:`Trajectory` result;
* :mod:`.status` -- :class:`Status`, failures as values;
* :mod:`.differentiable` -- :func:`rollout`, a run that ``jax.grad``/``jacfwd``/``vmap`` go through.
"""

from .differentiable import Rollout, rollout
from .integrate import Integrator, RunState, integrate
from .newton import SolverOptions
from .galerkin import GalerkinRule
from .rules import RULES, DiscreteLagrangian, QuadratureRule, get_rule, register_rule
from .schemes import SCHEMES, Minus, Plus, Scheme, Symmetric, get_scheme, register_scheme
from .status import Status
from .step import State, StepMap, StepRecord
from .system import LagrangeDiracSystem
from .trajectory import Trajectory

__all__ = [
    "RULES", "SCHEMES", "DiscreteLagrangian", "GalerkinRule", "Integrator", "LagrangeDiracSystem", "Minus", "Plus", "QuadratureRule", "RunState",
    "Scheme", "SolverOptions", "State", "Status", "StepMap", "StepRecord", "Symmetric", "Trajectory",
    "get_rule", "get_scheme", "integrate", "register_rule", "register_scheme",
    "Rollout", "rollout",
]
