"""Human coordinates round trips: SE2 (x, y, theta), SO3 rotation vector and quaternion."""

from __future__ import annotations

import numpy as np
import pytest

from manifold_dirac.manifolds import SE2, SO3, Euclidean, ProductManifold
from manifold_dirac.testing import assert_close


@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_se2_xy_theta_round_trip(batch):
    rng = np.random.default_rng(0)
    c = np.concatenate([rng.standard_normal((*batch, 2)), rng.uniform(-np.pi + 1e-9, np.pi, (*batch, 1))], -1)
    se2 = SE2()
    g = se2.from_coordinates(c)
    se2.check_point(g)
    assert_close(se2.to_coordinates(g), c, 0, 1e-14, "SE2 to(from(x, y, theta))")
    q = se2.random_point(rng, batch)
    assert_close(se2.from_coordinates(se2.to_coordinates(q)), q, 0, 1e-15, "SE2 from(to(g))")


def test_se2_coordinates_meaning():
    g = SE2().from_coordinates([1.0, 2.0, np.pi / 2])
    assert_close(g, [[0.0, -1.0, 1.0], [1.0, 0.0, 2.0], [0.0, 0.0, 1.0]], 0, 1e-15, "pose at (1, 2, pi/2)")
    assert SE2().to_coordinates(SE2().from_coordinates([0.0, 0.0, np.pi]))[2] == pytest.approx(np.pi)
    with pytest.raises(ValueError, match=r"SE2 coordinates are \(\.\.\., 3\) = \(x, y, theta\), got \(2,\)"):
        SE2().from_coordinates([1.0, 2.0])


@pytest.mark.parametrize("batch", [(), (5,), (2, 3)])
def test_so3_rotation_vector_round_trip(batch):
    rng = np.random.default_rng(1)
    d = rng.standard_normal((*batch, 3))
    r = d / np.linalg.norm(d, axis=-1, keepdims=True) * rng.uniform(0, np.pi - 1e-6, (*batch, 1))
    so3 = SO3()
    assert_close(so3.to_coordinates(so3.from_coordinates(r)), r, 0, 1e-13, "SO3 rotvec round trip")
    R = so3.random_point(rng, batch)
    assert_close(so3.from_coordinates(so3.to_coordinates(R)), R, 0, 1e-14, "SO3 from(to(R))")


@pytest.mark.parametrize("batch", [(), (5,), (2, 3)])
def test_so3_quaternion_round_trip(batch):
    rng = np.random.default_rng(2)
    quat = rng.standard_normal((*batch, 4))
    unit = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    unit = np.where(unit[..., 3:] < 0, -unit, unit)  # the canonical sign, w >= 0
    R = SO3.from_quaternion(quat)
    SO3().check_point(R)
    assert_close(SO3.as_quaternion(R), unit, 0, 1e-14, "as_quaternion(from_quaternion(q))")
    assert_close(SO3.from_quaternion(SO3.as_quaternion(R)), R, 0, 1e-14, "from_quaternion(as_quaternion(R))")


def test_so3_quaternion_near_pi_and_identity():
    for angle in (0.0, 1e-12, np.pi - 1e-12, np.pi):
        R = SO3().exp(np.array([0.0, angle, 0.0]))
        quat = SO3.as_quaternion(R)
        assert_close(
            quat, [0.0, np.sin(angle / 2), 0.0, np.cos(angle / 2)], 0, 1e-15, f"quaternion at {angle}"
        )


def test_quaternion_errors():
    with pytest.raises(ValueError, match=r"expected shape \(\.\.\., 4\) in \(x, y, z, w\) order, got \(3,\)"):
        SO3.from_quaternion([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="zero or non-finite quaternion"):
        SO3.from_quaternion([0.0, 0.0, 0.0, 0.0])


def test_product_coordinates_round_trip():
    P = ProductManifold(SE2(), Euclidean(2))
    c = np.array([[0.5, -1.0, 0.3, 7.0, 8.0]])
    assert P.coordinate_names == ("0.x", "0.y", "0.theta", "1.x0", "1.x1")
    assert_close(P.to_coordinates(P.from_coordinates(c)), c, 0, 1e-15, "product coordinates round trip")
