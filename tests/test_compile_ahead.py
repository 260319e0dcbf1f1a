"""The loop compiled in the background while the start compiles (``_run/ahead.py``).

Counted in fresh interpreters (``tests/test_compile.py``'s counting): the
same two programs are compiled, once each, with the same values, whether
the loop is compiled ahead or not; the layer on disk and a user's traced
system both; a refused start leaves the loop's executable for the next call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
import manifold_dirac._spawn as SP
from manifold_dirac._errors import RunInterrupted
from manifold_dirac._manifolds import Euclidean
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac._run import ahead
from tests.test_compile import _run

_BODY = """
import threading
import manifold_dirac._run.ahead as AH
off_main = []
monitoring.register_event_duration_secs_listener(lambda event, d, **kw: off_main.append(
    threading.current_thread() is not threading.main_thread()) if event.endswith("backend_compile_duration") else None)
HO = S.harmonic_oscillator()  # Euclidean(1): quick to compile, the counts are what matter
q0, v0 = np.array([0.3]), np.array([0.1])
res = {}
def run(label, **kw):
    def go():
        res[label] = integrate(HO, q0, v0=v0, h=0.05, n_steps=60, stride=7, **kw)
    count(label, go)
run("first")
run("again")
run("controls", controls=np.full((60, 1), 0.01))
q0b, v0b = np.array([[0.3], [-0.2]]), np.array([[0.1], [0.4]])
count("batch", lambda: res.setdefault("batch", integrate(HO, q0b, v0=v0b, h=0.05, n_steps=60, stride=7)))
for fn, future in list(AH._pending.values()):
    future.result()
out["submitted"] = AH.stats["submitted"]
out["off_main"] = sum(off_main)
out["values"] = {k: np.concatenate([np.ravel(tr.q), np.ravel(tr.p), np.ravel(tr.energy)]).tolist()
                 for k, tr in res.items()}
"""


pytestmark = pytest.mark.skipif(SP.cpu_count() < 2, reason="compiling ahead needs two CPUs (it is off on one)")


@pytest.fixture(autouse=True)
def _switched_on(monkeypatch):
    """The user's default, which the suite's conftest switches off for the other tests (its workers fill the CPUs)."""
    monkeypatch.delenv(ahead.ENV, raising=False)


@pytest.fixture(scope="module")
def on_off(tmp_path_factory):
    """The same calls with compiling ahead on and off, per path, run on first use: cache off (traced programs),
    the layer on disk exporting (an empty cache), and loading (a second process on that cache)."""
    out: dict = {}
    where = {on: tmp_path_factory.mktemp(f"cache{on}") for on in ("1", "0")}

    def get(cache, on):
        if (cache, on) not in out:
            env = {"MANIFOLD_DIRAC_COMPILE_AHEAD": on, "PJRT_NPROC": ""}
            if cache == "loaded":
                get("disk", on)  # the process that wrote the cache it loads
            out[cache, on] = _run(_BODY, cache=None if cache is None else where[on], env=env)
        return out[cache, on]

    return get


# in the slow tier (two fresh processes per case, ~13 s cold; tests/_tiers.py)
@pytest.mark.parametrize("cache", [None, "disk", "loaded"])
@pytest.mark.slow
def test_compiling_ahead_compiles_the_same_two_programs_once_with_the_same_values(on_off, cache):
    on, off = on_off(cache, "1"), on_off(cache, "0")
    assert on["submitted"] == 3 and off["submitted"] == 0  # first, controls, batch: new loops; again: none
    assert on["off_main"] == 3 and off["off_main"] == 0  # those three loops compiled in the background thread
    for label in ("first", "controls", "batch"):
        assert on[label]["compiles"] == off[label]["compiles"] == 2, (label, on[label], off[label])
    assert on["again"]["compiles"] == off["again"]["compiles"] == 0
    assert on["values"] == off["values"]  # bit for bit


@pytest.mark.slow
def test_a_loop_compiled_ahead_for_other_shapes_would_be_a_third_program():
    """Sensitivity of the count above: the loop lowered ahead with a wrong argument type (int64 counts) is another
    program, and the run compiles its own, three programs, so the count sees arguments that do not match."""
    patch = """
