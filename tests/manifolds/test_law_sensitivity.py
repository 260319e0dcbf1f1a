"""The laws can fail: deliberately wrong implementations are caught.

Each subclass breaks exactly one thing (a transposed or sign-flipped
Jacobian, the wrong trivialization, ...); the law meant to guard it must
raise an AssertionError naming it -- by finite differences *and* by the
perturbation test separately, for the Jacobian laws.
"""

from __future__ import annotations

import numpy as np
import pytest

from manifold_dirac.manifolds import SE2, SO3, Euclidean, ProductManifold
from manifold_dirac.testing import (
    check_adjoint,
    check_ambient_tangent,
    check_batch_consistency,
    check_exp_log,
    check_hat_vee,
    check_inverse_retract_jacobians_fd,
    check_inverse_retract_jacobians_perturbation,
    check_inverse_retract_round_trip,
    check_inverse_retract_with_jacobians,
    check_manifold_laws,
    check_retract_jacobians_fd,
    check_retract_jacobians_perturbation,
    check_retraction_differential_at_zero,
    draw_sample,
)


def _T(a):
    return np.swapaxes(a, -1, -2)


class SO3TransposedJ1(SO3):
    def inverse_retract_jacobians(self, q0, q1):
        J0, J1 = super().inverse_retract_jacobians(q0, q1)
        return J0, _T(J1)


class SO3SignFlippedJ0(SO3):
    def inverse_retract_jacobians(self, q0, q1):
        J0, J1 = super().inverse_retract_jacobians(q0, q1)
        return -J0, J1


class SE2WrongJq(SE2):
    """J_q = Ad_{tau(xi)} instead of Ad_{tau(xi)^{-1}}."""

    def retract_jacobians(self, q, xi):
        _, Jxi = super().retract_jacobians(q, xi)
        return np.broadcast_to(self.adjoint(self._tau(np.asarray(xi))), Jxi.shape), Jxi


class SE2TransposedJxi(SE2):
    def retract_jacobians(self, q, xi):
        Jq, Jxi = super().retract_jacobians(q, xi)
        return Jq, _T(Jxi)


class SO3CayleyWithExpJ1(SO3):
    """Cayley retraction but the exp Jacobian J_r^{-1}: a plausible mix-up."""

    def inverse_retract_jacobians(self, q0, q1):
        J0, _ = super().inverse_retract_jacobians(q0, q1)
        return J0, self.exp_right_jacobian_inv(self.inverse_retract(q0, q1))


class ProductWithBrokenFactor(ProductManifold):
    def inverse_retract_jacobians(self, q0, q1):
        J0, J1 = super().inverse_retract_jacobians(q0, q1)
        J1 = J1.copy()
        J1[..., 0, 1] += 0.1  # a coupling the product retraction does not have
        return J0, J1


JACOBIAN_BUGS = [
    (
        SO3TransposedJ1("exp"),
        "J1",
        check_inverse_retract_jacobians_fd,
        check_inverse_retract_jacobians_perturbation,
    ),
    (
        SO3SignFlippedJ0("exp"),
        "J0",
        check_inverse_retract_jacobians_fd,
        check_inverse_retract_jacobians_perturbation,
    ),
    (
        SO3SignFlippedJ0("cayley"),
        "J0",
        check_inverse_retract_jacobians_fd,
        check_inverse_retract_jacobians_perturbation,
    ),
    (
        SO3CayleyWithExpJ1("cayley"),
        "J1",
        check_inverse_retract_jacobians_fd,
        check_inverse_retract_jacobians_perturbation,
    ),
    (SE2WrongJq("exp"), "J_q", check_retract_jacobians_fd, check_retract_jacobians_perturbation),
    (SE2TransposedJxi("so2xr2"), "J_xi", check_retract_jacobians_fd, check_retract_jacobians_perturbation),
    (
        ProductWithBrokenFactor(SO3(), Euclidean(2)),
        "J1",
        check_inverse_retract_jacobians_fd,
        check_inverse_retract_jacobians_perturbation,
    ),
]


@pytest.mark.parametrize("regime", ["generic", "near_singular"])
@pytest.mark.parametrize("batch_shape", [(), (3, 2)])
@pytest.mark.parametrize("check", ["fd", "perturbation"])
@pytest.mark.parametrize(
    "manifold,which,fd,perturbation",
    JACOBIAN_BUGS,
    ids=[f"{type(b[0]).__name__}-{b[0].retraction}" for b in JACOBIAN_BUGS],
)
def test_wrong_jacobian_is_caught(manifold, which, fd, perturbation, check, batch_shape, regime):
    q, xi = draw_sample(manifold, 1, batch_shape, regime)
    law = fd if check == "fd" else perturbation
    expected = "central finite differences" if check == "fd" else "remainder/s does not fall"
    with pytest.raises(AssertionError, match=rf"{which}\b.*{expected}"):
        law(manifold, q, xi)


def test_correct_jacobians_pass_the_same_checks():
    # the control: the unbroken parents pass exactly the checks above
    for m in (SO3("exp"), SO3("cayley"), SE2("exp"), SE2("so2xr2"), ProductManifold(SO3(), Euclidean(2))):
        for regime in ("generic", "near_singular"):
            q, xi = draw_sample(m, 1, (3, 2), regime)
            for law in (
                check_inverse_retract_jacobians_fd,
                check_inverse_retract_jacobians_perturbation,
                check_retract_jacobians_fd,
                check_retract_jacobians_perturbation,
            ):
                law(m, q, xi)


