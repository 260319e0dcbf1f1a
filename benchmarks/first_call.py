"""The first call of a system in a fresh process: import, then the first ``integrate``, cold and from the cache.

``python benchmarks/first_call.py [--rounds 3] [--export both|on|off] [--out FILE] [CASE ...]``
(default cases: ``heavy_top``, ``knife_edge``, ``heavy_top_gauss4``).

For each case, an empty persistent-cache directory
(``MANIFOLD_DIRAC_JAX_CACHE``); ``--rounds`` fresh processes with an emptied
directory each (cold: trace, lower, XLA compile) and ``--rounds`` fresh
processes on a filled one (from the cache: trace, lower, cache load). Each
process imports the library and times, with no warm-up, the import and the
first ``integrate(..., n_steps=10)`` call: wall clock and CPU
(``time.process_time``), split by JAX's own monitoring events (tracing,
lowering to MLIR, backend compile, cache retrieval) and the number of
programs compiled or loaded, and of the start and loop programs loaded
from or exported to disk as serialized programs (``manifold_dirac/_run/exported.py``).
``--export off`` runs with that layer switched off
(``MANIFOLD_DIRAC_EXPORT=0``: every process traces and lowers its programs;
the executables still come from JAX's persistent cache), ``on`` with it,
``both`` (the default) runs both, alternating per case, in their own cache
directories, so that the two are compared under the same load. The minimum
over the rounds is reported (wall and CPU minimised separately); the
machine's load before and after is printed, and written with ``--out`` as JSON.

``--layer-cost`` measures instead, in one process and per program (start,
loop), what the serialized-program layer adds to a cold call, free of the
noise of comparing fresh processes: with JAX's in-memory caches cleared
before each phase and the persistent cache never written, the CPU time of
the traced path (trace, lower, XLA compile) and of the layer's (export:
trace, lower and serialize; embedding the serialized program in a ``jit``;
XLA compile of that module), the two alternating over ``--rounds`` rounds
(minimum and median reported).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CASES = ("heavy_top", "knife_edge", "heavy_top_gauss4")
EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "backend_compile",
    "/jax/compilation_cache/cache_retrieval_time_sec": "cache_retrieval",
}
KEYS = ("wall", "cpu", *EVENTS.values(), "n_compiled", "loaded", "exported")


def child(name: str) -> None:
    """In a fresh process: import, then time the first ``integrate`` of case ``name``; print one JSON line."""
    w0, c0 = time.perf_counter(), time.process_time()
    import manifold_dirac as md  # the import is what is timed

    imp = {"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0}
    import jax
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from benchmarks.cases import CASES as C

    acc = dict.fromkeys(EVENTS.values(), 0.0)
    n = [0]

    per_program: dict[str, float] = {}

    def listener(event: str, duration_secs: float, **kw) -> None:
        if event in EVENTS:
            acc[EVENTS[event]] += duration_secs
        if event == "/jax/core/compile/backend_compile_duration":  # per program, compiled or loaded from the cache
            n[0] += 1
            name = str(kw.get("fun_name", "?"))
            per_program[name] = per_program.get(name, 0.0) + duration_secs

    jax.monitoring.register_event_duration_secs_listener(listener)
    base, kw = (name[: -len("_gauss4")], {"discrete_lagrangian": "gauss4"}) if name.endswith("_gauss4") else (name, {})
    c = C[base]
    sysm = c.make()
    w, cp = time.perf_counter(), time.process_time()
    tr = md.integrate(sysm, c.q0, v0=c.v0, h=c.h, n_steps=10, **kw)
    np.asarray(tr.q if not isinstance(tr.q, tuple) else tr.q[0])
    from manifold_dirac._run import exported

    first = {"wall": time.perf_counter() - w, "cpu": time.process_time() - cp, **acc, "n_compiled": n[0],
             "loaded": exported.stats["loaded"], "exported": exported.stats["exported"]}
    print(json.dumps({"import": imp, "first": first, "compile_per_program": per_program}))


def layer_cost(name: str, rounds: int) -> dict:
    """In this process: the CPU time of each phase of a cold call, traced and through the layer (see the docstring)."""
    import statistics

    import jax

    import manifold_dirac as md
    from benchmarks.cases import CASES as C
    from manifold_dirac._run import exported

    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)  # never written: every compile is cold
    base, kw = (name[: -len("_gauss4")], {"discrete_lagrangian": "gauss4"}) if name.endswith("_gauss4") else (name, {})
    c = C[base]
    programs = []
    original = exported.DiskProgram._obtain

    def grab(self, sig):
        programs.append((self, sig))
        return original(self, sig)

    exported.DiskProgram._obtain = grab
    try:
        md.integrate(c.make(), c.q0, v0=c.v0, h=c.h, n_steps=10, **kw)
    finally:
        exported.DiskProgram._obtain = original
    if len(programs) != 2:
        raise RuntimeError(f"{name}: expected the start and the loop served by the layer, got {len(programs)} programs")
    times: dict[str, list[float]] = {}

    def clock(key, f):
        t = time.process_time()
        out = f()
        times.setdefault(key, []).append(time.process_time() - t)
        return out

    for r in range(rounds):
        for label, (p, sig) in zip(("start", "loop"), programs):
            for path in (("traced", "layer") if r % 2 == 0 else ("layer", "traced")):
                jax.clear_caches()
                if path == "traced":
                    fn, args = p._jitted(), jax.tree.unflatten(sig.tree, exported._shapes(sig))
                    traced = clock(f"{label} traced: trace", lambda: fn.trace(*args))
                    lowered = clock(f"{label} traced: lower", traced.lower)
                    clock(f"{label} traced: compile", lambda: lowered.compile(compiler_options=p._xla_options))
                else:
                    entry = clock(f"{label} layer: export", lambda: p._export(sig))
                    clock(f"{label} layer: serialize", lambda: bytes(entry.exported.serialize()))
                    lowered = clock(f"{label} layer: embed", lambda: jax.jit(entry.exported.call).lower(
                        *exported._shapes(sig)))
                    clock(f"{label} layer: compile", lambda: lowered.compile(compiler_options=p._xla_options))
    return {k: {"min": min(v), "median": statistics.median(v)} for k, v in times.items()}


def _run(name: str, cache: Path, export: bool) -> dict:
    env = {**os.environ, "MANIFOLD_DIRAC_JAX_CACHE": str(cache), "PYTHONPATH": str(ROOT),
           "MANIFOLD_DIRAC_EXPORT": "1" if export else "0"}
    res = subprocess.run([sys.executable, __file__, "--child", name], capture_output=True, text=True, env=env, check=False,
                         timeout=1800)
    if res.returncode:
        raise RuntimeError(res.stderr[-3000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def _min(rows: list[dict]) -> dict:
    return {k: min(r[k] for r in rows) for k in rows[0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=list(CASES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--export", choices=("both", "on", "off"), default="both")
    ap.add_argument("--child")
    ap.add_argument("--layer-cost", action="store_true",
                    help="the layer's cost per phase of a cold call, in this process (see the docstring)")
    a = ap.parse_args(argv)
    if a.child:
        child(a.child)
        return 0
    sys.path.insert(0, str(ROOT))
    if a.layer_cost:
        with tempfile.TemporaryDirectory(prefix="md-layer-cost-") as d:
            os.environ["MANIFOLD_DIRAC_JAX_CACHE"] = d  # before the library's import: a cache directory of its own
            os.environ["MANIFOLD_DIRAC_EXPORT"] = "1"
            from benchmarks.kernel import finish, machine

            table = {**machine(), "rounds": a.rounds, "cases": {}}
            for name in a.names:
                rows = table["cases"][name] = layer_cost(name, a.rounds)
                for k, v in rows.items():
                    print(f"{name:17s} {k:24s} CPU min {v['min']:.3f} s, median {v['median']:.3f} s", flush=True)
        return finish(table, a.out)
    from benchmarks.kernel import finish, machine

    table = {**machine(), "rows": []}
    imports = []
    with tempfile.TemporaryDirectory(prefix="md-first-call-") as top:
        layers = {"both": (False, True), "on": (True,), "off": (False,)}[a.export]
        for name in a.names:
            runs: dict = {e: {"cold": [], "cached": [], "per_program": []} for e in layers}
            dirs = {e: Path(top) / f"{name}-{'export' if e else 'trace'}" for e in layers}
            for _ in range(a.rounds):  # the layers alternate: both see the same load
                for e in layers:
                    shutil.rmtree(dirs[e], ignore_errors=True)
                    dirs[e].mkdir()
                    r = _run(name, dirs[e], e)
                    runs[e]["cold"].append(r["first"])
                    runs[e]["per_program"].append(r["compile_per_program"])
                    imports.append(r["import"])
            for _ in range(a.rounds):
                for e in layers:
                    r = _run(name, dirs[e], e)
                    runs[e]["cached"].append(r["first"])
                    imports.append(r["import"])
            for e in layers:
                row = {"name": name, "export": e, "cold": _min(runs[e]["cold"]), "cached": _min(runs[e]["cached"]),
                       "cold_compile_per_program": _min(runs[e]["per_program"])}
                table["rows"].append(row)
                for label in ("cold", "cached"):
                    x = row[label]
                    print(f"{name:17s} {'export' if e else 'trace':6s} {label:6s} wall {x['wall']:.2f} s  cpu "
                          f"{x['cpu']:.2f} s  (trace {x['trace']:.2f}, lower {x['lower']:.2f}, compile "
                          f"{x['backend_compile']:.2f}, cache load {x['cache_retrieval']:.2f}; {x['n_compiled']} "
                          f"programs, {x['loaded']} loaded from disk, {x['exported']} exported)", flush=True)
                per = ", ".join(f"{k} {v:.2f} s" for k, v in row["cold_compile_per_program"].items())
                print(f"{'':17s} {'':6s} cold XLA compile per program: {per}", flush=True)
    table["import"] = _min(imports)
    print(f"import: wall {table['import']['wall']:.2f} s, cpu {table['import']['cpu']:.2f} s")
    return finish(table, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
