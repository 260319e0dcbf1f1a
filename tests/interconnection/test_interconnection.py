"""Interconnection: the theorems as subspace identities, the discrete equalities,
the five worked systems, and bad input."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from manifold_dirac import SE2, SO3, Euclidean, LagrangeDiracSystem, SolverOptions, integrate
from manifold_dirac import systems as S
from manifold_dirac.dirac import (
    DiscreteDiracStructure,
    LinearDirac,
    discrete_interconnect,
    in_discrete_structure,
)
from manifold_dirac.dirac import interconnect as dirac_interconnect
from manifold_dirac.interconnection import (
    Interaction,
    InterconnectedSystem,
    SubsystemDiscreteLagrangian,
    equal_velocities,
    interconnect,
    linear_interaction,
)
from manifold_dirac.mechanics.discrete_lagrangians import get_discrete_lagrangian

TIGHT = SolverOptions(rtol=1e-15, atol=1e-15)
R = 0.5  # wheel and ball radius used below


def worked(name):
    """(system, q0, v0, h, steps) for each worked system."""
    if name == "mass_spring":
        return S.mass_spring_torn(), (np.array([0.3, -0.2]), np.array([-0.2])), np.array([0.1, 0.4, 0.4]), 0.05, 60
    if name == "lc":
        return S.lc_from_elements(), (np.array([1.0]), np.array([1.0])), np.zeros(2), 0.02, 60
    if name == "rolling_disk":
        return S.rolling_disk(R), (SE2().identity(), np.zeros(1)), np.array([0.7, 2 * R, 0, 2.0]), 0.05, 60
    if name == "rolling_ball":
        W = np.array([0.3, -1.0, 0.5])
        R0 = SO3().exp(np.array([0.2, 0.4, -0.1]))
        return (S.rolling_ball(R), (R0, np.zeros(2)),
                np.concatenate([R0.T @ W, R * np.array([W[1], -W[0]])]), 0.05, 60)
    if name == "cart":
        om, vL = 0.4, 1.0
        q0 = ((SE2().identity(), np.zeros(1)), (SE2().from_coordinates([0, -1.0, 0]), np.zeros(1)))
        v0 = np.array([om, vL, 0, vL / R, om, vL + om, 0, (vL + om) / R])
        return S.two_wheel_cart(1.0, R), q0, v0, 0.05, 60
    raise KeyError(name)


WORKED = ["mass_spring", "lc", "rolling_disk", "rolling_ball", "cart"]


def hand_interconnected(sysm: InterconnectedSystem) -> LagrangeDiracSystem:
    """'Interconnect, then discretize', by hand: L = sum L_i on the product with
    Delta_Q's one-forms stacked, complex-step partials of the sum."""
    return LagrangeDiracSystem(sysm.Q, sysm._lagrangian, constraint=sysm.constraint_matrix, force=sysm.force,
                               name="by_hand")


# ------------------------------------------------------------- theorems
def _blocks(sysm, q):
    A_own = [np.asarray(s.constraint_matrix(qi), float) for s, qi in zip(sysm.subsystems, q)]
    return A_own, np.asarray(sysm.interaction_matrix(q), float), np.asarray(sysm.constraint_matrix(q), float)


@pytest.mark.parametrize("name", ["mass_spring", "lc", "rolling_disk", "rolling_ball"])
def test_interconnection_theorem_at_points_of_the_worked_systems(name):
    sysm = worked(name)[0]
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = sysm.Q.random_point(rng)
        (A1, A2), Sm, A = _blocks(sysm, q)
        # continuous (32): (D1 (+) D2) [x] D_int = D_{Delta_Q}
        lhs = dirac_interconnect(LinearDirac.induced(A1), LinearDirac.induced(A2), Sm)
        assert lhs.is_dirac() and lhs.equals(LinearDirac.induced(A))
        # discrete (+) and (-), through the same chart
        for sign in "+-":
            dl = discrete_interconnect(DiscreteDiracStructure.induced(A1, sign), DiscreteDiracStructure.induced(A2, sign), Sm)
            assert dl.equals(DiscreteDiracStructure.induced(A, sign))


