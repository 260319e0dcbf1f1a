"""The manifold-dirac command: subcommands, output, and one-line errors.

Ported to the compiled engine (``manifold_dirac.cli``, run as
``python -m manifold_dirac.cli`` until it replaces the top-level
module). Every assertion and tolerance is the old one, except where noted in
a test's docstring.
"""

import os
import subprocess
import sys

import numpy as np
import pytest

from manifold_dirac.cli import main


def run_cli(*args, cwd=None):
    env = {**os.environ, "MPLBACKEND": "Agg"}
    env.pop("MANIFOLD_DIRAC_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "manifold_dirac.cli", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=600)


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "nosuch"], "unknown system 'nosuch'; valid: cartesian_pendulum, chaplygin_sled"),
        (["run", "heavy_top", "--retraction", "so2xr2"], "unknown retraction 'so2xr2'; valid: 'exp', 'cayley'"),
        (["run", "heavy_top", "--h", "-1"], "argument --h: expected positive numbers, got '-1'"),
        (["run", "heavy_top", "--steps", "zero"], "argument --steps: expected a positive integer, got 'zero'"),
        (["run", "heavy_top", "--scheme", "rk4"], "unknown scheme 'rk4'; valid: 'plus', 'minus', 'symmetric'"),
        (["run", "heavy_top", "--rule", "no-such-rule"], "unknown discrete Lagrangian 'no-such-rule'"),
        (["study", "heavy_top", "--h", "0.1"], "need at least two positive step sizes"),
        (["study", "knife_edge", "--retractions", "exp,quaternion"], "has no retraction 'quaternion'"),
        (["bogus"], "invalid choice: 'bogus'"),
        ([], "the following arguments are required: COMMAND"),
    ],
)
def test_errors_are_one_line_without_traceback(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("manifold-dirac: error: ") and message in err
    assert "Traceback" not in err


def test_failed_integration_exits_1_with_one_line(capsys):
    """Changed: the compiled engine's messages put the failure's summary between the place and the
    hint (``step 0 (t = 0): no convergence: Newton's method did not converge ...``), so the place and
    the hint are checked separately.

    The heavy top at h = 5 rotates by more than pi per step, and
    Newton's iterates leave the domain of ``exp``: since the engine checks the retraction's domain
    in every step this is a domain failure (``StepDomainError``), no longer a convergence failure.
    The same one-line, exit-1 behaviour is checked on a convergence failure of the pendulum at
    h = 1.3 (step 3)."""
    assert main(["run", "heavy_top", "--h", "5", "--steps", "3", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "step 0 (t = 0): " in err and "left the retraction's domain" in err
    assert "Use a smaller h (h=5 now)." in err
    assert main(["run", "pendulum", "--h", "1.3", "--steps", "20", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "step 3 (t = 3.9): " in err and "Newton's method did not converge" in err


def test_help_for_each_command(capsys):
    """Changed: one subprocess (the module runs as a program), the other commands' help in-process
    through ``main`` (each subprocess pays the JAX import; the parser is the same)."""
    proc = run_cli("--help")
    assert proc.returncode == 0 and "usage: manifold-dirac" in proc.stdout
    for cmd in (["tour"], ["run"], ["study"], ["list"]):
        assert main([*cmd, "--help"]) == 0
        assert "usage: manifold-dirac" in capsys.readouterr().out


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "heavy_top" in out and "two_wheel_cart" in out and "retractions: exp, cayley" in out


def test_run_writes_trajectory_and_figures(tmp_path, capsys):
    assert main(["run", "inclined_knife_edge", "--retraction", "cayley", "--steps", "50", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "error at t = 1 against the reference" in out
    from manifold_dirac._run.trajectory import Trajectory

    tr = Trajectory.load(tmp_path / "inclined_knife_edge.npz")
    assert tr.n_points == 51 and (tmp_path / "inclined_knife_edge_trajectory.png").exists()


@pytest.mark.slow
def test_study_writes_table_and_figure(tmp_path, capsys):
    assert main(["study", "knife_edge", "--retractions", "exp,so2xr2", "--schemes", "symmetric",
                 "--h", "0.1,0.05", "--T", "2", "--long-steps", "50", "--out", str(tmp_path), "--no-progress"]) == 0
    table = (tmp_path / "table.md").read_text()
    assert table.count("| symmetric |") == 2 and (tmp_path / "work_precision.png").exists()


@pytest.mark.slow
def test_tour_quick_writes_figures_and_names_the_folder(tmp_path):
    """Changed: marked slow. The tour compiles the step of every bundled system (about 20
    compilations of a few seconds each on a cold cache); ``test_tour_on_a_few_systems`` runs the
    same command in CI on a small catalog."""
    proc = run_cli("tour", "--quick", "--out", str(tmp_path / "figs"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "figures and tables written to" in proc.stdout and str(tmp_path / "figs") in proc.stdout
    for name in ("heavy_top", "rolling_disk", "spherical_pendulum", "two_wheel_cart"):
        assert name in proc.stdout
        assert (tmp_path / "figs" / f"{name}_trajectory.png").exists()
    assert (tmp_path / "figs" / "study_inclined_knife_edge_work_precision.png").exists()


def test_study_rejects_repeated_or_non_dividing_steps(capsys):
    assert main(["study", "pendulum", "--h", "0.02,0.02", "--T", "0.1", "--no-progress"]) == 2
    assert "all different" in capsys.readouterr().err
    assert main(["study", "pendulum", "--h", "0.3,0.15", "--T", "1", "--no-progress"]) == 2
    assert "must divide T = 1" in capsys.readouterr().err


def test_study_self_convergence_matches_a_direct_computation():
    from manifold_dirac._run.integrate import integrate
    from manifold_dirac.study import retraction_study
    from manifold_dirac.systems.catalog import get_example

    res = retraction_study("pendulum", schemes=("symmetric",), hs=(0.3, 0.15), T=0.9, long_steps=3)
    ex = get_example("pendulum")
    s = ex.system()  # a system of its own: the study's run is checked against an independent one
    q0, v0 = ex.initial(s)
    for h, err in zip((0.3, 0.15), res.rows[0].errors):
        n = int(round(0.9 / h))
        coarse = integrate(s, q0, v0=v0, h=h, n_steps=n)
        fine = integrate(s, q0, v0=v0, h=h / 16, n_steps=16 * n)
        assert err == pytest.approx(abs(coarse.q[-1, 0] - fine.q[-1, 0]), rel=1e-9)


STUDY = ["study", "pendulum", "--schemes", "symmetric", "--h", "0.3,0.15", "--T", "0.9", "--long-steps", "3",
         "--no-progress"]


def test_study_resume_skips_the_finished_cells(tmp_path, capsys):
    """``--out`` keeps every finished cell in DIR/cells; ``--resume`` skips them (the same table, read
    back from the store: even the wall times are the first run's); without ``--resume`` the study
    starts afresh and says so."""
    from manifold_dirac._sweep import load_dataset

    assert main([*STUDY, "--out", str(tmp_path)]) == 0
    first = capsys.readouterr().out
    assert "(2 cells run, 0 resumed from" in first
    table = (tmp_path / "table.md").read_text()
    ds = load_dataset(tmp_path / "study.nc")
    assert ds.sizes == {"retraction": 1, "scheme": 1, "rule": 1, "h": 2} and (ds.status == "ok").all()
    assert main([*STUDY, "--out", str(tmp_path), "--resume"]) == 0
    assert "(0 cells run, 2 resumed from" in capsys.readouterr().out
    assert (tmp_path / "table.md").read_text() == table
    # a larger grid, resumed: only the new step size runs
    assert main([*STUDY[:5], "0.3,0.15,0.1", *STUDY[6:], "--out", str(tmp_path), "--resume"]) == 0
    assert "(1 cells run, 2 resumed from" in capsys.readouterr().out
    assert main([*STUDY, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "starting afresh: removed 3 finished task files" in out and "(2 cells run, 0 resumed" in out
    assert main([*STUDY, "--resume"]) == 2
    assert "--resume needs --out DIR" in capsys.readouterr().err


def test_study_records_a_failed_cell_and_keeps_the_others():
    """h = 1.3 fails (Newton's method at step 3); the cell at h = 0.65 is kept: its error is in
    the row (no order from one step size), the note names the failure, the energy error of the
    largest h is inf, and the Dataset says which cell failed and why."""
    from manifold_dirac.study import retraction_study

    res = retraction_study("pendulum", schemes=("symmetric",), hs=(1.3, 0.65), T=5.2, long_steps=3)
    row, ds = res.rows[0], res.dataset
    assert row.hs == (0.65,) and len(row.errors) == 1 and row.errors[0] > 0 and row.order is None
    assert row.failure == "step 3 (t = 3.9): ConvergenceError" and row.energy_error == float("inf")
    assert ds.status.values.ravel().tolist() == ["ConvergenceError", "ok"]
    assert "Newton's method did not converge" in str(ds.message.sel(h=1.3).values.ravel()[0])
    assert np.isnan(ds.error.sel(h=1.3)).all() and np.isfinite(ds.error.sel(h=0.65)).all()
    assert "| step 3 (t = 3.9): ConvergenceError |" in res.table()


def test_study_on_a_scheduler_address_gives_the_in_process_table(capsys):
    """``--scheduler ADDRESS``: the cells run on that cluster (here a threaded LocalCluster of this
    process); the errors are those of the same study in this process, bit for bit."""
    distributed = pytest.importorskip("distributed")
    from manifold_dirac.study import retraction_study

    here = retraction_study("pendulum", schemes=("symmetric",), hs=(0.3, 0.15), T=0.9, long_steps=3)
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        assert "run_packed_task" not in cluster.scheduler.task_prefixes
        assert main([*STUDY, "--scheduler", cluster.scheduler_address]) == 0
        assert "run_packed_task" in cluster.scheduler.task_prefixes  # the cells ran there (a sweep's task)
    out = capsys.readouterr().out
    assert f"| {here.rows[0].errors[-1]:.2e} |" in out
    # sensitivity: another T is another error, and would not be found in the table
    other = retraction_study("pendulum", schemes=("symmetric",), hs=(0.3, 0.15), T=0.6, long_steps=3)
    assert f"| {other.rows[0].errors[-1]:.2e} |" not in out


def test_study_workers_and_scheduler_reach_the_study(monkeypatch, capsys):
    from manifold_dirac import study

    seen = {}

    def fake(*args, **kwargs):
        seen.update(kwargs)
        raise RuntimeError("stopped here")

    monkeypatch.setattr(study, "retraction_study", fake)
    assert main([*STUDY, "--workers", "3"]) == 2
    assert seen["workers"] == 3 and seen["client"] is None and seen["store"] is None and not seen["resume"]
    assert main([*STUDY, "--scheduler", "tcp://10.0.0.1:8786"]) == 2
    assert seen["workers"] == 0 and seen["client"] == "tcp://10.0.0.1:8786"
    assert main([*STUDY, "--workers", "2", "--scheduler", "tcp://10.0.0.1:8786"]) == 2
    assert "give --workers N (a local cluster) or --scheduler ADDRESS" in capsys.readouterr().err
    assert main([*STUDY, "--workers", "-1"]) == 2
    assert "expected a non-negative integer, got '-1'" in capsys.readouterr().err


def test_tour_on_a_few_systems(tmp_path, monkeypatch, capsys):
    """The tour in-process (``--jobs 1``) on four systems (coordinates, SE(2), and a product with an
    SE(2) body), with the knife edge of its study on one retraction: the same output and files as the
    full tour (``test_tour_quick_writes_figures_and_names_the_folder``) at a fraction of the
    compilations."""
    import dataclasses

    from manifold_dirac.systems import catalog

    # pendulum, knife_edge (exp) and inclined_knife_edge (cayley) reuse the systems compiled above
    few = {name: catalog.EXAMPLES[name] for name in ("pendulum", "knife_edge", "rolling_disk")}
    few["rolling_disk"] = dataclasses.replace(few["rolling_disk"], retractions=("exp",))
    few["inclined_knife_edge"] = dataclasses.replace(catalog.EXAMPLES["inclined_knife_edge"],
                                                     retractions=("cayley",))
    monkeypatch.setattr(catalog, "EXAMPLES", few)
    out_dir = tmp_path / "figs"
    assert main(["tour", "--quick", "--jobs", "1", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "figures and tables written to" in out and str(out_dir) in out
    for name in few:
        assert name in out
        assert (out_dir / f"{name}_trajectory.png").exists() and (out_dir / f"{name}_energy.png").exists()
    assert (out_dir / "study_inclined_knife_edge_work_precision.png").exists()
    table = (out_dir / "study_inclined_knife_edge.md").read_text()
    assert table.count("| cayley | symmetric |") == 1 and table.count("| cayley | plus |") == 1



def _without_times(row):
    return {k: v for k, v in row.items() if k != "s"}


@pytest.mark.slow
def test_tour_tasks_in_two_worker_processes_give_what_one_process_gives(tmp_path):
    """Slow: two fresh processes import JAX and draw their first figures (``worker_pool`` itself is
    tested in ``tests/test_sweep_workers.py``). The tour's tasks in two worker processes: the rows of the table (all but the run's wall time),
    in the tasks' order, and the figures are those of the same tasks run in this process; and the
    comparison can fail (a row of another example differs)."""
    from manifold_dirac import cli

    tasks = [("example", "pendulum"), ("example", "harmonic_oscillator")]
    here = cli._run_tour_tasks(tasks, tmp_path / "here", True, jobs=1)
    there = cli._run_tour_tasks(tasks, tmp_path / "there", True, jobs=2)
    assert [r["system"] for r in there] == ["pendulum", "harmonic_oscillator"]
    assert [_without_times(r) for r in there] == [_without_times(r) for r in here]
    assert all(r["s"] > 0 for r in there)
    assert _without_times(there[0]) != _without_times(here[1])  # the check sees a difference
    names = sorted(f.name for f in (tmp_path / "here").glob("*.png"))
    assert names == sorted(f.name for f in (tmp_path / "there").glob("*.png")) and len(names) == 4


def test_tour_tasks_are_the_study_then_every_example_once_longest_first():
    """The order the tour's workers take its tasks in (the benchmark's per-task profile uses it too)."""
    from manifold_dirac import cli
    from manifold_dirac.systems.catalog import EXAMPLES

    tasks = cli._tour_tasks(EXAMPLES)
    assert tasks[0] == ("study", "inclined_knife_edge") and len(tasks) == len(EXAMPLES) + 1
    assert sorted(n for k, n in tasks[1:] if k == "example") == sorted(EXAMPLES)
    assert [n for _, n in tasks[1:]] == list(EXAMPLES)[::-1]  # the catalog's last (largest) systems first


def test_tour_jobs_option(tmp_path, monkeypatch, capsys):
    """``--jobs`` reaches the tour (default: two worker processes on two CPUs or more, else one:
    this process); zero or a non-number is a usage error."""
    from manifold_dirac import _spawn, cli

    seen = []

    def fake(tasks, out, quick, jobs):
        seen.append(jobs)
        raise RuntimeError("stopped here")

    monkeypatch.setattr(cli, "_run_tour_tasks", fake)
    assert main(["tour", "--jobs", "3", "--out", str(tmp_path)]) == 2 and seen == [3]
    assert main(["tour", "--out", str(tmp_path)]) == 2 and seen[-1] == cli._default_jobs()
    monkeypatch.setattr(_spawn, "cpu_count", lambda: 1)
    assert cli._default_jobs() == 1
    monkeypatch.setattr(_spawn, "cpu_count", lambda: 8)
    assert cli._default_jobs() == 2
    assert main(["tour", "--jobs", "0"]) == 2
    assert "argument --jobs: expected a positive integer, got '0'" in capsys.readouterr().err


# ----------------------------------------------------- --out and interruptions
def _integrate_module():
    return sys.modules["manifold_dirac._run.integrate"]


def _must_not_integrate(*args, **kwargs):
    raise AssertionError("the integration started")


@pytest.mark.parametrize("command", ["run", "study"])
def test_out_is_checked_writable_before_integrating(command, tmp_path, monkeypatch, capsys):
    """A folder that cannot be created (a path through a regular file) is refused in one line before
    any integration; a writable one is created and left without the write-test file."""
    from manifold_dirac import study

    monkeypatch.setattr(_integrate_module(), "integrate", _must_not_integrate)
    monkeypatch.setattr(study, "retraction_study", _must_not_integrate)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    bad = blocker / "out"
    assert main([command, "pendulum", "--out", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"manifold-dirac: error: --out {bad}: cannot write to this folder (")
    assert "nothing was computed: choose a folder you can write to" in err and "the integration started" not in err
    # the check itself is not the error: a fresh nested folder passes it, and the run starts (stopped here)
    good = tmp_path / "new" / "nested"
    assert main(["run", "pendulum", "--out", str(good), "--no-progress"]) == 2
    assert "the integration started" in capsys.readouterr().err
    assert good.is_dir() and list(good.iterdir()) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can write to read-only folders")
def test_out_read_only_folder_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(_integrate_module(), "integrate", _must_not_integrate)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert main(["run", "pendulum", "--out", str(ro), "--no-progress"]) == 2
    finally:
        ro.chmod(0o700)
    assert "cannot write to this folder (Permission denied)" in capsys.readouterr().err


def _interrupted_after_the_first_chunk(real):
    """``integrate`` as the engine runs it, with a Ctrl-C arriving after the first compiled chunk
    (the callback runs on the host between chunks; the engine turns the KeyboardInterrupt into
    RunInterrupted carrying the points computed so far)."""

    def fake(*args, **kwargs):
        def ctrl_c(state):
            raise KeyboardInterrupt

        return real(*args, **{**kwargs, "callback": ctrl_c})

    return fake


def test_ctrl_c_during_run_writes_the_partial_trajectory_and_exits_130(tmp_path, monkeypatch, capsys):
    from manifold_dirac._run.loop import CHUNK
    from manifold_dirac._run.integrate import integrate
    from manifold_dirac._mechanics.status import Status
    from manifold_dirac._run.trajectory import Trajectory
    from manifold_dirac.study import example_system
    from manifold_dirac.systems.catalog import get_example

    monkeypatch.setattr(_integrate_module(), "integrate", _interrupted_after_the_first_chunk(integrate))
    steps = CHUNK + 40
    assert main(["run", "pendulum", "--steps", str(steps), "--out", str(tmp_path), "--no-progress"]) == 130
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"manifold-dirac: interrupted at step {CHUNK - 1} of {steps} (t = ")
    assert f"wrote the {CHUNK} points computed so far (status INTERRUPTED) to {tmp_path / 'pendulum.npz'}" in err
    tr = Trajectory.load(tmp_path / "pendulum.npz")
    assert tr.n_points == CHUNK and np.all(tr.status == Status.INTERRUPTED) and tr.meta["interrupted"] is True
    assert (tmp_path / "pendulum_trajectory.png").exists() and "and the figures" in err
    # the written points are those of an uninterrupted run (second route), and a shift by one breaks that
    ex = get_example("pendulum")
    sysm = example_system(ex)
    q0, v0 = ex.initial(sysm)
    full = integrate(sysm, q0, v0=v0, h=ex.h, n_steps=steps)
    np.testing.assert_array_equal(tr.q, full.q[:CHUNK])
    np.testing.assert_array_equal(tr.p, full.p[:CHUNK])
    assert not np.array_equal(tr.q[1:], full.q[:CHUNK - 1])


def test_ctrl_c_without_out_says_nothing_was_written(monkeypatch, capsys):
    from manifold_dirac._run.loop import CHUNK
    from manifold_dirac._run.integrate import integrate

    monkeypatch.setattr(_integrate_module(), "integrate", _interrupted_after_the_first_chunk(integrate))
    assert main(["run", "pendulum", "--steps", str(CHUNK + 40), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"nothing written (give --out DIR to keep the {CHUNK} points computed so far)" in err


def test_ctrl_c_before_any_point_is_stored(tmp_path, monkeypatch, capsys):
    from manifold_dirac._errors import RunInterrupted

    def interrupted_at_once(*args, **kwargs):
        raise RunInterrupted("integration interrupted at step 0 (t = 0); no point was stored yet", None)

    monkeypatch.setattr(_integrate_module(), "integrate", interrupted_at_once)
    assert main(["run", "pendulum", "--out", str(tmp_path), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert err == "manifold-dirac: interrupted before the first points were stored; nothing to write\n"
    assert list(tmp_path.iterdir()) == []


def test_a_failed_run_with_out_writes_the_points_before_the_failure(tmp_path, capsys):
    from manifold_dirac._mechanics.status import Status
    from manifold_dirac._run.trajectory import Trajectory

    assert main(["run", "heavy_top", "--h", "5", "--steps", "3", "--out", str(tmp_path), "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("manifold-dirac: error: step 0 (t = 0): ")
    assert (f"the run failed at step 0; wrote the points computed before the failure (1 stored) to "
            f"{tmp_path / 'heavy_top.npz'}") in captured.out
    tr = Trajectory.load(tmp_path / "heavy_top.npz")
    assert tr.n_points == 1 and not tr.ok and tr.status not in (Status.OK, Status.INTERRUPTED)
