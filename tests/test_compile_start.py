"""The start of a run checks the first step's Newton matrix on the host: the same numbers as the traced check.

The compiled start returns the first step's Newton matrix ``dr/dz`` at its
warm start, and its condition number (the 1-norm one of the matrix
equilibrated by rows then columns) and null direction are computed with
NumPy (``host_condition``), where compiling them cost half of the start
program's compile time. ``rollout`` computes the same inside its compiled
loop (``equilibrated_condition``): the two must take the same decisions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._errors import IllPosedSystemError
from manifold_dirac._manifolds.euclidean import Euclidean
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac._run.start import _SINGULAR_STEP, equilibrated_condition, host_condition

_traced = jax.jit(equilibrated_condition)


def _matrices(rng: np.random.Generator, sizes: tuple[int, ...] = (1, 2, 3)) -> list[np.ndarray]:
    """Regular, ill-conditioned, nearly singular and singular matrices of several sizes and scales."""
    out = []
    for N in sizes:
        A = rng.standard_normal((N, N)) * 10.0 ** rng.uniform(-3, 3, (N, 1))  # rows of other units
        out.append(A)
        if N > 1:
            S = A.copy()
            S[:, -1] = 2.0 * A[:, 0]  # exactly singular
            out += [S, S * (1.0 + 1e-15 * rng.standard_normal(S.shape)), S * (1.0 + 1e-7 * rng.standard_normal(S.shape))]
    out.append(np.zeros((3, 3)))
    return out


@pytest.mark.parametrize("sizes", [(1, 2, 3), pytest.param((6, 9), marks=pytest.mark.slow)])  # ~20 s: compiles
def test_the_host_condition_number_is_the_traced_one(sizes):
    rng = np.random.default_rng(11)
    for M in _matrices(rng, sizes):
        k_host, d_host = host_condition(M)
        k_traced, d_traced = (np.asarray(x) for x in _traced(jnp.asarray(M)))
        assert (k_host > _SINGULAR_STEP) == (k_traced > _SINGULAR_STEP), (k_host, k_traced)
        if k_traced < 1e10:  # well away from singular: the two inverses agree to rounding times the condition
            np.testing.assert_allclose(k_host, k_traced, rtol=1e-12 * max(1.0, float(k_traced)))
        if k_host > _SINGULAR_STEP:  # the direction the error names: a null vector of M, in the unknowns' units
            d, e = d_host / np.max(np.abs(d_host)), d_traced / np.max(np.abs(d_traced))
            assert np.max(np.abs(M @ d)) <= 1e-8 * np.max(np.abs(M)), (M, d)
            assert abs(abs(d @ e) / (np.linalg.norm(d) * np.linalg.norm(e)) - 1.0) < 1e-8
        else:
            assert not np.any(d_host)


def test_the_host_condition_number_of_a_batch_is_each_members():
    rng = np.random.default_rng(3)
    Ms = np.stack([M for M in _matrices(rng) if M.shape == (3, 3)])
    k, d = host_condition(Ms)
    assert k.shape == (len(Ms),) and d.shape == (len(Ms), 3)
    for i, M in enumerate(Ms):
        ki, di = host_condition(M)
        assert k[i] == ki and np.array_equal(d[i], di)
    # sensitivity: a different member gives a different number
    assert len(set(np.round(np.log10(np.minimum(k, 1e300)), 6))) > 1


def _condition_by_numpy(J: np.ndarray, columns: bool = True) -> np.ndarray:
    """``np.linalg.cond(Je, 1)`` of ``J`` equilibrated by rows then (``columns``) columns: the definition, spelled out."""
    Je = J / np.maximum(np.max(np.abs(J), axis=-1, keepdims=True), 1e-300)
    if columns:
        Je = Je / np.maximum(np.max(np.abs(Je), axis=-2, keepdims=True), 1e-300)
    with np.errstate(all="ignore"):
        return np.linalg.cond(Je, 1)


def test_the_host_condition_number_is_numpys_bit_for_bit():
    """host_condition computes np.linalg.cond's 1-norm condition with its own inverse: the same bits, singular members included."""
    rng = np.random.default_rng(5)
    Ms = [M for M in _matrices(rng, (1, 2, 3, 5)) if M.shape[-1] == 3] + [rng.standard_normal((3, 3))]
    batch = np.stack(Ms)
    k, _ = host_condition(batch)
    ref = _condition_by_numpy(batch)
    ref = np.where(np.isnan(ref), np.inf, ref)
    assert np.array_equal(k, ref), (k, ref)
    assert np.isinf(k).any() and np.isfinite(k).any()  # the batch has singular and regular members
    for M in _matrices(rng, (1, 2, 4, 7)):
        ref = _condition_by_numpy(M)
        assert host_condition(M)[0] == (np.inf if np.isnan(ref) else ref)
    # sensitivity: without the column scaling the numbers differ
    regular = [M for M in Ms if np.isfinite(_condition_by_numpy(M))]
    assert any(host_condition(M)[0] != _condition_by_numpy(M, columns=False) for M in regular)


