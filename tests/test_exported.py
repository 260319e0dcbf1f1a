"""Bundled systems' programs kept on disk as serialized exports: the key, the fallback, a copied cache.

The programs are the harmonic oscillator's and the pendulum's (cheap to
compile); what is checked is the layer, not the step.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac import systems as S
from manifold_dirac._manifolds.euclidean import Euclidean
from manifold_dirac._mechanics import compile_cache
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac._run import exported

ROOT = Path(__file__).resolve().parents[1]
Q0, V0 = np.array([0.7]), np.array([0.2])


def _spring(q, v):
    return 0.5 * v @ v - 0.5 * q @ q


def _parts(system, kind=("chunk", False, True), **kw):
    sm = md.Integrator(system, 0.1, **kw).stepmap
    return (sm.system, sm.scheme, sm.rule, sm.options, getattr(sm, "composition", None), kind)


# ------------------------------------------------------------------------------------------------ the key
def test_the_key_is_shared_by_equal_systems_and_changes_with_what_is_traced():
    a = exported.static_key(_parts(S.harmonic_oscillator()))
    assert a is not None and a == exported.static_key(_parts(S.harmonic_oscillator(stiffness=3.0)))  # params
    assert exported.static_key(_parts(S.harmonic_oscillator(n=2))) != a  # a structural argument
    assert exported.static_key(_parts(S.pendulum())) != a
    assert exported.static_key(_parts(S.harmonic_oscillator(), kind=("chunk", True, True))) != a
    assert exported.static_key(_parts(S.harmonic_oscillator(), discrete_lagrangian="gauss4")) != a
    assert exported.static_key(_parts(S.heavy_top(retraction="cayley"))) != exported.static_key(
        _parts(S.heavy_top()))


def test_every_bundled_system_is_kept_on_disk():
    """The catalog's systems' programs are keyed (kept on disk, loaded by a new process without tracing): a system
    that captures an object the key cannot write (a jitted function, say) would be traced in every process."""
    from manifold_dirac.systems.catalog import EXAMPLES

    unkeyed = []
    for name in EXAMPLES:
        system = md.get_example(name).system()
        for kind in (("start", 0, True, True), ("chunk", False, True)):
            if exported.static_key(_parts(system, kind=kind)) is None:
                unkeyed.append((name, kind[0]))
    assert not unkeyed


def test_the_key_changes_with_the_package_source_and_the_versions(monkeypatch):
    parts = _parts(S.harmonic_oscillator())
    a = exported.static_key(parts)
    env = exported._environment()
    monkeypatch.setattr(exported, "_environment", lambda: env.replace(b"jax ", b"jax 0.0.0 "))
    assert exported.static_key(parts) != a
    monkeypatch.setattr(exported, "_environment", lambda: env + b"another source")
    assert exported.static_key(parts) != a


def test_the_key_holds_no_path():
    text = exported.key_text(_parts(S.heavy_top()))
    assert "C_mechanics/" in text or "Csystems/" in text  # package code, by its path in the package
    assert str(exported._PACKAGE) not in text and os.getcwd() not in text


def test_a_class_patched_at_run_time_changes_the_key(monkeypatch):
    """A class attribute or method patched after the programs were written is seen (a test may patch one)."""
    from manifold_dirac._manifolds.base import Manifold
    from manifold_dirac._manifolds.lie_group import Cayley

    parts = _parts(S.free_rigid_body(retraction="cayley"))
    a = exported.static_key(parts)
    monkeypatch.setattr(Cayley, "max_rotation", Cayley.max_rotation / 2)
    assert exported.static_key(parts) not in (a, None)
    monkeypatch.undo()
    assert exported.static_key(parts) == a
    monkeypatch.setattr(Manifold, "_validate", lambda self, *a: None)
    assert exported.static_key(parts) is None  # a function of elsewhere


def test_code_outside_the_package_is_not_keyed():
    assert exported.static_key(_parts(LagrangeDiracSystem(Euclidean(1), _spring))) is None
    with pytest.raises(exported._Unkeyable, match="code of"):
        exported._write(_spring.__code__, [])

    class Local:
        pass

    with pytest.raises(exported._Unkeyable, match="class"):
        exported._write(Local, [])
    with pytest.raises(exported._Unkeyable, match="identity"):
        exported._write(compile_cache._Identity(object()), [])


# ----------------------------------------------------------------------------- loading, and the fallback
def _run(system=None):
    """A fresh process's first run, as far as the in-process table goes: returns (results, stats delta)."""
    compile_cache.clear()
    before = dict(exported.stats)
    tr = md.integrate(system or S.harmonic_oscillator(), Q0, v0=V0, h=0.1, n_steps=40, stride=3)
    delta = {k: exported.stats[k] - before[k] for k in before}
    return np.concatenate([tr.q.ravel(), tr.p.ravel(), tr.v.ravel(), tr.energy.ravel()]), delta


