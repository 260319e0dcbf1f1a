"""Nothing silent: scale, non-finite values, the retraction's domain, ill-posed starts, no work lost.

Each test stands for a guarantee the issue lists and fails on the behaviour
it describes:

1. **Scale.** Newton's stopping rule is relative to the problem's own scale:
   a run with mass, length and time scaled by ``10^+-9`` is the unit run
   scaled, to 1e-10, in the same number of Newton iterations (the old engine
   "converged" in 0 iterations at the micro scale); with powers of two it is
   the unit run bit for bit. A system at a large offset (equilibrium at
   ``1e8 .. 1e12``) runs, and agrees with the unit-offset run to what the
   float64 grid at that offset allows (the engine used to fail to converge
   at ``1e8``: the residual's round-off floor there is far above ``rtol``).
2. **Non-finite values are failures**, named: the Lagrangian, the force, the
   constraint (in the step equations) and the energy (at a stored point),
   with the step, the time and the node; a batch marks only that member.
3. **The retraction's domain**: a step past it is a ``StepDomainError`` with
   ``|xi|``, where the domain ends and a smaller ``h`` -- also when Newton's
   iterates leave the domain and the solve does not converge there.
6. **Ill-posed systems are refused at the start**: a Lagrangian without
   velocity dependence, and ``p0`` off the primary constraint of a
   degenerate Lagrangian; degenerate but well-posed systems still run.
7. **No work lost**: an exception in the callback, and a ``KeyboardInterrupt``,
   leave the points computed so far on the exception, status ``INTERRUPTED``.

Compile time is the cost here: the module builds a few small systems once
(module level) and runs each with several parameter sets; parameters are
traced, so :func:`_with_params` reuses a system's compiled programs.
"""

import copy

import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac._errors import IllPosedSystemError, NonFiniteError, RunInterrupted, StepDomainError
from manifold_dirac._manifolds import Euclidean
from manifold_dirac._run.loop import CHUNK
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._run.programs import compiled_functions
from manifold_dirac._run.integrate import integrate
from manifold_dirac._mechanics.status import Status
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import LOTKA_VOLTERRA_INITIAL

from ..systems.bundled import new


def _with_params(system, params):
    """``system`` with other ``params``, sharing its compiled programs (params are traced, not compiled in)."""
    compiled_functions(system)  # the shared table exists before the copy refers to it
    other = copy.copy(system)
    other.params = params
    return other


# ------------------------------------------------------------------ 1. scale
def _quartic(q, v, p):
    d = q - p["c"]
    return 0.5 * p["m"] * jnp.dot(v, v) - p["a"] * jnp.dot(d, d) ** 2


QUARTIC = LagrangeDiracSystem(Euclidean(2), _quartic, name="quartic",
                              params={"m": np.float64(1.0), "a": np.float64(1.0), "c": np.zeros(2)})
"""A nonlinear particle in R^2: ``L = m/2 |v|^2 - a |q - c|^4`` (a quartic well centred at ``c``)."""

Q0, V0, H, N = np.array([1.0, 0.3]), np.array([0.2, 0.9]), 0.05, 200


def _scaled_run(M, Lam, T, h_factor=1.0):
    """The unit run with mass, length and time scaled by ``M, Lam, T`` (``a -> a M / (Lam^2 T^2)``).

    Then ``L -> M Lam^2 / T^2 L``, ``L_d -> M Lam^2 / T L_d`` and the discrete
    equations are the unit ones times a factor: ``q -> Lam q``, ``v -> Lam/T v``,
    ``p -> M Lam / T p``, ``E -> M Lam^2 / T^2 E`` exactly, in exact arithmetic.
    """
    sysm = _with_params(QUARTIC, {"m": np.float64(M), "a": np.float64(M / (Lam**2 * T**2)), "c": np.zeros(2)})
    return integrate(sysm, Lam * Q0, v0=Lam / T * V0, h=T * H * h_factor, n_steps=N)


def _unscaled(tr, M, Lam, T):
    return {"q": tr.q / Lam, "v": tr.v * T / Lam, "p": tr.p * T / (M * Lam), "energy": tr.energy * T**2 / (M * Lam**2)}


