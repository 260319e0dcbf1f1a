"""Interconnection on the compiled engine: the theorems as subspace identities,
the discrete equalities of the two routes, the five worked systems, and bad input.

Compiled steps are cached per system object, so every system here is built
once at module level. The two routes are compared against a reference written
by hand from the paper's formulas (``L`` and the one-forms of ``Delta_Q``
typed in directly, automatic partials), not against a system that shares the
interconnected system's functions: that is what lets a wrong interaction be
seen (:func:`test_a_wrong_interaction_makes_the_routes_disagree`).

Every (system, scheme, rule) combination compiles its own Newton step (a few
seconds each, more on a Lie group), so the full matrices -- the route
equality over every scheme and rule on all five systems, the discrete Dirac
structure along runs, the schemes of the torn chain, the cart hierarchy -- are
``@pytest.mark.slow``. The default run keeps the Lie-group systems but the cart in the
route equality through the step equations themselves
(:func:`test_the_two_routes_give_the_same_step_equations`: ``D1 L_d``,
``D2 L_d``, the discrete forces and the node geometry at random points),
and compares whole runs on cheap systems (every scheme with ``-m slow``).
"""

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import manifold_dirac  # noqa: F401  (float64, compilation cache)
from manifold_dirac._interconnection import (
    Interaction,
    InterconnectedSystem,
    SubsystemDiscreteLagrangian,
    equal_velocities,
    interconnect,
    linear_interaction,
)
from manifold_dirac._manifolds.base import Retraction, register_retraction
from manifold_dirac._manifolds.euclidean import Euclidean
from manifold_dirac._manifolds.product import ProductManifold
from manifold_dirac._manifolds.se2 import SE2
from manifold_dirac._manifolds.so3 import SO3
from manifold_dirac._run.integrate import integrate
from manifold_dirac._mechanics.newton import SolverOptions
from manifold_dirac._mechanics.rules import StepContext, get_rule
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import harmonic_oscillator, pendulum
from manifold_dirac.systems import interconnected as S
from manifold_dirac.analysis import observed_order
from manifold_dirac.dirac import (
    DiscreteDiracStructure,
    LinearDirac,
    interconnect_discrete_structures,
    in_discrete_structure,
)
from manifold_dirac.dirac import interconnect_structures as dirac_interconnect
from tests._tiers import slow_cases

TIGHT = SolverOptions(rtol=1e-14)
"""Newton to round-off (the engine's stopping rule), accepting stagnation only below ``1e-14``."""
R = 0.5  # wheel and ball radius used below


@pytest.fixture(autouse=True)
def _release_compiled_code(request):
    """After a slow test, drop JAX's compiled executables (the engine keeps every system's
    compiled steps for the life of the process; a full slow run compiles ~150 of them and
    can exhaust the process's memory maps, which XLA answers with a segfault). The default
    run shares its compiled steps between tests and keeps them."""
    yield
    if request.node.get_closest_marker("slow") is not None:
        jax.clear_caches()


# -------------------------------------------------- the worked systems, once
def _worked():
    out = {
        "mass_spring": (S.mass_spring_torn(), (np.array([0.3, -0.2]), np.array([-0.2])),
                        np.array([0.1, 0.4, 0.4]), 0.05, 60),
        "lc": (S.lc_from_elements(), (np.array([1.0]), np.array([1.0])), np.zeros(2), 0.02, 60),
        "rolling_disk": (S.rolling_disk(R), (SE2().identity(), np.zeros(1)), np.array([0.7, 2 * R, 0, 2.0]),
                         0.05, 60),
    }
    W = np.array([0.3, -1.0, 0.5])
    R0 = np.asarray(SO3().exp(jnp.array([0.2, 0.4, -0.1])))
    out["rolling_ball"] = (S.rolling_ball(R), (R0, np.zeros(2)),
                           np.concatenate([R0.T @ W, R * np.array([W[1], -W[0]])]), 0.05, 60)
    om, vL = 0.4, 1.0
    right = np.asarray(SE2().from_coordinates(jnp.array([0, -1.0, 0])))
    q0 = ((SE2().identity(), np.zeros(1)), (right, np.zeros(1)))
    v0 = np.array([om, vL, 0, vL / R, om, vL + om, 0, (vL + om) / R])
    out["cart"] = (S.two_wheel_cart(1.0, R), q0, v0, 0.05, 60)
    return out


WORKED_SYSTEMS = _worked()
WORKED = list(WORKED_SYSTEMS)


def worked(name):
    """(system, q0, v0, h, steps) for each worked system."""
    return WORKED_SYSTEMS[name]


# ------------------------- "interconnect, then discretize", typed in by hand
def _hand(Q, L, A, name):
    return LagrangeDiracSystem(Q, L, constraint=A, name=name)


def hand_mass_spring(m1=1.0, m2=2.0, k1=3.0, k12=1.5, k2=2.0):
    """On R^2 x R with (x1, y; x2): the chain's L with the port y, and y' - x2' = 0."""

    def L(q, v):
        x1, y, x2 = q[0][0], q[0][1], q[1][0]
        kinetic = 0.5 * m1 * v[0] ** 2 + 0.5 * m2 * v[2] ** 2
        return kinetic - 0.5 * k1 * x1**2 - 0.5 * k12 * (y - x1) ** 2 - 0.5 * k2 * x2**2

    A = np.array([[0.0, 1.0, -1.0]])
    return _hand(ProductManifold(Euclidean(2), Euclidean(1)), L, A, "hand_mass_spring")


