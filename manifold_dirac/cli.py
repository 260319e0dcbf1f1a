"""The ``manifold-dirac`` command: ``tour``, ``run``, ``study``, ``list``.

Errors (bad options, unknown names, failed solves) print one line
``manifold-dirac: error: ...`` and exit with status 2 (1 for a failed
integration), never a traceback; set ``MANIFOLD_DIRAC_DEBUG=1`` to see one.

``--out DIR`` is created and checked writable before any integration (a run
is never computed only to find that its results cannot be written). When a
``run`` is interrupted (Ctrl-C) or a step fails, the points computed so far
are written to ``DIR`` all the same (the trajectory's ``status`` says
``INTERRUPTED`` or why the run failed), and the command says so; an
interrupted command exits with status 130.

Each system's step is compiled on its first run (a few seconds; the
persistent compilation cache makes later invocations faster), so the times
printed by ``run`` and ``tour`` include compilation, while the study's
wall times per step do not.

``tour`` runs its examples and its study in ``--jobs`` worker processes
(default: 2 on a machine of two CPUs or more, else 1, in the command's own
process), each running XLA on one thread: compilation is single-threaded,
so two processes on two cores halve the first tour's wall time. The table
and the figures are the same for any ``--jobs``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from . import LagrangeDiracSystem, Manifold, Trajectory
    from ._types import Point
    from .systems.catalog import Example

__all__ = ["build_parser", "main"]

PROG = "manifold-dirac"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _CliError(f"{message} (see '{self.prog} --help')")


class _CliError(Exception):
    pass


def _floats(text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not vals or any(not (np.isfinite(v) and v > 0) for v in vals):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return vals


def _names(text: str) -> list[str]:
    vals = [x.strip() for x in text.split(",") if x.strip()]
    if not vals:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return vals


def _positive_float(text: str) -> float:
    v = _floats(text)
    if len(v) != 1:
        raise argparse.ArgumentTypeError(f"expected one positive number, got {text!r}")
    return v[0]


def _count(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return v


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the docs and the tests).

    Returns
    -------
    argparse.ArgumentParser

    Examples
    --------
    >>> import manifold_dirac as md
    >>> args = md.cli.build_parser().parse_args(["run", "pendulum", "--scheme", "plus"])
    >>> args.command, args.system, args.scheme
    ('run', 'pendulum', 'plus')
    """
    p = _Parser(prog=PROG, description="Structure-preserving (discrete Lagrange-Dirac) integrators on manifolds.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    t = sub.add_parser("tour", help="run every bundled system briefly, print a summary, write figures",
                       description="Run every bundled system briefly, print a summary table and write figures.")
    t.add_argument("--out", default="tour-output", help="folder for the figures (default: %(default)s)")
    t.add_argument("--quick", action="store_true", help="shorter runs, no order measurements")
    t.add_argument("--jobs", type=_positive_int, default=None,
                   help="worker processes (default: 2 on a machine of two CPUs or more, else 1: in this process)")

    r = sub.add_parser("run", help="integrate one bundled system", description="Integrate one bundled system.")
    r.add_argument("system", help="a bundled system (see 'manifold-dirac list')")
    r.add_argument("--retraction", help="retraction of the system's manifold (default: the system's first)")
    r.add_argument("--scheme", default="symmetric", help="symmetric (default), plus or minus")
    r.add_argument("--rule", default="midpoint",
                   help="discrete Lagrangian: midpoint (default), trapezoid, rectangle+, rectangle-, gauss4, gauss6 "
                        "(or any registered with register_rule)")
    r.add_argument("--h", type=_positive_float, help="time step (default: the system's)")
    r.add_argument("--steps", type=_positive_int, help="number of steps (default: the system's duration / h)")
    r.add_argument("--stride", type=_positive_int, default=1, help="store every STRIDE-th point")
    r.add_argument("--out", help="folder for the trajectory (.npz) and figures")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")

    s = sub.add_parser("study", help="compare retractions x schemes x step sizes on a bundled system",
                       description="The retraction study: observed order, error, energy error, constraint "
                                   "residual, Newton iterations and wall time per step.")
    s.add_argument("system", help="a bundled system (see 'manifold-dirac list')")
    s.add_argument("--retractions", type=_names, help="comma-separated (default: all the system offers)")
    s.add_argument("--schemes", type=_names, default=None,
                   help="comma-separated (default: symmetric,plus,minus; symmetric with --compositions)")
    s.add_argument("--rules", type=_names, default=["midpoint"], help="comma-separated discrete Lagrangians")
    s.add_argument("--compositions", type=_names, default=None,
                   help="comma-separated composition methods crossed with the schemes, 'none' for the scheme alone "
                        "(e.g. none,triple_jump4,kahan_li8; the default scheme becomes 'symmetric')")
    s.add_argument("--h", type=_floats, help="comma-separated step sizes (default: 2h, h, h/2 of the system)")
    s.add_argument("--T", type=_positive_float, help="time at which the error is measured")
    s.add_argument("--long-steps", type=_positive_int, default=2000, help="steps of the energy run (default: %(default)s)")
    s.add_argument("--out", help="folder for table.md, work_precision.png, study.nc (the Dataset) and cells/ "
                                 "(each finished cell, for --resume)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar")
    s.add_argument("--workers", type=_count, default=0,
                   help="run the cells on a local Dask cluster of N worker processes (default 0: in this process)")
    s.add_argument("--scheduler", metavar="ADDRESS", help="run the cells on the Dask cluster at this scheduler address")
    s.add_argument("--resume", action="store_true",
                   help="skip the cells already finished in --out DIR/cells (without it, a study starts afresh)")

    sub.add_parser("list", help="list the bundled systems", description="List the bundled systems.")
    return p


