"""The start's check of the first step's Newton matrix, and the Newton starts of a composed rollout.

* the condition number that decides whether a start is singular (the
  1-norm one of the equilibrated Newton matrix, from an unrolled
  elimination) is within a factor ``N`` of the ratio of extreme singular
  values on the start of every catalog system, flags an exactly and a
  nearly singular matrix, and does not flag a merely ill-conditioned one;
  the null direction that the error message names is computed only for a
  singular matrix, and is one;
* a composed rollout starts each sub-step's Newton iteration from the
  same sub-step of the previous steps: on the rolling disk (uniform motion)
  at most one update per sub-step, with the positions of ``integrate``; on
  the first step a sub-step of the second half starts from its mirror in
  the first half (the tables of these starts are checked on a palindrome of
  odd and of even length, and refused for a composition that is not one).
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._mechanics.composition import (composed_predictor, get_composition, predicted_solutions,
                                                  sub_step_start)
from manifold_dirac._mechanics.newton import SolverOptions
from manifold_dirac._mechanics.rules import get_rule
from manifold_dirac._mechanics.schemes import get_scheme
from manifold_dirac._mechanics.step import StepMap
from manifold_dirac._run.rollout import _initial_unknowns
from manifold_dirac._run.start import _SINGULAR_STEP, equilibrated_condition
from manifold_dirac.systems.catalog import EXAMPLES

FAST = ("chaplygin_sled",)  # the rest of the catalog runs in the slow tier

_cond = jax.jit(lambda J: equilibrated_condition(J, direction=False)[0])
_cond_and_direction = jax.jit(equilibrated_condition)


def _start_matrix(name: str) -> np.ndarray:
    """The first step's Newton matrix ``dr/dz`` at its warm start (symmetric scheme, midpoint, the example's h)."""
    ex = EXAMPLES[name]
    sysm = ex.system()
    q0, v0 = ex.initial(sysm)
    sm = StepMap(sysm, get_scheme("symmetric"), get_rule("midpoint"), SolverOptions())
    p0 = sysm.momentum(q0, jnp.asarray(v0), sysm.params)
    z0 = _initial_unknowns(sm, q0, p0, ex.h * jnp.asarray(v0))
    jac = jax.jit(jax.jacfwd(lambda z: sm.equations(z, q0, p0, 0.0, ex.h, sysm.params)[0]))
    return np.asarray(jac(z0))


def _svd_condition(J: np.ndarray) -> float:
    """The ratio of the extreme singular values of ``J`` equilibrated by rows then columns (numpy)."""
    Je = J / np.maximum(np.max(np.abs(J), axis=1, keepdims=True), 1e-300)
    Je = Je / np.maximum(np.max(np.abs(Je), axis=0, keepdims=True), 1e-300)
    s = np.linalg.svd(Je, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")


@pytest.mark.parametrize("name", [pytest.param(k, marks=() if k in FAST else pytest.mark.slow) for k in EXAMPLES])
def test_start_condition_flags_singular_matrices_only(name):
    J = _start_matrix(name)
    N = J.shape[0]
    k1, k2 = float(_cond(jnp.asarray(J))), _svd_condition(J)
    # the 1-norm condition number is within a factor N of the 2-norm one (both of the equilibrated matrix)
    assert k2 / N * (1 - 1e-9) <= k1 <= N * k2 * (1 + 1e-9), (k1, k2)
    assert k1 < 1e3  # every catalog start is well posed
    cond, d = _cond_and_direction(jnp.asarray(J))
    assert float(cond) == k1 and not np.any(np.asarray(d))  # no direction for a regular matrix
    if N == 1:
        assert float(_cond(jnp.zeros((1, 1)))) == np.inf
        return
    rng = np.random.default_rng(7)
    scale = float(np.max(np.abs(J)))
    singular = J.copy()
    singular[:, -1] = 2.0 * J[:, 0]  # a column that repeats another: exactly singular
    # perturbed entry by entry relatively (a perturbation that row and column scaling keep small): 1e-15 leaves
    # it singular to the threshold; 1e-7 makes it conditioned about 1e7 -- unless the repeated column leaves a
    # row of zeros, which stays exactly zero (then both estimates flag it)
    nearly = singular * (1.0 + 1e-15 * rng.standard_normal(J.shape))
    ill = singular * (1.0 + 1e-7 * rng.standard_normal(J.shape))
    zero_row = bool(np.any(np.all(singular == 0.0, axis=1)))
    for M, flagged in ((singular, True), (nearly, True), (ill, zero_row)):
        k1, k2 = float(_cond(jnp.asarray(M))), _svd_condition(M)
        assert (k1 > _SINGULAR_STEP) == flagged, (k1, k2)
        assert (k2 > _SINGULAR_STEP) == flagged, (k1, k2)  # the singular values agree: a real separation
    # the direction the error message names: a null vector of the singular matrix, in the unknowns' units
    cond, d = _cond_and_direction(jnp.asarray(singular))
    d = np.asarray(d)
    assert float(cond) > _SINGULAR_STEP and np.max(np.abs(d)) > 0
    assert np.max(np.abs(singular @ d)) <= 1e-10 * scale * np.max(np.abs(d))
    # sensitivity: that residual is not small for a direction that is not null
    assert np.max(np.abs(J @ d)) > 1e-3 * scale * np.max(np.abs(d))


@pytest.mark.slow  # about 11 s (two programs of the disk compiled)
def test_composed_rollout_starts_each_sub_step_from_the_previous_step():
    """The rolling disk composed with kahan_li6 at h = 0.5: at most one Newton update per sub-step after the first.

    The disk's body velocity is constant, so every sub-step of a step solves
    the equations of the same sub-step of the step before, from the state
    moved along: started there, Newton converges in one update or none
    (started from the previous sub-step's solution scaled by the ratio of
    the coefficients, it took 25 updates for the 9 sub-steps). On the first
    step the four sub-steps of the second half start from their mirrors in
    the first half (the same coefficient, the same equations moved along):
    19 updates where the scaled start took 27. The positions are those of
    ``integrate`` (which predicts its starts alike) to round-off.
    """
    ex = EXAMPLES["rolling_disk"]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    h, n, comp = 0.5, 4, "kahan_li6"
    s = get_composition(comp).stages
    fast = jax.jit(lambda q, v, hh: md.rollout(sysm, q, v, h=hh, n_steps=n, scheme="split", composition=comp))
    r = fast(q0, v0, h)
    assert r.ok and r.z.shape[:2] == (n, s)
    its = np.asarray(r.iterations)
    assert np.all(its[1:] <= s + 1), its.tolist()
    # the first half's five sub-steps from scaled starts (about three updates each), the second half's four
    # from their mirrors (one each): 27 updates without the mirrors
    assert its[0] <= 20, its.tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = md.integrate(sysm, q0, v0, h=h, n_steps=n, scheme="split", composition=comp)
    for a, b in zip(jax.tree.leaves(r.q), jax.tree.leaves(tr.q)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.p), np.asarray(tr.p), rtol=0, atol=1e-12)
    # sensitivity: a step 1e-6 longer moves the end point by more than the tolerance
    other = fast(q0, v0, h * (1 + 1e-6))
    assert max(float(np.max(np.abs(np.asarray(a)[-1] - np.asarray(b)[-1])))
               for a, b in zip(jax.tree.leaves(other.q), jax.tree.leaves(tr.q))) > 1e-10


def test_composed_predictor_tables():
    """The first step's mirrors: sub-step ``i`` of the second half starts from sub-step ``s - 1 - i``.

    ``kahan_li8`` (17 sub-steps, odd): the middle one has no mirror, the one
    after it is corrected by the middle's own solution (``mirror_before`` is
    the middle itself: no correction). A palindrome of even length: the first
    sub-step of the second half has no solved mirror before it. A composition
    that is not a palindrome has no mirrors at all.
    """
    ratio, mirror, before = composed_predictor(get_composition("kahan_li8").coefficients)
    assert mirror.tolist() == [-1] * 9 + list(range(7, -1, -1))
    assert before.tolist() == [-1] * 9 + list(range(8, 0, -1))
    g = np.asarray(get_composition("kahan_li8").coefficients)
    np.testing.assert_allclose(ratio[1:], g[1:] / g[:-1], rtol=1e-15)
    for i in range(9, 17):  # a mirror has the same coefficient, and so has the mirror of the sub-step before
        assert g[mirror[i]] == g[i] and g[before[i]] == g[i - 1]
    _, mirror, before = composed_predictor((0.3, 0.2, 0.2, 0.3))
    assert mirror.tolist() == [-1, -1, 1, 0] and before.tolist() == [-1, -1, -1, 1]
    _, mirror, before = composed_predictor((0.3, 0.2, 0.5))  # not a palindrome: no mirror
    assert mirror.tolist() == [-1, -1, -1] and before.tolist() == [-1, -1, -1]


def test_sub_step_start_rule():
    """Newton's start of each sub-step, against the rule written out (one function for integrate and rollout).

    A palindrome of even length ``(0.3, 0.2, 0.2, 0.3)``: on the first step
    sub-steps 0 and 1 start from ``P_0`` and ``(0.2 / 0.3)`` times sub-step
    0's solution, sub-step 2 from its mirror 1 (the sub-step before it is
    that mirror: no correction), sub-step 3 from its mirror 0 corrected by
    ``(0.3 / 0.2)`` times what sub-step 2 moved from its own mirror 1. After
    the first step: ``P_i + r_i (last - P_(i-1))``; the predictions
    extrapolate linearly from the third step.
    """
    g = (0.3, 0.2, 0.2, 0.3)
    ratio, mirror, before = composed_predictor(g)
    rng = np.random.default_rng(3)
    z1, z2, sol = (rng.standard_normal((4, 2)) for _ in range(3))  # history rows; this step's solutions
    np.testing.assert_array_equal(predicted_solutions(z1, z2, 0), z1)
    np.testing.assert_array_equal(predicted_solutions(z1, z2, 1), z1)
    np.testing.assert_allclose(predicted_solutions(z1, z2, 2), 2 * z1 - z2, rtol=0, atol=1e-15)
    P = np.asarray(predicted_solutions(z1, z2, 0))
    r = ratio
    want_first = [P[0], r[1] * sol[0], sol[1], sol[0] + r[3] * (sol[2] - sol[1])]
    P2 = np.asarray(predicted_solutions(z1, z2, 5))
    for first, Pk, want in ((True, P, want_first), (False, P2, None)):
        zs = np.zeros((4, 2))
        last = Pk[-1]
        for i in range(4):
            got = np.asarray(sub_step_start(first, i, Pk[i], Pk[i - 1], last, zs, r[i], mirror[i], before[i]))
            expected = want[i] if first else Pk[i] + r[i] * (last - Pk[i - 1])
            np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14, err_msg=f"first={first}, i={i}")
            zs[i], last = sol[i], sol[i]
    # sensitivity: without the mirror's correction sub-step 3's first start is off by what sub-step 2 moved
    assert np.max(np.abs(sol[0] - want_first[3])) > 1e-3


@pytest.mark.slow
def test_runs_continue_from_states_of_other_integrators():
    """A composed run from a plain integrator's state, a plain run from a composed one's, ``kahan_li8`` from
    ``kahan_li6``'s: each continues (the state conformed to the step map, ``StepMap.conform``) with the
    positions of a run from its own state, to the solves' round-off."""
    sysm = md.systems.pendulum()
    q0, v0, h = np.array([1.0]), np.array([0.5]), 0.3
    plain = md.Integrator(sysm, h)
    li6, li8 = (md.Integrator(sysm, h, composition=c) for c in ("kahan_li6", "kahan_li8"))
    starts = {name: integ.initial_state(q0, v0)
              for name, integ in (("plain", plain), ("li6", li6), ("li8", li8))}
    assert starts["plain"].members.history is None and starts["li6"].members.history.shape == (2, 9, 1)
    for integ, own, other in ((li6, "li6", "plain"), (plain, "plain", "li6"), (li8, "li8", "li6")):
        want = integ.run(starts[own], 3).q
        got = integ.run(starts[other], 3).q
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-13)
        stepped, _ = integ.step(starts[other])
        np.testing.assert_allclose(np.asarray(stepped.members.q), want[1], rtol=0, atol=1e-13)
    # sensitivity: another composition's run is not that run
    assert np.max(np.abs(li8.run(starts["li8"], 3).q - li6.run(starts["li6"], 3).q)) > 1e-9


