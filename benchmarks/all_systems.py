"""Every bundled system, first call and warm run, in fresh processes; optionally against an older version.

For each bundled system (``md.get_example``'s catalog) and each version of the library given
(this checkout, and with ``--before DIR`` another checkout of the library, for example an earlier
release), two fresh interpreters run ``benchmarks/system_child.py``:

1. with an **empty** persistent compilation cache (``MANIFOLD_DIRAC_JAX_CACHE`` = a new temporary
   directory): the first ``integrate`` call of the process -- what a new user waits for;
2. with the **same** cache directory again: the first call of a new process that finds the
   compiled programs on disk;

and each then repeats the identical call ``--repeats`` times (warm: nothing compiles). The
versions' processes alternate (the order rotates from one system to the next), so that load from
other jobs falls on both alike. ``XLA_FLAGS`` is removed from the children's environment, so each
version configures XLA as it does for a user.

Reported per system and version: the first call in a fresh process with an empty cache, the
first call from the persistent cache, and the warm run time (the minimum over both processes'
repeats) per step of an ``--steps``-step run with the system's own ``h``; with ``--before``, the
ratios old/new and the largest difference between the two versions' final points. The results
file records the machine, the load before and after every process, the versions (and the commit
checked out in each, ``+`` if a tracked file differs from it) and the date.

    python benchmarks/all_systems.py                               # this version, every system
    python benchmarks/all_systems.py --before ../older-checkout    # old against new, side by side
    python benchmarks/all_systems.py --quick --out /tmp/x          # smoke: one system, few repeats
    python tools/performance_tables.py --write                     # the tables of docs/performance.md
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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.machine import add_version_arguments, commit, describe, load, versions  # noqa: E402

CHILD = HERE / "system_child.py"
QUICK_SYSTEMS = ("pendulum",)


def catalog_names(tree: Path) -> list[str]:
    """The bundled systems' names in the checkout ``tree`` (asked in a child: no import here)."""
    code = ("import manifold_dirac as md\n"
            "try:\n    from manifold_dirac.systems.catalog import EXAMPLES\n"
            "except ImportError:\n    EXAMPLES = md.systems.EXAMPLES\n"
            "print(' '.join(EXAMPLES))")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(tree, "0"), capture_output=True, text=True,
                         check=True, cwd=tempfile.gettempdir())
    return out.stdout.split()


def child_env(tree: Path, cache: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MANIFOLD_DIRAC_XLA_FLAGS")}
    env.update(PYTHONPATH=str(tree), MANIFOLD_DIRAC_JAX_CACHE=cache, JAX_PLATFORMS="cpu")
    return env


def run_child(tree: Path, cache: str, name: str, steps: int, repeats: int, timeout: float) -> dict:
    """One fresh interpreter on ``tree``'s library; its JSON result, or an error record."""
    lo = load()
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, str(CHILD), name, str(steps), str(repeats)], env=child_env(tree, cache),
                           capture_output=True, text=True, timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s", "load_before": lo, "load_after": load()}
    res = {"load_before": lo, "load_after": load(), "process_s": time.perf_counter() - t}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        res["error"] = (p.stderr.strip().splitlines() or ["no output"])[-1][:300]
        return res
    res.update(json.loads(lines[-1][len("RESULT "):]))
    return res


def summarize(cold: dict, cached: dict) -> dict:
    """The numbers the table shows, from the two processes of one version."""
    if "error" in cold or "error" in cached:
        return {"error": cold.get("error") or cached.get("error")}
    warm = min(cold["warm_s"] + cached["warm_s"])
    return {"cold_first_call_s": cold["first_call_s"], "cached_first_call_s": cached["first_call_s"],
            "cold_first_call_cpu_s": cold.get("first_call_cpu_s"), "cached_first_call_cpu_s": cached.get("first_call_cpu_s"),
            "warm_run_s": warm, "us_per_step": 1e6 * warm / cold["n_steps"], "import_s": cold["import_s"],
            "ok": cold["ok"] and cached["ok"], "version": cold["version"]}


