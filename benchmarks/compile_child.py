"""Compile time of each system in a fresh interpreter; prints one JSON line.

``python benchmarks/compile_child.py [--no-warmup] NAME [NAME ...]`` imports
the library, warms JAX up on the harmonic oscillator (backend start, the
eager operations every run shares; skipped with ``--no-warmup``), then for
each named case of ``benchmarks/cases.py`` builds the system and times the
first ``integrate(..., n_steps=10)`` call (trace + lowering + XLA compile, or
a load from the persistent cache) and the median of three more (the steady
state). The persistent cache is whatever
``MANIFOLD_DIRAC_JAX_CACHE`` says (the parent sets it to a cold or a warm
directory). JAX's own compile events are summed per call: tracing, lowering
to MLIR, backend compile, cache retrieval.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

t_start = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.cases import CASES, system  # noqa: E402
from benchmarks.machine import COMPILE_EVENTS  # noqa: E402
from manifold_dirac import integrate  # noqa: E402
from manifold_dirac import systems as S  # noqa: E402
from manifold_dirac._config import cache_directory  # noqa: E402

EVENTS = COMPILE_EVENTS
_acc: dict[str, float] = defaultdict(float)


def _listener(event: str, duration_secs: float, **_kw) -> None:
    if event in EVENTS:
        _acc[EVENTS[event]] += duration_secs


jax.monitoring.register_event_duration_secs_listener(_listener)


def _timed(fn):
    _acc.clear()
    w, c = time.perf_counter(), time.process_time()
    fn()
    return {"wall": time.perf_counter() - w, "cpu": time.process_time() - c, **{k: _acc.get(k, 0.0) for k in EVENTS.values()}}


def measure(label: str, sysm, q0, v0, h) -> dict:
    run = lambda: integrate(sysm, q0, v0=v0, h=h, n_steps=10)  # noqa: E731
    first = _timed(run)
    steady = [_timed(run) for _ in range(3)]
    ws = statistics.median(s["wall"] for s in steady)
    cs = statistics.median(s["cpu"] for s in steady)
    return {"system": label, "first": first, "steady_wall": ws, "steady_cpu": cs,
            "compile_wall": first["wall"] - ws, "compile_cpu": first["cpu"] - cs}


def main(argv: list[str]) -> None:
    import_wall = time.perf_counter() - t_start
    names = [a for a in argv if a != "--no-warmup"]
    warm = None
    if "--no-warmup" not in argv:
        warm = measure("harmonic oscillator (warm-up)", S.harmonic_oscillator(), np.array([1.0]), np.array([0.0]), 0.1)
    rows = []
    for name in names:
        c = CASES[name]
        t = time.perf_counter()
        sysm = system(name)
        build = time.perf_counter() - t
        row = measure(c.label, sysm, c.q0, c.v0, c.h)
        row.update(name=name, build_wall=build)
        rows.append(row)
    cache = cache_directory()
    print(json.dumps({"import_wall": import_wall, "warmup": warm, "rows": rows,
                      "cache_dir": None if cache is None else str(cache)}))


if __name__ == "__main__":
    main(sys.argv[1:])
