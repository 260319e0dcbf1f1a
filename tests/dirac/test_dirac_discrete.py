"""Discrete (+)/(−) Dirac structures (46)--(53) and discrete interconnection."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from manifold_dirac.dirac import (
    DiscreteDiracStructure,
    LinearSubspace,
    block_diag_forms,
    constraint_forms_of_intersection,
    discrete_dirac_differential,
    interconnect_discrete_structures,
    in_discrete_structure,
)

from .dirac_strategies import TwoSystems, forms, random_kernel_vector, two_systems

SIGNS = ("+", "-")


# --------------------------------------------------------------------------- a linear test system
class LinearOscillator:
    """L = 1/2 v M v - 1/2 q K q on R^n, midpoint L_d, constant constraint forms A."""

    def __init__(self, mass: np.ndarray, stiff: np.ndarray, h: float) -> None:
        self.M, self.K, self.h = mass, stiff, h

    def d_ld(self, q0: np.ndarray, q1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        xi, qbar = q1 - q0, 0.5 * (q0 + q1)
        d1 = -self.M @ xi / self.h - 0.5 * self.h * self.K @ qbar
        d2 = self.M @ xi / self.h - 0.5 * self.h * self.K @ qbar
        return d1, d2

    def _kkt(self, A: np.ndarray, rhs: np.ndarray, sign: float) -> tuple[np.ndarray, np.ndarray]:
        n, m = self.M.shape[0], A.shape[0]
        h = self.h
        mat = np.block([[self.M / h + h * self.K / 4, sign * A.T], [A, np.zeros((m, m))]])
        sol = np.linalg.solve(mat, np.concatenate([rhs, np.zeros(m)]))
        return sol[:n], sol[n:]

    def step_plus(self, A, q, p):
        """(52): p_k + D1 L_d - A^T mu = 0, A xi = 0, p_{k+1} = D2 L_d."""
        xi, _ = self._kkt(A, p - 0.5 * self.h * self.K @ q, +1.0)
        q1 = q + xi
        return q1, self.d_ld(q, q1)[1]

    def step_minus(self, A, q, p_tilde):
        """The one-step form of (53) (docs/schemes.md, the minus scheme): p~_k + A^T mu_k + D1 L_d = 0, A(q_k - q_{k+1}) = 0."""
        xi, mu = self._kkt(A, p_tilde - 0.5 * self.h * self.K @ q, -1.0)
        q1 = q + xi
        return q1, p_tilde + A.T @ mu, self.d_ld(q, q1)[1]


def _oscillator(rng: np.random.Generator, n: int, h: float = 0.1) -> LinearOscillator:
    mass = np.diag(rng.uniform(0.5, 2.0, n))
    b = rng.standard_normal((n, n))
    return LinearOscillator(mass, b @ b.T + np.eye(n), h)


# --------------------------------------------------------------------------- structures
@given(forms(max_dim=5))
def test_discrete_induced_dimension_and_elements(data):
    a, rng = data
    n = a.shape[1]
    for sign in SIGNS:
        d = DiscreteDiracStructure.induced(a, sign)
        assert d.dim == 3 * n and d.n == n and d.sign == sign
        assert d.velocity_constraint().equals(LinearSubspace.from_equations(a))  # (43) in the chart
        chi = random_kernel_vector(a, rng)
        p_k, p_k1, mu = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(a.shape[0])
        if sign == "+":  # alpha_q - p_k in row A, alpha_p = xi
            assert d.contains(p_k, chi, p_k1, p_k + a.T @ mu, chi)
            assert d.contains(p_k, chi, p_k1, p_k + a.T @ mu, -chi) == np.allclose(chi, 0)
        else:  # alpha_q + p_{k+1} in row A, alpha_p = -eta
            assert d.contains(p_k, chi, p_k1, -p_k1 + a.T @ mu, -chi)
            assert d.contains(p_k, chi, p_k1, -p_k1 + a.T @ mu, chi) == np.allclose(chi, 0)
        di = DiscreteDiracStructure.interaction(a, sign)
        assert di.dim == 3 * n
        assert di.contains(p_k, chi, p_k1, a.T @ mu, np.zeros(n))


@given(forms(max_dim=5))
def test_flipped_alpha_p_in_46_is_detected(data):
    """The tests can fail: (46) with alpha_p = -xi is a different relation."""
    a, _rng = data
    m, n = a.shape
    z, eye = np.zeros, np.eye(n)
    e = LinearSubspace.from_equations(a).basis.T
    k = e.shape[0]
    wrong = DiscreteDiracStructure.from_equations(
        np.vstack(
            [
                np.hstack([z((m, n)), a, z((m, 3 * n))]),
                np.hstack([z((n, n)), eye, z((n, 2 * n)), eye]),  # alpha_p + xi = 0: wrong sign
                np.hstack([-e, z((k, 2 * n)), e, z((k, n))]),
            ]
        ),
        "+",
    )
    right = DiscreteDiracStructure.induced(a, "+")
    assert wrong.dim == right.dim
    assert wrong.equals(right) == (np.linalg.matrix_rank(a) == n)  # only invisible when ker A = 0


@given(two_systems())
def test_discrete_direct_sum_is_induced_of_block_forms(sys: TwoSystems):
    a = block_diag_forms(sys.A1, sys.A2)
    for sign in SIGNS:
        d = DiscreteDiracStructure.induced(sys.A1, sign).direct_sum(
            DiscreteDiracStructure.induced(sys.A2, sign)
        )
        assert d.n == sys.n and d.dim == 3 * sys.n
        assert d.equals(DiscreteDiracStructure.induced(a, sign))


@given(two_systems())
def test_discrete_interconnection_theorem(sys: TwoSystems):
    """The discrete (32): (D^{d±}_1 (+) D^{d±}_2) ⊠ D^{d±}_int = D^{d±}_{Delta_Q}."""
    a = block_diag_forms(sys.A1, sys.A2)
    f = constraint_forms_of_intersection(a, sys.S)
    for sign in SIGNS:
        d1 = DiscreteDiracStructure.induced(sys.A1, sign)
        d2 = DiscreteDiracStructure.induced(sys.A2, sign)
        lhs = interconnect_discrete_structures(d1, d2, sys.S)
        rhs = DiscreteDiracStructure.induced(f.forms, sign)
        assert lhs.dim == rhs.dim == 3 * sys.n
        assert lhs.relation.includes(rhs.relation) and rhs.relation.includes(lhs.relation)
        manual = d1.direct_sum(d2).tensor(DiscreteDiracStructure.interaction(sys.S, sign))
        assert manual.equals(lhs)


@given(two_systems())
def test_discrete_trivial_interaction_is_the_identity(sys: TwoSystems):
    for sign in SIGNS:
        d = DiscreteDiracStructure.induced(block_diag_forms(sys.A1, sys.A2), sign)
        assert d.tensor(DiscreteDiracStructure.interaction(np.zeros((0, sys.n)), sign)).equals(d)


def test_signs_do_not_mix():
    a = np.array([[1.0, 0.0]])
    dp, dm = DiscreteDiracStructure.induced(a, "+"), DiscreteDiracStructure.induced(a, "-")
    with pytest.raises(ValueError, match="different charts"):
        dp.tensor(dm)
    with pytest.raises(ValueError, match="different charts"):
        dp.direct_sum(dm)
    ip, im = DiscreteDiracStructure.interaction(a, "+"), DiscreteDiracStructure.interaction(a, "-")
    assert ip.relation.equals(im.relation) and not ip.equals(im)  # same subspace, different chart


# --------------------------------------------------------------------------- (50)-(53) on steps
def test_discrete_dirac_differential_48():
    d1, d2, chi = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])
    plus = discrete_dirac_differential("+", d1, d2, chi)
    assert np.array_equal(plus.basepoint_momentum, d2)
    assert np.array_equal(plus.alpha_q, -d1) and np.array_equal(plus.alpha_p, chi)
    minus = discrete_dirac_differential("-", d1, d2, chi)
    assert np.array_equal(minus.basepoint_momentum, -d1)
    assert np.array_equal(minus.alpha_q, -d2) and np.array_equal(minus.alpha_p, -chi)


@given(forms(max_dim=5))
def test_hand_built_solutions_of_52_and_53(data):
    a, rng = data
    m, n = a.shape
    chi = random_kernel_vector(a, rng)
    d1, d2, mu = rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(m)
    # (52): p_{k+1} = D2 L_d, p_k = -D1 L_d + A^T mu
    res = in_discrete_structure("+", a, -d1 + a.T @ mu, chi, d2, d1, d2)
    assert res.ok and res.max < 1e-10 * res.scale and np.allclose(res.multiplier, mu)
    # (53): p_k = -D1 L_d, p_{k+1} = D2 L_d + A^T mu
    res = in_discrete_structure("-", a, -d1, chi, d2 + a.T @ mu, d1, d2)
    assert res.ok and res.max < 1e-10 * res.scale and np.allclose(res.multiplier, mu)
    # each kind of violation is seen
    bump = rng.standard_normal(n)
    assert not in_discrete_structure("+", a, -d1 + a.T @ mu, chi, d2 + bump, d1, d2).ok
    assert not in_discrete_structure("-", a, -d1 + bump, chi, d2 + a.T @ mu, d1, d2).ok
    if m < n:  # a direction off row A, and a velocity off ker A
        off = random_kernel_vector(a, rng)
        r = in_discrete_structure("+", a, -d1 + off, chi, d2, d1, d2)
        assert not r.ok and r.annihilator > 1e-6 and r.membership > 1e-6
        r = in_discrete_structure("-", a, -d1, chi, d2 + off, d1, d2)
        assert not r.ok and r.annihilator > 1e-6
    if m:
        out = a[0] / np.linalg.norm(a[0])
        r = in_discrete_structure("+", a, -d1 + a.T @ mu, chi + out, d2, d1, d2)
        assert not r.ok and r.constraint > 1e-6 and r.membership > 1e-6


def test_plus_trajectory_lies_in_the_discrete_structure():
    rng = np.random.default_rng(11)
    n = 3
    osc = _oscillator(rng, n)
    a = rng.standard_normal((1, n))
    q, p = rng.standard_normal(n), rng.standard_normal(n)
    for _ in range(50):
        q1, p1 = osc.step_plus(a, q, p)
        d1, d2 = osc.d_ld(q, q1)
        res = in_discrete_structure("+", a, p, q1 - q, p1, d1, d2)
        assert res.ok, res
        # wrong momentum update (p_{k+1} = -D2 L_d) is rejected
        assert not in_discrete_structure("+", a, p, q1 - q, -p1, d1, d2).ok
        q, p = q1, p1


def test_minus_trajectory_lies_in_the_discrete_structure():
    rng = np.random.default_rng(12)
    n = 3
    osc = _oscillator(rng, n)
    a = rng.standard_normal((1, n))
    q, p_tilde = rng.standard_normal(n), rng.standard_normal(n)
    prev = None
    for _ in range(50):
        q1, p, p_tilde1 = osc.step_minus(a, q, p_tilde)
        if prev is not None:  # step k-1 is complete once mu_k is known (docs/schemes.md, the minus scheme)
            q0, p0 = prev
            d1, d2 = osc.d_ld(q0, q)
            res = in_discrete_structure("-", a, p0, q0 - q, p, d1, d2)  # eta = R_{q_k}^{-1}(q_{k-1})
            assert res.ok, res
            assert not in_discrete_structure("-", a, p0, q0 - q, p, d2, d1).ok  # D1, D2 swapped
        prev = (q, p)
        q, p_tilde = q1, p_tilde1


def test_interconnected_steps_lie_in_the_interconnected_discrete_structure():
    """Interconnect, then discretize (L_d = L_d1 + L_d2) = discretize each, then interconnect."""
    rng = np.random.default_rng(13)
    n1 = n2 = 2
    osc1, osc2 = _oscillator(rng, n1), _oscillator(rng, n2)
    big = LinearOscillator(block_diag_forms(osc1.M, osc2.M), block_diag_forms(osc1.K, osc2.K), osc1.h)
    a1, a2 = rng.standard_normal((1, n1)), rng.standard_normal((1, n2))
    s = np.array([[1.0, 0.0, -1.0, 0.0]])  # q1[0] and q2[0] move together
    f = constraint_forms_of_intersection(block_diag_forms(a1, a2), s, strict=True)
    structure = interconnect_discrete_structures(
        DiscreteDiracStructure.induced(a1, "+"), DiscreteDiracStructure.induced(a2, "+"), s
    )
    q, p = rng.standard_normal(n1 + n2), rng.standard_normal(n1 + n2)
    for _ in range(20):
        q1, p1 = big.step_plus(f.forms, q, p)
        # the subsystems' own discrete derivatives, concatenated
        d1a, d2a = osc1.d_ld(q[:n1], q1[:n1])
        d1b, d2b = osc2.d_ld(q[n1:], q1[n1:])
        d1, d2 = np.concatenate([d1a, d1b]), np.concatenate([d2a, d2b])
        assert np.allclose(p1, d2)  # basepoint (52c)
        assert structure.contains(p, q1 - q, p1, -d1, q1 - q)  # (50) in the interconnected structure
        assert in_discrete_structure("+", f.forms, p, q1 - q, p1, d1, d2).ok
        q, p = q1, p1


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: in_discrete_structure("0", np.eye(2), *([np.zeros(2)] * 5)), "sign must be"),
        (
            lambda: in_discrete_structure("+", np.eye(2), np.zeros(3), *([np.zeros(2)] * 4)),
            r"p_k must be .*\(2,\)",
        ),
        (lambda: in_discrete_structure("+", np.ones(2), *([np.zeros(2)] * 5)), "2-D array"),
        (lambda: DiscreteDiracStructure.induced(np.eye(2), "x"), "sign must be"),
        (lambda: DiscreteDiracStructure.from_equations(np.zeros((1, 7)), "+"), "5n columns"),
        (lambda: DiscreteDiracStructure.induced(np.eye(2), "+").contains(*([np.zeros(3)] * 5)), r"\(2,\)"),
        (
            lambda: interconnect_discrete_structures(
                DiscreteDiracStructure.induced(np.eye(1), "+"),
                DiscreteDiracStructure.induced(np.eye(1), "+"),
                np.zeros((1, 3)),
            ),
            "2 columns",
        ),
        (lambda: discrete_dirac_differential("+", np.zeros(2), np.zeros(2), np.zeros((2, 1))), "vector"),
    ],
)
def test_bad_input_raises_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()