def _law_error(tr, ref, M, Lam, T):
    """Largest deviation of the unscaled run from the unit run, relative to each field's size."""
    u = _unscaled(tr, M, Lam, T)
    return max(float(np.max(np.abs(u[k] - getattr(ref, k))) / np.max(np.abs(getattr(ref, k)))) for k in u)


UNIT = _scaled_run(1.0, 1.0, 1.0)

SCALES = [
    (1e-11, 1e-9, 1e-7),  # the micro system in SI units: 1e-11 kg, 1e-9 m, h = 5e-9 s
    (1e9, 1e9, 1e9),
    (1e-9, 1e-9, 1e-9),
    (1e9, 1e-9, 1e-9),
    (1e-9, 1e9, 1e9),
    (1e9, 1e-9, 1e9),
]


@pytest.mark.parametrize("M,Lam,T", SCALES)
def test_scaling_mass_length_and_time_scales_the_trajectory(M, Lam, T):
    tr = _scaled_run(M, Lam, T)
    assert tr.ok and UNIT.ok
    assert _law_error(tr, UNIT, M, Lam, T) <= 1e-10
    # the same Newton iterations: every step iterates (the old engine took 0 at the micro scale and never
    # moved), and the counts differ only where round-off decides the last iteration
    assert np.all(tr.iterations >= 1)
    assert np.max(np.abs(tr.iterations - UNIT.iterations)) <= 1
    assert abs(int(tr.iterations.sum()) - int(UNIT.iterations.sum())) <= 0.01 * UNIT.iterations.sum()


def test_scaling_by_powers_of_two_is_exact():
    """With powers of two every floating-point operation scales exactly: the same bits, the same iterations.

    Any absolute threshold in the engine (a residual floor, a minimum step)
    would break this at ``2^+-30``.
    """
    M, Lam, T = 2.0**30, 2.0**-30, 2.0**30
    tr = _scaled_run(M, Lam, T)
    u = _unscaled(tr, M, Lam, T)
    for k in u:
        np.testing.assert_array_equal(u[k], getattr(UNIT, k))
    np.testing.assert_array_equal(tr.iterations, UNIT.iterations)
    M, Lam, T = 2.0**-30, 2.0**30, 2.0**-30
    tr = _scaled_run(M, Lam, T)
    np.testing.assert_array_equal(_unscaled(tr, M, Lam, T)["q"], UNIT.q)


def test_an_inconsistent_scaling_breaks_the_law():
    """The law test can fail: a step off by 1e-6 relative, or a step left unscaled, is seen."""
    M, Lam, T = 1e-11, 1e-9, 1e-7
    assert _law_error(_scaled_run(M, Lam, T, h_factor=1 + 1e-6), UNIT, M, Lam, T) > 1e-8
    M, Lam, T = 1e9, 1e9, 1e9
    assert _law_error(_scaled_run(M, Lam, T, h_factor=1 / T), UNIT, M, Lam, T) > 1e-2  # h not scaled


def _offset_run(c, h=H, n_steps=N):
    sysm = _with_params(QUARTIC, {"m": np.float64(1.0), "a": np.float64(1.0), "c": np.full(2, c)})
    return integrate(sysm, Q0 + c, v0=V0, h=h, n_steps=n_steps)


UNIT_OFFSET = _offset_run(1.0)


