"""The laws can fail: deliberately wrong implementations are caught.

Each class breaks exactly one thing -- a transposed, sign-flipped or
mis-trivialized Jacobian, a fused path off by 1 %, a mis-declared symmetry,
a NaN derivative, ... -- and the law meant to guard it must raise an
AssertionError naming it; a Jacobian bug is caught separately by autodiff,
by finite differences and by the perturbation test, also near a
singularity (the perturbation floor is measured there, not fixed). The
correct parents pass the same laws in ``test_manifold_laws.py``.
"""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from manifold_dirac._manifolds import SE2, Euclidean, ProductManifold, register_retraction
from manifold_dirac._manifolds.se2 import SE2Cayley, SE2Exp, SO2xR2
from manifold_dirac.testing import (
    check_adjoint,
    check_ambient_tangent,
    check_batch_consistency,
    check_derivatives_finite,
    check_exp_log,
    check_fused_equals_composition,
    check_hat_vee,
    check_inverse_jacobians_autodiff,
    check_inverse_jacobians_fd,
    check_inverse_jacobians_perturbation,
    check_inverse_retract_round_trip,
    check_jacobians_autodiff,
    check_jacobians_fd,
    check_jacobians_perturbation,
    check_manifold_laws,
    check_symmetry,
    draw_sample,
)

BATCH = (3, 1, 2)


def _T(a):
    return jnp.swapaxes(a, -1, -2)


class SE2TransposedJ1(SE2):
    def retract_with_inverse_jacobians(self, q0, xi):
        q1, J0, J1 = super().retract_with_inverse_jacobians(q0, xi)
        return q1, J0, _T(J1)


class SE2SignFlippedJ0(SE2):
    def retract_with_inverse_jacobians(self, q0, xi):
        q1, J0, J1 = super().retract_with_inverse_jacobians(q0, xi)
        return q1, -J0, J1


class SE2WrongFrameJq(SE2):
    """J_q = Ad_{tau(xi)}: the perturbation read in the frame at q instead of at q1."""

    def retract_with_jacobians(self, q, xi):
        q1, _, Jxi = super().retract_with_jacobians(q, xi)
        return q1, self.adjoint(self.retraction.tau(self, xi)), Jxi


class SE2LeftJxi(SE2):
    """J_xi = J_l (the spatial, right-trivialized Jacobian) instead of J_r."""

    def retract_with_jacobians(self, q, xi):
        q1, Jq, _ = super().retract_with_jacobians(q, xi)
        return q1, Jq, jnp.linalg.inv(self.retraction.left_jacobian_inv(self, xi))


class ProductWithCoupling(ProductManifold):
    def retract_with_inverse_jacobians(self, q0, xi):
        q1, J0, J1 = super().retract_with_inverse_jacobians(q0, xi)
        return q1, J0, J1.at[..., 0, 3].add(0.1)  # a coupling the product retraction does not have


JACOBIAN_BUGS = [
    (SE2TransposedJ1("so2xr2"), "J1", "inverse"),
    (SE2SignFlippedJ0("cayley"), "J0", "inverse"),
    (SE2WrongFrameJq("so2xr2"), "J_q", "forward"),
    (SE2LeftJxi("so2xr2"), "J_xi", "forward"),
    (ProductWithCoupling(SE2("so2xr2"), Euclidean(1)), "J1", "inverse"),
]
CHECKS = {
    ("inverse", "autodiff"): check_inverse_jacobians_autodiff,
    ("inverse", "fd"): check_inverse_jacobians_fd,
    ("inverse", "perturbation"): check_inverse_jacobians_perturbation,
    ("forward", "autodiff"): check_jacobians_autodiff,
    ("forward", "fd"): check_jacobians_fd,
    ("forward", "perturbation"): check_jacobians_perturbation,
}
EXPECTED = {
    "autodiff": "jax.jacfwd of its definition",
    "fd": "central finite differences",
    "perturbation": "remainder/s does not fall",
}


@pytest.mark.parametrize("regime", ["generic", "near_singular"])
@pytest.mark.parametrize("how", ["autodiff", "fd", "perturbation"])
@pytest.mark.parametrize(
    "manifold,which,kind", JACOBIAN_BUGS, ids=[type(b[0]).__name__ for b in JACOBIAN_BUGS]
)
def test_wrong_jacobian_is_caught(manifold, which, kind, how, regime):
    q, xi = draw_sample(manifold, 1, BATCH, regime)
    with pytest.raises(AssertionError, match=rf"{which}\b.*{EXPECTED[how]}"):
        CHECKS[kind, how](manifold, q, xi)


# ------------------------------------------------------ fused paths off by 1 %
class SE2OnePercent(SE2):
    pass


@register_retraction(SE2OnePercent)
class SE2ExpOnePercentJ1(SE2Exp):
    name = "exp-1%-J1"

    def tau_with_inverse_jacobians(self, G, xi):
        t, J0, J1 = super().tau_with_inverse_jacobians(G, xi)
        return t, J0, 1.01 * J1


@register_retraction(SE2OnePercent)
class SE2ExpOnePercentJxi(SE2Exp):
    name = "exp-1%-Jxi"

    def tau_with_jacobians(self, G, xi):
        t, Jq, Jxi = super().tau_with_jacobians(G, xi)
        return t, Jq, Jxi.at[..., 1, 0].multiply(1.01)