def hand_lc(ind=1.0, C=0.25):
    """On R x R with (q_C; q_L): ``L = -q_C^2/(2C) + l/2 q_L'^2`` and ``q_C' - q_L' = 0``."""
    def L(q, v):
        return -0.5 * q[0][0] ** 2 / C + 0.5 * ind * v[1] ** 2

    return _hand(ProductManifold(Euclidean(1), Euclidean(1)), L, np.array([[1.0, -1.0]]), "hand_lc")


def _disk_L(v, m=1.0, Iy=0.0625, Ir=0.125):
    """A rolling disk's L on the twist (w, v_x, v_y) and the wheel rate."""
    return 0.5 * m * (v[1] ** 2 + v[2] ** 2) + 0.5 * Iy * v[0] ** 2 + 0.5 * Ir * v[3] ** 2


def hand_rolling_disk(r=R):
    """On SE(2) x R: knife edge ``v_y = 0`` and rolling ``v_x - r phi' = 0``."""
    A = np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, -r]])
    return _hand(ProductManifold(SE2(), Euclidean(1)), lambda q, v: _disk_L(v), A, "hand_rolling_disk")


def hand_rolling_ball(r=R, m=1.0):
    """On SO(3) x R^2: ``x1' - r (R w)_2 = 0``, ``x2' + r (R w)_1 = 0``."""
    inertia = 0.4 * m * r**2

    def L(q, v):
        return 0.5 * inertia * (v[0] ** 2 + v[1] ** 2 + v[2] ** 2) + 0.5 * m * (v[3] ** 2 + v[4] ** 2)

    def A(q):
        Rm = q[0]
        return jnp.stack([jnp.concatenate([-r * Rm[1], jnp.array([1.0, 0.0])]),
                          jnp.concatenate([r * Rm[0], jnp.array([0.0, 1.0])])])

    return _hand(ProductManifold(SO3(), Euclidean(2)), L, A, "hand_rolling_ball")


def hand_cart(track=1.0, r=R):
    """On (SE(2) x R) x (SE(2) x R), columns (w_L, vx_L, vy_L, phi_L', w_R, vx_R, vy_R, phi_R'):
    both disks' knife edges and rolling, equal headings and ``vx_R - vx_L - track w_L = 0``."""
    A = np.array([
        [0, 0, 1, 0, 0, 0, 0, 0],
        [0, 1, 0, -r, 0, 0, 0, 0],
        [0, 0, 0, 0, 0, 0, 1, 0],
        [0, 0, 0, 0, 0, 1, 0, -r],
        [-1, 0, 0, 0, 1, 0, 0, 0],
        [-track, -1, 0, 0, 0, 1, 0, 0],
    ], dtype=float)
    disk = ProductManifold(SE2(), Euclidean(1))
    return _hand(ProductManifold(disk, disk), lambda q, v: _disk_L(v[:4]) + _disk_L(v[4:]), A, "hand_cart")


HAND = {"mass_spring": hand_mass_spring(), "lc": hand_lc(), "rolling_disk": hand_rolling_disk(),
        "rolling_ball": hand_rolling_ball(), "cart": hand_cart()}


def hand_interconnected(sysm: InterconnectedSystem) -> LagrangeDiracSystem:
    """'Interconnect, then discretize' through the interconnected system's OWN functions:
    L = sum L_i and Delta_Q's one-forms as the system computes them, automatic partials of
    the sum. It shares the interaction with the subsystem route, so it cannot see a wrong one."""
    force = (lambda t, q, v: sysm.force(t, q, v)) if sysm.has_force else None
    return LagrangeDiracSystem(sysm.Q, lambda q, v: sysm.lagrangian(q, v),
                               constraint=lambda q: sysm.constraint_matrix(q), force=force, name="by_hand")


def _flat(q):
    if isinstance(q, tuple):
        return [a for x in q for a in _flat(x)]
    return [np.asarray(q)]


def _at(q, k):
    return jax.tree.map(lambda a: np.asarray(a)[k], q)


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
            dl = interconnect_discrete_structures(DiscreteDiracStructure.induced(A1, sign),
                                       DiscreteDiracStructure.induced(A2, sign), Sm)
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
    s1 = LagrangeDiracSystem(Euclidean(n1), lambda q, v: 0.5 * v @ v, A1 if A1.size else None, name="a")
    s2 = LagrangeDiracSystem(Euclidean(n2), lambda q, v: 0.5 * v @ v, A2 if A2.size else None, name="b")
    sysm = interconnect(s1, s2, interaction=Interaction(Sm))
    q = sysm.Q.random_point(rng)
    A = np.asarray(sysm.constraint_matrix(q))
    expected = np.zeros((A1.shape[0] + A2.shape[0] + 1, n1 + n2))
    expected[: A1.shape[0], :n1] = A1
    expected[A1.shape[0]: A1.shape[0] + A2.shape[0], n1:] = A2
    expected[-1] = Sm
    np.testing.assert_array_equal(A, expected)