def test_interconnection_theorem_can_fail():
    """Dropping the interaction from the right-hand side breaks the equality."""
    sysm = worked("rolling_disk")[0]
    q = sysm.Q.random_point(np.random.default_rng(1))
    (A1, A2), Sm, A = _blocks(sysm, q)
    lhs = dirac_interconnect(LinearDirac.induced(A1), LinearDirac.induced(A2), Sm)
    assert not lhs.equals(LinearDirac.induced(A[: A1.shape[0] + A2.shape[0]]))


@given(seed=st.integers(0, 2**32 - 1), n1=st.integers(1, 3), n2=st.integers(1, 3))
def test_interconnect_builds_delta_q_of_31(seed, n1, n2):
    """The system interconnect() builds has exactly the one-forms of (31)."""
    rng = np.random.default_rng(seed)
    A1 = rng.standard_normal((rng.integers(0, n1), n1))
    A2 = rng.standard_normal((rng.integers(0, n2), n2))
    Sm = rng.standard_normal((1, n1 + n2))
    s1 = LagrangeDiracSystem(Euclidean(n1), lambda q, v: 0.5 * np.sum(v * v, -1), A1 if A1.size else None, name="a")
    s2 = LagrangeDiracSystem(Euclidean(n2), lambda q, v: 0.5 * np.sum(v * v, -1), A2 if A2.size else None, name="b")
    sysm = interconnect(s1, s2, interaction=Interaction(Sm))
    q = sysm.Q.random_point(rng)
    A = sysm.constraint_matrix(q)
    expected = np.zeros((A1.shape[0] + A2.shape[0] + 1, n1 + n2))
    expected[: A1.shape[0], :n1] = A1
    expected[A1.shape[0]: A1.shape[0] + A2.shape[0], n1:] = A2
    expected[-1] = Sm
    np.testing.assert_array_equal(A, expected)


# --------------------------------------------- discrete equalities along runs
@pytest.mark.parametrize("name", WORKED)
@pytest.mark.parametrize("scheme", ["symmetric", "plus", "minus"])
@pytest.mark.parametrize("rule", ["midpoint", "trapezoid", "rectangle+", "rectangle-"])
def test_discretize_then_interconnect_equals_interconnect_then_discretize(name, scheme, rule):
    sysm, q0, v0, h, n = worked(name)
    a = integrate(sysm, q0, v0=v0, h=h, n_steps=n, scheme=scheme, solver=TIGHT,
                  discrete_lagrangian=SubsystemDiscreteLagrangian(sysm, rule))
    b = integrate(hand_interconnected(sysm), q0, v0=v0, h=h, n_steps=n, scheme=scheme, solver=TIGHT,
                  discrete_lagrangian=rule)
    assert a.ok and b.ok
    fa = _flat(a.q)
    fb = _flat(b.q)
    for x, y in zip(fa, fb):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-11)
    np.testing.assert_allclose(a.p, b.p, rtol=0, atol=1e-11)


def _flat(q):
    if isinstance(q, tuple):
        return [a for x in q for a in _flat(x)]
    return [q]


@pytest.mark.parametrize("name", ["mass_spring", "rolling_disk", "rolling_ball", "cart"])
@pytest.mark.parametrize("scheme", ["plus", "minus", "symmetric"])
def test_computed_steps_lie_in_the_discrete_dirac_structure(name, scheme):
    """(X_d^k, D^+- L_d) in D^{d+-} (50)-(51) along computed steps; for the
    symmetric scheme, (50) with its own (midpoint) discrete constraint."""
    sysm, q0, v0, h, n = worked(name)
    tr = integrate(sysm, q0, v0=v0, h=h, n_steps=20, scheme=scheme, solver=TIGHT)
    rule = get_discrete_lagrangian("midpoint")
    Q = sysm.Q
    for k in range(20):
        qk, qk1 = Q.index_point(tr.q, k), Q.index_point(tr.q, k + 1)
        ld = rule.evaluate(sysm, qk, qk1, h)
        if scheme == "minus":
            res = in_discrete_structure("-", sysm.constraint_matrix(qk1), tr.p[k], Q.inverse_retract(qk1, qk),
                                        tr.p[k + 1], ld.D1, ld.D2, tol=1e-10)
            assert res.ok, res
        else:
            res = in_discrete_structure("+", sysm.constraint_matrix(qk), tr.p[k], ld.xi, tr.p[k + 1], ld.D1, ld.D2,
                                        tol=1e-10)
            if scheme == "plus":
                assert res.ok, res
            else:
                assert max(res.basepoint, res.annihilator) <= 1e-10 * res.scale
                assert tr.constraint_residual[k] < 1e-13