@pytest.mark.parametrize("c", [1e8, 1e9, 1e12])
def test_a_system_at_a_large_offset_runs_to_the_precision_of_its_grid(c):
    """Equilibrium at ``c``: ``q - c`` is the unit-offset run to the float64 grid at ``c``.

    Positions near ``c`` are resolved only to ``ulp(c)`` (1.2e-7 at 1e9):
    each step rounds ``q_(k+1) = q_k + xi`` and the midpoint where the force
    is evaluated to that grid (at most ``ulp(c) / 2`` each), and the
    oscillation is neutrally stable, so the rounding errors add up at most
    linearly: ``|(q - c) - (q_unit - 1)| <= N ulp(c)`` after ``N`` steps
    (observed: about 20 ulp after 200 steps). Newton stops at the residual's
    round-off floor there, which is far above ``rtol`` (the old stopping rule
    failed to converge at ``c = 1e8``).
    """
    tr = _offset_run(c)
    assert tr.ok and np.all(tr.iterations >= 1)
    ulp = np.spacing(c)
    dev = np.max(np.abs((tr.q - c) - (UNIT_OFFSET.q - 1.0)))
    assert dev <= N * ulp
    # and that tolerance is meaningful: the same comparison with h off by N ulp(c) relative (which moves
    # the positions by about 14 N ulp(c) over the run) fails
    off = _offset_run(c, h=H * (1 + N * ulp))
    assert np.max(np.abs((off.q - c) - (UNIT_OFFSET.q - 1.0))) > 4 * N * ulp


def test_the_run_loop_leaves_the_floor_test_out_and_a_chunk_that_reaches_it_runs_again_with_it(monkeypatch):
    """A run's loop is compiled without the round-off-floor test (``DEFER_FLOOR``); the unit-offset run never
    reaches the test and never builds the program that holds it. At ``1e12`` a step reaches it (at ``1e9`` none of this run does): the chunk
    runs again with that program, and the run is the one that program gives alone, bit for bit. Sensitivity:
    without the second run of the chunk the same run fails (no convergence)."""
    import manifold_dirac._run.loop as loop
    from manifold_dirac._errors import ConvergenceError

    built: list[bool] = []
    original = Integrator._chunk_program

    def spy(self, nb, no_controls, floor=False, always=None):
        built.append(floor)
        return original(self, nb, no_controls, floor if always is None else always)

    monkeypatch.setattr(Integrator, "_chunk_program", spy)
    assert _offset_run(1.0).ok and built and not any(built)  # the loop without the test only
    built.clear()
    tr = _offset_run(1e12)
    assert tr.ok and built.count(True) == 1  # the program with the test, built once, for the chunk again
    monkeypatch.setattr(Integrator, "_chunk_program", lambda self, nb, nc, floor=False: spy(self, nb, nc, always=True))
    alone = _offset_run(1e12)  # the program with the test from the first chunk on
    for k in ("q", "p", "v", "energy", "residual", "iterations"):
        np.testing.assert_array_equal(getattr(tr, k), getattr(alone, k))
    monkeypatch.setattr(Integrator, "_chunk_program", spy)
    monkeypatch.setattr(loop, "_deferred", lambda members: False)
    with pytest.raises(ConvergenceError):
        _offset_run(1e12)


def test_the_run_loop_holds_no_conditional_and_the_program_with_the_floor_test_one():
    """The floor test is one member's only conditional in the loop (a branch that only its probe takes): the
    loop a run starts with holds none, the program a chunk runs again with holds it (each the other's check)."""
    import jax

    integ = Integrator(QUARTIC, h=H)
    start = integ._start(Q0, V0, None, 0.0, None)
    members = integ._member_shapes(start)
    args = (members, members.q, np.zeros(6, np.int32), jax.ShapeDtypeStruct(members.p.shape, np.float64),
            np.zeros(2), integ._use_params(None, "test"), None)
    cases = [integ._chunk_program(0, True, floor=f).lower(*args).as_text().count("stablehlo.case")
             for f in (False, True)]
    assert cases[0] == 0 and cases[1] >= 1


# ------------------------------------------------------- 2. non-finite values
def _probe_lagrangian(q, v, p):
    """A free particle in R^2 with a log wall at ``q0 = log_wall`` and a NaN band in ``q0`` around ``band``."""
    wall = 1e-3 * jnp.log(p["log_wall"] - q[0])  # NaN once q0 crosses the wall
    band = jnp.where(jnp.abs(q[0] - p["band"]) < 0.01, jnp.nan, 0.0)  # NaN only near q0 = band
    return 0.5 * jnp.dot(v, v) + wall + band