@pytest.mark.parametrize("name", slow_cases(WORKED, {"cart"}))
def test_the_two_routes_give_the_same_step_equations(name):
    """At random points: L, its partials (analytic where the subsystems have them) and the
    one-forms of Delta_Q equal the hand-written reference (the assembly of (31)/(33)), and
    SubsystemDiscreteLagrangian -- each subsystem's L_d through its own retraction -- gives
    the numbers the same rule gives for the hand-written L on the product: D1 L_d, D2 L_d,
    the discrete forces of a control covector, the Jacobians, L_d, and the node geometry at
    s = 0, 1 (the trapezoid's nodes) and 1/2 (the symmetric scheme's extra node). Every
    scheme's equations are assembled from exactly these, so this is the route equality at
    the level of the step equations, for every system (the runs below are slow on Lie groups).
    """
    sysm, hand, h, t0 = worked(name)[0], HAND[name], 0.05, 0.3
    sub, rule = subsystem_rule(name, "trapezoid"), get_rule("trapezoid")

    def both(q, v, xi, u):
        out = []
        for s_ in (sysm, hand):
            ld = (sub if s_ is sysm else rule).evaluate(s_, q, xi, StepContext(h, t0, s_.params, u, (0.5,)))
            nodes = [x for key in (0.0, 0.5, 1.0)
                     for x in (*jax.tree.leaves(ld.nodes[key].point), *ld.nodes[key][1:])]
            p = s_.params
            out.append([s_.lagrangian(q, v, p), *s_.partials(q, v, p), s_.constraint_matrix(q, p),
                        (sub if s_ is sysm else rule).value(s_, q, xi, h, p), *jax.tree.leaves(ld.q1),
                        ld.J0, ld.J1, ld.D1, ld.D2, ld.f_minus, ld.f_plus, ld.scale, ld.finite, *nodes])
        return out

    rng = np.random.default_rng(3)
    q = sysm.Q.random_point(rng, (3,))
    v, xi, u = (np.asarray(sysm.Q.random_tangent(rng, (3,), s)) for s in (1.0, 0.1, 1.0))
    got, ref = jax.jit(jax.vmap(both))(q, v, xi, u)
    assert len(got) == len(ref) == 22 + 4 * len(jax.tree.leaves(q))
    for i, (x, y) in enumerate(zip(got, ref)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-13, atol=1e-13,
                                   err_msg=f"output {i}")


# --------------------------------------------- discrete equalities along runs
CI_ROUTES = {("mass_spring", "symmetric", "midpoint")}


def _cases(names, schemes, rules, ci):
    for name in names:
        for scheme in schemes:
            for rule in rules:
                marks = () if (name, scheme, rule) in ci else (pytest.mark.slow,)
                yield pytest.param(name, scheme, rule, marks=marks, id=f"{name}-{scheme}-{rule}")


SUBSYSTEM_RULES: dict = {}


def subsystem_rule(name, rule):
    """One SubsystemDiscreteLagrangian per (system, rule), so that the compiled step is reused."""
    key = (name, rule)
    if key not in SUBSYSTEM_RULES:
        SUBSYSTEM_RULES[key] = SubsystemDiscreteLagrangian(worked(name)[0], rule)
    return SUBSYSTEM_RULES[key]


ALL_RULES = ["midpoint", "trapezoid", "rectangle+", "rectangle-"]


ALL_SCHEMES = ["symmetric", "plus", "minus"]


@pytest.mark.parametrize("name,scheme,rule", list(_cases(WORKED, ALL_SCHEMES, ALL_RULES, CI_ROUTES)))
def test_discretize_then_interconnect_equals_interconnect_then_discretize(name, scheme, rule):
    """Route 1: each subsystem's L_d through its own rule and retraction (SubsystemDiscreteLagrangian);
    route 2: the hand-written L = sum L_i with the hand-written one-forms, discretized on the product."""
    sysm, q0, v0, h, n = worked(name)
    a = integrate(sysm, q0, v0=v0, h=h, n_steps=n, scheme=scheme, solver=TIGHT,
                  discrete_lagrangian=subsystem_rule(name, rule))
    b = integrate(HAND[name], q0, v0=v0, h=h, n_steps=n, scheme=scheme, solver=TIGHT,
                  discrete_lagrangian=rule)
    assert a.ok and b.ok
    for x, y in zip(_flat(a.q), _flat(b.q)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-11)
    np.testing.assert_allclose(a.p, b.p, rtol=0, atol=1e-11)


def _discrete_lagrangian_along(sysm, q, h):
    """``R_{q_k}^{-1}(q_{k+1})``, ``R_{q_{k+1}}^{-1}(q_k)``, ``D1 L_d``, ``D2 L_d`` (midpoint) along
    stored points."""
    rule = get_rule("midpoint")

    def one(q0, q1):
        xi = sysm.Q.inverse_retract(q0, q1)
        ld = rule.evaluate(sysm, q0, xi, StepContext(h, 0.0, sysm.params))
        return xi, sysm.Q.inverse_retract(q1, q0), ld.D1, ld.D2

    @jax.jit  # one small compile instead of many eager primitives
    def along(q):
        return jax.vmap(one)(jax.tree.map(lambda a: a[:-1], q), jax.tree.map(lambda a: a[1:], q))

    return [np.asarray(a) for a in along(q)]


# (the rolling ball, ~16 s cold, with -m slow; its steps are compared between the two routes in the default tier)
CI_DIRAC = {("rolling_disk", "symmetric", "midpoint")}


DIRAC_SYSTEMS = ["mass_spring", "rolling_disk", "rolling_ball", "cart"]