def test_wrong_sphere_jacobian_is_caught():
    Sphere2 = pytest.importorskip("manifold_dirac.manifolds.geomstats_adapter").Sphere2

    class SphereTransposedJ0(Sphere2):
        def inverse_retract_jacobians(self, q0, q1):
            J0, J1 = super().inverse_retract_jacobians(q0, q1)
            return _T(J0), J1

    m = SphereTransposedJ0()
    q, xi = draw_sample(m, 4, (3,), "generic")
    with pytest.raises(AssertionError, match="J0 .*central finite differences"):
        check_inverse_retract_jacobians_fd(m, q, xi)
    with pytest.raises(AssertionError, match="J0 .*remainder/s does not fall"):
        check_inverse_retract_jacobians_perturbation(m, q, xi)


def test_jacobians_at_zero_are_checked():
    class SO3DoubledJxi(SO3):
        def retract_jacobians(self, q, xi):
            Jq, Jxi = super().retract_jacobians(q, xi)
            return Jq, 2.0 * Jxi

    m = SO3DoubledJxi()
    q, _ = draw_sample(m, 0, (2,), "generic")
    with pytest.raises(AssertionError, match=r"J_xi\(q, 0\) = I"):
        check_retraction_differential_at_zero(m, q)


def test_left_instead_of_right_trivialization_is_caught():
    class SO3LeftAmbient(SO3):
        def ambient_tangent(self, q, eta):
            return self.hat(eta) @ q  # spatial, not body, velocity

    m = SO3LeftAmbient()
    q, xi = draw_sample(m, 0, (3,), "generic")
    with pytest.raises(AssertionError, match="ambient_tangent .* vs d/de R_q"):
        check_ambient_tangent(m, q, xi)


def test_ambient_tangent_dropping_imaginary_part_is_caught():
    class EuclideanReal(Euclidean):
        def ambient_tangent(self, q, eta):
            return np.real(super().ambient_tangent(q, eta))

    m = EuclideanReal(2)
    q, xi = draw_sample(m, 0, (), "generic")
    with pytest.raises(AssertionError, match="imaginary part"):
        check_ambient_tangent(m, q, xi)


def test_inconsistent_combined_method_is_caught():
    class SO3Swapped(SO3):
        def inverse_retract_with_jacobians(self, q0, q1):
            xi, J0, J1 = super().inverse_retract_with_jacobians(q0, q1)
            return xi, J1, J0

    m = SO3Swapped()
    q, xi = draw_sample(m, 0, (2,), "generic")
    with pytest.raises(AssertionError, match="J0 vs inverse_retract_jacobians"):
        check_inverse_retract_with_jacobians(m, q, xi)


def test_batch_mixing_is_caught():
    class EuclideanMixing(Euclidean):
        def retract(self, q, xi):
            xi = np.asarray(xi)
            if xi.ndim > 1:  # leaks information between batch elements
                xi = xi + 1e-3 * xi.mean(axis=tuple(range(xi.ndim - 1)), keepdims=True)
            return q + xi

    m = EuclideanMixing(3)
    q, xi = draw_sample(m, 0, (3, 2), "generic")
    with pytest.raises(
        AssertionError, match=r"retract output 0 at batch index \[0, 0\], batched vs unbatched"
    ):
        check_batch_consistency(m, q, xi)


def test_inexact_inverse_is_caught():
    class SO3SloppyLog(SO3):
        def log(self, g):
            return super().log(g) * (1 + 1e-7)

    m = SO3SloppyLog()
    q, xi = draw_sample(m, 0, (2,), "generic")
    with pytest.raises(AssertionError, match=r"R_q\^-1\(R_q\(xi\)\) != xi at batch index \[0\]"):
        check_inverse_retract_round_trip(m, q, xi)


def test_group_law_bugs_are_caught():
    class SO3TransposedAdjoint(SO3):
        def adjoint(self, g):
            return _T(np.asarray(g))

    class SO3WrongVee(SO3):
        def vee(self, X):
            return -super().vee(X)

    class SE2BadLog(SE2):
        def log(self, g):
            out = super().log(g)
            return out * np.array([1.0, 1.0, 0.5])

    q, xi = draw_sample(SO3(), 2, (3,), "generic")
    with pytest.raises(AssertionError, match=r"hat\(Ad_g x\) = g hat\(x\) g\^-1"):
        check_adjoint(SO3TransposedAdjoint(), q, xi)
    with pytest.raises(AssertionError, match=r"vee\(hat\(x\)\) = x"):
        check_hat_vee(SO3WrongVee(), q, xi)
    g, xi2 = draw_sample(SE2(), 2, (3,), "generic")
    with pytest.raises(AssertionError, match=r"exp\(log\(g\)\) = g"):
        check_exp_log(SE2BadLog(), g, xi2)


def test_check_manifold_laws_names_the_failing_law():
    with pytest.raises(AssertionError, match=r"law 'inverse_retract_jacobians_fd' failed for .*seed=0"):
        check_manifold_laws(SO3TransposedJ1(), seeds=[0], batch_shapes=[()], regimes=["generic"])
