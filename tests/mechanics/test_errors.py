"""Bad input and failed solves raise errors that say what, where and why."""

import numpy as np
import pytest

from manifold_dirac import (
    ConvergenceError,
    Euclidean,
    IllPosedStepError,
    Integrator,
    LagrangeDiracSystem,
    NonFiniteError,
    SolverOptions,
    StepError,
    Trajectory,
    integrate,
)
from manifold_dirac import systems as S
from manifold_dirac.errors import DegenerateLagrangianWarning


def test_v0_outside_the_constraint_distribution():
    ke = S.knife_edge()
    with pytest.raises(ValueError, match=r"v0 is not in the constraint distribution: \|A\(q0\) v0\| = 1.000e-01"):
        integrate(ke, ke.Q.identity(), v0=np.array([1.0, 0.0, 0.1]), h=0.1, n_steps=1)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(v0=np.array([1.0, 0.0])), r"v0: expected frame coordinates of shape \(\*batch, 3\)"),
        (dict(v0=np.array([np.nan, 0.0, 0.0])), "v0: contains non-finite values"),
        (dict(p0=np.ones((2, 3))), r"p0: shape \(2, 3\) does not match the batch shape \(\) of q0"),
        (dict(), "give the initial velocity v0 or the initial momentum p0"),
        (dict(v0=np.array([1.0, 0.0, 0.0]), p0=np.array([1.0, 1.0, 0.0])), "p0 differs from dL/dv"),
    ],
)
def test_bad_initial_data(kw, match):
    ke = S.knife_edge()
    with pytest.raises(ValueError, match=match):
        integrate(ke, ke.Q.identity(), h=0.1, n_steps=1, **kw)


def test_q0_not_on_the_manifold():
    top = S.heavy_top()
    R = np.eye(3)
    R[0, 0] = 1.1
    with pytest.raises(ValueError, match=r"q0: not a rotation matrix .* \|R\^T R - I\| = 2.100e-01"):
        integrate(top, R, v0=np.zeros(3), h=0.1, n_steps=1)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(h=0.0), "the step h must be a positive finite number"),
        (dict(h=np.inf), "the step h must be a positive finite number"),
        (dict(h=0.1, scheme="rk4"), "unknown scheme 'rk4'; valid: 'plus', 'minus', 'symmetric'"),
        (dict(h=0.1, discrete_lagrangian="simpson"), "unknown discrete Lagrangian 'simpson'; valid: 'rectangle\\+'"),
        (dict(h=0.1, n_steps=-1), "n_steps must be a non-negative integer"),
        (dict(h=0.1, stride=0), "stride must be a positive integer"),
        (dict(h=0.1, on_failure="ignore"), "on_failure must be 'raise' or 'mark'"),
    ],
)
def test_bad_options(kw, match):
    kw = {"n_steps": 1, **kw}
    with pytest.raises(ValueError, match=match):
        integrate(S.pendulum(), np.array([0.1]), v0=np.array([0.0]), **kw)


def test_solver_options_validated():
    with pytest.raises(ValueError, match="max_iter must be a positive integer"):
        SolverOptions(max_iter=0)
    with pytest.raises(ValueError, match="rtol must be a finite non-negative number"):
        SolverOptions(rtol=-1.0)


def test_constant_constraint_shape():
    with pytest.raises(ValueError, match=r"constraint: constant one-forms are a \(m, 3\) matrix in frame coordinates, got shape \(1, 2\)"):
        LagrangeDiracSystem(Euclidean(3), lambda q, v: 0 * v[..., 0], constraint=np.ones((1, 2)))


def test_nonconvergence_names_step_time_residual_and_keeps_the_trajectory():
    pend = S.pendulum()
    with pytest.raises(ConvergenceError) as ei:
        integrate(pend, np.array([3.0]), v0=np.array([0.0]), h=2.5, n_steps=10, solver=SolverOptions(max_iter=3))
    e = ei.value
    assert "did not converge in 3 iterations" in str(e) and "step h=2.5 is too large" in str(e)
    assert str(e).startswith(f"step {e.step} (t = {e.time:g})")
    assert e.residual > 0 and np.isfinite(e.residual)
    assert isinstance(e.trajectory, Trajectory) and e.trajectory.n_points == e.step + 1


def test_nan_from_the_lagrangian_is_reported_as_such():
    def L(q, v):
        return 0.5 * v[..., 0] ** 2 + np.where(q[..., 0].real > 0.25, np.nan, 0.0) * q[..., 0]

    sysm = LagrangeDiracSystem(Euclidean(1), L, name="blows_up")
    with pytest.raises(NonFiniteError, match="a non-finite value .* the Lagrangian, force or constraint returned NaN"):
        integrate(sysm, np.array([0.0]), v0=np.array([1.0]), h=0.1, n_steps=10)


