"""Small dense linear algebra written with elementwise operations and sums (no library calls up to a size).

On a CPU, XLA compiles a loop whose body holds only elementwise operations,
reductions and small loops into one kernel; a LAPACK call (``jnp.linalg.solve``)
or a library matrix product (``@`` of small matrices becomes an Eigen call)
splits it into many small kernels and costs microseconds per step in buffer
traffic (``docs/performance.md``). The step equations therefore use these
functions for the products and the Newton solve of their small, fixed-size
matrices. Shapes are static: the loops here are unrolled at trace time, except
the elimination of a system above :data:`SMALL_SOLVE_MAX` unknowns, which is a
compiled loop (:func:`solve_rolled`: its unrolled program would take longer to
compile). Above a size (:data:`FUSED_PRODUCT_MAX`, :data:`ROLLED_SOLVE_MAX`) the
library call is the faster one, and these functions make it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = ["FUSED_PRODUCT_MAX", "ROLLED_SOLVE_MAX", "ROW_SOLVE_MIN", "SMALL_REDUCE_MAX", "SMALL_SOLVE_MAX",
           "first_largest", "mm", "mv", "solve_rolled", "solve_rows", "solve_small", "vdot", "vm"]

SMALL_SOLVE_MAX = 12
"""Largest system solved by the unrolled elimination of :func:`solve_small` (:func:`solve_rolled` above).

The unrolled elimination puts ``O(n^3)`` operations into the program (about
``n^3 / 3`` multiply-adds: 580 at ``n = 12``); above that the compile time
grows faster than the step time falls. Measured on the two-wheel cart, whose
Newton system has 14 unknowns, with this limit at 14 against 12 (``python
benchmarks/all_systems.py --before DIR --rounds 2 --label solve14 --systems
two_wheel_cart``, ``benchmarks/results/all_systems_solve14.json``, fastest of
2 rounds): 10.1 -> 1.9 µs per step, but its first call 6.5 -> 22 s with an
empty cache and 0.58 -> 0.96 s from the cache."""


ROW_SOLVE_MIN = 6
"""Smallest system :func:`solve_small` eliminates by whole rows (:func:`solve_rows`); entry by entry below.

Measured in a compiled loop of solves of one random system (``python benchmarks/newton_matrix.py``,
``benchmarks/results/newton_matrix.md``): the elimination by rows is the faster one from 6 unknowns on
(at 7, the snakeboard's Newton system, a quarter to a half less time in three runs), the one entry by
entry at 4 (at 3 and 5 the two are within the noise of each other); and the elimination by rows
compiles in a fraction of the time from 9 unknowns on (its program has ``O(n)`` array operations, the
one entry by entry ``O(n^2)`` row operations).
:data:`SMALL_SOLVE_MAX` and :data:`ROLLED_SOLVE_MAX` were measured with the elimination entry by
entry; by rows, 14 to 18 unknowns solve faster than by the rolled loop in that benchmark (1973
against 2439 ns at 14), at a longer compile (1.2 against 0.2 s). On whole systems, with
:data:`SMALL_SOLVE_MAX` and :data:`~manifold_dirac._mechanics.system.SMALL_PROJECTION_MAX` at 18
(``python benchmarks/all_systems.py --before DIR --rounds 2 --label rows18 --systems
rigid_double_pendulum two_wheel_cart``, ``benchmarks/results/all_systems_rows18.json``): the rigid
double pendulum's 18 unknowns 133 -> 88 µs per step but its first call 7.9 -> 23 s with an empty
cache (0.91 -> 0.95 s from the cache), the two-wheel cart's 14 slower on all three counts (2.08 ->
2.35 µs, 7.8 -> 10.9 s, 0.51 -> 0.63 s): not taken."""


ROLLED_SOLVE_MAX = 14
"""Largest system :func:`solve_small` solves by the rolled elimination (:func:`solve_rolled`); LAPACK above.

