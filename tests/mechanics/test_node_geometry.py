"""A quadrature node's geometry on a product manifold, factor by factor, equals the dense products.

``rules.node_geometry`` computes ``c = R_{q0}(s xi)``, ``P0 = J_q + s J_xi J0``,
``P1 = s J_xi J1`` and ``J_xi``. On a product manifold every one of these
matrices is block-diagonal (the product retraction acts on each factor
alone), and the function multiplies the blocks only (a dense product of the
zero blocks is work XLA cannot drop; it made a step of the snakeboard on
SE(2) x R^2 cost about a third more). Checked here against the dense
formula, values and forward derivatives, on SE(2) x R^2, SO(3) x R^3 and a
nested product, and shown to catch a wrong block.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from tests._tiers import covering

import manifold_dirac  # noqa: F401  (float64)
from manifold_dirac._manifolds import SE2, SO3, Euclidean, ProductManifold
from manifold_dirac._manifolds.product import block_diag
from manifold_dirac._mechanics.rules import NodeGeometry, node_geometry
from manifold_dirac._mechanics.small import mm

PRODUCTS = {
    "SE(2) x R^2": ProductManifold(SE2("exp"), Euclidean(2)),
    "SO(3) x R^3": ProductManifold(SO3("exp"), Euclidean(3)),
    "(SE(2) x R) x SO(3)": ProductManifold(ProductManifold(SE2("exp"), Euclidean(1)), SO3("cayley")),
}


def _dense(Q, q0, q1, xi, J0, J1, s):
    """The formula of ``node_geometry`` with dense products (its route for a manifold that is not a product)."""
    eye = jnp.eye(Q.dim)
    if s == 0.0:
        return NodeGeometry(q0, eye, jnp.zeros_like(eye), eye)
    if s == 1.0:
        return NodeGeometry(q1, jnp.zeros_like(eye), eye, Q.retract_with_jacobians(q0, xi)[2])
    c, Jq, Jx = Q.retract_with_jacobians(q0, s * xi)
    return NodeGeometry(c, Jq + s * mm(Jx, J0), s * mm(Jx, J1), Jx)


def _data(Q, seed=0):
    rng = np.random.default_rng(seed)
    q0 = Q.random_point(rng)
    xi = 0.3 * rng.standard_normal(Q.dim)
    return q0, jnp.asarray(xi)


def _flat(g):
    return jnp.concatenate([jnp.ravel(a) for a in jax.tree.leaves(g)])


def _compare(Q, s, q0, xi):
    """Values and forward derivatives of the node by ``node_geometry`` and by the dense formula (compiled)."""

    def route(f):
        def g(x):
            q1, J0, J1 = Q.retract_with_inverse_jacobians(q0, x)
            return _flat(f(Q, q0, q1, x, J0, J1, s))
        return g

    a, b = route(node_geometry), route(_dense)
    both = jax.jit(lambda x: (a(x), b(x), jax.jacfwd(a)(x), jax.jacfwd(b)(x)))
    return both(xi)


@pytest.mark.parametrize("name,s", covering(sorted(PRODUCTS), [0.5, 0.3, 1.0]))  # tests/_tiers.py
def test_the_blockwise_node_equals_the_dense_one(name, s):
    Q = PRODUCTS[name]
    q0, xi = _data(Q)
    va, vb, da, db = _compare(Q, s, q0, xi)
    np.testing.assert_allclose(va, vb, rtol=0, atol=1e-14)
    np.testing.assert_allclose(da, db, rtol=0, atol=1e-13)


class _Coupled(ProductManifold):
    """``R x R`` with a retraction that couples the factors, ``R_q(xi) = q + (xi0 + c xi0 xi1, xi1)``: a
    product manifold whose retraction is not the factors' (its Jacobians are not block-diagonal)."""

    c = 0.5

    def __init__(self):
        super().__init__(Euclidean(1), Euclidean(1))

    def retract(self, q, xi):
        xi = jnp.asarray(xi)
        return (q[0] + (xi[..., :1] + self.c * xi[..., :1] * xi[..., 1:]), q[1] + xi[..., 1:])

    def _jac(self, xi):
        a, b = xi[0], xi[1]
        return jnp.array([[1.0 + self.c * b, self.c * a], [0.0, 1.0]])

    def retract_with_jacobians(self, q, xi):
        # frame at q1 = coordinates: J_q = I, J_xi = dR/dxi
        return self.retract(q, xi), jnp.eye(2), self._jac(xi)

    def retract_with_inverse_jacobians(self, q0, xi):
        Jinv = jnp.linalg.inv(self._jac(xi))
        return self.retract(q0, xi), -Jinv, Jinv


@pytest.mark.slow
def test_a_product_with_a_coupling_retraction_takes_the_dense_formula():
    """The shortcut would use the factors' retractions and the diagonal blocks: wrong here (the node's point
    0.25 instead of 0.265 at s = 0.5); the route for such a product is the dense one."""
    from manifold_dirac._mechanics.rules import _blockwise

    Q = _Coupled()
    assert not _blockwise(Q) and _blockwise(PRODUCTS["SE(2) x R^2"])
    q0, xi = (jnp.zeros(1), jnp.zeros(1)), jnp.array([0.5, 0.12])
    va, vb, da, db = _compare(Q, 0.5, q0, xi)
    np.testing.assert_allclose(va, vb, rtol=0, atol=1e-15)
    np.testing.assert_allclose(da, db, rtol=0, atol=1e-14)
    # and the factor-by-factor node is indeed another one: the guard is what keeps it out
    q1, J0, J1 = Q.retract_with_inverse_jacobians(q0, xi)
    parts = [node_geometry(f, a, b, xi[Q.slice(i)], J0[Q.slice(i), Q.slice(i)], J1[Q.slice(i), Q.slice(i)], 0.5)
             for i, (f, a, b) in enumerate(zip(Q.factors, q0, q1))]
    assert abs(float(parts[0].point[0]) - float(node_geometry(Q, q0, q1, xi, J0, J1, 0.5).point[0][0])) > 1e-3


@pytest.mark.slow
def test_the_comparison_sees_a_wrong_block(monkeypatch):
    """Sensitivity: the comparison above, with the blockwise route broken once (each block transposed when
    the blocks are assembled), fails on every product (their group blocks are not symmetric)."""
    import manifold_dirac._mechanics.rules as rules

    monkeypatch.setattr(rules, "block_diag", lambda blocks: block_diag([jnp.swapaxes(b, -1, -2) for b in blocks]))
    for name, Q in PRODUCTS.items():
        q0, xi = _data(Q)
        va, vb, _, _ = _compare(Q, 0.5, q0, xi)
        assert float(jnp.max(jnp.abs(va - vb))) > 1e-3, name
