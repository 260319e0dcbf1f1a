"""The Trajectory result, the step-by-step interface, strides, callbacks, batches."""

import dataclasses

import numpy as np
import pytest

from manifold_dirac import (
    SO3,
    Euclidean,
    Integrator,
    LagrangeDiracSystem,
    ProductManifold,
    Trajectory,
    integrate,
)
from manifold_dirac import systems as S


def test_save_load_round_trip(tmp_path):
    top = S.heavy_top()
    tr = integrate(top, top.Q.identity(), v0=np.array([0.1, 0.2, 1.0]), h=0.05, n_steps=20)
    path = tr.save(tmp_path / "top.npz")
    back = Trajectory.load(path)
    assert back.equals(tr) and back.meta["scheme"] == "symmetric" and back.meta["h"] == 0.05
    with np.load(path, allow_pickle=False) as data:  # no pickle anywhere
        assert "header" in data.files


def test_save_load_product_points(tmp_path):
    Q = ProductManifold(SO3(), Euclidean(2))
    sysm = LagrangeDiracSystem(Q, lambda q, v: 0.5 * np.sum(v * v, -1) - 0.5 * np.sum(q[1] ** 2, -1), name="prod")
    tr = integrate(sysm, (SO3().identity(), np.array([1.0, 0.0])), v0=np.array([0, 0, 1.0, 0, 0.5]), h=0.1, n_steps=5)
    back = Trajectory.load(tr.save(tmp_path / "p.npz"))
    assert isinstance(back.q, tuple) and back.q[0].shape == (6, 3, 3) and back.equals(tr)


def test_trajectory_is_frozen():
    tr = integrate(S.pendulum(), np.array([0.1]), v0=np.array([0.0]), h=0.1, n_steps=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.t = None  # type: ignore[misc]


def test_fields_and_shapes():
    ke = S.inclined_knife_edge()
    tr = integrate(ke, ke.Q.identity(), v0=np.array([1.0, 0.0, 0.0]), h=0.1, n_steps=10)
    assert tr.t.shape == (11,) and tr.q.shape == (11, 3, 3) and tr.p.shape == (11, 3)
    assert tr.v.shape == (11, 3) and tr.energy.shape == (11,)
    assert tr.xi.shape == (10, 3) and tr.mu.shape == (10, 1) and tr.iterations.shape == (10,)
    assert tr.constraint_residual.shape == (10,) and np.all(tr.constraint_residual < 1e-12)
    assert tr.meta["n_steps"] == 10 and tr.meta["total_iterations"] == tr.iterations.sum()
    np.testing.assert_allclose(tr.t, 0.1 * np.arange(11))


def test_stride_stores_a_subsample():
    pend = S.pendulum()
    full = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=100)
    sub = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=100, stride=7)
    idx = list(range(0, 100, 7)) + [100]
    np.testing.assert_array_equal(sub.q, full.q[idx])
    np.testing.assert_array_equal(sub.p, full.p[idx])
    np.testing.assert_allclose(sub.v, full.v[idx], rtol=0, atol=1e-15)
    assert sub.xi.shape[0] == len(idx) - 1


def test_callback_can_stop_the_run():
    seen = []

    def cb(state, info):
        seen.append(state.k)
        return state.k < 5

    tr = integrate(S.pendulum(), np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=100, callback=cb)
    assert seen == [1, 2, 3, 4, 5] and tr.n_points == 6


def test_step_by_step_equals_integrate_and_takes_a_control_input():
    dd = S.differential_drive()
    integ = Integrator(dd, 0.05)
    s = integ.initial_state(dd.Q.identity(), v0=np.zeros(3))
    qs = [s.q]
    for _ in range(20):
        s, _ = integ.step(s)
        qs.append(s.q)
    tr = integrate(dd, dd.Q.identity(), v0=np.zeros(3), h=0.05, n_steps=20)
    np.testing.assert_array_equal(np.stack(qs), tr.q)
    # a control loop: a constant input over each step overrides the system's force
    s2, _ = integ.step(integ.initial_state(dd.Q.identity(), v0=np.zeros(3)), force=np.array([0.0, 2.0, 0.0]))
    assert dd.Q.to_coordinates(s2.q)[0] > 0 and abs(dd.Q.to_coordinates(s2.q)[2]) < 1e-15


def test_batch_equals_loop_of_single_trajectories():
    top = S.heavy_top()
    rng = np.random.default_rng(3)
    q0 = top.Q.random_point(rng, (4,))
    v0 = rng.standard_normal((4, 3))
    tb = integrate(top, q0, v0=v0, h=0.05, n_steps=30)
    for i in range(4):
        ti = integrate(top, q0[i], v0=v0[i], h=0.05, n_steps=30)
        np.testing.assert_allclose(tb.q[:, i], ti.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(tb.p[:, i], ti.p, rtol=0, atol=1e-12)


def test_minus_scheme_reports_the_momentum_of_53d():
    ke = S.knife_edge()
    tr = integrate(ke, ke.Q.identity(), v0=np.array([1.0, 1.0, 0.0]), h=0.1, n_steps=5, scheme="minus")
    # p_k = -D1 L_d(q_k, q_{k+1}) exactly (53c); the last point has a closing solve
    for k in range(5):
        integ = Integrator(ke, 0.1, "minus")
        ld = integ.rule.evaluate(ke, tr.q[k], tr.q[k + 1], 0.1)
        np.testing.assert_allclose(tr.p[k], -ld.D1, atol=1e-12)


def test_meta_records_the_stride():
    tr = integrate(S.pendulum(), np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=20, stride=4)
    assert tr.meta["stride"] == 4


def test_p0_only_records_the_legendre_velocity():
    """Given only p0, v[0] and E[0] come from the Legendre inverse, not a one-sided difference."""
    pend = S.pendulum()
    a = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.1, n_steps=50)
    b = integrate(pend, np.array([0.5]), p0=np.array([0.0]), h=0.1, n_steps=50)
    np.testing.assert_allclose(b.v[0], a.v[0], atol=1e-12)
    assert b.energy_error == pytest.approx(a.energy_error, rel=1e-9)
