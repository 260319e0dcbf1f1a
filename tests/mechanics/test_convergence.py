"""Orders of convergence from regression slopes over >= 3 step sizes (compiled engine).

Each case compares the observed order with the order the integrator
declares (``Integrator.order``); where the declared order is only a lower
bound (a constraint constant in the frame), the test says so.

Ported from the numpy engine's ``tests/mechanics/test_convergence.py`` with
every case, assertion and tolerance; the systems are the compiled engine's
bundled systems, built once (``tests/next/systems/bundled.py``), and the Lagrangians
written here are for one point in ``jax.numpy``. A new discrete Lagrangian
is a :class:`QuadratureRule` (the numpy engine's ``DiscreteLagrangian``).

Compile time, not run time, is the cost here: every (system, scheme, rule)
is one compiled program (~2-9 s each on two cores, SE(2) the dearest). The
CI set keeps, for every test but the (+)/(-) one on SE(2), the cases that
share their compiled step with the bundled-systems tests (symmetric scheme,
midpoint rule) and a few first-order witnesses; the other cases are marked
``slow`` (``pytest -m slow``) and assert exactly the same.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac.analysis import observed_order
from manifold_dirac._manifolds import SO3, Euclidean
from manifold_dirac._mechanics.rules import QuadratureRule
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import (
    chaplygin_sled_reference,
    damped_oscillator_exact,
    harmonic_oscillator_exact,
    inclined_knife_edge_exact,
)

from ..systems.bundled import new
from .mech_helpers import declared, heavy_top_reference, run_errors

HS = np.array([0.04, 0.02, 0.01])
slow = pytest.mark.slow


def cases(*params, ci=()):
    """``params`` for ``parametrize``, all but those in ``ci`` marked slow."""
    out = []
    for p in params:
        values = p if isinstance(p, tuple) else (p,)
        out.append(p if p in ci else pytest.param(*values, marks=slow))
    return out


# ---------------------------------------------------------------- Euclidean
OSCILLATOR = [(s, r, o) for s in ("plus", "minus", "symmetric")
              for r, o in (("midpoint", 2), ("trapezoid", 2), ("rectangle+", 1), ("rectangle-", 1))]


# unconstrained, plus and minus are one program (and symmetric too with the midpoint rule)
@pytest.mark.parametrize("scheme,rule,order", cases(*OSCILLATOR, ci=[
    ("plus", "midpoint", 2), ("minus", "midpoint", 2), ("symmetric", "midpoint", 2),
    ("plus", "rectangle+", 1), ("minus", "rectangle+", 1)]))
def test_oscillator_orders(scheme, rule, order):
    sysm = new("harmonic_oscillator")  # harmonic_oscillator(2)
    q0, v0 = np.array([1.0, 0.0]), np.array([0.0, 0.5])
    qT, _ = harmonic_oscillator_exact(2.0, q0, v0)
    errs = run_errors(sysm, q0, v0, 2.0, HS, lambda tr: np.abs(tr.q[-1] - qT).max(),
                      scheme=scheme, discrete_lagrangian=rule)
    assert declared(sysm, scheme, rule) == order
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


@pytest.mark.parametrize("rule,order", cases(("midpoint", 2), ("trapezoid", 2), ("rectangle+", 1),
                                              ci=[("midpoint", 2)]))
def test_forced_damped_oscillator_orders(rule, order):
    """Forces by the discrete Lagrange-d'Alembert-Pontryagin principle (24)."""
    sysm = new("damped_oscillator")  # damped_oscillator(damping=0.3)
    exact = damped_oscillator_exact(2.0, 1.0, 0.0, damping=0.3)
    errs = run_errors(sysm, np.array([1.0]), np.array([0.0]), 2.0, HS,
                      lambda tr: abs(tr.q[-1, 0] - exact), discrete_lagrangian=rule)
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


def knife_edge_euclidean(m=1.0, J=0.5, g=9.81, alpha=0.3):
    """The inclined knife edge in coordinates (x, y, theta): A(q) varies with q."""
    w = m * g * float(np.sin(alpha))

    def L(q, v):
        return 0.5 * m * (v[0] ** 2 + v[1] ** 2) + 0.5 * J * v[2] ** 2 + w * q[0]

    def A(q):
        return jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0 * q[2]])[None, :]

    return LagrangeDiracSystem(Euclidean(3), L, constraint=A, name="knife_edge_xy")


KNIFE_XY = knife_edge_euclidean()


@pytest.mark.parametrize(
    "scheme,rule,order",
    cases(("plus", "midpoint", 1), ("minus", "midpoint", 1), ("plus", "rectangle+", 1),
          ("minus", "rectangle-", 1), ("symmetric", "midpoint", 2), ("symmetric", "trapezoid", 2),
          ci=[("plus", "midpoint", 1), ("symmetric", "midpoint", 2)]),
)
def test_knife_edge_euclidean_orders(scheme, rule, order):
    """The (+)/(-) constraint is first order even with the midpoint L_d."""
    exact = inclined_knife_edge_exact(2.0)
    errs = run_errors(KNIFE_XY, np.zeros(3), np.array([0.0, 0.0, 1.0]), 2.0, HS,
                      lambda tr: np.abs(tr.q[-1] - exact).max(), scheme=scheme, discrete_lagrangian=rule)
    assert declared(KNIFE_XY, scheme, rule) == order
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


