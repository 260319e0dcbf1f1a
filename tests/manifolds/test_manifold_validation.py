"""Bad input: every validation error has the right type and says what, where, how much."""

from __future__ import annotations

import numpy as np
import pytest

from manifold_dirac.errors import RetractionDomainError
from manifold_dirac.manifolds import SE2, SO3, Euclidean, ProductManifold


def _rot_z(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# --------------------------------------------------------------------- SO3
def test_so3_non_rotation_says_by_how_much():
    R = 1.01 * np.eye(3)  # |R^T R - I|_F = sqrt(3) * 0.0201
    expected = f"{np.sqrt(3) * (1.01**2 - 1):.3e}"
    with pytest.raises(
        ValueError,
        match=rf"q: not a rotation matrix at batch index \[\]: \|R\^T R - I\| = {expected} > atol = 1\.0e-09",
    ):
        SO3().check_point(R)


def test_so3_non_rotation_names_the_batch_index():
    R = np.broadcast_to(np.eye(3), (2, 3, 3, 3)).copy()
    R[1, 2, 0, 1] = 1e-3
    with pytest.raises(
        ValueError, match=r"R0: not a rotation matrix at batch index \[1, 2\]: \|R\^T R - I\| = 1\.414e-03"
    ):
        SO3().check_point(R, name="R0")


def test_so3_wrong_shape():
    with pytest.raises(
        ValueError, match=r"q: a point of SO3 is an array of shape \(\.\.\., 3, 3\), got \(3, 4\)"
    ):
        SO3().check_point(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"got \(3,\)"):
        SO3().check_point(np.zeros(3))


def test_so3_nan():
    R = np.broadcast_to(np.eye(3), (4, 3, 3)).copy()
    R[2, 1, 1] = np.nan
    with pytest.raises(ValueError, match=r"q: non-finite entries in a point of SO3 at batch index \[2\]"):
        SO3().check_point(R)


def test_so3_reflection():
    with pytest.raises(
        ValueError, match=r"not a rotation matrix at batch index \[\]: det = -1 \(a reflection\)"
    ):
        SO3().check_point(np.diag([1.0, 1.0, -1.0]))


def test_so3_tolerance_is_respected():
    R = _rot_z(0.3)
    R[0, 0] += 1e-11
    SO3().check_point(R)  # within the default atol
    with pytest.raises(ValueError, match=r"> atol = 1\.0e-12"):
        SO3().check_point(R, atol=1e-12)


# --------------------------------------------------------------------- SE2
def test_se2_bad_last_row():
    g = np.eye(3)
    g[2, 0] = 0.1
    with pytest.raises(
        ValueError,
        match=r"last row of a homogeneous SE\(2\) matrix must be \[0, 0, 1\] at batch index \[\]; off by 1\.000e-01",
    ):
        SE2().check_point(g)


def test_se2_bad_last_row_batch_index():
    g = np.broadcast_to(np.eye(3), (3, 3, 3)).copy()
    g[1, 2, 2] = 2.0
    with pytest.raises(ValueError, match=r"must be \[0, 0, 1\] at batch index \[1\]; off by 1\.000e\+00"):
        SE2().check_point(g)


def test_se2_rotation_block_and_reflection():
    g = np.eye(3)
    g[0, 1] = 0.2
    with pytest.raises(
        ValueError, match=r"rotation block is not a rotation at batch index \[\]: \|R\^T R - I\| = 2\.857e-01"
    ):
        SE2().check_point(g)
    with pytest.raises(ValueError, match=r"rotation block has det = -1 \(a reflection\) at batch index \[\]"):
        SE2().check_point(np.diag([1.0, -1.0, 1.0]))


def test_se2_wrong_shape_and_nan():
    with pytest.raises(
        ValueError, match=r"a point of SE2 is an array of shape \(\.\.\., 3, 3\), got \(2, 2\)"
    ):
        SE2().check_point(np.eye(2))
    g = np.eye(3)
    g[0, 2] = np.inf
    with pytest.raises(ValueError, match="non-finite entries in a point of SE2"):
        SE2().check_point(g)


# ------------------------------------------------------------ retractions
@pytest.mark.parametrize(
    "factory,valid",
    [
        (SO3, "'exp', 'cayley'"),
        (SE2, "'exp', 'cayley', 'so2xr2'"),
        (lambda r: Euclidean(2, retraction=r), "'identity'"),
    ],
)
def test_unknown_retraction_lists_valid_ones(factory, valid):
    with pytest.raises(ValueError, match=rf"unknown retraction 'qr'; valid retractions are {valid}$"):
        factory("qr")


@pytest.mark.parametrize("group", [SO3("cayley"), SE2("cayley")], ids=["SO3", "SE2"])
def test_cayley_inverse_at_a_rotation_by_pi_raises(group):
    g0 = np.eye(3)
    g1 = _rot_z(np.pi)
    with pytest.raises(
        RetractionDomainError, match=r"inverse Cayley map is singular at batch index \[\]: .*a rotation by pi"
    ):
        group.inverse_retract(g0, g1)
    with pytest.raises(RetractionDomainError, match=r"use retraction='exp'"):
        group.inverse_retract_jacobians(g0, g1)


def test_cayley_inverse_names_the_batch_index_and_is_a_value_error():
    g1 = np.stack([_rot_z(0.1), _rot_z(np.pi), _rot_z(-0.2)])
    with pytest.raises(ValueError, match=r"singular at batch index \[1\]"):
        SO3("cayley").inverse_retract(np.eye(3), g1)
    SO3("cayley").inverse_retract(np.eye(3), _rot_z(np.pi - 1e-3))  # close but fine


# ------------------------------------------------------- other manifolds
def test_euclidean_errors():
    with pytest.raises(ValueError, match=r"has shape \(\.\.\., 3\), got \(2,\)"):
        Euclidean(3).check_point(np.zeros(2))
    with pytest.raises(ValueError, match="non-finite entries"):
        Euclidean(2).check_point([0.0, np.nan])
    with pytest.raises(ValueError, match="dimension must be a positive integer, got 0"):
        Euclidean(0)


def test_product_errors():
    P = ProductManifold(SO3(), Euclidean(2))
    with pytest.raises(ValueError, match="a tuple of 2 factor points, got tuple of length 1"):
        P.check_point((np.eye(3),))
    with pytest.raises(ValueError, match=r"q\[1\]: a point of Euclidean\(2\) has shape"):
        P.check_point((np.eye(3), np.zeros(3)))
    with pytest.raises(ValueError, match="one or more Manifold instances"):
        ProductManifold()