def _probe_force(t, q, v, p):
    return jnp.where(t > p["t_bad"], p["bad"], 0.0) * jnp.ones(2)


def _probe_constraint(q, p):
    return jnp.where(q[0] > p["a_wall"], p["bad"], 1.0) * jnp.array([[1.0, -1.0]])


FAR = {"log_wall": np.float64(1e3), "band": np.float64(1e3), "t_bad": np.float64(1e3), "a_wall": np.float64(1e3),
       "bad": np.float64(np.nan)}
PROBE = LagrangeDiracSystem(Euclidean(2), _probe_lagrangian, constraint=_probe_constraint, force=_probe_force,
                            name="probe", params=FAR)
"""A particle moving along the diagonal (``v1 = v2``) whose L, force, constraint or energy blows up on demand."""

START = {"q0": np.zeros(2), "v0": np.ones(2), "h": 0.1, "n_steps": 10}


MIDPOINT_5 = "the quadrature node s = 0.5 of the step (t = 0.55)"  # the midpoint of step 5, where q0 passes 0.52


@pytest.mark.parametrize("params,name,where,bad", [
    ({"t_bad": 0.5}, "the force F(t, q, v)", MIDPOINT_5, "NaN"),  # NaN for t > 0.5: at step 5's node, not at t_5
    ({"t_bad": 0.5, "bad": np.inf}, "the force F(t, q, v)", MIDPOINT_5, "inf"),
    ({"log_wall": 0.52}, "the Lagrangian L(q, v)", MIDPOINT_5, "NaN"),  # log of something crossing zero
    ({"a_wall": 0.52}, "the constraint A(q)", MIDPOINT_5, "NaN"),  # the symmetric scheme's A at the midpoint
])
def test_a_non_finite_function_fails_the_step_and_is_named(params, name, where, bad):
    sysm = _with_params(PROBE, {**FAR, **{k: np.float64(x) for k, x in params.items()}})
    with pytest.raises(NonFiniteError) as ei:
        integrate(sysm, **START)
    e, msg = ei.value, str(ei.value)
    assert e.step == 5 and msg.startswith("step 5 (t = 0.5): non-finite value")
    assert f"in the step equations: {name} returned {bad} at " in msg and where in msg, msg
    assert "reduce h=0.1" in msg
    tr = e.trajectory
    # the points before the failed step, finite; at q_k (where the step failed) velocity and energy are NaN
    assert tr.n_points == e.step + 1 and np.all(np.isfinite(tr.q)) and np.all(np.isfinite(tr.energy[:-1]))


def test_a_non_finite_energy_at_a_stored_point_is_a_failure():
    """L is NaN only in a narrow band around ``q0 = 0.5``: the step's midpoints jump over it, the stored
    point ``q_5 = (0.5, 0.5)`` lands in it. Its energy is NaN: a failure there, never ``ok`` with a NaN."""
    sysm = _with_params(PROBE, {**FAR, "band": np.float64(0.5)})
    with pytest.raises(NonFiniteError) as ei:
        integrate(sysm, **START)
    e = ei.value
    assert e.step == 5 and e.time == pytest.approx(0.5)
    assert "in the energy E = <p, v> - L(q, v) at the stored point q_5 (t = 0.5): the Lagrangian L(q, v) " \
           "returned NaN at q_5 with the recorded (central difference) velocity v_5" in str(e)
    tr = e.trajectory
    assert tr.n_points == 6 and np.isnan(tr.energy[-1]) and np.all(np.isfinite(tr.energy[:-1]))
    assert tr.status == Status.NONFINITE and not tr.ok


def test_a_non_finite_energy_is_checked_at_every_stored_point_with_a_stride():
    """With ``stride = 5`` the point ``q_5`` is stored (and checked) although no step is recorded there."""
    sysm = _with_params(PROBE, {**FAR, "band": np.float64(0.5)})
    with pytest.raises(NonFiniteError, match=r"^step 5 \(t = 0.5\): .* in the energy E = <p, v> - L\(q, v\) at the "
                                             r"stored point q_5") as ei:
        integrate(sysm, **{**START, "n_steps": 20}, stride=5)
    assert ei.value.trajectory.n_points == 2 and np.isnan(ei.value.trajectory.energy[-1])


