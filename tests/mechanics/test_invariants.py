"""Invariants: discrete Noether, bounded energy, constraint residual, symplecticity."""

import numpy as np
import pytest

from manifold_dirac import Integrator, SolverOptions, integrate
from manifold_dirac import systems as S
from manifold_dirac.analysis import energy_drift

TIGHT = SolverOptions(rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("retraction", ["exp", "cayley"])
@pytest.mark.parametrize("scheme,rule", [("symmetric", "midpoint"), ("symmetric", "trapezoid"),
                                         ("plus", "rectangle+"), ("minus", "rectangle-")])
def test_free_rigid_body_spatial_momentum_is_conserved_to_round_off(retraction, scheme, rule):
    rb = S.free_rigid_body(retraction=retraction)
    q0 = rb.Q.from_coordinates([0.4, -0.2, 1.0])
    tr = integrate(rb, q0, v0=np.array([1.0, 0.3, -0.5]), h=0.1, n_steps=600, scheme=scheme,
                   discrete_lagrangian=rule, solver=TIGHT)
    pi = S.spatial_angular_momentum(tr.q, tr.p)
    drift = np.max(np.abs(pi - pi[0])) / np.linalg.norm(pi[0])
    assert drift < 1e-13
    # the body momentum norm |p| is a Casimir: conserved too
    assert np.ptp(np.linalg.norm(tr.p, axis=-1)) < 1e-13
    # rotation matrices stay on SO(3) to round-off
    RtR = np.einsum("kji,kjl->kil", tr.q, tr.q)
    assert np.max(np.abs(RtR - np.eye(3))) < 1e-13


def test_noether_check_can_fail():
    """A torque breaks the symmetry: the same check must then see drift."""
    rb = S.free_rigid_body()
    forced = type(rb)(rb.Q, rb.lagrangian, force=lambda t, q, v: 0.01 * np.ones_like(v),
                      partials=rb.analytic_partials)
    tr = integrate(forced, rb.Q.identity(), v0=np.array([1.0, 0.3, -0.5]), h=0.1, n_steps=50, solver=TIGHT)
    pi = S.spatial_angular_momentum(tr.q, tr.p)
    assert np.max(np.abs(pi - pi[0])) > 1e-3


def _energy_check(tr, T):
    slope, spread = energy_drift(tr.t, tr.energy)
    # bounded, oscillating error: any trend over the run is small against the oscillation
    assert abs(slope) * T < 0.2 * spread + 1e-12
    return spread


@pytest.mark.parametrize("retraction", ["exp", "cayley"])
def test_heavy_top_energy_bounded_no_drift(retraction):
    top = S.heavy_top(retraction=retraction)
    q0 = top.Q.from_coordinates([0.5, 0.0, 0.0])
    tr = integrate(top, q0, v0=np.array([0.2, 0.1, 3.0]), h=0.05, n_steps=3000)
    spread = _energy_check(tr, tr.t[-1])
    assert spread < 5e-3 * abs(tr.energy[0]) + 1e-3


def test_chaplygin_sled_energy_and_constraint():
    sled = S.chaplygin_sled()
    tr = integrate(sled, sled.Q.identity(), v0=np.array([1.0, 1.0, 0.0]), h=0.05, n_steps=2000)
    _energy_check(tr, tr.t[-1])
    assert np.max(tr.constraint_residual) < 1e-12
    # the blade never slips: body v_y of the recorded velocities ~ 0 (second-order central differences)
    assert np.max(np.abs(tr.v[:, 2])) < 1e-3


@pytest.mark.slow
@pytest.mark.parametrize("system", ["heavy_top", "chaplygin_sled"])
def test_long_runs_1e5_steps(system):
    if system == "heavy_top":
        sysm = S.heavy_top()
        q0, v0 = sysm.Q.from_coordinates([0.5, 0.0, 0.0]), np.array([0.2, 0.1, 3.0])
    else:
        sysm = S.chaplygin_sled()
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
    integ = Integrator(sysm, h, "symmetric", rule, solver=TIGHT)
    state = integ.initial_state(Z[..., :n], p0=Z[..., n:])
    new, info = integ.step(state)
    out = np.concatenate([new.q, new.p], -1)  # (4, 2n, 2n)
    return (-out[0] + 8 * out[1] - 8 * out[2] + out[3]).T / (12 * d)


@pytest.mark.parametrize("rule", ["midpoint", "trapezoid", "rectangle+"])
def test_unconstrained_one_step_map_is_symplectic(rule):
    sysm = S.double_pendulum()
    q, p = np.array([0.7, -0.4]), np.array([0.3, 0.8])
    J = _one_step_jacobian(sysm, q, p, 0.1, rule)
    n = 2
    Om = np.block([[np.zeros((n, n)), np.eye(n)], [-np.eye(n), np.zeros((n, n))]])
    assert np.max(np.abs(J.T @ Om @ J - Om)) < 1e-9
    # and the test can fail: a non-symplectic perturbation of the map is seen
    Jbad = J.copy()
    Jbad[0, 0] *= 1 + 1e-6
    assert np.max(np.abs(Jbad.T @ Om @ Jbad - Om)) > 1e-8