def test_a_non_finite_matrix_is_left_to_the_step_and_an_empty_one_is_regular():
    J = np.array([[1.0, np.nan], [0.0, 1.0]])
    k, d = host_condition(J)
    assert k == 1.0 and not np.any(d)
    k, d = host_condition(np.zeros((4, 0, 0)))
    assert np.array_equal(k, np.ones(4)) and d.shape == (4, 0)


def _spinning_point(q, v):
    """A point with no kinetic term (and no force) in its second coordinate: the step does not determine it."""
    return 0.5 * v[0] ** 2 - 0.5 * q[0] ** 2


def test_a_singular_start_is_still_refused_with_its_direction():
    sysm = LagrangeDiracSystem(Euclidean(2, names=("x", "y")), _spinning_point, name="spinning_point")
    with pytest.raises(IllPosedSystemError, match=r"singular at the start .*frame direction \[0\., 1\.\] \(y\)"):
        md.integrate(sysm, np.array([0.1, 0.0]), v0=np.array([0.0, 0.0]), h=0.1, n_steps=3)
    # sensitivity: with a kinetic term in y the same start runs
    tr = md.integrate(LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v @ v - 0.5 * q @ q), np.array([0.1, 0.0]),
                      v0=np.array([0.0, 0.0]), h=0.1, n_steps=3)
    assert tr.ok


# ------------------------------------------------------------------------- no LAPACK call in the start
def _start_module(sysm, q0, has_v: bool, rule: str = "midpoint") -> str:
    """The lowered start program of a run (traced and lowered, not compiled)."""
    from manifold_dirac._run.start import build_start

    integ = md.Integrator(sysm, 0.01, discrete_lagrangian=rule)
    n = sysm.dim
    fn = build_start(integ.stepmap, 0, has_v, not integ.rule.degenerate_safe)
    z = np.zeros(n)
    return fn.lower(q0, z, z, np.float64(0.01), np.float64(0.0), sysm.params).as_text()


def test_the_bundled_starts_make_no_lapack_call():
    """The knife edge's start (a constraint one-form) and the heavy top's with gauss4 (the degeneracy checks) call
    no LAPACK routine: the decompositions they need are NumPy's, on the host, so loading them from the cache does
    not initialize LAPACK. Sensitivity: a start from a momentum (the Legendre inverse's pseudo-inverse) calls it."""
    knife = md.systems.knife_edge()
    q0 = np.eye(3)
    assert "lapack" not in _start_module(knife, q0, True)
    assert "lapack" not in _start_module(md.systems.heavy_top(), np.eye(3), True, rule="gauss4")
    assert "lapack" in _start_module(knife, q0, False)


def test_the_null_projector_is_the_singular_vectors_one():
    from manifold_dirac._run.start import _null_projector

    rng = np.random.default_rng(8)
    proj = jax.jit(_null_projector)
    for m, n in [(1, 3), (2, 3), (2, 5), (3, 6), (4, 4)]:
        A = rng.standard_normal((m, n)) * 10.0 ** rng.uniform(-3, 3, (m, 1))
        N = np.linalg.svd(A)[2][m:].T
        P = np.asarray(proj(jnp.asarray(A)))
        np.testing.assert_allclose(P, N @ N.T, atol=1e-13)
        # sensitivity: another A has another kernel
        other = A + 0.1 * np.abs(A).max(axis=1, keepdims=True) * rng.standard_normal((m, n))
        assert np.max(np.abs(np.asarray(proj(jnp.asarray(other))) - N @ N.T)) > 1e-3 or m == n


