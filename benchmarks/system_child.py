"""One bundled system in a fresh interpreter: first call, then warm calls; prints one JSON line.

``python benchmarks/system_child.py NAME N_STEPS REPEATS`` imports the library found on
``PYTHONPATH`` (so that the same script measures any version of it), builds the bundled system
``NAME`` with its default retraction, initial data and step ``h``, and times

* the import of the library,
* the first ``integrate(system, q0, v0=v0, h=h, n_steps=N_STEPS)`` of the process (wall and CPU
  time of this process: on a loaded machine the CPU time is the steadier number): tracing,
  lowering and XLA compilation, or a load from the persistent compilation cache -- whatever
  ``MANIFOLD_DIRAC_JAX_CACHE`` points at (the parent gives it an empty directory, then the
  same directory again),
* ``REPEATS`` more identical calls (warm: nothing compiles).

JAX's compile events of the first call are summed (tracing, lowering to MLIR, backend compile,
cache retrieval), and the final point of the run is printed, so that the parent can compare
two versions of the library. Only the public API is used (``md.integrate``, the catalog of
bundled systems), so this script must not put its own repository on ``sys.path``.
"""

from __future__ import annotations

import json
import sys
import time

t0 = time.perf_counter()
import manifold_dirac as md  # noqa: E402

IMPORT_S = time.perf_counter() - t0

from collections import defaultdict  # noqa: E402

import jax  # noqa: E402
import numpy as np  # noqa: E402
from machine import COMPILE_EVENTS  # noqa: E402  (beside this script: sys.path[0])

EVENTS = COMPILE_EVENTS
_acc: dict[str, float] = defaultdict(float)
_count: dict[str, int] = defaultdict(int)


def _listener(event: str, duration_secs: float, **_kw) -> None:
    if event in EVENTS:
        _acc[EVENTS[event]] += duration_secs
        _count[EVENTS[event]] += 1


jax.monitoring.register_event_duration_secs_listener(_listener)


def _get_example(name: str):
    get = getattr(md, "get_example", None)
    if get is None:  # older versions: only in the catalog module
        from manifold_dirac.systems.catalog import get_example as get
    return get(name)


def _final_point(tr) -> list[float]:
    leaves = jax.tree_util.tree_leaves(tr.q)
    return [float(x) for leaf in leaves for x in np.ravel(np.asarray(leaf)[-1])]


def main(name: str, n_steps: int, repeats: int) -> dict:
    ex = _get_example(name)
    t = time.perf_counter()
    sysm = ex.system()
    q0, v0 = ex.initial(sysm)
    build = time.perf_counter() - t

    def run():
        return md.integrate(sysm, q0, v0=v0, h=ex.h, n_steps=n_steps)

    _acc.clear()
    _count.clear()  # the first call's own events (not the import's, nor the eager programs building q0 compiled)
    t, c = time.perf_counter(), time.process_time()
    tr = run()
    first, first_cpu = time.perf_counter() - t, time.process_time() - c
    events = dict(_acc)
    counts = dict(_count)
    warm = []
    for _ in range(repeats):
        t = time.perf_counter()
        run()
        warm.append(time.perf_counter() - t)
    return {
        "name": name, "n_steps": n_steps, "h": ex.h, "import_s": IMPORT_S, "build_s": build,
        "first_call_s": first, "first_call_cpu_s": first_cpu, "first_call_events_s": events, "first_call_event_counts": counts,
        "warm_s": warm, "ok": bool(np.all(np.asarray(tr.ok))), "final_point": _final_point(tr),
        "version": getattr(md, "__version__", "?"),
    }


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))))
