"""One long run in a fresh interpreter; prints its peak RSS as JSON.

``python benchmarks/memory_child.py NAME N STRIDE`` integrates the case
``NAME`` of ``benchmarks/cases.py`` for ``N`` steps storing every
``STRIDE``-th point, after a 10-step call with the same stride that compiles
(or loads from the persistent cache) the same program; ``STRIDE = 0`` only
starts the interpreter and imports. Prints ``{"name", "steps", "stride",
"stored", "maxrss_import_kb", "maxrss_warm_kb", "rss_warm_kb", "maxrss_kb", "wall", "cpu"}``:
peak RSS after the import, after the warm-up call and at the end, and the
resident set when the run starts (``VmRSS`` after the warm-up: the run's
peak above it is what the run adds, even where compiling peaked higher).

The peak is the kernel's high-water mark of this process's resident set
(``VmHWM`` in ``/proc/self/status``, Linux); ``resource.getrusage``'s
``ru_maxrss`` is recorded too (``*_rusage_kb``) but is not used: on Linux it
survives ``exec``, so a child started by a large parent (the benchmark
process holds ~1 GB of compiled programs) reports at least the parent's RSS
at the ``fork``. Elsewhere ``ru_maxrss`` is all there is and is used.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.cases import CASES, system  # noqa: E402
from manifold_dirac import integrate  # noqa: E402


def _rusage_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kilobytes on Linux


def _status_kb(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _maxrss_kb() -> int:
    """Peak RSS of this process in kB: ``VmHWM`` (Linux), else ``ru_maxrss``."""
    v = _status_kb("VmHWM")
    return _rusage_kb() if v is None else v


def _rss_kb() -> int:
    """Current RSS in kB: ``VmRSS`` (Linux), else the peak."""
    v = _status_kb("VmRSS")
    return _maxrss_kb() if v is None else v


def main(argv: list[str]) -> None:
    name, n, stride = argv[0], int(argv[1]), int(argv[2])
    out = {"name": name, "steps": n, "stride": stride, "stored": 0, "maxrss_import_kb": _maxrss_kb()}
    wall = cpu = 0.0
    if stride > 0:
        c = CASES[name]
        sysm = system(name)
        integrate(sysm, c.q0, v0=c.v0, h=c.h, n_steps=10, stride=stride)
        out["maxrss_warm_kb"] = _maxrss_kb()
        out["rss_warm_kb"] = _rss_kb()
        w, t = time.perf_counter(), time.process_time()
        tr = integrate(sysm, c.q0, v0=c.v0, h=c.h, n_steps=n, stride=stride)
        wall, cpu = time.perf_counter() - w, time.process_time() - t
        out["stored"] = int(len(tr.t))
        out["trajectory_mb"] = sum(getattr(getattr(tr, f), "nbytes", 0) for f in (
            "t", "p", "v", "energy", "xi", "mu", "constraint_residual", "residual", "iterations")) / 2**20 + sum(
            a.nbytes for a in (tr.q if isinstance(tr.q, tuple) else (tr.q,))) / 2**20
    else:
        out["maxrss_warm_kb"] = out["rss_warm_kb"] = out["maxrss_import_kb"]
    out.update(maxrss_kb=_maxrss_kb(), maxrss_rusage_kb=_rusage_kb(), wall=wall, cpu=cpu)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
