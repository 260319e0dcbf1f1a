"""``verify`` checks a trajectory of any registered scheme, through the scheme object's own members.

A scheme that declares no discrete Dirac structure is checked against its own step equations
(discrete constraint, reaction, reported momentum) with the route's independent ``L_d`` partials
and forces. The scheme below is defined here only: its discrete constraint is taken at a quarter
of the retraction curve. The built-in schemes, stripped of their declared structure, go through the
same generic check and pass it on their own trajectories (the pre-momentum path included); each
check fails on a trajectory of another scheme and on a perturbed momentum.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac.dirac import dirac_route, verify
from manifold_dirac._mechanics.schemes import SCHEMES, Minus, Plus, Scheme, Symmetric, register_scheme


class Quarter(Scheme):
    """``c(xi) = A(c) J_xi(xi/4) xi`` at ``c = R_{q_k}(xi/4)``, reaction ``A(q_k)^T``."""

    name = "quarter"
    order = 1
    symmetric = False
    extra_nodes = (0.25,)

    def discrete_constraint(self, system, q0, xi, ld, params):
        g = ld.nodes[0.25]
        return system.one_form_matrix(g.point, params) @ (g.Jxi @ xi)


def _generic(base: type[Scheme]) -> type[Scheme]:
    """The built-in ``base`` without its declared structure: verify falls back to its equations."""
    return type(f"Generic{base.__name__}", (base,), {"name": f"generic-{base.name}", "dirac_sign": None})


def _particle():
    """The nonholonomic particle ``dz = y dx``, forced: the constraint varies along the step."""

    def L(q, v):
        return 0.5 * v @ v - 0.5 * q @ q

    return md.LagrangeDiracSystem(md.Euclidean(3), L, constraint=lambda q: jnp.array([[-q[1], 0.0, 1.0]]),
                                  force=lambda t, q, v: -0.1 * v, name="particle")


PARTICLE = _particle()
START = dict(q0=np.array([0.1, 0.2, 0.0]), v0=np.array([1.0, 0.5, 0.2]), h=0.05, n_steps=25)


@pytest.fixture(scope="module")
def quarter():
    register_scheme(Quarter)
    try:
        yield md.integrate(PARTICLE, scheme="quarter", **START)
    finally:
        SCHEMES.unregister("quarter")


@pytest.fixture(scope="module")
def runs():
    return {s: md.integrate(PARTICLE, scheme=s, **START) for s in ("plus", "minus", "symmetric")}


def test_a_new_scheme_is_verified_through_its_own_members(quarter):
    assert quarter.ok and quarter.meta["scheme"] == "quarter"
    ver = verify(PARTICLE, quarter)
    assert ver.checked == "scheme equations" and ver.scheme == "quarter"
    assert ver.max < 1e-12, ver.max


@pytest.mark.slow
def test_the_new_scheme_is_not_another_one(quarter, runs):
    """Sensitivity: the quarter-point constraint is not the midpoint's, nor (+)'s at q_k."""
    assert verify(PARTICLE, runs["symmetric"], scheme=Quarter()).constraint.max() > 1e-6
    assert verify(PARTICLE, quarter, scheme="symmetric").max > 1e-6
    assert verify(PARTICLE, quarter, scheme="plus").max > 1e-6


def test_the_new_scheme_sees_a_perturbed_momentum(quarter):
    bad_p = np.array(quarter.p)
    bad_p[7, 0] += 1e-6

    class Perturbed:
        q, p, v, t, meta = quarter.q, bad_p, quarter.v, quarter.t, quarter.meta

    ver = verify(PARTICLE, Perturbed())
    assert ver.membership[7] > 1e-7 and np.argmax(ver.membership) == 7


@pytest.mark.parametrize("base", [Plus, Minus, Symmetric], ids=lambda c: c.name)
def test_the_generic_check_passes_the_builtin_schemes(base, runs):
    """The built-ins through the generic path, on their own trajectories (for (−) the pre-momentum,
    its step 0 found by least squares), and through their declared structures."""
    tr = runs[base.name]
    generic = verify(PARTICLE, tr, scheme=_generic(base)())
    assert generic.checked == "scheme equations"
    assert generic.max < 1e-12, generic.max
    declared = verify(PARTICLE, tr)
    assert declared.checked.startswith("dirac(") and declared.max < 1e-12


@pytest.mark.parametrize("base,other", [(Minus, "plus"), (Plus, "minus"), (Symmetric, "plus")],
                         ids=["minus-on-plus", "plus-on-minus", "symmetric-on-plus"])
def test_the_generic_check_fails_another_schemes_trajectory(base, other, runs):
    assert verify(PARTICLE, runs[other], scheme=_generic(base)()).max > 1e-6


def test_the_route_refuses_a_scheme_without_a_structure(quarter):
    with pytest.raises(ValueError, match="declares no discrete Dirac structure"):
        dirac_route(PARTICLE, START["q0"], v0=START["v0"], h=0.05, n_steps=1, scheme=Quarter())
    with pytest.raises(ValueError, match="unknown scheme 'leapfrog'; valid: 'plus', 'minus', 'symmetric'"):
        verify(PARTICLE, quarter, scheme="leapfrog")


@pytest.mark.slow
def test_a_per_subsystem_rule_is_verified_with_its_subsystems_nodes():
    """The discrete Lagrangian of an interconnection, discretized subsystem by subsystem, is read
    through its rules (one node set for all: the route evaluates every L_d^i at the same nodes)."""
    from manifold_dirac._interconnection import SubsystemDiscreteLagrangian
    from manifold_dirac.systems import interconnected as S

    sysm = S.mass_spring_torn()
    rule = SubsystemDiscreteLagrangian(sysm, "trapezoid")
    tr = md.integrate(sysm, (np.array([0.3, -0.2]), np.array([-0.2])), v0=np.array([0.1, 0.4, 0.4]), h=0.05,
                      n_steps=10, discrete_lagrangian=rule)
    assert verify(sysm, tr, discrete_lagrangian=rule).max < 1e-12
    assert verify(sysm, tr, discrete_lagrangian="midpoint").max > 1e-8  # another L_d: seen
    with pytest.raises(ValueError, match="different nodes are not supported"):
        verify(sysm, tr, discrete_lagrangian=SubsystemDiscreteLagrangian(sysm, ["midpoint", "trapezoid"]))
