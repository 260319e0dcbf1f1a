"""Where the test suite's time goes: JAX tracing, lowering and XLA compiling per test, and a summary.

A pytest plugin and its report. Run the suite with it (``-p benchmarks.suite_profile``; with
``pytest-xdist`` every worker writes its own file), then summarize::

    SUITE_PROFILE_OUT=/tmp/prof XDG_CACHE_HOME=$(mktemp -d) \\
        .venv/bin/python -m pytest -p benchmarks.suite_profile
    .venv/bin/python benchmarks/suite_profile.py /tmp/prof [--top 30] [--json OUT]

(an empty ``XDG_CACHE_HOME`` gives the empty persistent cache of a fresh CI machine). Per test it
records its wall time (setup, call and teardown) and the seconds JAX reports through
``jax.monitoring``: tracing (``jaxpr_trace_duration``), lowering to MLIR
(``jaxpr_to_mlir_module_duration``) and compiling, or loading from the persistent cache
(``backend_compile_duration``; loads are also counted as ``cache_retrieval_time_sec``), with the name of
every compiled program. Work in subprocesses a test starts (the CLI, the sweeps' workers) is in its wall
time only. The report sums them per test file and lists the compiled programs by name and size class.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

import pytest

EVENTS = ("jaxpr_trace_duration", "jaxpr_to_mlir_module_duration", "backend_compile_duration",
          "cache_retrieval_time_sec")

_current: dict = {"id": None}
_rows: dict = collections.defaultdict(collections.Counter)
_programs: list = []


def _listener(event: str, duration: float, **kwargs) -> None:
    key = event.rsplit("/", 1)[-1]
    if key not in EVENTS:
        return
    test = _current["id"] or f"<outside tests, {os.environ.get('PYTEST_XDIST_WORKER', 'main')}>"
    _rows[test][key] += duration
    _rows[test][key + "_n"] += 1
    if key == "backend_compile_duration":
        _programs.append((test, str(kwargs.get("fun_name")), duration))


def pytest_configure(config) -> None:
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_listener)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """The test's own events, and its wall time."""
    _current["id"] = item.nodeid
    start = time.perf_counter()
    try:
        yield
    finally:
        _rows[item.nodeid]["wall"] += time.perf_counter() - start
        _current["id"] = None


def pytest_unconfigure(config) -> None:
    out = Path(os.environ.get("SUITE_PROFILE_OUT", "suite-profile"))
    out.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    (out / f"{worker}.json").write_text(json.dumps({"rows": {k: dict(v) for k, v in _rows.items()},
                                                     "programs": _programs}))


def load(directory: Path) -> tuple[dict, list]:
    """Every worker's rows (per test) and compiled programs ``(test, name, seconds)``, merged.

    Rows with the same key in two files (the work outside tests, in files written before it was keyed
    per worker) are summed, not overwritten. Write each run to a directory of its own: every ``*.json``
    of the directory is merged.
    """
    rows: dict = collections.defaultdict(collections.Counter)
    programs: list = []
    for f in sorted(directory.glob("*.json")):
        data = json.loads(f.read_text())
        for test, row in data["rows"].items():
            rows[test].update(row)
        programs += data.get("programs", data.get("progs", []))
    return {k: dict(v) for k, v in rows.items()}, programs


def summary(rows: dict, programs: list) -> dict:
    """Totals, per file, per program name and per compile-time class (all in seconds)."""
    keys = ("wall", *EVENTS, "backend_compile_duration_n")
    total = {k: sum(r.get(k, 0.0) for r in rows.values()) for k in keys}
    per_file: dict = collections.defaultdict(collections.Counter)
    for test, r in rows.items():
        for k in keys:
            per_file[test.split("::")[0]][k] += r.get(k, 0.0)
    by_name: dict = collections.defaultdict(lambda: [0, 0.0])
    for _, name, d in programs:
        by_name[name][0] += 1
        by_name[name][1] += d
    classes = (0.2, 1.0, 5.0, float("inf"))
    by_class = {c: [0, 0.0] for c in classes}
    for _, _, d in programs:
        c = next(c for c in classes if d <= c)
        by_class[c][0] += 1
        by_class[c][1] += d
    return {"total": total, "files": {f: dict(v) for f, v in per_file.items()},
            "names": {k: v for k, v in sorted(by_name.items(), key=lambda kv: -kv[1][1])},
            "classes": {f"<= {c:g} s": v for c, v in by_class.items()}}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--json", type=Path, help="also write the summary here")
    args = ap.parse_args(argv)
    rows, programs = load(args.directory)
    s = summary(rows, programs)
    t = s["total"]
    print(f"{len(rows)} tests: {t['wall']:.0f} s of test time; tracing {t['jaxpr_trace_duration']:.0f} s, lowering "
          f"{t['jaxpr_to_mlir_module_duration']:.0f} s, compiling or loading {t['backend_compile_duration']:.0f} s "
          f"({t['backend_compile_duration_n']:.0f} programs; {t['cache_retrieval_time_sec']:.0f} s of it loading)")
    print(f"\n{'file':58s} {'wall':>6s} {'trace':>6s} {'lower':>6s} {'comp':>6s} {'n':>5s}")
    for f, r in sorted(s["files"].items(), key=lambda kv: -kv[1]["wall"])[: args.top]:
        print(f"{f[:58]:58s} {r['wall']:6.0f} {r['jaxpr_trace_duration']:6.0f} {r['jaxpr_to_mlir_module_duration']:6.0f} "
              f"{r['backend_compile_duration']:6.0f} {r['backend_compile_duration_n']:5.0f}")
    print("\ncompiled programs by compile time: " + ", ".join(f"{k}: {n} ({d:.0f} s)" for k, (n, d) in s["classes"].items()))
    print("by name: " + ", ".join(f"{k} {n} ({d:.0f} s)" for k, (n, d) in list(s["names"].items())[:8]))
    if args.json:
        args.json.write_text(json.dumps(s, indent=1))


if __name__ == "__main__":
    sys.exit(main())
