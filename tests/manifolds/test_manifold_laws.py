"""Every shared law over every registered manifold x batch shape x regime.

One parametrization (manifold, law, batch shape, regime), hypothesis-driven
over seeds; the laws live in :mod:`manifold_dirac.testing`, so a manifold a
user registers is checked by exactly the same code.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given

from manifold_dirac.manifolds import Manifold
from manifold_dirac.testing import (
    BATCH_SHAPES,
    REGIMES,
    draw_sample,
    laws_for,
    registered_manifolds,
    seeds,
)


@functools.cache
def _manifold(name: str) -> Manifold:
    return registered_manifolds()[name]()


NAMES = list(registered_manifolds())


def _shape_id(shape: tuple[int, ...]) -> str:
    return "batch" + ("x".join(map(str, shape)) if shape else "none")


@pytest.mark.parametrize("regime", REGIMES)
@pytest.mark.parametrize("batch_shape", BATCH_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("name", NAMES)
@given(seed=seeds())
def test_laws(name: str, batch_shape: tuple[int, ...], regime: str, seed: int) -> None:
    """All laws that apply to the manifold, on one sample per example.

    The laws run together on each drawn sample (one hypothesis example
    costs ~2 ms of overhead, a law ~1 ms); a failure names the law.
    """
    manifold = _manifold(name)
    q, xi = draw_sample(manifold, seed, batch_shape, regime)
    for law_name, law in laws_for(manifold).items():
        try:
            law(manifold, q, xi)
        except AssertionError as exc:
            raise AssertionError(f"law {law_name!r} failed (seed={seed}):\n{exc}") from exc


def test_registry_covers_the_builtin_manifolds() -> None:
    names = set(registered_manifolds())
    expected = {
        "euclidean1",
        "euclidean3",
        "so3-exp",
        "so3-cayley",
        "se2-exp",
        "se2-cayley",
        "se2-so2xr2",
        "so3xr2",
        "nested-product",
    }
    assert expected <= names
    from manifold_dirac._compat import geomstats_available

    assert ("sphere2" in names) == geomstats_available()


def test_every_law_runs_on_every_manifold() -> None:
    # group laws only where they apply; every manifold gets the 11 generic ones
    for name in registered_manifolds():
        laws = laws_for(_manifold(name))
        assert len(laws) >= 11, name
