"""What a stored point costs in the compiled loop, side by side: ``python benchmarks/stored_point.py [--out FILE]``.

One process, one table: for each case (default ``knife_edge``, ``heavy_top``)
the compiled loop of one trajectory is built twice, as the library builds it
(the stored point's backward step ``-R_{q_k}^{-1}(q_{k-1})`` carried from the
last step's ``xi`` where the retraction is symmetric) and with that step
computed from the two points at every stored point (the previous route),
and each is called directly (no start program, no host work) for 4096
stored points at stride 1 and for 20,000 steps at stride 1000. Reported:
microseconds per step, the minimum over ``--repeat`` interleaved rounds
(default 9), wall clock and CPU time of the process (the CPU time is the
steadier figure on a loaded machine), the stored point's cost (stride 1
minus stride 1000), and the largest difference between the two routes'
packed rows (round-off). The machine's load before and after is printed and
written with ``--out`` as JSON. ``taskset -c 0 python benchmarks/stored_point.py``
gives the one-core figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jax

import manifold_dirac as md
from benchmarks.cases import CASES, system
from benchmarks.kernel import finish, machine
from manifold_dirac._run import loop

ROUTES = ("carried", "two_point")
CALLS = {1: (4096, (0, 0, 0, 4096, 4096, 1)), 1000: (20_000, (0, 0, 0, 21, 20_000, 1000))}
"""stride -> (steps of one call, the loop's counts: have_prev, k0, slot0, n_slots, n_total, stride)."""


def programs(name: str):
    """The case's integrator, initial state and its compiled loop by each route (compiled by a first call)."""
    c, sysm = CASES[name], system(name)
    integ = md.Integrator(sysm, h=c.h)
    st = integ.initial_state(c.q0, v0=c.v0)
    fixed = (np.asarray(c.v0, float), np.array([0.0, c.h]), integ._params, None)
    fns = {}
    default = loop.back_from_step
    for route in ROUTES:
        loop.back_from_step = default if route == "carried" else (lambda sm: False)
        try:
            fns[route] = loop._build_chunk(integ.stepmap, False)
        finally:
            loop.back_from_step = default

    def call(route: str, stride: int):
        counts = np.array(CALLS[stride][1], np.int32)
        out = fns[route](st.members, st.members.q, counts, *fixed)
        return jax.block_until_ready(out)

    for route in ROUTES:
        call(route, 1)
    return call


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", default=["knife_edge", "heavy_top"])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    rows = {**machine(), "affinity": sorted(os.sched_getaffinity(0)), "rows": []}
    for name in a.cases:
        call = programs(name)
        keys = [(r, s) for r in ROUTES for s in CALLS]
        wall = dict.fromkeys(keys, np.inf)
        cpu = dict.fromkeys(keys, np.inf)
        for i in range(a.repeat):
            for r, s in keys[i % len(keys):] + keys[:i % len(keys)]:
                w, c = time.perf_counter(), time.process_time()
                call(r, s)
                wall[r, s] = min(wall[r, s], (time.perf_counter() - w) / CALLS[s][0] * 1e6)
                cpu[r, s] = min(cpu[r, s], (time.process_time() - c) / CALLS[s][0] * 1e6)
        rows_of = {r: np.asarray(call(r, 1)[1])[:4095] for r in ROUTES}
        diff = float(np.max(np.abs(rows_of["carried"] - rows_of["two_point"])))
        for r in ROUTES:
            row = {"name": name, "route": r, "diff_to_other_route": diff,
                   **{f"{k}_us_stride{s}": v[r, s] for k, v in (("wall", wall), ("cpu", cpu)) for s in CALLS},
                   "stored_point_cpu_us": cpu[r, 1] - cpu[r, 1000], "stored_point_wall_us": wall[r, 1] - wall[r, 1000]}
            rows["rows"].append(row)
            print(f"{name:11s} {r:9s}: stride 1 {row['wall_us_stride1']:.3f} us/step (CPU {row['cpu_us_stride1']:.3f}), "
                  f"stride 1000 {row['wall_us_stride1000']:.3f} (CPU {row['cpu_us_stride1000']:.3f}); a stored point "
                  f"{row['stored_point_wall_us']:.3f} us (CPU {row['stored_point_cpu_us']:.3f})", flush=True)
        print(f"{name:11s} routes differ by at most {diff:.2g} (packed rows)", flush=True)
    print(f"affinity {rows['affinity']}")
    return finish(rows, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
