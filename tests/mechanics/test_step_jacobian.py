"""The step's Newton matrix (``StepMap.jacobian``): the multipliers' columns in closed form, the rest autodiff.

The residual is linear in the multipliers ``mu`` (``r1 = ... - G(q_k) mu``;
the stage and constraint rows do not contain ``mu``), so ``StepMap.jacobian``
takes those columns from the scheme's reaction matrix and pushes only the
other tangents through the equations. Checked here against ``jax.jacfwd`` of
the whole residual, entry by entry, for every scheme on the kinds of
constrained systems (nonholonomic, interconnected with one-forms depending on
``q``, holonomic, holonomic with a Galerkin rule's stages, degenerate) and on
one without constraints. The closed form applies from ``CLOSED_FORM_MULTIPLIERS``
multipliers on (the disk, the snakeboard, the four-bar, the two-wheel cart;
with one, the sled, the LC circuit and the Cartesian pendulum, the matrix is
``jax.jacfwd``'s itself); the four-bar with ``gauss4`` has it after stages,
under every scheme. The check is shown to see an error in those columns, and
Newton to use the matrix it is given.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._mechanics.composition import ComposedStepMap, get_composition
from manifold_dirac._mechanics.newton import SolverOptions, newton
from manifold_dirac._mechanics.step import CLOSED_FORM_MULTIPLIERS, StepMap

from .._tiers import covering, slow_cases

CASES = [
    ("rolling_disk", "midpoint"),
    ("chaplygin_sled", "midpoint"),
    ("four_bar", "midpoint"),
    ("four_bar", "gauss4"),
    ("cartesian_pendulum", "gauss4"),
    ("lc_circuit", "midpoint"),
    ("two_wheel_cart", "midpoint"),
    ("heavy_top", "midpoint"),
]
SCHEMES = ("plus", "minus", "symmetric", "split")


def _system(name):
    if name == "snakeboard":
        sysm = md.systems.snakeboard()
        q0, v0 = md.systems.snakeboard_initial()
        return sysm, q0, v0, 0.05
    ex = md.get_example(name)
    sysm = ex.system()
    q0, v0 = ex.initial(sysm)
    return sysm, q0, v0, 5 * ex.h


def _point(sm, q0, v0, h, seed):
    """The step's data and an unknown ``z`` near the solution (the warm start, moved at random)."""
    sysm = sm.system
    q0 = jax.tree.map(jnp.asarray, q0)
    p0 = sysm.momentum(q0, jnp.asarray(v0, jnp.float64), sysm.params)
    N = sm.n + sm.ns + sm.m
    rng = np.random.default_rng(seed)
    z = jnp.concatenate([h * jnp.asarray(v0, jnp.float64), jnp.zeros(N - sm.n)])
    z = z + 0.01 * rng.standard_normal(N)
    return z, q0, p0


def _check(name, rule, scheme):
    sysm, q0, v0, h = _system(name)
    sm = StepMap(sysm, md.get_scheme(scheme), md.get_rule(rule), SolverOptions())
    z, q, p = _point(sm, q0, v0, h, SCHEMES.index(scheme))

    @jax.jit
    def both(z, q, p, h, params):
        ref = jax.jacfwd(lambda w: sm.equations(w, q, p, 0.1, h, params)[0])(z)
        return sm.jacobian(z, q, p, 0.1, h, params), ref

    J, ref = (np.asarray(a) for a in both(z, q, p, h, sysm.params))
    assert J.shape == ref.shape == (z.size, z.size)
    tol = 1e-14 * max(np.max(np.abs(ref)), 1.0)
    np.testing.assert_allclose(J, ref, rtol=0, atol=tol, err_msg=f"{name} {scheme} {rule}")
    if sm.m:
        # sensitivity: the multipliers' columns are not zero, so a wrong sign there fails the comparison
        k = sm.n + sm.ns
        wrong = J.copy()
        wrong[:, k:] *= -1.0
        assert np.max(np.abs(wrong - ref)) > 1e3 * tol, (name, scheme)
    return sm


