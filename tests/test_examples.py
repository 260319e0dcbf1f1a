"""Every example script runs with its defaults and writes its figures (half of them; the other half in
``test_examples_more.py``: two files, so that ``--dist loadfile`` gives them to both workers)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))


def run_example(script: Path, out: Path) -> None:
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(script), "--out", str(out)], capture_output=True, text=True,
                          env=env, cwd=ROOT / "examples", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip(), "an example prints what it shows"
    pngs = list(out.glob("*.png"))
    assert pngs and all(p.stat().st_size > 10_000 for p in pngs)


@pytest.mark.parametrize("script", SCRIPTS[0::2], ids=lambda p: p.stem)
def test_example_runs_and_writes_figures(script, tmp_path):
    run_example(script, tmp_path)


def test_the_two_halves_cover_every_example():
    """Sensitivity of the split: the halves are disjoint and cover the directory's scripts."""
    halves = SCRIPTS[0::2], SCRIPTS[1::2]
    assert not set(halves[0]) & set(halves[1]) and set(halves[0]) | set(halves[1]) == set(SCRIPTS)
    assert len(SCRIPTS) >= 10