def test_the_host_degeneracy_is_the_compiled_decompositions():
    """host_degeneracy computes what the compiled start computed with jnp.linalg.svd (to rounding); a member with a
    non-finite d2L/dv2 gives NaN, not an exception."""
    from manifold_dirac._run.start import _host_null_basis, host_degeneracy

    rng = np.random.default_rng(9)
    n, m = 4, 2
    H = rng.standard_normal((3, n, n))
    H = H + np.swapaxes(H, -1, -2)
    H[1] = np.diag([1.0, 2.0, 0.0, 3.0])  # singular
    A = rng.standard_normal((3, m, n))

    @jax.jit
    def traced(H, A):
        N = jnp.swapaxes(jnp.linalg.svd(A)[2][:, m:], -1, -2)
        Hr = jnp.swapaxes(N, -1, -2) @ H @ N
        sv = jnp.linalg.svd(Hr, compute_uv=False)
        _, svf, Vf = jnp.linalg.svd(H)
        return sv[:, -1] / jnp.maximum(sv[:, 0], 1e-300), svf[:, -1] / jnp.maximum(svf[:, 0], 1e-300), Vf[:, -1]

    d, dfull, direction = (np.asarray(x) for x in traced(H, A))
    Nt = _host_null_basis(A, n)
    out = host_degeneracy(H, Nt, full=True, restricted=True)
    np.testing.assert_allclose(out["degeneracy"], d, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(out["degeneracy_full"], dfull, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.abs(np.sum(out["degenerate_direction"] * direction, axis=-1)), 1.0, rtol=1e-12)
    assert out["degeneracy_full"][1] == 0.0
    # sensitivity: on the whole space (no constraint) the restricted number changes
    assert not np.allclose(host_degeneracy(H, None, full=False, restricted=True)["degeneracy"], d)
    bad = H.copy()
    bad[2, 0, 0] = np.nan
    out = host_degeneracy(bad, Nt, full=True, restricted=True)
    assert np.isnan(out["degeneracy"][2]) and np.isnan(out["degeneracy_full"][2])
    assert np.isfinite(out["degeneracy"][:2]).all()


def test_the_host_algebraic_equation_check_is_the_compiled_one():
    """host_secondary_residual computes what the compiled start computed (the singular value decomposition of the
    stacked derivatives, the largest violation in their common null space), batched; sensitivity: a violation in
    a direction with a kinetic term is not one."""
    from manifold_dirac._run.start import _host_null_basis, host_secondary_residual

    n = 3
    H = np.diag([1.0, 2.0, 0.0])[None].repeat(3, 0)  # no kinetic term in the third coordinate
    M = np.zeros((3, n, n))
    M[:, 0, 1] = M[:, 1, 0] = 0.3
    g = np.array([[0.1, 0.2, 0.5], [0.0, 0.1, 0.0], [0.3, 0.0, -2.0]])
    scale = np.array([1.0, 1.0, 4.0])

    @jax.jit
    def traced(H, M, g, scale, N):
        norm = lambda X: X / jnp.maximum(jnp.max(jnp.abs(X)), 1e-300)  # noqa: E731
        K = jnp.concatenate([norm(H) @ N, norm(M) @ N, norm(M.T) @ N])
        s, Vt = jnp.linalg.svd(K, full_matrices=False)[1:]
        E = Vt @ N.T
        res = jnp.where(s <= 1e-8, jnp.abs(E @ g), 0.0) / jnp.maximum(scale, 1e-300)
        j = jnp.argmax(res)
        return res[j], E[j]

    for A in (None, np.array([[[1.0, 1.0, 0.0]]]).repeat(3, 0)):
        Nt = _host_null_basis(A, n)
        res, direction = host_secondary_residual(H, M, g, scale, Nt)
        N = np.eye(n)[None].repeat(3, 0) if Nt is None else np.swapaxes(Nt, -1, -2)
        for i in range(3):
            r, d = (np.asarray(x) for x in traced(H[i], M[i], g[i], scale[i], N[i]))
            np.testing.assert_allclose(res[i], r, rtol=1e-12, atol=1e-15)
            np.testing.assert_allclose(abs(direction[i] @ d), 1.0 if r > 0 else abs(direction[i] @ d), rtol=1e-12)
        np.testing.assert_allclose(res, [0.5, 0.0, 0.5])
    # sensitivity: a kinetic term in the third coordinate: no algebraic equation, nothing violated (the regular
    # d2L/dv2 is told apart before any decomposition; the decomposition says the same)
    kinetic = H.copy()
    kinetic[:, 2, 2] = 1.0
    assert not np.any(host_secondary_residual(kinetic, M, g, scale, None)[0])
    with pytest.MonkeyPatch.context() as mp:
        from manifold_dirac._run import start

        mp.setattr(start, "_inverse", lambda X: np.full_like(X, np.nan))  # the shortcut never taken
        assert not np.any(host_secondary_residual(kinetic, M, g, scale, None)[0])
        np.testing.assert_allclose(host_secondary_residual(H, M, g, scale, None)[0], [0.5, 0.0, 0.5])
    nearly = H.copy()
    nearly[:, 2, 2] = 1e-7  # below the shortcut's bound, above the null test's: decomposed, not violated
    assert not np.any(host_secondary_residual(nearly, M, g, scale, None)[0])
    bad = H.copy()
    bad[1, 0, 0] = np.nan
    res = host_secondary_residual(bad, M, g, scale, None)[0]  # no exception: the step's own failure, diagnosed there
    assert not res[1] > 1e-8 and res[0] == 0.5


def test_a_regular_kinetic_term_skips_the_hosts_algebraic_equation_check(monkeypatch):
    """An unconstrained vector-space system tells a regular d2L/dv2 apart in its start program (a bound from an
    unrolled inverse): the host decomposes nothing. Sensitivity: a coordinate without kinetic term is decomposed
    on the host and its violated algebraic equation refused."""
    from manifold_dirac._mechanics import compile_cache
    from manifold_dirac._run import start

    def refuse(*args):
        raise AssertionError("decomposed on the host")

    monkeypatch.setattr(start, "host_secondary_residual", refuse)
    assert md.integrate(md.systems.pendulum(), np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=3).ok
    monkeypatch.undo()
    calls = []
    original = start.host_secondary_residual
    monkeypatch.setattr(start, "host_secondary_residual", lambda *a: calls.append(1) or original(*a))
    sysm = LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v[0] ** 2 - 0.5 * q[0] ** 2 - q[1] ** 2 + q[1])
    with pytest.raises(IllPosedSystemError, match="algebraic equation of motion"):
        md.integrate(sysm, np.array([0.1, 0.0]), v0=np.array([0.0, 0.0]), h=0.1, n_steps=3)
    assert calls
    compile_cache.clear()


