"""The unrolled small solver and products of the step equations against numpy's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac  # noqa: F401  (float64)
from manifold_dirac._mechanics.small import (FUSED_PRODUCT_MAX, ROLLED_SOLVE_MAX, ROW_SOLVE_MIN,
                                             SMALL_REDUCE_MAX, SMALL_SOLVE_MAX, first_largest, mm, mv, solve_rolled,
                                             solve_rows, solve_small, vdot, vm)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, ROW_SOLVE_MIN, 7, SMALL_SOLVE_MAX, SMALL_SOLVE_MAX + 1, 18,
                               ROLLED_SOLVE_MAX, ROLLED_SOLVE_MAX + 1])
def test_solve_small_matches_numpy(n):
    """Unrolled (entry by entry, then by rows from ROW_SOLVE_MIN) up to SMALL_SOLVE_MAX, rolled up to
    ROLLED_SOLVE_MAX, LAPACK above: each agrees with numpy."""
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


@pytest.mark.parametrize("n", [3, 5, ROW_SOLVE_MIN + 1, SMALL_SOLVE_MAX + 1])
def test_solve_small_of_several_right_hand_sides_is_each_columns_solve(n):
    """``b (n, k)``: the unrolled elimination pivots the rows of all columns at once; each column of the answer is
    the solve of that column alone (the columns swapped would not be)."""
    rng = np.random.default_rng(10 + n)
    A = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-2, 2, (n, 1))
    B = rng.standard_normal((n, 2)) * np.array([1.0, 100.0])
    X = np.asarray(jax.jit(solve_small)(A, B))
    assert X.shape == (n, 2)
    for j in range(2):
        one = np.asarray(jax.jit(solve_small)(A, B[:, j]))
        assert np.max(np.abs(X[:, j] - one)) <= 1e-15 * np.linalg.cond(A) * np.max(np.abs(one)) * n
        np.testing.assert_allclose(X[:, j], np.linalg.solve(A, B[:, j]), rtol=1e-12 * np.linalg.cond(A))
    assert np.max(np.abs(X[:, ::-1] - np.linalg.solve(A, B))) > 1.0


@pytest.mark.parametrize("solve", [solve_small, solve_rows, solve_rolled], ids=["unrolled", "rows", "rolled"])
def test_solve_small_pivots(solve):
    """A zero (and a tiny) leading entry: elimination without row exchanges divides by it."""
    A = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
    b = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(solve(A, b)), np.linalg.solve(A, b), rtol=1e-14)
    A[0, 0] = 1e-20
    np.testing.assert_allclose(np.asarray(solve(A, b)), np.linalg.solve(A, b), rtol=1e-14)


@pytest.mark.parametrize("solve", [solve_small, solve_rows, solve_rolled], ids=["unrolled", "rows", "rolled"])
def test_solve_small_of_a_singular_matrix_is_not_finite(solve):
    A = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert not np.all(np.isfinite(np.asarray(solve(A, np.array([1.0, 1.0])))))


@pytest.mark.slow
def test_solve_small_eliminates_by_rows_from_its_size_on():
    """From ROW_SOLVE_MIN to SMALL_SOLVE_MAX unknowns ``solve_small`` is the elimination by rows (equal
    to it to the bit, and the same program), below it the one entry by entry (another program); both
    pivot (a leading zero needs a row exchange at every size)."""
    rng = np.random.default_rng(7)
    for n in (ROW_SOLVE_MIN - 1, ROW_SOLVE_MIN, SMALL_SOLVE_MAX):
        A = rng.standard_normal((n, n)) * 10.0 ** rng.uniform(-3, 3, (n, 1))
        A[0, 0] = 0.0
        B = rng.standard_normal((n, 3))
        by_rows = np.asarray(jax.jit(solve_rows)(A, B))
        np.testing.assert_allclose(by_rows, np.linalg.solve(A, B), rtol=1e-12 * np.linalg.cond(A), atol=0)
        routed = np.asarray(jax.jit(solve_small)(A, B))
        if n >= ROW_SOLVE_MIN:
            np.testing.assert_array_equal(routed, by_rows)
    # the routes told apart by their programs: by rows from ROW_SOLVE_MIN on, entry by entry below
    program = lambda solve, n: str(jax.make_jaxpr(solve)(np.eye(n), np.ones(n)))  # noqa: E731
    assert program(solve_small, ROW_SOLVE_MIN) == program(solve_rows, ROW_SOLVE_MIN)
    assert program(solve_small, ROW_SOLVE_MIN - 1) != program(solve_rows, ROW_SOLVE_MIN - 1)


def test_the_rolled_solve_of_a_singular_matrix_is_not_finite_and_of_integers_is_a_float_solve():
    n = SMALL_SOLVE_MAX + 2  # through solve_small's dispatch
    A = np.random.default_rng(3).standard_normal((n, n))
    A[:, 4] = 0.0
    assert not np.all(np.isfinite(np.asarray(jax.jit(solve_small)(A, np.ones(n)))))
    x = np.asarray(solve_small(2 * np.eye(n, dtype=int), np.ones(n, dtype=int)))
    assert x.dtype == np.float64 and np.allclose(x, 0.5)


@pytest.mark.parametrize("solve,n", [(solve_rows, ROW_SOLVE_MIN + 1), (solve_rolled, SMALL_SOLVE_MAX + 3)],
                         ids=["rows", "rolled"])
@pytest.mark.slow
def test_the_rows_and_rolled_solves_under_vmap_and_their_derivatives_are_lapacks(solve, n):
    """The eliminations by rows and rolled, batched and differentiated (forward and reverse), agree with
    ``jnp.linalg.solve``; of integers, each is a float solve."""
    rng = np.random.default_rng(4)
    A, b = rng.standard_normal((3, n, n)), rng.standard_normal((3, n))
    np.testing.assert_allclose(np.asarray(jax.jit(jax.vmap(solve))(A, b)),
                               np.asarray(jax.vmap(jnp.linalg.solve)(A, b)), rtol=1e-11, atol=1e-12)
    f = lambda solve: lambda A, b: jnp.sum(jnp.sin(solve(A, b)))  # noqa: E731
    # compiled: traced once (op by op, the unrolled elimination's derivatives take seconds)
    for a, c in zip(jax.jit(jax.grad(f(solve), argnums=(0, 1)))(A[0], b[0]),
                    jax.grad(f(jnp.linalg.solve), argnums=(0, 1))(A[0], b[0])):
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-10, atol=1e-11)
    x = np.asarray(solve(2 * np.eye(n, dtype=int), np.ones(n, dtype=int)))
    assert x.dtype == np.float64 and np.allclose(x, 0.5)
    tangent = rng.standard_normal((n, n))
    np.testing.assert_allclose(np.asarray(jax.jit(lambda A, t: jax.jvp(lambda A: solve(A, b[0]), (A,), (t,))[1])(
                                   A[0], tangent)),
                               np.asarray(jax.jvp(lambda A: jnp.linalg.solve(A, b[0]), (A[0],), (tangent,))[1]),
                               rtol=1e-10, atol=1e-11)


@pytest.mark.slow
def test_the_two_wheel_carts_step_makes_no_lapack_call():
    """Its Newton system has 14 unknowns, above SMALL_SOLVE_MAX: the rolled elimination, not LAPACK, so that the step
    loop stays one kernel (and a program loaded from the cache imports no LAPACK); the check sees LAPACK's LU when
    the rolled route is switched off."""
    import manifold_dirac as md
    import manifold_dirac._mechanics.small as small
    from manifold_dirac._run.integrator import Integrator

    ex = md.get_example("two_wheel_cart")
    sysm = ex.system()
    q0, v0 = ex.initial(sysm)
    integ = Integrator(sysm, ex.h)
    sm = integ.stepmap
    assert SMALL_SOLVE_MAX < sm.n + sm.ns + sm.m <= ROLLED_SOLVE_MAX
    st = integ.initial_state(q0, v0=v0)
    from .mech_helpers import LAPACK_PRIMITIVE as lapack

    def jaxpr():
        return str(jax.make_jaxpr(lambda m, h, p: sm.step(m, 0, 0.0, h, p)[0])(st.members, ex.h, sysm.params))

    assert not lapack.search(jaxpr())
    saved = small.ROLLED_SOLVE_MAX
    small.ROLLED_SOLVE_MAX = 0
    try:
        assert lapack.search(jaxpr())
    finally:
        small.ROLLED_SOLVE_MAX = saved


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


def test_mm_takes_the_library_product_above_its_size_only():
    """Up to FUSED_PRODUCT_MAX multiply-adds ``mm`` is elementwise (no ``dot_general``), above it one library
    product; both routes equal ``@`` (the large one checked with a batch, as under ``jax.jacfwd``)."""
    rng = np.random.default_rng(1)

    def prims(i, j, k):
        A, B = np.ones((i, j)), np.ones((j, k))
        return {e.primitive.name for e in jax.make_jaxpr(mm)(A, B).jaxpr.eqns}

    assert "dot_general" not in prims(6, 6, 6) and 6 * 6 * 6 <= FUSED_PRODUCT_MAX
    assert "dot_general" not in prims(8, 8, 8) and 8 * 8 * 8 == FUSED_PRODUCT_MAX
    assert "dot_general" in prims(12, 12, 12)
    # both routes broadcast leading axes as ``@`` does: a batch on either side, and batches against batches
    for sa, sb in (((18, 12, 12), (12, 12)), ((12, 12), (18, 12, 12)), ((2, 1, 12, 12), (3, 12, 12)),
                   ((4, 6, 6), (6, 6)), ((2, 1, 6, 6), (3, 6, 6))):
        A, B = rng.standard_normal(sa), rng.standard_normal(sb)
        np.testing.assert_allclose(np.asarray(mm(A, B)), A @ B, rtol=1e-13, atol=1e-13)


def _compiled_step_text(rule: str = "midpoint") -> str:
    """The optimized HLO (after XLA's own rewrites) of one heavy-top step of ``rule``."""
    from manifold_dirac import systems as S
    from manifold_dirac._manifolds import SO3
    from manifold_dirac._run.integrator import Integrator

    sysm = S.heavy_top()
    integ = Integrator(sysm, 0.01, discrete_lagrangian=rule)
    st = integ.initial_state(np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0]))), v0=np.array([0.5, -0.2, 2.0]))
    sm = integ.stepmap
    fn = jax.jit(lambda m, h, p: sm.step(m, 0, 0.0, h, p)[0])
    return fn.lower(st.members, 0.01, sysm.params).compile().as_text()