def fastest(summaries: list[dict]) -> dict:
    """One summary from several rounds' (:func:`summarize`): each time the smallest of the rounds."""
    if any("error" in s for s in summaries):
        return next(s for s in summaries if "error" in s)
    out = dict(summaries[0])
    for k, v in out.items():
        if isinstance(v, float):
            vals = [s[k] for s in summaries if s.get(k) is not None]
            out[k] = min(vals) if vals else v
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_version_arguments(p, f"smoke: {', '.join(QUICK_SYSTEMS)}, 200 steps, 2 repeats")
    p.add_argument("--systems", nargs="+", help="names (default: every bundled system)")
    p.add_argument("--steps", type=int, default=2000, help="steps of each run (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=7, help="warm repeats per process (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=900.0, help="per process, seconds")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    p.add_argument("--rounds", type=int, default=1,
                   help="rounds per system, the versions alternating; each figure is the fastest round's")
    p.add_argument("--label", help="write all_systems_LABEL.json (a partial run beside the full table's file)")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.repeats = 200, 2
        args.systems = args.systems or list(QUICK_SYSTEMS)
    trees = versions(args, ROOT)
    names = args.systems or catalog_names(ROOT)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / ("all_systems_quick.json" if args.quick else
                       f"all_systems_{args.label}.json" if args.label else "all_systems.json")
    res = {"meta": describe(), "systems": names, "steps": args.steps, "repeats": args.repeats, "versions": list(trees),
           "command": "python benchmarks/all_systems.py" + (" --before DIR" if args.before else "")
           + (" --quick" if args.quick else "") + (f" --rounds {args.rounds}" if args.rounds > 1 else "")
           + (f" --label {args.label}" if args.label else "")
           + (f" --systems {' '.join(args.systems)}" if args.systems and not args.quick else ""),
           "rounds": args.rounds, "commits": {lab: commit(tree) for lab, tree in trees.items()}, "rows": []}
    print(res["meta"])
    labels = list(trees)
    for i, name in enumerate(names):
        order = labels[i % len(labels):] + labels[:i % len(labels)]
        rounds: list[dict] = []
        for r in range(args.rounds):
            this_round = order if r % 2 == 0 else order[::-1]
            caches = {lab: tempfile.mkdtemp(prefix="md-bench-cache-") for lab in labels}
            raw: dict = {lab: {} for lab in labels}
            try:
                for stage in ("cold", "cached"):
                    for lab in this_round:
                        raw[lab][stage] = run_child(trees[lab], caches[lab], name, args.steps, args.repeats,
                                                    args.timeout)
            finally:
                for c in caches.values():
                    shutil.rmtree(c, ignore_errors=True)
            rounds.append(raw)
        raw = rounds[0]
        row = {"name": name, "raw": raw if args.rounds == 1 else rounds,
               **{lab: fastest([summarize(rw[lab]["cold"], rw[lab]["cached"]) for rw in rounds]) for lab in labels}}
        if len(labels) == 2:
            a, b = (raw[lab]["cold"] for lab in labels)
            if "final_point" in a and "final_point" in b and len(a["final_point"]) == len(b["final_point"]):
                row["max_difference"] = max(abs(x - y) for x, y in zip(a["final_point"], b["final_point"]))
            sa, sb = (row[lab] for lab in labels)
            if "error" not in sa and "error" not in sb:
                row["ratios"] = {k: sa[k] / sb[k] for k in ("cold_first_call_s", "cached_first_call_s", "warm_run_s")}
        res["rows"].append(row)
        res["load_end"] = load()
        path.write_text(json.dumps(res, indent=1))  # after every system: an interrupted run keeps its rows
        show = "; ".join(
            f"{lab}: " + (row[lab]["error"] if "error" in row[lab] else
                          f"cold {row[lab]['cold_first_call_s']:.2f} s, cache {row[lab]['cached_first_call_s']:.2f} s, "
                          f"{row[lab]['us_per_step']:.2f} us/step") for lab in labels)
        print(f"[{i + 1}/{len(names)}] {name}: {show} (load {load()[0]})", flush=True)
    print(f"wrote {path}")
    failed = [r["name"] for r in res["rows"] if any("error" in r[lab] for lab in labels[-1:])]
    if failed:
        print(f"failed on this version: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
