"""The benchmark suite's quick mode runs end to end (so that it cannot rot), and its implementations agree.

``benchmarks/run.py --quick`` runs every section once with small sizes
(compile and memory in child processes, overlapping the others): the table,
the figure and one JSON file per section are written, the library's states
agree with the hand-specialized implementations of the same scheme (the
numpy baselines always; the Numba floor when the optional ``bench`` extra is
installed), and the run stays within its budget.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("step", "batch", "wp", "compile", "memory")
BUDGET_S = 60.0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def test_quick_benchmark_writes_table_and_figure_and_agrees_with_the_floor(tmp_path):
    cpu0, t = _children_cpu(), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    wall, cpu = time.perf_counter() - t, _children_cpu() - cpu0
    assert proc.returncode == 0, proc.stderr[-3000:]

    table = (tmp_path / "results.md").read_text()
    for heading in ("## Targets", "## 1. Per step", "## 2. Batched", "## 3. Work--precision", "## 4. Compile time",
                    "## 5. Peak memory"):
        assert heading in table, heading
    assert (tmp_path / "performance.png").stat().st_size > 10_000
    R = {s: json.loads((tmp_path / f"results-{s}.json").read_text()) for s in SECTIONS}

    # the same scheme and Newton rule: the library agrees with the baselines (and the floor)
    have_floor = importlib.util.find_spec("numba") is not None
    assert {r["name"] for r in R["step"]["rows"]} >= {"heavy_top", "knife_edge"}
    for row in R["step"]["rows"]:
        d = row["max_state_difference"]
        assert d["numpy_baseline"] < 1e-9, row["name"]
        if have_floor:
            assert d["floor"] < 1e-12, row["name"]
            assert row["ratio_wall"] > 0 and row["floor_newton_iterations_per_step"] is not None
    assert all(r["failed_members"] == 0 for r in R["batch"]["rows"])

    # work-precision: every run succeeded and the library's error falls with h
    for d in R["wp"]["systems"].values():
        assert all(r["ok"] for r in d["runs"])
        lib = sorted((float(r["setting"][2:]), r["error_at_T"]) for r in d["runs"] if r["method"] == "manifold_dirac")
        assert lib[0][1] < lib[-1][1]
    assert all(r["cold_compile_s"] > 0 for r in R["compile"]["rows"])
    n = R["memory"]["n_steps"]
    stored = {r["stride"]: r["stored"] for r in R["memory"]["rows"] if r["steps"] == n}
    assert stored == {1: n + 1, 1000: n // 1000 + 1}

    # the budget: CPU time of the whole process tree always; wall time in CI (a machine of its own)
    assert cpu < BUDGET_S, f"the quick benchmark used {cpu:.1f} s of CPU (wall {wall:.1f} s)"
    if os.environ.get("CI"):
        assert wall < BUDGET_S, f"the quick benchmark took {wall:.1f} s (CPU {cpu:.1f} s)"