# -------------------------------------------------------------------- SO(3)
@pytest.mark.parametrize(
    "retraction,scheme,rule,order",
    cases(*[(r, *c) for r in ("exp", "cayley")
            for c in (("symmetric", "midpoint", 2), ("symmetric", "trapezoid", 2), ("plus", "rectangle+", 1),
                      ("minus", "rectangle-", 1))],
          ci=[("exp", "symmetric", "midpoint", 2)]),
)
def test_heavy_top_against_solve_ivp(retraction, scheme, rule, order):
    top = new("heavy_top", retraction=retraction)
    G = SO3()
    R0 = np.asarray(G.exp(np.array([0.3, 0.1, 0.0])))
    w0 = np.array([0.5, -0.2, 2.0])
    T = 1.0
    Rref = heavy_top_reference(T, R0, w0)
    hs = np.array([0.01, 0.005, 0.0025])
    errs = run_errors(top, R0, w0, T, hs, lambda tr: np.linalg.norm(np.asarray(G.log(Rref.T @ tr.q[-1]))),
                      scheme=scheme, discrete_lagrangian=rule)
    assert declared(top, scheme, rule) == order
    assert observed_order(hs, errs) == pytest.approx(order, abs=0.15)


# -------------------------------------------------------------------- SE(2)
@pytest.mark.parametrize(
    "retraction,rule",
    cases(*[(r, q) for r in ("exp", "cayley", "so2xr2") for q in ("midpoint", "trapezoid")],
          ci=[("exp", "midpoint")]),
)
def test_inclined_knife_edge_se2_symmetric_is_second_order(retraction, rule):
    ke = new("inclined_knife_edge", retraction=retraction)
    exact = inclined_knife_edge_exact(2.0)
    errs = run_errors(ke, ke.Q.identity(), np.array([1.0, 0.0, 0.0]), 2.0, HS,
                      lambda tr: np.abs(np.asarray(ke.Q.to_coordinates(tr.q[-1])) - exact).max(),
                      discrete_lagrangian=rule)
    assert observed_order(HS, errs) == pytest.approx(2.0, abs=0.1)


@pytest.mark.parametrize("scheme", cases("plus", "minus"))  # four SE(2) programs of their own
def test_plus_minus_on_se2(scheme):
    """On SE(2) the knife-edge constraint v_y = 0 is constant in the body frame
    and the exp retraction has constant body velocity, so A(q_k) xi = A(c) xi:
    (+)/(-) are second order there (declared 1 is a lower bound), while with
    the so2xr2 retraction they are first order."""
    exact = inclined_knife_edge_exact(2.0)
    orders = {}
    for ret in ("exp", "so2xr2"):
        ke = new("inclined_knife_edge", retraction=ret)
        errs = run_errors(ke, ke.Q.identity(), np.array([1.0, 0.0, 0.0]), 2.0, HS,
                          lambda tr: np.abs(np.asarray(ke.Q.to_coordinates(tr.q[-1])) - exact).max(),
                          scheme=scheme)
        orders[ret] = observed_order(HS, errs)
        assert declared(ke, scheme, "midpoint") == 1
    assert orders["exp"] == pytest.approx(2.0, abs=0.1)
    assert orders["so2xr2"] == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("retraction,order", cases(("exp", 2), ("cayley", 2), ("so2xr2", 1),
                                                    ci=[("exp", 2), ("so2xr2", 1)]))
def test_chaplygin_sled_order_depends_on_retraction_symmetry(retraction, order):
    """so2xr2 is not a symmetric retraction (tau(-xi) != tau(xi)^-1): with the
    anisotropic sled Lagrangian the midpoint rule drops to first order, as
    ``QuadratureRule.order_on`` declares."""
    sled = new("chaplygin_sled", retraction=retraction)
    ref = chaplygin_sled_reference([2.0])[0]
    errs = run_errors(sled, sled.Q.identity(), np.array([1.0, 1.0, 0.0]), 2.0, HS,
                      lambda tr: np.abs(np.asarray(sled.Q.to_coordinates(tr.q[-1])) - ref).max())
    assert declared(sled, "symmetric", "midpoint") == order
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


@pytest.mark.slow
def test_symmetric_scheme_finds_the_midpoint_node_of_any_rule():
    """A rule whose midpoint node is not listed last (Simpson's rule)."""
    simpson = QuadratureRule("simpson-test", ((0.5, 4 / 6), (0.0, 1 / 6), (1.0, 1 / 6)), order=2,
                             symmetric=True)
    exact = inclined_knife_edge_exact(2.0)
    errs = run_errors(KNIFE_XY, np.zeros(3), np.array([0.0, 0.0, 1.0]), 2.0, HS,
                      lambda tr: np.abs(tr.q[-1] - exact).max(), discrete_lagrangian=simpson)
    assert observed_order(HS, errs) == pytest.approx(2, abs=0.1)