# ----------------------------------------------------------- worked systems
@pytest.mark.parametrize("scheme", ["symmetric", "plus", "minus"])
def test_torn_mass_spring_equals_monolithic(scheme):
    mono, torn = S.mass_spring_monolithic(), S.mass_spring_torn()
    x0, v0 = np.array([0.3, -0.2]), np.array([0.1, 0.4])
    a = integrate(mono, x0, v0=v0, h=0.05, n_steps=200, scheme=scheme, solver=TIGHT)
    b = integrate(torn, (x0.copy(), x0[1:]), v0=np.array([v0[0], v0[1], v0[1]]), h=0.05, n_steps=200,
                  scheme=scheme, solver=TIGHT)
    np.testing.assert_allclose(b.q[0][:, 0], a.q[:, 0], rtol=0, atol=1e-13)
    np.testing.assert_allclose(b.q[1][:, 0], a.q[:, 1], rtol=0, atol=1e-13)
    np.testing.assert_allclose(b.q[0][:, 1], b.q[1][:, 0], rtol=0, atol=1e-13)  # the port follows
    # the interaction force on the right mass is the middle spring's pull
    # k12 (x1 - x2), to O(h), after the first step: the given p_y(0) = dL/dv_y = 0
    # differs from the discrete Legendre transform of the massless port by O(h),
    # so the first multiplier carries half an impulse (the motion is unaffected)
    parts = torn.parts(b)
    f = parts["right"].interaction_force[1:, 0]
    spring = 1.5 * (a.q[1:-1, 0] - a.q[1:-1, 1])
    assert np.max(np.abs(f - spring)) < 0.05 * np.max(np.abs(spring))
    np.testing.assert_allclose(parts["left"].interaction_force[1:, 1], -f, atol=1e-12)  # action = reaction


def test_lc_from_elements_frequency():
    l, C = 0.5, 0.08
    lc = S.lc_from_elements(l, C)
    tr = integrate(lc, (np.array([1.0]), np.array([1.0])), v0=np.zeros(2), h=0.002, n_steps=2000)
    qc = tr.q[0][:, 0]
    up = np.nonzero((qc[:-1] < 0) & (qc[1:] >= 0))[0]
    tz = tr.t[up] - qc[up] * (tr.t[up + 1] - tr.t[up]) / (qc[up + 1] - qc[up])
    assert np.mean(np.diff(tz)) == pytest.approx(2 * np.pi * np.sqrt(l * C), rel=1e-5)


def test_rolling_disk_matches_closed_form():
    from manifold_dirac.analysis import observed_order

    rd = S.rolling_disk(R)
    errs, hs = [], np.array([0.04, 0.02, 0.01])
    for h in hs:
        tr = integrate(rd, (SE2().identity(), np.zeros(1)), v0=np.array([0.7, 2 * R, 0, 2.0]), h=h,
                       n_steps=int(round(2 / h)))
        ex = S.rolling_disk_exact(tr.t, R, 0.7, 2.0)
        errs.append(np.abs(SE2().to_coordinates(tr.q[0]) - ex[:, :3]).max())
        # discrete heading and rolling rates are constant, and the path is a circle
        assert np.ptp(tr.xi[:, 0]) < 1e-13 and np.ptp(tr.xi[:, 3]) < 1e-13
        xy = tr.q[0][:, :2, 2]
        rho = tr.xi[0, 1] / tr.xi[0, 0]  # exp of a constant twist: arcs of one circle
        centre = np.array([0.0, rho])
        assert np.ptp(np.linalg.norm(xy - centre, axis=-1)) < 1e-12
    assert observed_order(hs, errs) == pytest.approx(2, abs=0.1)