def _writable_folder(text: str) -> Path:
    """``--out``: the folder, created if needed and checked writable (a test file), before any work."""
    if not text.strip():
        raise _CliError("--out '': an empty folder name; give the folder to write to (e.g. --out results), "
                        "or leave --out out")
    out = Path(text)
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".manifold-dirac-write-test-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise _CliError(f"--out {text}: cannot write to this folder ({reason}); nothing was computed: choose a "
                        "folder you can write to") from None
    return out


# ------------------------------------------------------------------ commands
def _cmd_list(args: argparse.Namespace) -> int:
    from .systems.catalog import EXAMPLES

    w = max(len(n) for n in EXAMPLES)
    for name, ex in EXAMPLES.items():
        print(f"{name:<{w}}  {ex.description}  [retractions: {', '.join(ex.retractions)}]")
    return 0


def _summary(ex: Example, sysm: LagrangeDiracSystem, tr: Trajectory) -> dict[str, str | int | float | None]:
    e0 = float(np.asarray(tr.energy)[0])
    row = {
        "system": ex.name,
        "manifold": repr(sysm.Q),
        "steps": tr.meta["n_steps"],
        # a forced system exchanges energy with its inputs: no conservation to report
        "energy error": None if sysm.has_force else float(np.max(np.abs(tr.energy - e0)) / max(1.0, abs(e0))),
        "constraint residual": float(np.max(tr.constraint_residual, initial=0.0)),
        # the physical slip |A(q_k) v_k| (and |dg v_k|) of the reported velocities; None without constraints
        "slip": float(np.max(tr.slip)) if sysm.n_constraints and tr.slip is not None and np.size(tr.slip) else None,
        "s": tr.meta["wall_time"],
    }
    if ex.invariant is not None:
        inv = np.asarray(ex.invariant(sysm, tr))
        row["invariant drift"] = float(np.max(np.abs(inv - inv[:1])))
    return row


