"""Sweeps on Dask: scaling with workers, overhead per cell, and batched ensembles (vmap) per task.

Three measurements, side by side in one run (compilation always excluded: every worker
compiles the cell's program in a warm-up before the clock starts):

1. **Scaling.** A CPU-bound sweep of ``--cells`` cells (each: ``--steps`` heavy-top steps from
   its own initial condition) run serially in this process (``workers=0``), then on a
   ``LocalCluster`` of 1 worker process, then of 2; speed-up of 2 workers = wall(serial) /
   wall(2) (target >= 1.8 on two cores), and wall(1) / wall(2). Each worker runs XLA
   single-threaded (``PJRT_NPROC=1``: one thread in XLA's intra-op pool), so that one worker is one
   core, as the workers ``md.sweep`` starts itself, with this process's ``XLA_FLAGS`` (the same
   programs and cache keys), and the cluster has the Dask settings ``md.sweep`` gives the cluster it
   starts itself (``manifold_dirac._sweep.QUIET_CLUSTER``: no per-worker stack profiler, slower monitors).
   Each worker counts the programs it compiles or loads from the cache: the cell's program once
   per worker (in the warm-up), none during the sweep. Each cell records its process and when it
   started and finished: per worker, its cells and their time, and how long the first worker to
   finish waited for the last (``tail_s``: the end's imbalance) and the last to start for the first
   (``head_s``).
2. **Overhead per cell.** ``1 - sum(cell times) / (workers x wall)`` of the sweeps above, and a
   sweep of 2000 empty cells: the wall time per cell with the default grouping (tasks that shrink
   along the grid) and with one cell per task, and the CPU time per task of this process (client
   and scheduler) and of the workers (the fixed cost of a task, which the load of other jobs on the
   machine changes far less than the wall time).
3. **Batched ensembles.** ``--members`` heavy tops (perturbed initial data) in this process:
   one cell per member (``integrate`` of one trajectory each) against one cell per batch of
   all members (one ``vmap`` batch, ``md.sweep(..., members=M)``).

    python benchmarks/sweep_scaling.py            # ~3 min on two free cores; writes benchmarks/results/sweep_scaling.json
    python benchmarks/sweep_scaling.py --quick    # a check that it runs (numbers meaningless)
    python benchmarks/sweep_scaling.py --only batching   # or --only scaling

The machine must be quiet: on shared cores the scaling number measures the other load (the
results file records the load average before and after each measurement). Only the public API
(``import manifold_dirac as md``) is used, and the Dask settings of the cluster ``md.sweep`` starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import manifold_dirac as md  # noqa: E402
from benchmarks.machine import describe, load  # noqa: E402

ONE_XLA_THREAD = {"PJRT_NPROC": "1"}  # the size of XLA:CPU's intra-op thread pool (no XLA_FLAGS flag sets it)


def _initial(index: np.ndarray, n_members: int = 4096):
    noise = np.random.default_rng(7).standard_normal((n_members, 6))[index]
    R0 = np.asarray(md.SO3().exp(np.array([0.3, 0.1, 0.0])))
    q0 = np.einsum("ij,bjk->bik", R0, np.asarray(md.SO3().exp(0.05 * noise[:, :3])))
    return q0, np.array([0.5, -0.2, 2.0]) + 0.05 * noise[:, 3:]


def heavy_top_cell(case: int, *, steps: int) -> dict:
    """One heavy top (initial condition ``case``), ``steps`` steps at h = 0.01: CPU-bound."""
    started = time.time()
    sysm = md.example_system(md.get_example("heavy_top"), "exp")
    q0, v0 = _initial(np.array([case]))
    tr = md.integrate(sysm, q0[0], v0=v0[0], h=0.01, n_steps=steps, stride=steps)
    return {"energy_error": float(tr.energy_error), "iterations": float(tr.meta["total_iterations"]),
            "process": float(os.getpid()), "started": started, "finished": time.time()}


def _timeline(ds) -> dict:
    """Per worker process: cells, their summed time, when it started its first cell and finished its last
    (seconds from the sweep's first start); ``tail_s``: how long the first worker to finish sat idle
    before the last one finished (an unbalanced end), ``head_s``: the same at the start."""
    proc, t0, t1 = ds.process.values, ds.started.values, ds.finished.values
    start = float(t0.min())
    per = {}
    for pid in np.unique(proc):
        m = proc == pid
        per[str(int(pid))] = {"cells": int(m.sum()), "cell_time_s": float(np.sum(ds.wall_time.values[m])),
                              "first_start_s": float(t0[m].min() - start), "last_finish_s": float(t1[m].max() - start)}
    ends = [w["last_finish_s"] for w in per.values()]
    starts = [w["first_start_s"] for w in per.values()]
    return {"workers": per, "tail_s": max(ends) - min(ends), "head_s": max(starts) - min(starts)}


def heavy_top_batch_cell(kind: str, members: np.ndarray, *, steps: int) -> dict:
    """The same heavy tops, a block of members as one batch (vmap)."""
    sysm = md.example_system(md.get_example("heavy_top"), "exp")
    q0, v0 = _initial(members)
    tr = md.integrate(sysm, q0, v0=v0, h=0.01, n_steps=steps, stride=steps)
    return {"energy_error": tr.energy_error}


def empty_cell(i: int) -> dict:
    return {"x": float(i)}


def _programs(worker) -> list[int]:
    """A Dask worker's list of programs compiled (or loaded from the cache), kept on the worker object
    (the functions of this script reach the workers by value, each call with fresh globals)."""
    if not hasattr(worker, "md_programs"):
        worker.md_programs = []
    return worker.md_programs


def _warm(steps: int, dask_worker=None) -> int:
    """Compile the cell's program on a worker (the persistent cache makes the second worker's cheap);
    from now on the worker counts the programs it compiles. Returns how many the warm-up compiled.
    (``client.run`` passes the worker as ``dask_worker``.)"""
    import jax

    programs = _programs(dask_worker)

    def count(event: str, duration_secs: float, **kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":  # per program, compiled or loaded from the cache
            programs.append(1)

    jax.monitoring.register_event_duration_secs_listener(count)
    heavy_top_cell(0, steps=steps)
    return len(programs)


def _compiled(dask_worker=None) -> int:
    return len(_programs(dask_worker))


def _cpu() -> float:
    return time.process_time()


def worker_env() -> dict:
    """Environment of the benchmark's worker processes.

    ``XLA_FLAGS``: this process's flags (the library's, set at import, or the user's), as the workers
    that ``md.sweep`` starts itself get them (another flag would change the compiled programs and their
    keys in the persistent cache); one XLA thread through ``PJRT_NPROC=1``.
    """
    return {"XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
            "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)), **ONE_XLA_THREAD}


def scaling(args) -> dict:
    import dask
    import distributed

    from manifold_dirac._sweep import QUIET_CLUSTER  # the settings of the cluster md.sweep starts itself

    out = {}
    # serial: the same cells one after the other in this process (what a sweep without workers does);
    # a one-cell sweep first compiles the cell and imports what a sweep needs, as the workers' warm-up does
    md.sweep(partial(heavy_top_cell, steps=args.steps), {"case": [0]}, workers=0, progress=False)
    lo = load()
    ds = md.sweep(partial(heavy_top_cell, steps=args.steps), {"case": list(range(args.cells))}, workers=0,
                  progress=False)
    assert (ds.status == "ok").all(), ds.message.values
    out["serial"] = {"wall_s": ds.attrs["wall_time"] - ds.attrs["startup_time"], "cell_time_s": ds.attrs["cell_time"],
                     "cell_ms_median": 1e3 * float(np.median(ds.wall_time.values)), "load_before": lo,
                     "load_after": load()}
    print(f"serial (this process): {args.cells} cells of {args.steps} heavy-top steps in "
          f"{out['serial']['wall_s']:.2f} s (median cell {out['serial']['cell_ms_median']:.0f} ms)")
    for n in (1, 2):
        lo = load()
        env = worker_env()
        with dask.config.set(QUIET_CLUSTER), distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0", env=env) as cluster, \
                distributed.Client(cluster) as client:
            warm = client.run(_warm, args.steps)
            ds = md.sweep(partial(heavy_top_cell, steps=args.steps), {"case": list(range(args.cells))}, client=client,
                       progress=False)
            assert (ds.status == "ok").all(), ds.message.values
            compiled = client.run(_compiled)
            empty = {}
            for label, per in (("grouped", None), ("one per task", 1)):
                w0, c0 = client.run(_cpu), time.process_time()
                e = md.sweep(empty_cell, {"i": list(range(args.empty))}, client=client, progress=False,
                          cells_per_task=per)
                c1, w1 = time.process_time(), client.run(_cpu)
                tasks = e.attrs["tasks"]
                empty[label] = {"tasks": tasks, "wall_s": e.attrs["wall_time"] - e.attrs["startup_time"],
                                "us_per_cell": 1e6 * (e.attrs["wall_time"] - e.attrs["startup_time"]) / args.empty,
                                "client_cpu_ms_per_task": 1e3 * (c1 - c0) / tasks,
                                "workers_cpu_ms_per_task": 1e3 * sum(w1[k] - w0[k] for k in w0) / tasks}
        wall = ds.attrs["wall_time"] - ds.attrs["startup_time"]
        out[n] = {"wall_s": wall, "cell_time_s": ds.attrs["cell_time"], "tasks": ds.attrs["tasks"],
                  "overhead": ds.attrs["overhead"],
                  "overhead_per_cell_ms": 1e3 * (n * wall - ds.attrs["cell_time"]) / args.cells,
                  "cell_ms_median": 1e3 * float(np.median(ds.wall_time.values)), "empty_cells": empty,
                  "timeline": _timeline(ds),
                  "programs_per_worker_warmup": sorted(warm.values()),
                  "programs_per_worker_total": sorted(compiled.values()),
                  "load_before": lo, "load_after": load()}
        print(f"{n} worker(s): {args.cells} cells of {args.steps} heavy-top steps in {wall:.2f} s "
              f"({ds.attrs['tasks']} tasks; median cell {out[n]['cell_ms_median']:.0f} ms; overhead "
              f"{100 * ds.attrs['overhead']:.1f} % = {out[n]['overhead_per_cell_ms']:.1f} ms per cell)")
        tl = out[n]["timeline"]
        print(f"    per worker: {[(w['cells'], round(w['cell_time_s'], 2)) for w in tl['workers'].values()]} "
              f"(cells, s); the first to finish idle {1e3 * tl['tail_s']:.0f} ms before the last, the last to "
              f"start {1e3 * tl['head_s']:.0f} ms after the first")
        print(f"    programs compiled (or loaded from the cache) per worker: {sorted(warm.values())} in the "
              f"warm-up, {sorted(compiled.values())} in all (the sweep's cells compiled nothing more if equal)")
        for label, e in empty.items():
            print(f"    {args.empty} empty cells, {label} ({e['tasks']} tasks): {e['us_per_cell']:.0f} µs per cell; "
                  f"CPU per task {e['client_cpu_ms_per_task']:.2f} ms here (client, scheduler), "
                  f"{e['workers_cpu_ms_per_task']:.2f} ms in the workers")
    out["worker_xla_flags"] = env["XLA_FLAGS"]
    out["speedup_2_vs_1"] = out[1]["wall_s"] / out[2]["wall_s"]
    out["speedup_2_vs_serial"] = out["serial"]["wall_s"] / out[2]["wall_s"]
    print(f"speed-up, 2 workers against the serial run: {out['speedup_2_vs_serial']:.2f}x, against 1 worker: "
          f"{out['speedup_2_vs_1']:.2f}x (target >= 1.8x on two cores)")
    return out


def batching(args) -> dict:
    M, steps = args.members, args.ensemble_steps
    per = partial(heavy_top_cell, steps=steps)
    batch = partial(heavy_top_batch_cell, steps=steps)
    # warm-up: compile both programs (one trajectory; a batch of M)
    md.sweep(per, {"case": [0]}, workers=0, progress=False)
    heavy_top_batch_cell("vmap", np.arange(M), steps=steps)
    t0 = time.perf_counter()
    a = md.sweep(per, {"case": list(range(M))}, workers=0, progress=False)
    t_per = time.perf_counter() - t0
    t0 = time.perf_counter()
    b = md.sweep(batch, {"kind": ["vmap"]}, members=M, workers=0, progress=False)
    t_batch = time.perf_counter() - t0
    # the same members: the batch's Newton iterates until every member has converged, so a member
    # may take one iteration more than alone (round-off differences, not more)
    x, y = a.energy_error.values, b.energy_error.values[0]
    diff = float(np.max(np.abs(x - y) / np.abs(x)))
    print(f"ensemble of {M} heavy tops x {steps} steps, in this process: one cell per member {t_per:.2f} s, "
          f"one vmap batch {t_batch:.2f} s: {t_per / t_batch:.1f}x (energy errors agree to {diff:.1e}, relative)")
    return {"members": M, "steps": steps, "per_member_s": t_per, "batched_s": t_batch,
            "speedup": t_per / t_batch, "max_relative_difference": diff}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes: check that it runs")
    p.add_argument("--only", choices=["scaling", "batching"], help="one of the measurements")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = p.parse_args()
    args.cells, args.steps, args.empty = (32, 2000, 200) if args.quick else (48, 30_000, 2000)
    args.members, args.ensemble_steps = (16, 100) if args.quick else (256, 1000)
    res = {"meta": describe(), "quick": args.quick, "cells": args.cells, "steps": args.steps,
           "command": "python benchmarks/sweep_scaling.py" + (" --quick" if args.quick else "")
           + (f" --only {args.only}" if args.only else "")}
    print(res["meta"])
    if args.only in (None, "scaling"):
        res["scaling"] = scaling(args)
    if args.only in (None, "batching"):
        res["batching"] = batching(args)
    args.out.mkdir(parents=True, exist_ok=True)
    name = "sweep_scaling" + ("_quick" if args.quick else "") + (f"_{args.only}" if args.only else "")
    path = args.out / f"{name}.json"
    res["load_end"] = load()
    path.write_text(json.dumps(res, indent=1, default=str))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