def _has_library_call(txt: str) -> bool:
    import re

    return "custom-call" in txt or "lapack" in txt.lower() or bool(re.search(r"\bdot\(", txt))


def test_the_step_loop_has_no_library_call():
    """The compiled heavy-top step holds no LAPACK custom call and no matrix product (``dot``)."""
    assert not _has_library_call(_compiled_step_text())
    # and the check sees one: the same step with the Newton matrix solved by LAPACK
    import manifold_dirac._mechanics.newton as N

    saved = N.solve_small
    N.solve_small = lambda A, b: jax.numpy.linalg.solve(A, b)
    try:
        assert "custom-call" in _compiled_step_text()
    finally:
        N.solve_small = saved


# in the slow tier (its cold cost, tests/_tiers.py); the midpoint loop's check stays in the default tier
@pytest.mark.parametrize("rule", ["gauss4", "gauss6"])
@pytest.mark.slow
def test_the_galerkin_step_has_no_library_call(rule):
    """The Galerkin step (stage equations included) holds no LAPACK call and no matrix product either."""
    assert not _has_library_call(_compiled_step_text(rule))


@pytest.mark.slow
def test_the_galerkin_check_sees_a_matrix_product():
    """The check above fails when the node's velocity ``J_xi w`` is a library product."""
    import manifold_dirac._mechanics.galerkin as G

    saved = G.mv
    G.mv = lambda A, x: A @ x
    try:
        assert _has_library_call(_compiled_step_text("gauss4"))
    finally:
        G.mv = saved


