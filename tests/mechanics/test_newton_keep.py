"""``SolverOptions(jacobian="keep")``: Newton's matrix kept from one step to the next (simplified Newton across steps).

The kept inverse changes the path of Newton's iteration, not its stopping rule: a solve ends where ``"every"``'s
does (to Newton's tolerance), a kept matrix that does not contract the error fast enough
(:data:`~manifold_dirac._mechanics.newton.KEEP_CONTRACTION`) is evaluated again, and the matrices are carried in
the state (``State.newton``), one per sub-step of a composition, so that ``integrate``, ``Integrator.step`` and
``rollout`` take the same steps.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
import manifold_dirac._mechanics.newton as N
from manifold_dirac.systems import damped_oscillator
from manifold_dirac.systems.catalog import EXAMPLES

KEEP = md.SolverOptions(jacobian="keep")
EVERY = md.SolverOptions()
EPS = float(np.finfo(float).eps)


# ------------------------------------------------------------------ one solve
A = np.array([[3.0, 1.0, 0.0], [1.0, 4.0, 1.0], [0.0, 1.0, 5.0]])
B = np.array([1.0, 2.0, 3.0])


def _fun(z):
    r = A @ z + 0.3 * z ** 3 - B
    return r, jnp.abs(A) @ jnp.abs(z) + jnp.abs(B), None


def _jac(z):
    return A + np.diag(0.9 * np.asarray(z) ** 2)


@pytest.fixture(scope="module")
def root():
    res = N.newton(_fun, jnp.zeros(3), EVERY)
    assert int(res.status) == 0 and float(res.error) <= 4 * EPS
    return np.asarray(res.z)


def _solve(kept, z0):
    return jax.jit(lambda k, z: N.newton(_fun, z, KEEP, kept=k))(kept, z0)


def test_a_solve_with_a_kept_matrix_ends_at_the_same_root(root):
    res = _solve(jnp.full((3, 3), jnp.nan), jnp.zeros(3))  # none kept: evaluated on the first trip
    assert int(res.status) == 0 and float(res.error) <= 4 * EPS
    np.testing.assert_allclose(np.asarray(res.z), root, rtol=0, atol=8 * EPS)
    assert np.all(np.isfinite(np.asarray(res.inverse)))


def test_a_kept_matrix_that_contracts_is_used_and_returned_unchanged(root):
    """A kept inverse 1e-4 off the root's: each update cuts the error by about 1e-4 < KEEP_CONTRACTION, so no
    matrix is evaluated and the same inverse comes back (bit for bit)."""
    kept = np.linalg.inv(_jac(root)) * (1 + 1e-4)
    res = _solve(kept, root + 1e-3)
    assert int(res.status) == 0 and float(res.error) <= 4 * EPS
    np.testing.assert_allclose(np.asarray(res.z), root, rtol=0, atol=8 * EPS)
    assert np.array_equal(np.asarray(res.inverse), kept)


@pytest.mark.parametrize("factor", [1.2, -1.0])
def test_a_kept_matrix_that_does_not_contract_is_evaluated_again(root, factor):
    """Sensitivity of the rule: 20 % off (an update cuts the error to about 0.2 > 1/32), or pointing the wrong
    way: the next trip evaluates the matrix, and the solve still ends at the root."""
    kept = np.linalg.inv(_jac(root)) * factor
    res = _solve(kept, root + 1e-3)
    assert int(res.status) == 0 and float(res.error) <= 4 * EPS
    np.testing.assert_allclose(np.asarray(res.z), root, rtol=0, atol=8 * EPS)
    assert not np.array_equal(np.asarray(res.inverse), kept)


def test_a_slow_update_with_a_kept_matrix_does_not_stop_the_solve(root):
    """Stagnation is judged on updates with a matrix evaluated at their iterate: from ``root + 3e-12`` a kept
    inverse a third of the root's cuts the error by 2/3 only -- a stagnating update within ``rtol``, which
    stopped the solve at ``4e-12`` (reported OK) before the stopping rule checked where the matrix came from.
    Now the matrix is evaluated and the solve goes on to round-off, as ``"every"``'s does."""
    res = _solve(np.linalg.inv(_jac(root)) / 3, root + 3e-12)
    assert int(res.status) == 0 and float(res.error) <= 4 * EPS, float(res.error)


