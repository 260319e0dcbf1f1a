"""The classification of a solved step (``status.classify_step``), shared by the integrator's step and
``rollout``: Newton's verdict refined by what the step computed."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import pytest

import manifold_dirac  # noqa: F401  (float64)
from manifold_dirac._manifolds import SO3, Euclidean, ProductManifold
from manifold_dirac._mechanics import step
from manifold_dirac._run import rollout as differentiable
from manifold_dirac._mechanics.status import Status, classify_step

NEWTON = [Status.OK, Status.NO_CONVERGENCE, Status.ILL_POSED, Status.NONFINITE]


def expected(newton: Status, inside: bool, finite_xi: bool, finite_out: bool) -> Status:
    """The rule written out case by case."""
    if newton == Status.OK and not finite_out:
        return Status.NONFINITE
    if newton in (Status.OK, Status.NO_CONVERGENCE) and finite_xi and not inside:
        return Status.DOMAIN
    return newton


@pytest.mark.parametrize("newton,inside,finite_xi,finite_out",
                         list(itertools.product(NEWTON, [True, False], [True, False], [True, False])))
def test_every_case_of_the_classification(newton, inside, finite_xi, finite_out):
    Q = ProductManifold(SO3("cayley"), Euclidean(1))  # a domain (|xi| < 2 pi for Cayley's rotation) and a tree q
    xi = jnp.array([0.1, 0.2, 0.3, 0.0]) if inside else jnp.array([0.0, 0.0, 100.0, 0.0])
    if not finite_xi:
        xi = xi.at[3].set(jnp.nan)
    q1 = Q.retract(Q.default_point(), jnp.nan_to_num(xi))
    p1 = jnp.zeros(4).at[1].set(0.0 if finite_out else jnp.inf)
    if not finite_out:
        q1 = (q1[0], q1[1] * jnp.nan)
    got = jax.jit(lambda s, x, q, p: classify_step(s, Q, x, q, p))(jnp.int32(newton), xi, q1, p1)
    assert got.dtype == jnp.int32
    assert Status(int(got)) == expected(newton, inside and finite_xi, finite_xi, finite_out)


def test_the_step_and_rollout_use_the_one_classification():
    """Written once: both modules call it (and no longer carry their own copy of the rule)."""
    import inspect

    for mod in (step, differentiable):
        src = inspect.getsource(mod)
        assert "classify_step(" in src and "in_domain(" not in src, mod.__name__