def _figures(ex: Example, sysm: LagrangeDiracSystem, tr: Trajectory, out: Path) -> list[Path]:
    from . import plotting

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    p1 = out / f"{ex.name}_trajectory.png"
    if ex.plot == "se2" and isinstance(tr.q, tuple):
        # the planar bodies of an interconnected vehicle: one path each
        poses = np.stack(_se2_factors(sysm.Q, tr.q), axis=1)
        plotting.plot_se2_path(poses, title=f"Planar paths of the bodies: {ex.name}", path=p1)
    else:
        plotting.plot_trajectory(tr, sysm, path=p1)
    paths.append(p1)
    p2 = out / f"{ex.name}_energy.png"
    plotting.plot_energy_and_constraint(tr, path=p2)
    paths.append(p2)
    import matplotlib.pyplot as plt

    plt.close("all")
    return paths


def _se2_factors(Q: Manifold, q: Point) -> list[np.ndarray]:
    from ._manifolds import SE2

    if isinstance(q, tuple):
        return [a for f, x in zip(Q.factors, q) for a in _se2_factors(f, x)]
    return [np.asarray(q)] if isinstance(Q, SE2) else []


def _cmd_run(args: argparse.Namespace) -> int:
    from ._errors import RunInterrupted, StepError
    from ._run.integrate import integrate
    from .study import example_system, point_at
    from .systems.catalog import get_example

    ex = get_example(args.system)
    out = _writable_folder(args.out) if args.out is not None else None
    sysm = example_system(ex, args.retraction)
    h = args.h or ex.h
    steps = args.steps or max(1, int(round(ex.T / h)))
    q0, v0 = ex.initial(sysm)
    try:
        tr = integrate(sysm, q0, v0=v0, h=h, n_steps=steps, scheme=args.scheme, discrete_lagrangian=args.rule,
                       stride=args.stride, progress=not args.no_progress, callback=_stop_if_signalled)
    except RunInterrupted as exc:
        _write_interrupted(ex, sysm, exc.trajectory, out, steps)
        return _signal_status()
    except StepError as exc:
        if out is not None and exc.trajectory is not None:
            path = exc.trajectory.save(out / f"{ex.name}.npz")
            print(f"  the run failed at step {exc.step}; wrote the points computed before the failure "
                  f"({exc.trajectory.n_points} stored) to {path}")
        raise
    if _SIGNALLED:  # a signal swallowed during the last chunk (or its compile): the run is whole, keep it
        _write_interrupted(ex, sysm, tr, out, steps)
        return _signal_status()
    row = _summary(ex, sysm, tr)
    print(f"{ex.name}: {ex.description}")
    print(f"  manifold {row['manifold']}, scheme {args.scheme}, rule {args.rule}, h = {h:g}, {steps} steps "
          f"in {row['s']:.2f} s ({tr.meta['total_iterations'] / max(1, steps):.2f} Newton iterations/step)")
    energy = f"{row['energy error']:.2e}" if row["energy error"] is not None else "- (forced system)"
    print(f"  relative energy error {energy}, constraint residual {row['constraint residual']:.1e}"
          + (f", slip {row['slip']:.1e}" if row["slip"] is not None else "")
          + (f", invariant drift {row['invariant drift']:.1e}" if "invariant drift" in row else ""))
    if ex.reference is not None:
        err = ex.error(sysm, point_at(tr.q, -1), tr.t[-1])
        print(f"  error at t = {tr.t[-1]:g} against the reference: {err:.2e}")
    if out is not None:
        path = tr.save(out / f"{ex.name}.npz")
        figs = _figures(ex, sysm, tr, out)
        print(f"  wrote {path} and " + ", ".join(str(f) for f in figs))
    return 0


