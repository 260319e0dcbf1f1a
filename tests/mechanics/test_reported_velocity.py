"""The reported velocity and energy are as accurate as the rule.

For a rule of order above 2 the stored velocity is the Legendre inverse of
the stored momentum (``dL/dv(q_k, v_k) = p_k + C^T lam``, ``C v_k = 0``), so
``Trajectory.energy`` is ``H(q_k, p_k)`` and converges at the rule's order;
the second-order rules keep the central difference.
"""

from __future__ import annotations

import functools
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac import integrate
from manifold_dirac._manifolds import SO3, Sphere2
from manifold_dirac.systems import pendulums

from ..systems.bundled import new
from .test_galerkin import case as galerkin_case

I = sys.modules["manifold_dirac._run.recording"]  # the module that computes the reported velocity

R0 = np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0])))
W0 = np.array([0.5, -0.2, 2.0])
T = 20.0
HS = (0.1, 0.05)


def top():
    return galerkin_case("heavy_top_exp")["system"]  # shared with test_galerkin (one compile per rule)


@functools.lru_cache(maxsize=None)
def top_run(rule, h):
    return integrate(top(), R0, v0=W0, h=h, n_steps=int(round(T / h)), discrete_lagrangian=rule)


def hamiltonian(sysm, q, p):
    """``H(q, p)`` of a Lagrangian quadratic in ``v``: ``v = (d2L/dv2)^{-1} (p - dL/dv(q, 0))`` (a linear solve)."""

    def one(q, p):
        z = jnp.zeros_like(p)
        M = jax.jacfwd(lambda w: sysm.momentum(q, w))(z)
        v = jnp.linalg.solve(M, p - sysm.momentum(q, z))
        return sysm.energy(q, v, p)

    return np.asarray(jax.vmap(one)(jnp.asarray(q), jnp.asarray(p)))


def central_energy(sysm, tr, h):
    """The energy at the central-difference velocity (what was reported before), interior points."""
    Q = sysm.Q
    q = jnp.asarray(tr.q)
    fwd = jax.vmap(Q.inverse_retract)(q[1:-1], q[2:])
    back = jax.vmap(Q.inverse_retract)(q[1:-1], q[:-2])
    v = (fwd - back) / (2 * h)
    return np.asarray(jax.vmap(sysm.energy)(q[1:-1], v, jnp.asarray(tr.p)[1:-1]))


@pytest.mark.parametrize("rule", ["gauss4", "gauss6"])
@pytest.mark.slow
def test_galerkin_reported_energy_is_the_hamiltonian_of_the_momenta(rule):
    h = HS[0]
    tr = top_run(rule, h)
    H = hamiltonian(top(), tr.q, tr.p)
    assert tr.v.dtype == np.float64 and tr.energy.dtype == np.float64
    assert np.max(np.abs(tr.energy - H)) < 1e-12
    # sensitivity: the central-difference energy (the old report) misses H(q, p) by far more
    Ec = central_energy(top(), tr, h)
    assert np.max(np.abs(Ec - H[1:-1])) > 1e-7


@pytest.mark.parametrize("rule,order,bound", [("gauss4", 4, 3e-6), ("gauss6", 6, 2e-9)])
@pytest.mark.slow
def test_galerkin_reported_energy_error_converges_at_the_rule_order(rule, order, bound):
    """Heavy top, T = 20: reported energy variation 1.99e-6 / 1.24e-7 (gauss4), 8.25e-10 / 1.29e-11 (gauss6)
    at h = 0.1 / 0.05 (the central-difference energy varied by 8.2e-5 with gauss6 at h = 0.1)."""
    errs = []
    for h in HS:
        E = top_run(rule, h).energy
        errs.append(np.max(np.abs(E - E[0])))
    assert errs[0] < bound
    slope = np.log(errs[0] / errs[1]) / np.log(HS[0] / HS[1])
    assert slope == pytest.approx(order, abs=0.15)


def test_midpoint_keeps_the_central_difference():
    """Second-order rules report the central difference (unchanged): it is as accurate as their momenta."""
    h = HS[0]
    tr = top_run("midpoint", h)
    q = jnp.asarray(tr.q)
    v = (jax.vmap(top().Q.inverse_retract)(q[1:-1], q[2:]) - jax.vmap(top().Q.inverse_retract)(q[1:-1], q[:-2]))
    np.testing.assert_allclose(tr.v[1:-1], np.asarray(v) / (2 * h), rtol=0, atol=1e-12)
    # and the midpoint energy is not H(q, p) (sensitivity of the check above)
    assert np.max(np.abs(tr.energy - hamiltonian(top(), tr.q, tr.p))) > 1e-6


