"""Simplified Newton (the step's Newton matrix reused) against Newton: ``python benchmarks/simplified_newton.py``.

One process: for heavy top, the free knife edge and the inclined knife edge
(midpoint, and heavy top with ``gauss4``), one trajectory and a batch, the
Newton iterations per step and the time per trajectory-step (minimum over
``--repeat`` interleaved rounds) of ``SolverOptions(jacobian="every")`` and
``SolverOptions(jacobian="reuse")``, and the largest difference of the two
trajectories' ``q`` (both stop on the same residual test). The machine's load
(``os.getloadavg``) is printed before and after.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import manifold_dirac as md  # noqa: E402
from benchmarks.cases import CASES, batch_initial, system  # noqa: E402
from benchmarks.kernel import best_of, finish, machine  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    rows = {**machine(), "rows": []}
    cases = [("heavy_top", "midpoint"), ("heavy_top", "gauss4"), ("knife_edge", "midpoint"),
             ("inclined_knife_edge", "midpoint")]
    for name, rule in cases:
        c, sysm = CASES[name], system(name)
        for batch in (0, a.batch):
            if batch:
                q0, v0 = batch_initial(name, batch, np.random.default_rng(0))
                n = max(10, a.n * 10 // batch)
            else:
                q0, v0, n = c.q0, c.v0, a.n
            runs = {j: partial(md.integrate, sysm, q0, v0=v0, h=c.h, n_steps=n, stride=n, discrete_lagrangian=rule,
                               solver=md.SolverOptions(jacobian=j)) for j in ("every", "reuse")}
            first, trs = {}, {}
            for j, f in runs.items():
                t = time.perf_counter()
                trs[j] = f()
                first[j] = time.perf_counter() - t
            tm = best_of(runs, a.repeat)
            per = max(batch, 1) * n
            row = {"name": name, "rule": rule, "batch": batch or 1, "n": n,
                   **{f"iterations_per_step_{j}": float(np.mean(trs[j].iterations)) for j in runs},
                   **{f"us_per_traj_step_{j}": 1e6 * tm[j] / per for j in runs},
                   **{f"first_call_s_{j}": first[j] for j in runs},
                   "max_q_difference": float(np.max(np.abs(np.asarray(trs["every"].q) - np.asarray(trs["reuse"].q))))}
            rows["rows"].append(row)
            print(f"{name:19s} {rule:8s} B={row['batch']:5d}: iterations/step {row['iterations_per_step_every']:.2f} "
                  f"every / {row['iterations_per_step_reuse']:.2f} reuse; {row['us_per_traj_step_every']:.3f} / "
                  f"{row['us_per_traj_step_reuse']:.3f} us per trajectory-step; first call {first['every']:.1f} / "
                  f"{first['reuse']:.1f} s; max |dq| {row['max_q_difference']:.1e}", flush=True)
    return finish(rows, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
