"""Every shared law over every registered manifold x batch shape x regime.

The laws live in :mod:`manifold_dirac.testing`, so a manifold a user
registers is checked by exactly the same code. Their numerics compile once
per manifold (every sample reaches the methods as the same ``(8, ...)``
arrays); shapes and dtypes are checked at each batch shape itself.
"""

from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
import scipy.linalg

from manifold_dirac._manifolds import (
    SE2,
    SO3,
    Euclidean,
    Manifold,
    ProductManifold,
    ProductRetraction,
    block_diag,
)
from manifold_dirac.testing import (
    BATCH_SHAPES,
    REGIMES,
    check_manifold_laws,
    draw_sample,
    law_values,
    laws_for,
    register_manifold,
    registered_manifolds,
    unregister_manifold,
)

SEED = 20240611


@functools.cache
def _manifold(name: str) -> Manifold:
    return registered_manifolds()[name]()


@functools.cache
def _sample(name: str, batch_shape: tuple[int, ...], regime: str):
    return draw_sample(_manifold(name), SEED, batch_shape, regime)


CASES = [(name, law) for name in registered_manifolds() for law in laws_for(_manifold(name))]


@pytest.mark.parametrize("name,law", CASES, ids=[f"{n}-{law}" for n, law in CASES])
def test_law(name: str, law: str) -> None:
    """One law on one manifold, at every batch shape x regime (all are run; the failures are listed)."""
    manifold = _manifold(name)
    failures = []
    for batch_shape in BATCH_SHAPES:
        for regime in REGIMES:
            q, xi = _sample(name, batch_shape, regime)
            try:
                laws_for(manifold)[law](manifold, q, xi)
            except AssertionError as exc:
                failures.append(f"batch_shape={batch_shape}, regime={regime!r} (seed={SEED}):\n{exc}")
    if failures:
        raise AssertionError(
            f"law {law!r} failed for {manifold!r} in {len(failures)} of "
            f"{len(BATCH_SHAPES) * len(REGIMES)} cases:\n" + "\n".join(failures)
        )


def test_registry_covers_the_builtin_manifolds() -> None:
    assert set(registered_manifolds()) == {
        "euclidean1",
        "euclidean3",
        "so3-exp",
        "so3-cayley",
        "se2-exp",
        "se2-cayley",
        "se2-so2xr2",
        "se3-exp",
        "se3-cayley",
        "se3-so3xr3",
        "so3xr2",
        "nested-product",
        "sphere2",
    }
    for name in registered_manifolds():
        assert len(laws_for(_manifold(name))) >= 17, name


def test_register_and_unregister() -> None:
    register_manifold("euclidean2-test", lambda: Euclidean(2))
    try:
        assert "euclidean2-test" in registered_manifolds()
        with pytest.raises(ValueError, match="already registered; pass overwrite=True"):
            register_manifold("euclidean2-test", lambda: Euclidean(2))
        register_manifold("euclidean2-test", lambda: Euclidean(2), replace=True)
        with pytest.raises(TypeError, match="factory must be callable"):
            register_manifold("x", 3)  # type: ignore[arg-type]
    finally:
        unregister_manifold("euclidean2-test")
    with pytest.raises(ValueError, match="unknown manifold 'euclidean2-test'; valid:"):
        unregister_manifold("euclidean2-test")


def test_check_manifold_laws_runs_the_grid() -> None:
    n = check_manifold_laws(Euclidean(3), seeds=[0])
    assert n == len(laws_for(Euclidean(3))) * len(BATCH_SHAPES) * len(REGIMES)
    with pytest.raises(ValueError, match=r"laws \['hat_vee'\] do not apply to Euclidean\(3\)"):
        check_manifold_laws(Euclidean(3), laws=["hat_vee"])


def test_product_retraction_is_symmetric_exactly_when_every_factor_is() -> None:
    sym = ProductManifold(SO3(), Euclidean(2))
    asym = ProductManifold(SO3(), ProductManifold(SE2("so2xr2"), Euclidean(1)))
    assert sym.retraction.symmetric and not asym.retraction.symmetric
    assert sym.retraction.name == "product" and "product" in ProductManifold.retraction_names()
    assert repr(sym.retraction) == "ProductRetraction(SO3Exp(), Translation())"
    assert sym.retraction == ProductRetraction((SO3().retraction, Euclidean(2).retraction))
    assert sym.retraction != ProductManifold(SO3("cayley"), Euclidean(2)).retraction
    assert len({sym.retraction, ProductManifold(SO3(), Euclidean(2)).retraction}) == 1
    assert sym == ProductManifold(SO3(), Euclidean(2)) and sym != ProductManifold(SO3("cayley"), Euclidean(2))
    assert ProductManifold(SO3(), Euclidean(2), retraction=sym.retraction) == sym


def test_product_slicing_and_block_diagonal_jacobians() -> None:
    P = _manifold("nested-product")  # SE2 x (SO3 x R^1)
    assert (P.dim, P.dims, P.offsets) == (7, (3, 4), (0, 3))
    v = np.arange(14.0).reshape(2, 7)
    a, b = P.split(v)
    assert a.shape == (2, 3) and b.shape == (2, 4) and P.slice(1) == slice(3, 7)
    np.testing.assert_array_equal(P.join([a, b]), v)
    np.testing.assert_array_equal(P.join([a[0], b]), np.concatenate([np.broadcast_to(a[0], (2, 3)), b], -1))
    blocks = [np.ones((2, 1, 1)), 2 * np.ones((3, 3)), 3 * np.ones((2, 1, 2, 2))]
    D = np.asarray(block_diag(blocks))
    assert D.shape == (2, 2, 6, 6) and D.dtype == np.float64
    dense = [np.broadcast_to(b, (2, 2, *b.shape[-2:]))[1, 0] for b in blocks]
    np.testing.assert_array_equal(D[1, 0], scipy.linalg.block_diag(*dense))
    J = law_values(P, *draw_sample(P, 0, (2,), "generic"))["J1"]
    assert J.shape == (2, 7, 7) and np.all(J[:, :3, 3:] == 0) and np.all(J[:, 3:, :3] == 0)
    assert [x.shape for x in jax.tree.leaves(P.broadcast_point(P.default_point(), (4,)))] == [
        (4, 3, 3),
        (4, 3, 3),
        (4, 1),
    ]


def test_eager_calls_broadcast_like_the_compiled_ones() -> None:
    # the laws check shapes by jax.eval_shape and values compiled; here one manifold runs eagerly
    M = _manifold("se2-so2xr2")
    rng = np.random.default_rng(SEED)
    q, xi = M.random_point(rng, (3, 1)), M.sample_tangent(rng, (2,), "generic")
    q1, J0, J1 = M.retract_with_inverse_jacobians(q, xi)
    assert q1.shape == (3, 2, 3, 3) and J0.shape == J1.shape == (2, 3, 3) and q1.dtype == np.float64
    np.testing.assert_allclose(M.retract(q, xi), q1, rtol=0, atol=1e-15)
    np.testing.assert_allclose(M.inverse_retract(q, q1), np.broadcast_to(xi, (3, 2, 3)), rtol=0, atol=1e-14)
    ref = law_values(M, M.broadcast_point(q, (3, 2)), np.broadcast_to(xi, (3, 2, 3)))
    np.testing.assert_allclose(q1, ref["retract"], rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.broadcast_to(J1, (3, 2, 3, 3)), ref["J1"], rtol=0, atol=1e-15)
