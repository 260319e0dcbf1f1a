"""Orders of convergence from regression slopes over >= 3 step sizes.

Each case compares the observed order with the order the integrator
declares (``Integrator.order``); where the declared order is only a lower
bound (a constraint constant in the frame), the test says so.
"""

import numpy as np
import pytest
from mech_helpers import heavy_top_reference, run_errors

from manifold_dirac import SO3, Euclidean, Integrator, LagrangeDiracSystem
from manifold_dirac import systems as S
from manifold_dirac.analysis import observed_order

HS = np.array([0.04, 0.02, 0.01])


def declared(system, scheme, rule):
    return Integrator(system, 0.1, scheme, rule).order


# ---------------------------------------------------------------- Euclidean
@pytest.mark.parametrize("scheme", ["plus", "minus", "symmetric"])
@pytest.mark.parametrize("rule,order", [("midpoint", 2), ("trapezoid", 2), ("rectangle+", 1), ("rectangle-", 1)])
def test_oscillator_orders(scheme, rule, order):
    sysm = S.harmonic_oscillator(2)
    q0, v0 = np.array([1.0, 0.0]), np.array([0.0, 0.5])
    qT, _ = S.harmonic_oscillator_exact(2.0, q0, v0)
    errs = run_errors(sysm, q0, v0, 2.0, HS, lambda tr: np.abs(tr.q[-1] - qT).max(),
                      scheme=scheme, discrete_lagrangian=rule)
    assert declared(sysm, scheme, rule) == order
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


@pytest.mark.parametrize("rule,order", [("midpoint", 2), ("trapezoid", 2), ("rectangle+", 1)])
def test_forced_damped_oscillator_orders(rule, order):
    """Forces by the discrete Lagrange-d'Alembert-Pontryagin principle (24)."""
    sysm = S.damped_oscillator(damping=0.3)
    exact = S.damped_oscillator_exact(2.0, 1.0, 0.0, damping=0.3)
    errs = run_errors(sysm, np.array([1.0]), np.array([0.0]), 2.0, HS,
                      lambda tr: abs(tr.q[-1, 0] - exact), discrete_lagrangian=rule)
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


def knife_edge_euclidean(m=1.0, J=0.5, g=9.81, alpha=0.3):
    """The inclined knife edge in coordinates (x, y, theta): A(q) varies with q."""

    def L(q, v):
        return 0.5 * m * (v[..., 0] ** 2 + v[..., 1] ** 2) + 0.5 * J * v[..., 2] ** 2 + m * g * np.sin(alpha) * q[..., 0]

    def A(q):
        th = q[..., 2]
        return np.stack([np.sin(th), -np.cos(th), 0 * th], -1)[..., None, :]

    return LagrangeDiracSystem(Euclidean(3), L, constraint=A, name="knife_edge_xy")


@pytest.mark.parametrize(
    "scheme,rule,order",
    [("plus", "midpoint", 1), ("minus", "midpoint", 1), ("plus", "rectangle+", 1), ("minus", "rectangle-", 1),
     ("symmetric", "midpoint", 2), ("symmetric", "trapezoid", 2)],
)
def test_knife_edge_euclidean_orders(scheme, rule, order):
    """The trap: the (+)/(-) constraint is first order even with the midpoint L_d."""
    sysm = knife_edge_euclidean()
    exact = S.inclined_knife_edge_exact(2.0)
    errs = run_errors(sysm, np.zeros(3), np.array([0.0, 0.0, 1.0]), 2.0, HS,
                      lambda tr: np.abs(tr.q[-1] - exact).max(), scheme=scheme, discrete_lagrangian=rule)
    assert declared(sysm, scheme, rule) == order
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


