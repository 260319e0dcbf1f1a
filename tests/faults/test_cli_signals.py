"""Ctrl-C and SIGTERM sent to the command line, in a subprocess: the command ends promptly and
keeps what it computed (exit status 128 + the signal's number)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from manifold_dirac._run.trajectory import Trajectory

ROOT = Path(__file__).resolve().parents[2]
# 1e9 steps (about 400 s at 0.4 us a step) every 1000th stored: the run outlasts any signal's limit
# below, and what an interrupted run writes stays small (5e6 steps all stored ran in 13 s and left
# a 420 MB file and figures of 4e6 points to write after the signal, longer than the limit under load)
LONG_RUN = ["run", "pendulum", "--h", "0.001", "--steps", "1000000000", "--stride", "1000", "--no-progress"]


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-c", "import sys; from manifold_dirac.cli import main; "
                             "sys.exit(main(sys.argv[1:]))", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _signal_after(proc: subprocess.Popen, sig: int, delay: float, limit: float = 90.0) -> tuple[int, str, float]:
    time.sleep(delay)
    sent = time.perf_counter()
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the command did not end within {limit} s of the signal {sig}: {err[-500:]}")
    return proc.returncode, out + err, time.perf_counter() - sent


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.3, 1.5, 4.0, 8.0])
def test_ctrl_c_at_any_time_ends_the_run(delay, tmp_path):
    """Early (imports), during the first compile, or while stepping: one Ctrl-C ends the command
    promptly (the run of 1e9 steps would take far longer than the limit). Once the command has
    started it says so and exits with 130; while Python still imports the library (the first
    second or so, longer on a loaded machine) Python's own handling ends it (killed by SIGINT,
    or an ImportError from jaxlib's extension loader)."""
    code, text, _ = _signal_after(_start([*LONG_RUN, "--out", str(tmp_path)]), signal.SIGINT, delay)
    if "manifold-dirac" in text:
        assert code == 130, text[-800:]
    else:
        assert code in (-signal.SIGINT, 1) and ("KeyboardInterrupt" in text or "ImportError" in text), text[-800:]


@pytest.mark.slow
@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_during_the_run_keeps_the_points_computed(sig, status, tmp_path):
    proc = _start([*LONG_RUN, "--out", str(tmp_path)])
    # wait until stepping has started (the compile is done once the first chunk is back)
    code, text, _ = _signal_after(proc, sig, 25.0)
    assert code == status, text[-800:]
    files = list(tmp_path.glob("pendulum.npz"))
    if "before the first points were stored" in text:
        pytest.skip("the machine was too loaded to store a chunk in 25 s")
    assert files, f"nothing written to {tmp_path}: {text[-800:]}"
    tr = Trajectory.load(files[0])
    assert tr.meta["interrupted"] and int(tr.status) == 5 and tr.n_points > 1
    assert np.all(np.isfinite(tr.q))


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the worker processes through /proc")
@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_tour_and_its_worker_processes(sig, status, tmp_path):
    """The tour in two worker processes: a signal to the command (as a shell's Ctrl-C, or a SIGTERM)
    ends it promptly with 128 + the signal's number, and its worker processes end with it."""
    proc = _start(["tour", "--quick", "--jobs", "2", "--out", str(tmp_path)])
    deadline = time.perf_counter() + 120
    workers: list[int] = []
    while len(workers) < 2 and time.perf_counter() < deadline and proc.poll() is None:
        time.sleep(0.5)
        workers = _children(proc.pid)
    assert len(workers) >= 2, "the tour did not start its two workers within 120 s"
    code, text, waited = _signal_after(proc, sig, 5.0)
    assert code == status, text[-800:]
    assert "Traceback" not in text, text[-2000:]
    time.sleep(1.0)
    alive = [w for w in workers if Path(f"/proc/{w}").exists()
             and "zombie" not in Path(f"/proc/{w}/status").read_text().lower()]
    assert not alive, f"worker processes {alive} outlived the tour"