@pytest.mark.parametrize("scale", [-1e6, -1e4])
def test_a_kept_matrix_that_diverges_is_not_followed(scale):
    """``exp(z) - 2`` from 0.7 with a kept "inverse" far off (another system's, say): its update overflows or
    raises the error; it is not taken, the matrix is evaluated at the same iterate, and the solve converges as
    ``"every"``'s does (without the guard: NONFINITE at -1e6, no convergence in 30 updates at -1e4)."""
    def fun(z):
        return jnp.exp(z) - 2.0, jnp.exp(jnp.abs(z)) + 2.0, None

    z0 = jnp.array([0.7])
    res = jax.jit(lambda k: N.newton(fun, z0, KEEP, kept=k))(jnp.array([[scale]]))
    assert int(res.status) == 0 and float(res.error) <= 4 * EPS
    np.testing.assert_allclose(np.asarray(res.z), np.log(2.0), rtol=0, atol=4 * EPS)
    # 6 updates, the rejected one not among them (the matrix of 0.7 kept after it: linear convergence)
    assert int(res.iterations) <= 8, int(res.iterations)


def test_solver_options_name_the_choices():
    with pytest.raises(ValueError, match="'every', 'reuse' or 'keep'"):
        md.SolverOptions(jacobian="kept")


# ------------------------------------------------------------------ runs
def _q(tr):
    return np.concatenate([np.asarray(a).reshape(np.shape(a)[0], -1) for a in jax.tree.leaves(tr.q)], axis=1)


@pytest.fixture(scope="module")
def disk():
    """The rolling disk (SE(2) x R, two one-forms) composed with kahan_li8, 60 steps of h = 0.1."""
    ex = EXAMPLES["rolling_disk"]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    kw = dict(h=0.1, n_steps=60, scheme="split", composition="kahan_li8")
    return dict(
        system=sysm, q0=q0, v0=v0, kw=kw,
        every=md.integrate(sysm, q0, v0, solver=EVERY, **kw),
        keep=md.integrate(sysm, q0, v0, solver=KEEP, **kw),
        rollout_keep=md.rollout(sysm, q0, v0, solver=KEEP, **kw).check(),
    )


def test_composed_runs_with_kept_matrices_agree_with_every_update(disk):
    dq = np.max(np.abs(_q(disk["keep"]) - _q(disk["every"])))
    assert dq < 1e-11, dq
    assert dq > 0  # the two solvers take other paths to round-off (the comparison is not of one run with itself)


def test_integrate_and_rollout_keep_the_same_matrices(disk):
    """Bit for bit: ``integrate``'s composed steps and ``rollout``'s start each sub-step's Newton iteration with
    the same kept inverse (``State.newton[i]``, the same sub-step on the last step)."""
    assert np.array_equal(_q(disk["keep"])[-1], _q(disk["rollout_keep"])[-1])
    # sensitivity: the rollout with every update evaluated ends elsewhere in the last bits
    other = md.rollout(disk["system"], disk["q0"], disk["v0"], solver=EVERY, **disk["kw"]).check()
    assert not np.array_equal(_q(disk["keep"])[-1], _q(other)[-1])