Between :data:`SMALL_SOLVE_MAX` and this size the elimination is a loop, not unrolled: a program of
``O(n^2)`` operations that stays inside the step loop's kernel, where a LAPACK call would split it
into several kernels (and a program loaded from the cache would import SciPy's LAPACK first).
Measured against LAPACK, fastest of 2 rounds (``python benchmarks/all_systems.py --before DIR
--rounds 2 --label rolled --systems two_wheel_cart rigid_double_pendulum``,
``benchmarks/results/all_systems_rolled.json``): the two-wheel cart's 14 unknowns 10.1 -> 1.9 µs
per step, first call 5.9 -> 6.0 s with an empty cache (CPU 9.7 -> 7.9 s), 0.60 -> 0.39 s from the
cache. Above 14 it paid less or cost more (``python benchmarks/rule_first_call.py``,
``benchmarks/results/rule_first_call.txt``, one or two rounds): the rigid double pendulum's 18,
141 -> 127 µs per step, first call 7.3 -> 7.5 s; the rolling ball with ``gauss6`` (17) 8.2 -> 3.1 µs,
but its first call 10.9 -> 20.2 s; the three-dimensional rolling disk with ``gauss4`` (16) 206 -> 115
µs, first call 17.1 -> 18.4 s, with ``gauss6`` (23) 451 -> 469 µs; the two-wheel cart with ``gauss4``
(22) 8.5 -> 3.0 µs, first call 11.6 -> 14.3 s. At 14, the rolling disk with ``gauss6`` as well:
6.2 -> 1.8 µs, first call 9.3 -> 9.1 s."""


FUSED_PRODUCT_MAX = 512
"""Largest product ``A @ B`` (``i j k`` multiply-adds) that :func:`mm` writes as broadcast-and-sum.

Measured with the threshold varied (``benchmarks/system_child.py``, warm time
per step, AMD EPYC, one core): the ``6 x 6`` products of SE(3) (216) are
faster fused into the step (the tumbling brick 13-14 µs per step fused, 36-47
µs as library products), the ``12 x 12`` tangent maps of the rigid double
pendulum's product manifold (1728, under ``jax.jacfwd`` a batch of 18) are
faster as one library product than as a broadcast ``(18, 12, 12, 12)``
multiply-and-sum (XLA:CPU gives that sum to a YNNPACK reduction kernel): 299
-> 136 µs per step (the bundled systems' table of ``docs/performance.md``
compares it with the version before the fused loop)."""


SMALL_REDUCE_MAX = 32
"""Most entries :func:`first_largest` searches by a chain of comparisons and selects (``jnp.argmax`` above).

An ``argmax`` is a reduction whose combining function XLA keeps as a computation of its own; each of its
26 values is a buffer of the compiled program, which XLA:CPU's runtime allocates and frees at every call.
The eliminations by rows search their pivots with :func:`first_largest`: the rolling disk's composed
``rollout`` program holds 251 buffers instead of 391, and a call of it that runs no step takes 26-28 µs
instead of 37-38 (``python benchmarks/call_buffers.py``, ``docs/performance.md``). Written as chains, the sums of
the small products and the maxima of the step equations' scales saved buffers too but made the steps
slower (the disk's 18-step call 234 -> 263 µs; the two-wheel cart's and the heavy top's steps), so they
stay reductions."""


def first_largest(a: jax.Array) -> jax.Array:
    """The index of the first largest entry of a 1-d ``a`` (``jnp.argmax`` of an ``a`` without NaN), int32.

    A chain of comparisons and selects up to :data:`SMALL_REDUCE_MAX` entries (``jnp.argmax`` above): the
    pivot search of :func:`solve_rows`, whose ``argmax`` held 26 buffers of the compiled program
    (:data:`SMALL_REDUCE_MAX`). A NaN entry is never chosen (``jnp.argmax`` would choose the first one): a
    matrix with a NaN in the column gives a solution that is not finite either way.
    """
    n = a.shape[0]
    if n == 0 or n > SMALL_REDUCE_MAX:
        return jnp.argmax(a).astype(jnp.int32)
    best, idx = a[0], jnp.int32(0)
    for i in range(1, n):
        better = a[i] > best  # strict: the first of equal largest stays
        best = jnp.where(better, a[i], best)
        idx = jnp.where(better, jnp.int32(i), idx)
    return idx


def mm(A: jax.Array, B: jax.Array) -> jax.Array:
    """``A @ B``, shapes ``(..., i, j) (..., j, k) -> (..., i, k)``, as broadcast-and-sum.

    Above :data:`FUSED_PRODUCT_MAX` multiply-adds (``i j k``) a library
    product (``jnp.matmul``) instead: a large broadcast product is a kernel of
    its own either way, and the library's is the faster one.
    """
    i, j = A.shape[-2:]
    if i * j * B.shape[-1] > FUSED_PRODUCT_MAX:
        return jnp.matmul(A, B)
    return jnp.sum(A[..., :, :, None] * B[..., None, :, :], axis=-2)


def mv(A: jax.Array, x: jax.Array) -> jax.Array:
    """``A @ x``, shapes ``(..., i, j) (..., j) -> (..., i)``."""
    return jnp.sum(A * x[..., None, :], axis=-1)


def vm(x: jax.Array, A: jax.Array) -> jax.Array:
    """``x @ A``, shapes ``(..., i) (..., i, j) -> (..., j)``."""
    return jnp.sum(x[..., :, None] * A, axis=-2)


def vdot(x: jax.Array, y: jax.Array) -> jax.Array:
    """``x . y`` over the last axis."""
    return jnp.sum(x * y, axis=-1)


def solve_small(A: jax.Array, b: jax.Array) -> jax.Array:
    """``A^{-1} b`` for one small square ``A`` (shape ``(n, n)``, ``b (n,)`` or ``(n, k)``), without a LAPACK call.

    Gaussian elimination with partial pivoting (the algorithm of LAPACK's
    ``getrf``/``getrs``), unrolled over the static size ``n`` and written with
    elementwise operations and sums only, so that XLA fuses it with the
    computation around it: entry by entry below :data:`ROW_SOLVE_MIN`
    unknowns, by whole rows (:func:`solve_rows`) from there to
    :data:`SMALL_SOLVE_MAX`. A zero pivot (a singular matrix) gives ``inf`` or
    ``NaN`` entries, as the LAPACK route does. Above :data:`SMALL_SOLVE_MAX`
    the rolled elimination (:func:`solve_rolled`), above :data:`ROLLED_SOLVE_MAX`
    ``jnp.linalg.solve``.
    """
    n = A.shape[-1]
    if n == 0:
        return b
    if n > SMALL_SOLVE_MAX:
        if n <= ROLLED_SOLVE_MAX:
            return solve_rolled(A, b)
        return jnp.linalg.solve(A, b)
    if n >= ROW_SOLVE_MIN:
        return solve_rows(A, b)
    rows = [A[i] for i in range(n)]
    rhs = [b[i] for i in range(n)]
    for k in range(n - 1):
        # the pivot: the largest |A[i, k]|, i >= k (the first one on ties, as LAPACK's idamax)
        col = jnp.stack([jnp.abs(rows[i][k]) for i in range(k, n)])
        piv = jnp.argmax(col) + k
        sel = [piv == i for i in range(k, n)]
        prow = sum(jnp.where(sel[i - k], rows[i], 0.0) for i in range(k, n))
        prhs = sum(jnp.where(sel[i - k], rhs[i], 0.0) for i in range(k, n))
        rk, bk = rows[k], rhs[k]
        for i in range(k + 1, n):  # the row the pivot came from gets row k
            rows[i] = jnp.where(sel[i - k], rk, rows[i])
            rhs[i] = jnp.where(sel[i - k], bk, rhs[i])
        rows[k], rhs[k] = prow, prhs
        for i in range(k + 1, n):
            f = rows[i][k] / prow[k]
            rows[i] = rows[i] - f * prow
            rhs[i] = rhs[i] - f * prhs
    x = [None] * n
    for k in range(n - 1, -1, -1):
        acc = rhs[k]
        for j in range(k + 1, n):
            acc = acc - rows[k][j] * x[j]
        x[k] = acc / rows[k][k]
    return jnp.stack(x)


def solve_rows(A: jax.Array, b: jax.Array) -> jax.Array:
    """``A^{-1} b`` (``A (n, n)``, ``b (n,)`` or ``(n, k)``) by Gaussian elimination on whole rows, unrolled.

    The algorithm of :func:`solve_small` (partial pivoting, the first of equal pivots) on the
    augmented matrix ``[A | b]``, unrolled over the ``n - 1`` columns as operations on whole rows:
    for column ``k``, the pivot row is read by its index and swapped with row ``k`` by one select
    over the rows, and the rows below take the rank-one update ``M_i - (M_ik / M_kk) M_k`` at once.
    A few array operations per column, where the elimination entry by entry has ``O(n)``
    operations on single rows: from about 6 unknowns it is the faster of the two and compiles in
    less time (:data:`ROW_SOLVE_MIN`). Back substitution as in :func:`solve_small`. A zero pivot gives
    ``inf`` or ``NaN`` entries.
    """
    n = A.shape[-1]
    if n == 0:
        return b
    vector = b.ndim == 1
    dtype = jnp.result_type(float, A, b)  # integers: a float elimination, as jnp.linalg.solve
    M = jnp.concatenate([A.astype(dtype), (b[:, None] if vector else b).astype(dtype)], axis=1)
    rows = jnp.arange(n)[:, None]
    for k in range(n - 1):
        piv = first_largest(jnp.abs(M[k:, k])) + k  # the first of the largest, as LAPACK's idamax
        rk = M[k]
        rp = jax.lax.dynamic_index_in_dim(M, piv, 0, keepdims=False)
        M = jnp.where(rows == piv, rk[None, :], M).at[k].set(rp)  # the pivot row's place gets row k
        M = M.at[k + 1:].set(M[k + 1:] - (M[k + 1:, k] / rp[k])[:, None] * rp[None, :])
    x: list = [None] * n
    for k in range(n - 1, -1, -1):
        acc = M[k, n:]
        for j in range(k + 1, n):
            acc = acc - M[k, j] * x[j]
        x[k] = acc / M[k, k]
    out = jnp.stack(x)
    return out[:, 0] if vector else out


def solve_rolled(A: jax.Array, b: jax.Array) -> jax.Array:
    """``A^{-1} b`` (``A (n, n)``, ``b (n,)`` or ``(n, k)``) by Gaussian elimination in two loops, without a LAPACK call.

    The algorithm of :func:`solve_small` (partial pivoting, the first of equal pivots) on the
    augmented matrix ``[A | b]``, as ``fori_loop`` s over the columns: elimination, then back
    substitution. Its program does not grow with ``n^3`` as the unrolled one does, and it stays in
    the kernel of the loop around it. A zero pivot gives ``inf`` or ``NaN`` entries.
    """
    n = A.shape[-1]
    B = b.reshape(n, -1)
    M = jnp.concatenate([A, B], axis=1)
    M = M.astype(jnp.result_type(float, M))  # integers: a float elimination, as jnp.linalg.solve
    idx = jnp.arange(n)

    def eliminate(k, M):
        col = jnp.where(idx >= k, jnp.abs(M[:, k]), -1.0)
        piv = jnp.argmax(col)
        rk, rp = M[k], M[piv]
        M = M.at[piv].set(rk).at[k].set(rp)
        f = jnp.where(idx > k, M[:, k] / M[k, k], 0.0)
        return M - f[:, None] * M[k][None, :]

    M = jax.lax.fori_loop(0, n - 1, eliminate, M)
    U, y = M[:, :n], M[:, n:]

    def back(i, x):
        k = n - 1 - i
        s = jnp.sum(U[k][:, None] * x, axis=0)  # rows of x above k are still zero
        return x.at[k].set((y[k] - s) / U[k, k])

    x = jax.lax.fori_loop(0, n, back, jnp.zeros(B.shape, M.dtype))
    return x.reshape(b.shape)
