"""A first call with the loop compiled ahead (in a background thread) against without, in fresh processes.

For each system and round, two fresh interpreters per setting run ``benchmarks/system_child.py``
on this checkout: one with an **empty** persistent cache (what a new user waits for) and one with
the **same** cache again (a new process that finds the programs on disk), with
``MANIFOLD_DIRAC_COMPILE_AHEAD`` 1 and 0. The settings alternate, their order rotating from
round to round, so that the machine's load falls on both alike; the fastest of the rounds is
reported per setting, with the CPU time of that process (the compile in the background is CPU time
of the same process). The final points of the two settings must be equal bit for bit.

    python benchmarks/compile_ahead.py                     # writes results/compile_ahead.json
    python tools/performance_tables.py --write             # its table in docs/performance.md
    python benchmarks/compile_ahead.py --rounds 1 --systems pendulum --out /tmp/x   # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import all_systems  # noqa: E402
from benchmarks.machine import describe, load  # noqa: E402

SYSTEMS = ("heavy_top", "knife_edge", "chaplygin_sled", "rolling_disk", "spherical_pendulum", "rolling_disk_3d")
SETTINGS = ("1", "0")


def _child(setting: str, cache: str, name: str, steps: int, timeout: float) -> dict:
    """One fresh interpreter (``all_systems.run_child``: this process's environment) with the setting."""
    os.environ["MANIFOLD_DIRAC_COMPILE_AHEAD"] = setting
    try:
        return all_systems.run_child(ROOT, cache, name, steps, 1, timeout)
    finally:
        del os.environ["MANIFOLD_DIRAC_COMPILE_AHEAD"]


def measure(systems: list[str], rounds: int, steps: int, timeout: float) -> list[dict]:
    rows = []
    for name in systems:
        runs: dict[str, dict[str, list]] = {s: {"cold": [], "cached": []} for s in SETTINGS}
        for r in range(rounds):
            order = SETTINGS if r % 2 == 0 else SETTINGS[::-1]
            for setting in order:
                d = tempfile.mkdtemp(prefix="md-ahead-")
                try:
                    for stage in ("cold", "cached"):
                        res = _child(setting, d, name, steps, timeout)
                        if "error" in res:
                            raise RuntimeError(f"{name}, ahead={setting}, {stage}: {res['error']}")
                        runs[setting][stage].append(res)
                finally:
                    shutil.rmtree(d, ignore_errors=True)
        points = {tuple(x["final_point"]) for s in SETTINGS for st in ("cold", "cached") for x in runs[s][st]}
        if len(points) != 1:
            raise RuntimeError(f"{name}: the settings' final points differ: {points}")
        row: dict = {"name": name}
        for s in SETTINGS:
            for stage in ("cold", "cached"):
                best = min(runs[s][stage], key=lambda x: x["first_call_s"])
                row[f"{stage}_{s}"] = {"wall_s": best["first_call_s"], "cpu_s": best["first_call_cpu_s"],
                                       "all_wall_s": [x["first_call_s"] for x in runs[s][stage]]}
        rows.append(row)
        print(f"{name}: empty cache {row['cold_0']['wall_s']:.2f} -> {row['cold_1']['wall_s']:.2f} s, "
              f"from the cache {row['cached_0']['wall_s']:.2f} -> {row['cached_1']['wall_s']:.2f} s (load {load()[0]})",
              flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--out", type=Path, default=HERE / "results")
    args = p.parse_args(argv)
    meta = describe()
    print(meta, flush=True)
    rows = measure(args.systems, args.rounds, args.steps, args.timeout)
    result = {"meta": meta, "rounds": args.rounds, "steps": args.steps, "rows": rows, "load_end": load(),
              "command": "python benchmarks/compile_ahead.py " + " ".join(argv or sys.argv[1:])}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compile_ahead.json").write_text(json.dumps(result, indent=1) + "\n")
    from tools.performance_tables import compile_ahead  # the table of docs/performance.md

    print(compile_ahead(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