def test_ill_posed_step_is_not_a_convergence_failure():
    lv = S.lotka_volterra()
    with pytest.warns(DegenerateLagrangianWarning, match="rectangle\\+"):
        with pytest.raises(IllPosedStepError, match="step 0 .* the step equations are singular") as ei:
            integrate(lv, np.array([1.0, 2.0]), p0=np.array([np.log(2.0), 0.0]), h=0.05, n_steps=5,
                      discrete_lagrangian="rectangle+")
    assert not isinstance(ei.value, ConvergenceError) and isinstance(ei.value, StepError)


def test_batch_marks_a_failed_member_and_finishes_the_others():
    pend = S.pendulum()
    q0 = np.array([[0.1], [0.2], [0.3]])
    bad = LagrangeDiracSystem(
        pend.Q, lambda q, v: pend.lagrangian(q, v) + np.where(q[..., 0].real > 0.25, np.nan, 0.0) * q[..., 0],
        name="bad")
    tr = integrate(bad, q0, v0=np.zeros((3, 1)), h=0.05, n_steps=20)
    assert list(tr.status) == [0, 0, 3] and not tr.ok
    assert len(tr.messages) == 1 and "batch member [2]" in tr.messages[0]
    ref = integrate(pend, q0[:2], v0=np.zeros((2, 1)), h=0.05, n_steps=20)
    np.testing.assert_allclose(tr.q[:, :2], ref.q, rtol=0, atol=1e-14)
    # the failed member is frozen at its initial state; its velocity and energy are
    # NaN from its failure on (there is nothing to difference), flagged by status
    assert np.all(np.isfinite(tr.q)) and np.all(tr.q[:, 2] == 0.3)
    assert np.all(np.isnan(tr.v[:, 2])) and np.all(np.isfinite(tr.v[:, :2]))
    with pytest.raises(NonFiniteError, match="batch member \\[2\\]"):
        integrate(bad, q0, v0=np.zeros((3, 1)), h=0.05, n_steps=20, on_failure="raise")


def test_integrator_rejects_non_systems():
    with pytest.raises(ValueError, match="system must be a LagrangeDiracSystem"):
        Integrator(object(), 0.1)


def test_a_domain_failure_marks_only_that_member():
    """A Cayley iterate past a rotation by pi in one member must not end the batch."""
    from manifold_dirac.mechanics.solver import FAILED_DOMAIN
    from manifold_dirac.systems.catalog import get_example

    ball = S.rolling_ball(0.5, retraction="cayley")
    (R0, x0), v0 = get_example("rolling_ball").initial(ball)
    v = np.stack([v0, 2e9 * v0])
    q = (np.stack([R0, R0]), np.stack([x0, x0]))
    tr = integrate(ball, q, v0=v, h=0.05, n_steps=5, scheme="minus")
    assert list(tr.status) == [0, FAILED_DOMAIN]
    assert "batch member [1]" in tr.messages[0] and "left the domain of the inverse retraction" in tr.messages[0]
    ref = integrate(ball, (R0, x0), v0=v0, h=0.05, n_steps=5, scheme="minus")
    np.testing.assert_allclose(tr.q[1][:, 0], ref.q[1], atol=1e-13)
    assert np.all(np.isnan(tr.energy[:, 1])) and np.all(np.isfinite(tr.energy[:, 0]))


def test_large_masses_and_small_steps_are_not_ill_posed():
    """The condition number is taken after equilibration: M/h against A is a scale, not a singularity."""
    heavy = S.knife_edge(mass=1e4, inertia=5e3)
    tr = integrate(heavy, heavy.Q.identity(), v0=np.array([0.8, 1.0, 0.0]), h=1e-3, n_steps=20)
    light = integrate(S.knife_edge(), S.knife_edge().Q.identity(), v0=np.array([0.8, 1.0, 0.0]), h=1e-3, n_steps=20)
    assert tr.ok
    np.testing.assert_allclose(tr.q, light.q, atol=1e-12)


def test_a_late_singular_step_is_reported_with_its_condition_number():
    lv = S.lotka_volterra()
    with pytest.warns(DegenerateLagrangianWarning), pytest.raises(IllPosedStepError) as ei:
        integrate(lv, *S.LOTKA_VOLTERRA_INITIAL[:1], p0=S.LOTKA_VOLTERRA_INITIAL[1], h=0.05, n_steps=400,
                  discrete_lagrangian="trapezoid")
    assert ei.value.step > 10 and "condition number 0.000e+00" not in str(ei.value)
