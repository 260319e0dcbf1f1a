"""The compiled engine against the numpy engine, exact solutions, invariants and its own contracts.

Compiled functions are shared across tests: the systems are module-level
objects (the compile cache lives with the system), and runs use a few fixed
batch shapes.

The numpy engine (the library's first engine, removed at the engine switch)
is compared through its recorded runs, ``tests/data/numpy_engine_knife_heavy_top.npz``
(``tests/data/README.md``).
"""

import functools
import importlib
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests._tiers import covering

import manifold_dirac  # noqa: F401  (float64, cache)
from manifold_dirac.analysis import observed_order
from manifold_dirac._manifolds import SO3, Euclidean
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._run.integrate import integrate
from manifold_dirac._mechanics.newton import SolverOptions
from manifold_dirac._mechanics.status import Status
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import heavy_top_reference
from manifold_dirac._errors import NonFiniteError, StepDomainError

INERTIA = jnp.array([1.0, 2.0, 3.0])
CHI = jnp.array([0.0, 0.0, 1.0])


def top_L(q, v):
    return 0.5 * jnp.sum(INERTIA * v * v) - q[2, :] @ CHI


TOP = LagrangeDiracSystem(SO3(), top_L, name="heavy_top")
TOP_CAYLEY = LagrangeDiracSystem(SO3("cayley"), top_L, name="heavy_top_cayley")
FREE = LagrangeDiracSystem(SO3(), lambda q, v: 0.5 * jnp.sum(INERTIA * v * v), name="free_rigid_body")
Q0 = SO3().exp(jnp.array([0.3, 0.1, 0.0]))
V0 = np.array([0.5, -0.2, 2.0])


def knife_edge_xy(m=1.0, J=0.5, g=9.81, alpha=0.3):
    """The inclined knife edge in coordinates (x, y, theta): A(q) varies with q."""

    def L(q, v):
        return 0.5 * m * (v[0] ** 2 + v[1] ** 2) + 0.5 * J * v[2] ** 2 + m * g * jnp.sin(alpha) * q[0]

    def A(q):
        return jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0])[None, :]

    return LagrangeDiracSystem(Euclidean(3), L, constraint=A, name="knife_edge_xy")


KNIFE = knife_edge_xy()


@functools.lru_cache(maxsize=None)
def numpy_engine_runs() -> dict[str, np.ndarray]:
    """The numpy engine's runs of the knife edge and the heavy top below, as recorded in
    ``data/numpy_engine_knife_heavy_top.npz`` (found by walking up from this file: ``tests/data``)."""
    for parent in Path(__file__).resolve().parents:
        path = parent / "data" / "numpy_engine_knife_heavy_top.npz"
        if path.is_file():
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
    raise FileNotFoundError(f"numpy_engine_knife_heavy_top.npz: no data/ directory above {__file__}")


OSC = LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v @ v - 0.5 * q @ q, name="oscillator")
DAMPED = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v - 0.5 * q @ q,
                             force=lambda t, q, v: -0.3 * v, name="damped")


# ------------------------------------------------------------ two routes
# every scheme and every rule in the default tier, the other six pairs with -m slow (tests/_tiers.py)
@pytest.mark.parametrize("scheme,rule", covering(["plus", "minus", "symmetric"], ["midpoint", "trapezoid", "rectangle+"]))
def test_knife_edge_agrees_with_numpy_engine(scheme, rule):
    """Same equations, two implementations: the compiled engine equals the numpy engine (its recorded run
    of the same system, coded in numpy)."""
    q0, v0 = np.zeros(3), np.array([0.0, 0.0, 1.0])
    tr = integrate(KNIFE, q0, v0=v0, h=0.05, n_steps=40, scheme=scheme, discrete_lagrangian=rule)
    ot = numpy_engine_runs()
    for f in ("q", "p", "v", "energy", "xi", "mu"):
        np.testing.assert_allclose(getattr(tr, f), ot[f"knife_edge_xy/{scheme}/{rule}/{f}"],
                                   rtol=0, atol=1e-11, err_msg=f)