@pytest.mark.parametrize("composition", ["kahan_li6", pytest.param((0.3, 0.2, 0.5), marks=pytest.mark.slow)])
def test_integrate_starts_composed_sub_steps_as_rollout(composition):
    """``integrate``'s composed steps start Newton where ``rollout``'s do: the same iterations, step by step.

    Its step map carries the sub-steps' solutions of the last two steps in
    the state (``State.history``) and starts each sub-step by rollout's rule
    (``sub_step_start``, tested above). The pendulum, whose steps change (a
    palindrome with mirrors, and a composition without): its two programs'
    solutions agree to the bit here, so the starts do, and the iterations.
    (Where two programs' round-off differs, as on the rolling disk at
    ``h = 0.5``, starts differ in the last bits and a start at Newton's
    round-off threshold may take one update more or less.)
    """
    sysm = md.systems.pendulum()
    q0, v0, h, n = np.array([1.0]), np.array([0.5]), 0.3, 6
    r = jax.jit(lambda q, v: md.rollout(sysm, q, v, h=h, n_steps=n, composition=composition))(q0, v0)
    tr = md.integrate(sysm, q0, v0, h=h, n_steps=n, composition=composition)
    assert tr.iterations[:n].tolist() == np.asarray(r.iterations).tolist()
    np.testing.assert_allclose(np.asarray(r.q), tr.q, rtol=0, atol=1e-14)
    # sensitivity: the same steps from states without a history (every step started as a first one) take
    # other iterations, and the solution is the same
    integ = md.Integrator(sysm, h, composition=composition)
    st = integ.initial_state(q0, v0).members
    assert st.history.shape == (2, len(get_composition(composition).coefficients), 1)
    f = jax.jit(integ.stepmap.step)
    its = []
    for k in range(n):
        st, rec = f(st._replace(history=None), np.int32(k), np.float64(k * h), np.float64(h), sysm.params)
        its.append(int(rec.iterations))
    assert its != tr.iterations[:n].tolist()
    np.testing.assert_allclose(np.asarray(st.q), tr.q[-1], rtol=0, atol=1e-13)