# ------------------------------------------------------------------------- the start's compiler options
def _pendulum_run(options: dict) -> np.ndarray:
    from manifold_dirac._mechanics import compile_cache
    from manifold_dirac._run import start

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(start, "START_COMPILER_OPTIONS", options)
        compile_cache.clear()
        tr = md.integrate(md.systems.pendulum(), np.array([[1.0], [0.3]]), p0=np.array([[0.2], [-0.1]]), h=0.05,
                          n_steps=200, stride=7)
    compile_cache.clear()
    return np.concatenate([tr.q.ravel(), tr.p.ravel(), tr.v.ravel(), tr.energy.ravel()])


@pytest.mark.slow
def test_the_start_compiled_without_llvm_optimization_computes_the_same():
    """The start is compiled with ``xla_backend_optimization_level=0``: the same run, bit for bit, as with XLA's
    defaults (a batch started from momenta: the Legendre inverse and the checks run in that program)."""
    from manifold_dirac._run import start

    assert start.START_COMPILER_OPTIONS == {"xla_backend_optimization_level": 0}
    fast, default = _pendulum_run(dict(start.START_COMPILER_OPTIONS)), _pendulum_run({})
    np.testing.assert_array_equal(fast, default)
    # sensitivity: a run that differs in its last bits is told apart
    assert not np.array_equal(fast, fast * (1.0 + 1e-15 * np.sign(fast)))


_KEY_CHILD = """
import json, sys
import numpy as np
import jax
import manifold_dirac as md
from manifold_dirac._run import start
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)  # the small start is cached too
hits = []
jax.monitoring.register_event_listener(lambda e, **k: hits.append(e) if e == "/jax/compilation_cache/cache_hits" else None)
start.START_COMPILER_OPTIONS = json.loads(sys.argv[1])
md.Integrator(md.systems.pendulum(), 0.1).initial_state(np.array([0.5]), v0=np.array([0.0]))
print(json.dumps({"hits": len(hits)}))
"""


@pytest.mark.slow  # three fresh interpreters (~10 s)
@pytest.mark.parametrize("export", ["0", "1"])
def test_the_start_compiler_options_are_in_the_persistent_cache_key(tmp_path, export):
    """A start compiled with other XLA options is not served the executable compiled with these (and is with
    the same ones), with the serialized programs' layer off and on."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "MANIFOLD_DIRAC_JAX_CACHE": str(tmp_path),
           "MANIFOLD_DIRAC_EXPORT": export}

    def hits(options: dict) -> int:
        res = subprocess.run([sys.executable, "-c", _KEY_CHILD, json.dumps(options)], capture_output=True, text=True,
                             env=env, timeout=600, check=False)
        assert res.returncode == 0, res.stderr[-3000:]
        return json.loads(res.stdout.strip().splitlines()[-1])["hits"]

    o0 = {"xla_backend_optimization_level": 0}
    assert hits(o0) == 0  # an empty cache
    same = hits(o0)  # the start's executable from the cache, with the small programs' around it
    assert same >= 1
    assert hits({}) == same - 1  # XLA's defaults: the start is another key (the small programs still hit)
