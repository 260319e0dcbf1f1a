"""The run machinery under strides, failures and callbacks: nothing miscounted, nothing lost.

* ``meta["total_iterations"]`` counts the Newton iterations of every step,
  stored or not, so it does not depend on ``stride``;
* a batch whose failure is raised keeps every member's good states up to
  the start of the failed step whatever the stride (as a single trajectory
  does), with the values of the ``stride = 1`` run;
* the ``callback`` runs after every compiled chunk, the last one included,
  and stops the run where it asks to.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from manifold_dirac import integrate
from manifold_dirac._errors import StepError
from manifold_dirac._mechanics.status import Status
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._run.loop import CHUNK, chunk_rows
from manifold_dirac.systems import pendulum

from .test_faults import vanishing_mass  # the kinetic term of x0 vanishes for x0 >= 1


# ------------------------------------------------------------------ total_iterations
def _swing(stride: int, n_steps: int = 200):
    return integrate(pendulum(), np.array([2.5]), v0=np.array([0.0]), h=0.05, n_steps=n_steps, stride=stride)


@pytest.mark.parametrize("stride", [3, 10])
def test_total_iterations_counts_every_step_whatever_the_stride(stride):
    ref = _swing(1)
    tr = _swing(stride)
    every = int(np.sum(ref.iterations))  # stride 1: the records are every step's
    assert ref.meta["total_iterations"] == every
    assert tr.meta["total_iterations"] == every
    # the stored records alone count far fewer: a total made of them would differ
    assert int(np.sum(tr.iterations)) < every / 2


def test_total_iterations_counts_every_step_over_several_chunks():
    n = 2 * CHUNK + 40
    ref, tr = _swing(1, n), _swing(3, n)
    assert tr.meta["total_iterations"] == ref.meta["total_iterations"] == int(np.sum(ref.iterations))


# ------------------------------------------------------------------ a raised batch failure with a stride
V0 = np.array([[1.3, 1.0], [0.1, 1.0]])  # member 0 fails at step 5 (h = 0.1), member 1 is healthy


def _raised(stride: int, h: float = 0.1, n_steps: int = 40):
    with pytest.raises(StepError) as ei:
        integrate(vanishing_mass(), np.zeros((2, 2)), V0, h=h, n_steps=n_steps, stride=stride, on_failure="raise")
    return ei.value


@pytest.mark.parametrize("stride", [2, 3, 4, 8])
def test_a_raised_batch_failure_keeps_every_members_state_at_the_failed_step(stride):
    """Stride 4, failure at step 5: the points 0, 4 and 5 (not 0, 4 only), with the stride-1 run's values."""
    ref, e = _raised(1), _raised(stride)
    tr, r = e.trajectory, ref.trajectory
    assert e.step == ref.step == 5 and type(e) is type(ref)
    k = np.rint(tr.t / 0.1).astype(int)
    k_s = 5 // stride * stride
    assert list(k) == [*range(0, k_s, stride), *range(k_s, 6)]  # the stride, then every step to the failed one
    np.testing.assert_array_equal(tr.q, r.q[k])  # the same program from the same states: the same values
    np.testing.assert_array_equal(tr.p, r.p[k])
    np.testing.assert_array_equal(tr.v[-1], r.v[-1])  # NaN for the failed member, its velocity for the other
    assert np.isnan(tr.v[-1, 0]).all() and np.isfinite(tr.v[-1, 1]).all()
    np.testing.assert_array_equal(tr.xi[-1], r.xi[-1])  # the failed step's record
    assert tr.xi.shape[0] == tr.n_points
    assert list(tr.status) == list(r.status) == [Status.ILL_POSED, Status.OK]
    assert tr.meta["total_iterations"] == r.meta["total_iterations"]