@pytest.mark.parametrize("name,scheme,rule", list(_cases(DIRAC_SYSTEMS, ALL_SCHEMES, ["midpoint"], CI_DIRAC)))
def test_computed_steps_lie_in_the_discrete_dirac_structure(name, scheme, rule):
    """(X_d^k, D^+- L_d) in D^{d+-} (50)-(51) along computed steps; for the
    symmetric scheme, (50) with its own (midpoint) discrete constraint."""
    sysm, q0, v0, h, _ = worked(name)
    tr = integrate(sysm, q0, v0=v0, h=h, n_steps=20, scheme=scheme, solver=TIGHT, discrete_lagrangian=rule)
    fwd, back, D1, D2 = _discrete_lagrangian_along(sysm, tr.q, h)
    A = np.asarray(sysm.evaluate("constraint_matrix", tr.q))
    for k in range(20):
        if scheme == "minus":
            res = in_discrete_structure("-", A[k + 1], tr.p[k], back[k], tr.p[k + 1], D1[k], D2[k], tol=1e-10)
            assert res.ok, res
        else:
            res = in_discrete_structure("+", A[k], tr.p[k], fwd[k], tr.p[k + 1], D1[k], D2[k], tol=1e-10)
            if scheme == "plus":
                assert res.ok, res
            else:
                assert max(res.basepoint, res.annihilator) <= 1e-10 * res.scale
                assert tr.constraint_residual[k] < 1e-13


# ----------------------------------------------------------- worked systems
MONOLITHIC = S.mass_spring_monolithic()


@pytest.mark.parametrize("scheme", ["symmetric", pytest.param("plus", marks=pytest.mark.slow),
                                    pytest.param("minus", marks=pytest.mark.slow)])
def test_torn_mass_spring_equals_monolithic(scheme):
    torn = worked("mass_spring")[0]
    x0, v0 = np.array([0.3, -0.2]), np.array([0.1, 0.4])
    a = integrate(MONOLITHIC, x0, v0=v0, h=0.05, n_steps=200, scheme=scheme, solver=TIGHT)
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


@pytest.mark.slow
def test_lc_from_elements_frequency():
    ind, C = 0.5, 0.08
    lc = S.lc_from_elements(ind, C)
    tr = integrate(lc, (np.array([1.0]), np.array([1.0])), v0=np.zeros(2), h=0.002, n_steps=2000)
    qc = tr.q[0][:, 0]
    up = np.nonzero((qc[:-1] < 0) & (qc[1:] >= 0))[0]
    tz = tr.t[up] - qc[up] * (tr.t[up + 1] - tr.t[up]) / (qc[up + 1] - qc[up])
    assert np.mean(np.diff(tz)) == pytest.approx(2 * np.pi * np.sqrt(ind * C), rel=1e-5)


def test_rolling_disk_matches_closed_form():
    rd = worked("rolling_disk")[0]
    errs, hs = [], np.array([0.04, 0.02, 0.01])
    for h in hs:
        tr = integrate(rd, (SE2().identity(), np.zeros(1)), v0=np.array([0.7, 2 * R, 0, 2.0]), h=h,
                       n_steps=round(2 / h), solver=TIGHT)
        ex = S.rolling_disk_exact(tr.t, R, 0.7, 2.0)
        errs.append(np.abs(np.asarray(SE2().to_coordinates(tr.q[0])) - ex[:, :3]).max())
        # discrete heading and rolling rates are constant, and the path is a circle
        assert np.ptp(tr.xi[:, 0]) < 1e-13 and np.ptp(tr.xi[:, 3]) < 1e-13
        xy = tr.q[0][:, :2, 2]
        rho = tr.xi[0, 1] / tr.xi[0, 0]  # exp of a constant twist: arcs of one circle
        centre = np.array([0.0, rho])
        assert np.ptp(np.linalg.norm(xy - centre, axis=-1)) < 1e-12
    assert observed_order(hs, errs) == pytest.approx(2, abs=0.1)


@pytest.mark.slow
def test_rolling_ball_constant_spatial_angular_velocity_and_straight_line():
    rb, q0, v0, h, _ = worked("rolling_ball")
    tr = integrate(rb, q0, v0=v0, h=h, n_steps=400, solver=TIGHT)
    W = np.array([0.3, -1.0, 0.5])
    Ws = np.einsum("kij,kj->ki", tr.q[0], tr.v[:, :3])
    assert np.max(np.abs(Ws - W)) < 1e-12
    np.testing.assert_allclose(tr.q[1], S.rolling_ball_exact(tr.t, R, W), atol=1e-12)
    assert np.max(tr.constraint_residual) < 1e-12


CART_FLAT = S.two_wheel_cart_flat(1.0, R)


def test_nested_subsystems_by_dotted_name():
    cart = worked("cart")[0]
    assert isinstance(cart.subsystems[0], InterconnectedSystem)
    assert cart.subsystem("left.body") is cart.subsystems[0].subsystems[0]
    assert cart.layout.locate("right.wheel") == (7, 1) and cart.layout.index("right.body", 2) == 6
    assert cart.subsystem_slices == {"left": [0, 4], "right": [4, 8]}
    assert cart.constraint_rows() == {"left": slice(0, 2), "right": slice(2, 4), "interaction": slice(4, 6)}
    q = cart.Q.random_point(np.random.default_rng(0))
    assert cart.layout.point(q, "right.body") is q[1][0]
    with pytest.raises(ValueError, match="'left' has 4 frame components"):
        cart.layout.index("left", 4)
    with pytest.raises(ValueError, match=r"'left\.body' is not an interconnected system"):
        cart.layout.locate("left.body.x")


