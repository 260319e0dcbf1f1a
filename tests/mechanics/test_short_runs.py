"""Short runs and runs around a chunk's length: the same points as a long run, and no recompilation.

A run is a sequence of calls of one compiled loop program (a *chunk*: up to
``CHUNK`` stored points per call); the host keeps the step index between
calls. A run shorter than a chunk, one of exactly one chunk of stored
points and one of a chunk and one point must store the same points as a
longer run (its prefix, to the bit: the same steps from the same states),
and another ``n_steps``, ``stride`` or ``h`` must not compile anything new.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._run import loop
from manifold_dirac._run.loop import CHUNK, _after
from manifold_dirac._run.programs import compiled_functions

Q0, V0, H = np.array([1.2]), np.array([0.3]), 0.02
FIELDS = ("t", "q", "p", "v", "energy")
RECORDS = ("xi", "iterations", "residual")


@pytest.fixture(scope="module")
def pendulum():
    return md.systems.pendulum()


@pytest.fixture(scope="module")
def long_run(pendulum):
    """Stride 1 over two chunks and a few points (three calls of the loop program)."""
    return md.integrate(pendulum, Q0, v0=V0, h=H, n_steps=2 * CHUNK + 5)


def _compiled_count(system) -> int:
    return sum(f._cache_size() for f in compiled_functions(system).values())


def _assert_prefix(tr, ref, idx):
    """``tr`` stores the points ``idx`` of ``ref`` (and the steps from them but the last), to the bit."""
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(tr, f), getattr(ref, f)[idx], err_msg=f)
    for f in RECORDS:
        np.testing.assert_array_equal(getattr(tr, f), getattr(ref, f)[idx[:-1]], err_msg=f)


@pytest.mark.parametrize("n_steps", [4, CHUNK - 1, CHUNK, CHUNK + 1])
def test_a_run_around_one_chunk_stores_the_prefix_of_a_longer_run(pendulum, long_run, n_steps):
    """Shorter than a chunk; exactly one chunk of stored points (``CHUNK - 1`` steps); one point more, whose
    last point comes from a second call; two points more."""
    tr = md.integrate(pendulum, Q0, v0=V0, h=H, n_steps=n_steps)
    assert tr.ok and tr.n_points == n_steps + 1 and tr.meta["n_steps"] == n_steps
    _assert_prefix(tr, long_run, np.arange(n_steps + 1))


@pytest.mark.parametrize("n_steps, stride", [(4, 3), (10, 4), (3, 7), (3 * CHUNK + 2, 3)])
def test_a_stride_that_does_not_divide_n_steps_stores_the_last_point(pendulum, long_run, n_steps, stride):
    """Every ``stride``-th point and the last: ``n_steps`` not a multiple of ``stride``, ``stride > n_steps``, and
    a run whose stored points span two chunks (``CHUNK + 2`` of them)."""
    tr = md.integrate(pendulum, Q0, v0=V0, h=H, n_steps=n_steps, stride=stride)
    idx = np.append(np.arange(0, n_steps, stride), n_steps)
    ref = long_run if n_steps <= 2 * CHUNK + 5 else md.integrate(pendulum, Q0, v0=V0, h=H, n_steps=n_steps)
    assert tr.n_points == len(idx) and tr.meta["total_iterations"] == int(np.sum(ref.iterations[:n_steps]))
    _assert_prefix(tr, ref, idx)


def test_the_host_step_index_is_what_the_chunk_advances(pendulum, long_run, monkeypatch):
    """The host keeps the step index between calls (the loop program does not return it): a wrong index breaks
    the equality above from the second call on, so the check can fail."""
    monkeypatch.setattr(loop, "_after", lambda *a: _after(*a) - 1)
    tr = md.integrate(pendulum, Q0, v0=V0, h=H, n_steps=CHUNK + 1)
    assert np.array_equal(tr.t[:CHUNK], long_run.t[:CHUNK])  # the first call does not use it
    assert not np.array_equal(tr.t[CHUNK:], long_run.t[CHUNK:CHUNK + 2]) and tr.meta["n_steps"] != CHUNK + 1


def test_after_counts_the_steps_of_the_live_slots():
    """The host's step index against a slot-by-slot count of the loop program's rule (each slot ``stride``
    steps up to ``n_total``, at most ``rows`` slots per call)."""
    for k in (0, 3, 10):
        for stride in (1, 2, 5):
            for n_total in (k, k + 1, k + 7, k + 40):
                for slot0, n_slots in ((0, 0), (0, 1), (0, 4), (2, 9), (3, 2)):
                    for rows in (1, 3, 8):
                        kk = k
                        for _ in range(min(max(n_slots - slot0, 0), rows)):
                            kk = min(kk + stride, n_total) if kk < n_total else kk
                        assert _after(k, slot0, n_slots, stride, n_total, rows) == kk


def test_no_compilation_for_another_length_stride_or_step(pendulum):
    """A short run, a run of three chunks and the short run again, other strides and steps: the same two programs
    (the start and the loop) serve all of them."""
    md.integrate(pendulum, Q0, v0=V0, h=H, n_steps=4)
    n = _compiled_count(pendulum)
    for n_steps, stride, h in ((10_000, 1, H), (4, 1, H), (4, 9, 0.03), (10_000, 7, 0.01), (1, 1, H)):
        md.integrate(pendulum, Q0, v0=V0, h=h, n_steps=n_steps, stride=stride)
    assert _compiled_count(pendulum) == n  # (that the count sees a compilation: the test below)


@pytest.mark.slow  # two compilations of a new system, ~8 s
def test_a_new_system_compiles_two_programs():
    """At most two compilations per call: a system of a structure never seen (a closure constant of its own)
    compiles its start and its loop, once each (and the count above sees them)."""
    g = 9.0 + np.random.default_rng().random()  # a value no other test uses: a structure of its own

    def lagrangian(q, v):
        return 0.5 * v[0] ** 2 + g * jnp.cos(q[0])

    system = md.LagrangeDiracSystem(md.Euclidean(1), lagrangian, name="short-run pendulum")
    assert _compiled_count(system) == 0
    md.integrate(system, Q0, v0=V0, h=H, n_steps=4)
    assert _compiled_count(system) == 2
    md.integrate(system, Q0, v0=V0, h=H, n_steps=CHUNK + 3, stride=2)
    assert _compiled_count(system) == 2