def test_the_state_carries_one_matrix_per_sub_step(disk):
    integ = md.Integrator(disk["system"], 0.1, "split", solver=KEEP, composition="kahan_li8")
    st = integ.initial_state(disk["q0"], disk["v0"])
    assert st.members.newton.shape == (17, 6, 6) and np.all(np.isnan(st.members.newton))  # none before step 1
    st1, rec1 = integ.step(st)
    kept = np.asarray(st1.members.newton)
    assert kept.shape == (17, 6, 6) and np.all(np.isfinite(kept))
    # the next step starts from them: sub-steps whose kept matrix contracted keep it bit for bit (not evaluated
    # again); with them forgotten (NaN) every sub-step evaluates its own, and the step ends at the same point
    st2, _ = integ.step(st1)
    forgot = dataclasses.replace(st1, members=st1.members._replace(newton=np.full_like(kept, np.nan)))
    st2f, _ = integ.step(forgot)
    same = [np.array_equal(np.asarray(st2.members.newton)[i], kept[i]) for i in range(17)]
    same_f = [np.array_equal(np.asarray(st2f.members.newton)[i], kept[i]) for i in range(17)]
    assert sum(same) >= 9 and not any(same_f), (same, same_f)
    np.testing.assert_allclose(np.asarray(st2.members.p), np.asarray(st2f.members.p), rtol=0, atol=1e-13)
    # a state of another integrator (no kept matrices, no history) is taken as it is and given them
    plain = md.Integrator(disk["system"], 0.1, "split")
    st_plain, _ = plain.step(plain.initial_state(disk["q0"], disk["v0"]))
    assert st_plain.members.newton is None
    st3, _ = integ.step(st_plain)
    assert np.asarray(st3.members.newton).shape == (17, 6, 6)
    st4, _ = plain.step(st3)  # and back: dropped
    assert st4.members.newton is None


def test_on_the_first_step_a_second_half_sub_step_starts_from_its_mirrors_matrix(monkeypatch):
    """A palindrome's sub-step ``i`` of the second half has the step of its mirror ``s + 1 - i``: on the first
    step, with no matrix of its own kept yet, it starts from the one its mirror used on this step
    (``sub_step_matrix``). On the heavy top (whose Newton matrix depends on the attitude) those that contracted
    keep it bit for bit; with the rule switched off none does (each evaluates its own at its own point), and the
    step ends at the same point to round-off."""
    import manifold_dirac._mechanics.composition as composition_module

    ex = EXAMPLES["heavy_top"]

    def first_step():
        sysm = ex.system("exp")
        integ = md.Integrator(sysm, 0.05, "symmetric", solver=KEEP, composition="kahan_li8")
        st, _ = integ.step(integ.initial_state(*ex.initial(sysm)))
        kept = np.asarray(st.members.newton)
        return [np.array_equal(kept[i], kept[16 - i]) for i in range(9, 17)], np.asarray(st.members.p)

    from manifold_dirac._mechanics import compile_cache

    on, p_on = first_step()
    monkeypatch.setattr(composition_module, "sub_step_matrix", lambda kept_i, mats, mirror_i: kept_i)
    monkeypatch.setenv("MANIFOLD_DIRAC_EXPORT", "0")  # not a program kept on disk from the unpatched code
    compile_cache.clear()  # nor one compiled in this process (a new system of the same functions reuses it)
    try:
        off, p_off = first_step()
    finally:
        compile_cache.clear()  # the patched program stays out of the other tests
    assert sum(on) >= 4 and not any(off), (on, off)
    np.testing.assert_allclose(p_on, p_off, rtol=0, atol=1e-13)


def test_a_state_of_another_composition_gets_its_own_matrices(disk):
    """A ``kahan_li6`` state (9 kept matrices) continued by a ``kahan_li8`` integrator: its matrices are of
    another shape, so it starts without (NaN: each sub-step evaluates its own) and ends where a ``kahan_li8``
    step from the same point does."""
    six = md.Integrator(disk["system"], 0.1, "split", solver=KEEP, composition="kahan_li6")
    st6, _ = six.step(six.initial_state(disk["q0"], disk["v0"]))
    assert np.asarray(st6.members.newton).shape == (9, 6, 6)
    eight = md.Integrator(disk["system"], 0.1, "split", solver=KEEP, composition="kahan_li8")
    st8, _ = eight.step(st6)
    assert np.asarray(st8.members.newton).shape == (17, 6, 6) and np.all(np.isfinite(st8.members.newton))
    fresh = dataclasses.replace(st6, members=st6.members._replace(newton=None, history=None))
    ref, _ = eight.step(fresh)
    np.testing.assert_allclose(np.asarray(st8.members.p), np.asarray(ref.members.p), rtol=0, atol=1e-13)