def test_a_raised_batch_failure_in_a_later_chunk_keeps_every_state():
    """The failed chunk starts past step 0 (from a state that is not the initial one)."""
    h, stride = 0.00005, 2
    ref, e = _raised(1, h, 11000), _raised(stride, h, 11000)
    assert e.step == ref.step > chunk_rows(2) * stride  # the failure is in the second chunk
    tr, r = e.trajectory, ref.trajectory
    k = np.rint(tr.t / h).astype(int)
    assert k[-1] == e.step and np.all(np.diff(k[k <= e.step // stride * stride]) == stride)
    assert np.all(np.diff(k[k >= e.step // stride * stride]) == 1)
    np.testing.assert_array_equal(tr.q, r.q[k])
    np.testing.assert_array_equal(tr.p, r.p[k])


# ------------------------------------------------------------------ the callback
def _run(n_steps, callback, stride=1):
    integ = Integrator(pendulum(), 0.01)
    state = integ.initial_state(np.array([0.5]), v0=np.array([0.0]))
    return integ.run(state, n_steps, stride=stride, callback=callback)


@pytest.mark.parametrize("n_steps, stride, seen", [(100, 1, [100]),
                                                    (2 * CHUNK + 50, 1, [CHUNK, 2 * CHUNK, 2 * CHUNK + 50]),
                                                    (2 * CHUNK + 88, 2, [2 * CHUNK, 2 * CHUNK + 88])])
def test_the_callback_runs_after_every_chunk_the_last_one_included(n_steps, stride, seen):
    calls = []
    tr = _run(n_steps, lambda s: calls.append(s.k), stride)
    assert calls == seen
    full = _run(n_steps, None, stride)
    np.testing.assert_array_equal(tr.q, full.q)  # a callback that returns None changes nothing


def test_a_callback_that_stops_at_the_end_of_a_short_run_changes_nothing():
    calls = []
    tr = _run(100, lambda s: calls.append(s.k) or False)
    assert calls == [100] and tr.ok and tr.n_points == 101 and not tr.meta["interrupted"]


def test_a_callback_that_stops_the_run_records_the_state_it_saw_once():
    """Stopped at the end of the first chunk, step ``CHUNK``: a closing point records ``q_CHUNK`` (``CHUNK + 1``
    points), the callback is not called again."""
    calls = []
    tr = _run(2 * CHUNK + 50, lambda s: calls.append((s.k, np.asarray(s.q).copy())) or False)
    full = _run(2 * CHUNK + 50, None)
    assert [c[0] for c in calls] == [CHUNK]
    assert tr.n_points == CHUNK + 1 and tr.t[-1] == pytest.approx(CHUNK * 0.01) and tr.meta["n_steps"] == CHUNK
    np.testing.assert_array_equal(tr.q[-1], calls[0][1])
    np.testing.assert_array_equal(tr.q, full.q[:CHUNK + 1])
    assert tr.ok and tr.xi.shape[0] == CHUNK  # the closing point takes no step


def test_a_run_stopped_by_an_exception_after_the_first_chunk_keeps_the_points_before_it():
    """Interrupted (not stopped) at step ``CHUNK``: the points ``t_0 .. t_(CHUNK-1)``; ``q_CHUNK`` is computed,
    not stored.

    A stored point needs the step from it (its central velocity); after an
    exception no more compiled code runs, so the state at step ``CHUNK``,
    which the message names, is not a point of the partial trajectory.
    """
    def boom(state):
        raise ValueError("stop")

    with pytest.raises(ValueError) as ei:
        _run(2 * CHUNK + 50, boom)
    tr = ei.value.trajectory
    assert any(f"stopped the run at step {CHUNK}" in n for n in ei.value.__notes__)
    assert tr.n_points == CHUNK and tr.t[-1] == pytest.approx((CHUNK - 1) * 0.01)
    assert tr.xi.shape[0] == CHUNK  # every stored point's step was taken


def test_the_callback_parameter_is_documented_as_a_callable():
    doc = inspect.getdoc(integrate)
    assert "callback : callable" in doc and "progress : bool" in doc
    assert "progress, callback" not in doc


def test_a_raised_batch_energy_failure_at_a_stored_point_keeps_the_stride_one_values():
    """A non-finite energy at the stored point ``q_5`` (stride 5) of one member: the replay finds it again."""
    from tests.mechanics.test_guarantees import FAR, PROBE, _with_params

    sysm = _with_params(PROBE, {**FAR, "band": np.float64(0.5)})
    v0 = np.array([[1.0, 1.0], [0.7, 0.7]])  # member 0 lands in the band at q_5, member 1 never does
    runs = {}
    for stride in (1, 5):
        with pytest.raises(StepError) as ei:
            integrate(sysm, np.zeros((2, 2)), v0=v0, h=0.1, n_steps=20, stride=stride, on_failure="raise")
        runs[stride] = ei.value
    e, ref = runs[5], runs[1]
    assert e.step == ref.step == 5 and list(e.trajectory.t) == pytest.approx([0.0, 0.5])
    assert list(e.trajectory.status) == [Status.NONFINITE, Status.OK]
    np.testing.assert_array_equal(e.trajectory.q[-1], ref.trajectory.q[-1])
    np.testing.assert_array_equal(e.trajectory.energy[-1], ref.trajectory.energy[-1])
