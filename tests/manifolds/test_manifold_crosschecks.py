"""SO(3) and SE(2) exp/log against scipy and geomstats; the sphere against geomstats.

Tolerance 1e-12 throughout. geomstats itself loses digits in two places,
measured with its 2.8.0 release: the SO(3) vector-form log near a rotation
by pi (error ~1e-13 at 3.04 rad, O(1) within 0.04 of pi, where scipy is the
referee), and the SE(2) vector-form log for |omega| in about
[5e-4, 0.15] (cancellation just above its Taylor cutoff: errors up to
2e-11). The comparisons with geomstats skip exactly those ranges; scipy
covers SO(3) everywhere.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from manifold_dirac.manifolds import SE2, SO3
from manifold_dirac.testing import assert_close

RNG_SEED = 20240611


def _directions(rng, n):
    d = rng.standard_normal((n, 3))
    return d / np.linalg.norm(d, axis=-1, keepdims=True)


def _rotvecs(rng, lo, hi, n=200):
    return _directions(rng, n) * rng.uniform(lo, hi, n)[:, None]


ANGLE_RANGES = {
    "tiny": (1e-12, 1e-8),
    "small": (1e-8, 1e-3),
    "generic": (1e-3, 3.0),
    "near-pi": (np.pi - 1e-2, np.pi - 1e-9),
}


@pytest.fixture(scope="module")
def so3():
    return SO3()


@pytest.mark.parametrize("rng_range", list(ANGLE_RANGES), ids=str)
def test_so3_exp_log_match_scipy(so3, rng_range):
    rng = np.random.default_rng(RNG_SEED)
    x = _rotvecs(rng, *ANGLE_RANGES[rng_range])
    R = so3.exp(x)
    assert_close(R, Rotation.from_rotvec(x).as_matrix(), 0, 1e-12, "SO3.exp vs scipy from_rotvec")
    assert_close(so3.log(R), Rotation.from_matrix(R).as_rotvec(), 0, 1e-12, "SO3.log vs scipy as_rotvec")
    assert_close(so3.log(R), x, 0, 1e-12, "SO3.log(exp(x)) = x")


def test_so3_log_at_exactly_pi_is_one_of_the_two_logarithms(so3):
    for axis in np.eye(3).tolist() + [[1 / np.sqrt(2), 1 / np.sqrt(2), 0.0]]:
        x = np.pi * np.asarray(axis)
        R = Rotation.from_rotvec(x).as_matrix()
        w = so3.log(R)
        assert abs(np.linalg.norm(w) - np.pi) < 1e-12
        assert min(np.abs(w - x).max(), np.abs(w + x).max()) < 1e-12
        assert_close(so3.exp(w), R, 0, 1e-12, "exp(log(R)) at a rotation by pi")


@pytest.mark.parametrize("rng_range", list(ANGLE_RANGES), ids=str)
def test_so3_quaternion_matches_scipy(so3, rng_range):
    rng = np.random.default_rng(RNG_SEED + 1)
    x = _rotvecs(rng, *ANGLE_RANGES[rng_range])
    R = so3.exp(x)
    ref = Rotation.from_rotvec(x).as_quat(canonical=True)  # (x, y, z, w), w >= 0
    assert_close(SO3.as_quaternion(R), ref, 0, 1e-12, "SO3.as_quaternion vs scipy as_quat")
    quat = rng.standard_normal((200, 4))
    assert_close(
        SO3.from_quaternion(quat),
        Rotation.from_quat(quat).as_matrix(),
        0,
        1e-12,
        "SO3.from_quaternion vs scipy from_quat",
    )


# ---------------------------------------------------------------- geomstats
@pytest.fixture(scope="module")
def gs_so3():
    from manifold_dirac._compat import import_geomstats

    try:
        import_geomstats()
    except ImportError:
        pytest.skip("geomstats not installed")
    from geomstats.geometry.special_orthogonal import SpecialOrthogonal

    return SpecialOrthogonal(3, point_type="vector")


@pytest.fixture(scope="module")
def gs_se2():
    from manifold_dirac._compat import import_geomstats

    try:
        import_geomstats()
    except ImportError:
        pytest.skip("geomstats not installed")
    from geomstats.geometry.special_euclidean import SpecialEuclidean

    return SpecialEuclidean(2, point_type="vector")


@pytest.mark.parametrize("rng_range", list(ANGLE_RANGES), ids=str)
def test_so3_exp_matches_geomstats(so3, gs_so3, rng_range):
    x = _rotvecs(np.random.default_rng(RNG_SEED + 2), *ANGLE_RANGES[rng_range])
    assert_close(
        so3.exp(x),
        gs_so3.matrix_from_rotation_vector(x),
        0,
        1e-12,
        "SO3.exp vs geomstats matrix_from_rotation_vector",
    )


@pytest.mark.parametrize("rng_range", ["tiny", "small", "generic-below-2.5"])
def test_so3_log_matches_geomstats(so3, gs_so3, rng_range):
    lo, hi = {"tiny": ANGLE_RANGES["tiny"], "small": ANGLE_RANGES["small"], "generic-below-2.5": (1e-3, 2.5)}[
        rng_range
    ]
    x = _rotvecs(np.random.default_rng(RNG_SEED + 3), lo, hi)
    R = so3.exp(x)
    assert_close(
        so3.log(R),
        gs_so3.rotation_vector_from_matrix(R),
        0,
        1e-12,
        "SO3.log vs geomstats rotation_vector_from_matrix",
    )


def _se2_samples(rng, lo, hi, n=300):
    x = rng.standard_normal((n, 3))
    x[:, 0] = rng.uniform(lo, hi, n) * rng.choice([-1.0, 1.0], n)
    return x


SE2_RANGES = {
    "tiny": (0.0, 1e-8),
    "small": (1e-8, 5e-4),
    "moderate": (0.15, 2.0),
    "near-pi": (2.0, np.pi - 1e-9),
}


@pytest.mark.parametrize("rng_range", list(SE2_RANGES) + ["geomstats-band"])
def test_se2_exp_matches_geomstats(gs_se2, rng_range):
    se2 = SE2()
    lo, hi = SE2_RANGES.get(rng_range, (5e-4, 0.15))
    x = _se2_samples(np.random.default_rng(RNG_SEED + 4), lo, hi)
    g = se2.exp(x)
    # geomstats' vector form is (theta, x, y), the same order as our twist
    v = gs_se2.exp_from_identity(x)
    assert_close(se2.to_coordinates(g)[:, [2, 0, 1]], v, 0, 1e-12, "SE2.exp vs geomstats exp_from_identity")
    assert_close(g, gs_se2.matrix_from_vector(v), 0, 1e-12, "SE2.exp vs geomstats matrix_from_vector")


@pytest.mark.parametrize("rng_range", list(SE2_RANGES))
def test_se2_log_matches_geomstats(gs_se2, rng_range):
    se2 = SE2()
    x = _se2_samples(np.random.default_rng(RNG_SEED + 5), *SE2_RANGES[rng_range])
    g = se2.exp(x)
    v = se2.to_coordinates(g)[:, [2, 0, 1]]
    assert_close(se2.log(g), gs_se2.log_from_identity(v), 0, 1e-12, "SE2.log vs geomstats log_from_identity")
    assert_close(se2.log(g), x, 0, 1e-12, "SE2.log(exp(x)) = x")


def test_se2_log_in_geomstats_band_is_exact_by_round_trip():
    # where geomstats' own log loses digits, ours still inverts exp to 1e-12
    se2 = SE2()
    x = _se2_samples(np.random.default_rng(RNG_SEED + 6), 5e-4, 0.15)
    assert_close(se2.log(se2.exp(x)), x, 0, 1e-12, "SE2.log(exp(x)) = x")