@pytest.mark.parametrize("block", [2, 3])
def test_a_vmapped_block_branches_for_the_whole_block(disk, block):
    """A block of members ``vmap``-ed with an axis name (the step's layout on a GPU): Newton evaluates the
    matrix for the whole block when any member needs it (``pmax``), with the round-off floor from its
    linearization. The same steps as one member at a time, to round-off, each member its own matrices; and
    the block is told apart from members that share one matrix (the first member's, sensitivity)."""
    from manifold_dirac._run.programs import member_step

    integ = md.Integrator(disk["system"], 0.1, "split", solver=KEEP, composition="kahan_li8")
    v0 = np.asarray(disk["v0"], float)
    vs = np.stack([v0, 1.1 * v0, 0.9 * v0])
    q0 = jax.tree.map(lambda a: np.broadcast_to(a, (3, *np.shape(a))), disk["q0"])
    st = integ.initial_state(q0, vs).members
    one, blk = member_step(integ.stepmap, True, block=1), member_step(integ.stepmap, True, block=block)
    args = (np.int32(0), np.float64(0.0), np.float64(0.1), disk["system"].params, None)
    a, b = jax.jit(one)(st, *args)[0], jax.jit(blk)(st, *args)[0]
    a, b = jax.jit(one)(a, np.int32(1), np.float64(0.1), *args[2:])[0], \
        jax.jit(blk)(b, np.int32(1), np.float64(0.1), *args[2:])[0]
    np.testing.assert_allclose(np.asarray(a.p), np.asarray(b.p), rtol=0, atol=1e-13)
    kept = np.asarray(b.newton)
    assert kept.shape == (3, 17, 6, 6) and np.all(np.isfinite(kept))
    assert not np.allclose(kept[1], kept[0], rtol=1e-6)  # each member's own matrices


def test_an_uncomposed_run_keeps_its_matrix():
    """The heavy top (SO(3), no constraints), 200 steps: the same motion; ``State.newton`` is ``(3, 3)``."""
    ex = EXAMPLES["heavy_top"]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    a = md.integrate(sysm, q0, v0, h=0.02, n_steps=200, solver=EVERY)
    b = md.integrate(sysm, q0, v0, h=0.02, n_steps=200, solver=KEEP)
    dq = np.max(np.abs(_q(a) - _q(b)))
    assert 0 < dq < 1e-11, dq
    integ = md.Integrator(sysm, 0.02, solver=KEEP)
    st, _ = integ.step(integ.initial_state(q0, v0))
    assert np.asarray(st.members.newton).shape == (3, 3)


def test_a_batch_keeps_one_matrix_per_member(disk):
    v0 = np.asarray(disk["v0"], float)
    vs = np.stack([v0, 1.1 * v0])
    q0 = jax.tree.map(lambda a: np.broadcast_to(a, (2, *np.shape(a))), disk["q0"])
    tr = md.integrate(disk["system"], q0, vs, solver=KEEP, **{**disk["kw"], "n_steps": 20})
    for i in range(2):
        one = md.integrate(disk["system"], disk["q0"], vs[i], solver=KEEP, **{**disk["kw"], "n_steps": 20})
        qb = np.concatenate([np.asarray(a)[:, i].reshape(np.shape(a)[0], -1) for a in jax.tree.leaves(tr.q)], 1)
        np.testing.assert_allclose(qb, _q(one), rtol=0, atol=1e-12)
    # the batch's state: one set of matrices per member, each its own (the members' motions differ)
    integ = md.Integrator(disk["system"], 0.1, "split", solver=KEEP, composition="kahan_li8")
    st, _ = integ.step(integ.initial_state(q0, vs))
    kept = np.asarray(st.members.newton)
    assert kept.shape == (2, 17, 6, 6) and np.all(np.isfinite(kept))
    assert not np.allclose(kept[1], kept[0], rtol=1e-6)


