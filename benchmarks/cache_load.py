"""Cold compile against a load from the persistent cache, per bundled system, in fresh processes.

``python benchmarks/cache_load.py [NAME ...]`` (default: heavy_top knife_edge).
For each system: an empty cache directory; a fresh process compiles
(cold), then ``--rounds`` fresh processes on the same directory load from it
(warm, the minimum is reported). Each process is ``benchmarks/compile_child.py``
(first ``integrate`` call, split into JAX's trace, lowering, backend compile and
cache retrieval). The bundled systems' serialized programs (on unless
``MANIFOLD_DIRAC_EXPORT=0`` is set) skip a warm call's tracing and lowering:
run with it set to see what they save (``benchmarks/first_call.py`` compares
the two side by side). Prints the machine's load before and after; ``--out``
writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from benchmarks.kernel import finish, machine  # noqa: E402


def _child(name: str, cache: Path) -> dict:
    env = {**os.environ, "MANIFOLD_DIRAC_JAX_CACHE": str(cache), "PYTHONPATH": str(HERE.parent)}
    res = subprocess.run([sys.executable, str(HERE / "compile_child.py"), name], capture_output=True, text=True,
                         env=env, timeout=1800)
    if res.returncode:
        raise RuntimeError(res.stderr[-3000:])
    return json.loads(res.stdout.strip().splitlines()[-1])["rows"][0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=["heavy_top", "knife_edge"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    rows = {**machine(), "rows": []}
    keys = ("wall", "trace", "lower", "backend_compile", "cache_retrieval")
    with tempfile.TemporaryDirectory(prefix="md-cache-load-") as top:
        for name in a.names:
            d = Path(top) / name
            d.mkdir()
            cold = _child(name, d)
            warms = [_child(name, d) for _ in range(a.rounds)]
            warm = min(warms, key=lambda r: r["first"]["wall"])
            row = {"name": name, "cold": {k: cold["first"][k] for k in keys}, "warm": {k: warm["first"][k] for k in keys},
                   "steady_call_s": cold["steady_wall"]}
            rows["rows"].append(row)
            c, w = row["cold"], row["warm"]
            print(f"{name:12s} cold first call {c['wall']:.2f} s (trace {c['trace']:.2f}, lower {c['lower']:.2f}, "
                  f"backend {c['backend_compile']:.2f}); from the cache {w['wall']:.2f} s (trace {w['trace']:.2f}, "
                  f"lower {w['lower']:.2f}, retrieval {w['cache_retrieval']:.2f}); a 10-step call "
                  f"{1e3 * row['steady_call_s']:.1f} ms", flush=True)
    return finish(rows, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
