"""Newton's start test (``newton.START_ACCEPT``) keeps a force that acts below round-off per step.

A start taken without an update leaves out what the residual holds beyond
the threshold. From the previous step's solution that omission repeats at
every step and adds up: a test at ``64 eps`` (tried, to spare the rolling
disk's repeated composed sub-steps an update that moved nothing) dropped a
damping of ``5e-13`` on a free particle entirely -- the momentum after 2000
steps unchanged to ``3e-15`` where it must fall by ``1e-11`` -- with every
step reported OK. At ``4 eps`` the update is taken and the force acts.
"""

from __future__ import annotations

import numpy as np
import pytest

import manifold_dirac as md
import manifold_dirac._mechanics.newton as N
from manifold_dirac.systems import damped_oscillator

C, H, N_STEPS = 5e-13, 0.01, 2000


def _momentum_change(start_accept=None) -> float:
    # a new system object: rollout compiles its own program, which reads the constant when tracing
    sysm = damped_oscillator(stiffness=0.0, damping=C)
    saved = N.START_ACCEPT
    if start_accept is not None:
        N.START_ACCEPT = start_accept
    try:
        r = md.rollout(sysm, np.zeros(1), np.ones(1), h=H, n_steps=N_STEPS).check()
    finally:
        N.START_ACCEPT = saved
    return float(np.asarray(r.p)[-1, 0] - np.asarray(r.p)[0, 0])


def test_a_force_below_round_off_per_step_still_acts():
    """p' = -c v with v = 1: the momentum falls by c T (to 1e-3 relative; the velocity changes by 1e-11 only)."""
    dp = _momentum_change()
    assert dp == pytest.approx(-C * H * N_STEPS, rel=1e-2), dp


def test_a_looser_start_test_drops_that_force():
    """Sensitivity: the same run with a 64 eps start test loses the force (the bug this test guards against)."""
    dp = _momentum_change(64.0)
    assert abs(dp) < 0.1 * C * H * N_STEPS, dp
