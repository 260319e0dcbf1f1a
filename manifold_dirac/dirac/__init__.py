"""Dirac structures as checkable objects (pointwise linear algebra).

* :mod:`.linear` -- :class:`LinearSubspace`, :class:`LinearRelation`,
  :class:`LinearDirac` (subspaces of ``V (+) V*`` with the pairing (1)):
  orthogonal complement, Dirac test, direct sum (27), tensor product;
* :mod:`.induced` -- the induced structure (9), the interaction structure
  (26), interconnection (29)--(32), the Dirac differential (18);
* :mod:`.discrete` -- the (+)/(−) discrete structures (46)--(53) in the chart
  of a retraction, and :func:`in_discrete_structure` for computed steps.

``docs/dirac.md`` has the theory with the paper's equation numbers.
"""

from .discrete import (
    DiscreteDiracDifferential,
    DiscreteDiracStructure,
    DiscreteStepResidual,
    discrete_dirac_differential,
    discrete_interconnect,
    in_discrete_structure,
)
from .induced import (
    IntersectionForms,
    LagrangeDiracResidual,
    constraint_forms_of_intersection,
    dirac_differential,
    induced,
    interaction,
    interconnect,
    lagrange_dirac_residual,
)
from .linear import (
    LinearDirac,
    LinearRelation,
    LinearSubspace,
    TwoFormOnDistribution,
    block_diag_forms,
    canonical_two_form,
)

__all__ = [
    "DiscreteDiracDifferential",
    "DiscreteDiracStructure",
    "DiscreteStepResidual",
    "IntersectionForms",
    "LagrangeDiracResidual",
    "LinearDirac",
    "LinearRelation",
    "LinearSubspace",
    "TwoFormOnDistribution",
    "block_diag_forms",
    "canonical_two_form",
    "constraint_forms_of_intersection",
    "dirac_differential",
    "discrete_dirac_differential",
    "discrete_interconnect",
    "in_discrete_structure",
    "induced",
    "interaction",
    "interconnect",
    "lagrange_dirac_residual",
]
