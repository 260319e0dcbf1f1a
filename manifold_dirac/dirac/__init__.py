"""Dirac structures as checkable objects (pointwise linear algebra).

* :mod:`.linear` -- :class:`LinearSubspace`, :class:`LinearRelation`,
  :class:`LinearDirac` (subspaces of ``V (+) V*`` with the pairing (1)):
  orthogonal complement, Dirac test, direct sum (27), tensor product;
* :mod:`.induced` -- the induced structure (9), the interaction structure
  (26), interconnection (29)--(32), the Dirac differential (18);
* :mod:`.discrete` -- the (+)/(−) discrete structures (46)--(53) in the chart
  of a retraction, and :func:`in_discrete_structure` for computed steps;
* :mod:`.route` -- the library's verification layer: :func:`dirac_route`
  solves each step of a (possibly interconnected) system as the membership
  ``(X_d, 𝔇^±L_d) in D^{d±}`` in the structure assembled from the
  subsystems' own structures (independent of the integrator's step code),
  and :func:`verify` measures a computed trajectory against it step by step.

The structure-level interconnections are :func:`interconnect_structures`
(continuous, (29)) and :func:`interconnect_discrete_structures`; the
system-level one is :func:`manifold_dirac.interconnect`.

``docs/dirac.md`` has the theory with the paper's equation numbers.
"""

from .discrete import (
    DiscreteDiracDifferential,
    DiscreteDiracStructure,
    DiscreteStepResidual,
    discrete_dirac_differential,
    interconnect_discrete_structures,
    in_discrete_structure,
)
from .induced import (
    IntersectionForms,
    LagrangeDiracResidual,
    constraint_forms_of_intersection,
    dirac_differential,
    induced,
    interaction,
    interconnect_structures,
    lagrange_dirac_residual,
)
from .route import (
    DiracRouteResult,
    StepVerification,
    constraint_along_retraction,
    dirac_route,
    discrete_structure_of,
    verify,
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
    "DiracRouteResult",
    "StepVerification",
    "constraint_along_retraction",
    "dirac_route",
    "discrete_structure_of",
    "verify",
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
    "interconnect_discrete_structures",
    "in_discrete_structure",
    "induced",
    "interaction",
    "interconnect_structures",
    "lagrange_dirac_residual",
]