@pytest.mark.slow
def test_cart_hierarchy_equals_flat_interconnection():
    cart, q0, v0, h, _ = worked("cart")
    a = integrate(cart, q0, v0=v0, h=h, n_steps=200, solver=TIGHT)
    b = integrate(CART_FLAT, (q0[0][0], q0[0][1], q0[1][0], q0[1][1]), v0=v0, h=h, n_steps=200, solver=TIGHT)
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


@pytest.mark.parametrize("name", ["rolling_ball", "cart"])
def test_parts_of_a_batched_trajectory_follow_each_schemes_sign(name):
    """parts() on a batched trajectory (made up here: no integration): each subsystem's share
    of the multipliers as forces, ``-A_i(q_k)^T mu / h`` for plus and symmetric, ``+`` for
    minus (53d), for the interaction rows and the subsystem's own rows separately."""
    from manifold_dirac._run.trajectory import Trajectory

    sysm = worked(name)[0]
    rng = np.random.default_rng(5)
    K, B, n, m, h = 3, (2,), sysm.dim, sysm.n_constraints, 0.1
    q = sysm.Q.random_point(rng, (K + 1, *B))
    mu = rng.standard_normal((K, *B, m))
    arrays = {f: rng.standard_normal((K + 1, *B, n)) for f in ("p", "v")}
    A = np.asarray(sysm.evaluate("constraint_matrix", _at(q, slice(0, K))))
    rows = sysm.constraint_rows()
    for scheme, sign in (("plus", -1.0), ("symmetric", -1.0), ("minus", 1.0)):
        tr = Trajectory(t=np.arange(K + 1) * h, q=q, energy=np.zeros((K + 1, *B)), xi=np.zeros((K, *B, n)),
                        mu=mu, constraint_residual=np.zeros((K, *B)), residual=np.zeros((K, *B)),
                        iterations=np.zeros((K, *B), int), status=np.zeros(B, int),
                        meta={"h": h, "scheme": scheme}, **arrays)
        parts = sysm.parts(tr)
        assert list(parts) == list(sysm.names)
        for i, (part, (a, b)) in enumerate(zip(parts.values(), sysm.subsystem_slices.values())):
            for field, r in (("interaction_force", rows["interaction"]),
                             ("constraint_force", rows[part.name])):
                want = sign * np.einsum("kbri,kbr->kbi", A[:, :, r, a:b], mu[:, :, r]) / h
                np.testing.assert_allclose(getattr(part, field), want, rtol=1e-14, atol=1e-14, err_msg=field)
            np.testing.assert_array_equal(part.v, arrays["v"][..., a:b])
            np.testing.assert_array_equal(part.p, arrays["p"][..., a:b])
            for x, y in zip(_flat(part.q), _flat(q[i])):
                np.testing.assert_array_equal(x, y)


# ------------------------------------------------- what the comparison can catch
FLIPPED = {}


def _flipped_chain():
    """The torn chain with its interaction row's sign flipped, run by the subsystem route (once)."""
    if not FLIPPED:
        torn, q0, _, h, n = worked("mass_spring")
        wrong_row = linear_interaction({("left", 1): 1.0, ("right", 0): 1.0})  # y' + x2' = 0
        flipped = interconnect(*torn.subsystems, interaction=wrong_row, name="mass_spring_flipped")
        v0 = np.array([0.1, 0.0, 0.0])
        a = integrate(flipped, q0, v0=v0, h=h, n_steps=n, solver=TIGHT,
                      discrete_lagrangian=SubsystemDiscreteLagrangian(flipped, "midpoint"))
        FLIPPED["run"] = (a, flipped, (q0, v0, h, n))
    return FLIPPED["run"]


def test_a_wrong_interaction_makes_the_routes_disagree():
    """A flipped sign in one interaction row (``y' = -x2'`` instead of ``y' = x2'`` in the
    torn chain) makes the subsystem route differ from the hand-written reference.

    Both start from the same data, which satisfies either constraint (``y' = x2' = 0``),
    and share scheme, rule and solver, so only the interaction differs.

    What the comparison with the hand-written route can catch: anything in the
    interconnected system that is not typed in again by hand -- the interaction's
    one-forms (a flipped sign, a wrong index, a wrong helper), the placement of the
    subsystems' own one-forms in ``blockdiag(A_i)``, the Lagrangian split
    ``L = sum L_i(q_i, v_i)``, the subsystems' analytic partials (the reference uses
    automatic ones) and the block assembly of ``SubsystemDiscreteLagrangian``.

    What it cannot catch: anything both routes share -- the schemes, rules, Newton
    solve and the product retraction of the engine, and a misreading of the paper
    written identically into the library and into the reference; nor an error
    that leaves the motion unchanged (a flipped rolling row of the free rolling
    disk only mirrors the wheel angle, so its body path alone would not show it).

    :func:`test_a_shared_code_comparison_cannot_see_a_wrong_interaction` shows why the
    reference is typed in.
    """
    a, _, (q0, v0, h, n) = _flipped_chain()
    b = integrate(HAND["mass_spring"], q0, v0=v0, h=h, n_steps=n, solver=TIGHT)
    assert a.ok and b.ok
    assert np.max(np.abs(a.q[1] - b.q[1])) > 1e-2


