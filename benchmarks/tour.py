"""Wall time of the example tour (``manifold-dirac tour``, the README's first command without the install).

Runs the tour in a fresh interpreter twice: first with an **empty** persistent compilation cache
(``MANIFOLD_DIRAC_JAX_CACHE`` = a new temporary directory: a fresh machine), then again with the
same cache (every later run). Reported: wall time and CPU time (of the process) of each, with the
load average before and after. ``--before DIR`` also runs another checkout of the library
(alternating with this one: cold old, cold new, warm old, warm new).

    python benchmarks/tour.py                      # writes benchmarks/results/tour.json
    python benchmarks/tour.py --before ../older    # both versions
    python benchmarks/tour.py --quick --out /tmp/x # smoke: ``tour --quick`` (shorter runs, no orders)
    python benchmarks/tour.py --jobs 1             # the tour in one process (default: the tour's own default)

The CPU time is that of the tour's process and of its worker processes (``tour --jobs``): all the
CPU the tour used, which does not depend on the load as the wall time does.

    python benchmarks/tour.py --tasks              # where the cold tour's CPU goes, task by task

``--tasks`` runs the tour's tasks one after the other in one fresh interpreter (``--jobs 1``, in the
order the workers take them) with an empty cache, and reports for each: wall and CPU seconds, the
JAX time spent tracing, lowering and compiling (wall; the compile count and names of the programs),
the CPU of its figures, and the programs the serialized-program layer wrote or loaded; and the
import of the library. ``--no-export`` does the same with that layer off (``MANIFOLD_DIRAC_EXPORT=0``),
to see what writing the programs costs. Writes ``tour_tasks[_no_export].json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.machine import add_version_arguments, describe, load, versions  # noqa: E402

TOUR = "import sys\nfrom manifold_dirac.cli import main\nsys.exit(main(sys.argv[1:]))"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_tour(tree: Path, cache: str, quick: bool, timeout: float, jobs: int | None = None) -> dict:
    """``manifold-dirac tour`` in a fresh interpreter on ``tree``'s library; wall and CPU seconds (the
    tour's process and its workers: they are waited for, so their CPU is counted in its children's)."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MANIFOLD_DIRAC_XLA_FLAGS")}
    env.update(PYTHONPATH=str(tree), MANIFOLD_DIRAC_JAX_CACHE=cache, JAX_PLATFORMS="cpu", MPLBACKEND="Agg")
    with tempfile.TemporaryDirectory(prefix="md-tour-") as out:
        cmd = ([sys.executable, "-c", TOUR, "tour", "--out", out] + (["--quick"] if quick else [])
               + (["--jobs", str(jobs)] if jobs is not None else []))
        lo, cpu0, t = load(), _children_cpu(), time.perf_counter()
        try:
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=out)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s", "load_before": lo, "load_after": load()}
        res = {"wall_s": time.perf_counter() - t, "cpu_s": _children_cpu() - cpu0, "load_before": lo,
               "load_after": load(), "returncode": p.returncode}
        if p.returncode != 0:
            res["error"] = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
        res["figures"] = len(list(Path(out).glob("*.png")))
    return res


# one fresh interpreter: every task of the tour in turn, timed (argv: the output file)
TASKS = r"""
import json, logging, pathlib, sys, tempfile, time
t0, c0 = time.perf_counter(), time.process_time()
import jax
import manifold_dirac
from manifold_dirac import cli
from manifold_dirac._run import exported
from manifold_dirac.systems.catalog import EXAMPLES
imported = {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0}
events = {}

def on_duration(event, seconds, **kw):
    e = events.setdefault(event, [0, 0.0]); e[0] += 1; e[1] += seconds

jax.monitoring.register_event_duration_secs_listener(on_duration)
programs = []

class Names(logging.Handler):
    def emit(self, record):
        m = record.getMessage()
        if m.startswith("Finished XLA compilation of "):
            programs.append(m[len("Finished XLA compilation of "):].split(" in ")[0])

jax.config.update("jax_log_compiles", True)  # its messages are caught here, not printed
logger = logging.getLogger("jax")
logger.addHandler(Names()); logger.propagate = False
figures = [0.0]
draw = cli._figures

def timed_figures(*a, **k):
    c = time.process_time()
    try:
        return draw(*a, **k)
    finally:
        figures[0] += time.process_time() - c

cli._figures = timed_figures
rows = []
out = pathlib.Path(tempfile.mkdtemp(prefix="md-tour-tasks-"))
for task in cli._tour_tasks(EXAMPLES):
    events.clear(); programs.clear(); figures[0] = 0.0
    before = dict(exported.stats)
    t, c = time.perf_counter(), time.process_time()
    cli._tour_task(task, out, False)
    get = lambda k: events.get(k, [0, 0.0])
    rows.append({"task": ":".join(task), "wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c,
                 "trace_s": get("/jax/core/compile/jaxpr_trace_duration")[1],
                 "lower_s": get("/jax/core/compile/jaxpr_to_mlir_module_duration")[1],
                 "compile_s": get("/jax/core/compile/backend_compile_duration")[1],
                 "compiled": get("/jax/core/compile/backend_compile_duration")[0],
                 "figures_cpu_s": figures[0],
                 "serialized": {k: exported.stats[k] - before[k] for k in before}, "programs": list(programs)})
    r = rows[-1]
    print(f"{r['task']:<32} {r['wall_s']:6.1f} s wall {r['cpu_s']:6.1f} s CPU; trace {r['trace_s']:5.1f} lower "
          f"{r['lower_s']:5.1f} compile {r['compile_s']:5.1f} s ({r['compiled']} programs); figures "
          f"{r['figures_cpu_s']:4.1f} s CPU; serialized {r['serialized']}", flush=True)
pathlib.Path(sys.argv[1]).write_text(json.dumps({"import": imported, "tasks": rows}))
"""


