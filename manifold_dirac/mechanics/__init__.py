"""The mechanics: systems, discrete Lagrangians, schemes, the solver, results.

* :mod:`.system` -- :class:`LagrangeDiracSystem` and its exact partials;
* :mod:`.discrete_lagrangians` -- quadrature rules ``L_d`` along the retraction;
* :mod:`.schemes` -- the (+), (-) and symmetric discrete Lagrange--Dirac equations;
* :mod:`.solver` -- the batched Newton solve of one step;
* :mod:`.integrator` -- :class:`Integrator` (step by step) and :func:`integrate`;
* :mod:`.trajectory` -- the :class:`Trajectory` result.
"""

from .discrete_lagrangians import (
    DISCRETE_LAGRANGIANS,
    DiscreteLagrangian,
    get_discrete_lagrangian,
    register_discrete_lagrangian,
)
from .integrator import Integrator, State, StepInfo, integrate
from .schemes import SCHEMES, Scheme, get_scheme
from .solver import SolverOptions
from .system import LagrangeDiracSystem
from .trajectory import Trajectory

__all__ = [
    "DISCRETE_LAGRANGIANS",
    "SCHEMES",
    "DiscreteLagrangian",
    "Integrator",
    "LagrangeDiracSystem",
    "Scheme",
    "SolverOptions",
    "State",
    "StepInfo",
    "Trajectory",
    "get_discrete_lagrangian",
    "get_scheme",
    "integrate",
    "register_discrete_lagrangian",
]
