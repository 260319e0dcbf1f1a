"""Batch layout and Newton floor of the compiled step on a CPU: ``python benchmarks/batch_layout.py [--batch B] [--floor]``.

One process, side by side: trajectory-steps per second of a loop of steps of
a ``B``-member batch (heavy top and free knife edge, ``benchmarks/cases.py``)
stepped as a loop over blocks of ``block`` members
(``manifold_dirac._run.programs.member_step``; ``0`` is one ``vmap`` over the
whole batch), the minimum over ``--repeat`` interleaved rounds, per second of
wall time and per second of the process's CPU time (the latter is what a
loaded machine distorts least), and the compile time of each layout. Prints
the machine's load before and after.

``--floor``: instead, one trajectory's step (a loop of ``--traj-steps``
steps), CPU microseconds per step with the round-off floor of Newton's stop
in a branch of its own (``StepMap.step`` for one member) and from Newton's
linearization (what the step uses under ``vmap``: the Newton matrix is then
a forward-mode pass over the base point's perturbation too), side by side.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import jax  # noqa: E402

import manifold_dirac as md  # noqa: E402
from benchmarks.cases import CASES, batch_initial, system  # noqa: E402
from manifold_dirac._run.programs import member_step  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--blocks", type=int, nargs="+", default=[1, 4, 16, 0])
    ap.add_argument("--traj-steps", type=int, default=200_000, help="trajectory-steps per timed call")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--floor", action="store_true", help="one trajectory: the Newton floor as a branch or not")
    a = ap.parse_args(argv)
    print(f"load before {os.getloadavg()}; B = {a.batch}", flush=True)
    if a.floor:
        return floor_variants(a)
    for name in ("heavy_top", "knife_edge"):
        c, sysm = CASES[name], system(name)
        integ = md.Integrator(sysm, c.h)
        sm = integ.stepmap
        q0, v0 = batch_initial(name, a.batch, np.random.default_rng(0))
        members = integ.initial_state(q0, v0).members
        n = max(2, a.traj_steps // a.batch)
        h, params = c.h, sysm.params
        runs, compile_s = {}, {}
        for block in a.blocks:
            step = member_step(sm, True, block if block else a.batch)
            run = jax.jit(lambda m, n, step=step: jax.lax.fori_loop(
                0, n, lambda k, s: step(s, k, k * h, h, params, None)[0], m))
            t = time.perf_counter()
            jax.block_until_ready(run(members, n))
            compile_s[block], runs[block] = time.perf_counter() - t, run
        wall = {b: np.inf for b in runs}
        cpu = {b: np.inf for b in runs}
        for _ in range(a.repeat):
            for b, run in runs.items():
                t, c0 = time.perf_counter(), time.process_time()
                jax.block_until_ready(run(members, n))
                wall[b] = min(wall[b], time.perf_counter() - t)
                cpu[b] = min(cpu[b], time.process_time() - c0)
        for b in runs:
            label = f"block {b}" if b else "one vmap"
            print(f"{name:11s} {label:9s}: {a.batch * n / wall[b] / 1e3:7.0f} k traj-steps/s wall, "
                  f"{a.batch * n / cpu[b] / 1e3:7.0f} k per CPU second; first call {compile_s[b]:.1f} s", flush=True)
    print(f"load after {os.getloadavg()}")
    return 0


def floor_variants(a) -> int:
    """CPU time per step of one trajectory: the Newton floor as a branch, or from Newton's linearization."""
    for name in ("heavy_top", "knife_edge"):
        c, sysm = CASES[name], system(name)
        integ = md.Integrator(sysm, c.h)
        sm, h, params = integ.stepmap, c.h, sysm.params
        members = integ.initial_state(c.q0, c.v0).members
        runs = {}
        # an axis name selects the floor from the linearization (unused otherwise with the default solver options)
        for label, axis in (("linearization", "unused"), ("branch", None)):
            run = jax.jit(lambda m, n, axis=axis: jax.lax.fori_loop(
                0, n, lambda k, s: sm.step(s, k, k * h, h, params, None, axis_name=axis)[0], m))
            t = time.perf_counter()
            jax.block_until_ready(run(members, a.traj_steps // 10))
            runs[label] = (run, time.perf_counter() - t)
        cpu = {k: np.inf for k in runs}
        for _ in range(a.repeat):
            for k, (run, _) in runs.items():
                c0 = time.process_time()
                jax.block_until_ready(run(members, a.traj_steps // 10))
                cpu[k] = min(cpu[k], time.process_time() - c0)
        for k, (_, first) in runs.items():
            print(f"{name:11s} floor from the {k:13s}: {1e7 * cpu[k] / a.traj_steps:.3f} us CPU per step; "
                  f"first call {first:.1f} s", flush=True)
    print(f"load after {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