def test_holonomic_legendre_velocity_is_tangent_and_inverts_the_momentum():
    """Cartesian pendulum (|x| = 1): the reported-point solve gives ``v`` tangent to the sphere with
    ``dL/dv(q, v) - p`` normal to it, from a momentum with a normal component and an untangent start.
    (Called directly: a run of this system is no test, since its central difference already is the
    Legendre inverse -- kinetic energy |v|^2/2, linear potential -- whatever the rule.)"""
    cart = pendulums.cartesian_spherical_pendulum()
    q = jnp.asarray(Sphere2().from_coordinates([2.5, 0.3]))
    G = cart.holonomic_differential(q)

    def tangential(w):
        return w - G.T @ jnp.linalg.solve(G @ G.T, G @ w)

    w = tangential(jnp.array([0.4, -0.7, 0.2]))
    p = cart.momentum(q, w) + 3.0 * q  # plus a normal (reaction) component
    vc = w + jnp.array([0.01, 0.02, -0.03])  # an O(h^2)-off, untangent start
    v = jax.jit(lambda q, p, vc: I._reported_legendre_velocity(cart, q, p, vc, cart.params))(q, p, vc)
    assert float(jnp.max(jnp.abs(G @ v))) < 1e-13
    assert float(jnp.max(jnp.abs(tangential(cart.momentum(q, v) - p)))) < 1e-13
    np.testing.assert_allclose(np.asarray(v), np.asarray(w), rtol=0, atol=1e-13)
    # sensitivity: the start itself fails both
    assert float(jnp.max(jnp.abs(tangential(cart.momentum(q, vc) - p)))) > 1e-3


def test_degenerate_lagrangian_keeps_the_central_difference():
    """Lotka--Volterra (L linear in v): no Legendre inverse, the central difference is returned unchanged;
    a regular Lagrangian (double pendulum) gets the Legendre inverse from the same call (sensitivity)."""
    lv = new("lotka_volterra")
    q = jnp.array([1.2, 0.8])
    vc = jnp.array([0.3, -0.2])
    p = lv.momentum(q, vc) + jnp.array([1e-3, -2e-3])
    v = jax.jit(lambda q, p, vc: I._reported_legendre_velocity(lv, q, p, vc, lv.params))(q, p, vc)
    np.testing.assert_array_equal(np.asarray(v), np.asarray(vc))

    dp = new("double_pendulum")
    q = jnp.array([0.8, -0.4])
    p = dp.momentum(q, jnp.array([0.1, 0.5]))
    v = jax.jit(lambda q, p, vc: I._reported_legendre_velocity(dp, q, p, vc, dp.params))(q, p, vc)
    np.testing.assert_allclose(np.asarray(v), [0.1, 0.5], rtol=0, atol=1e-12)


@pytest.mark.parametrize("eps, legendre", [(1e-12, False), (1e-5, True)])
@pytest.mark.parametrize("c_scale", [None, 1.0, 1e-6])
def test_a_nearly_degenerate_lagrangian_keeps_the_central_difference_whatever_the_constraints_units(
        eps, legendre, c_scale):
    """``L = v_0^2/2 + eps v_1^2/2 + v_2^2/2``: ``d2L/dv2`` singular to ``1e-12`` (below the regularity threshold
    ``1e-8``) keeps the central difference, ``1e-5`` gets the Legendre inverse (sensitivity); a constraint on
    ``v_2`` (its one-form scaled by ``c_scale``: units) does not change the verdict."""
    from manifold_dirac import LagrangeDiracSystem
    from manifold_dirac._manifolds import Euclidean

    def L(q, v):
        return 0.5 * v[0] ** 2 + 0.5 * eps * v[1] ** 2 + 0.5 * v[2] ** 2 + 0.1 * jnp.sin(q[0]) * v[1]

    constraint = None if c_scale is None else c_scale * np.array([[0.0, 0.0, 1.0]])
    sysm = LagrangeDiracSystem(Euclidean(3), L, constraint=constraint)
    q = jnp.array([0.3, -0.2, 0.1])
    w = jnp.array([0.4, 0.7, 0.0 if c_scale is not None else -0.5])
    p = sysm.momentum(q, w)
    vc = w + jnp.array([1e-3, -2e-3, 0.0])  # an O(h^2)-off central difference
    v = np.asarray(jax.jit(lambda q, p, vc: I._reported_legendre_velocity(sysm, q, p, vc, None))(q, p, vc))
    if legendre:
        np.testing.assert_allclose(v, np.asarray(w), rtol=0, atol=1e-9)
    else:
        np.testing.assert_array_equal(v, np.asarray(vc))


def test_the_reported_velocity_makes_no_lapack_call():
    """It runs at every stored point inside the compiled loop: no SVD, LU, QR (a LAPACK call per point costs
    more than the step of a small system). The detector finds the SVDs of the start's least-squares Legendre
    solve (sensitivity)."""
    from manifold_dirac._run import start

    from .mech_helpers import LAPACK_PRIMITIVE as lapack

    ke = new("knife_edge")
    q, vc = jnp.eye(3), jnp.array([0.8, 1.0, 0.0])
    p = ke.momentum(q, vc)
    jaxpr = str(jax.make_jaxpr(lambda q, p, vc: I._reported_legendre_velocity(ke, q, p, vc, ke.params))(q, p, vc))
    assert not lapack.search(jaxpr)
    C = ke.constraint_matrix(q, ke.params)
    old = str(jax.make_jaxpr(lambda q, p: start._legendre_solve(ke, q, p, C, jnp.eye(3)[:, :2], ke.params))(q, p))
    assert lapack.search(old)
