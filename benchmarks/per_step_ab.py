"""Warm time per step of bundled systems, two checkouts in alternating fresh processes pinned to one core.

Run (from the repository root, with another revision checked out beside it)::

    git worktree add /tmp/before <revision>
    python benchmarks/per_step_ab.py /tmp/before . --systems knife_edge rolling_disk --pairs 6

Each process imports the library of one checkout (``PYTHONPATH``), runs every named system's
``md.integrate(system, q0, v0=v0, h=h, n_steps=N, stride=S)`` once (compiling, or loading from that
checkout's own persistent cache), then times 15 identical warm calls (wall time, or with ``--cpu`` the
process's CPU time) and keeps the fastest, per step. The
checkouts alternate process by process (``A B``, then ``B A``, ...), each pinned to the same core
(``taskset``), so that a machine whose speed moves over minutes moves both alike; the table gives, per
system and checkout, the fastest and the median over the processes. A change that does not touch the step
should give the same figures within their spread: the spread of the medians is the noise to compare with.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
import manifold_dirac as md
names, n, stride, cpu = sys.argv[1].split(","), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "cpu"
out = {}
for name in names:
    ex = md.get_example(name)
    system = ex.system()
    q0, v0 = ex.initial(system)
    run = lambda: md.integrate(system, q0, v0=v0, h=ex.h, n_steps=n, stride=stride)  # noqa: E731
    run()
    times = []
    for _ in range(15):
        t = time.process_time() if cpu else time.perf_counter()
        run()
        times.append((time.process_time() if cpu else time.perf_counter()) - t)
    out[name] = min(times) / n * 1e6
print("RESULT " + json.dumps(out))
"""


def main(argv: list[str] | None = None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", nargs=2, help="two checkout roots (A and B)")
    ap.add_argument("--systems", nargs="+", default=["knife_edge", "heavy_top"])
    ap.add_argument("--pairs", type=int, default=6, help="processes per checkout")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--stride", type=int, default=1)
    ap.add_argument("--core", default="1", help="the core every process is pinned to (taskset -c)")
    ap.add_argument("--cpu", action="store_true",
                    help="CPU time of the process (time.process_time) instead of wall time: on a shared virtual "
                         "machine it leaves out the time the core was taken away (steal)")
    args = ap.parse_args(argv)
    roots = [str(Path(r).resolve()) for r in args.checkouts]
    caches = {r: tempfile.mkdtemp(prefix="per_step_ab_") for r in roots}
    taskset = ["taskset", "-c", args.core] if shutil.which("taskset") else []
    times: dict[tuple[str, str], list[float]] = {}
    load_before = os.getloadavg()
    try:
        for i in range(args.pairs):
            for root in roots if i % 2 == 0 else roots[::-1]:
                env = {**os.environ, "PYTHONPATH": root, "MANIFOLD_DIRAC_JAX_CACHE": caches[root]}
                res = subprocess.run([*taskset, sys.executable, "-c", CHILD, ",".join(args.systems),
                                      str(args.steps), str(args.stride), "cpu" if args.cpu else "wall"],
                                     env=env, capture_output=True, text=True, cwd=tempfile.gettempdir(), check=False)
                line = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")]
                if res.returncode or not line:
                    raise RuntimeError(f"{root}: the child failed:\n{res.stderr[-3000:]}")
                for name, us in json.loads(line[0][7:]).items():
                    times.setdefault((root, name), []).append(us)
    finally:
        for c in caches.values():
            shutil.rmtree(c, ignore_errors=True)
    lines = [f"load average before/after: {[round(x, 2) for x in load_before]} / "
             f"{[round(x, 2) for x in os.getloadavg()]}; {args.pairs} processes per checkout, pinned to core "
             f"{args.core}; {args.steps} steps at stride {args.stride}; us per step ({'CPU' if args.cpu else 'wall'} "
             "time), fastest (median)",
             "", "| system | " + " | ".join(roots) + " |", "|---|" + "---|" * len(roots)]
    for name in args.systems:
        cells = []
        for root in roots:
            t = sorted(times[(root, name)])
            cells.append(f"{t[0]:.3f} ({t[len(t) // 2]:.3f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines)
    print(text)
    return text


if __name__ == "__main__":
    main()
