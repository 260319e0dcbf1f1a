"""Invariants: discrete Noether, bounded energy, constraint residual, symplecticity (compiled engine).

Ported from the numpy engine's ``tests/mechanics/test_invariants.py`` with
every assertion and tolerance. What changed with the engine:

* the numpy engine's ``TIGHT = SolverOptions(rtol=1e-15, atol=1e-15)`` has
  no counterpart: the compiled Newton iterates to round-off by default
  (scaled residual <= 4 eps, or until it stagnates below ``rtol``), so these
  tests run with the default :class:`SolverOptions` -- and share the compiled
  step of the bundled systems' other tests;
* the one-step map of the symplecticity test is :meth:`Integrator.step` on a
  batch of initial states given by momenta (``p0``); its result is a
  :class:`RunState` (``.q``, ``.members.p``).

Compile time, not run time, is the cost here (one compiled program per
system, scheme and rule; ~2-9 s each on two cores): the CI set keeps the
cases that share their compiled step with the bundled-systems tests, and
marks the others ``slow`` (``pytest -m slow``), asserting exactly the same.
"""

import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac.analysis import energy_drift
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._run.integrate import integrate
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import spatial_angular_momentum

from ..systems.bundled import new


def _rigid_body_case(retraction, scheme, rule):
    rb = new("free_rigid_body", retraction=retraction)
    q0 = rb.Q.from_coordinates(jnp.array([0.4, -0.2, 1.0]))
    tr = integrate(rb, q0, v0=np.array([1.0, 0.3, -0.5]), h=0.1, n_steps=600, scheme=scheme,
                   discrete_lagrangian=rule)
    pi = spatial_angular_momentum(tr.q, tr.p)
    drift = np.max(np.abs(pi - pi[0])) / np.linalg.norm(pi[0])
    assert drift < 1e-13
    # the body momentum norm |p| is a Casimir: conserved too
    assert np.ptp(np.linalg.norm(tr.p, axis=-1)) < 1e-13
    # rotation matrices stay on SO(3) to round-off
    RtR = np.einsum("kji,kjl->kil", tr.q, tr.q)
    assert np.max(np.abs(RtR - np.eye(3))) < 1e-13


RIGID_BODY = [(r, s, q) for r in ("exp", "cayley") for s, q in (
    ("symmetric", "midpoint"), ("symmetric", "trapezoid"), ("plus", "rectangle+"), ("minus", "rectangle-"))]


@pytest.mark.parametrize("retraction,scheme,rule", [
    c if c == ("exp", "symmetric", "midpoint") else pytest.param(*c, marks=pytest.mark.slow)
    for c in RIGID_BODY])
def test_free_rigid_body_spatial_momentum_is_conserved_to_round_off(retraction, scheme, rule):
    _rigid_body_case(retraction, scheme, rule)



@pytest.mark.slow
def test_noether_check_can_fail():
    """A torque breaks the symmetry: the same check must then see drift."""
    rb = new("free_rigid_body")
    forced = LagrangeDiracSystem(rb.Q, rb.lagrangian, force=lambda t, q, v, p: 0.01 * jnp.ones_like(v),
                                 partials=rb.partials, params=rb.params, name="forced_rigid_body")
    tr = integrate(forced, rb.Q.identity(), v0=np.array([1.0, 0.3, -0.5]), h=0.1, n_steps=50)
    pi = spatial_angular_momentum(tr.q, tr.p)
    assert np.max(np.abs(pi - pi[0])) > 1e-3


def _energy_check(tr, T):
    slope, spread = energy_drift(tr.t, tr.energy)
    # bounded, oscillating error: any trend over the run is small against the oscillation
    assert abs(slope) * T < 0.2 * spread + 1e-12
    return spread


@pytest.mark.parametrize("retraction", ["exp", pytest.param("cayley", marks=pytest.mark.slow)])
def test_heavy_top_energy_bounded_no_drift(retraction):
    top = new("heavy_top", retraction=retraction)
    q0 = top.Q.from_coordinates(jnp.array([0.5, 0.0, 0.0]))
    tr = integrate(top, q0, v0=np.array([0.2, 0.1, 3.0]), h=0.05, n_steps=3000)
    spread = _energy_check(tr, tr.t[-1])
    assert spread < 5e-3 * abs(tr.energy[0]) + 1e-3


def test_chaplygin_sled_energy_and_constraint():
    sled = new("chaplygin_sled")
    tr = integrate(sled, sled.Q.identity(), v0=np.array([1.0, 1.0, 0.0]), h=0.05, n_steps=2000)
    _energy_check(tr, tr.t[-1])
    assert np.max(tr.constraint_residual) < 1e-12
    # the blade never slips: body v_y of the recorded velocities ~ 0 (second-order central differences)
    assert np.max(np.abs(tr.v[:, 2])) < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("system", ["heavy_top", "chaplygin_sled"])
def test_long_runs_1e5_steps(system):
    if system == "heavy_top":
        sysm = new("heavy_top")
        q0, v0 = sysm.Q.from_coordinates(jnp.array([0.5, 0.0, 0.0])), np.array([0.2, 0.1, 3.0])
    else:
        sysm = new("chaplygin_sled")
        q0, v0 = sysm.Q.identity(), np.array([1.0, 1.0, 0.0])
    tr = integrate(sysm, q0, v0=v0, h=0.05, n_steps=100_000, stride=10)
    _energy_check(tr, tr.t[-1])
    assert np.max(tr.constraint_residual, initial=0) < 1e-12


def _one_step_jacobian(sysm, q, p, h, rule):
    """d(q', p')/d(q, p) of the one-step map by a 4th-order central stencil, batched."""
    n = q.shape[-1]
    z = np.concatenate([q, p])
    d = 1e-4
    E = np.eye(2 * n)
    offsets = np.array([2, 1, -1, -2]) * d
    Z = z + offsets[:, None, None] * E[None]  # (4, 2n, 2n)
    integ = Integrator(sysm, h, "symmetric", rule)
    state = integ.initial_state(Z[..., :n], p0=Z[..., n:])
    new_state, _ = integ.step(state)
    out = np.concatenate([np.asarray(new_state.q), np.asarray(new_state.members.p).reshape(4, 2 * n, n)], -1)
    return (-out[0] + 8 * out[1] - 8 * out[2] + out[3]).T / (12 * d)


@pytest.mark.parametrize("rule", ["midpoint"] + [pytest.param(r, marks=pytest.mark.slow)
                                                 for r in ("trapezoid", "rectangle+")])
def test_unconstrained_one_step_map_is_symplectic(rule):
    sysm = new("double_pendulum")
    q, p = np.array([0.7, -0.4]), np.array([0.3, 0.8])
    J = _one_step_jacobian(sysm, q, p, 0.1, rule)
    n = 2
    Om = np.block([[np.zeros((n, n)), np.eye(n)], [-np.eye(n), np.zeros((n, n))]])
    assert np.max(np.abs(J.T @ Om @ J - Om)) < 1e-9
    # and the test can fail: a non-symplectic perturbation of the map is seen
    Jbad = J.copy()
    Jbad[0, 0] *= 1 + 1e-6
    assert np.max(np.abs(Jbad.T @ Om @ Jbad - Om)) > 1e-8
