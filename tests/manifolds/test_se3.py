"""SE(3) beyond the shared laws: closed forms against scipy, coordinates, Euler angles and quaternions in
scipy's conventions, and a fused path off by 1 %."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from scipy.spatial.transform import Rotation

from manifold_dirac import SE3, SO3
from manifold_dirac._manifolds import Cayley, register_retraction
from manifold_dirac._manifolds.se3 import SE3Exp
from manifold_dirac.testing import (
    check_fused_equals_composition,
    check_inverse_jacobians_autodiff,
    check_inverse_jacobians_perturbation,
    check_jacobians_perturbation,
    draw_sample,
)

SEQUENCES = [a + b + c for a in "xyz" for b in "xyz" for c in "xyz" if a != b and b != c]


@pytest.mark.slow
def test_exp_and_log_against_the_matrix_exponential():
    G = SE3()
    xi = np.random.default_rng(0).standard_normal((20, 6)) * np.array([1.0, 1, 1, 3, 3, 3])
    for x in xi:
        ref = scipy.linalg.expm(np.asarray(G.hat(x)))
        np.testing.assert_allclose(np.asarray(G.exp(x)), ref, atol=1e-13)
    np.testing.assert_allclose(np.asarray(G.log(G.exp(xi))), xi, atol=1e-12)
    # every retraction reads (w, v): angular velocity first; a pure v moves the origin along R v
    q = G.from_coordinates([1.0, 2.0, 3.0, 0.0, 0.0, np.pi / 2])
    for r in SE3.retraction_names():
        moved = np.asarray(SE3(r).retract(q, jnp.array([0.0, 0, 0, 1.0, 0, 0])))
        np.testing.assert_allclose(moved[:3, 3], [1.0, 3.0, 3.0], atol=1e-15)


def test_coordinates_round_trip_and_meaning():
    G = SE3()
    q = G.random_point(np.random.default_rng(1), (5,))
    c = G.to_coordinates(q)
    np.testing.assert_allclose(np.asarray(G.from_coordinates(c)), np.asarray(q), atol=1e-14)
    np.testing.assert_allclose(np.asarray(c[:, :3]), np.asarray(q)[:, :3, 3], atol=0)
    np.testing.assert_allclose(np.asarray(c[:, 3:]), Rotation.from_matrix(np.asarray(q)[:, :3, :3]).as_rotvec(),
                               atol=1e-13)
    with pytest.raises(ValueError, match=r"\(x, y, z, rx, ry, rz\)"):
        G.from_coordinates(np.zeros(7))


def test_position_quaternion_matches_scipy():
    G = SE3()
    rot = Rotation.random(8, random_state=2)
    x = np.random.default_rng(2).standard_normal((8, 3))
    quat = rot.as_quat()  # scalar last (x, y, z, w)
    q = G.from_position_quaternion(np.concatenate([x, quat], -1))
    np.testing.assert_allclose(np.asarray(q)[:, :3, :3], rot.as_matrix(), atol=1e-15)
    back = np.asarray(G.to_position_quaternion(q))
    np.testing.assert_allclose(back[:, :3], x, atol=0)
    sign = np.sign(quat[:, 3:])  # ours has w >= 0; q and -q are the same rotation
    np.testing.assert_allclose(back[:, 3:], sign * quat, atol=1e-15)


@pytest.mark.parametrize("seq", SEQUENCES + [s.upper() for s in SEQUENCES])
def test_euler_angles_match_scipy(seq):
    rot = Rotation.random(16, random_state=3)
    angles = rot.as_euler(seq)
    np.testing.assert_allclose(np.asarray(SO3.from_euler(seq, angles)), rot.as_matrix(), atol=1e-14)
    np.testing.assert_allclose(np.asarray(SO3.as_euler(rot.as_matrix(), seq)), angles, atol=1e-13)
    np.testing.assert_allclose(np.asarray(SO3.as_euler(rot.as_matrix(), seq, degrees=True)),
                               rot.as_euler(seq, degrees=True), atol=1e-11)
    # gimbal lock: scipy's choice (third angle 0 for extrinsic, first for intrinsic)
    mids = (0.0, np.pi) if seq[0].lower() == seq[2].lower() else (np.pi / 2, -np.pi / 2)
    for mid in mids:
        locked = Rotation.from_euler(seq, [[0.3, mid, -0.7], [2.0, mid, 1.0]])
        with pytest.warns(UserWarning, match="Gimbal lock"):
            ref = locked.as_euler(seq)
        got = np.asarray(SO3.as_euler(locked.as_matrix(), seq))
        np.testing.assert_allclose(np.angle(np.exp(1j * (got - ref))), 0.0, atol=1e-7)
        np.testing.assert_allclose(np.asarray(SO3.from_euler(seq, got)), locked.as_matrix(), atol=1e-7)


@pytest.mark.slow
def test_se3_euler_and_bad_sequences():
    G = SE3()
    c = np.array([1.0, -2.0, 0.5, 10.0, 20.0, 30.0])
    q = G.from_position_euler(c, "ZYX", degrees=True)
    np.testing.assert_allclose(np.asarray(q)[:3, :3], Rotation.from_euler("ZYX", c[3:], degrees=True).as_matrix(),
                               atol=1e-15)
    np.testing.assert_allclose(np.asarray(G.to_position_euler(q, "ZYX", degrees=True)), c, atol=1e-12)
    for bad in ("xyx ", "xxy", "xYz", "abc", 3):
        with pytest.raises(ValueError, match="Euler sequence"):
            SO3.from_euler(bad, np.zeros(3))
    # jit- and grad-able: d(yaw)/d(angles) through as_euler(from_euler(.)) is the identity
    J = jax.jacfwd(lambda a: SO3.as_euler(SO3.from_euler("ZYX", a), "ZYX"))(jnp.array([0.3, 0.2, -0.4]))
    np.testing.assert_allclose(np.asarray(J), np.eye(3), atol=1e-12)


def test_unknown_retraction_lists_the_valid_ones_and_how_to_add_one():
    with pytest.raises(ValueError, match=r"'exp', 'cayley', 'so3xr3'.*register_retraction\(SE3\)"):
        SE3("screw")


# ------------------------------------------------------- a fused path off by 1 %
class _SE3ExpOnePercent(SE3Exp):
    name = "exp-fused-1pc"

    def tau_with_jacobians(self, G, xi):
        t, Jq, Jxi = super().tau_with_jacobians(G, xi)
        return t, Jq, Jxi.at[..., 3, 0].multiply(1.01)


class SE3Broken(SE3):
    pass


register_retraction(SE3Broken)(_SE3ExpOnePercent)


@pytest.mark.slow
def test_a_fused_se3_path_off_by_one_percent_is_caught():
    G = SE3Broken("exp-fused-1pc")
    q, xi = draw_sample(G, 0, (3,), "generic")
    check_inverse_jacobians_autodiff(G, q, xi)  # the other fused path is untouched
    with pytest.raises(AssertionError, match="tau_with_jacobians: J_xi vs right_jacobian"):
        check_fused_equals_composition(G, q, xi)


# ------------------------------------- the generic Cayley near its singularity (SO(3))
class SO3GenericCayley(SO3):
    """SO(3) with the generic matrix Cayley of ``MatrixLieGroup`` (solves instead of closed forms)."""


register_retraction(SO3GenericCayley)(Cayley)


class _CayleyJ0OffByOnePercent(Cayley):
    name = "cayley-j0-1pc"

    def tau_with_inverse_jacobians(self, G, xi):
        t, J0, J1 = super().tau_with_inverse_jacobians(G, xi)
        return t, 1.01 * J0, J1


register_retraction(SO3GenericCayley)(_CayleyJ0OffByOnePercent)


@pytest.mark.slow
def test_generic_cayley_passes_the_perturbation_laws_on_304_near_singular_samples():
    """The floor of the perturbation law is measured on f itself, so the round-off of the generic solves
    near the singularity (rotations approaching pi) is not taken for a wrong Jacobian ..."""
    G = SO3GenericCayley("cayley")
    assert type(G.retraction) is Cayley
    for seed in range(38):  # 8 at a time: every call reuses the one compiled law program
        q, xi = draw_sample(G, seed, (8,), "near_singular")
        check_inverse_jacobians_perturbation(G, q, xi)
        check_jacobians_perturbation(G, q, xi)


def test_a_one_percent_wrong_jacobian_still_fails_near_the_singularity():
    """... while a Jacobian 1 % off still fails there."""
    G = SO3GenericCayley("cayley-j0-1pc")
    q, xi = draw_sample(G, 11, (8,), "near_singular")
    with pytest.raises(AssertionError, match="the Jacobian is wrong"):
        check_inverse_jacobians_perturbation(G, q, xi)
