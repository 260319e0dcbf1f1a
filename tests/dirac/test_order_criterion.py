"""When are (+) and (−) second order? The criterion of ``docs/schemes.md``, measured.

The three schemes impose the discrete constraint at different points of the retraction curve
``c(s) = R_{q_k}(s xi)``: (+) at ``s = 0``, (−) at ``s = 1``, symmetric at ``s = 1/2``, each on
the curve's own velocity, ``a(s) = A(c(s)) c'(s)``
(:func:`manifold_dirac.dirac.constraint_along_retraction`). If ``a`` does not depend on ``s``
the three schemes coincide (order 2); if ``da/ds != 0`` on ``Delta``, (±) are first order. Whether
``A`` varies in frame coordinates is not the criterion: the Veselova form ``(R^T e3)^T`` on SO(3)
varies with ``R`` in the body frame, yet all three schemes coincide at order 2.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac  # noqa: F401  (float64)
from manifold_dirac import Euclidean, LagrangeDiracSystem, integrate
from manifold_dirac.analysis import observed_order
from manifold_dirac.dirac import constraint_along_retraction
from manifold_dirac._manifolds.so3 import SO3

I3 = jnp.array([1.0, 2.0, 3.0])
VESELOVA = LagrangeDiracSystem(SO3("exp"), lambda q, v: 0.5 * v @ (I3 * v),
                               constraint=lambda q: (q.T @ jnp.array([0.0, 0.0, 1.0]))[None], name="veselova")
KNIFE_R3 = LagrangeDiracSystem(Euclidean(3), lambda q, v: 0.5 * (v[0] ** 2 + v[1] ** 2) + 0.25 * v[2] ** 2,
                               constraint=lambda q: jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0 * q[2]])[None],
                               name="knife_edge_R3")
R0 = np.asarray(SO3().exp(jnp.array([0.3, -0.2, 0.1])))
W0 = np.cross(R0.T @ np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.5, -0.3]))  # in Delta(R0)


@pytest.mark.slow
def test_the_constraint_along_the_retraction_curve():
    """Veselova on SO(3) with exp: ``a(s)`` is the same for every ``s`` (to round-off); the
    Euclidean knife edge: ``a(s)`` changes at first order in ``s``."""
    rng = np.random.default_rng(0)
    for _ in range(1):
        R = np.asarray(SO3().exp(jnp.asarray(rng.standard_normal(3))))
        g = R.T @ np.array([0.0, 0.0, 1.0])
        xi = 0.3 * np.cross(g, rng.standard_normal(3))  # in Delta(R)
        a = constraint_along_retraction(VESELOVA, R, xi, [0.0, 0.5, 1.0])
        np.testing.assert_allclose(a, 0.0, atol=1e-15)
        xi_off = 0.3 * rng.standard_normal(3)  # any xi: still constant in s
        a = constraint_along_retraction(VESELOVA, R, xi_off, [0.0, 0.5, 1.0])
        np.testing.assert_allclose(a - a[0], 0.0, atol=1e-15)
    q, xi = np.array([0.0, 0.0, 0.4]), np.array([np.cos(0.4), np.sin(0.4), 0.5]) * 0.1  # xi in Delta(q)
    a = constraint_along_retraction(KNIFE_R3, q, xi, [0.0, 0.5])
    assert abs(a[0, 0]) < 1e-16 and abs(a[1, 0]) > 1e-3


@pytest.mark.parametrize("scheme", ["plus", "minus"])
@pytest.mark.slow
def test_veselova_the_schemes_coincide(scheme):
    """(+) and (−) give the symmetric scheme's discrete flow on the Veselova body, to round-off."""
    a = integrate(VESELOVA, R0, v0=W0, h=0.05, n_steps=40, scheme=scheme)
    b = integrate(VESELOVA, R0, v0=W0, h=0.05, n_steps=40, scheme="symmetric")
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_veselova_plus_is_second_order():
    """(+) on the Veselova body: regression slope over h = 0.1, 0.05, 0.025 against h = T/640."""
    T = 2.0
    ref = integrate(VESELOVA, R0, v0=W0, h=T / 640, n_steps=640, scheme="plus").q[-1]
    hs = np.array([0.1, 0.05, 0.025])
    err = [np.max(np.abs(integrate(VESELOVA, R0, v0=W0, h=h, n_steps=int(round(T / h)), scheme="plus").q[-1] - ref))
           for h in hs]
    assert observed_order(hs, err) > 1.9, err  # measured: 2.01 (1.555e-4, 3.871e-5, 9.560e-6)


def test_the_symmetric_structure_differs_from_the_induced_one_unless_b_equals_a():
    """``DiscreteDiracStructure.induced(A, sign, constraint=B)`` (the symmetric scheme's structure:
    velocity forms B, reaction in row A) is the induced structure for B = A and another subspace
    for B != A."""
    from manifold_dirac.dirac import DiscreteDiracStructure

    rng = np.random.default_rng(5)
    A = rng.standard_normal((1, 3))
    B = A + 1e-3 * rng.standard_normal((1, 3))
    for sign in "+-":
        same = DiscreteDiracStructure.induced(A, sign, constraint=A)
        assert same.equals(DiscreteDiracStructure.induced(A, sign))
        other = DiscreteDiracStructure.induced(A, sign, constraint=B)
        assert other.dim == same.dim and not other.equals(same)
