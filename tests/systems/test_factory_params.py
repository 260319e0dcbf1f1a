"""The bundled systems' physical constants are their ``params``: traced arguments, never compiled in.

Another value of a constant (``heavy_top(mgl=2)``) therefore runs the program
compiled for the defaults, and must run it with its own value: the result
equals that of a system written by hand with the constant built in.
"""

from __future__ import annotations

import inspect
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac import systems as S
from manifold_dirac._manifolds import SE2, SO3
from manifold_dirac._mechanics.compile_cache import structure_key


def _factories():
    out = []
    for name in sorted(S.__all__):
        f = getattr(S, name)
        if not inspect.isfunction(f) or name.endswith(("_exact", "_reference", "_initial")):
            continue
        try:
            sysm = f()
        except TypeError:  # needs arguments: not a factory of a bundled system
            continue
        if isinstance(sysm, md.LagrangeDiracSystem) and sysm.params is not None:
            out.append(name)
    return out


def _closed_over_values(fn) -> list[str]:
    """Names of the numbers, arrays and containers ``fn`` closes over: constants compiled into the program.

    (Functions and objects such as a manifold are structure, not constants.)
    """
    cells = zip(fn.__code__.co_freevars, fn.__closure__ or ())
    constant = (int, float, complex, np.ndarray, np.generic, jax.Array, dict, list, tuple)
    return [n for n, c in cells if isinstance(c.cell_contents, constant)]


def _user_functions(sysm):
    return {k: v for k, v in vars(sysm).items() if isinstance(v, types.FunctionType)}


@pytest.mark.parametrize("name", _factories())
def test_a_bundled_system_closes_over_no_constant(name):
    sysm = getattr(S, name)()
    found = {k: _closed_over_values(f) for k, f in _user_functions(sysm).items() if _closed_over_values(f)}
    assert not found, f"{name}: its functions close over {found}; pass them as params instead"


def test_the_closure_check_sees_a_constant():
    """A factory whose L falls back on its default constants is caught."""
    P = {"k": 1.0}

    def L(q, v, p=None):
        p = P if p is None else p
        return 0.5 * jnp.sum(v * v) - 0.5 * p["k"] * jnp.sum(q * q)

    assert _closed_over_values(L) == ["P"]


def test_other_constants_share_the_structure_key():
    assert structure_key(S.heavy_top()) == structure_key(S.heavy_top(mgl=2.0, chi=(0.0, 0.6, 0.8)))
    assert structure_key(S.knife_edge()) == structure_key(S.knife_edge(mass=2.0, inertia=0.1))
    assert structure_key(S.pendulum()) == structure_key(S.pendulum(length=2.0))


def _heavy_top_by_hand(mgl):
    from manifold_dirac.systems.rigid_bodies import DEFAULT_INERTIA

    inertia = np.asarray(DEFAULT_INERTIA, dtype=float)

    def L(q, v):
        return 0.5 * jnp.sum(inertia * v * v) - mgl * q[2, 2]

    return md.LagrangeDiracSystem(SO3(), L)


@pytest.mark.slow
def test_heavy_top_with_another_mgl_runs_with_its_own_value():
    """mgl=2 after mgl=1 (the same compiled programs): differs from mgl=1, equals the hand-built mgl=2."""
    R0 = np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0])))
    w0 = np.array([0.5, -0.2, 2.0])
    run = dict(v0=w0, h=0.01, n_steps=200, stride=50)
    one = md.integrate(S.heavy_top(), R0, **run)
    two = md.integrate(S.heavy_top(mgl=2.0), R0, **run)
    ref = md.integrate(_heavy_top_by_hand(2.0), R0, **run)
    ref1 = md.integrate(_heavy_top_by_hand(1.0), R0, **run)
    assert np.max(np.abs(two.q - ref.q)) <= 1e-12
    assert np.max(np.abs(two.p - ref.p)) <= 1e-12
    assert np.max(np.abs(one.q - ref1.q)) <= 1e-12
    assert np.max(np.abs(two.q - one.q)) > 1e-3  # the constant matters: the check can fail


@pytest.mark.slow
def test_knife_edge_with_another_mass_runs_with_its_own_value():
    from manifold_dirac.systems import KNIFE_EDGE_CONSTRAINT

    def by_hand(mass, inertia):
        def L(q, v):
            return 0.5 * mass * (v[1] ** 2 + v[2] ** 2) + 0.5 * inertia * v[0] ** 2

        return md.LagrangeDiracSystem(SE2(), L, KNIFE_EDGE_CONSTRAINT)

    q0 = np.asarray(SE2().identity())
    run = dict(v0=np.array([1.0, 1.0, 0.0]), h=0.05, n_steps=100, stride=25)
    one = md.integrate(S.knife_edge(), q0, **run)
    two = md.integrate(S.knife_edge(mass=2.0, inertia=0.2), q0, **run)
    ref = md.integrate(by_hand(2.0, 0.2), q0, **run)
    assert np.max(np.abs(two.q - ref.q)) <= 1e-12
    assert np.max(np.abs(two.p - ref.p)) <= 1e-12
    assert np.max(np.abs(two.p - one.p)) > 1e-3
