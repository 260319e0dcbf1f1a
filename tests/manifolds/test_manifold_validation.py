"""Bad input: every validation error has the right type and says what, where, how much."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from manifold_dirac.manifolds import (
    SE2,
    SO3,
    Euclidean,
    GeomstatsManifold,
    ProductManifold,
    ProductRetraction,
    RetractionDomainError,
    Sphere2,
)


def _rot_z(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# --------------------------------------------------------------------- SO3
def test_so3_non_rotation_says_where_and_by_how_much():
    R = np.broadcast_to(np.eye(3), (2, 3, 3, 3)).copy()
    R[1, 2, 0, 1] = 1e-3
    with pytest.raises(
        ValueError,
        match=r"R0: not a rotation matrix \(SO3\) at batch index \[1, 2\]: "
        r"\|R\^T R - I\| = 1\.414e-03 > atol = 1\.0e-09",
    ):
        SO3().check_point(R, name="R0")
    with pytest.raises(ValueError, match=r"det = -1 \(a reflection\)"):
        SO3().check_point(np.diag([1.0, 1.0, -1.0]))


def test_so3_wrong_shape_and_nan():
    with pytest.raises(
        ValueError, match=r"q: a point of SO3 is an array of shape \(\.\.\., 3, 3\), got shape \(3, 4\)"
    ):
        SO3().check_point(np.zeros((3, 4)))
    R = np.broadcast_to(np.eye(3), (4, 3, 3)).copy()
    R[2, 1, 1] = np.nan
    with pytest.raises(ValueError, match=r"q: non-finite entries in a point of SO3 at batch index \[2\]"):
        SO3().check_point(R)


# --------------------------------------------------------------------- SE2
def test_se2_rotation_block_last_row_and_reflection():
    g = np.broadcast_to(np.eye(3), (3, 3, 3)).copy()
    g[1, 0, 1] = 0.2
    with pytest.raises(
        ValueError,
        match=r"g: not a pose \(SE2\) at batch index \[1\]: the rotation block is not a "
        r"rotation, \|R\^T R - I\| 2\.857e-01 > atol = 1\.0e-09",
    ):
        SE2().check_point(g, name="g")
    g = np.eye(3)
    g[2, 0] = 0.1
    with pytest.raises(
        ValueError,
        match=r"q: not a pose \(SE2\) at batch index \[\]: the last row is not \[0, 0, 1\], "
        r"off by 1\.000e-01",
    ):
        SE2().check_point(g)
    with pytest.raises(
        ValueError, match=r"not a pose \(SE2\) at batch index \[\]: the rotation block has det = -1"
    ):
        SE2().check_point(np.diag([1.0, -1.0, 1.0]))


def test_se2_wrong_shape_nan_and_type():
    with pytest.raises(
        ValueError, match=r"a point of SE2 is an array of shape \(\.\.\., 3, 3\), got shape \(2, 2\)"
    ):
        SE2().check_point(np.eye(2))
    g = np.broadcast_to(np.eye(3), (2, 3, 3)).copy()
    g[1, 0, 2] = np.inf
    with pytest.raises(ValueError, match=r"non-finite entries in a point of SE2 at batch index \[1\]"):
        SE2().check_point(g)
    with pytest.raises(TypeError, match="a point of SE2 is an array"):
        SE2().check_point("pose")
    SE2().check_point(SE2().from_coordinates([1.0, 2.0, 0.3]) + 1e-11)  # within atol


# ------------------------------------------------------------ retractions
@pytest.mark.parametrize(
    "factory,valid",
    [
        (SO3, "'exp', 'cayley'"),
        (SE2, "'exp', 'cayley', 'so2xr2'"),
        (lambda r: Euclidean(2, retraction=r), "'identity'"),
        (lambda r: ProductManifold(SO3(), retraction=r), "'product'"),
    ],
)
def test_unknown_retraction_lists_valid_ones(factory, valid):
    with pytest.raises(ValueError, match=rf"unknown retraction 'qr'; valid retractions are {valid}\."):
        factory("qr")


def test_a_retraction_of_another_group_is_refused():
    with pytest.raises(ValueError, match=r"SO3: retraction SO2xR2\(\) is not registered for SO3"):
        SO3(SE2("so2xr2").retraction)


def test_cayley_and_exp_domains():
    assert not bool(SE2("cayley").in_domain(np.array([40.0, 0.0, 0.0])))
    assert bool(SE2("cayley").in_domain(np.array([30.0, 1e6, -1e6])))  # the translation does not limit it
    assert not bool(SE2("exp").in_domain(np.array([np.pi, 0.0, 0.0])))
    assert not bool(SE2("so2xr2").in_domain(np.array([-3.2, 0.0, 0.0])))
    with pytest.raises(RetractionDomainError, match=r"outside the domain of the inverse retraction 'cayley'"):
        SE2("cayley").checked_inverse_retract(np.eye(3), SE2().from_coordinates([0.0, 0.0, np.pi]))


# ------------------------------------------------------- other manifolds
def test_product_errors():
    P = ProductManifold(SO3(), Euclidean(2))
    with pytest.raises(
        ValueError,
        match=r"q: a point of a product of 2 manifolds is a tuple of 2 factor points, "
        r"got tuple of length 1",
    ):
        P.check_point((np.eye(3),))
    with pytest.raises(TypeError, match="is a tuple of 2 factor points, got ndarray"):
        P.check_point(np.eye(3))
    with pytest.raises(
        ValueError, match=r"q\[1\]: a point of Euclidean\(2\) has shape \(\.\.\., 2\), got shape \(3,\)"
    ):
        P.check_point((np.eye(3), np.zeros(3)))
    with pytest.raises(ValueError, match=r"q\[0\]: not a rotation matrix \(SO3\)"):
        P.check_point([2 * np.eye(3), np.zeros(2)])
    assert isinstance(P.check_point([np.eye(3), np.zeros(2)]), tuple)
    with pytest.raises(TypeError, match="one or more Manifold instances"):
        ProductManifold()
    with pytest.raises(ValueError, match="does not match the factors'"):
        ProductManifold(SO3(), Euclidean(2), retraction=ProductRetraction((SO3("cayley").retraction,)))
    with pytest.raises(
        ValueError, match=r"coordinates have length 5 \(0\.rx, 0\.ry, 0\.rz, 1\.x0, 1\.x1\), got shape \(4,\)"
    ):
        P.from_coordinates(np.zeros(4))


def test_sphere_errors():
    sphere = Sphere2()
    with pytest.raises(
        ValueError,
        match=r"not on the unit sphere \(Sphere2\) at batch index \[1\]: \| \|q\| - 1 \| = 5\.000e-02",
    ):
        sphere.check_point(np.array([[0.0, 0.0, 1.0], [0.0, 1.05, 0.0]]))
    with pytest.raises(ValueError, match=r"unit 3-vector, shape \(\.\.\., 3\), got \(2,\)"):
        sphere.check_point(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"non-finite entries in a point of Sphere2 at batch index \[0\]"):
        sphere.check_point(np.array([[np.nan, 0.0, 1.0]]))
    with pytest.raises(
        ValueError, match=r"unknown values 'exact'; valid values are 'closed_form', 'geomstats'"
    ):
        Sphere2(values="exact")
    with pytest.raises(ValueError, match="only n = 2"):
        GeomstatsManifold.hypersphere(3)
    assert GeomstatsManifold.hypersphere(2) == Sphere2() != Sphere2(values="geomstats")
    q = np.array([[0.0, 0.0, 1.0], [0.6, 0.8, 0.0]])
    with pytest.raises(RetractionDomainError, match=r"batch index \[1\]"):
        sphere.checked_inverse_retract(q, np.array([[1.0, 0.0, 0.0], [-0.6, -0.8, 0.0]]))


def test_closed_form_sphere_does_not_need_geomstats(monkeypatch):
    monkeypatch.setitem(sys.modules, "geomstats", None)  # any import of geomstats now fails
    sphere = Sphere2()
    q1 = sphere.retract(np.array([0.0, 0.0, 1.0]), np.array([0.1, 0.2]))
    sphere.check_point(q1)
    with pytest.raises(ImportError):
        Sphere2(values="geomstats")