def _write_interrupted(ex: Example, sysm: LagrangeDiracSystem, tr: Trajectory | None, out: Path | None,
                       steps: int) -> None:
    """Ctrl-C during ``run``: write the points computed so far (and figures, if they can be drawn); one line."""
    if tr is None:
        print(f"{PROG}: interrupted before the first points were stored; nothing to write", file=sys.stderr)
        return
    k_last = round((float(tr.t[-1]) - float(tr.t[0])) / float(tr.meta["h"]))
    where = f"interrupted at step {k_last} of {steps} (t = {float(tr.t[-1]):g}, the last point stored)"
    if out is None:
        print(f"{PROG}: {where}; nothing written (give --out DIR to keep the {tr.n_points} points computed "
              "so far)", file=sys.stderr)
        return
    path = tr.save(out / f"{ex.name}.npz")
    try:
        figs = ", ".join(str(f) for f in _figures(ex, sysm, tr, out))
        figures = f" and the figures {figs}"
    except Exception as exc:  # noqa: BLE001 - a partial trajectory the plots cannot draw: the data are what matters
        figures = f" (no figures: {type(exc).__name__}: {' '.join(str(exc).split())})"
    print(f"{PROG}: {where}; wrote the {tr.n_points} points computed so far (status INTERRUPTED) to "
          f"{path}{figures}", file=sys.stderr)


def _cmd_study(args: argparse.Namespace) -> int:
    from . import study

    if args.resume and args.out is None:
        raise _CliError("--resume needs --out DIR (the folder whose cells/ holds the finished cells)")
    if args.workers and args.scheduler:
        raise _CliError("give --workers N (a local cluster) or --scheduler ADDRESS (a running one), not both")
    out = _writable_folder(args.out) if args.out is not None else None
    store = out / "cells" if out is not None else None
    if store is not None and not args.resume and (store / "done").is_dir():
        from ._sweep import clear_store

        n = clear_store(store)
        if n:
            print(f"starting afresh: removed {n} finished task files of an earlier study in {store} "
                  "(--resume keeps them)")
    schemes = args.schemes or (["symmetric"] if args.compositions else ["symmetric", "plus", "minus"])
    res = study.retraction_study(args.system, retractions=args.retractions, schemes=schemes, rules=args.rules,
                                 hs=args.h, T=args.T, long_steps=args.long_steps, progress=not args.no_progress,
                                 workers=args.workers, client=args.scheduler, store=store, resume=args.resume,
                                 compositions=args.compositions)
    table = res.table()
    print(table)
    if out is not None:
        from ._sweep import save_dataset

        (out / "table.md").write_text(table)
        res.figure(out / "work_precision.png")
        save_dataset(res.dataset, out / "study.nc")
        ds = res.dataset
        print(f"wrote {out / 'table.md'}, {out / 'work_precision.png'} and {out / 'study.nc'} "
              f"({ds.attrs['cells_run']} cells run, {ds.attrs['cells_resumed']} resumed from {store})")
    return 0


def _cmd_tour(args: argparse.Namespace) -> int:
    from .systems.catalog import EXAMPLES

    out = _writable_folder(args.out)
    start = time.perf_counter()
    tasks = _tour_tasks(EXAMPLES)
    jobs = args.jobs if args.jobs is not None else _default_jobs()
    results = dict(zip(tasks, _run_tour_tasks(tasks, out, args.quick, jobs)))
    rows = [results["example", name] for name in EXAMPLES]
    study_table = results["study", "inclined_knife_edge"]
    # the summary table
    print("manifold-dirac tour: every bundled system, symmetric scheme, midpoint rule\n")
    print(f"{'system':<21} {'manifold':<44} {'steps':>6} {'energy err':>10} {'constraint':>10} {'slip':>8} "
          f"{'order':>6} {'invariant':>10} {'s':>6}")
    for r in rows:
        if "note" in r:
            print(f"{r['system']:<21} {r['note']}")
            continue
        order = f"{r['order']:.2f}" if r.get("order") is not None else ("exact" if r.get("exact") else "-")
        energy = f"{r['energy error']:>10.1e}" if r["energy error"] is not None else f"{'(forced)':>10}"
        inv = f"{r['invariant drift']:.1e}" if "invariant drift" in r else "-"
        manifold = r["manifold"] if len(r["manifold"]) <= 44 else r["manifold"][:41] + "..."
        slip = f"{r['slip']:>8.1e}" if r.get("slip") is not None else f"{'-':>8}"
        print(f"{r['system']:<21} {manifold:<44} {r['steps']:>6} {energy} "
              f"{r['constraint residual']:>10.1e} {slip} {order:>6} {inv:>10} {r['s']:>6.2f}")
    print("\nenergy err: max |E - E0| / max(1, |E0|); constraint: the scheme's discrete constraint; slip: "
          "the physical constraint violation max |A(q_k) v_k| of the reported velocities (and |dg(q_k) v_k|); order: "
          "observed over 2h, h, h/2 against the closed form or a tight solve_ivp; invariant: drift of the "
          "momentum map (spatial angular momentum, vertical angular momentum); exact: the error is at "
          "round-off (the rolling ball's discrete motion is exact).")
    print("\nretraction study (inclined knife edge):\n")
    print(study_table)
    print(f"figures and tables written to {out.resolve()}/ ({time.perf_counter() - start:.0f} s)")
    return 0