def test_a_constraint_not_finite_at_q0_is_refused_at_the_start():
    """The batch member is named; before, the rank check's SVD raised 'SVD did not converge'."""
    sysm = _with_params(PROBE, {**FAR, "a_wall": np.float64(0.5)})
    q0 = np.array([[0.0, 0.0], [0.7, 0.7]])
    with pytest.raises(ValueError, match=r"the constraint A\(q\) of probe is not finite at q0 \(batch index \[1\]\): "
                                         r"it returned NaN there"):
        integrate(sysm, q0, v0=np.ones((2, 2)), h=0.1, n_steps=2)


@pytest.mark.slow
def test_in_a_batch_only_the_failing_members_are_marked():
    """Member 0 meets the NaN band (energy), member 1 the log wall (the step), member 2 neither."""
    sysm = _with_params(PROBE, {**FAR, "band": np.float64(0.5), "log_wall": np.float64(1.72)})
    q0 = np.array([[0.0, 0.0], [1.45, 1.45], [-2.0, -2.0]])
    v0 = np.array([[1.0, 1.0], [1.0, 1.0], [-1.0, -1.0]])
    tr = integrate(sysm, q0, v0=v0, h=0.1, n_steps=10)
    assert list(tr.status) == [Status.NONFINITE, Status.NONFINITE, Status.OK] and not tr.ok
    assert len(tr.messages) == 2
    assert tr.messages[0].startswith("step 5 (t = 0.5), batch member [0]") and "in the energy" in tr.messages[0]
    assert "batch member [1]" in tr.messages[1] and "the Lagrangian L(q, v) returned NaN" in tr.messages[1]
    # never ok with a NaN: the healthy member is finite throughout, and equals its run alone
    assert all(np.all(np.isfinite(getattr(tr, k)[:, 2])) for k in ("q", "v", "p", "energy"))
    alone = integrate(sysm, q0[2], v0=v0[2], h=0.1, n_steps=10)
    np.testing.assert_allclose(tr.q[:, 2], alone.q, rtol=0, atol=1e-14)
    # the failed members are frozen where they failed, their energy NaN from there on
    assert np.all(tr.q[5:, 0] == tr.q[5, 0]) and np.all(np.isnan(tr.energy[5:, 0]))
    assert np.all(np.isfinite(tr.energy[:5, 0]))


def test_a_non_finite_energy_in_a_later_chunk_freezes_only_that_member():
    """Member 0 reaches the NaN band at step ``K = CHUNK + 276``, past the first compiled chunk of stored points:
    it fails there and is frozen at ``q_K``; its points before are those of a run that never meets the band, and
    member 1 runs on as it would alone. (The band is put where a clear run has member 0 at step ``K``: the far
    log wall's pull moves it by more than the band's width over thousands of steps.)"""
    K = CHUNK + 276
    q0 = np.array([[-0.1 * K, -0.1 * K], [-2.0, -2.0]])
    v0 = np.array([[1.0, 1.0], [-1.0, -1.0]])
    clear = integrate(PROBE, q0, v0=v0, h=0.1, n_steps=K + 100)
    sysm = _with_params(PROBE, {**FAR, "band": np.float64(clear.q[K, 0, 0])})
    tr = integrate(sysm, q0, v0=v0, h=0.1, n_steps=K + 100)
    assert list(tr.status) == [Status.NONFINITE, Status.OK]
    assert tr.messages[0].startswith(f"step {K} (t = {K / 10:g}), batch member [0]") and "in the energy" in \
        tr.messages[0]
    assert np.all(tr.q[K:, 0] == tr.q[K, 0]) and np.all(np.isnan(tr.energy[K:, 0]))
    assert np.all(np.isfinite(tr.energy[:K, 0]))
    np.testing.assert_array_equal(tr.q[:K + 1, 0], clear.q[:K + 1, 0])
    alone = integrate(sysm, q0[1], v0=v0[1], h=0.1, n_steps=K + 100)
    np.testing.assert_allclose(tr.q[:, 1], alone.q, rtol=0, atol=1e-14)


