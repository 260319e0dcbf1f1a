"""The discrete-Lagrangian contract: a new kind of rule is one subclass in one file.

The rule kind below lives in this test file alone: it implements the abstract members of
:class:`~manifold_dirac._mechanics.rules.DiscreteLagrangian` and nothing else, computing
``D1 L_d`` and ``D2 L_d`` by automatic differentiation of ``L_d`` in the retraction's charts
(no code shared with the quadrature rules). Registered by name, it integrates through
``md.integrate`` and agrees with the built-in midpoint rule, whose partials are assembled by
hand from the node geometry; a shifted node breaks the agreement.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._manifolds import SO3
from manifold_dirac._mechanics.rules import (
    RULES,
    DiscreteLagrangian,
    RuleValue,
    StepContext,
    get_rule,
    node_geometry,
    register_rule,
)


class AutodiffNodeRule(DiscreteLagrangian):
    """``L_d = h L(R_{q0}(s xi), xi / h)``, its partials by ``jax.grad`` in the charts at ``q0`` and ``q1``."""

    order = 2
    symmetric = True
    degenerate_safe = True

    def __init__(self, name: str = "autodiff-midpoint", s: float = 0.5):
        self.name, self.s = name, s
        self.nodes = ((s, 1.0),)

    def order_on(self, Q):
        return 2 if Q.retraction.symmetric and self.s == 0.5 else 1

    def symmetric_on(self, Q):
        return bool(Q.retraction.symmetric and self.s == 0.5)

    def value(self, system, q0, xi, h, params=None):
        return h * system.lagrangian(system.Q.retract(q0, self.s * xi), xi / h, params)

    def evaluate(self, system, q0, xi, ctx, stages=None):
        Q, h = system.Q, ctx.h
        q1, J0, J1 = Q.retract_with_inverse_jacobians(q0, xi)
        zero = jnp.zeros(Q.dim)

        def ld(a, b):
            return self.value(system, a, Q.inverse_retract(a, b), h, ctx.params)

        D1 = jax.grad(lambda e: ld(Q.retract(q0, e), q1))(zero)
        D2 = jax.grad(lambda e: ld(q0, Q.retract(q1, e)))(zero)
        g = node_geometry(Q, q0, q1, xi, J0, J1, self.s)
        F = system.force(ctx.t0 + self.s * h, g.point, xi / h, ctx.params)
        F = ctx.u if F is None else (F if ctx.u is None else F + ctx.u)
        fm = zero if F is None else h * (F @ g.P0)
        fp = zero if F is None else h * (F @ g.P1)
        nodes = {x: node_geometry(Q, q0, q1, xi, J0, J1, x) for x in ctx.extra_nodes}
        scale = jnp.maximum(jnp.max(jnp.abs(D1)), jnp.max(jnp.abs(D2)))
        finite = jnp.isfinite(self.value(system, q0, xi, h, ctx.params))
        return RuleValue(q1, J0, J1, D1, D2, fm, fp, scale, finite, nodes)


def _top():
    """A heavy top on SO(3) (exp): a Lagrangian with a potential, no constraint."""
    inertia, mgl = jnp.array([1.0, 2.0, 3.0]), 0.7

    def L(R, w):
        return 0.5 * w @ (inertia * w) - mgl * R[2, 2]

    return md.LagrangeDiracSystem(SO3("exp"), L, name="top")


def _particle():
    """The nonholonomic particle ``dz = y dx`` (a constraint that varies along the step)."""

    def L(q, v):
        return 0.5 * v @ v - 0.5 * q @ q

    return md.LagrangeDiracSystem(md.Euclidean(3), L, constraint=lambda q: jnp.array([[-q[1], 0.0, 1.0]]),
                                  force=lambda t, q, v: -0.1 * v, name="particle")


@pytest.fixture
def new_rule_kind():
    register_rule(AutodiffNodeRule)  # a class with a default constructor: its instance is registered
    try:
        yield
    finally:
        RULES.unregister("autodiff-midpoint")


def test_the_contract_is_the_abstract_members():
    assert DiscreteLagrangian.__abstractmethods__ == {"order_on", "symmetric_on", "value", "evaluate"}

    class Incomplete(DiscreteLagrangian):
        name, order, symmetric, nodes = "incomplete", 1, False, ((0.0, 1.0),)

        def value(self, system, q0, xi, h, params=None):
            return 0.0

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()


def test_optional_members_have_declared_defaults():
    rule = AutodiffNodeRule()
    assert rule.n_stages(3) == 0 and rule.n_stages(3, 2) == 0 and rule.n_curve_stages(3) == 0
    assert rule.constrained_order is None
    x = jnp.arange(3.0)
    assert rule.warm_stages(x, jnp.zeros(0)).shape == (0,) and rule.stored_stages(x, jnp.zeros(0)).shape == (0,)
    # the built-in kinds declare the same members (no getattr probing in the step)
    for name in ("midpoint", "gauss4"):
        r = get_rule(name)
        assert isinstance(r.degenerate_safe, bool) and isinstance(r.order, int)
    assert get_rule("gauss4").n_stages(3, 1) == 4 and get_rule("midpoint").n_stages(3, 1) == 0


TOP = (_top(), np.asarray(SO3().exp(jnp.array([0.3, 0.1, 0.0]))), np.array([0.5, -0.2, 1.0]))
PARTICLE = (_particle(), np.array([0.1, 0.2, 0.0]), np.array([1.0, 0.5, 0.2]))


@pytest.mark.parametrize("case,scheme", [pytest.param(TOP, "symmetric", marks=pytest.mark.slow),
                                         (PARTICLE, "symmetric"), pytest.param(PARTICLE, "minus", marks=pytest.mark.slow)],
                         ids=["top-symmetric", "particle-symmetric", "particle-minus"])
def test_a_rule_kind_defined_in_a_test_integrates_like_midpoint(new_rule_kind, case, scheme):
    """On SO(3) and on a constrained, forced system; with the scheme's extra node and the pre-momentum."""
    system, q0, v0 = case
    kw = dict(v0=v0, h=0.05, n_steps=20, scheme=scheme)
    new = md.integrate(system, q0, discrete_lagrangian="autodiff-midpoint", **kw)
    ref = md.integrate(system, q0, discrete_lagrangian="midpoint", **kw)
    assert new.ok and ref.ok
    np.testing.assert_allclose(new.q, ref.q, rtol=0, atol=1e-11)
    np.testing.assert_allclose(new.p, ref.p, rtol=0, atol=1e-11)
    assert new.meta["discrete_lagrangian"] == "autodiff-midpoint"


