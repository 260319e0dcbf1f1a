"""What the round-off-floor test of the Newton stop costs: ``python benchmarks/newton_floor.py``.

The test (``newton(..., floor=...)``) decides whether a residual that
stagnates above ``rtol`` is at the round-off floor of its data; it needs the
residual's sensitivity to the base point (a Jacobian of the step equations).
This script compiles, in one process, the heavy-top and knife-edge step loops
(midpoint, ``fori_loop`` over ``StepMap.step``, one member and a batch) with
three variants of it -- ``shared``: the floor's Jacobian from Newton's own
linearization, on a probe trip of the loop (the library's); ``branch``: a
floor function with its own linearized copy of the equations, in a branch
(the earlier design); ``none``: no floor test -- and prints side by side the
instructions of the optimized program, the compile time, and the time per
trajectory-step (minimum over ``--repeat`` interleaved rounds), and whether
the three give the same trajectory bit for bit. The machine's load
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
import jax.numpy as jnp  # noqa: E402

import manifold_dirac._mechanics.step as step_module  # noqa: E402
from benchmarks.cases import CASES, batch_initial, system  # noqa: E402
from benchmarks.kernel import best_of, finish, machine  # noqa: E402
from manifold_dirac._run.integrator import Integrator  # noqa: E402

_NEWTON = step_module.newton


def _without_floor(*args, floor=None, **kw):
    return _NEWTON(*args, **kw)


def _as_branch(fun, *args, floor=None, **kw):
    """The floor test as a function of its own, evaluated in a branch (the design before the shared one)."""

    def floor_of(z):
        dr = jax.jacfwd(lambda eta: floor.residual(z, eta))(jnp.zeros(floor.dim))
        return jnp.sum(jnp.abs(dr), axis=1) * floor.resolution(z, fun(z)[2])

    return _NEWTON(fun, *args, floor=floor_of, **kw)


VARIANTS = {"shared": _NEWTON, "branch": _as_branch, "none": _without_floor}
"""How Newton gets the floor test: from its own linearization (the library), a branch, not at all."""


def compiled_loop(name: str, n: int, batch: int, variant: str):
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

    step_module.newton = VARIANTS[variant]
    try:
        t = time.perf_counter()
        comp = jax.jit(loop).lower(st.members, c.h, sysm.params).compile()
        dt = time.perf_counter() - t
    finally:
        step_module.newton = _NEWTON
    txt = comp.as_text()
    ins = sum(1 for line in txt.splitlines() if " = " in line and not line.lstrip().startswith(("//", "#")))
    return comp, (st.members, c.h, sysm.params), ins, dt


def through_integrate(name: str, n: int, batch: int, repeat: int) -> dict:
    """Microseconds per trajectory-step of ``integrate`` (stride 1000) with each variant, interleaved.

    Each variant's programs are built once (the process-wide table cleared
    before each) and swapped into the table for its timed calls.
    """
    from collections import OrderedDict

    import manifold_dirac as md
    import manifold_dirac._mechanics.compile_cache as CC

    c, sysm = CASES[name], system(name)
    q0, v0 = batch_initial(name, batch, np.random.default_rng(0)) if batch else (c.q0, c.v0)

    def run():
        return md.integrate(sysm, q0, v0=v0, h=c.h, n_steps=n, stride=1000)

    tables = {}
    try:
        for v, f in VARIANTS.items():
            CC.clear()
            step_module.newton = f
            run()
            tables[v] = OrderedDict(CC.entries())
    finally:
        step_module.newton = _NEWTON

    def timed(v):
        CC.clear()
        CC._TABLE.update(tables[v])
        return run()

    tm = best_of({v: (lambda v=v: timed(v)) for v in tables}, repeat)
    CC.clear()
    return {v: 1e6 * tm[v] / (n * max(batch, 1)) for v in tm}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--via-integrate", action="store_true",
                    help="time the variants through integrate (stride 1000) instead of a bare step loop")
    a = ap.parse_args(argv)
    if a.via_integrate:
        rows = {**machine(), "via_integrate": []}
        for name in ("heavy_top", "inclined_knife_edge"):
            r = {"name": name, **through_integrate(name, a.n, 0, a.repeat)}
            rows["via_integrate"].append(r)
            print(f"{name:19s} B=1 through integrate (shared / branch / none): "
                  + " / ".join(f"{r[v]:.3f}" for v in VARIANTS) + " us per step", flush=True)
        return finish(rows, a.out)
    rows = {**machine(), "rows": []}
    for name in ("heavy_top", "knife_edge"):
        for batch in (0, a.batch):
            n = a.n if not batch else max(10, a.n * 10 // batch)
            progs = {v: compiled_loop(name, n, batch, v) for v in VARIANTS}
            for v in progs:
                jax.block_until_ready(progs[v][0](*progs[v][1]))
            res = {v: np.asarray(jax.tree.leaves(progs[v][0](*progs[v][1]))[0]) for v in progs}
            tm = best_of({v: (lambda v=v: jax.block_until_ready(progs[v][0](*progs[v][1]))) for v in progs},
                         a.repeat)
            per = max(batch, 1) * n
            row = {"name": name, "batch": batch or 1, "n": n,
                   **{f"instructions_{v}": progs[v][2] for v in progs},
                   **{f"compile_s_{v}": progs[v][3] for v in progs},
                   **{f"us_per_traj_step_{v}": 1e6 * tm[v] / per for v in progs},
                   "same_result": bool(all(np.array_equal(res["shared"], res[v]) for v in progs))}
            rows["rows"].append(row)
            print(f"{name:11s} B={row['batch']:5d} (shared / branch / none): instructions "
                  + " / ".join(str(row[f"instructions_{v}"]) for v in progs) + "; compile "
                  + " / ".join(f"{row[f'compile_s_{v}']:.2f}" for v in progs) + " s; "
                  + " / ".join(f"{row[f'us_per_traj_step_{v}']:.3f}" for v in progs)
                  + f" us per trajectory-step; same result {row['same_result']}", flush=True)
    return finish(rows, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