@pytest.mark.parametrize("case,scheme", covering(CASES + [("snakeboard", "midpoint")], SCHEMES),
                         ids=lambda x: "-".join(x) if isinstance(x, tuple) else x)
def test_the_newton_matrix_is_the_residuals_jacobian(case, scheme):
    _check(*case, scheme)


@pytest.mark.parametrize("scheme", slow_cases(SCHEMES, {"minus"}))
def test_the_closed_form_columns_under_every_scheme_with_stages(scheme):
    """The four-bar with ``gauss4``: two multipliers (the closed form applies) after the rule's stages (the
    zero rows of the stage equations), under each scheme's reaction sign."""
    sm = _check("four_bar", "gauss4", scheme)
    assert sm.m >= CLOSED_FORM_MULTIPLIERS and sm.ns > 0


@pytest.mark.slow
def test_a_composed_step_maps_matrix_is_its_first_sub_steps():
    """``ComposedStepMap.jacobian`` is the base map's at the step ``gamma_1 h`` (what the start's conditioning
    check reads); a step of ``h`` instead differs."""
    sysm, q0, v0, h = _system("rolling_disk")
    base = StepMap(sysm, md.get_scheme("split"), md.get_rule("midpoint"), SolverOptions())
    comp = get_composition("kahan_li8")
    composed = ComposedStepMap(base, comp)
    z, q, p = _point(base, q0, v0, h, 0)

    @jax.jit
    def matrices(z, q, p, h, params):
        return (composed.jacobian(z, q, p, 0.0, h, params),
                base.jacobian(z, q, p, 0.0, comp.coefficients[0] * h, params), base.jacobian(z, q, p, 0.0, h, params),
                composed.jacobian(z, q, p, 0.0, h, params, basis_in_loop=True))

    J, first, whole, in_loop = (np.asarray(a) for a in matrices(z, q, p, h, sysm.params))
    np.testing.assert_allclose(J, first, rtol=0, atol=1e-14 * np.max(np.abs(first)))
    assert np.max(np.abs(whole - first)) > 1e-6
    # the basis inside the loop (rollout's choice for a small step) reaches the base map: the same matrix
    np.testing.assert_allclose(in_loop, J, rtol=0, atol=1e-14 * np.max(np.abs(first)))


def test_newton_uses_the_matrix_it_is_given():
    """The same solve with the exact matrix and with one off by 10 % (a linear, not quadratic,
    convergence): the iterations differ, so the ``jacobian`` argument is the matrix Newton solves with."""
    sysm, q0, v0, h = _system("rolling_disk")
    sm = StepMap(sysm, md.get_scheme("split"), md.get_rule("midpoint"), SolverOptions())
    z0, q, p = _point(sm, q0, v0, h, 0)

    def fun(z):
        return sm.equations(z, q, p, 0.0, h, sysm.params)

    @jax.jit
    def solve(scale):
        return newton(fun, z0, sm.options,
                      jacobian=lambda z: scale * sm.jacobian(z, q, p, 0.0, h, sysm.params))

    exact, off = solve(1.0), solve(1.1)
    assert int(exact.status) == int(off.status) == 0
    assert int(off.iterations) > int(exact.iterations) + 2, (int(exact.iterations), int(off.iterations))
    np.testing.assert_allclose(np.asarray(off.z), np.asarray(exact.z), rtol=0, atol=1e-13)


def test_newton_refuses_a_matrix_beside_a_roundoff_floor():
    """A RoundoffFloor takes the Newton matrix from the linearization its probe shares: a matrix given as well
    would be ignored, so it is refused."""
    sysm, q0, v0, h = _system("rolling_disk")
    sm = StepMap(sysm, md.get_scheme("split"), md.get_rule("midpoint"), SolverOptions())
    z0, q, p = _point(sm, q0, v0, h, 0)
    floor = sm.floor_test(q, p, 0.0, h, sysm.params)
    with pytest.raises(ValueError, match="RoundoffFloor"):
        newton(lambda z: sm.equations(z, q, p, 0.0, h, sysm.params), z0, sm.options, floor=floor,
               jacobian=lambda z: sm.jacobian(z, q, p, 0.0, h, sysm.params))
