"""Side-by-side step cost of the compiled engine and the Numba floor: ``python benchmarks/kernel.py [--n N]``.

One process, one table: microseconds per step of ``integrate`` (heavy top,
free knife edge; stride 1 and 1000) and of the hand-written Numba step of the
same scheme (``benchmarks/numba_floor.py``), the **minimum** over ``--repeat``
interleaved rounds (default 7), their ratio; trajectory-steps/s at
``B = --batch`` (default 4096, stride 10) for both; and the first call (trace +
compile, with whatever persistent cache is configured) of each library
program; and what a stored point costs over a step (the stride-1 time per
step minus the stride-1000 one, key ``stored_point_us``). Prints the
machine's load (``os.getloadavg``) before and after, and writes the table as
JSON with ``--out``. Run it pinned to one core with
``taskset -c 0 python benchmarks/kernel.py`` to see the one-core figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import numba_floor as NF  # noqa: E402
from benchmarks.cases import CASES, batch_initial, system  # noqa: E402
from manifold_dirac import integrate  # noqa: E402


def best_of(fns: dict, repeats: int) -> dict:
    """Minimum wall time of each function over ``repeats`` interleaved, rotated rounds."""
    names = list(fns)
    out = {k: np.inf for k in names}
    for r in range(repeats):
        j = r % len(names)
        for k in names[j:] + names[:j]:
            t = time.perf_counter()
            fns[k]()
            out[k] = min(out[k], time.perf_counter() - t)
    return out


def machine() -> dict:
    """The machine's description and load, the head of every benchmark table."""
    return {"load_before": os.getloadavg(), "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "xla_flags": os.environ.get("XLA_FLAGS", "")}


def finish(rows: dict, out: Path | None) -> int:
    """Add the load after the run, print it, write the table as JSON to ``out`` (if given)."""
    rows["load_after"] = os.getloadavg()
    print(f"load before {rows['load_before']}, after {rows['load_after']}")
    if out:
        out.write_text(json.dumps(rows, indent=1))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000, help="steps per single-trajectory run")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    rows = {"load_before": os.getloadavg(), "machine": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "affinity": sorted(os.sched_getaffinity(0)), "n": a.n,
            "xla_flags": os.environ.get("XLA_FLAGS", ""), "step": [], "batch": []}
    for name in ("heavy_top", "knife_edge"):
        c, sysm = CASES[name], system(name)
        make, run, run_batch = (getattr(NF, f"{c.floor}_state"), getattr(NF, f"run_{c.floor}"),
                                getattr(NF, f"run_{c.floor}_batch"))
        st = make(c.q0, c.v0, c.h)
        run(st, c.h, 10)
        for stride in (1, 1000):
            lib = partial(integrate, sysm, c.q0, v0=c.v0, h=c.h, n_steps=a.n, stride=stride)
            t = time.perf_counter()
            lib()
            first = time.perf_counter() - t
            tm = best_of({"library": lib, "floor": partial(run, st, c.h, a.n),
                          "short": partial(integrate, sysm, c.q0, v0=c.v0, h=c.h, n_steps=10, stride=stride)},
                         a.repeat)
            row = {"name": name, "stride": stride, "first_call_s": first,
                   "library_us": 1e6 * tm["library"] / a.n, "floor_us": 1e6 * tm["floor"] / a.n,
                   "ratio": tm["library"] / tm["floor"], "short_call_ms": 1e3 * tm["short"]}
            rows["step"].append(row)
            print(f"{name:12s} stride {stride:5d}: {row['library_us']:7.3f} us/step, floor {row['floor_us']:6.3f}, "
                  f"ratio {row['ratio']:5.1f}; 10-step call {row['short_call_ms']:.2f} ms; first call {first:.2f} s",
                  flush=True)
        every, sparse = rows["step"][-2:]  # stride 1, stride 1000: what a stored point costs over a step
        rows.setdefault("stored_point_us", {})[name] = every["library_us"] - sparse["library_us"]
        print(f"{name:12s} a stored point costs {rows['stored_point_us'][name]:.3f} us over a step", flush=True)
    if a.batch:
        import numba

        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        rng = np.random.default_rng(0)
        for name in ("heavy_top", "knife_edge"):
            c, sysm = CASES[name], system(name)
            q0, v0 = batch_initial(name, a.batch, rng)
            n = max(100, int(round(200_000 / a.batch / 10)) * 10)
            lib = partial(integrate, sysm, q0, v0=v0, h=c.h, n_steps=n, stride=10)
            t = time.perf_counter()
            lib()
            first = time.perf_counter() - t
            st = NF.__dict__[f"{c.floor}_state"](q0, v0, c.h)
            rb = NF.__dict__[f"run_{c.floor}_batch"]
            rb(st, c.h, 10)
            tm = best_of({"library": lib, "floor": partial(rb, st, c.h, n)}, max(3, a.repeat - 4))
            row = {"name": name, "B": a.batch, "n": n, "first_call_s": first,
                   "library_traj_steps_per_s": a.batch * n / tm["library"],
                   "floor_traj_steps_per_s": a.batch * n / tm["floor"], "floor_threads": numba.get_num_threads()}
            rows["batch"].append(row)
            print(f"{name:12s} B={a.batch}: {row['library_traj_steps_per_s'] / 1e3:8.0f} k traj-steps/s, floor "
                  f"{row['floor_traj_steps_per_s'] / 1e3:8.0f} k ({row['floor_threads']} threads); first call "
                  f"{first:.2f} s", flush=True)
    rows["load_after"] = os.getloadavg()
    print(f"load before {rows['load_before']}, after {rows['load_after']}; affinity {rows['affinity']}")
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