# ---------------------------------------------------------------- the pivot search without a reduction


def _reductions(f, *args) -> int:
    """How many reductions the lowered program of ``f`` holds."""
    import re

    return len(re.findall(r"stablehlo\.reduce\b", jax.jit(f).lower(*args).as_text()))


@pytest.mark.parametrize("n", [1, 2, 5, 12, SMALL_REDUCE_MAX, SMALL_REDUCE_MAX + 1])
def test_first_largest_is_numpys_argmax_without_a_reduction_up_to_its_limit(n):
    """The first of equal largest entries, as ``np.argmax`` (infinities included; a NaN is never chosen up to
    SMALL_REDUCE_MAX entries); up to SMALL_REDUCE_MAX entries its program holds no reduction, above it
    ``jnp.argmax``'s one (which the check sees)."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal((3, n))
    x[1, n // 2] = x[1, 0] = np.max(np.abs(x)) + 1.0  # a tie for the largest: the first one wins
    x[2, n // 2] = np.inf
    f = jax.jit(first_largest)
    for row in x:
        assert int(f(row)) == int(np.argmax(row))
    y = x[0].copy()
    y[-1] = np.nan
    if 1 < n <= SMALL_REDUCE_MAX:
        assert int(f(y)) == int(np.argmax(y[:-1]))
    assert f(x[0]).dtype == jnp.int32
    assert (_reductions(first_largest, x[0]) == 0) == (n <= SMALL_REDUCE_MAX)
    assert _reductions(jnp.argmax, x[0]) == 1


@pytest.mark.parametrize("solve", [solve_small, solve_rows])
def test_a_nan_in_the_matrix_gives_a_solution_that_is_not_finite(solve):
    """The pivot search by rows never picks a NaN (``first_largest``); the NaN still reaches the solution."""
    for n in (3, ROW_SOLVE_MIN, 9):
        A = np.random.default_rng(n).standard_normal((n, n)) + 3 * np.eye(n)
        for i, j in ((0, 0), (n - 1, 0), (1, n - 1)):
            B = A.copy()
            B[i, j] = np.nan
            assert not np.isfinite(np.asarray(jax.jit(solve)(B, np.ones(n)))).all(), (n, i, j)
