"""The unrolled small solver and products of the step equations against numpy's."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import manifold_dirac  # noqa: F401  (float64)
from manifold_dirac._mechanics.small import SMALL_SOLVE_MAX, mm, mv, solve_small, vdot, vm


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 7, SMALL_SOLVE_MAX, SMALL_SOLVE_MAX + 1])
def test_solve_small_matches_numpy(n):
    rng = np.random.default_rng(n)
    fn = jax.jit(solve_small)
    for _ in range(5):
        A = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-3, 3, (n, 1))  # rows of very different scales
        b = rng.standard_normal(n)
        x = np.asarray(fn(A, b))
        ref = np.linalg.solve(A, b)
        cond = np.linalg.cond(A)
        assert np.max(np.abs(x - ref)) <= 1e-15 * cond * np.max(np.abs(ref)) * n, (cond, x - ref)
        assert np.max(np.abs(A @ x - b)) <= 1e-13 * np.max(np.abs(A)) * np.max(np.abs(x)) * n


def test_solve_small_pivots():
    """A zero (and a tiny) leading entry: elimination without row exchanges divides by it."""
    A = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
    b = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(solve_small(A, b)), np.linalg.solve(A, b), rtol=1e-14)
    A[0, 0] = 1e-20
    np.testing.assert_allclose(np.asarray(solve_small(A, b)), np.linalg.solve(A, b), rtol=1e-14)


def test_solve_small_of_a_singular_matrix_is_not_finite():
    A = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert not np.all(np.isfinite(np.asarray(solve_small(A, np.array([1.0, 1.0])))))


def test_products_match_matmul():
    rng = np.random.default_rng(0)
    A, B, x, y = rng.standard_normal((3, 4)), rng.standard_normal((4, 2)), rng.standard_normal(4), rng.standard_normal(3)
    np.testing.assert_allclose(np.asarray(mm(A, B)), A @ B, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(mv(A, x)), A @ x, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(vm(y, A)), y @ A, rtol=1e-14)
    np.testing.assert_allclose(np.asarray(vdot(x, x)), x @ x, rtol=1e-14)
    # batched leading axes
    As = rng.standard_normal((5, 3, 3))
    np.testing.assert_allclose(np.asarray(mm(As, As)), As @ As, rtol=1e-13)


def test_the_step_loop_has_no_library_call():
    """The compiled heavy-top step holds no LAPACK custom call and no matrix product (``dot``)."""
    import re

    from manifold_dirac import systems as S
    from manifold_dirac._manifolds import SO3
    from manifold_dirac._run.integrator import Integrator

    sysm = S.heavy_top()
    integ = Integrator(sysm, 0.01)
    st = integ.initial_state(np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0]))), v0=np.array([0.5, -0.2, 2.0]))
    sm = integ.stepmap
    fn = jax.jit(lambda m, h, p: sm.step(m, 0, 0.0, h, p)[0])
    txt = fn.lower(st.members, 0.01, sysm.params).compile().as_text()  # after XLA's own rewrites
    assert "custom-call" not in txt and "lapack" not in txt.lower()
    assert not re.search(r"\bdot\(", txt)
    # and the check sees one: the same step with the Newton matrix solved by LAPACK
    import manifold_dirac._mechanics.newton as N

    saved = N.solve_small
    N.solve_small = lambda A, b: jax.numpy.linalg.solve(A, b)
    try:
        lapack = jax.jit(lambda m, h, p: sm.step(m, 0, 0.0, h, p)[0]).lower(st.members, 0.01, sysm.params)
        assert "custom-call" in lapack.compile().as_text()
    finally:
        N.solve_small = saved