def test_heavy_top_agrees_with_numpy_engine_and_a_wrong_lagrangian_does_not():
    tr = integrate(TOP, Q0, v0=V0, h=0.01, n_steps=200)
    ot_q, ot_p = numpy_engine_runs()["heavy_top/q"], numpy_engine_runs()["heavy_top/p"]
    np.testing.assert_allclose(tr.q, ot_q, atol=1e-12)
    np.testing.assert_allclose(tr.p, ot_p, atol=1e-12)
    wrong = LagrangeDiracSystem(SO3(), lambda q, v: top_L(q, v) - 1e-3 * q[2, 0])
    tw = integrate(wrong, Q0, v0=V0, h=0.01, n_steps=200)
    assert np.abs(tw.q[-1] - ot_q[-1]).max() > 1e-5


# -------------------------------------------------------------- orders
HS = np.array([0.04, 0.02, 0.01])


@pytest.mark.parametrize("scheme", ["plus", "symmetric"])
@pytest.mark.parametrize("rule,order", [("midpoint", 2), ("trapezoid", 2), ("rectangle+", 1)])
def test_oscillator_orders(scheme, rule, order):
    q0, v0, T = np.array([1.0, 0.0]), np.array([0.0, 0.5]), 2.0
    exact = np.array([np.cos(T), 0.5 * np.sin(T)])
    errs = [np.abs(integrate(OSC, q0, v0=v0, h=h, n_steps=int(round(T / h)), scheme=scheme,
                             discrete_lagrangian=rule).q[-1] - exact).max() for h in HS]
    assert Integrator(OSC, 0.1, scheme, rule).order == order
    assert observed_order(HS, errs) == pytest.approx(order, abs=0.1)


def test_forced_damped_oscillator_is_second_order():
    """Forces by the discrete Lagrange-d'Alembert-Pontryagin principle (24)."""
    c, T = 0.3, 2.0
    w = np.sqrt(1 - c**2 / 4)
    exact = np.exp(-c * T / 2) * (np.cos(w * T) + c / (2 * w) * np.sin(w * T))
    errs = [abs(integrate(DAMPED, np.array([1.0]), v0=np.array([0.0]), h=h, n_steps=int(round(T / h))).q[-1, 0] - exact)
            for h in HS]
    assert observed_order(HS, errs) == pytest.approx(2, abs=0.1)


def test_inclined_knife_edge_symmetric_scheme_is_second_order_against_the_exact_solution():
    g, a, w, T = 9.81, 0.3, 1.0, 1.0
    c = g * np.sin(a) / (2 * w**2)
    exact = np.array([c * np.sin(w * T) ** 2, c * (w * T - 0.5 * np.sin(2 * w * T)), w * T])
    errs = [np.abs(integrate(KNIFE, np.zeros(3), v0=np.array([0.0, 0.0, w]), h=h,
                             n_steps=int(round(T / h))).q[-1] - exact).max() for h in HS]
    assert observed_order(HS, errs) == pytest.approx(2, abs=0.1)


@pytest.mark.parametrize("system", [TOP, pytest.param(TOP_CAYLEY, marks=pytest.mark.slow)], ids=["exp", "cayley"])
def test_heavy_top_second_order(system):
    T = 1.0
    ref = heavy_top_reference(T, np.asarray(Q0), V0)
    errs = [np.abs(integrate(system, Q0, v0=V0, h=h, n_steps=int(round(T / h))).q[-1] - ref).max() for h in HS]
    assert observed_order(HS, errs) == pytest.approx(2, abs=0.1)


# ----------------------------------------------------------- invariants
@pytest.mark.slow
def test_free_rigid_body_spatial_momentum_to_round_off_over_1e4_steps():
    tr = integrate(FREE, Q0, v0=V0, h=0.05, n_steps=10_000, stride=100)
    pi = np.einsum("kij,kj->ki", tr.q, tr.p)
    assert np.abs(pi - pi[0]).max() < 1e-13 * np.abs(pi[0]).max() * 10
    assert np.abs(np.einsum("kji,kjl->kil", tr.q, tr.q) - np.eye(3)).max() < 1e-13
    assert tr.energy_error < 1e-3


