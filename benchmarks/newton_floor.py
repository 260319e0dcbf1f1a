"""What the round-off-floor check of the Newton stop costs: ``python benchmarks/newton_floor.py``.

The check (``newton(..., floor=...)``) is a branch in the Newton loop that
evaluates the step residual's sensitivity to the rounding of the base point
(a Jacobian of the step equations) when the iteration stagnates above
``rtol``. This script compiles, in one process, the heavy-top and knife-edge
step loops (midpoint, ``lax.scan`` over ``StepMap.step``, one member and a
batch) with the check and without it (``floor=None``), and prints side by side:
the instructions of the optimized program, the compile time, and the time
per step (minimum over ``--repeat`` interleaved rounds). The machine's load
(``os.getloadavg``) is printed before and after.
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
os.environ.setdefault("MANIFOLD_DIRAC_JAX_CACHE", "0")  # compile times of a cold compile

import jax  # noqa: E402

import manifold_dirac._mechanics.step as step_module  # noqa: E402
from benchmarks.cases import CASES, batch_initial, system  # noqa: E402
from benchmarks.kernel import best_of, finish, machine  # noqa: E402
from manifold_dirac._mechanics.integrate import Integrator  # noqa: E402

_NEWTON = step_module.newton


def _without_floor(*args, floor=None, **kw):
    return _NEWTON(*args, **kw)


def compiled_loop(name: str, n: int, batch: int, floor: bool):
    """``(compiled, args, instructions, compile_s)`` of ``n`` steps of case ``name``."""
    c, sysm = CASES[name], system(name)
    if batch:
        q0, v0 = batch_initial(name, batch, np.random.default_rng(0))
    else:
        q0, v0 = c.q0, c.v0
    integ = Integrator(sysm, c.h)
    st = integ.initial_state(q0, v0=v0)
    sm = integ.stepmap

    def one(s, k, h, p, axis_name=None):
        return sm.step(s, k, k * h, h, p, axis_name=axis_name)[0]

    if batch:
        stepper = jax.vmap(lambda s, k, h, p: one(s, k, h, p, "b"), in_axes=(0, None, None, None), axis_name="b")
    else:
        stepper = one

    def loop(s, h, p):
        return jax.lax.fori_loop(0, n, lambda k, x: stepper(x, k, h, p), s)

    step_module.newton = _NEWTON if floor else _without_floor
    try:
        t = time.perf_counter()
        comp = jax.jit(loop).lower(st.members, c.h, sysm.params).compile()
        dt = time.perf_counter() - t
    finally:
        step_module.newton = _NEWTON
    txt = comp.as_text()
    ins = sum(1 for line in txt.splitlines() if " = " in line and not line.lstrip().startswith(("//", "#")))
    return comp, (st.members, c.h, sysm.params), ins, dt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    rows = {**machine(), "rows": []}
    for name in ("heavy_top", "knife_edge"):
        for batch in (0, a.batch):
            n = a.n if not batch else max(10, a.n * 10 // batch)
            progs = {f: compiled_loop(name, n, batch, f) for f in (True, False)}
            jax.block_until_ready(progs[True][0](*progs[True][1]))
            jax.block_until_ready(progs[False][0](*progs[False][1]))
            res = {f: np.asarray(jax.tree.leaves(progs[f][0](*progs[f][1]))[0]) for f in progs}
            tm = best_of({f: (lambda f=f: jax.block_until_ready(progs[f][0](*progs[f][1]))) for f in progs},
                         a.repeat)
            per = max(batch, 1) * n
            row = {"name": name, "batch": batch or 1, "n": n,
                   "instructions_with": progs[True][2], "instructions_without": progs[False][2],
                   "compile_s_with": progs[True][3], "compile_s_without": progs[False][3],
                   "us_per_traj_step_with": 1e6 * tm[True] / per, "us_per_traj_step_without": 1e6 * tm[False] / per,
                   "same_result": bool(np.array_equal(res[True], res[False]))}
            rows["rows"].append(row)
            print(f"{name:11s} B={row['batch']:5d}: instructions {row['instructions_with']:6d} with / "
                  f"{row['instructions_without']:6d} without; compile {row['compile_s_with']:.2f} / "
                  f"{row['compile_s_without']:.2f} s; {row['us_per_traj_step_with']:.3f} / "
                  f"{row['us_per_traj_step_without']:.3f} us per trajectory-step; same result "
                  f"{row['same_result']}", flush=True)
    return finish(rows, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
