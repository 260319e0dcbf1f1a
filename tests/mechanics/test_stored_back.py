"""The stored point's backward chart coordinate ``-R_{q_k}^{-1}(q_{k-1})``: the last step's ``xi`` where that is exact.

The central-difference velocity of a stored point,
``(R_{q_k}^{-1}(q_{k+1}) - R_{q_k}^{-1}(q_{k-1})) / (2h)``, needs the step
backwards seen from ``q_k``. With a symmetric retraction
(``R_{q_1}^{-1}(q_0) = -R_{q_0}^{-1}(q_1)``) that is the last step's own
``xi`` (``q_k = R_{q_{k-1}}(xi)``), which the compiled loop carries from
slot to slot; the first point of every chunk, and every point of a
retraction that is not symmetric, computes it from the two points.

Checked here against the central difference computed on the host from the
stored points (an independent route), with chunks of a few points (so that
chunk boundaries fall inside the run), from ``q0`` and from a state that
knows ``q_{k-1}``; against the loop that computes every point from the two
points (the previous route: every recorded field within ``1e-12``); and
with the shortcut forced onto a retraction that is not symmetric (SE(2)'s
``so2xr2``), where the check must fail.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._mechanics import compile_cache
from manifold_dirac._run import loop, recording
from manifold_dirac.systems import inclined_knife_edge

from .test_engine_reference import deviations

POSE = np.eye(3)
V0 = np.array([1.0, 0.5, 0.0])
H = 0.05
N = 23
FIELDS = ("t", "p", "v", "energy", "slip", "holonomic_violation", "xi", "mu", "constraint_residual", "residual")


@pytest.fixture
def small_chunks(monkeypatch):
    """5 points per call of the compiled loop at stride 1: chunk boundaries fall inside the run (no recompile)."""
    monkeypatch.setattr(loop, "CHUNK_STEPS", 5)
    return monkeypatch


@pytest.fixture
def fresh_programs(small_chunks):
    """Programs built for this test only and dropped after it (a patched route never serves another test)."""
    compile_cache.clear()
    yield small_chunks
    compile_cache.clear()


def central_velocity(Q, q, h):
    """``(R_{q_k}^{-1}(q_{k+1}) - R_{q_k}^{-1}(q_{k-1})) / (2h)`` at the interior stored points, on the host."""
    q = jnp.asarray(q)
    fwd = jax.vmap(Q.inverse_retract)(q[1:-1], q[2:])
    back = jax.vmap(Q.inverse_retract)(q[1:-1], q[:-2])
    return np.asarray((fwd - back) / (2 * h))


def velocity_error(tr, Q, h):
    """Largest deviation of the stored interior velocities from the host's central difference (relative)."""
    ref = central_velocity(Q, tr.q, h)
    return float(np.max(np.abs(np.asarray(tr.v)[1:-1] - ref)) / np.max(np.abs(ref)))


def test_symmetric_retraction_carries_the_step(small_chunks):
    """SE(2) ``exp``: the carried ``xi`` gives the central difference of the stored points, across chunk boundaries."""
    system = inclined_knife_edge()
    assert recording.back_from_step(md.Integrator(system, h=H).stepmap)
    tr = md.integrate(system, POSE, v0=V0, h=H, n_steps=N)
    assert velocity_error(tr, system.Q, H) < 1e-12
    np.testing.assert_array_equal(tr.v[0], V0)  # the given v0 at the first point of a run from q0
    # a composition recovers its xi by an inverse retraction (keeping the previous one where that is not finite):
    # its points take the two-point route
    assert not recording.back_from_step(md.Integrator(system, h=H, composition="triple_jump4").stepmap)


@pytest.mark.slow
def test_shortcut_on_an_asymmetric_retraction_is_caught(fresh_programs):
    """SE(2) ``so2xr2`` is not symmetric: the carried ``xi`` forced onto it breaks the central difference."""
    system = inclined_knife_edge(retraction="so2xr2")
    assert not recording.back_from_step(md.Integrator(system, h=H).stepmap)
    fresh_programs.setattr(loop, "back_from_step", lambda sm: True)
    tr = md.integrate(system, POSE, v0=V0, h=H, n_steps=N)
    assert velocity_error(tr, system.Q, H) > 1e-4


@pytest.mark.slow
@pytest.mark.parametrize("retraction", ["exp", "cayley", "so2xr2"])
def test_continued_run(small_chunks, retraction):
    """From a state that knows ``q_{k-1}`` (after one step): the first point's velocity is its central difference."""
    system = inclined_knife_edge(retraction=retraction)
    integ = md.Integrator(system, h=H)
    state = integ.initial_state(POSE, v0=V0)
    first = integ.run(state, N)
    after, _ = integ.step(state)
    cont = integ.run(after, N)
    for tr in (first, cont):
        assert velocity_error(tr, system.Q, H) < 1e-12
    v1 = central_velocity(system.Q, np.concatenate([first.q[:1], cont.q[:2]]), H)[0]
    np.testing.assert_allclose(cont.v[0], v1, rtol=0, atol=1e-12 * np.max(np.abs(v1)))
    np.testing.assert_allclose(cont.v[:-2], first.v[1:-1], rtol=0, atol=1e-12)  # the same motion, one step later


def _fields(tr):
    out = {k: np.asarray(getattr(tr, k)) for k in FIELDS}
    for i, leaf in enumerate(jax.tree.leaves(tr.q)):
        out[f"q/{i}"] = np.asarray(leaf)
    return out


CASES = {
    "se2_exp": (inclined_knife_edge, POSE, V0),
    "se2_cayley": (lambda: inclined_knife_edge(retraction="cayley"), POSE, V0),
    "se2_so2xr2": (lambda: inclined_knife_edge(retraction="so2xr2"), POSE, V0),
    "so3_exp": (md.systems.heavy_top, np.eye(3), np.array([0.5, -0.2, 2.0])),
    "so3_cayley": (lambda: md.systems.heavy_top(retraction="cayley"), np.eye(3), np.array([0.5, -0.2, 2.0])),
    "euclidean": (md.systems.double_pendulum, np.array([1.0, -0.5]), np.array([0.3, 0.1])),
    "product_se2_r": (md.systems.rolling_disk, (POSE, np.zeros(1)), np.array([0.7, 1.0, 0.0, 2.0])),
    "sphere": (md.systems.spherical_pendulum, np.array([0.6, 0.0, -0.8]), np.array([0.4, 0.9])),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_every_retraction_matches_the_two_point_route(fresh_programs, name):
    """Every recorded field within ``1e-12`` of the loop that computes ``-R_{q_k}^{-1}(q_{k-1})`` at every point."""
    make, q0, v0 = CASES[name]
    system = make()

    def both():
        integ = md.Integrator(system, h=0.01)
        state = integ.initial_state(q0, v0=v0)
        after, _ = integ.step(state)
        return [_fields(integ.run(s, 31)) for s in (state, after)] + [_fields(integ.run(after, 31, stride=4))]

    new = both()
    compile_cache.clear()
    fresh_programs.setattr(loop, "back_from_step", lambda sm: False)
    old = both()
    for got, ref in zip(new, old, strict=True):
        dev = deviations({f"r/{k}": v for k, v in ref.items()}, "r", got)
        assert max(dev.values()) <= 1e-12, (name, dev)
