"""What every benchmark results file records about the run: machine, load, versions, date.

``describe()`` returns the CPU model and core count (``/proc/cpuinfo``, ``os.cpu_count``), the
operating system, the load average (``os.getloadavg``: 1, 5 and 15 minutes), the Python, jax and
jaxlib versions and the UTC date. Timings on a shared machine move with its load, so every
results file carries the load at its start and end (``load()``).
"""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import datetime, timezone


def load() -> list[float]:
    """The load average over 1, 5 and 15 minutes (empty where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):  # pragma: no cover
        return []


def cpu_model() -> str:
    """The CPU's model name, from ``/proc/cpuinfo`` (Linux) or ``platform.processor()``."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe() -> dict:
    """Machine, load, versions and date, for a results file."""
    import jax
    import jaxlib

    return {
        "cpu": cpu_model(), "cores": os.cpu_count(), "arch": platform.machine(),
        "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
        "jax": jax.__version__, "jaxlib": jaxlib.__version__, "load": load(),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }



COMPILE_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "backend_compile",
    "/jax/compilation_cache/cache_retrieval_time_sec": "cache_retrieval",
}
"""JAX's monitoring events of a compilation, by the name the results files give them."""


def add_version_arguments(parser, quick_help: str) -> None:
    """The options of a script that measures this checkout, and optionally an older one, side by side."""
    from pathlib import Path

    parser.add_argument("--before", type=Path, help="a checkout of another version of the library (its root)")
    parser.add_argument("--before-label", default="previous version")
    parser.add_argument("--after-label", default="this version")
    parser.add_argument("--quick", action="store_true", help=quick_help)


def commit(tree) -> str | None:
    """The short hash of the commit checked out in ``tree``, ``+`` if a tracked file differs from it.

    ``None`` where ``tree`` is not the top of a git checkout (a plain copy, also one inside another
    repository) or git is missing.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    try:
        run = lambda *a: subprocess.run(["git", "-C", str(tree), *a], capture_output=True, text=True,  # noqa: E731
                                        timeout=30, env=env)
        top = run("rev-parse", "--show-toplevel")
        if top.returncode or os.path.realpath(top.stdout.strip()) != os.path.realpath(tree):
            return None
        head = run("rev-parse", "--short", "HEAD")
        if head.returncode:
            return None
        dirty = run("status", "--porcelain", "--untracked-files=no").stdout.strip()
        return head.stdout.strip() + ("+" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def versions(args, root) -> dict:
    """``{label: checkout}``: the older version first (with ``--before``), then this one."""
    if args.before is None:
        return {args.after_label: root}
    return {args.before_label: args.before.resolve(), args.after_label: root}


def interleaved_min(fs: dict, rounds: int, calls: int) -> dict:
    """``{key: seconds}``: the fastest of ``calls`` back-to-back calls of each ``fs[key]()``, over ``rounds``
    interleaved rounds (each called once first, untimed)."""
    import time

    for f in fs.values():
        f()
    best = {k: float("inf") for k in fs}
    for _ in range(rounds):
        for k, f in fs.items():
            for _ in range(calls):
                t0 = time.perf_counter()
                f()
                best[k] = min(best[k], time.perf_counter() - t0)
    return best
