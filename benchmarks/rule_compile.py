"""Compile time of the heavy top's step per discrete Lagrangian, cold and warm cache.

For each rule (``midpoint``, ``gauss4``, ``gauss6``) a fresh interpreter
imports the library, starts JAX on a one-step pendulum run, then times the
first ``integrate(top, ..., n_steps=10, discrete_lagrangian=rule)`` of the
heavy top (SO(3), ``exp``) minus the median of three more calls (the steady
state): trace, lowering and XLA compile with an empty persistent cache
(**cold**), or a load from the cache the cold run filled (**warm**). Wall
and CPU time of the process (all threads) are recorded with the load
average; the machine is named in the results file.

Usage (from the repository root)::

    python benchmarks/rule_compile.py          # writes benchmarks/results/rule_compile.json

``tools/galerkin_table.py`` quotes the results on the Galerkin page.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "rule_compile.json"
RULES = ("midpoint", "gauss4", "gauss6")

CHILD = r"""
import json, statistics, sys, time
import numpy as np
import manifold_dirac as md
md.integrate(md.systems.pendulum(), np.array([0.1]), v0=np.array([0.0]), h=0.1, n_steps=1)  # JAX started
top = md.systems.heavy_top()
q0, w0 = top.Q.from_coordinates([0.3, 0.1, 0.0]), np.array([0.5, -0.2, 2.0])
def call():
    w, c = time.perf_counter(), time.process_time()
    md.integrate(top, q0, v0=w0, h=0.1, n_steps=10, discrete_lagrangian=sys.argv[1])
    return time.perf_counter() - w, time.process_time() - c
first = call()
steady = [call() for _ in range(3)]
print(json.dumps({"wall": first[0] - statistics.median(s[0] for s in steady),
                  "cpu": first[1] - statistics.median(s[1] for s in steady)}))
"""


def child(rule: str, cache: str) -> dict:
    env = {**os.environ, "MANIFOLD_DIRAC_JAX_CACHE": cache, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, rule], env=env, capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    rows = {}
    load0 = os.getloadavg()[0]
    for rule in RULES:
        with tempfile.TemporaryDirectory() as cache:
            cold = child(rule, cache)
            warm = child(rule, cache)
        rows[rule] = {"cold": cold, "warm": warm}
        print(
            f"{rule}: cold {cold['wall']:.1f} s wall / {cold['cpu']:.1f} s CPU; "
            f"warm {warm['wall']:.1f} / {warm['cpu']:.1f}",
            flush=True,
        )
    result = {
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_average": [load0, os.getloadavg()[0]],
        "system": "heavy top, SO(3) exp, integrate(..., n_steps=10)",
        "rules": rows,
    }
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(f"written {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
