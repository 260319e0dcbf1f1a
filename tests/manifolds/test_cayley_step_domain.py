"""The Cayley retraction's step domain refuses the steps ``exp`` refuses: a rotation by pi or more per step.

``cay`` maps every chart coordinate to a rotation by less than pi, so a
step never leaves its image; a step too large for the motion shows in the
velocity instead. For a body spinning at the rate ``Omega`` about a
principal axis, the discrete Legendre transforms give ``|w| = Omega h`` with
``exp`` and ``|w| (1 + |w|^2/4) = Omega h`` with Cayley
(``J_l^{-1}(w) w = w (1 + |w|^2/4)``); the step domain
``|w| (1 + |w|^2/4) < pi`` of Cayley therefore refuses exactly when
``Omega h >= pi``, as ``exp``'s ``|w| < pi`` does.
"""

from __future__ import annotations

import numpy as np
import pytest

from manifold_dirac._errors import StepDomainError
from manifold_dirac._manifolds import SE2, SE3, SO3
from manifold_dirac._manifolds.lie_group import CAYLEY_MAX_ROTATION, Cayley
from manifold_dirac._run.integrate import integrate
from manifold_dirac.systems.rigid_bodies import free_rigid_body, tumbling_brick


def _spin(retraction: str, omega: float, h: float, se3: bool = False):
    if se3:
        return integrate(tumbling_brick(retraction=retraction), np.eye(4),
                         v0=np.array([0.0, 0.0, omega, 0.0, 0.0, 0.0]), h=h, n_steps=3)
    return integrate(free_rigid_body(retraction=retraction), np.eye(3), v0=np.array([0.0, 0.0, omega]), h=h,
                     n_steps=3)


def test_the_edge_is_the_root_of_the_cubic():
    m = CAYLEY_MAX_ROTATION
    assert abs(m * (1 + m * m / 4) - np.pi) < 1e-14 and 1.7655 < m < 1.7657
    for G, xi in ((SO3("cayley"), [0.0, 0.0, 1.0]), (SE2("cayley"), [1.0, 5.0, -5.0]),
                  (SE3("cayley"), [0.0, 1.0, 0.0, 1e6, 0.0, 0.0])):
        xi = np.asarray(xi)
        assert bool(G.in_domain((1 - 1e-12) * m * xi)) and not bool(G.in_domain((1 + 1e-12) * m * xi))


@pytest.mark.parametrize("se3,omega,h", [(False, 10.0, 1.0), pytest.param(True, 40.0, 0.1, marks=pytest.mark.slow)], ids=["SO3-10rad/s", "SE3-40rad/s"])
def test_a_cayley_step_rotating_more_than_pi_is_refused_like_exp(se3, omega, h):
    """A body spinning at 10 rad/s with h = 1 (SO(3)) or at 40 rad/s with h = 0.1 (SE(3)): exp refuses
    the step; Cayley returned an aliased spin (3.03 and 20 rad/s) with ok=True, and now refuses it too."""
    for retraction in ("exp", "cayley"):
        with pytest.raises(StepDomainError, match=rf"domain of the retraction '{retraction}'") as ei:
            _spin(retraction, omega, h, se3)
        assert "try h < " in str(ei.value)


def test_cayley_and_exp_refuse_at_the_same_step(se3=False):
    """Spin about a principal axis: both accept ``Omega h = pi (1 - 1e-3)`` and refuse ``pi (1 + 1e-3)``;
    Cayley's chart coordinate satisfies ``|w| (1 + |w|^2/4) = Omega h`` (what the edge is derived from)."""
    omega = 10.0
    for retraction in ("exp", "cayley"):
        tr = _spin(retraction, omega, np.pi * (1 - 1e-3) / omega, se3)
        assert tr.ok
        w = np.linalg.norm(np.asarray(tr.xi)[:, :3], axis=-1)
        f = w if retraction == "exp" else w * (1 + w * w / 4)
        np.testing.assert_allclose(f, np.pi * (1 - 1e-3), rtol=1e-9)
        with pytest.raises(StepDomainError):
            _spin(retraction, omega, np.pi * (1 + 1e-3) / omega, se3)


@pytest.mark.slow
def test_sensitivity_the_former_bound_accepts_the_aliased_step(monkeypatch):
    """With the former bound (rotations within 0.1 rad of pi) the 10 rad/s spin runs with ok=True and
    records 3.03 rad/s: the tests above can fail."""
    from manifold_dirac._mechanics import compile_cache

    # compiled programs are keyed by what a system computes, and a class attribute patched after they were
    # built is not part of that key: drop them before and after, so the patched bound is compiled in
    compile_cache.clear()
    monkeypatch.setattr(Cayley, "max_rotation", float(2.0 * np.tan(0.5 * (np.pi - 0.1))))
    try:
        tr = _spin("cayley", 10.0, 1.0)
    finally:
        compile_cache.clear()
    assert tr.ok
    np.testing.assert_allclose(np.linalg.norm(np.asarray(tr.xi), axis=-1), 3.03196046, rtol=1e-8)