# -------------------------------------------------------------------- SO(3)
@pytest.mark.parametrize("retraction", ["exp", "cayley"])
@pytest.mark.parametrize(
    "scheme,rule,order",
    [("symmetric", "midpoint", 2), ("symmetric", "trapezoid", 2), ("plus", "rectangle+", 1), ("minus", "rectangle-", 1)],
)
def test_heavy_top_against_solve_ivp(retraction, scheme, rule, order):
    top = S.heavy_top(retraction=retraction)
    G = SO3()
    R0 = G.exp(np.array([0.3, 0.1, 0.0]))
    w0 = np.array([0.5, -0.2, 2.0])
    T = 1.0
    Rref = heavy_top_reference(T, R0, w0)
    hs = np.array([0.01, 0.005, 0.0025])
    errs = run_errors(top, R0, w0, T, hs, lambda tr: np.linalg.norm(G.log(Rref.T @ tr.q[-1])),
                      scheme=scheme, discrete_lagrangian=rule)
    assert declared(top, scheme, rule) == order
    assert observed_order(hs, errs) == pytest.approx(order, abs=0.15)


# -------------------------------------------------------------------- SE(2)
@pytest.mark.parametrize("retraction", ["exp", "cayley", "so2xr2"])
@pytest.mark.parametrize("rule", ["midpoint", "trapezoid"])
def test_inclined_knife_edge_se2_symmetric_is_second_order(retraction, rule):
    ke = S.inclined_knife_edge(retraction=retraction)
    exact = S.inclined_knife_edge_exact(2.0)
    errs = run_errors(ke, ke.Q.identity(), np.array([1.0, 0.0, 0.0]), 2.0, HS,
                      lambda tr: np.abs(ke.Q.to_coordinates(tr.q[-1]) - exact).max(), discrete_lagrangian=rule)
    assert observed_order(HS, errs) == pytest.approx(2.0, abs=0.1)


@pytest.mark.parametrize("scheme", ["plus", "minus"])
def test_plus_minus_on_se2(scheme):
    """On SE(2) the knife-edge constraint v_y = 0 is constant in the body frame
    and the exp retraction has constant body velocity, so A(q_k) xi = A(c) xi:
    (+)/(-) are second order there (declared 1 is a lower bound), while with
    the so2xr2 retraction they are first order."""
    exact = S.inclined_knife_edge_exact(2.0)
    orders = {}
    for ret in ("exp", "so2xr2"):
        ke = S.inclined_knife_edge(retraction=ret)
        errs = run_errors(ke, ke.Q.identity(), np.array([1.0, 0.0, 0.0]), 2.0, HS,
                          lambda tr: np.abs(ke.Q.to_coordinates(tr.q[-1]) - exact).max(), scheme=scheme)
        orders[ret] = observed_order(HS, errs)
        assert declared(ke, scheme, "midpoint") == 1
    assert orders["exp"] == pytest.approx(2.0, abs=0.1)
    assert orders["so2xr2"] == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("retraction,order", [("exp", 2), ("cayley", 2), ("so2xr2", 1)])
def test_chaplygin_sled_order_depends_on_retraction_symmetry(retraction, order):
    """so2xr2 is not a symmetric retraction (tau(-xi) != tau(xi)^-1): with the
    anisotropic sled Lagrangian the midpoint rule drops to first order, as
    ``DiscreteLagrangian.order_on`` declares."""
    sled = S.chaplygin_sled(retraction=retraction)
    ref = S.chaplygin_sled_reference([2.0])[0]
    errs = run_errors(sled, sled.Q.identity(), np.array([1.0, 1.0, 0.0]), 2.0, HS,
                      lambda tr: np.abs(sled.Q.to_coordinates(tr.q[-1]) - ref).max())
    assert declared(sled, "symmetric", "midpoint") == order
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


def test_symmetric_scheme_finds_the_midpoint_node_of_any_rule():
    """A registered rule whose midpoint node is not listed last (Simpson's rule)."""
    from manifold_dirac import DiscreteLagrangian

    simpson = DiscreteLagrangian("simpson-test", ((0.5, 4 / 6), (0.0, 1 / 6), (1.0, 1 / 6)), order=2, symmetric=True)
    sysm = knife_edge_euclidean()
    exact = S.inclined_knife_edge_exact(2.0)
    errs = run_errors(sysm, np.zeros(3), np.array([0.0, 0.0, 1.0]), 2.0, HS,
                      lambda tr: np.abs(tr.q[-1] - exact).max(), discrete_lagrangian=simpson)
    assert observed_order(HS, errs) == pytest.approx(2, abs=0.1)
