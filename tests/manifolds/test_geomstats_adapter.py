"""The geomstats adapter: Sphere2 against closed forms and geomstats' metric."""

from __future__ import annotations

import numpy as np
import pytest

from manifold_dirac.errors import RetractionDomainError
from manifold_dirac.testing import assert_close, check_manifold_laws

adapter = pytest.importorskip("manifold_dirac.manifolds.geomstats_adapter")
try:
    from manifold_dirac._compat import import_geomstats

    import_geomstats()
except ImportError:  # pragma: no cover - geomstats is a test dependency
    pytest.skip("geomstats not installed", allow_module_level=True)

Sphere2 = adapter.Sphere2
GeomstatsManifold = adapter.GeomstatsManifold


@pytest.fixture(scope="module")
def sphere():
    return Sphere2()


@pytest.fixture(scope="module")
def sphere_gs():
    return Sphere2(values="geomstats")


def _reference_exp(q, v):
    """Independent real formula (norms with np.linalg.norm, no series)."""
    t = np.linalg.norm(v, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        u = np.where(t > 0, v / np.where(t > 0, t, 1.0), 0.0)
    return np.cos(t) * q + np.sin(t) * u


def _reference_log(q0, q1):
    c = np.sum(q0 * q1, -1, keepdims=True)
    w = q1 - c * q0
    s = np.linalg.norm(w, axis=-1, keepdims=True)
    th = np.arctan2(s, c)
    return np.where(s > 0, th / np.where(s > 0, s, 1.0), 1.0) * w


@pytest.mark.parametrize("norm", [1e-12, 1e-8, 1e-4, 0.3, 1.0, 2.0, 3.0, np.pi - 1e-3])
def test_retract_and_inverse_equal_closed_form_exp_log(sphere, norm):
    rng = np.random.default_rng(1)
    q = sphere.random_point(rng, (50,))
    d = rng.standard_normal((50, 2))
    xi = norm * d / np.linalg.norm(d, axis=-1, keepdims=True)
    E = sphere.frame(q)
    v = np.einsum("...ai,...i->...a", E, xi)
    q1 = sphere.retract(q, xi)
    assert_close(q1, _reference_exp(q, v), 0, 1e-15, "Sphere2.retract vs closed-form exp")
    ref_xi = np.einsum("...ai,...a->...i", E, _reference_log(q, q1))
    assert_close(
        sphere.inverse_retract(q, q1),
        ref_xi,
        0,
        1e-15 + 1e-13 * norm / (np.pi - min(norm, 3.1)),
        "Sphere2.inverse_retract vs closed-form log",
    )


@pytest.mark.parametrize("norm", [1e-12, 1e-8, 1e-4, 0.3, 1.0, 2.0, 3.0, np.pi - 1e-3])
def test_retract_equals_geomstats_metric_exp(sphere, sphere_gs, norm):
    rng = np.random.default_rng(2)
    q = sphere.random_point(rng, (50,))
    d = rng.standard_normal((50, 2))
    xi = norm * d / np.linalg.norm(d, axis=-1, keepdims=True)
    # R_q(xi) = metric.exp(E(q) xi, q)
    v = np.einsum("...ai,...i->...a", sphere.frame(q), xi)
    assert_close(sphere.retract(q, xi), sphere.space.metric.exp(v, q), 0, 1e-14, "retract vs metric.exp")
    assert_close(
        sphere_gs.retract(q, xi), sphere.retract(q, xi), 0, 1e-14, "values='geomstats' vs closed form"
    )


@pytest.mark.parametrize("norm", [1e-2, 0.3, 1.0, 2.0, 3.0])
def test_inverse_retract_equals_geomstats_metric_log(sphere, sphere_gs, norm):
    # geomstats' log goes through arccos: accurate to 1e-12 only away from 0
    # and the antipode (see the adapter's module docstring)
    rng = np.random.default_rng(3)
    q0 = sphere.random_point(rng, (50,))
    q1 = sphere.retract(q0, norm * _unit2(rng, 50))
    ref = np.einsum("...ai,...a->...i", sphere.frame(q0), sphere.space.metric.log(q1, q0))
    assert_close(sphere.inverse_retract(q0, q1), ref, 0, 1e-12, "inverse_retract vs E^T metric.log")
    assert_close(sphere_gs.inverse_retract(q0, q1), ref, 0, 1e-15, "values='geomstats' is E^T metric.log")


def _unit2(rng, n):
    d = rng.standard_normal((n, 2))
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def test_frame_is_orthonormal_tangent_and_right_handed(sphere):
    q = sphere.random_point(np.random.default_rng(4), (500,))
    E = sphere.frame(q)
    assert_close(np.einsum("...ai,...aj->...ij", E, E), np.eye(2), 0, 1e-14, "E^T E = I")
    assert_close(np.einsum("...ai,...a->...i", E, q), 0.0, 0, 1e-14, "E^T q = 0")
    assert_close(np.cross(E[..., 0], E[..., 1]), q, 0, 1e-14, "e1 x e2 = q")


def test_frame_is_east_north_at_the_equator_and_smooth_within_a_chart(sphere):
    q = np.array([1.0, 0.0, 0.0])
    assert_close(
        sphere.frame(q), np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), 0, 1e-15, "frame at (1,0,0)"
    )
    # continuity inside a chart: nearby points have nearby frames
    rng = np.random.default_rng(5)
    p = sphere.random_point(rng, (200,))
    p2 = sphere.retract(p, 1e-7 * _unit2(rng, 200))
    assert np.max(np.abs(sphere.frame(p2) - sphere.frame(p))) < 1e-6