def test_results_are_float64_numpy_arrays():
    tr = integrate(TOP, Q0, v0=V0, h=0.01, n_steps=5)
    for f in ("t", "q", "p", "v", "energy", "xi", "mu", "residual"):
        a = getattr(tr, f)
        assert isinstance(a, np.ndarray) and a.dtype == np.float64, f


# -------------------------------------------------- compile once, trace h
def test_changing_h_initial_data_and_step_count_does_not_recompile():
    integrate(TOP, Q0, v0=V0, h=0.01, n_steps=10)
    engine = importlib.import_module("manifold_dirac._run.programs")
    fn = next(f for k, f in engine.compiled_functions(TOP).items() if k[-1][0] == "chunk")
    before = fn._cache_size()
    integrate(TOP, SO3().exp(jnp.array([0.0, 0.2, 0.1])), v0=2 * V0, h=0.003, n_steps=1000)
    integrate(TOP, Q0, p0=INERTIA * V0, h=0.02, n_steps=3)
    assert fn._cache_size() == before


@pytest.mark.slow
def test_compiled_functions_are_freed_with_their_system():
    """The compiled chunk refers back to its system: the table of programs is bounded, so a system whose
    programs have left it is freed (and a system built again from the same functions shares them)."""
    import gc
    import weakref

    from manifold_dirac._mechanics import compile_cache

    def make():
        return LagrangeDiracSystem(Euclidean(1), _spring)

    sysm = make()
    integrate(sysm, np.array([1.0]), v0=np.array([0.0]), h=0.1, n_steps=3)
    assert engine_table_has(make())  # shared with an equal system
    ref = weakref.ref(sysm)
    del sysm
    gc.collect()
    assert ref() is not None  # held by its programs while they are in the table
    for i in range(compile_cache.MAX_ENTRIES):
        compile_cache.cached(("another program", i), lambda: (lambda: None))
    gc.collect()
    assert ref() is None


def _spring(q, v):
    return 0.5 * v @ v - 0.5 * q @ q


def engine_table_has(system) -> bool:
    engine = importlib.import_module("manifold_dirac._run.programs")
    return bool(engine.compiled_functions(system))


# ------------------------------------------------------------- stride
def test_stride_stores_every_kth_point_and_the_last():
    full = integrate(TOP, Q0, v0=V0, h=0.01, n_steps=100)
    sub = integrate(TOP, Q0, v0=V0, h=0.01, n_steps=100, stride=7)
    assert sub.t.shape == (16,) and sub.xi.shape[0] == 15
    np.testing.assert_allclose(sub.t, np.r_[np.arange(0, 100, 7), 100] * 0.01, atol=1e-14)
    np.testing.assert_array_equal(sub.q[-1], full.q[-1])
    np.testing.assert_array_equal(sub.v[:-1], full.v[:-1:7])
    np.testing.assert_array_equal(sub.v[-1], full.v[-1])
    # the step fields of a stored point are those of the step from it, R_{q_k}^{-1}(q_(k+1))
    np.testing.assert_allclose(sub.xi, full.xi[::7], rtol=0, atol=1e-15)
    np.testing.assert_allclose(sub.mu, full.mu[::7], rtol=0, atol=1e-15)
    np.testing.assert_array_equal(sub.iterations, full.iterations[::7])


# -------------------------------------------------------------- batches
@pytest.mark.slow
def test_batch_members_equal_single_runs():
    """Same equations per member; XLA vectorizes the batched program differently (SIMD, fused
    multiply-adds), so members agree with single runs to the last bit or two, not bit for bit."""
    q0 = jnp.stack([Q0, SO3().exp(jnp.array([0.1, 0.0, 0.2]))])
    v0 = np.stack([V0, 0.5 * V0])
    tb = integrate(TOP, q0, v0=v0, h=0.01, n_steps=50)
    for i in range(2):
        ts = integrate(TOP, q0[i], v0=v0[i], h=0.01, n_steps=50)
        np.testing.assert_allclose(tb.q[:, i], ts.q, rtol=0, atol=1e-14)
        np.testing.assert_allclose(tb.energy[:, i], ts.energy, rtol=1e-14)


