"""Every example script runs with its defaults and writes its figures (half of them; the other half in
``test_examples_more.py``: two files, so that ``--dist loadfile`` gives them to both workers).

The scripts run in the test process (``runpy``, as ``__main__``, with their own directory as the
working directory and on ``sys.path``, and ``--out`` in ``sys.argv``), so that the worker's imports
and its compiled programs serve them, as they would serve a user's session that runs several
scripts; a process of their own for every script cost CI about a minute of imports and of programs
compiled again. One script also runs as a program of its own (``python script.py --out DIR``), as a
user runs it from the shell.
"""

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tests._tiers import slow_cases

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))


def _check_output(printed: str, out: Path) -> None:
    assert printed.strip(), "an example prints what it shows"
    pngs = list(out.glob("*.png"))
    assert pngs and all(p.stat().st_size > 10_000 for p in pngs)


def run_example(script: Path, out: Path, capsys, monkeypatch) -> None:
    """Run ``script --out out`` in this process as ``__main__`` and check what it printed and wrote
    (``monkeypatch`` restores ``sys.argv``, ``sys.path`` and the working directory after the test)."""
    import matplotlib.pyplot as plt

    plt.switch_backend("Agg")  # as MPLBACKEND=Agg did for the scripts' own processes
    monkeypatch.setattr(sys, "argv", [str(script), "--out", str(out)])
    monkeypatch.syspath_prepend(str(script.parent))
    monkeypatch.chdir(script.parent)
    try:
        runpy.run_path(str(script), run_name="__main__")
    finally:
        plt.close("all")
    _check_output(capsys.readouterr().out, out)


# The examples that compile the most run in the slow tier (docs/architecture.md#the-test-suite-two-tiers-and-where-its-time-goes).
SLOW_EXAMPLES = {"interconnection_mass_spring", "interconnection_rolling_disk", "control_differential_drive", "identify_heavy_top", "retraction_study", "se3_tumbling_brick",
                 "sphere_spherical_pendulum", "degenerate_lc_circuit", "holonomic_four_bar", "interconnection_rolling_ball",
                 "interconnection_two_wheel_cart", "so3_rigid_body"}


@pytest.mark.parametrize("script", slow_cases(SCRIPTS[0::2], SLOW_EXAMPLES & {p.stem for p in SCRIPTS[0::2]},
                                              ids=lambda p: p.stem))
def test_example_runs_and_writes_figures(script, tmp_path, capsys, monkeypatch):
    run_example(script, tmp_path, capsys, monkeypatch)


def test_an_example_runs_as_a_program(tmp_path):
    """As a user runs it: ``python examples/se2_chaplygin_sled.py --out DIR`` in a process of its own."""
    script = ROOT / "examples" / "se2_chaplygin_sled.py"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], capture_output=True, text=True,
                          env=env, cwd=ROOT / "examples", timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    _check_output(proc.stdout, tmp_path)


def test_the_two_halves_cover_every_example():
    """Sensitivity of the split: the halves are disjoint and cover the directory's scripts."""
    halves = SCRIPTS[0::2], SCRIPTS[1::2]
    assert not set(halves[0]) & set(halves[1]) and set(halves[0]) | set(halves[1]) == set(SCRIPTS)
    assert len(SCRIPTS) >= 10
    assert SLOW_EXAMPLES <= {p.stem for p in SCRIPTS}, "a slow-tier example was renamed or removed"


def test_a_failing_example_fails_the_test(tmp_path, capsys, monkeypatch):
    """Sensitivity: an example that raises, or prints nothing, or writes no figure, fails its test."""
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('an example that fails')\n")
    with pytest.raises(RuntimeError, match="an example that fails"):
        run_example(bad, tmp_path, capsys, monkeypatch)
    quiet = tmp_path / "quiet.py"
    quiet.write_text("x = 1\n")
    with pytest.raises(AssertionError, match="prints"):
        run_example(quiet, tmp_path, capsys, monkeypatch)
    silent_plot = tmp_path / "noplot.py"
    silent_plot.write_text("print('no figure')\n")
    with pytest.raises(AssertionError):
        run_example(silent_plot, tmp_path / "empty", capsys, monkeypatch)
