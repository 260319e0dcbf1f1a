"""Induced (9), interaction (26) structures and the interconnection theorem (32)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from manifold_dirac.dirac import (
    LinearDirac,
    LinearSubspace,
    block_diag_forms,
    canonical_two_form,
    constraint_forms_of_intersection,
    induced,
    interaction,
    interconnect_structures,
    lagrange_dirac_residual,
)

from .dirac_strategies import TwoSystems, forms, random_kernel_vector, two_systems


def _flipped_induced(A: np.ndarray) -> LinearDirac:
    """(9) with the sign of alpha_p flipped: alpha_p = -v_q (deliberately wrong)."""
    m, n = A.shape
    _, s, vt = np.linalg.svd(A, full_matrices=True) if m else (None, np.zeros(0), np.eye(n))
    r = int(np.sum(s > 1e-10))
    e = vt[r:]  # rows span ker A; e (a_q + v_p) = 0  <=>  a_q + v_p in row A
    z = np.zeros
    eqs = np.vstack(
        [
            np.hstack([A, z((m, n)), z((m, n)), z((m, n))]),
            np.hstack([np.eye(n), z((n, n)), z((n, n)), np.eye(n)]),  # alpha_p + v_q = 0
            np.hstack([z((n - r, n)), e, e, z((n - r, n))]),
        ]
    )
    return LinearDirac.from_equations(eqs)


@given(forms())
def test_induced_is_dirac_and_is_eq_4_with_the_canonical_form(data):
    a, rng = data
    n = a.shape[1]
    d = induced(a)
    assert d.space_dim == 2 * n and d.dim == 2 * n and d.is_dirac()
    assert d.orthogonal().equals(d)
    # (6): (4) with Omega and Delta_{T*Q} = ker [A, 0] (7)
    assert d.equals(LinearDirac.from_two_form(canonical_two_form(n), np.hstack([a, np.zeros_like(a)])))
    # an element built from (9) directly
    vq = random_kernel_vector(a, rng)
    vp = rng.standard_normal(n)
    mu = rng.standard_normal(a.shape[0])
    assert d.contains(np.concatenate([vq, vp]), np.concatenate([-vp + a.T @ mu, vq]))
    # associated distribution (2) is Delta_{T*Q}, and the two-form (3) is Omega on it
    tf = d.two_form()
    assert np.allclose(tf.matrix, tf.basis.T @ canonical_two_form(n) @ tf.basis, atol=1e-10)


@given(forms())
def test_flipped_sign_of_alpha_p_is_detected(data):
    """The tests can fail: (9) with alpha_p = -v_q is not Dirac and not D_{Delta_Q}."""
    a, _rng = data
    wrong = _flipped_induced(a)
    assert wrong.dim == 2 * a.shape[1]  # right dimension ...
    if a.shape[0] == a.shape[1]:  # Delta_Q = 0: v_q = 0 and the sign is invisible
        assert wrong.equals(induced(a))
        return
    assert not wrong.is_isotropic()  # ... but not isotropic
    assert not wrong.is_dirac()
    assert not wrong.equals(induced(a))
    assert not wrong.orthogonal().equals(wrong)


@given(forms())
def test_interaction_is_dirac_with_zero_two_form(data):
    s, rng = data
    n = s.shape[1]
    d = interaction(s)
    assert d.is_dirac() and d.dim == 2 * n
    assert np.allclose(d.two_form().matrix, 0.0)  # "the associated two-form is the zero form"
    vq = random_kernel_vector(s, rng)
    vp = rng.standard_normal(n)
    assert d.contains(
        np.concatenate([vq, vp]), np.concatenate([s.T @ rng.standard_normal(s.shape[0]), np.zeros(n)])
    )
    assert not d.contains(np.concatenate([vq, vp]), np.concatenate([np.zeros(n), np.ones(n)]))


@given(two_systems())
def test_direct_sum_of_induced_is_induced_of_direct_sum(sys: TwoSystems):
    d1, d2 = induced(sys.A1), induced(sys.A2)
    a = block_diag_forms(sys.A1, sys.A2)
    s = d1.direct_sum(d2, blocks=2)  # laid out on T*(Q1 x Q2): ((v_q1, v_q2), (v_p1, v_p2))
    assert s.is_dirac()
    assert s.equals(induced(a))
    # the literal ordering of (27) is a different (permuted) subspace in general
    literal = d1.direct_sum(d2)
    assert literal.is_dirac() and literal.dim == s.dim


@given(two_systems())
def test_interconnection_theorem_32(sys: TwoSystems):
    a = block_diag_forms(sys.A1, sys.A2)
    lhs = interconnect_structures(induced(sys.A1), induced(sys.A2), sys.S)
    f = constraint_forms_of_intersection(a, sys.S)
    rhs = induced(f.forms)
    assert lhs.is_dirac()
    assert lhs.dim == rhs.dim == 2 * sys.n
    assert lhs.includes(rhs) and rhs.includes(lhs)
    assert lhs.equals(induced(np.vstack([a, sys.S])))
    assert lhs.associated_distribution().equals(induced(f.forms).associated_distribution())


def test_interconnection_with_nearly_dependent_forms():
    """A case hypothesis found: sigma_min([A; S]) = 1.3e-4 costs ~8 digits, not more."""
    a1 = np.array(
        [
            [2.04091912, -2.55566503, 0.41809885],
            [-0.56776961, -0.45264929, -0.21559716],
            [-2.01998613, -0.23193238, -0.86521308],
        ]
    )
    a2 = np.array(
        [
            [3.32299952, 0.22578661, -0.35263079, -0.28128742],
            [-0.66804635, -1.05515055, -0.39080098, 0.48194539],
        ]
    )
    s = np.array(
        [
            [-0.23855361, 0.9577587, -0.19980213, 0.02425957, 1.54582085, 0.54510552, -0.50522874],
            [-0.18283897, 0.54052513, 1.93508803, -0.26962033, -0.24355868, 1.0023136, -0.88645994],
        ]
    )
    lhs = interconnect_structures(induced(a1), induced(a2), s)
    rhs = induced(np.vstack([block_diag_forms(a1, a2), s]))
    assert lhs.dim == rhs.dim == 14
    assert lhs.is_dirac(tol=1e-6) and lhs.equals(rhs, tol=1e-6)
    assert rhs.is_dirac()  # built directly from the forms: no loss


@given(two_systems())
def test_trivial_interaction_is_the_identity(sys: TwoSystems):
    d = induced(sys.A1).direct_sum(induced(sys.A2), blocks=2)
    assert d.tensor(interaction(np.zeros((0, sys.n)))).equals(d)
    assert interconnect_structures(induced(sys.A1), induced(sys.A2), np.zeros((0, sys.n))).equals(d)


@given(two_systems(regular=True))
def test_forms_of_the_intersection_regular(sys: TwoSystems):
    a = block_diag_forms(sys.A1, sys.A2)
    f = constraint_forms_of_intersection(a, sys.S, strict=True)
    m, r = a.shape[0], sys.S.shape[0]
    assert f.regular and f.message == ""
    assert f.rank == m + r and f.dim == sys.n - m - r == f.expected_dim
    assert f.forms.shape == (m + r, sys.n)
    delta12 = LinearSubspace.from_equations(a)
    sigma = LinearSubspace.from_equations(sys.S)
    assert f.distribution.equals(delta12.intersect(sigma))  # (31)


def test_rank_drop_is_reported_and_raises_when_strict():
    a1 = np.array([[1.0, 0.0]])
    a2 = np.array([[0.0, 1.0, 0.0]])
    a = block_diag_forms(a1, a2)  # 2 x 5
    # the second interaction form is the first subsystem's constraint: redundant
    s = np.array([[1.0, 0.0, 0.0, 0.0, -1.0], [2.0, 0.0, 0.0, 0.0, 0.0]])
    f = constraint_forms_of_intersection(a, s)
    assert not f.regular
    assert f.rank == 3 and f.dim == 2 and f.expected_dim == 1
    assert f.forms.shape == (3, 5) and np.linalg.matrix_rank(f.forms) == 3
    assert f.selected == (0, 1, 2)
    with pytest.raises(ValueError, match="combinations of the subsystem constraints"):
        constraint_forms_of_intersection(a, s, strict=True)
    # the theorem (32) still holds pointwise with the reduced forms
    assert interconnect_structures(induced(a1), induced(a2), s).equals(induced(f.forms))


def test_dependent_declared_forms_raise_when_strict():
    a = np.array([[1.0, 1.0, 0.0], [2.0, 2.0, 0.0]])
    with pytest.raises(ValueError, match=r"Delta_1 \(\+\) Delta_2 are linearly dependent \(rank 1\)"):
        constraint_forms_of_intersection(a, np.zeros((0, 3)), strict=True)
    with pytest.raises(ValueError, match=r"interaction forms S are linearly dependent"):
        constraint_forms_of_intersection(np.zeros((0, 3)), a, strict=True)
    f = constraint_forms_of_intersection(a, np.zeros((0, 3)))
    assert f.rank == 1 and f.forms.shape == (1, 3) and not f.regular


def test_rank_decision_does_not_depend_on_scale():
    a = 1e-8 * np.array([[1.0, 0.0, 0.0]])
    s = np.array([[0.0, 1e-8, 0.0]])
    f = constraint_forms_of_intersection(a, s, strict=True)
    assert f.rank == 2 and f.regular


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: constraint_forms_of_intersection(np.eye(3), np.eye(2)), "same tangent space"),
        (lambda: constraint_forms_of_intersection(np.ones(3), np.eye(3)), "2-D array"),
        (lambda: interconnect_structures(induced(np.eye(2)), induced(np.eye(1)), np.zeros((1, 4))), "3 columns"),
        (lambda: interconnect_structures(induced(np.eye(2)), np.eye(2), np.zeros((1, 4))), "must be a LinearDirac"),
        (lambda: induced(np.array([1.0, 2.0])), "2-D array"),
        (lambda: interaction([[np.inf, 0.0]]), "non-finite"),
    ],
)
def test_bad_shapes_raise_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_lagrange_dirac_equations_19_as_membership():
    """Constrained harmonic oscillator: (19) holds iff the membership (16) holds."""
    rng = np.random.default_rng(7)
    n = 3
    mass, stiff = np.diag([1.0, 2.0, 3.0]), np.diag([4.0, 1.0, 2.0])
    a = rng.standard_normal((1, n))
    q = rng.standard_normal(n)
    v = random_kernel_vector(a, rng)
    mu = rng.standard_normal(1)
    dl_dq, dl_dv = -stiff @ q, mass @ v
    pdot = dl_dq + a.T @ mu
    res = lagrange_dirac_residual(a, v, pdot, dl_dv, v, dl_dq, dl_dv)
    assert res.max < 1e-12 and np.allclose(res.multiplier, mu)
    bad = lagrange_dirac_residual(a, v, pdot + 0.1, dl_dv, v, dl_dq, dl_dv)
    assert bad.membership > 1e-3 and bad.annihilator > 1e-3
    forced = lagrange_dirac_residual(a, v, pdot + np.ones(n), dl_dv, v, dl_dq, dl_dv, force=np.ones(n))
    assert forced.max < 1e-12
