"""Automatic (autodiff) partials agree with analytic ones on every bundled system (compiled engine).

Ported from the numpy engine's ``tests/mechanics/test_derivatives.py``. What
changed with the engine, and how each test keeps its intent:

* the automatic partials are reverse-mode **autodiff** along the first-order
  retraction curve, not the complex step: the check compares each system's
  analytic partials with those of an autodiff twin (the same Lagrangian,
  constraint, force and parameters, no ``partials=``), at the same
  tolerances, over the same batch shapes (the engine batches with ``vmap``);
* a Lagrangian is written for ONE point with ``jax.numpy``: ``|v|`` through
  ``jnp.abs`` is differentiable (the complex step could not see it), and
  ``v[0] ** 2 + v[1] ** 2`` is the right way to write it, not a bug. The
  refusals that replace "not complex-safe" and "does not broadcast" are a
  Lagrangian in plain numpy (not traceable) and one that returns a batch;
* ``check_partials`` (central finite differences along the retraction)
  exists on the compiled system with the same contract.
"""

import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac import systems as S
from manifold_dirac._manifolds import SE2, SO3, Euclidean, ProductManifold
from manifold_dirac._mechanics.system import LagrangeDiracSystem


def _interconnected(name):
    def build():
        from manifold_dirac.systems import interconnected

        return getattr(interconnected, name)()

    return build


BUNDLED = {
    "harmonic_oscillator": lambda: S.harmonic_oscillator(3),
    "damped_oscillator": S.damped_oscillator,
    "pendulum": S.pendulum,
    "double_pendulum": S.double_pendulum,
    "free_rigid_body": S.free_rigid_body,
    "free_rigid_body_cayley": lambda: S.free_rigid_body(retraction="cayley"),
    "heavy_top": S.heavy_top,
    "heavy_top_cayley": lambda: S.heavy_top(retraction="cayley"),
    "inclined_knife_edge": S.inclined_knife_edge,
    "inclined_knife_edge_so2xr2": lambda: S.inclined_knife_edge(retraction="so2xr2"),
    "chaplygin_sled": S.chaplygin_sled,
    "differential_drive": S.differential_drive,
    "lc_circuit": S.lc_circuit,
    "spherical_pendulum": S.spherical_pendulum,
    "mass_spring_monolithic": _interconnected("mass_spring_monolithic"),
    "mass_spring_torn": _interconnected("mass_spring_torn"),
    "lc_from_elements": _interconnected("lc_from_elements"),
    "rolling_disk": _interconnected("rolling_disk"),
    "rolling_ball": _interconnected("rolling_ball"),
    "two_wheel_cart": _interconnected("two_wheel_cart"),
}


def automatic_twin(sysm: LagrangeDiracSystem) -> LagrangeDiracSystem:
    """The same Lagrangian and parameters with automatic partials."""
    return LagrangeDiracSystem(sysm.Q, lambda q, v, *p: sysm.lagrangian(q, v, *p), params=sysm.params,
                               name=f"{sysm.name}_autodiff")


@pytest.mark.parametrize("name", sorted(BUNDLED))
@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_autodiff_matches_analytic(name, batch):
    sysm = BUNDLED[name]()
    assert not sysm.uses_automatic_partials, f"{name} ships no analytic partials"
    twin = automatic_twin(sysm)
    rng = np.random.default_rng(zlib.crc32(f"{name}{batch}".encode()))
    q = sysm.Q.random_point(rng, batch)
    v = rng.standard_normal((*batch, sysm.dim))
    both = jax.jit(lambda q, v: (sysm.evaluate("partials", q, v), twin.evaluate("partials", q, v)))
    (aq, av), (cq, cv) = both(q, v)
    for a, c in ((aq, cq), (av, cv)):
        a, c = np.asarray(a), np.asarray(c)
        assert c.shape == (*batch, sysm.dim)
        np.testing.assert_allclose(c, a, rtol=1e-12, atol=1e-12 * (1 + np.max(np.abs(a))))


@pytest.mark.slow
def test_autodiff_on_a_product_manifold():
    Q = ProductManifold(SO3(), Euclidean(2), SE2())

    def L(q, v):
        R, x, g = q
        return 0.5 * jnp.sum(v * v) + R[2, 0] * x[0] + g[0, 2] * v[5] + jnp.sin(x[1])

    sysm = LagrangeDiracSystem(Q, L)
    rng = np.random.default_rng(0)
    q = Q.random_point(rng, (3,))
    v = rng.standard_normal((3, Q.dim))
    err = sysm.check_partials(jax.tree.map(lambda a: a[0], q), v[0])
    assert err < 1e-7


def test_check_partials_catches_wrong_analytic_partials():
    good = S.pendulum()
    bad = LagrangeDiracSystem(good.Q, lambda q, v: good.lagrangian(q, v),
                              partials=lambda q, v: (jnp.sin(q), v))
    with pytest.raises(ValueError, match="disagree with finite differences"):
        bad.check_partials(np.array([0.3]), np.array([0.2]))
    assert good.check_partials(np.array([0.3]), np.array([0.2])) < 1e-8


def test_a_lagrangian_with_abs_is_differentiated_and_one_in_plain_numpy_is_refused():
    """Was: a Lagrangian that is not complex-safe (``np.abs``) is refused. Autodiff
    differentiates ``jnp.abs`` correctly; what it cannot trace -- plain numpy,
    ``float()`` -- is refused when the system is built, saying what to change."""
    sysm = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * jnp.abs(v[0]) ** 2)
    dq, dv = sysm.partials(jnp.array([0.0]), jnp.array([1.0]))
    np.testing.assert_array_equal(np.asarray(dv), [1.0])
    np.testing.assert_array_equal(np.asarray(dq), [0.0])
    with pytest.raises(TypeError, match="jax.numpy"):
        LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * float(np.abs(v[0])) ** 2)


def test_a_lagrangian_for_batches_is_refused():
    """Was: a Lagrangian that does not broadcast over leading axes is refused. Now
    a Lagrangian is for one point (``v[0] ** 2 + v[1] ** 2`` is right); one that
    returns a batch instead of a scalar is refused when the system is built."""
    sysm = LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * (v[0] ** 2 + v[1] ** 2))
    np.testing.assert_allclose(np.asarray(sysm.partials(jnp.zeros(2), jnp.ones(2))[1]), [1.0, 1.0])
    with pytest.raises(ValueError, match="must return a scalar"):
        LagrangeDiracSystem(Euclidean(2), lambda q, v: 0.5 * v * v)
