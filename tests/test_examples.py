"""Every example script runs with its defaults and writes its figures."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.stem)
def test_example_runs_and_writes_figures(script, tmp_path):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], capture_output=True, text=True,
                          env=env, cwd=ROOT / "examples", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip(), "an example prints what it shows"
    pngs = list(tmp_path.glob("*.png"))
    assert pngs and all(p.stat().st_size > 10_000 for p in pngs)