@pytest.mark.slow
def test_a_shifted_node_breaks_the_agreement():
    """Sensitivity: the same rule kind with its node at s = 0.45 is another discrete Lagrangian."""
    system, q0, v0 = PARTICLE
    shifted = AutodiffNodeRule("autodiff-shifted", 0.45)
    a = md.integrate(system, q0, v0=v0, h=0.05, n_steps=20, discrete_lagrangian=shifted)
    b = md.integrate(system, q0, v0=v0, h=0.05, n_steps=20, discrete_lagrangian="midpoint")
    assert np.max(np.abs(a.q - b.q)) > 1e-5


def test_the_step_context_carries_the_step():
    ctx = StepContext(0.1)
    assert (ctx.t0, ctx.params, ctx.u, ctx.extra_nodes) == (0.0, None, None, ())
    system = _particle()
    q0, xi = jnp.array([0.1, 0.2, 0.0]), jnp.array([0.05, 0.02, 0.01])
    a = get_rule("midpoint").evaluate(system, q0, xi, StepContext(0.1, 0.0, None, jnp.ones(3), (0.5,)))
    b = get_rule("midpoint").evaluate(system, q0, xi, StepContext(0.1))
    assert 0.5 in a.nodes and 0.5 in b.nodes  # the rule's own node is always there
    np.testing.assert_allclose(a.f_minus - b.f_minus, 0.5 * 0.1 * np.ones(3), atol=1e-15)  # the control u


def test_the_step_and_the_schemes_read_declared_members_only():
    """No ``getattr`` probing of a rule: every optional feature is a member of the contract."""
    import inspect
    import re

    from manifold_dirac._mechanics import schemes, step

    for mod in (step, schemes):
        assert not re.search(r"getattr\((self\.)?rule", inspect.getsource(mod)), mod.__name__
