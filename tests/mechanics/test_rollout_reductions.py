"""Reductions written out: the compiled step of a short run holds few ``reduce`` operations.

Inside a compiled loop each ``reduce`` brings a reduction computation whose
values XLA:CPU gives buffers of their own, and the runtime sets up every
buffer of a program on every call: on the rolling disk they were most of the
fixed cost of a ``jax.jit(rollout)`` call (``docs/composition.md``). The sums,
maxima and ``all`` over the small static axes of the step are therefore
written out term by term (:mod:`manifold_dirac._mechanics.small`).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
import manifold_dirac._mechanics.small as small
from manifold_dirac.systems.catalog import EXAMPLES


@pytest.mark.parametrize("shape,axis", [((5,), -1), ((3, 4), 0), ((3, 4), 1), ((2, 3, 6), -2), ((2, 0), -1),
                                        ((40,), -1)])
def test_total_is_the_sum(shape, axis):
    a = np.random.default_rng(0).normal(size=shape)
    np.testing.assert_allclose(np.asarray(small.total(a, axis)), np.sum(a, axis=axis), rtol=1e-15, atol=1e-15)


def test_largest_and_every_are_max_and_all():
    rng = np.random.default_rng(1)
    for n in (1, 2, 7, 33):
        a = rng.normal(size=(n,))
        assert float(small.largest(a)) == np.max(a)
        assert float(small.largest(np.abs(a), initial=0.0)) == np.max(np.abs(a))
        assert bool(small.every(a > -10.0)) and not bool(small.every(a > np.median(a)))
    assert float(small.largest(np.zeros(0), initial=0.0)) == 0.0
    assert bool(small.every(np.zeros(0, bool)))
    a = np.array([1.0, np.nan, 3.0])
    assert np.isnan(float(small.largest(a))) and np.isnan(float(small.largest(a, initial=0.0)))  # as jnp.max


def test_solve_small_pivot_ties_and_nan():
    """The pivot written out picks the first of tied rows (as LAPACK) and a NaN column gives NaN, never a number."""
    A = np.array([[1.0, 2.0, 0.5], [-1.0, 0.5, 2.0], [1.0, -3.0, 1.0]])  # |A[:, 0]| tied three times
    b = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(np.asarray(small.solve_small(A, b)), np.linalg.solve(A, b), rtol=1e-14)
    A[1, 0] = np.nan
    assert np.all(np.isnan(np.asarray(small.solve_small(A, b))))


def _disk_step_text(name: str = "rolling_disk") -> str:
    ex = EXAMPLES[name]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    integ = md.Integrator(sysm, 0.1, scheme="split")
    st = integ.initial_state(q0, v0)
    sm = integ.stepmap
    return jax.jit(lambda m, h, p: sm.step(m, 0, 0.0, h, p)[0]).lower(st.members, 0.1, sysm.params).compile().as_text()


@pytest.fixture(scope="module")
def disk_step_reductions() -> int:
    return len(re.findall(r" reduce\(", _disk_step_text()))


@pytest.mark.slow
def test_the_disk_step_has_few_reductions(disk_step_reductions):
    """One Newton-solved step of the rolling disk (its compiled rollout held 64 reductions before): none left.

    At most the sine/cosine pair's deliberate reduction (computed once,
    ``docs/performance.md``), which XLA may fold.
    """
    assert disk_step_reductions <= 2, disk_step_reductions


@pytest.mark.slow
def test_the_reduction_count_sees_a_sum(disk_step_reductions, monkeypatch):
    """The count above fails when the products of :mod:`small` sum with ``jnp.sum`` again."""
    monkeypatch.setattr(small, "total", lambda a, axis=-1: jnp.sum(a, axis=axis))
    assert len(re.findall(r" reduce\(", _disk_step_text())) >= disk_step_reductions + 10