def run_tasks(tree: Path, cache: str, export: bool, timeout: float, out: Path) -> dict:
    """The tour's tasks one by one in a fresh interpreter on ``tree``'s library (``--tasks``), empty cache."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MANIFOLD_DIRAC_XLA_FLAGS")}
    env.update(PYTHONPATH=str(tree), MANIFOLD_DIRAC_JAX_CACHE=cache, JAX_PLATFORMS="cpu", MPLBACKEND="Agg",
               PJRT_NPROC="1")  # as in the tour's workers: XLA on one thread
    if not export:
        env["MANIFOLD_DIRAC_EXPORT"] = "0"
    lo = load()
    subprocess.run([sys.executable, "-c", TASKS, str(out)], env=env, timeout=timeout, check=True)
    res = json.loads(out.read_text())
    res.update(load_before=lo, load_after=load())
    return res


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_version_arguments(p, "smoke: the tour's own --quick mode (shorter runs, no orders)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--jobs", type=int, help="the tour's --jobs (default: the tour's own default)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    p.add_argument("--tasks", action="store_true",
                   help="where the cold tour's CPU goes: its tasks one by one in one process (see above)")
    p.add_argument("--no-export", action="store_true", help="with --tasks: the serialized-program layer off")
    args = p.parse_args(argv)
    trees = versions(args, ROOT)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.tasks:
        path = args.out / ("tour_tasks" + ("_no_export" if args.no_export else "") + ".json")
        cache = tempfile.mkdtemp(prefix="md-tour-cache-")
        try:
            res = run_tasks(trees[args.after_label], cache, not args.no_export, args.timeout, path)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        res.update(meta=describe(), command="python benchmarks/tour.py --tasks" + (" --no-export" if args.no_export
                                                                                   else ""))
        path.write_text(json.dumps(res, indent=1))
        total = sum(r["cpu_s"] for r in res["tasks"])
        print(f"import {res['import']['cpu_s']:.1f} s CPU; the tasks {total:.1f} s CPU in all; wrote {path}")
        return 0
    path = args.out / (("tour_quick" if args.quick else "tour") + (f"_jobs{args.jobs}" if args.jobs else "") + ".json")
    res = {"meta": describe(), "quick": args.quick, "jobs": args.jobs, "versions": list(trees),
           "command": "python benchmarks/tour.py" + (" --before DIR" if args.before else "")
           + (" --quick" if args.quick else "") + (f" --jobs {args.jobs}" if args.jobs else ""),
           "runs": {lab: {} for lab in trees}}
    caches = {lab: tempfile.mkdtemp(prefix="md-tour-cache-") for lab in trees}
    try:
        for stage in ("cold", "warm"):
            for lab, tree in trees.items():
                r = run_tour(tree, caches[lab], args.quick, args.timeout, args.jobs)
                res["runs"][lab][stage] = r
                res["load_end"] = load()
                path.write_text(json.dumps(res, indent=1))
                print(f"{lab}, {stage} cache: " + (r["error"] if "error" in r else
                      f"{r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, {r['figures']} figures")
                      + f" (load {r['load_before'][0]} -> {r['load_after'][0]})", flush=True)
    finally:
        for c in caches.values():
            shutil.rmtree(c, ignore_errors=True)
    print(f"wrote {path}")
    return 1 if any("error" in r for r in res["runs"][args.after_label].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