def test_random_points_avoid_the_chart_switch(sphere):
    q = sphere.random_point(np.random.default_rng(6), (20000,))
    assert np.min(np.abs(np.abs(q[:, 2]) - 1 / np.sqrt(2))) >= 1e-3
    assert_close(np.linalg.norm(q, axis=-1), 1.0, 0, 1e-15, "|q| = 1")


def test_jacobians_are_exact_complex_step_not_finite_differences(sphere):
    # against closed forms at xi = 0 and along a great circle
    rng = np.random.default_rng(7)
    q = sphere.random_point(rng, (20,))
    J0, J1 = sphere.inverse_retract_jacobians(q, q)
    assert_close(J1, np.eye(2), 0, 1e-15, "J1(q, q) = I exactly")
    assert_close(J0, -np.eye(2), 0, 1e-15, "J0(q, q) = -I exactly")
    # along a great circle in the e1 direction, J_xi is diag(1, sin t / t)
    t = 1.3
    xi = np.broadcast_to([t, 0.0], (20, 2))
    q1 = sphere.retract(q, xi)
    Jq, Jxi = sphere.retract_jacobians(q, xi)
    # transport the frame to q1 to compare in a parallel frame: with
    # F = E(q1)^T P where P maps E(q) to its parallel transport
    E0, E1 = sphere.frame(q), sphere.frame(q1)
    u = E0[..., 0]
    P1 = np.stack([-np.sin(t) * q + np.cos(t) * u, E0[..., 1]], -1)  # transported frame at q1
    C = np.einsum("...ai,...aj->...ij", E1, P1)  # frame change E1 <- P1
    assert_close(Jxi, C @ np.diag([1.0, np.sin(t) / t]), 0, 1e-14, "J_xi = diag(1, sin t/t) (parallel frame)")
    # J_q also carries the rotation of the frame E along the perturbation, so
    # it has no such simple form; it must still agree with a converged FD far
    # better than the laws' 1e-6 (a plain FD Jacobian would not)
    from manifold_dirac.testing import check_inverse_retract_jacobians_fd, check_retract_jacobians_fd

    check_retract_jacobians_fd(sphere, q, xi, rtol=1e-9)
    check_inverse_retract_jacobians_fd(sphere, q, xi, rtol=1e-9)
    del Jq


def test_ambient_tangent_accepts_complex(sphere):
    q = sphere.random_point(np.random.default_rng(8), (3,))
    eta = np.array([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0]])
    a = sphere.ambient_tangent(q, 1j * 1e-30 * eta)
    assert np.iscomplexobj(a)
    assert_close(a.imag / 1e-30, np.einsum("...ai,...i->...a", sphere.frame(q), eta), 0, 1e-15, "E(q) eta")


def test_check_point_says_by_how_much(sphere):
    with pytest.raises(
        ValueError, match=r"not on the unit sphere at batch index \[1\]: \| \|q\| - 1 \| = 5\.000e-02"
    ):
        sphere.check_point(np.array([[0.0, 0.0, 1.0], [0.0, 1.05, 0.0]]))
    with pytest.raises(ValueError, match=r"unit 3-vector, shape \(\.\.\., 3\), got \(2,\)"):
        sphere.check_point(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"non-finite entries in a point of Sphere2 at batch index \[0\]"):
        sphere.check_point(np.array([[np.nan, 0.0, 1.0]]))


def test_inverse_retract_at_the_antipode_raises(sphere):
    q = np.array([[0.0, 0.0, 1.0], [0.6, 0.8, 0.0]])
    with pytest.raises(RetractionDomainError, match=r"batch index \[1\]: q1 is the antipode of q0"):
        sphere.inverse_retract(q, np.array([[1.0, 0.0, 0.0], [-0.6, -0.8, 0.0]]))


def test_human_coordinates_round_trip(sphere):
    rng = np.random.default_rng(9)
    q = sphere.random_point(rng, (100,))
    c = sphere.to_coordinates(q)
    assert np.all((c[:, 0] >= 0) & (c[:, 0] <= np.pi)) and np.all(np.abs(c[:, 1]) <= np.pi)
    assert_close(sphere.from_coordinates(c), q, 0, 1e-15, "from_coordinates(to_coordinates(q))")
    c2 = np.stack([rng.uniform(0.01, np.pi - 0.01, 100), rng.uniform(-3.1, 3.1, 100)], -1)
    assert_close(sphere.to_coordinates(sphere.from_coordinates(c2)), c2, 0, 1e-13, "to(from(c))")
    assert_close(sphere.from_coordinates([0.0, 0.0]), [0.0, 0.0, 1.0], 0, 0, "polar 0 is the north pole")


def test_hypersphere_constructor_and_unknown_values():
    assert GeomstatsManifold.hypersphere(2) == Sphere2()
    with pytest.raises(ValueError, match="only n = 2"):
        GeomstatsManifold.hypersphere(3)
    with pytest.raises(
        ValueError, match=r"unknown retraction 'exact'; valid retractions are 'closed_form', 'geomstats'"
    ):
        Sphere2(values="exact")


def test_sphere_passes_the_shared_laws_with_geomstats_values_where_geomstats_is_accurate(sphere_gs):
    # the generic regime (|xi| in [0.1, 2.5]) is where metric.log is accurate
    check_manifold_laws(sphere_gs, seeds=range(3), regimes=["generic"])