def test_a_force_below_round_off_per_step_still_acts_with_kept_matrices():
    """As ``tests/mechanics/test_newton_start.py`` and the composed predictor's test: a damping of ``5e-13`` on a
    free particle acts in full over 2000 ``kahan_li8`` steps with kept matrices (an update with a kept matrix
    is still an update: the start test decides, not the matrix)."""
    h, n, c = 0.01, 2000, 5e-13
    r = md.rollout(damped_oscillator(stiffness=0.0, damping=c), np.zeros(1), np.ones(1), h=h, n_steps=n,
                   scheme="split", composition="kahan_li8", solver=KEEP).check()
    dp = float(r.p[-1, 0] - r.p[0, 0])
    assert abs(dp / (-c * h * n) - 1.0) < 0.2, dp / (-c * h * n)


def test_gradients_do_not_depend_on_the_kept_matrices(disk):
    """The implicit derivative of each step is that of its equations at the solution: d q_T / d v0 with kept
    matrices equals that with every update evaluated (to round-off), and differs from the derivative with the
    solve's dependence dropped (``differentiation="detached"``, the wrong derivative)."""
    sysm, q0 = disk["system"], disk["q0"]
    kw = {**disk["kw"], "n_steps": 10}

    def final(v0, solver, how="implicit"):
        r = md.rollout(sysm, q0, v0, solver=solver, differentiation=how, **kw)
        return r.q[0][-1, :2, 2]  # the disk's contact point (x, y) at T

    v0 = jnp.asarray(disk["v0"], jnp.float64)
    g_keep = np.asarray(jax.jacfwd(final)(v0, KEEP))
    g_every = np.asarray(jax.jacfwd(final)(v0, EVERY))
    np.testing.assert_allclose(g_keep, g_every, rtol=0, atol=1e-10 * np.max(np.abs(g_every)))
    g_wrong = np.asarray(jax.jacfwd(lambda v: final(v, KEEP, "detached"))(v0))
    assert np.max(np.abs(g_wrong - g_every)) > 1e-3 * np.max(np.abs(g_every))


def test_reverse_mode_and_second_order_through_kept_matrices():
    """A composed pendulum (``kahan_li6``, checkpointed rollout): ``grad`` equals ``jacfwd``, and both equal the
    derivatives with every matrix evaluated; the second derivative too (the kept matrices are carried through
    the loop with a zero tangent)."""
    pend = md.systems.pendulum()

    def final(theta0, solver):
        r = md.rollout(pend, jnp.atleast_1d(theta0), jnp.zeros(1), h=0.1, n_steps=12, scheme="split",
                       composition="kahan_li6", solver=solver)
        return r.q[-1, 0]

    x = jnp.float64(0.8)
    g_rev, g_fwd = jax.grad(final)(x, KEEP), jax.jacfwd(final)(x, KEEP)
    g_every = jax.grad(final)(x, EVERY)
    assert abs(float(g_rev - g_fwd)) < 1e-12 and abs(float(g_rev - g_every)) < 1e-10, (g_rev, g_fwd, g_every)
    h_keep = jax.hessian(final)(x, KEEP)
    h_every = jax.hessian(final)(x, EVERY)
    assert abs(float(h_keep - h_every)) < 1e-8 * max(1.0, abs(float(h_every))), (h_keep, h_every)
    fd = (jax.grad(final)(x + 1e-5, KEEP) - jax.grad(final)(x - 1e-5, KEEP)) / 2e-5
    assert abs(float(h_keep - fd)) < 1e-5 * max(1.0, abs(float(fd))), (h_keep, fd)  # not a zero second derivative