@pytest.mark.parametrize(
    "retraction,which,law",
    [
        ("exp-1%-J1", r"J1 vs right_jacobian_inv", check_fused_equals_composition),
        ("exp-1%-J1", r"J1 = dxi/dq1 disagrees with jax.jacfwd", check_inverse_jacobians_autodiff),
        ("exp-1%-Jxi", r"J_xi vs right_jacobian", check_fused_equals_composition),
        ("exp-1%-Jxi", r"J_xi of R_q\(xi\) disagrees with jax.jacfwd", check_jacobians_autodiff),
    ],
)
def test_a_fused_path_off_by_one_percent_is_caught(retraction, which, law):
    m = SE2OnePercent(retraction)
    q, xi = draw_sample(m, 2, BATCH, "generic")
    with pytest.raises(AssertionError, match=which):
        law(m, q, xi)


# ----------------------------------------------------------- other laws
def test_spatial_instead_of_body_ambient_tangent_is_caught():
    class SE2SpatialAmbient(SE2):
        def ambient_tangent(self, q, eta):
            return self.hat(eta) @ q

    m = SE2SpatialAmbient()
    q, xi = draw_sample(m, 0, BATCH, "generic")
    with pytest.raises(AssertionError, match=r"ambient_tangent .* vs d/de R_q\(e eta\) by jax.jvp"):
        check_ambient_tangent(m, q, xi)


def test_batch_mixing_is_caught():
    class EuclideanMixing(Euclidean):
        def retract(self, q, xi):  # leaks information between batch elements
            return q + xi + 1e-3 * jnp.mean(xi, axis=tuple(range(jnp.ndim(xi) - 1)), keepdims=True)

    m = EuclideanMixing(3)
    q, xi = draw_sample(m, 0, BATCH, "generic")
    with pytest.raises(
        AssertionError, match=r"retract output 0: batched vs unbatched calls: mismatch at batch index"
    ):
        check_batch_consistency(m, q, xi)


def test_inexact_inverse_is_caught():
    class SE2SloppyInverse(SE2):
        def inverse_retract(self, q0, q1):
            return super().inverse_retract(q0, q1) * (1 + 1e-7)

    class SE2SloppyLog(SE2):
        def log(self, g):
            return super().log(g) * (1 + 1e-7)

    m = SE2SloppyInverse("so2xr2")
    q, xi = draw_sample(m, 0, BATCH, "generic")
    with pytest.raises(AssertionError, match=r"R_q\^-1\(R_q\(xi\)\) != xi at batch index \[0, 0, 0\]"):
        check_inverse_retract_round_trip(m, q, xi)
    with pytest.raises(AssertionError, match=r"exp\(log\(g\)\) = g"):
        check_exp_log(SE2SloppyLog(), q, xi)


class SE2Claims(SE2):
    pass


@register_retraction(SE2Claims)
class ClaimsSymmetricSO2xR2(SO2xR2):
    name = "so2xr2-claims-symmetric"
    symmetric = True


@register_retraction(SE2Claims)
class ClaimsAsymmetricCayley(SE2Cayley):
    name = "cayley-claims-asymmetric"
    symmetric = False


@pytest.mark.parametrize(
    "retraction,message",
    [
        ("so2xr2-claims-symmetric", r"declared symmetric, but R_q1\^-1\(q0\) \+ R_q0\^-1\(q1\) = "),
        ("cayley-claims-asymmetric", r"declared not symmetric, but R_q1\^-1\(q0\) = -R_q0\^-1\(q1\) holds"),
    ],
)
def test_a_misdeclared_symmetry_is_caught(retraction, message):
    m = SE2Claims(retraction)
    q, xi = draw_sample(m, 0, BATCH, "generic")
    with pytest.raises(AssertionError, match=message):
        check_symmetry(m, q, xi)


def test_a_nan_derivative_at_zero_is_caught():
    class SE2SingleWhere(SE2):
        """``J_r^{-1}`` with ``h = (w/2) cot(w/2)`` behind a single ``where``: NaN gradient at 0."""

        def exp_right_jacobian_inv(self, xi):
            J = super().exp_right_jacobian_inv(xi)
            w = xi[..., 0]
            h = jnp.where(w == 0, 1.0, 0.5 * w / jnp.tan(0.5 * w))
            return J.at[..., 1, 1].set(h).at[..., 2, 2].set(h)

    m = SE2SingleWhere()
    q, xi = draw_sample(m, 0, BATCH, "near_zero")
    with pytest.raises(AssertionError, match=r"right_jacobian_inv: jax.grad at 0"):
        check_derivatives_finite(m, q, xi)


def test_group_law_bugs_are_caught():
    class SE2TransposedAdjoint(SE2):
        def adjoint(self, g):
            return _T(super().adjoint(g))

    class SE2WrongVee(SE2):
        def vee(self, X):
            return -super().vee(X)

    q, xi = draw_sample(SE2(), 2, BATCH, "generic")
    with pytest.raises(AssertionError, match=r"hat\(Ad_g x\) = g hat\(x\) g\^-1"):
        check_adjoint(SE2TransposedAdjoint(), q, xi)
    with pytest.raises(AssertionError, match=r"vee\(hat\(x\)\) = x"):
        check_hat_vee(SE2WrongVee(), q, xi)


def test_check_manifold_laws_names_the_failing_law():
    with pytest.raises(
        AssertionError, match=r"law 'inverse_jacobians_autodiff' failed for SE2TransposedJ1.*seed=0"
    ):
        check_manifold_laws(
            SE2TransposedJ1("so2xr2"),
            seeds=[0],
            batch_shapes=[BATCH],
            regimes=["generic"],
            laws=["inverse_jacobians_autodiff"],
        )
