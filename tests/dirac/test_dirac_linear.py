"""Linear subspaces, relations and Dirac structures: (1)--(4), (27), tensor product."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from manifold_dirac.dirac import LinearDirac, LinearRelation, LinearSubspace, canonical_two_form

from .dirac_strategies import forms


def _skew(rng: np.random.Generator, n: int) -> np.ndarray:
    w = rng.standard_normal((n, n))
    return w - w.T


# --------------------------------------------------------------------------- subspaces
def test_subspace_from_dependent_columns_has_the_rank():
    b = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 1.0], [1.0, 2.0, 1.0]])
    u = LinearSubspace.from_basis(b)
    assert u.dim == 2 and u.ambient_dim == 3
    assert np.allclose(u.basis.T @ u.basis, np.eye(2))
    assert u.contains(b[:, 0] + 3 * b[:, 2])
    assert not u.contains([1.0, 0.0, 0.0])


@given(st.integers(1, 6), st.integers(0, 6), st.integers(0, 6), st.integers(0, 2**32 - 1))
def test_subspace_dimension_formula(d, k1, k2, seed):
    rng = np.random.default_rng(seed)
    u = LinearSubspace.from_basis(rng.standard_normal((d, min(k1, d))))
    w = LinearSubspace.from_basis(rng.standard_normal((d, min(k2, d))))
    assert u.sum(w).dim + u.intersect(w).dim == u.dim + w.dim
    assert u.includes(u.intersect(w)) and u.sum(w).includes(w)
    assert u.complement().dim == d - u.dim
    assert u.complement().complement().equals(u)


@given(forms())
def test_kernel_of_equations(data):
    a, _rng = data
    k = LinearSubspace.from_equations(a)
    assert k.dim == a.shape[1] - np.linalg.matrix_rank(a) if a.size else k.dim == a.shape[1]
    assert np.allclose(a @ k.basis, 0.0)


# --------------------------------------------------------------------------- Dirac
@given(forms())
def test_delta_plus_annihilator_is_dirac(data):
    a, _ = data
    n = a.shape[1]
    d = LinearDirac.from_distribution(forms=a)
    assert d.dim == n and d.is_dirac()
    assert d.orthogonal().equals(d)
    assert d.associated_distribution().equals(LinearSubspace.from_equations(a))
    assert d.two_form().is_skew() and np.allclose(d.two_form().matrix, 0.0)
    # the same structure from a basis of Delta
    e = LinearSubspace.from_equations(a)
    assert LinearDirac.from_distribution(basis=e.basis).equals(d)
    assert LinearDirac.from_distribution(e).equals(d)


@given(forms())
def test_two_form_structure_is_dirac_and_returns_its_form(data):
    a, rng = data
    n = a.shape[1]
    w = _skew(rng, n)
    d = LinearDirac.from_two_form(w, a)
    assert d.is_dirac()
    assert d.orthogonal().equals(d)
    delta = LinearSubspace.from_equations(a)
    assert d.associated_distribution().equals(delta)  # (4) => Delta_D = Delta
    tf = d.two_form()  # (3) recovers omega restricted to Delta
    e = tf.basis
    assert np.allclose(tf.matrix, e.T @ w @ e, atol=1e-10)
    if e.shape[1]:
        v, u = e @ rng.standard_normal(e.shape[1]), e @ rng.standard_normal(e.shape[1])
        assert tf(v, u) == pytest.approx(v @ w @ u, abs=1e-10)


@given(st.integers(1, 6), st.integers(1, 11), st.integers(0, 2**32 - 1))
def test_orthogonal_of_any_subspace(n, k, seed):
    rng = np.random.default_rng(seed)
    d = LinearDirac.from_basis(rng.standard_normal((2 * n, min(k, 2 * n))))
    perp = d.orthogonal()
    assert perp.dim == 2 * n - d.dim  # the pairing (1) is non-degenerate
    assert perp.orthogonal().equals(d)
    for w in d.basis().T:
        for u in perp.basis().T:
            assert abs(d.pairing(w, u)) < 1e-10
    # a random subspace of dimension n is (almost surely) not Dirac
    if d.dim == n:
        assert not d.is_dirac()


def test_graph_of_symmetric_map_is_not_dirac():
    """Graph of a symmetric matrix: dim N but not isotropic (the form must be skew)."""
    s = np.array([[2.0, 1.0], [1.0, 3.0]])
    d = LinearDirac.from_basis(np.vstack([np.eye(2), s]))
    assert d.dim == 2 and not d.is_isotropic() and not d.is_dirac()
    assert not d.orthogonal().equals(d)
    # ... while the graph of a skew matrix is
    k = np.array([[0.0, 1.0], [-1.0, 0.0]])
    assert LinearDirac.from_basis(np.vstack([np.eye(2), k])).is_dirac()


# --------------------------------------------------------------------------- operations
@given(forms(max_dim=4), forms(max_dim=4))
def test_direct_sum_is_dirac_and_ordered_as_27(d1, d2):
    (a1, rng), (a2, _) = d1, d2
    da, db = LinearDirac.from_two_form(_skew(rng, a1.shape[1]), a1), LinearDirac.from_distribution(forms=a2)
    s = da.direct_sum(db)
    n1, n2 = da.space_dim, db.space_dim
    assert s.space_dim == n1 + n2 and s.dim == n1 + n2 and s.is_dirac()
    # ordering ((v1, v2), (alpha1, alpha2))
    w1 = da.basis() @ rng.standard_normal(da.dim)
    w2 = db.basis() @ rng.standard_normal(db.dim)
    v = np.concatenate([w1[:n1], w2[:n2]])
    alpha = np.concatenate([w1[n1:], w2[n2:]])
    assert s.contains(v, alpha)
    assert s.includes(da.direct_sum(LinearDirac.from_distribution(forms=np.eye(n2)).intersect(db)))


@given(forms(max_dim=5))
def test_tensor_unit_commutativity_and_absorbing_element(data):
    a, rng = data
    n = a.shape[1]
    d = LinearDirac.from_two_form(_skew(rng, n), a)
    unit = LinearDirac.from_distribution(forms=np.zeros((0, n)))  # V (+) 0
    absorbing = LinearDirac.from_distribution(forms=np.eye(n))  # 0 (+) V*
    assert d.tensor(unit).equals(d) and unit.tensor(d).equals(d)
    assert d.tensor(absorbing).equals(absorbing)
    other = LinearDirac.from_distribution(forms=rng.standard_normal((rng.integers(0, n + 1), n)))
    assert d.tensor(other).equals(other.tensor(d))


def test_tensor_of_two_forms_adds_them_on_the_common_distribution():
    rng = np.random.default_rng(3)
    n = 4
    w1, w2 = _skew(rng, n), _skew(rng, n)
    a1, a2 = rng.standard_normal((1, n)), rng.standard_normal((1, n))
    t = LinearDirac.from_two_form(w1, a1).tensor(LinearDirac.from_two_form(w2, a2))
    expected = LinearDirac.from_two_form(w1 + w2, np.vstack([a1, a2]))
    assert t.equals(expected) and t.is_dirac()


def test_relation_direct_sum_blocks_interleave():
    r1 = LinearRelation.from_basis(np.array([[1.0], [2.0], [3.0], [4.0]]), 2, 2)
    r2 = LinearRelation.from_basis(np.array([[5.0], [6.0], [7.0], [8.0]]), 2, 2)
    s = r1.direct_sum(r2, blocks=2)
    assert s.contains([1.0, 0.0, 2.0, 0.0], [3.0, 0.0, 4.0, 0.0])
    assert s.contains([0.0, 5.0, 0.0, 6.0], [0.0, 7.0, 0.0, 8.0])
    assert not s.contains([1.0, 2.0, 0.0, 0.0], [3.0, 4.0, 0.0, 0.0])


# --------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: LinearSubspace.from_basis(np.ones(3)), "2-D array"),
        (lambda: LinearSubspace.from_equations([[np.nan, 1.0]]), "non-finite"),
        (lambda: LinearDirac.from_basis(np.ones((3, 1))), "2N rows"),
        (lambda: LinearDirac.from_equations(np.ones((1, 3))), "2N columns"),
        (lambda: LinearDirac.from_two_form(np.ones((2, 2)), np.zeros((0, 2))), "skew"),
        (lambda: LinearDirac.from_two_form(np.zeros((2, 3)), np.zeros((0, 2))), "square"),
        (lambda: LinearDirac.from_two_form(np.zeros((2, 2)), np.zeros((0, 3))), "R\\^3"),
        (lambda: LinearDirac.from_distribution(np.eye(2)), "LinearSubspace"),
        (lambda: LinearDirac.from_distribution(basis=np.eye(2), forms=np.eye(2)), "exactly one"),
        (lambda: LinearDirac.induced(np.eye(2)).contains(np.zeros(3), np.zeros(4)), r"shape \(4,\)"),
        (lambda: LinearDirac.induced(np.eye(2)).tensor(LinearDirac.induced(np.eye(3))), "different spaces"),
        (lambda: LinearDirac.induced(np.eye(2)).contains(np.zeros(4), np.zeros(4), tol=-1.0), "non-negative"),
        (
            lambda: LinearDirac.induced(np.eye(2)).direct_sum(LinearDirac.induced(np.eye(3)), blocks=4),
            "blocks",
        ),
        (lambda: canonical_two_form(-1), "non-negative integer"),
    ],
)
def test_bad_input_raises_value_error_with_a_sentence(call, match):
    with pytest.raises(ValueError, match=match):
        call()
