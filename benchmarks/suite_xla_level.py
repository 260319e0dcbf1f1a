"""The test suite's XLA optimization level: compile time, time per step and the suite's wall time.

``tests/conftest.py`` compiles the suite's programs with ``--xla_backend_optimization_level=0`` (LLVM's
optimizations off) besides the library's own flag. This script measures what that trades, the two levels
alternating so that the machine's load falls on both alike:

* ``python benchmarks/suite_xla_level.py systems [--rounds N] [NAME ...]``: for each bundled system (default:
  heavy top, knife edge, rolling disk), fresh processes (``benchmarks/system_child.py``, empty cache, 2000
  steps) at XLA's default level and at level 0: the first call's XLA compile and a warm run's time per step
  (fastest of 7 in the process), and how far the final points are apart;
* ``python benchmarks/suite_xla_level.py suite [--rounds N] FILE ...``: the wall time of ``pytest FILE ...``
  (two workers, an empty cache each time) at both levels.

Writes ``benchmarks/results/suite_xla_level_<mode>.json`` (machine and load in ``machine``).
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
sys.path.insert(0, str(HERE))
from machine import describe, load  # noqa: E402

from manifold_dirac._config import XLA_FLAGS as LIBRARY_FLAG  # noqa: E402  (the flag the library sets itself)

LEVELS = {"default": LIBRARY_FLAG, "0": LIBRARY_FLAG + " --xla_backend_optimization_level=0"}


def _env(level: str, cache: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANIFOLD_DIRAC_")}
    env.update(XLA_FLAGS=LEVELS[level], MANIFOLD_DIRAC_JAX_CACHE=cache, XDG_CACHE_HOME=cache,
               MANIFOLD_DIRAC_EXPORT="0",
               # what tests/conftest.py would have set: nothing at XLA's default level (the tests see no level of
               # the suite's own), the flags at level 0
               MANIFOLD_DIRAC_SUITE_XLA_FLAGS="" if level == "default" else LEVELS[level])
    return env


def system(name: str, level: str) -> dict:
    """One fresh process: ``system_child.py NAME 2000 7`` at ``level``, an empty cache."""
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run([sys.executable, str(HERE / "system_child.py"), name, "2000", "7"], env=_env(level, cache),
                             capture_output=True, text=True, check=True, cwd=tempfile.gettempdir()).stdout
    res = json.loads(next(line for line in out.splitlines() if line.startswith("RESULT "))[len("RESULT "):])
    return {"compile_s": res["first_call_events_s"]["backend_compile"], "first_call_s": res["first_call_s"],
            "us_per_step": min(res["warm_s"]) / res["n_steps"] * 1e6, "final_point": res["final_point"]}


def suite(files: list[str], level: str) -> float:
    """The wall time of ``pytest FILES`` (the repository's settings: two workers) at ``level``, an empty cache."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**_env(level, cache), "CI": "true", "MPLBACKEND": "Agg"}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files], env=env, cwd=ROOT,
                       check=True, capture_output=True)
        return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=("systems", "suite"))
    ap.add_argument("names", nargs="*", help="bundled systems (systems) or test files (suite)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_intermixed_args(argv)
    names = args.names or (["heavy_top", "knife_edge", "rolling_disk"] if args.mode == "systems" else [])
    if not names:
        ap.error("suite: name the test files")
    out: dict = {"machine": describe(), "rounds": []}
    for r in range(args.rounds):
        row: dict = {}
        for level in LEVELS:
            if args.mode == "systems":
                row[level] = {name: system(name, level) for name in names}
            else:
                row[level] = suite(names, level)
            print(f"round {r + 1}, level {level}: "
                  + (json.dumps({n: {k: round(v, 3) for k, v in d.items() if k != "final_point"}
                                 for n, d in row[level].items()}) if args.mode == "systems"
                     else f"{row[level]:.1f} s"), flush=True)
        out["rounds"].append(row)
    if args.mode == "systems":
        import numpy as np

        out["final_point_max_difference"] = {
            n: float(max(np.max(np.abs(np.subtract(r["default"][n]["final_point"], r["0"][n]["final_point"])))
                         for r in out["rounds"])) for n in names}
        print("final points apart by at most:", out["final_point_max_difference"])
    out["machine"]["load_end"] = load()
    path = HERE / "results" / f"suite_xla_level_{args.mode}.json"
    path.write_text(json.dumps(out, indent=1))
    print("wrote", path.relative_to(ROOT))


if __name__ == "__main__":
    main()