@pytest.fixture(scope="module")
def traced():
    """The oscillator's results with the layer off (the programs traced as for any system)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MANIFOLD_DIRAC_EXPORT", "0")
        out, delta = _run()
    compile_cache.clear()
    assert delta == dict.fromkeys(delta, 0)
    return out


@pytest.fixture(scope="module")
def filled(tmp_path_factory, traced):
    """A directory holding the oscillator's two programs, written by a first run (checked here)."""
    d = tmp_path_factory.mktemp("exported")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(exported, "directory", lambda: d)
        out, delta = _run()
    compile_cache.clear()
    assert (delta["exported"], delta["loaded"]) == (2, 0) and len(_files(d)) == 2  # start and loop
    np.testing.assert_array_equal(out, traced)
    return d


@pytest.fixture
def disk(tmp_path, monkeypatch, filled):
    """The layer on, in a copy of ``filled``; the in-process table emptied before and after."""
    d = tmp_path / "exported"
    shutil.copytree(filled, d)
    monkeypatch.setattr(exported, "directory", lambda: d)
    compile_cache.clear()
    yield d
    compile_cache.clear()


def _files(d: Path) -> list[Path]:
    return sorted(d.glob("*" + exported._SUFFIX))


def test_a_run_loads_what_an_earlier_one_exported_and_computes_the_same(disk, traced):
    """From a copy of the directory the first run wrote (another path: the key holds none)."""
    out, d = _run()
    assert (d["exported"], d["loaded"]) == (0, 2)
    np.testing.assert_array_equal(out, traced)


def _is_start(entry) -> bool:
    """Whether a file holds a start program (its packed values hold the first step's Newton matrix)."""
    return "step_matrix" in str(entry.spec[0][0])


def test_the_loaded_program_is_what_computes(disk, traced):
    """The pendulum's files under the oscillator's keys: the oscillator's run then computes a pendulum (which
    is why everything traced must be in the key); a comparison of loaded and traced results can fail."""
    osc = {_is_start(exported._load(p, p.stem)): p for p in _files(disk)}  # start and loop
    for p in osc.values():
        p.unlink()
    _run(S.pendulum())
    for p in _files(disk):
        if p not in osc.values():
            entry = exported._load(p, p.stem)
            target = osc[_is_start(entry)]
            exported._dump(target, target.stem, entry)
    wrong, d = _run()
    assert d["loaded"] == 2
    assert np.max(np.abs(wrong - traced)) > 1e-3


