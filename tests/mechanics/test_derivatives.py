"""Automatic (complex-step) partials agree with analytic ones on every bundled system."""

import zlib

import numpy as np
import pytest

from manifold_dirac import SE2, SO3, Euclidean, LagrangeDiracSystem, ProductManifold
from manifold_dirac import systems as S

BUNDLED = {
    "harmonic_oscillator": lambda: S.harmonic_oscillator(3),
    "damped_oscillator": S.damped_oscillator,
    "pendulum": S.pendulum,
    "double_pendulum": S.double_pendulum,
    "free_rigid_body": S.free_rigid_body,
    "free_rigid_body_cayley": lambda: S.free_rigid_body(retraction="cayley"),
    "heavy_top": S.heavy_top,
    "heavy_top_cayley": lambda: S.heavy_top(retraction="cayley"),
    "inclined_knife_edge": S.inclined_knife_edge,
    "inclined_knife_edge_so2xr2": lambda: S.inclined_knife_edge(retraction="so2xr2"),
    "chaplygin_sled": S.chaplygin_sled,
    "differential_drive": S.differential_drive,
    "lc_circuit": S.lc_circuit,
    "spherical_pendulum": S.spherical_pendulum,
    "mass_spring_monolithic": S.mass_spring_monolithic,
    "mass_spring_torn": S.mass_spring_torn,
    "lc_from_elements": S.lc_from_elements,
    "rolling_disk": S.rolling_disk,
    "rolling_ball": S.rolling_ball,
    "two_wheel_cart": S.two_wheel_cart,
}


@pytest.mark.parametrize("name", sorted(BUNDLED))
@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_complex_step_matches_analytic(name, batch):
    sysm = BUNDLED[name]()
    rng = np.random.default_rng(zlib.crc32(f"{name}{batch}".encode()))
    q = sysm.Q.random_point(rng, batch)
    v = rng.standard_normal((*batch, sysm.dim))
    aq, av = sysm.partials(q, v)
    cq, cv = sysm._complex_step_partials(q, v)
    for a, c in ((aq, cq), (av, cv)):
        assert c.shape == (*batch, sysm.dim)
        np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-12 * (1 + np.max(np.abs(a))))


def test_complex_step_on_a_product_manifold():
    Q = ProductManifold(SO3(), Euclidean(2), SE2())

    def L(q, v):
        R, x, g = q
        return 0.5 * np.sum(v * v, -1) + R[..., 2, 0] * x[..., 0] + g[..., 0, 2] * v[..., 5] + np.sin(x[..., 1])

    sysm = LagrangeDiracSystem(Q, L)
    rng = np.random.default_rng(0)
    q = Q.random_point(rng, (3,))
    v = rng.standard_normal((3, Q.dim))
    err = sysm.check_partials(Q.index_point(q, 0), v[0])
    assert err < 1e-7


def test_check_partials_catches_wrong_analytic_partials():
    good = S.pendulum()
    bad = LagrangeDiracSystem(good.Q, good.lagrangian, partials=lambda q, v: (np.sin(q), v))
    with pytest.raises(ValueError, match="disagree with finite differences"):
        bad.check_partials(np.array([0.3]), np.array([0.2]))
    assert good.check_partials(np.array([0.3]), np.array([0.2])) < 1e-8


def test_not_complex_safe_lagrangian_is_refused():
    # np.abs drops the imaginary part: the complex step would silently give 0
    sysm = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * np.abs(v[..., 0]) ** 2)
    with pytest.raises(ValueError, match="complex-safe"):
        sysm.partials(np.array([0.0]), np.array([1.0]))


def test_lagrangian_that_does_not_broadcast_is_refused():
    sysm = LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * (v[0] ** 2 + v[1] ** 2) + 0j)
    with pytest.raises(ValueError, match="broadcast over leading axes"):
        sysm.partials(np.zeros(2), np.ones(2))
