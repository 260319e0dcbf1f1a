"""The benchmark suite's quick mode runs end to end (so that it cannot rot)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_quick_benchmark_writes_table_and_figure(tmp_path):
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    wall = time.perf_counter() - t
    assert proc.returncode == 0, proc.stderr[-2000:]
    table = (tmp_path / "results.md").read_text()
    for heading in ("## 1. Steps per second", "## 2. Work--precision", "## 3. Batched integration", "## 4. Peak memory"):
        assert heading in table
    assert (tmp_path / "performance.png").stat().st_size > 10_000
    steps = json.loads((tmp_path / "results-steps.json").read_text())
    # the baselines integrate the same scheme: they agree with the library
    for row in steps["rows"]:
        assert row["max_state_difference"] < 1e-9, row
    assert wall < 20.0, f"the quick benchmark took {wall:.1f} s"
