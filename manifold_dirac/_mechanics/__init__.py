"""The mechanics: systems, discrete Lagrangians, schemes, the step map, Newton, runs, results.

* :mod:`.system` -- :class:`LagrangeDiracSystem`, exact partials by autodiff;
* :mod:`.rules` -- discrete Lagrangians: quadrature rules along the retraction;
* :mod:`.galerkin` -- the Galerkin rules ``gauss4``, ``gauss6`` (orders 4 and 6);
* :mod:`.schemes` -- the (+) (52), (-) (53) and symmetric schemes, one class each;
* :mod:`.step` -- :class:`StepMap`: ``(system, scheme, rule)`` bound into one step;
* :mod:`.newton` -- the generic compiled Newton solve;
* :mod:`.status` -- :class:`Status`, failures as values.

The runs (:class:`~manifold_dirac._run.integrator.Integrator`,
:func:`~manifold_dirac._run.integrate.integrate`,
:func:`~manifold_dirac._run.rollout.rollout`, the
:class:`~manifold_dirac._run.trajectory.Trajectory`) are one floor up, in
:mod:`manifold_dirac._run`.
"""

from .newton import SolverOptions
from .galerkin import GalerkinRule
from .rules import RULES, DiscreteLagrangian, QuadratureRule, get_rule, register_rule
from .schemes import SCHEMES, Minus, Plus, Scheme, Symmetric, get_scheme, register_scheme
from .status import Status
from .step import State, StepMap, StepRecord
from .system import LagrangeDiracSystem

__all__ = [
    "RULES", "SCHEMES", "DiscreteLagrangian", "GalerkinRule", "LagrangeDiracSystem", "Minus", "Plus", "QuadratureRule",
    "Scheme", "SolverOptions", "State", "Status", "StepMap", "StepRecord", "Symmetric",
    "get_rule", "get_scheme", "register_rule", "register_scheme",
]
