"""Compilation: how many programs an ``integrate`` call compiles, what recompiles, the persistent cache.

Counted in fresh interpreters with ``jax.monitoring`` (XLA backend compiles,
persistent-cache hits), so that nothing compiled by other tests counts.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import user_environment

ROOT = Path(__file__).resolve().parents[1]

_COUNTING = """
import json, sys
import numpy as np
from jax import monitoring
counts = {"compiles": 0, "hits": 0}
def on_duration(event, duration, **kw):
    if event == "/jax/core/compile/backend_compile_duration":
        counts["compiles"] += 1
def on_event(event, **kw):
    if event == "/jax/compilation_cache/cache_hits":
        counts["hits"] += 1
monitoring.register_event_duration_secs_listener(on_duration)
monitoring.register_event_listener(on_event)
import manifold_dirac
from manifold_dirac import integrate, systems as S
from manifold_dirac._manifolds import SO3
out = {}
def count(label, fn):
    before = dict(counts)
    fn()
    out[label] = {k: counts[k] - before[k] for k in counts}
"""


def _run(body: str, cache: str | Path | None = None, env: dict[str, str] | None = None) -> dict:
    user = user_environment()  # the user's defaults: compiling ahead on, XLA's optimization level
    env = {**user, "PYTHONPATH": str(ROOT), "MANIFOLD_DIRAC_JAX_CACHE": str(cache) if cache else "0", **(env or {})}
    code = _COUNTING + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_an_integrate_call_compiles_two_programs_and_nothing_recompiles_them():
    """The start and the loop: two programs; a new system object from the same factory, another stride,
    h, step count, initial data or params compile nothing."""
    out = _run("""
        R0 = np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0])))
        w0 = np.array([0.5, -0.2, 2.0])
        # the eager conversions the checks of q0 use, compiled once per process and shape
        count("warm-up", lambda: integrate(S.free_rigid_body(), R0, v0=w0, h=0.01, n_steps=3))
        count("first", lambda: integrate(S.heavy_top(), R0, v0=w0, h=0.01, n_steps=30))
        count("new object", lambda: integrate(S.heavy_top(), R0, v0=w0, h=0.01, n_steps=30))
        count("stride", lambda: integrate(S.heavy_top(), R0, v0=w0, h=0.01, n_steps=30, stride=7))
        count("h, n_steps, q0, v0", lambda: integrate(S.heavy_top(), np.eye(3), v0=2 * w0, h=0.003, n_steps=1000,
                                                     stride=100))
        import copy
        other = copy.copy(S.heavy_top())
        other.params = {"inertia": np.array([1.0, 1.5, 2.5]), "mgl": np.float64(2.0), "chi": np.array([0.0, 0.6, 0.8])}
        count("params", lambda: integrate(other, R0, v0=w0, h=0.01, n_steps=30))
        # a factory's physical constants are its params: other values are arguments, not new programs
        count("other constants", lambda: integrate(S.heavy_top(mgl=2.0, chi=(0.0, 1.0, 0.0)), R0, v0=w0, h=0.01,
                                                   n_steps=30))
        count("other retraction", lambda: integrate(S.heavy_top(retraction="cayley"), R0, v0=w0, h=0.01, n_steps=30))
    """)
    assert out["first"]["compiles"] == 2, out
    for k in ("new object", "stride", "h, n_steps, q0, v0", "params", "other constants"):
        assert out[k]["compiles"] == 0, (k, out)
    # the count sees a compile: another manifold is another program
    assert out["other retraction"]["compiles"] == 2, out


def test_structure_key_tells_equal_systems_from_different_ones():
    import numpy as np

    from manifold_dirac import systems as S
    from manifold_dirac._mechanics.compile_cache import structure_key

    assert structure_key(S.heavy_top()) == structure_key(S.heavy_top())
    assert structure_key(S.rolling_disk()) == structure_key(S.rolling_disk())
    # a different constant closed over, a different function, a different manifold
    assert structure_key(S.knife_edge()) != structure_key(S.knife_edge(mass=2.0)) or S.knife_edge().params
    assert structure_key(S.heavy_top()) != structure_key(S.heavy_top(retraction="cayley"))
    assert structure_key(S.heavy_top()) != structure_key(S.free_rigid_body())

    from manifold_dirac._manifolds import Euclidean
    from manifold_dirac._mechanics.system import LagrangeDiracSystem

    def make(k):
        return LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v - 0.5 * k * q @ q)

    assert structure_key(make(1.0)) == structure_key(make(1.0))
    assert structure_key(make(1.0)) != structure_key(make(2.0))  # the closed-over stiffness is in the key
    assert structure_key(make(np.ones(1))) != structure_key(make(2 * np.ones(1)))


def test_a_system_differing_only_in_a_closed_over_constant_gets_its_own_program():
    """Sharing programs by structure must not mix up two systems whose functions close over other values."""
    import numpy as np

    from manifold_dirac import integrate
    from manifold_dirac._manifolds import Euclidean
    from manifold_dirac._mechanics.system import LagrangeDiracSystem

    def make(k):
        return LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v - 0.5 * k * q @ q)

    a = integrate(make(1.0), np.array([1.0]), v0=np.array([0.0]), h=0.1, n_steps=20)
    b = integrate(make(4.0), np.array([1.0]), v0=np.array([0.0]), h=0.1, n_steps=20)
    assert abs(a.q[-1, 0] - np.cos(2.0)) < 1e-2 and abs(b.q[-1, 0] - np.cos(4.0)) < 2e-2


@pytest.mark.slow
def test_a_copied_persistent_cache_directory_hits(tmp_path):
    """The cache is relocatable: a process using a copy of another process's cache loads the loop.

    And the setting that makes it so matters: with XLA's own caches written
    into the cache directory (JAX's default), the copy misses.
    """
    body = """
        import jax
        jax.config.update("jax_persistent_cache_enable_xla_caches", XLA_CACHES)
        count("run", lambda: integrate(S.pendulum(), np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=20))
    """
    hits = {}
    for setting in ("none", "all"):
        a, b = tmp_path / setting / "a", tmp_path / setting / "b"
        first = _run(body.replace("XLA_CACHES", repr(setting)), cache=a)
        assert first["run"]["hits"] == 0, first
        shutil.copytree(a, b)
        shutil.rmtree(a)
        hits[setting] = _run(body.replace("XLA_CACHES", repr(setting)), cache=b)["run"]["hits"]
    # the loop (the program that takes seconds to compile) is loaded; programs compiled in under
    # jax_persistent_cache_min_compile_time_secs are not cached
    assert hits["none"] >= 1, hits
    assert hits["all"] == 0, hits


@pytest.mark.slow
def test_a_first_call_compiles_only_the_start_and_the_loop_and_traces_the_step_once():
    """The first ``integrate`` of a fresh process, no warm-up: the start and the chunk, no small eager programs
    (the checks of ``q0`` and the probe of the user's functions are host work), and the step map traced once
    inside the chunk (its shape queries reuse that trace); a batch, the same."""
    out = _run("""
        from manifold_dirac._mechanics.step import StepMap
        traces = {"n": 0}
        plain = StepMap.step
        def counted(self, *a, **kw):
            traces["n"] += 1
            return plain(self, *a, **kw)
        StepMap.step = counted
        R0 = np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0])))
        w0 = np.array([0.5, -0.2, 2.0])
        count("first", lambda: integrate(S.heavy_top(), R0, v0=w0, h=0.01, n_steps=30))
        out["traces"] = traces["n"]
        count("batch", lambda: integrate(S.heavy_top(), np.stack([R0, R0]), v0=np.stack([w0, w0]), h=0.01, n_steps=30))
        out["batch traces"] = traces["n"] - out["traces"]
    """)
    assert out["first"]["compiles"] == 2, out
    assert out["traces"] == 1, out
    assert out["batch"]["compiles"] == 2, out
    assert out["batch traces"] == 1, out
