"""Time to the first result in a fresh process: import, building a bundled system and its initial data, first run.

What a user waits for when a script starts::

    import manifold_dirac as md
    ex = md.get_example(NAME); system = ex.system(); q0, v0 = ex.initial(system)
    tr = md.integrate(system, q0, v0=v0, h=ex.h, n_steps=200)

``python benchmarks/first_result.py --before DIR`` runs that script for every bundled system in fresh
processes, for this checkout's library and for ``DIR``'s (another checkout, e.g. the previous
version), alternating, each with an empty persistent cache and then again with the cache the first
process filled. Each process reports the import, the building (``get_example``, ``system()``,
``initial()``: wall time and the number of XLA programs compiled in it) and the first ``integrate``
(wall time). The fastest of ``--rounds`` rounds is kept per system, version and cache state.
Results: ``benchmarks/results/first_result.json`` and ``.md``.

``python benchmarks/first_result.py --child NAME`` is one such process (it imports the library found
on ``PYTHONPATH``, so this script must not put its own repository on ``sys.path``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
N_STEPS = 200


def child(name: str) -> dict:
    t0 = time.perf_counter()
    import manifold_dirac as md

    t1 = time.perf_counter()
    import jax

    compiles = [0]
    jax.monitoring.register_event_duration_secs_listener(
        lambda e, d, **k: compiles.__setitem__(0, compiles[0] + (e == "/jax/core/compile/backend_compile_duration")))
    ex = md.get_example(name)
    system = ex.system()
    q0, v0 = ex.initial(system)
    t2 = time.perf_counter()
    built = compiles[0]
    tr = md.integrate(system, q0, v0=v0, h=ex.h, n_steps=N_STEPS)
    t3 = time.perf_counter()
    return {"name": name, "import_s": t1 - t0, "build_s": t2 - t1, "build_compiles": built,
            "first_run_s": t3 - t2, "total_s": t3 - t0, "ok": bool(tr.ok)}


def run_child(library: Path, name: str, cache: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(library), MANIFOLD_DIRAC_JAX_CACHE=str(cache))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", name], env=env,
                         capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--child", metavar="NAME", help=argparse.SUPPRESS)
    p.add_argument("--before", type=Path, help="another checkout's root (its library is the 'before' column)")
    p.add_argument("--systems", nargs="*", help="bundled systems (default: all)")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=HERE / "results" / "first_result")
    a = p.parse_args()
    if a.child:
        print(json.dumps(child(a.child)))
        return
    sys.path.insert(0, str(HERE))
    from machine import commit, describe, load

    sys.path.insert(0, str(ROOT))
    from manifold_dirac.systems.catalog import EXAMPLES

    names = a.systems or list(EXAMPLES)
    versions = {"this version": ROOT}
    if a.before is not None:
        versions = {"previous version": a.before.resolve(), **versions}
    meta = {"machine": describe(), "load_before": load(), "rounds": a.rounds, "n_steps": N_STEPS,
            "commits": {k: commit(v) for k, v in versions.items()},
            "command": "python benchmarks/first_result.py" + (" --before DIR" if a.before else "")}
    raw: dict = {n: {v: {"empty cache": [], "from the cache": []} for v in versions} for n in names}
    for r in range(a.rounds):
        for name in names:
            order = list(versions.items())
            for label, lib in (order if r % 2 == 0 else order[::-1]):
                with tempfile.TemporaryDirectory() as cache:
                    raw[name][label]["empty cache"].append(run_child(lib, name, Path(cache)))
                    raw[name][label]["from the cache"].append(run_child(lib, name, Path(cache)))
            print(name, {v: round(min(x["total_s"] for x in raw[name][v]["from the cache"]), 2) for v in versions},
                  flush=True)
    meta["load_after"] = load()
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "raw": raw}, indent=1))
    a.out.with_suffix(".md").write_text(table(meta, raw, list(versions)))
    print(a.out.with_suffix(".md").read_text())


def table(meta: dict, raw: dict, versions: list[str]) -> str:
    """The fastest of the rounds per system: building, and the whole script from the cache and with an empty one."""

    def best(name, v, state, key):
        return min(x[key] for x in raw[name][v][state])

    arrow = " → ".join
    m = meta["machine"]
    lines = [f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, jax {m['jax']}; {m['date']}; load average before/after: {meta['load_before']} / {meta['load_after']}; "
             f"fastest of {meta['rounds']} rounds, the versions alternating; seconds. "
             f"Versions: {', '.join(versions)}.", "",
             "| system | building (XLA programs compiled) | import + building + first run, from the cache "
             "| the same, empty cache |", "|---|---|---|---|"]
    for name in raw:
        b = arrow(f"{best(name, v, 'from the cache', 'build_s'):.2f} "
                  f"({min(x['build_compiles'] for x in raw[name][v]['from the cache'])})" for v in versions)
        w = arrow(f"{best(name, v, 'from the cache', 'total_s'):.2f}" for v in versions)
        c = arrow(f"{best(name, v, 'empty cache', 'total_s'):.2f}" for v in versions)
        lines.append(f"| `{name}` | {b} | {w} | {c} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