def _tour_tasks(examples: Iterable[str]) -> list[tuple[str, str]]:
    """The tour's tasks in the order the workers take them: ``("study", name)`` and ``("example", name)``.

    The examples are independent: each is a task, and so is the study. Workers take the tasks in this
    order as they become free: the longest first (the study; the catalog lists the simplest systems
    first, so its end first), and the short ones fill in at the end. The table keeps the catalog's order.
    """
    return [("study", "inclined_knife_edge")] + [("example", n) for n in reversed(list(examples))]


def _default_jobs() -> int:
    """``tour --jobs``'s default: two worker processes on two CPUs or more, else the tour in this process."""
    from ._spawn import cpu_count

    return min(2, cpu_count())


def _run_tour_tasks(tasks: list[tuple[str, str]], out: Path, quick: bool, jobs: int) -> list:
    """The tour's tasks, in this process (``jobs`` 1) or in ``jobs`` worker processes; results in the tasks' order.

    The workers take the tasks in order as they become free (the first task,
    the study, is the longest); a progress bar counts finished tasks. A
    Ctrl-C (or SIGTERM) stops the workers and is raised here.
    """
    from tqdm.auto import tqdm

    results: list = [None] * len(tasks)
    with tqdm(total=len(tasks), desc="tour", unit="task", leave=False, delay=1.0) as bar:
        if jobs <= 1 or len(tasks) <= 1:
            for i, task in enumerate(tasks):
                results[i] = _tour_task(task, out, quick)
                bar.update()
            return results
        import importlib

        from ._spawn import unordered_results, worker_pool

        # the task by its module's import name: under 'python -m manifold_dirac.cli' this module is __main__,
        # which the workers do not run (they would not find __main__._indexed_tour_task)
        task_fn = importlib.import_module("manifold_dirac.cli")._indexed_tour_task
        with worker_pool(min(jobs, len(tasks)), "manifold-dirac tour") as pool:
            work = [(i, task, out, quick) for i, task in enumerate(tasks)]
            for i, result in unordered_results(pool, task_fn, work, "manifold-dirac tour"):
                results[i] = result
                bar.update()
    return results


def _indexed_tour_task(work: tuple[int, tuple[str, str], Path, bool]) -> tuple[int, object]:
    """In a worker: one task of the tour, with its index."""
    i, task, out, quick = work
    return i, _tour_task(task, out, quick)


def _tour_task(task: tuple[str, str], out: Path, quick: bool) -> object:
    """One task of the tour: ``("example", name)`` -> its table row; ``("study", name)`` -> the study's table."""
    kind, name = task
    if kind == "study":
        return _tour_study(name, out, quick)
    return _tour_example(name, out, quick)


