"""The Trajectory result, the step-by-step interface, strides, callbacks, batches (compiled engine).

Ported from the numpy engine's ``tests/mechanics/test_trajectory.py`` with
every assertion. What changed with the engine, and how each test keeps its
intent:

* the **callback** of a run is called on the host after each compiled chunk
  (``CHUNK`` steps, not every step: a per-step Python call would defeat the
  compiled loop) with the current :class:`RunState`, and returning ``False``
  stops the run there;
* ``Integrator.step(state, force=F)`` replaced the system's force by ``F``;
  ``Integrator.step(state, u)`` **adds** the control covector ``u`` to it
  (held over the step). The control test compares a step with ``u`` against
  the same step with ``u = 0``;
* a rule's ``evaluate`` takes ``(system, q0, xi, h, t0)`` with the chart
  coordinate ``xi = R_{q0}^{-1}(q1)``, not ``q1``;
* ``meta["stride"]`` is checked on the stride-7 run the subsample test makes
  (stride is part of the compiled program: another stride compiles again).

The batch test compiles the batched heavy top (a program of its own) and is
marked ``slow``; ``tests/next/test_engine.py`` checks batches in CI.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac.manifolds import SO3, Euclidean, ProductManifold
from manifold_dirac.mechanics.integrate import CHUNK, Integrator, integrate
from manifold_dirac.mechanics.system import LagrangeDiracSystem
from manifold_dirac.mechanics.trajectory import Trajectory

from ..systems.bundled import new


def test_save_load_round_trip(tmp_path):
    top = new("heavy_top")
    tr = integrate(top, top.Q.identity(), v0=np.array([0.1, 0.2, 1.0]), h=0.05, n_steps=20)
    path = tr.save(tmp_path / "top.npz")
    back = Trajectory.load(path)
    assert back.equals(tr) and back.meta["scheme"] == "symmetric" and back.meta["h"] == 0.05
    with np.load(path, allow_pickle=False) as data:  # no pickle anywhere
        assert "header" in data.files


def test_save_load_product_points(tmp_path):
    Q = ProductManifold(SO3(), Euclidean(2))
    sysm = LagrangeDiracSystem(Q, lambda q, v: 0.5 * jnp.sum(v * v) - 0.5 * jnp.sum(q[1] ** 2), name="prod")
    tr = integrate(sysm, (SO3().identity(), np.array([1.0, 0.0])), v0=np.array([0, 0, 1.0, 0, 0.5]), h=0.1,
                   n_steps=5)
    back = Trajectory.load(tr.save(tmp_path / "p.npz"))
    assert isinstance(back.q, tuple) and back.q[0].shape == (6, 3, 3) and back.equals(tr)


def test_trajectory_is_frozen():
    tr = integrate(new("pendulum"), np.array([0.1]), v0=np.array([0.0]), h=0.1, n_steps=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.t = None  # type: ignore[misc]


def test_fields_and_shapes():
    ke = new("inclined_knife_edge")
    tr = integrate(ke, ke.Q.identity(), v0=np.array([1.0, 0.0, 0.0]), h=0.1, n_steps=10)
    assert tr.t.shape == (11,) and tr.q.shape == (11, 3, 3) and tr.p.shape == (11, 3)
    assert tr.v.shape == (11, 3) and tr.energy.shape == (11,)
    assert tr.xi.shape == (10, 3) and tr.mu.shape == (10, 1) and tr.iterations.shape == (10,)
    assert tr.constraint_residual.shape == (10,) and np.all(tr.constraint_residual < 1e-12)
    assert tr.meta["n_steps"] == 10 and tr.meta["total_iterations"] == tr.iterations.sum()
    np.testing.assert_allclose(tr.t, 0.1 * np.arange(11))


def test_stride_stores_a_subsample():
    pend = new("pendulum")
    full = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=100)
    sub = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=100, stride=7)
    idx = list(range(0, 100, 7)) + [100]
    np.testing.assert_array_equal(sub.q, full.q[idx])
    np.testing.assert_array_equal(sub.p, full.p[idx])
    np.testing.assert_allclose(sub.v, full.v[idx], rtol=0, atol=1e-15)
    assert sub.xi.shape[0] == len(idx) - 1
    assert sub.meta["stride"] == 7  # was test_meta_records_the_stride (stride 4)


def test_callback_can_stop_the_run():
    """Called after each compiled chunk with the RunState; ``False`` stops the run early."""
    seen = []

    def cb(state):
        seen.append(state.k)
        return state.k < 5

    tr = integrate(new("pendulum"), np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=1000, callback=cb)
    assert seen == [CHUNK] and tr.n_points <= CHUNK + 1 < 1001


def test_a_stopped_run_ends_at_the_state_the_callback_saw():
    """The numpy engine's ``seen == [1, ..., 5] and tr.n_points == 6``: the last
    point of a stopped run is the state the callback was shown, and the run
    records one step fewer than points, like any other trajectory."""
    seen = []

    def cb(state):
        seen.append(state.k)
        return state.k < 5

    tr = integrate(new("pendulum"), np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=1000, callback=cb)
    assert seen == [CHUNK]
    assert tr.xi.shape[0] == tr.n_points - 1
    assert tr.n_points == seen[-1] + 1 and tr.meta["n_steps"] == seen[-1]


def test_step_by_step_equals_integrate_and_takes_a_control_input():
    dd = new("differential_drive")
    integ = Integrator(dd, 0.05)
    zero = np.zeros(3)
    s = integ.initial_state(dd.Q.identity(), v0=np.zeros(3))
    qs = [s.q]
    for _ in range(20):
        s, _ = integ.step(s, zero)  # u = 0: the system's own force
        qs.append(s.q)
    tr = integrate(dd, dd.Q.identity(), v0=np.zeros(3), h=0.05, n_steps=20)
    np.testing.assert_allclose(np.stack(qs), tr.q, rtol=0, atol=1e-15)
    # a control loop: a constant input over the step is added to the system's force; a
    # forward push moves the vehicle further forward and does not turn it. From t0 = -h/2
    # the midpoint rule samples the steering torque 0.5 sin(t) at t = 0, where it vanishes.
    s0 = integ.initial_state(dd.Q.identity(), v0=np.zeros(3), t0=-0.025)
    s_free, _ = integ.step(s0, zero)
    s_push, _ = integ.step(s0, np.array([0.0, 2.0, 0.0]))
    c_free, c_push = np.asarray(dd.Q.to_coordinates(s_free.q)), np.asarray(dd.Q.to_coordinates(s_push.q))
    assert c_push[0] > c_free[0] > 0 and abs(c_push[2]) < 1e-15 and abs(c_free[2]) < 1e-15


@pytest.mark.slow
def test_batch_equals_loop_of_single_trajectories():
    top = new("heavy_top")
    rng = np.random.default_rng(3)
    q0 = top.Q.random_point(rng, (4,))
    v0 = rng.standard_normal((4, 3))
    tb = integrate(top, q0, v0=v0, h=0.05, n_steps=30)
    for i in range(4):
        ti = integrate(top, q0[i], v0=v0[i], h=0.05, n_steps=30)
        np.testing.assert_allclose(tb.q[:, i], ti.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(tb.p[:, i], ti.p, rtol=0, atol=1e-12)


def test_minus_scheme_reports_the_momentum_of_53d():
    ke = new("knife_edge")
    tr = integrate(ke, ke.Q.identity(), v0=np.array([1.0, 1.0, 0.0]), h=0.1, n_steps=5, scheme="minus")
    # p_k = -D1 L_d(q_k, q_{k+1}) exactly (53c); the last point has a closing solve
    rule = Integrator(ke, 0.1, "minus").rule
    D1 = jax.jit(lambda q0, q1, t: rule.evaluate(ke, q0, ke.Q.inverse_retract(q0, q1), 0.1, t, ke.params).D1)
    for k in range(5):
        np.testing.assert_allclose(tr.p[k], -np.asarray(D1(tr.q[k], tr.q[k + 1], tr.t[k])), atol=1e-12)


def test_p0_only_records_the_legendre_velocity():
    """Given only p0, v[0] and E[0] come from the Legendre inverse, not a one-sided difference."""
    pend = new("pendulum")
    a = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.1, n_steps=50)
    b = integrate(pend, np.array([0.5]), p0=np.array([0.0]), h=0.1, n_steps=50)
    np.testing.assert_allclose(b.v[0], a.v[0], atol=1e-12)
    assert b.energy_error == pytest.approx(a.energy_error, rel=1e-9)
