"""Fault injection over the public entry points: each case asserts behaviour, not just "raises".

For every bad input, ill-posed system, damaged file or failing cell: the exception's type, that
its message names the argument (or step, member, field), the status values, and the partial
results that are kept. The systems are built once per module so that their compiled steps are
shared by the cases.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests._tiers import covering

import manifold_dirac
from manifold_dirac import integrate, rollout
from manifold_dirac._errors import IllPosedStepError, IllPosedSystemError, StepError
from manifold_dirac._manifolds import Euclidean
from manifold_dirac._manifolds.se3 import SE3
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._mechanics.newton import SolverOptions
from manifold_dirac._mechanics.status import Status
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac._run.trajectory import Trajectory
from manifold_dirac.systems.circuits import lc_circuit


# ------------------------------------------------------------------ systems, built once
@functools.lru_cache(maxsize=None)
def oscillator() -> LagrangeDiracSystem:
    return LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v @ v - 0.5 * q @ q, name="oscillator")


@functools.lru_cache(maxsize=None)
def holonomic_only() -> LagrangeDiracSystem:
    return LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v @ v, holonomic=lambda q: jnp.array([q[0] - q[1]]),
                               name="line")


@functools.lru_cache(maxsize=None)
def circuit() -> LagrangeDiracSystem:
    return lc_circuit()


@functools.lru_cache(maxsize=None)
def vanishing_mass() -> LagrangeDiracSystem:
    """The kinetic term of x0 vanishes for x0 >= 1 (reached at step 7 with h = 0.1 from x0 = 0, v = 1)."""
    return LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * jnp.maximum(1.0 - q[0], 0.0) * v[0] ** 2
                               + 0.5 * v[1] ** 2, name="vanishing_mass")


@functools.lru_cache(maxsize=None)
def no_kinetic_term() -> LagrangeDiracSystem:
    """x1 has a potential and no kinetic term: its equation of motion is x1 = 0."""
    return LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v[0] ** 2 - 0.5 * q[0] ** 2 - 0.5 * q[1] ** 2,
                               name="no_kinetic_term")


@functools.lru_cache(maxsize=None)
def body_without_translation() -> LagrangeDiracSystem:
    """A body on SE(3) with rotational kinetic energy only: its translation is undetermined."""
    inertia = jnp.array([1.0, 2.0, 3.0])
    return LagrangeDiracSystem(SE3(), lambda q, v: 0.5 * jnp.sum(inertia * v[:3] ** 2), name="spinning_point")


@functools.lru_cache(maxsize=None)
def zero_lagrangian() -> LagrangeDiracSystem:
    return LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.0 * v[0], name="zero")


@functools.lru_cache(maxsize=None)
def finished_run() -> Trajectory:
    return integrate(oscillator(), np.array([1.0, 0.0]), np.array([0.0, 1.0]), h=0.1, n_steps=6)


Q0, V0 = np.array([1.0, 0.0]), np.array([0.0, 1.0])


def _raises(exc_type, pattern, fn):
    with pytest.raises(exc_type) as ei:
        fn()
    assert type(ei.value) is exc_type or issubclass(type(ei.value), exc_type)
    assert re.search(pattern, str(ei.value)), f"message {str(ei.value)!r} does not match {pattern!r}"
    assert "\n" not in str(ei.value).strip(), "one-line message"
    return ei.value


# ------------------------------------------------------------------ integrate: bad input
def _integrate(**kw):
    args = {"system": oscillator(), "q0": Q0, "v0": V0, "h": 0.1, "n_steps": 2}
    args.update(kw)
    return lambda: integrate(args.pop("system"), args.pop("q0"), **args)


INTEGRATE_CASES = [
    ("system None", dict(system=None), TypeError, r"integrate: system must be a LagrangeDiracSystem, got NoneType"),
    ("system str", dict(system="pendulum"), TypeError, r"system must be a LagrangeDiracSystem, got str"),
    ("system int", dict(system=3), TypeError, r"system must be a LagrangeDiracSystem, got int"),
    ("q0 None", dict(q0=None), ValueError, r"q0"),
    ("q0 str", dict(q0="abc"), TypeError, r"q0"),
    ("q0 wrong shape", dict(q0=np.zeros(3)), ValueError, r"q0.*shape"),
    ("q0 nan", dict(q0=np.array([np.nan, 0.0])), ValueError, r"q0"),
    ("q0 inf", dict(q0=np.array([np.inf, 0.0])), ValueError, r"q0"),
    ("q0 complex", dict(q0=np.array([1.0 + 1j, 0.0])), TypeError, r"q0: expected real values, got complex"),
    ("v0 complex", dict(v0=np.array([1.0 + 2j, 0.0])), TypeError, r"v0: expected real values, got complex"),
    ("p0 complex", dict(v0=None, p0=np.array([1j, 0.0])), TypeError, r"p0: expected real values, got complex"),
    ("v0 str", dict(v0="ab"), TypeError, r"v0"),
    ("v0 wrong shape", dict(v0=np.zeros(3)), ValueError, r"v0.*shape"),
    ("v0 nan", dict(v0=np.array([np.nan, 0.0])), ValueError, r"v0.*non-finite"),
    ("v0 batch mismatch", dict(v0=np.zeros((3, 2))), ValueError, r"v0.*batch"),
    ("v0 and p0 missing", dict(v0=None), ValueError, r"v0.*p0"),
    ("p0 inconsistent", dict(p0=np.array([5.0, 5.0])), ValueError, r"p0 differs from dL/dv"),
    ("h zero", dict(h=0.0), ValueError, r"the step h must be a positive finite number"),
    ("h negative", dict(h=-0.1), ValueError, r"the step h"),
    ("h nan", dict(h=np.nan), ValueError, r"the step h"),
    ("h inf", dict(h=np.inf), ValueError, r"the step h"),
    ("h str", dict(h="0.1"), TypeError, r"the step h"),
    ("h bool", dict(h=True), TypeError, r"the step h"),
    ("h None", dict(h=None), TypeError, r"the step h"),
    ("h 1e-300", dict(h=1e-300), ValueError, r"h = 1e-300 is too small for float64"),
    ("h 1e-200", dict(h=1e-200), ValueError, r"too small for float64"),
    ("h 1e-160", dict(h=1e-160), ValueError, r"too small for float64"),
    ("n_steps float", dict(n_steps=2.0), ValueError, r"n_steps must be an integer >= 0"),
    ("n_steps negative", dict(n_steps=-1), ValueError, r"n_steps must be an integer >= 0"),
    ("n_steps bool", dict(n_steps=True), ValueError, r"n_steps"),
    ("n_steps str", dict(n_steps="3"), ValueError, r"n_steps"),
    ("n_steps and t_final", dict(t_final=0.2), ValueError, r"n_steps or t_final, not both"),
    ("neither n_steps nor t_final", dict(n_steps=None), ValueError, r"give n_steps .* or t_final"),
    ("t_final before t0", dict(n_steps=None, t_final=-1.0), ValueError, r"t_final = -1.0 is before t0"),
    ("t_final not whole", dict(n_steps=None, t_final=0.25), ValueError, r"not a whole number of steps"),
    ("t0 nan", dict(t0=np.nan), ValueError, r"t0 must be a finite number"),
    ("t0 None", dict(t0=None), TypeError, r"t0 must be a finite number"),
    ("stride zero", dict(stride=0), ValueError, r"stride must be an integer >= 1"),
    ("stride float", dict(stride=1.5), ValueError, r"stride"),
    ("scheme unknown", dict(scheme="rk4"), ValueError, r"unknown scheme 'rk4'"),
    ("rule unknown", dict(discrete_lagrangian="no-such-rule"), ValueError, r"unknown discrete Lagrangian 'no-such-rule'"),
    ("on_failure", dict(on_failure="ignore"), ValueError, r"on_failure must be 'raise' or 'mark'"),
    ("solver dict", dict(solver={"rtol": 1e-3}), TypeError, r"solver must be a SolverOptions"),
    ("controls shape", dict(controls=np.zeros((3, 2))), ValueError, r"controls: expected shape \(2, \*batch, 2\)"),
    ("controls nan", dict(controls=np.full((2, 2), np.nan)), ValueError, r"controls: contains non-finite"),
    ("controls str", dict(controls="x"), TypeError, r"controls"),
    ("callback not callable", dict(callback=5), TypeError, r"callback must be callable"),
]


@pytest.mark.parametrize("label, kw, exc_type, pattern", INTEGRATE_CASES, ids=[c[0] for c in INTEGRATE_CASES])
def test_integrate_refuses_bad_input_naming_it(label, kw, exc_type, pattern):
    _raises(exc_type, pattern, _integrate(**kw))


# ------------------------------------------------------------------ system construction
def _L2(q, v):
    return 0.5 * v @ v


def _Lp(q, v, p):
    return p["m"] * v @ v - p["mgl"] * q[0]


SYSTEM_CASES = [
    ("Q None", dict(Q=None), TypeError, r"Q must be a Manifold, got NoneType"),
    ("Q str", dict(Q="R2"), TypeError, r"Q must be a Manifold, got str"),
    ("L None", dict(lagrangian=None), TypeError, r"a lagrangian L\(q, v\) is required"),
    ("L int", dict(lagrangian=5), TypeError, r"lagrangian must be callable, got int"),
    ("constraint str", dict(constraint="abc"), TypeError, r"constraint must be None, a callable A\(q\).*got str 'abc'"),
    ("constraint dict", dict(constraint={"a": 1}), TypeError, r"constraint must be None"),
    ("constraint bytes", dict(constraint=b"ab"), TypeError, r"constraint must be None"),
    ("constraint object", dict(constraint=[object()]), TypeError, r"constraint must be None"),
    ("constraint complex", dict(constraint=np.array([[1j, 0.0]])), TypeError, r"constraint: one-forms must be real"),
    ("constraint scalar", dict(constraint=5), ValueError, r"constraint: constant one-forms are a \(m, 2\) matrix"),
    ("constraint wrong width", dict(constraint=np.ones((1, 3))), ValueError, r"constraint.*\(m, 2\)"),
    ("constraint nan", dict(constraint=np.array([[np.nan, 1.0]])), ValueError, r"constraint: non-finite"),
    ("params to a two-argument L", dict(params={"m": 1.0}), TypeError,
     r"params= is given, so the lagrangian is called as lagrangian\(q, v, params\), but it takes \(q, v\) only"),
    ("three-argument L without params", dict(lagrangian=_Lp), TypeError,
     r"the lagrangian takes one argument more than \(q, v\).*pass params="),
    ("params missing a key", dict(lagrangian=_Lp, params={"m": 1.0}), ValueError,
     r"params: the Lagrangian L\(q, v\) looks up the key 'mgl', which the system's params do not have \(keys: 'm'\)"),
    ("force of two arguments", dict(force=lambda q, v: v), TypeError,
     r"the force must be callable as force\(t, q, v\)"),
    ("partials of one argument", dict(partials=lambda q: (q, q)), TypeError,
     r"the partials must be callable as partials\(q, v\)"),
    ("holonomic of two arguments", dict(holonomic=lambda q, v: q[:1]), TypeError,
     r"the holonomic takes one argument more than \(q\)"),
    ("constraint function of two arguments", dict(constraint=lambda q, v: q[None]), TypeError,
     r"the constraint takes one argument more than \(q\)"),
    ("force not callable", dict(force=3), TypeError, r"force must be callable, got int"),
    ("L returns a vector", dict(lagrangian=lambda q, v: v), ValueError, r"the Lagrangian L\(q, v\) must return a scalar"),
    ("L returns None", dict(lagrangian=lambda q, v: None), TypeError, r"Lagrangian L\(q, v\) must return a scalar"),
    ("L returns complex", dict(lagrangian=lambda q, v: (1j * v @ v)), TypeError, r"must return real values"),
    ("L returns int", dict(lagrangian=lambda q, v: jnp.sum(q > 0)), TypeError, r"floating-point"),
    ("force wrong shape", dict(force=lambda t, q, v: jnp.zeros(3)), ValueError, r"force F\(t, q, v\).*\(2,\)"),
    ("holonomic 2-d", dict(holonomic=lambda q: q[None, :]), ValueError, r"holonomic constraint g\(q\).*\(r,\)"),
    ("holonomic empty", dict(holonomic=lambda q: q[:0]), ValueError, r"returned no constraints"),
    ("too many constraints", dict(constraint=np.eye(2), holonomic=lambda q: q[:1]), ValueError,
     r"at most 2 constraints"),
]


@pytest.mark.parametrize("label, kw, exc_type, pattern", SYSTEM_CASES, ids=[c[0] for c in SYSTEM_CASES])
def test_system_construction_names_the_argument(label, kw, exc_type, pattern):
    args = {"Q": Euclidean(2), "lagrangian": _L2}
    args.update(kw)
    Q, L = args.pop("Q"), args.pop("lagrangian")
    _raises(exc_type, pattern, lambda: LagrangeDiracSystem(Q, L, **args))


@pytest.mark.parametrize("L, params", [(lambda q, v, p=None: v @ v, None), (lambda q, v, p=None: v @ v, {"m": 1.0}),
                                       (lambda *a: a[1] @ a[1], None), (lambda *a: a[1] @ a[1], {"m": 1.0})],
                         ids=["default params, none given", "default params, given", "varargs", "varargs, params"])
def test_system_construction_accepts_the_flexible_signatures(L, params):
    """A sensitivity check of the arity test: defaults and *args are accepted both ways."""
    assert LagrangeDiracSystem(Euclidean(2), L, params=params).dim == 2


# ------------------------------------------------------------------ the start: ill-posed systems
def test_holonomic_only_bad_v0_names_dg():
    e = _raises(ValueError, r"\|dg\(q0\) v0\| = 1\.000e\+00", lambda: integrate(
        holonomic_only(), np.zeros(2), np.array([1.0, 0.0]), h=0.1, n_steps=2))
    assert "A(q0) v0|" not in str(e)


# every rule and every scheme in the default tier, the other pairs with -m slow (tests/_tiers.py)
@pytest.mark.parametrize("scheme,rule", covering(["symmetric", "plus", "minus"], ["gauss4", "gauss6"]))
def test_galerkin_rules_refuse_a_degenerate_constrained_lagrangian(rule, scheme):
    """The LC circuit's capacitor charge has no kinetic term: the internal stages are fixed by the
    potential alone in that direction (the charge stayed at 1, or ended at -0.062, not -0.654)."""
    _raises(IllPosedSystemError,
            rf"discrete Lagrangian '{rule}' cannot integrate lc_circuit: .*frame direction \[1\., 0\.\] \(q_C\)"
            r".*Use discrete_lagrangian='midpoint'",
            lambda: integrate(circuit(), np.array([1.0, 0.0]), np.zeros(2), h=0.01, n_steps=200,
                              discrete_lagrangian=rule, scheme=scheme))


@pytest.mark.parametrize("scheme", ["symmetric", "plus", "minus"])
def test_the_midpoint_rule_integrates_the_circuit_exactly_enough(scheme):
    """The refusal is specific: the midpoint rule on the same circuit is right to 2e-4 at t = 2."""
    from manifold_dirac.systems.circuits import lc_circuit_exact

    tr = integrate(circuit(), np.array([1.0, 0.0]), np.zeros(2), h=0.01, n_steps=200, scheme=scheme)
    assert tr.ok and abs(tr.q[-1, 0] - lc_circuit_exact(2.0, 1.0, 0.0)) < 2e-4


def test_undetermined_translation_of_a_body_is_refused():
    e = _raises(IllPosedSystemError, r"spinning_point are singular at the start .*do not determine the step xi in the "
                r"frame direction", lambda: integrate(body_without_translation(), SE3().default_point(),
                                                      np.array([0.1, 0.2, 0.3, 0.0, 0.0, 0.0]), h=0.1, n_steps=5))
    assert "frame component 3" in str(e) or "frame component 4" in str(e) or "frame component 5" in str(e)


@pytest.mark.parametrize("x1", [1.0, -0.5, 1e-3])
def test_a_coordinate_without_kinetic_term_off_its_equation_is_refused(x1):
    _raises(IllPosedSystemError, r"violate an algebraic equation of motion of no_kinetic_term: in the direction "
            r"\[0\., 1\.\] \(x1\)", lambda: integrate(no_kinetic_term(), np.array([1.0, x1]), np.zeros(2), h=0.1,
                                                      n_steps=5))


def test_a_coordinate_without_kinetic_term_on_its_equation_runs():
    """Sensitivity: started on x1 = 0 the same system runs and x1 stays 0 (no flip)."""
    tr = integrate(no_kinetic_term(), np.array([1.0, 0.0]), np.zeros(2), h=0.1, n_steps=5)
    assert tr.ok and np.all(tr.q[:, 1] == 0.0)


def test_a_batch_member_off_its_algebraic_equation_is_named():
    q0 = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.5]])
    _raises(IllPosedSystemError, r"\(batch index \[2\]\)", lambda: integrate(no_kinetic_term(), q0, np.zeros((3, 2)),
                                                                              h=0.1, n_steps=2))


def test_zero_lagrangian_refused_by_integrate_and_marked_by_rollout():
    _raises(IllPosedSystemError, r"does not depend on the velocity", lambda: integrate(
        zero_lagrangian(), np.zeros(2), np.ones(2), h=0.1, n_steps=3))
    r = rollout(zero_lagrangian(), jnp.zeros(2), jnp.ones(2), h=0.1, n_steps=3)
    assert int(r.status) == Status.ILL_POSED and int(r.fail_step) == 0 and np.all(np.isnan(r.q[1:]))
    _raises(IllPosedStepError, r"step 0", r.check)


@pytest.mark.slow  # ~14 s cold (an SE(3) rollout under jit); a rollout marked ill-posed stays in the default tier above
def test_rollout_of_an_undetermined_body_is_marked_ill_posed_also_under_jit():
    sysm = body_without_translation()
    f = jax.jit(lambda v: rollout(sysm, SE3().default_point(), v, h=0.1, n_steps=2).status)
    assert int(f(jnp.array([0.1, 0.2, 0.3, 0.0, 0.0, 0.0]))) == Status.ILL_POSED


# ------------------------------------------------------------------ failures during a run
@pytest.mark.slow
def test_a_step_that_becomes_singular_has_the_status_of_its_exception():
    with pytest.raises(IllPosedStepError) as ei:
        integrate(vanishing_mass(), np.zeros(2), np.ones(2), h=0.1, n_steps=100)
    assert ei.value.step == 7 and int(ei.value.trajectory.status) == Status.ILL_POSED
    assert "singular" in ei.value.trajectory.messages[0]


@pytest.mark.slow
def test_a_batch_member_that_becomes_singular_is_marked_ill_posed():
    tr = integrate(vanishing_mass(), np.zeros((2, 2)), np.array([[1.0, 1.0], [0.1, 1.0]]), h=0.1, n_steps=20)
    assert list(tr.status) == [Status.ILL_POSED, Status.OK] and not tr.ok
    assert "batch member [0]" in tr.messages[0] and "singular" in tr.messages[0]
    assert np.all(np.isfinite(tr.q[:, 1])) and np.all(np.isnan(tr.v[8:, 0]))


@pytest.mark.parametrize("stride", [1, 2, 3, 4, 5, 8])
def test_a_failed_run_keeps_its_last_good_state_whatever_the_stride(stride):
    with pytest.raises(StepError) as ei:
        integrate(vanishing_mass(), np.zeros(2), np.ones(2), h=0.1, n_steps=100, stride=stride)
    tr = ei.value.trajectory
    ref = _stride_one_failure()
    assert ei.value.step == 7 and tr.t[-1] == pytest.approx(0.7)
    np.testing.assert_allclose(tr.q[-1], ref.q[-1], rtol=0, atol=1e-14)
    np.testing.assert_allclose(tr.p[-1], ref.p[-1], rtol=0, atol=1e-14)
    assert np.isnan(tr.v[-1]).all() and np.isnan(tr.energy[-1])
    assert tr.xi.shape[0] == tr.n_points and int(tr.status) == Status.ILL_POSED


@functools.lru_cache(maxsize=None)
def _stride_one_failure() -> Trajectory:
    try:
        integrate(vanishing_mass(), np.zeros(2), np.ones(2), h=0.1, n_steps=100)
    except StepError as e:
        return e.trajectory
    raise AssertionError("the run should fail")


# ------------------------------------------------------------------ ok means no NaN
FIELDS = ["t", "q", "p", "v", "energy", "xi", "mu", "constraint_residual", "residual"]


@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_ok_is_false_with_a_nan_anywhere(field, value):
    tr = finished_run()
    a = np.array(getattr(tr, field), dtype=float, copy=True)
    if a.size == 0:
        pytest.skip("an empty field")
    a.reshape(-1)[min(3, a.size - 1)] = value
    assert tr.ok and not dataclasses.replace(tr, **{field: a}).ok


@pytest.mark.parametrize("field", ["t", "q", "p", "v", "energy", "xi", "constraint_residual", "residual"])
def test_a_finished_file_with_a_nan_is_refused_naming_the_field(field, tmp_path):
    tr = finished_run()
    a = np.array(getattr(tr, field), dtype=float, copy=True)
    a.reshape(-1)[2] = np.nan
    path = dataclasses.replace(tr, **{field: a}).save(tmp_path / "run.npz")
    name = "q_0" if field == "q" else field
    _raises(ValueError, rf"Trajectory.load: '.*run.npz' is damaged.*'{name}' holds?", lambda: Trajectory.load(path))
    tr.save(tmp_path / "good.npz")
    assert Trajectory.load(tmp_path / "good.npz").ok  # sensitivity: the untouched file loads ok


# ------------------------------------------------------------------ rollout input checks
ROLLOUT_CASES = [
    ("system None", dict(system=None), TypeError, r"rollout: system must be a LagrangeDiracSystem"),
    ("n_steps zero", dict(n_steps=0), ValueError, r"rollout: n_steps must be an integer >= 1"),
    ("n_steps float", dict(n_steps=2.0), ValueError, r"rollout: n_steps"),
    ("v0 and p0", dict(p0=V0), ValueError, r"exactly one of the initial velocity v0 or the initial momentum p0"),
    ("neither", dict(v0=None), ValueError, r"exactly one of"),
    ("q0 batched", dict(q0=np.zeros((2, 2))), ValueError, r"rollout: q0 must be one point"),
    ("v0 shape", dict(v0=np.zeros(3)), ValueError, r"rollout: v0 must have shape \(2,\)"),
    ("controls shape", dict(controls=np.zeros((3, 2))), ValueError, r"rollout: controls must have shape"),
    ("differentiation", dict(differentiation="magic"), ValueError, r"rollout: differentiation must be one of"),
    ("solver", dict(solver=1e-9), TypeError, r"rollout: solver must be a SolverOptions"),
    ("unrolled_iterations", dict(unrolled_iterations=0), ValueError, r"unrolled_iterations must be a positive"),
]


@pytest.mark.parametrize("label, kw, exc_type, pattern", ROLLOUT_CASES, ids=[c[0] for c in ROLLOUT_CASES])
def test_rollout_refuses_bad_input_naming_it(label, kw, exc_type, pattern):
    args = {"system": oscillator(), "q0": Q0, "v0": V0, "h": 0.1, "n_steps": 2}
    args.update(kw)
    _raises(exc_type, pattern, lambda: rollout(args.pop("system"), args.pop("q0"), **args))


# ------------------------------------------------------------------ Integrator and SolverOptions
INTEGRATOR_CASES = [
    ("system None", lambda: Integrator(None, 0.1), TypeError, r"Integrator: system must be a LagrangeDiracSystem"),
    ("h negative", lambda: Integrator(oscillator(), -1.0), ValueError, r"the step h"),
    ("h tiny", lambda: Integrator(oscillator(), 1e-300), ValueError, r"too small for float64"),
    ("on_failure", lambda: Integrator(oscillator(), 0.1, on_failure="skip"), ValueError, r"on_failure"),
    ("run with a dict", lambda: Integrator(oscillator(), 0.1).run({}, 3), TypeError,
     r"Integrator.run: state must be a RunState"),
    ("step with None", lambda: Integrator(oscillator(), 0.1).step(None), TypeError,
     r"Integrator.step: state must be a RunState"),
    ("initial_state without data", lambda: Integrator(oscillator(), 0.1).initial_state(Q0), ValueError,
     r"give the initial velocity v0 or the initial momentum p0"),
    ("initial_state complex", lambda: Integrator(oscillator(), 0.1).initial_state(Q0, v0=V0 * 1j), TypeError,
     r"v0: expected real values"),
    ("rtol zero", lambda: SolverOptions(rtol=0), ValueError, r"SolverOptions: rtol must be a number in \(0, 1\)"),
    ("max_iter zero", lambda: SolverOptions(max_iter=0), ValueError, r"SolverOptions: max_iter"),
    ("atol", lambda: SolverOptions(atol=0), TypeError, r"atol"),
]


@pytest.mark.parametrize("label, fn, exc_type, pattern", INTEGRATOR_CASES, ids=[c[0] for c in INTEGRATOR_CASES])
def test_integrator_entry_points_name_the_argument(label, fn, exc_type, pattern):
    _raises(exc_type, pattern, fn)


# ------------------------------------------------------------------ sweep: cell statuses and resume
def _cell(a):
    return {"x": {0: 1.0, 1: np.nan, 2: np.inf, 3: -np.inf}.get(a, 2.0), "y": 0.0}


@pytest.mark.parametrize("a, status, message", [(0, "ok", ""), (1, "partial", "NaN in x (1 of 1)"),
                                                (2, "partial", "inf in x (1 of 1)"),
                                                (3, "partial", "inf in x (1 of 1)"), (4, "ok", "")])
def test_sweep_partial_means_a_non_finite_metric(a, status, message):
    from manifold_dirac._sweep import sweep

    ds = sweep(_cell, {"a": [a]}, workers=0, progress=False)
    assert str(ds.status.values[0]) == status and str(ds.message.values[0]) == message


def _shape_cell(a):
    return {"v": np.zeros(2 if a == 3 else 1), "w": float(a)}


def _raising_cell(a):
    raise {0: ValueError("bad value"), 1: ZeroDivisionError("division"), 2: KeyError("k"),
           3: RuntimeError("boom")}[a]


@pytest.mark.parametrize("a, status", [(0, "ValueError"), (1, "ZeroDivisionError"), (2, "KeyError"),
                                       (3, "RuntimeError")])
def test_sweep_records_the_exception_of_a_cell(a, status):
    from manifold_dirac._sweep import sweep

    ds = sweep(_raising_cell, {"a": [a]}, workers=0, progress=False)
    assert str(ds.status.values[0]) == status and np.all(np.isnan(ds.wall_time.values) == False)  # noqa: E712


def test_a_cell_with_another_metric_shape_is_recorded_and_the_rest_kept(tmp_path):
    from manifold_dirac._sweep import sweep

    ds = sweep(_shape_cell, {"a": [1, 2, 3, 4]}, workers=0, progress=False, store=tmp_path)
    assert list(ds.status.values) == ["ok", "ok", "MetricShapeError", "ok"]
    assert "metric 'v' has shape (2,) in this cell but (1,) in the others" in str(ds.message.values[2])
    assert list(ds.w.values[[0, 1, 3]]) == [1.0, 2.0, 4.0] and np.isnan(ds.w.values[2])
    again = sweep(_shape_cell, {"a": [1, 2, 3, 4]}, workers=0, progress=False, store=tmp_path, resume=True)
    assert again.attrs["cells_resumed"] == 4 and list(again.status.values) == list(ds.status.values)


def _defined_cell(a, *, T, system="x"):
    return {"value": a * T}


@pytest.mark.parametrize("first, second, what", [
    (dict(T=1.0), dict(T=2.0), "bound"),
    (dict(T=1.0, system="pendulum"), dict(T=1.0, system="heavy_top"), "bound"),
    (dict(T=0.1), dict(T=0.1000000001), "bound"),
])
def test_sweep_resume_refuses_cells_defined_otherwise(first, second, what, tmp_path):
    from manifold_dirac._sweep import sweep

    sweep(functools.partial(_defined_cell, **first), {"a": [1, 2]}, workers=0, progress=False, store=tmp_path)
    _raises(ValueError, rf"store .* was written by another sweep \({what}:", lambda: sweep(
        functools.partial(_defined_cell, **second), {"a": [1, 2]}, workers=0, progress=False, store=tmp_path,
        resume=True))
    # sensitivity: the same definition resumes every cell
    ds = sweep(functools.partial(_defined_cell, **first), {"a": [1, 2]}, workers=0, progress=False, store=tmp_path,
               resume=True)
    assert ds.attrs["cells_resumed"] == 2


def test_sweep_resume_refuses_a_store_of_another_library_version(tmp_path, monkeypatch):
    from manifold_dirac._sweep import sweep

    sweep(functools.partial(_defined_cell, T=1.0), {"a": [1]}, workers=0, progress=False, store=tmp_path)
    monkeypatch.setattr(manifold_dirac, "__version__", "9.9.9")
    _raises(ValueError, r"library: '.*' there, '9.9.9' here", lambda: sweep(
        functools.partial(_defined_cell, T=1.0), {"a": [1]}, workers=0, progress=False, store=tmp_path, resume=True))


def test_study_resume_into_another_studys_folder_is_refused(tmp_path):
    from manifold_dirac.study import retraction_study

    kw = dict(retractions=None, schemes=["symmetric"], rules=["midpoint"], long_steps=4, store=tmp_path)
    a = retraction_study("harmonic_oscillator", hs=[0.2, 0.1], T=0.4, **kw)
    assert a.dataset.attrs["cells_run"] == 2
    _raises(ValueError, r"written by another sweep", lambda: retraction_study(
        "harmonic_oscillator", hs=[0.2, 0.1], T=0.8, resume=True, **kw))
    _raises(ValueError, r"written by another sweep", lambda: retraction_study(
        "pendulum", hs=[0.2, 0.1], T=0.4, resume=True, **kw))
    b = retraction_study("harmonic_oscillator", hs=[0.2, 0.1], T=0.4, resume=True, **kw)
    assert b.dataset.attrs["cells_resumed"] == 2 and b.dataset.attrs["cells_run"] == 0


# ------------------------------------------------------------------ the command line (in process)
CLI_CASES = [
    (["run", "pendulum", "--out", ""], r"--out '': an empty folder name"),
    (["study", "pendulum", "--out", "", "--resume"], r"--out '': an empty folder name"),
    (["run", "no_such_system"], r"no_such_system"),
    (["run", "pendulum", "--h", "-1"], r"--h"),
    (["run", "pendulum", "--h", "nan"], r"--h"),
    (["run", "pendulum", "--steps", "0"], r"--steps"),
    (["run", "pendulum", "--steps", "2.5"], r"--steps"),
    (["run", "pendulum", "--scheme", "rk4"], r"rk4"),
    (["run", "pendulum", "--rule", "no-such-rule"], r"no-such-rule"),
    (["study", "pendulum", "--resume"], r"--resume needs --out DIR"),
    (["bogus"], r"bogus"),
]


@pytest.mark.parametrize("argv, pattern", CLI_CASES, ids=[" ".join(c[0]) or "empty" for c in CLI_CASES])
def test_cli_usage_errors_are_one_line_with_status_2(argv, pattern, capsys):
    from manifold_dirac.cli import main

    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("manifold-dirac: error:") and "\n" not in err and re.search(pattern, err), err


# ------------------------------------------------------------------ interconnections
def test_parts_refuses_another_systems_trajectory():
    from manifold_dirac.systems.interconnected import mass_spring_torn

    sysm = mass_spring_torn()
    _raises(ValueError, r"parts: the trajectory is not one of", lambda: sysm.parts(finished_run()))
    _raises(TypeError, r"parts: trajectory must be a Trajectory", lambda: sysm.parts({"q": 1}))