@pytest.mark.slow
def test_a_shared_code_comparison_cannot_see_a_wrong_interaction():
    """Why the reference is typed in: comparing the subsystem route of the flipped chain of
    :func:`test_a_wrong_interaction_makes_the_routes_disagree` with a product route built
    from the interconnected system's own functions (``hand_interconnected``, which shares
    the wrong row) agrees to round-off -- that comparison checks the discretization only."""
    a, flipped, (q0, v0, h, n) = _flipped_chain()
    shared = integrate(hand_interconnected(flipped), q0, v0=v0, h=h, n_steps=n, solver=TIGHT)
    for x, y in zip(_flat(a.q), _flat(shared.q)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-11)


@pytest.mark.slow
def test_a_wrong_lagrangian_split_makes_the_routes_disagree():
    """The subsystem route evaluates each ``L_i`` on its own block and never the product's
    ``L``: a product Lagrangian that is not ``sum L_i(q_i, v_i)`` -- here the right
    subsystem handed the left's configuration block, an indexing bug -- gives another
    flow even when both routes share the very same one-forms (so this is a check of the
    split, independent of the interaction)."""
    torn, q0, v0, h, n = worked("mass_spring")
    left, right = torn.subsystems

    def L_missplit(q, v):
        return left.lagrangian(q[0], v[:2]) + right.lagrangian(q[0][:1], v[2:])

    missplit = LagrangeDiracSystem(torn.Q, L_missplit, constraint=lambda q: torn.constraint_matrix(q),
                                   name="missplit")
    a = integrate(torn, q0, v0=v0, h=h, n_steps=n, solver=TIGHT,
                  discrete_lagrangian=subsystem_rule("mass_spring", "midpoint"))
    b = integrate(missplit, q0, v0=v0, h=h, n_steps=n, solver=TIGHT)
    assert a.ok and b.ok
    assert np.max(np.abs(a.q[0] - b.q[0])) > 1e-2


# ----------------------------------------------------------------- bad input
def test_bad_interaction_shape():
    a = pendulum()
    b = LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v @ v, name="b")
    msg = r"constant one-forms are a \(r, 3\) matrix in frame coordinates, got shape \(1, 2\)"
    with pytest.raises(ValueError, match=msg):
        interconnect(a, b, interaction=Interaction(np.ones((1, 2))))
    with pytest.raises(ValueError, match=r"must have shape \(r, N\) with N = 3, got \(1, 2\)"):
        interconnect(a, b, interaction=Interaction(lambda q: jnp.ones((1, 2)), label="callable S"))


def test_unknown_subsystem_in_a_helper():
    a, b = pendulum(), harmonic_oscillator()
    with pytest.raises(ValueError, match="no subsystem named 'wheel'"):
        interconnect(a, b, interaction=equal_velocities(("wheel", 0), ("pendulum", 0)))
    with pytest.raises(ValueError, match="component 3 does not exist"):
        interconnect(a, b, interaction=equal_velocities(("pendulum", 3), ("harmonic_oscillator", 0)))


def test_name_collision():
    with pytest.raises(ValueError, match="subsystem name collision: 'pendulum'"):
        interconnect(pendulum(), pendulum())
    ok = interconnect(pendulum(), pendulum(), names=("p1", "p2"))
    assert ok.names == ("p1", "p2")


def test_initial_state_outside_delta_q():
    rd = worked("rolling_disk")[0]
    with pytest.raises(ValueError, match="v0 is not in the constraint distribution"):
        integrate(rd, (SE2().identity(), np.zeros(1)), v0=np.array([0.7, 1.0, 0, 1.0]), h=0.1, n_steps=1)


def test_rank_drop_is_refused():
    """Sigma repeating the body's own no-slip constraint: Delta ∩ Sigma is not
    regular as declared (dependent one-forms)."""
    body_wheel = worked("rolling_disk")[0]
    again = interconnect(*body_wheel.subsystems, interaction=body_wheel.interaction
                         + linear_interaction({("body", 2): 1.0}))
    with pytest.raises(ValueError, match=r"linearly dependent at q0 \(rank 2 < 3 rows"):
        integrate(again, (SE2().identity(), np.zeros(1)), v0=np.array([0.7, 2 * R, 0, 2.0]), h=0.1, n_steps=1)


def test_subsystem_rule_misuse_is_refused():
    """A SubsystemDiscreteLagrangian belongs to one system; a product force needs one set of nodes."""
    torn = worked("mass_spring")[0]
    with pytest.raises(ValueError, match="needs an InterconnectedSystem"):
        SubsystemDiscreteLagrangian(MONOLITHIC)
    with pytest.raises(ValueError, match="3 rules for 2 subsystems"):
        SubsystemDiscreteLagrangian(torn, ["midpoint"] * 3)
    forced = interconnect(*torn.subsystems, interaction=torn.interaction, force=lambda t, q, v: -0.1 * v)
    with pytest.raises(ValueError, match="same rule nodes"):
        SubsystemDiscreteLagrangian(forced, ["midpoint", "trapezoid"])
    other = SubsystemDiscreteLagrangian(forced, "midpoint")
    with pytest.raises(ValueError, match="build one for the system you integrate"):
        other.evaluate(torn, worked("mass_spring")[1], jnp.zeros(3), StepContext(0.1, 0.0))
    assert subsystem_rule("mass_spring", "midpoint") == SubsystemDiscreteLagrangian(torn, "midpoint")
    assert subsystem_rule("mass_spring", "midpoint") != other


