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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_version_arguments(p, "smoke: the tour's own --quick mode (shorter runs, no orders)")
    p.add_argument("--timeout", type=float, default=1800.0)
    p.add_argument("--jobs", type=int, help="the tour's --jobs (default: the tour's own default)")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = p.parse_args(argv)
    trees = versions(args, ROOT)
    args.out.mkdir(parents=True, exist_ok=True)
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
