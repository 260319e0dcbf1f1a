"""Human coordinates round trips: SE2 (x, y, theta), SO3 rotation vectors and quaternions, S^2, products."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from manifold_dirac._manifolds import SE2, SO3, Euclidean, ProductManifold, Sphere2
from manifold_dirac.testing import assert_close

BATCH = (2, 3)
so3 = SO3()
exp, log, as_quaternion = jax.jit(so3.exp), jax.jit(so3.log), jax.jit(SO3.as_quaternion)


def test_se2_xy_theta_round_trip():
    rng = np.random.default_rng(0)
    c = np.concatenate([rng.standard_normal((*BATCH, 2)), rng.uniform(-np.pi + 1e-9, np.pi, (*BATCH, 1))], -1)
    se2 = SE2()
    g = se2.from_coordinates(c)
    se2.check_point(g)
    assert_close(se2.to_coordinates(g), c, 0, 1e-14, "SE2 to(from(x, y, theta))")
    q = se2.random_point(rng, BATCH)
    assert_close(se2.from_coordinates(se2.to_coordinates(q)), q, 0, 1e-15, "SE2 from(to(g))")


def test_se2_coordinates_meaning():
    g = SE2().from_coordinates([1.0, 2.0, np.pi / 2])
    assert_close(g, [[0.0, -1.0, 1.0], [1.0, 0.0, 2.0], [0.0, 0.0, 1.0]], 0, 1e-15, "pose at (1, 2, pi/2)")
    assert float(SE2().to_coordinates(SE2().from_coordinates([0.0, 0.0, np.pi]))[2]) == pytest.approx(np.pi)
    with pytest.raises(
        ValueError, match=r"coordinates are \(\.\.\., 3\) = \(x, y, theta\), got shape \(2,\)"
    ):
        SE2().from_coordinates([1.0, 2.0])


def test_so3_rotation_vector_round_trip():
    rng = np.random.default_rng(1)
    d = rng.standard_normal((*BATCH, 3))
    r = d / np.linalg.norm(d, axis=-1, keepdims=True) * rng.uniform(0, np.pi - 1e-6, (*BATCH, 1))
    assert_close(log(so3.check_point(exp(r))), r, 0, 1e-13, "SO3 rotvec round trip (to_coordinates is log)")
    R = so3.random_point(rng, BATCH)
    assert_close(exp(log(R)), R, 0, 1e-14, "SO3 from(to(R)) (from_coordinates is exp)")
    with pytest.raises(ValueError, match=r"a rotation vector has shape \(\.\.\., 3\), got \(2,\)"):
        so3.from_coordinates([1.0, 2.0])


def test_so3_quaternion_round_trip_and_edges():
    rng = np.random.default_rng(2)
    quat = rng.standard_normal((*BATCH, 4))
    unit = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    unit = np.where(unit[..., 3:] < 0, -unit, unit)  # the canonical sign, w >= 0
    R = SO3.from_quaternion(quat)
    so3.check_point(R)
    assert_close(as_quaternion(R), unit, 0, 1e-14, "as_quaternion(from_quaternion(q))")
    angles = np.array([0.0, 1e-12, np.pi - 1e-12, np.pi, 0.5, 1.0]).reshape(BATCH)
    R = exp(np.stack([0 * angles, angles, 0 * angles], -1))
    expected = np.stack([0 * angles, np.sin(angles / 2), 0 * angles, np.cos(angles / 2)], -1)
    assert_close(as_quaternion(R), expected, 0, 1e-15, "quaternions at 0 and pi")
    with pytest.raises(ValueError, match=r"expected shape \(\.\.\., 4\) in \(x, y, z, w\) order, got \(3,\)"):
        SO3.from_quaternion([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="zero or non-finite quaternion"):
        SO3.from_quaternion([0.0, 0.0, 0.0, 0.0])


def test_sphere_coordinates_round_trip():
    sphere = Sphere2()
    rng = np.random.default_rng(9)
    q = sphere.random_point(rng, BATCH)
    c = np.asarray(sphere.to_coordinates(q))
    assert np.all((c[..., 0] >= 0) & (c[..., 0] <= np.pi)) and np.all(np.abs(c[..., 1]) <= np.pi)
    assert_close(sphere.from_coordinates(c), q, 0, 1e-15, "from_coordinates(to_coordinates(q))")
    assert_close(sphere.from_coordinates([0.0, 0.0]), [0.0, 0.0, 1.0], 0, 0, "polar 0 is the north pole")
    assert sphere.coordinate_names == ("polar", "azimuth")


def test_product_coordinates_round_trip():
    P = ProductManifold(SE2(), Euclidean(2))
    c = np.array([[0.5, -1.0, 0.3, 7.0, 8.0]])
    assert P.coordinate_names == ("0.x", "0.y", "0.theta", "1.x0", "1.x1")
    assert_close(P.to_coordinates(P.from_coordinates(c)), c, 0, 1e-15, "product coordinates round trip")
