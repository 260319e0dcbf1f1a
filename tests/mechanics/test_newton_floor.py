"""The round-off-floor stop of Newton: a residual that cannot get below the rounding of its data.

``r(z) = ((c + z)^2 - (c + a)^2) / 2c`` at ``c = 1e9``: positions near ``c`` are resolved
only to ``ulp(c)`` (1.2e-7), so the scaled error stagnates far above ``rtol``.
The floor test (the residual's sensitivity to the data, ``dr/d eta = 1``,
times ``eps c``) accepts it; without it the solve reports no convergence.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np

import manifold_dirac  # noqa: F401  (float64)
from manifold_dirac._mechanics.newton import RoundoffFloor, SolverOptions, newton
from manifold_dirac._mechanics.status import Status

C, A = 1e9, 0.3
EPS = float(np.finfo(np.float64).eps)


def _residual(z, eta):
    q = C + eta + z  # resolved to ulp(C) only
    return (q * q - (C + A) ** 2) / (2 * C)


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


def test_the_floor_test_adds_no_branch_to_the_step():
    """The step's floor test shares Newton's linearization: no conditional in the compiled heavy-top step,
    and a floor function of its own (the check can see one) puts one there."""
    from manifold_dirac import systems as S
    from manifold_dirac._manifolds import SO3
    from manifold_dirac._mechanics.integrate import Integrator

    sysm = S.heavy_top()
    integ = Integrator(sysm, 0.01)
    st = integ.initial_state(np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0]))), v0=np.array([0.5, -0.2, 2.0]))
    sm = integ.stepmap

    def text():
        fn = jax.jit(lambda m, h, p: sm.step(m, 0, 0.0, h, p)[0])
        return fn.lower(st.members, 0.01, sysm.params).compile().as_text()

    assert not re.search(r"\bconditional\(", text())
    saved = sm.floor_test
    sm.floor_test = lambda q, p, t, h, params, u=None: (
        lambda z: sm.roundoff_floor(z, q, p, t, h, params, u))
    try:
        assert re.search(r"\bconditional\(", text())
    finally:
        sm.floor_test = saved