def test_subsystem_parameters_reach_their_subsystem():
    """Subsystems with ``params`` keep them: the product's params are the tuple of theirs,
    each function of the product hands every subsystem its own."""
    k_sys = LagrangeDiracSystem(Euclidean(1), lambda q, v, p: 0.5 * v @ v - 0.5 * p["k"] * q @ q,
                                force=lambda t, q, v, p: -p["c"] * v, params={"k": 2.0, "c": 0.5},
                                name="spring")
    plain = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v - 0.5 * q @ q, name="plain")
    both = interconnect(k_sys, plain, interaction=equal_velocities(("spring", 0), ("plain", 0), 2.0))
    # the subsystems' params, then the interconnection's own (the interaction's ratio)
    assert both.params == ({"k": 2.0, "c": 0.5}, None, {"interaction": ({"ratio": 2.0},)})
    q, v = (jnp.array([1.0]), jnp.array([3.0])), jnp.array([0.4, 0.2])
    assert float(both.lagrangian(q, v, both.params)) == pytest.approx(0.5 * 0.16 - 1.0 + 0.5 * 0.04 - 4.5)
    np.testing.assert_allclose(both.force(0.0, q, v, both.params), [-0.2, 0.0])
    np.testing.assert_allclose(both.partials(q, v, both.params)[0], [-2.0, -3.0])
    np.testing.assert_allclose(both.constraint_matrix(q, both.params), [[1.0, -2.0]])
    other = ({"k": 2.0, "c": 0.5}, None, {"interaction": ({"ratio": 3.0},)})
    np.testing.assert_allclose(both.constraint_matrix(q, other), [[1.0, -3.0]])
    np.testing.assert_allclose(both.interaction_matrix(q, other), [[1.0, -3.0]])
    assert both.n_constraints == 1
    # an interaction without params (a constant matrix) adds nothing: the tuple of the subsystems' params
    fixed = interconnect(k_sys, plain, interaction=Interaction(np.array([[1.0, -2.0]])))
    assert fixed.params == ({"k": 2.0, "c": 0.5}, None)
    assert fixed.has_constant_constraint
    np.testing.assert_allclose(fixed.constraint_matrix(q, fixed.params), [[1.0, -2.0]])


class CoupledPlane(Euclidean):
    """R^2 with a retraction that couples the two coordinates:
    ``R_q(xi) = q + (xi0 + c xi0 xi1, xi1)`` -- a valid retraction, not a product one."""

    c = 0.5

    def __init__(self):
        super().__init__(2, retraction="coupled")

    def __repr__(self):
        return "CoupledPlane()"

    def _key(self):
        return ("CoupledPlane", 2)

    def retract(self, q, xi):
        xi = jnp.asarray(xi)
        return q + jnp.stack([xi[..., 0] + self.c * xi[..., 0] * xi[..., 1], xi[..., 1]], -1)

    def inverse_retract(self, q0, q1):
        d = jnp.asarray(q1) - q0
        return jnp.stack([d[..., 0] / (1 + self.c * d[..., 1]), d[..., 1]], -1)

    def _J1(self, d):
        g = 1 + self.c * d[..., 1]
        one, zero = jnp.ones_like(g), jnp.zeros_like(g)
        return jnp.stack([jnp.stack([1 / g, -self.c * d[..., 0] / g**2], -1), jnp.stack([zero, one], -1)], -2)

    def retract_with_inverse_jacobians(self, q0, xi):
        q1 = self.retract(q0, xi)
        J1 = self._J1(q1 - q0)
        return q1, -J1, J1

    def retract_with_jacobians(self, q, xi):
        xi = jnp.asarray(xi)
        one, zero = jnp.ones_like(xi[..., 0]), jnp.zeros_like(xi[..., 0])
        Jx = jnp.stack([jnp.stack([1 + self.c * xi[..., 1], self.c * xi[..., 0]], -1),
                        jnp.stack([zero, one], -1)], -2)
        return self.retract(q, xi), jnp.broadcast_to(jnp.eye(2), Jx.shape), Jx

    def in_domain(self, xi):
        return 1 + self.c * jnp.asarray(xi)[..., 1] > 0


@register_retraction(CoupledPlane)
class Coupled(Retraction):
    """The coupled retraction of :class:`CoupledPlane` (not symmetric)."""

    name = "coupled"
    symmetric = False


TWO_OSC = interconnect(harmonic_oscillator(), harmonic_oscillator(), names=("a", "b"))
COUPLED = LagrangeDiracSystem(CoupledPlane(), lambda q, v: 0.5 * v @ v - 0.5 * q @ q)


@pytest.mark.slow
def test_a_non_product_retraction_breaks_the_equality():
    """The equality of the two routes needs the product retraction: the same
    two oscillators on R^2 with a coupled retraction give another discrete flow."""
    from manifold_dirac.testing import check_manifold_laws

    # a valid retraction
    check_manifold_laws(CoupledPlane(), seeds=range(2), regimes=("near_zero", "generic"))
    q0, v0 = np.array([1.0, 0.5]), np.array([0.0, 1.0])
    a = integrate(TWO_OSC, (q0[:1], q0[1:]), v0=v0, h=0.1, n_steps=50, solver=TIGHT,
                  discrete_lagrangian=SubsystemDiscreteLagrangian(TWO_OSC, "midpoint"))
    b = integrate(COUPLED, q0, v0=v0, h=0.1, n_steps=50, solver=TIGHT)
    diff = np.max(np.abs(np.concatenate([a.q[0], a.q[1]], -1) - b.q))
    assert diff > 1e-4


