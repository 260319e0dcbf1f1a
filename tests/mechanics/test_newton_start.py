"""Newton accepts a start at the residual's own rounding (``newton.START_ACCEPT``).

The rolling disk is a relative equilibrium: a composed rollout's predicted
starts from the third step on are its sub-steps' solutions to round-off.
Their scaled residuals lie above ``4 eps`` for about half the sub-steps, and
a test at ``4 eps`` sent those through a Newton update that could only move
the solution by round-off.
"""

from __future__ import annotations

import numpy as np
import pytest

import manifold_dirac as md
import manifold_dirac._mechanics.newton as N
from manifold_dirac.systems.catalog import EXAMPLES


def _run(start_accept=None):
    ex = EXAMPLES["rolling_disk"]
    sysm = ex.system("exp")  # a new system: its own compiled programs (the constant is read when tracing)
    q0, v0 = ex.initial(sysm)
    saved = N.START_ACCEPT
    if start_accept is not None:
        N.START_ACCEPT = start_accept
    try:
        return md.rollout(sysm, q0, v0, h=0.25, n_steps=8, scheme="split", composition="kahan_li8").check()
    finally:
        N.START_ACCEPT = saved


@pytest.fixture(scope="module")
def disk_run():
    return _run()


def test_repeated_sub_steps_take_no_newton_update(disk_run):
    """From the third step on every sub-step's start is accepted (before: 8 to 13 updates per step)."""
    its = np.asarray(disk_run.iterations)
    assert its[0] > 0 and np.all(its[2:] == 0), its.tolist()


@pytest.mark.slow
def test_a_four_eps_start_test_iterates_and_computes_the_same(disk_run):
    """With the old ``4 eps`` start test the same run iterates on repeated sub-steps, to the same values."""
    old = _run(4.0)
    assert np.sum(np.asarray(old.iterations)[2:]) >= 20, np.asarray(old.iterations).tolist()
    for a, b in zip((*old.q, old.p), (*disk_run.q, disk_run.p)):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=0, atol=1e-12)