import manifold_dirac._run.ahead as AH0
_orig = AH0.compile_in_background
AH0.compile_in_background = lambda fn, args: _orig(fn, (*args[:2], np.zeros(6, np.int64), *args[3:]))
"""
    for cache in (None, "disk"):
        out = _run(patch + _BODY.split('run("again")')[0], env={"MANIFOLD_DIRAC_COMPILE_AHEAD": "1", "PJRT_NPROC": ""},
                   cache=None if cache is None else _tmp())
        assert out["first"]["compiles"] == 3, cache


def _tmp():
    import tempfile

    return tempfile.mkdtemp(prefix="md-ahead-")


@pytest.mark.slow
def test_a_refused_start_leaves_the_loop_compiled_for_the_next_call():
    """v0 off the knife edge's constraint is refused by the start's checks; the loop compiled meanwhile serves the
    corrected call, which compiles nothing."""
    out = _run("""
import manifold_dirac._run.ahead as AH
KE = S.knife_edge()
q0 = np.asarray(KE.Q.from_coordinates([0.1, -0.2, 0.3]))
def bad():
    try:
        integrate(KE, q0, v0=np.array([0.8, 1.0, 0.3]), h=0.05, n_steps=60)
    except ValueError as exc:
        out["message"] = str(exc)
count("refused", bad)
out["pending"] = len(AH._pending)
for fn, future in list(AH._pending.values()):
    future.result()  # the loop's compile in the background, finished
v0 = np.array([0.8, 1.0, 0.0])
count("next", lambda: integrate(KE, q0, v0=v0, h=0.05, n_steps=60))
""", env={"MANIFOLD_DIRAC_COMPILE_AHEAD": "1", "PJRT_NPROC": ""})
    assert "Delta" in out["message"] or "constraint" in out["message"], out["message"]
    assert out["pending"] == 1 and out["next"]["compiles"] == 0


def test_compiling_ahead_is_off_where_it_cannot_pay_or_is_switched_off(monkeypatch):
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    monkeypatch.delenv(ahead.ENV, raising=False)
    monkeypatch.setattr(SP, "cpu_count", lambda: 2)
    assert ahead.enabled()
    monkeypatch.setattr(SP, "cpu_count", lambda: 1)
    assert not ahead.enabled()  # one CPU: nothing to overlap
    monkeypatch.setattr(SP, "cpu_count", lambda: 4)
    monkeypatch.setenv("PJRT_NPROC", "1")
    assert not ahead.enabled()  # a worker told to use one thread (the tour's, a sweep's)
    monkeypatch.delenv("PJRT_NPROC")
    monkeypatch.setenv(ahead.ENV, "0")
    assert not ahead.enabled()


def _spring(q, v, params=None):
    return 0.5 * v @ v - 0.5 * q @ q


def test_a_ctrl_c_while_the_run_waits_for_its_loop_is_a_run_interrupted():
    """The wait for the loop's compile is part of the first chunk's call: a Ctrl-C there is RunInterrupted (with
    nothing stored), as during a chunk, not a bare KeyboardInterrupt."""
    integ = md.Integrator(LagrangeDiracSystem(Euclidean(2), _spring), h=0.1)
    state = integ.initial_state(np.array([0.3, -0.1]), v0=np.array([0.0, 0.2]))
    fn = integ._chunk_program(0, True)

    class Interrupted:
        def exception(self):
            raise KeyboardInterrupt

        def done(self):
            return False

    ahead._pending[id(fn)] = (fn, Interrupted())
    try:
        with pytest.raises(RunInterrupted):
            integ.run(state, 10)
    finally:
        ahead._pending.pop(id(fn), None)
    assert integ.run(state, 10).ok  # without the pending compile the same run goes through


class _WeakPoints(Euclidean):
    """A Euclidean space whose checked points are weakly typed JAX arrays (as ``jnp.asarray(0.3)`` is)."""

    def _check_point_host(self, q, name="q"):
        from jax._src.lax.lax import _convert_element_type  # a weakly typed array (JAX's own route to one)

        return _convert_element_type(jnp.asarray(super()._check_point_host(q, name=name)), weak_type=True)


def test_the_state_shapes_keep_a_weakly_typed_initial_point():
    """The start passes q0 through to its state: a weakly typed q0 gives a weakly typed state, and the loop lowered
    ahead must take the same types (or the run compiles a third program)."""
    integ = md.Integrator(LagrangeDiracSystem(_WeakPoints(2), _spring), h=0.1)
    start = integ._start(np.array([0.3, -0.1]), np.array([0.0, 0.2]), None, 0.0, None)
    assert start.q0.weak_type
    members, _ = start.fn(*start.args)
    shapes = integ._member_shapes(start)
    assert jax.tree.map(lambda a: (a.shape, a.dtype, a.weak_type), members) == \
        jax.tree.map(lambda a: (a.shape, a.dtype, a.weak_type), shapes)