@pytest.mark.slow  # ~7 s each on a loaded machine (a rollout and an integrate program); composed sub-steps against
@pytest.mark.parametrize("coefficients", [(0.3, 0.2, 0.2, 0.3), (0.3, 0.2, 0.5)])  # rollout: kahan_li6 above
def test_composed_rollout_of_any_coefficients_matches_integrate(coefficients):
    """A palindrome of even length and a composition that is not one: the positions of ``integrate``.

    The pendulum, whose steps change: the Newton starts from mirrors and
    from the extrapolation of the last two steps converge to the solutions
    that ``integrate`` finds, to round-off.
    """
    sysm = md.systems.pendulum()
    q0, v0 = np.array([1.0]), np.array([0.5])
    run = jax.jit(lambda q, v, h: md.rollout(sysm, q, v, h=h, n_steps=6, composition=coefficients))
    r = run(q0, v0, 0.3)
    assert r.ok
    tr = md.integrate(sysm, q0, v0, h=0.3, n_steps=6, composition=coefficients)
    np.testing.assert_allclose(np.asarray(r.q), np.asarray(tr.q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(r.p), np.asarray(tr.p), rtol=0, atol=1e-12)
    # sensitivity: another step moves the end point by more than the tolerance
    assert abs(float(np.asarray(run(q0, v0, 0.3 * (1 + 1e-6)).q)[-1, 0]) - float(np.asarray(tr.q)[-1, 0])) > 1e-9
