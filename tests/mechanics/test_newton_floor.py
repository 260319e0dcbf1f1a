"""The round-off-floor stop of Newton: a residual that cannot get below the rounding of its data.

``r(z) = ((c + eta + z) - c) - a`` at ``c = 1e9``: positions near ``c`` are resolved
only to ``ulp(c)`` (1.2e-7), and ``a = 0.3`` is not a multiple of it, so the scaled
error stagnates far above ``rtol``. The floor test (the residual's sensitivity to the
data, ``dr/d eta = 1``, times ``eps c``) accepts it; without it the solve reports no
convergence.

The residual is written so that its rounding is the same in every compiled program:
optimization barriers keep XLA from reassociating it with its constants (``(q - c) - a``
into ``q - (c + a)``, whose constant is on the grid, so the residual could reach 0), and
it has no product an FMA could contract. The earlier ``((c + z)^2 - (c + a)^2) / 2c``
stagnated only where ``q * q - k`` was contracted into one FMA; compiled with LLVM's
optimizations off (``xla_backend_optimization_level=0``, the suite's level,
``tests/conftest.py``) it was not, its residual reached 0, and the sensitivity cases
converged.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac  # noqa: F401  (float64)
from manifold_dirac._mechanics.newton import DEFER_FLOOR, RoundoffFloor, SolverOptions, newton
from manifold_dirac._mechanics.status import Status

C, A = 1e9, 0.3
EPS = float(np.finfo(np.float64).eps)


def _residual(z, eta):
    q = jax.lax.optimization_barrier(C + eta + z)  # resolved to ulp(C) only
    return jax.lax.optimization_barrier(q - C) - A  # q - C exact, a multiple of ulp(C); A is not


def _fun(z):
    return _residual(z, jnp.zeros(1)), jnp.ones(1), None


def _solve(floor):
    return jax.jit(lambda z0: newton(_fun, z0, SolverOptions(), floor=floor))(jnp.array([0.7]))


def test_a_residual_at_the_floor_of_its_data_converges():
    floor = RoundoffFloor(_residual, 1, lambda z, aux: EPS * C)
    res = _solve(floor)
    assert int(res.status) == Status.OK
    assert abs(float(res.z[0]) - A) <= 4 * EPS * C
    assert float(res.error) > SolverOptions().rtol  # stagnated above rtol: the floor decided
    assert int(res.iterations) <= 3  # the probe trips are not counted as iterations


def test_without_the_floor_it_does_not_converge():
    """The sensitivity of the test above: no floor, or a floor too small, and the same solve fails."""
    assert int(_solve(None).status) == Status.NO_CONVERGENCE
    assert int(_solve(RoundoffFloor(_residual, 1, lambda z, aux: EPS)).status) == Status.NO_CONVERGENCE


def test_a_floor_function_of_its_own_gives_the_same_answer():
    res = _solve(lambda z: jnp.full(1, EPS * C))
    assert int(res.status) == Status.OK
    assert abs(float(res.z[0]) - A) <= 4 * EPS * C


def test_a_deferred_floor_stops_where_the_test_would_be_taken():
    """``DEFER_FLOOR``: no test in the program; the solve stops, not converged and marked, at the iterate where the
    test's probe is taken, with the same iterate and iterations as the solve that holds the test (which accepts
    it there). A residual that converges by itself is not marked, and its solve is the same either way."""
    floor = RoundoffFloor(_residual, 1, lambda z, aux: EPS * C)
    tested, deferred = _solve(floor), _solve(DEFER_FLOOR)
    assert int(tested.status) == Status.OK and not bool(tested.deferred)
    assert int(deferred.status) == Status.NO_CONVERGENCE and bool(deferred.deferred)
    assert float(deferred.z[0]) == float(tested.z[0]) and int(deferred.iterations) == int(tested.iterations)
    assert not bool(_solve(None).deferred)  # no floor at all: no convergence, and nothing deferred

    def fun(z):
        return z**3 - 2.0, jnp.full(1, 2.0), None

    solve = lambda fl: jax.jit(lambda z0: newton(fun, z0, SolverOptions(), floor=fl))(jnp.array([1.0]))  # noqa: E731
    a, b = solve(lambda z: jnp.full(1, EPS)), solve(DEFER_FLOOR)  # a floor function, as one member's step has
    assert int(b.status) == Status.OK and not bool(b.deferred)
    assert float(a.z[0]) == float(b.z[0]) and int(a.iterations) == int(b.iterations)
    with pytest.raises(ValueError, match="floor must be"):
        newton(fun, jnp.array([1.0]), SolverOptions(), floor="later")


@pytest.mark.slow
def test_the_floor_test_is_a_branch_for_one_member_and_shares_the_linearization_under_vmap():
    """One member's step evaluates the floor in a conditional that only a probe trip takes (its Newton matrix is
    ``dr/dz`` alone); under ``vmap``, where a conditional would run at every trip, the floor comes from Newton's
    own linearization and the compiled heavy-top step holds no conditional. Each route is the other's
    sensitivity check: the check sees a conditional where there is one."""
    from manifold_dirac import systems as S
    from manifold_dirac._manifolds import SO3
    from manifold_dirac._run.integrator import Integrator

    sysm = S.heavy_top()
    integ = Integrator(sysm, 0.01)
    st = integ.initial_state(np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0]))), v0=np.array([0.5, -0.2, 2.0]))
    sm = integ.stepmap
    one = jax.jit(lambda m, h, p: sm.step(m, 0, 0.0, h, p)[0])
    batch = jax.jit(jax.vmap(lambda m, h, p: sm.step(m, 0, 0.0, h, p, axis_name="b")[0], (0, None, None),
                             axis_name="b"))
    members = jax.tree.map(lambda a: jnp.stack([a, a]), st.members)
    one_text = one.lower(st.members, 0.01, sysm.params).compile().as_text()
    batch_text = batch.lower(members, 0.01, sysm.params).compile().as_text()
    assert re.search(r"\bconditional\(", one_text)
    assert not re.search(r"\bconditional\(", batch_text)
    a, b = one(st.members, 0.01, sysm.params), batch(members, 0.01, sysm.params)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(y)[1], x, rtol=0, atol=1e-15)


# ------------------------------------------------------------- simplified Newton (the matrix reused)
def _cubic(z):
    return z ** 3 - 8.0, jnp.full(1, 8.0), None


def _solve_cubic(jacobian, z0=1.5):
    return jax.jit(lambda z: newton(_cubic, z, SolverOptions(jacobian=jacobian)))(jnp.array([z0]))


def test_reuse_converges_to_the_same_root_on_the_same_test():
    every, reuse = _solve_cubic("every"), _solve_cubic("reuse")
    for res in (every, reuse):
        assert int(res.status) == Status.OK
        assert abs(float(res.z[0]) - 2.0) <= 1e-14
    assert int(reuse.iterations) > int(every.iterations)  # linear convergence: the matrix was reused


def test_reuse_evaluates_the_matrix_again_when_an_update_does_not_halve_the_error():
    """From z0 = 0.4 the first matrix (3 z0^2 = 0.48) throws the iterate far away; kept, it never recovers."""
    res = _solve_cubic("reuse", 0.4)
    assert int(res.status) == Status.OK and abs(float(res.z[0]) - 2.0) <= 1e-14


def test_reuse_keeps_the_floor_test():
    res = jax.jit(lambda z0: newton(_fun, z0, SolverOptions(jacobian="reuse"),
                                    floor=RoundoffFloor(_residual, 1, lambda z, aux: EPS * C)))(jnp.array([0.7]))
    assert int(res.status) == Status.OK and abs(float(res.z[0]) - A) <= 4 * EPS * C


@pytest.mark.slow
def test_reuse_on_a_batch_of_steps_matches_newton():
    import manifold_dirac as md
    from manifold_dirac import systems as S
    from manifold_dirac._manifolds import SO3

    R0 = np.stack([np.asarray(SO3().exp(np.array([0.3, 0.1, a]))) for a in (0.0, 0.5)])
    w0 = np.array([[0.5, -0.2, 2.0], [1.0, 0.3, -1.0]])
    run = dict(v0=w0, h=0.01, n_steps=100, stride=100)
    every = md.integrate(S.heavy_top(), R0, **run)
    reuse = md.integrate(S.heavy_top(), R0, solver=md.SolverOptions(jacobian="reuse"), **run)
    assert np.all(reuse.status == 0) and float(np.max(reuse.residual)) <= 1e-10
    assert np.max(np.abs(reuse.q - every.q)) <= 1e-11
    assert reuse.iterations.mean() > every.iterations.mean()


def test_solver_options_refuse_an_unknown_jacobian_mode():
    import pytest

    with pytest.raises(ValueError, match="jacobian must be 'every', 'reuse' or 'keep'"):
        SolverOptions(jacobian="sometimes")
    with pytest.raises(TypeError, match="jacobian must be a string"):
        SolverOptions(jacobian=1)