def test_a_failing_member_is_marked_and_the_others_go_on():
    nasty = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v - jnp.log(2.0 - q[0]), name="log_wall")
    q0 = np.array([[0.0], [1.9]])
    tr = integrate(nasty, q0, v0=np.array([[0.1], [5.0]]), h=0.1, n_steps=20)
    assert tr.status.tolist()[0] == Status.OK and tr.status[1] != Status.OK
    assert np.all(np.isfinite(tr.q[:, 0])) and np.isnan(tr.energy[-1, 1])


# ---------------------------------------------------- failures as values
def test_nan_in_the_lagrangian_is_a_failure_naming_the_function_and_step():
    bad = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v - jnp.sqrt(1.0 - q[0]), name="sqrt_wall")
    with pytest.raises(NonFiniteError) as e:
        integrate(bad, np.array([0.5]), v0=np.array([1.0]), h=0.1, n_steps=50)
    msg = str(e.value)
    assert "step" in msg and "NaN" in msg
    tr = e.value.trajectory
    assert tr is not None and tr.n_points >= 2 and np.all(np.isfinite(tr.q[:-1]))


@pytest.mark.slow
def test_a_step_beyond_the_retraction_domain_is_refused():
    """A rotation by more than pi per step with exp aliases the velocity: an error, not a result."""
    with pytest.raises(StepDomainError, match="smaller h"):
        integrate(FREE, Q0, v0=np.array([0.0, 0.0, 10.0]), h=1.0, n_steps=3)


def test_a_lagrangian_in_plain_numpy_is_refused_with_what_to_change():
    with pytest.raises(TypeError, match="jax.numpy"):
        LagrangeDiracSystem(Euclidean(2), lambda q, v: float(np.sum(v * v)))


def test_a_lagrangian_for_batches_is_refused():
    with pytest.raises(ValueError, match="scalar"):
        LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v * v)


def test_solver_options_are_validated():
    with pytest.raises(ValueError):
        SolverOptions(rtol=0)
    with pytest.raises(ValueError):
        SolverOptions(max_iter=0)


# ------------------------------------------------------- p0 and save
def test_p0_only_run_records_the_constrained_legendre_velocity():
    q0 = np.zeros(3)
    v0 = np.array([0.0, 0.0, 1.0])
    tv = integrate(KNIFE, q0, v0=v0, h=0.05, n_steps=5)
    tp = integrate(KNIFE, q0, p0=tv.p[0], h=0.05, n_steps=5)
    np.testing.assert_allclose(tp.v[0], v0, atol=1e-12)
    np.testing.assert_allclose(tp.q, tv.q, atol=1e-14)


def test_save_load_round_trip(tmp_path):
    tr = integrate(TOP, Q0, v0=V0, h=0.01, n_steps=10)
    path = tr.save(tmp_path / "top.npz")
    back = type(tr).load(path)
    assert back.equals(tr)


@pytest.mark.slow  # CI time: rollout's gradient tests check derivatives through the step map against differences
def test_forward_derivative_through_the_step_map_matches_finite_differences():
    """The door to differentiable simulation: d(p_1)/d(v_0) by forward mode through the compiled step."""
    sm = Integrator(TOP, 0.01).stepmap

    def f(v):
        st = sm.initial(Q0, INERTIA * v, 0.01 * v)
        new, _ = sm.step(st, 0, 0.0, 0.01, None)
        return new.p

    J = np.asarray(jax.jacfwd(f)(jnp.asarray(V0)))
    eps = 1e-6
    fd = np.stack([(np.asarray(f(V0 + eps * e)) - np.asarray(f(V0 - eps * e))) / (2 * eps) for e in np.eye(3)], -1)
    np.testing.assert_allclose(J, fd, rtol=1e-7, atol=1e-8)
