"""The first ``dirac.verify`` of a new process: wall time, and the programs it compiles.

Run (from the repository root)::

    python benchmarks/verify_first_call.py [--before DIR] [--rounds 3]

Each round starts a fresh interpreter per version (the library found on ``PYTHONPATH``: this checkout, and
with ``--before`` another one), with the persistent cache off (``MANIFOLD_DIRAC_JAX_CACHE=0``), runs the
knife edge of ``verify``'s docstring (20 steps), and times ``md.dirac.verify`` with the names and compile times
of the XLA programs it compiles. The versions alternate, so a change of the machine's load falls on both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, time
import numpy as np
import jax
import manifold_dirac as md

knife = md.systems.knife_edge()
tr = md.integrate(knife, np.eye(3), v0=np.array([0.5, 1.0, 0.0]), h=0.05, n_steps=20)
programs = []
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: programs.append((str(k.get("fun_name")), d)) if e.endswith("backend_compile_duration") else None)
t = time.perf_counter()
report = md.dirac.verify(knife, tr)
first = time.perf_counter() - t
t = time.perf_counter()
md.dirac.verify(knife, tr)
print("RESULT " + json.dumps({"first_s": first, "again_s": time.perf_counter() - t, "ok": bool(report.ok),
                              "max": float(report.max), "programs": programs}))
"""


def child(tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "MANIFOLD_DIRAC_JAX_CACHE": "0", "JAX_PLATFORMS": "cpu"}
    # run outside any checkout: ``-c`` puts the working directory first on sys.path
    check = f"assert md.__file__.startswith({str(tree)!r}), md.__file__\n"  # the version asked for, before timing
    code = CHILD.replace("import manifold_dirac as md\n", "import manifold_dirac as md\n" + check, 1)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    return json.loads(next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))[7:])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", default="", help="a checkout of another version, measured alternately")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    trees = {"this": ROOT} | ({"before": Path(a.before).resolve()} if a.before else {})
    runs: dict[str, list] = {k: [] for k in trees}
    load = os.getloadavg()[0]
    for _ in range(a.rounds):
        for label, tree in trees.items():
            runs[label].append(child(tree))
    out = {"load_before": load, "load_after": os.getloadavg()[0], "rounds": a.rounds}
    for label, rs in runs.items():
        best = min(rs, key=lambda r: r["first_s"])
        big = sorted(best["programs"], key=lambda p: -p[1])[:3]
        out[label] = {"first_s": best["first_s"], "again_s": min(r["again_s"] for r in rs), "ok": best["ok"],
                      "max": best["max"], "largest_compiles": big}
        print(f"{label:7s} first verify {best['first_s']:.2f} s (fastest of {a.rounds}), again {out[label]['again_s']:.3f} s,"
              f" ok={best['ok']}, largest compiles: " + ", ".join(f"{n} {d:.2f} s" for n, d in big))
    print(f"load average {out['load_before']:.1f} -> {out['load_after']:.1f}")
    return out


if __name__ == "__main__":
    main()