# ------------------------------------------------------ 3. retraction's domain
@pytest.mark.parametrize("key,v0,xi,edge", [
    ("free_rigid_body", [0.0, 0.0, 10.0], "10", "3.142"),  # exp on SO(3): |xi| < pi
    ("knife_edge", [10.0, 1.0, 0.0], "9.562", "3.248"),  # exp on SE(2): |rotation| < pi (xi also translates)
    ("free_rigid_body_cayley", [0.0, 0.0, 1e5], "73.66", "1.766"),  # Cayley: |xi| (1 + |xi|^2/4) < pi
])
def test_a_step_past_the_retractions_domain_says_so_and_suggests_a_smaller_h(key, v0, xi, edge):
    sysm = new(key)
    with pytest.raises(StepDomainError) as ei:
        integrate(sysm, np.eye(3), v0=np.array(v0), h=1.0, n_steps=3)
    msg = str(ei.value)
    assert msg.startswith("step 0 (t = 0): left the retraction's domain")
    assert f"|xi| = {xi} at the step's solution" in msg and f"ends at |xi| = {edge} along xi" in msg, msg
    assert "try h < " in msg and "Use a smaller h (h=1 now)" in msg
    assert ei.value.trajectory.n_points == 1


def test_a_step_inside_the_domain_is_accepted():
    """The check is not trigger-happy: 3 rad per step with exp on SO(3) is inside (|xi| < pi)."""
    tr = integrate(new("free_rigid_body"), np.eye(3), v0=np.array([0.0, 0.0, 3.0]), h=1.0, n_steps=3)
    assert tr.ok and np.allclose(np.linalg.norm(tr.xi, axis=-1), 3.0)


def test_newton_iterates_leaving_the_domain_are_a_domain_failure():
    """At 2e9 rad/s the Cayley solve does not converge, its iterates far outside the domain: that is
    reported as DOMAIN (the step is too large for the chart), not as a convergence failure."""
    with pytest.raises(StepDomainError) as ei:
        integrate(new("free_rigid_body_cayley"), np.eye(3), v0=np.array([0.3, 0.2, 2e9]), h=0.05, n_steps=3)
    assert "at Newton's last iterate (the solve did not converge)" in str(ei.value)


# ------------------------------------------------------------ 6. ill-posed
E2 = Euclidean(2)
NO_VELOCITY = {
    "L = 0": LagrangeDiracSystem(E2, lambda q, v: 0.0 * v[0], name="zero"),
    "L = L(q)": LagrangeDiracSystem(E2, lambda q, v: -jnp.sum(q**2), name="potential_only"),
    # depends on v only across the constraint distribution (v1 = 0): no velocity dependence on it
    "L(v1), v1 = 0": LagrangeDiracSystem(E2, lambda q, v: 0.5 * v[0] ** 2 - jnp.sum(q**2),
                                         constraint=np.array([[1.0, 0.0]]), name="constrained_away"),
}


@pytest.mark.parametrize("key", list(NO_VELOCITY))
@pytest.mark.parametrize("start", ["v0", "p0"])
def test_a_lagrangian_without_velocity_dependence_is_refused_at_the_start(key, start):
    kw = {"v0": np.array([0.0, 1.0])} if start == "v0" else {"p0": np.zeros(2)}
    with pytest.raises(IllPosedSystemError, match=r"does not depend on the velocity: dL/dv = 0 on the constraint "
                                                  r"distribution at q0 .* the step equations have no unique solution"):
        integrate(NO_VELOCITY[key], np.array([1.0, 0.0]), h=0.1, n_steps=10, **kw)
    assert issubclass(IllPosedSystemError, ValueError)