def test_rolling_ball_constant_spatial_angular_velocity_and_straight_line():
    rb, q0, v0, h, _ = worked("rolling_ball")
    tr = integrate(rb, q0, v0=v0, h=h, n_steps=400)
    W = np.array([0.3, -1.0, 0.5])
    Ws = np.einsum("kij,kj->ki", tr.q[0], tr.v[:, :3])
    assert np.max(np.abs(Ws - W)) < 1e-12
    np.testing.assert_allclose(tr.q[1], S.rolling_ball_exact(tr.t, R, W), atol=1e-12)
    assert np.max(tr.constraint_residual) < 1e-12


def test_cart_hierarchy_equals_flat_interconnection():
    cart, q0, v0, h, _ = worked("cart")
    flat = S.two_wheel_cart_flat(1.0, R)
    a = integrate(cart, q0, v0=v0, h=h, n_steps=200, solver=TIGHT)
    b = integrate(flat, (q0[0][0], q0[0][1], q0[1][0], q0[1][1]), v0=v0, h=h, n_steps=200, solver=TIGHT)
    for x, y in zip(_flat(a.q), _flat(b.q)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)
    # the axle keeps the contact points at distance 1; rates stay constant
    d = np.linalg.norm(a.q[0][0][:, :2, 2] - a.q[1][0][:, :2, 2], axis=-1)
    assert np.ptp(d) < 1e-12 and abs(d[0] - 1.0) < 1e-15
    assert np.ptp(a.xi[:, 0]) < 1e-12 and np.ptp(a.xi[:, 1]) < 1e-12
    # subsystems are read back by name; nested ones are systems again
    parts = cart.parts(a)
    assert set(parts) == {"left", "right"} and parts["left"].v.shape == (201, 4)
    assert isinstance(cart.subsystems[0], InterconnectedSystem)


# ----------------------------------------------------------------- bad input
def test_bad_interaction_shape():
    a = S.pendulum()
    b = LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * np.sum(v * v, -1), name="b")
    with pytest.raises(ValueError, match=r"constant one-forms are a \(r, 3\) matrix in frame coordinates, got shape \(1, 2\)"):
        interconnect(a, b, interaction=Interaction(np.ones((1, 2))))


def test_unknown_subsystem_in_a_helper():
    a, b = S.pendulum(), S.harmonic_oscillator()
    with pytest.raises(ValueError, match="no subsystem named 'wheel'"):
        interconnect(a, b, interaction=equal_velocities(("wheel", 0), ("pendulum", 0)))
    with pytest.raises(ValueError, match="component 3 does not exist"):
        interconnect(a, b, interaction=equal_velocities(("pendulum", 3), ("harmonic_oscillator", 0)))


def test_name_collision():
    with pytest.raises(ValueError, match="subsystem name collision: 'pendulum'"):
        interconnect(S.pendulum(), S.pendulum())
    ok = interconnect(S.pendulum(), S.pendulum(), names=("p1", "p2"))
    assert ok.names == ("p1", "p2")


def test_initial_state_outside_delta_q():
    rd = S.rolling_disk(R)
    with pytest.raises(ValueError, match="v0 is not in the constraint distribution"):
        integrate(rd, (SE2().identity(), np.zeros(1)), v0=np.array([0.7, 1.0, 0, 1.0]), h=0.1, n_steps=1)


def test_rank_drop_is_refused():
    """Sigma repeating the body's own no-slip constraint: Delta ∩ Sigma is not
    regular as declared (dependent one-forms)."""
    body_wheel = S.rolling_disk(R)
    again = interconnect(*body_wheel.subsystems, interaction=body_wheel.interaction
                         + linear_interaction({("body", 2): 1.0}))
    with pytest.raises(ValueError, match=r"linearly dependent at q0 \(rank 2 < 3 rows"):
        integrate(again, (SE2().identity(), np.zeros(1)), v0=np.array([0.7, 2 * R, 0, 2.0]), h=0.1, n_steps=1)