def _tour_example(name: str, out: Path, quick: bool) -> dict:
    """One example of the tour: a run (its table row), the observed order (unless ``quick``), the figures."""
    from ._run.integrate import integrate
    from .study import example_system, retraction_study
    from .systems.catalog import EXAMPLES

    ex = EXAMPLES[name]
    try:
        sysm = example_system(ex)
    except ImportError as exc:  # the geomstats extra is missing
        return {"system": name, "note": f"skipped: {exc}"}
    T = ex.T / 4 if quick else ex.T
    q0, v0 = ex.initial(sysm)
    tr = integrate(sysm, q0, v0=v0, h=ex.h, n_steps=int(round(T / ex.h)))
    row = _summary(ex, sysm, tr)
    if ex.reference is not None and not quick:
        st = retraction_study(ex, retractions=ex.retractions[:1], schemes=("symmetric",), T=min(ex.T, 2.0),
                              long_steps=1)
        row["order"] = st.rows[0].order
        row["exact"] = bool(st.rows[0].errors) and max(st.rows[0].errors) < 1e-12
    _figures(ex, sysm, tr, out)
    return row


def _tour_study(name: str, out: Path, quick: bool) -> str:
    """The tour's retraction study (schemes symmetric and plus): its figure and table written; the table."""
    from .study import retraction_study

    study = retraction_study(name, schemes=("symmetric", "plus"), long_steps=200 if quick else 1000)
    study.figure(out / f"study_{name}_work_precision.png")
    table = study.table()
    (out / f"study_{name}.md").write_text(table)
    import matplotlib.pyplot as plt

    plt.close("all")
    return table


_SIGNALLED: list[int] = []
"""The signals received (SIGINT, SIGTERM) during this command."""


class _Signalled(KeyboardInterrupt):
    """SIGINT or SIGTERM, raised where Python is when it arrives (a KeyboardInterrupt: runs keep their points)."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _SIGNALLED.append(signum)
    raise _Signalled(f"signal {signum}")


def _stop_if_signalled(state: object) -> None:
    """The run's callback between compiled chunks: stop if a signal arrived and was swallowed on the way.

    A signal that arrives while compiled code runs (a first compile, a chunk)
    is handled when control returns to Python, possibly inside a library's
    own ``except BaseException``; the flag it sets is checked here, so one
    Ctrl-C or SIGTERM always ends the run, keeping its points.
    """
    if _SIGNALLED:
        raise _Signalled(f"signal {_SIGNALLED[0]}")


def _signal_status() -> int:
    """128 + the signal's number: 130 for Ctrl-C (SIGINT), 143 for SIGTERM."""
    import signal

    return 128 + int(_SIGNALLED[0]) if _SIGNALLED else 128 + int(signal.SIGINT)


def _install_signal_handlers() -> dict:
    """SIGINT and SIGTERM raise :class:`_Signalled` (and are recorded); returns the handlers replaced."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            old[sig] = signal.signal(sig, _on_signal)
        except (ValueError, OSError):  # not settable here
            pass
    return old


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``manifold-dirac``.

    Parameters
    ----------
    argv : sequence of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0; 1 for a failed integration; 2 for a usage error
        (bad option, unknown name) or any other error; 130 when interrupted.

    Examples
    --------
    The same as ``manifold-dirac list`` (or ``python -m manifold_dirac list``) in a shell:

    >>> import manifold_dirac as md
    >>> md.cli.main(["list"])
    pendulum  ...
    0
    """
    import signal

    os.environ.setdefault("MPLBACKEND", "Agg")
    _SIGNALLED.clear()
    old = _install_signal_handlers()
    try:
        return _main(argv)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        status = {"list": _cmd_list, "run": _cmd_run, "study": _cmd_study, "tour": _cmd_tour}[args.command](args)
        if _SIGNALLED and status == 0:  # a signal swallowed by a library on the way: still an interruption
            print(f"{PROG}: interrupted (signal {_SIGNALLED[0]}); the command had finished", file=sys.stderr)
            return _signal_status()
        return status
    except _CliError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return _signal_status()
    except Exception as exc:
        from ._errors import StepError

        if os.environ.get("MANIFOLD_DIRAC_DEBUG"):
            raise
        msg = " ".join(str(exc).split())
        if isinstance(exc, ImportError) and "manifold_dirac[" not in msg:
            msg += " (install the extras: pip install 'manifold_dirac[plot,geomstats]')"
        print(f"{PROG}: error: {msg}", file=sys.stderr)
        return 1 if isinstance(exc, StepError) else 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