def test_p0_off_the_primary_constraint_of_a_degenerate_lagrangian_is_refused():
    """Lotka--Volterra is linear in v: ``p = theta(q)`` is a primary constraint; ``p0`` off it used to
    excite a parasitic period-2 mode that failed later, blamed on the system."""
    lv = new("lotka_volterra")
    q0, p0 = LOTKA_VOLTERRA_INITIAL
    with pytest.raises(IllPosedSystemError, match=r"p0 violates the primary constraint p = dL/dv\(q0, v\) of the "
                                                  r"degenerate Lagrangian of lotka_volterra: .* misses by 1.000e-01"):
        integrate(lv, q0, p0=p0 + np.array([0.0, 0.1]), h=0.05, n_steps=10)
    with pytest.raises(IllPosedSystemError, match=r"\(batch index \[1\]\).* misses by 1.000e-03"):
        integrate(lv, np.stack([q0, q0]), p0=np.stack([p0, p0 + np.array([1e-3, 0.0])]), h=0.05, n_steps=10)
    # on the constraint (to round-off) it runs
    assert integrate(lv, q0, p0=p0 * (1 + 1e-15), h=0.05, n_steps=10).ok


def test_degenerate_but_well_posed_systems_still_run():
    """The LC circuit (degenerate, regular on Kirchhoff's constraint) from any p0: p0 counts modulo the
    constraint forces, and its velocity at step 0 is the Legendre inverse on the constraint distribution."""
    lc = new("lc_circuit")  # inductance 1
    tr = integrate(lc, np.array([1.0, 1.0]), p0=np.array([0.3, 0.7]), h=0.01, n_steps=10)
    assert tr.ok
    np.testing.assert_allclose(tr.v[0], [1.0, 1.0], atol=1e-12)  # N^T (dL/dv(v) - p0) = 0 on v_C = v_L
    assert integrate(lc, np.array([1.0, 1.0]), v0=np.array([0.5, 0.5]), h=0.01, n_steps=10).ok
    # a regular Lagrangian from an arbitrary p0 is never refused
    assert integrate(new("pendulum"), np.array([0.5]), p0=np.array([3.7]), h=0.01, n_steps=10).ok


# ----------------------------------------------------------- 7. no work lost
N_LONG = 2 * CHUNK + 50  # three compiled chunks: the callback runs after the first and the second


def _pendulum_run(callback):
    integ = Integrator(new("pendulum"), 0.01)
    return integ.run(integ.initial_state(np.array([0.5]), v0=np.array([0.0])), N_LONG, callback=callback)


FULL = _pendulum_run(None)


def _raise_after_first_chunk(exc):
    def callback(state):
        raise exc

    return callback


def test_an_exception_in_the_callback_keeps_the_trajectory_computed_so_far():
    with pytest.raises(ZeroDivisionError) as ei:  # the user's own exception, not a wrapper
        _pendulum_run(_raise_after_first_chunk(ZeroDivisionError("user code failed")))
    e = ei.value
    tr = e.trajectory
    assert str(e) == "user code failed"
    assert any(f"this exception stopped the run at step {CHUNK}" in n and f"the {CHUNK} points computed so far are "
               "in .trajectory" in n for n in e.__notes__)
    assert tr.n_points == CHUNK and tr.status == Status.INTERRUPTED and tr.meta["interrupted"]
    for k in ("t", "q", "p", "v", "energy"):
        np.testing.assert_array_equal(getattr(tr, k), getattr(FULL, k)[:CHUNK])


def test_ctrl_c_keeps_the_trajectory_computed_so_far():
    """A KeyboardInterrupt (Ctrl-C, simulated in the callback) is a RunInterrupted with the partial run."""
    with pytest.raises(RunInterrupted, match=f"integration interrupted at step {CHUNK} .* the {CHUNK} points computed "
                       "so far") as ei:
        _pendulum_run(_raise_after_first_chunk(KeyboardInterrupt()))
    tr = ei.value.trajectory
    assert tr.n_points == CHUNK and tr.status == Status.INTERRUPTED and not tr.ok
    np.testing.assert_array_equal(tr.q, FULL.q[:CHUNK])
    np.testing.assert_array_equal(tr.energy, FULL.energy[:CHUNK])
    np.testing.assert_array_equal(tr.iterations, FULL.iterations[:CHUNK])