class CoupledPlane(Euclidean):
    """R^2 with a retraction that couples the two coordinates:
    ``R_q(xi) = q + (xi0 + c xi0 xi1, xi1)`` -- a valid retraction, not a product one."""

    c = 0.5

    def __init__(self):
        super().__init__(2)

    def retract(self, q, xi):
        return q + np.stack([xi[..., 0] + self.c * xi[..., 0] * xi[..., 1], xi[..., 1]], -1)

    def inverse_retract(self, q0, q1):
        d = q1 - q0
        return np.stack([d[..., 0] / (1 + self.c * d[..., 1]), d[..., 1]], -1)

    def inverse_retract_jacobians(self, q0, q1):
        d = q1 - q0
        g = 1 + self.c * d[..., 1]
        J1 = np.zeros(d.shape + (2,))
        J1[..., 0, 0] = 1 / g
        J1[..., 0, 1] = -self.c * d[..., 0] / g**2
        J1[..., 1, 1] = 1.0
        return -J1, J1

    def retract_jacobians(self, q, xi):
        Jx = np.zeros(np.shape(xi) + (2,))
        Jx[..., 0, 0] = 1 + self.c * xi[..., 1]
        Jx[..., 0, 1] = self.c * xi[..., 0]
        Jx[..., 1, 1] = 1.0
        return np.broadcast_to(np.eye(2), Jx.shape), Jx


def test_a_non_product_retraction_breaks_the_equality():
    """The equality of the two routes needs the product retraction: the same
    two oscillators on R^2 with a coupled retraction give another discrete flow."""
    from manifold_dirac.testing import check_manifold_laws

    check_manifold_laws(CoupledPlane(), seeds=range(2), regimes=("near_zero", "generic"))  # a valid retraction
    osc = S.harmonic_oscillator(1)
    two = interconnect(osc, osc, names=("a", "b"))
    L = lambda q, v: 0.5 * np.sum(v * v, -1) - 0.5 * np.sum(q * q, -1)
    coupled = LagrangeDiracSystem(CoupledPlane(), L)
    q0, v0 = np.array([1.0, 0.5]), np.array([0.0, 1.0])
    a = integrate(two, (q0[:1], q0[1:]), v0=v0, h=0.1, n_steps=50, solver=TIGHT,
                  discrete_lagrangian=SubsystemDiscreteLagrangian(two, "midpoint"))
    b = integrate(coupled, q0, v0=v0, h=0.1, n_steps=50, solver=TIGHT)
    diff = np.max(np.abs(np.concatenate([a.q[0], a.q[1]], -1) - b.q))
    assert diff > 1e-4


def test_product_level_forces_in_the_subsystem_route():
    """A callable force override and interconnect(..., force=) act in both routes alike."""
    def F(t, q, v):
        return -0.3 * v + 0.1 * np.sin(t)

    torn = interconnect(*S.mass_spring_torn().subsystems, interaction=S.mass_spring_torn().interaction, force=F)
    q0, v0 = (np.array([0.3, -0.2]), np.array([-0.2])), np.array([0.1, 0.4, 0.4])
    a = integrate(torn, q0, v0=v0, h=0.05, n_steps=40, solver=TIGHT,
                  discrete_lagrangian=SubsystemDiscreteLagrangian(torn, "midpoint"))
    b = integrate(hand_interconnected(torn), q0, v0=v0, h=0.05, n_steps=40, solver=TIGHT)
    np.testing.assert_allclose(a.q[0], b.q[0], atol=1e-12)
    from manifold_dirac import Integrator

    for rule in (SubsystemDiscreteLagrangian(torn, "midpoint"), "midpoint"):
        integ = Integrator(torn, 0.05, discrete_lagrangian=rule, solver=TIGHT)
        s, _ = integ.step(integ.initial_state(q0, v0=v0), force=lambda t, q, v: 10.0 * np.ones_like(v))
        if rule == "midpoint":
            np.testing.assert_allclose(s.q[0], first, atol=1e-12)
        else:
            first = s.q[0]