def _F(t, q, v):
    return -0.3 * v + 0.1 * jnp.sin(t)


_TORN = worked("mass_spring")[0]
TORN_FORCED = interconnect(*_TORN.subsystems, interaction=_TORN.interaction, force=_F, name="forced_chain")


@pytest.mark.slow
def test_product_level_forces_in_the_subsystem_route():
    """interconnect(..., force=) and a control covector u (added to the force, held over a
    step) act in both routes alike. The control is applied at the first step only, so the
    first step checks u (with the force) and the rest the force alone; one compiled run per
    route covers both (the numpy engine's test ran them separately)."""
    torn = TORN_FORCED
    q0, v0 = (np.array([0.3, -0.2]), np.array([-0.2])), np.array([0.1, 0.4, 0.4])
    U = np.zeros((40, 3))
    U[0] = 10.0
    a = integrate(torn, q0, v0=v0, h=0.05, n_steps=40, solver=TIGHT, controls=U,
                  discrete_lagrangian=SubsystemDiscreteLagrangian(torn, "midpoint"))
    b = integrate(hand_interconnected(torn), q0, v0=v0, h=0.05, n_steps=40, solver=TIGHT, controls=U)
    np.testing.assert_allclose(a.q[0], b.q[0], atol=1e-12)
    np.testing.assert_allclose(a.q[1], b.q[1], atol=1e-12)
    # the control acted: over the first step the first mass receives the impulse h u = 0.5
    # (the springs, damping and forcing give < 0.1 there)
    assert a.p[1, 0] - a.p[0, 0] > 0.3


# -------------------------------------------------- constraint forms built without scatters
def test_placed_puts_each_piece_at_its_offset_and_refuses_overlaps():
    """``_placed`` (the rows of the rolling ball's form) against the same row written with ``.at[...].set``;
    pieces in any order; an overlap, a piece past the end or at a negative offset is refused. Sensitivity: a
    piece one place off is told apart."""
    from manifold_dirac._interconnection import _placed

    a, b = jnp.array([1.5, -2.0, 3.0]), jnp.array([7.0])
    expected = jnp.zeros(9).at[2:5].set(a).at[7].set(7.0)
    np.testing.assert_array_equal(_placed(9, jnp.float64, [(2, a), (7, b)]), expected)
    np.testing.assert_array_equal(_placed(9, jnp.float64, [(7, b), (2, a)]), expected)
    np.testing.assert_array_equal(_placed(5, jnp.float64, [(0, a), (3, b)]),
                                  jnp.array([1.5, -2.0, 3.0, 7.0, 0.0]))
    assert not np.array_equal(_placed(9, jnp.float64, [(3, a), (7, b)]), expected)
    with pytest.raises(ValueError, match="overlaps"):
        _placed(9, jnp.float64, [(2, a), (4, b)])
    with pytest.raises(ValueError, match="past the length"):
        _placed(9, jnp.float64, [(7, a)])
    with pytest.raises(ValueError, match="negative offset"):
        _placed(9, jnp.float64, [(-1, b)])


def _primitives(jaxpr) -> set[str]:
    """The primitives of a jaxpr, its sub-jaxprs included."""
    out = set()
    for eqn in jaxpr.eqns:
        out.add(eqn.primitive.name)
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            out |= _primitives(sub)
    return out


def test_the_rolling_balls_constraint_form_has_no_scatter_in_its_newton_columns():
    """The rolling ball's constraint matrix and its forward-mode derivative (the Newton matrix's columns) hold no
    scatter: its rows are concatenations (the scatters of ``.at[...].set`` cost its loop 14-19 % of its compile
    time, ``docs/performance.md``). The matrix is the one of the hand-written rolling ball at a point, and the one
    of the former form written with ``.at[...].set`` bit for bit. Sensitivity: that former form shows a scatter."""
    sysm, (R0, x0) = worked("rolling_ball")[:2]
    q = (jnp.asarray(R0), jnp.asarray(x0))
    params = sysm.params

    def form(eta):
        return sysm.constraint_matrix(sysm.Q.retract(q, eta), params)

    def former(eta):  # rolling_ball_on_plane's rows as they were written: the ball at 0, the centre at 3
        rot = sysm.Q.retract(q, eta)[0]
        out = jnp.zeros((2, 5)).at[0, 0:3].set(-R * rot[1, :]).at[0, 3].set(1.0)
        return out.at[1, 0:3].set(R * rot[0, :]).at[1, 4].set(1.0)

    eta = jnp.array([0.1, -0.3, 0.2, 0.05, 0.4])
    assert "scatter" not in _primitives(jax.make_jaxpr(jax.jacfwd(form))(eta).jaxpr)
    hand = HAND["rolling_ball"]
    np.testing.assert_allclose(form(eta), hand.constraint_matrix(sysm.Q.retract(q, eta), hand.params), rtol=0,
                               atol=1e-15)
    np.testing.assert_array_equal(form(eta), former(eta))
    np.testing.assert_array_equal(jax.jacfwd(form)(eta), jax.jacfwd(former)(eta))
    assert "scatter" in _primitives(jax.make_jaxpr(jax.jacfwd(former))(eta).jaxpr)
