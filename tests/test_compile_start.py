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


def _matrices(rng: np.random.Generator) -> list[np.ndarray]:
    """Regular, ill-conditioned, nearly singular and singular matrices of several sizes and scales."""
    out = []
    for N in (1, 2, 3, 6, 9):
        A = rng.standard_normal((N, N)) * 10.0 ** rng.uniform(-3, 3, (N, 1))  # rows of other units
        out.append(A)
        if N > 1:
            S = A.copy()
            S[:, -1] = 2.0 * A[:, 0]  # exactly singular
            out += [S, S * (1.0 + 1e-15 * rng.standard_normal(S.shape)), S * (1.0 + 1e-7 * rng.standard_normal(S.shape))]
    out.append(np.zeros((3, 3)))
    return out


def test_the_host_condition_number_is_the_traced_one():
    rng = np.random.default_rng(11)
    for M in _matrices(rng):
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