def _spoil(p: Path, other: Path, how: str | None) -> None:
    if how == "flip":
        data = bytearray(p.read_bytes())
        data[len(data) // 2] ^= 0xFF
        p.write_bytes(bytes(data))
    elif how == "truncate":
        p.write_bytes(p.read_bytes()[:-100])
    elif how == "empty":
        p.write_bytes(b"")
    elif how == "another key":
        shutil.copyfile(other, p)  # a whole, valid file, of another program
    elif how == "another platform":
        entry = exported._load(p, p.stem)
        foreign = dataclasses.replace(entry.exported, platforms=("tpu",))
        exported._dump(p, p.stem, entry._replace(exported=foreign))


@pytest.mark.parametrize("how", [("flip", "another platform"), ("truncate", "empty"), ("another key", None)])
def test_a_bad_file_is_a_miss_and_is_rewritten(disk, traced, how):
    a, b = _files(disk)
    _spoil(a, b, how[0])
    _spoil(b, a, how[1])
    bad = 1 + (how[1] is not None)
    out, d = _run()
    assert (d["loaded"], d["exported"], d["fallback"]) == (2 - bad, bad, 0)
    np.testing.assert_array_equal(out, traced)
    assert all(exported._load(p, p.stem) is not None for p in (a, b))  # rewritten


def test_files_of_other_versions_are_left_alone(disk, traced, monkeypatch):
    old = {p: p.read_bytes() for p in _files(disk)}
    env = exported._environment()
    monkeypatch.setattr(exported, "_environment", lambda: env.replace(b"jaxlib ", b"jaxlib 0.0.0 "))
    out, d = _run()
    assert (d["loaded"], d["exported"]) == (0, 2)
    np.testing.assert_array_equal(out, traced)
    assert len(_files(disk)) == 4 and all(p.read_bytes() == v for p, v in old.items())


def test_an_unwritable_directory_runs_without_the_files(disk, traced, monkeypatch):
    def refuse(*_a, **_k):
        raise OSError("read-only")

    for p in _files(disk):
        p.unlink()
    monkeypatch.setattr(exported, "_dump", refuse)
    out, d = _run()
    assert d["exported"] == 2 and not _files(disk)
    np.testing.assert_array_equal(out, traced)


def test_the_directory_keeps_the_most_recently_used_files(disk, monkeypatch):
    a, b = _files(disk)
    os.utime(a, (1, 1))  # a: the least recently used
    entry = exported._load(b, b.stem)  # marks b used
    monkeypatch.setattr(exported, "MAX_FILES", 2)
    exported._dump(disk / f"0{exported._SUFFIX}", "0", entry)
    assert _files(disk) == sorted([b, disk / f"0{exported._SUFFIX}"])


def test_user_systems_are_traced_as_before(disk):
    before = dict(exported.stats)
    tr = md.integrate(LagrangeDiracSystem(Euclidean(1), _spring), Q0, v0=V0, h=0.1, n_steps=5)
    assert tr.ok and len(_files(disk)) == 2
    assert exported.stats["unkeyed"] == before["unkeyed"] + 2 and exported.stats["loaded"] == before["loaded"]


def test_the_start_and_the_loop_are_compiled_with_their_options_whether_loaded_or_exported(disk, traced, monkeypatch):
    """The start program's XLA options (no LLVM optimization) and the loop's (no reshape mover) apply to a loaded or
    exported program as to a traced one."""
    from manifold_dirac._run.loop import LOOP_COMPILER_OPTIONS
    from manifold_dirac._run.start import START_COMPILER_OPTIONS

    seen = []
    original = exported.DiskProgram._executable
    monkeypatch.setattr(exported.DiskProgram, "_executable",
                        staticmethod(lambda entry, sig, options=None, *rest: seen.append(
                            (_is_start(entry), options)) or original(entry, sig, options, *rest)))
    out, d = _run()  # loaded
    expected = sorted([(True, START_COMPILER_OPTIONS), (False, LOOP_COMPILER_OPTIONS)], key=str)
    assert d["loaded"] == 2 and sorted(seen, key=str) == expected
    np.testing.assert_array_equal(out, traced)
    for p in _files(disk):
        p.unlink()
    seen.clear()
    out, d = _run()  # exported
    assert d["exported"] == 2 and sorted(seen, key=str) == expected


def test_a_loaded_program_initializes_lapack_only_if_it_calls_it(disk, traced, monkeypatch, tmp_path):
    """Embedding a serialized program without a LAPACK call skips JAX's LAPACK initialization (a SciPy import): the
    oscillator's two programs started from a velocity call none (no initialization on loading them); started from
    a momentum, the start calls LAPACK (the pseudo-inverse of the Legendre inverse) and initializes it, the loop
    does not (without the skip, both would: two initializations)."""
    from jax._src.lax import linalg

    entries = {_is_start(e): e for e in (exported._load(p, p.stem) for p in _files(disk))}
    assert not any(exported._calls_lapack(bytes(e.exported.mlir_module_serialized)) for e in entries.values())
    calls = []
    original = linalg.initialize_lapack
    monkeypatch.setattr(linalg, "initialize_lapack", lambda: calls.append(1) or original())
    out, d = _run()
    assert d["loaded"] == 2 and not calls
    np.testing.assert_array_equal(out, traced)

    def from_momentum():
        compile_cache.clear()
        tr = md.integrate(S.harmonic_oscillator(), Q0, p0=V0, h=0.1, n_steps=4)
        return tr.q

    where = tmp_path / "from-momentum"
    monkeypatch.setattr(exported, "directory", lambda: where)
    first = from_momentum()  # exported
    entries = {_is_start(e): e for e in (exported._load(p, p.stem) for p in _files(where))}
    assert exported._calls_lapack(bytes(entries[True].exported.mlir_module_serialized))
    assert not exported._calls_lapack(bytes(entries[False].exported.mlir_module_serialized))
    calls.clear()
    before = exported.stats["loaded"]
    np.testing.assert_array_equal(from_momentum(), first)
    assert exported.stats["loaded"] == before + 2 and len(calls) == 1
    compile_cache.clear()


@pytest.mark.slow
def test_clearing_jax_caches_drops_the_executables(disk):
    _run()
    programs = [fn for _, fn in compile_cache.entries() if isinstance(fn, exported.DiskProgram)]
    assert len(programs) == 2 and all(p._cache_size() == 1 for p in programs)
    jax.clear_caches()
    assert all(p._cache_size() == 0 for p in programs)


# ------------------------------------------------------------------------------ fresh processes, a copy
_CHILD = """
import hashlib, json, numpy as np
import manifold_dirac as md
from manifold_dirac._run import exported, loop
built = []
original = loop._build_chunk
loop._build_chunk = lambda *a, **k: built.append(1) or original(*a, **k)
import manifold_dirac._run.integrator as I
I._build_chunk = loop._build_chunk
tr = md.integrate(md.systems.harmonic_oscillator(), np.array([0.7]), v0=np.array([0.2]), h=0.1, n_steps=40)
digest = hashlib.sha256(np.concatenate([tr.q.ravel(), tr.p.ravel(), tr.energy.ravel()]).tobytes()).hexdigest()
print(json.dumps({**exported.stats, "traced_loops": len(built), "digest": digest}))
"""


def _child(cache: Path) -> dict:
    env = {**os.environ, "MANIFOLD_DIRAC_JAX_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("MANIFOLD_DIRAC_EXPORT", None)
    res = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, env=env, timeout=600,
                         check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # two fresh interpreters (~5 s); the in-process tests above run from a copied directory too
def test_a_copied_cache_directory_serves_a_fresh_process_without_tracing(tmp_path):
    first = _child(tmp_path / "a")
    assert (first["exported"], first["loaded"], first["traced_loops"]) == (2, 0, 1)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    shutil.rmtree(tmp_path / "a")
    second = _child(tmp_path / "b")
    assert (second["exported"], second["loaded"], second["traced_loops"]) == (0, 2, 0)
    assert second["digest"] == first["digest"]
