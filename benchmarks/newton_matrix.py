"""The Newton update's two parts, the small solve and the Newton matrix: ``python benchmarks/newton_matrix.py``.

Run (from the repository root, on a quiet machine; pin it to one core to compare runs)::

    PYTHONPATH=$PWD taskset -c 1 python benchmarks/newton_matrix.py            # both parts
    PYTHONPATH=$PWD python benchmarks/newton_matrix.py --quick                  # fewer sizes and rounds

One process. Each quantity is timed as a compiled ``lax.fori_loop`` of 2000
evaluations (each depending on the last, so that none is hoisted or
skipped), minimum of ``--repeats`` rounds, per evaluation in ns; compile
time is that of the loop, reported separately (the persistent compilation
cache is off, ``MANIFOLD_DIRAC_JAX_CACHE=0``, unless set otherwise).

1. **The solve** ``A^{-1} b`` of a random ``n x n`` system, ``n`` from 3 to
   23, by each route of :mod:`manifold_dirac._mechanics.small`: the
   elimination entry by entry (the unrolled one below ``ROW_SOLVE_MIN``), by
   whole rows (:func:`~manifold_dirac._mechanics.small.solve_rows`), the
   rolled loop (:func:`~manifold_dirac._mechanics.small.solve_rolled`) and
   LAPACK (``jnp.linalg.solve``). The entry-by-entry elimination is not timed
   above 14 unknowns (its program takes tens of seconds to compile).
2. **The Newton matrix** of one composed sub-step's equations (the ``split``
   scheme with the midpoint rule, ``kahan_li8``'s first coefficient) on the
   rolling disk, the Chaplygin sled, the snakeboard and the two-wheel cart:
   ``jax.jacfwd`` of the whole residual against
   :meth:`~manifold_dirac.StepMap.jacobian` (the multipliers' columns in
   closed form), the residual alone, and one Newton update (matrix, solve
   and the residual at the new iterate) as the library now takes it.

``--runs`` instead measures what the closed form does to whole runs: ``jax.jit`` of
:func:`~manifold_dirac.rollout` over 2000 steps of each constrained catalog system's own ``h``
(default scheme and rule), built twice in one process, with the multipliers' columns in closed
form and with ``jax.jacfwd`` of the whole residual (``CLOSED_FORM_MULTIPLIERS`` set at trace
time), the two programs alternating, µs per step, fastest of ``--repeats`` rounds; it sets
:data:`~manifold_dirac._mechanics.step.CLOSED_FORM_MULTIPLIERS`. Output
``benchmarks/results/newton_matrix_runs.json`` and ``.md``.

Output: ``benchmarks/results/newton_matrix.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

os.environ.setdefault("MANIFOLD_DIRAC_JAX_CACHE", "0")  # compile times of a compile, not of a cache load

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import manifold_dirac as md  # noqa: E402
from benchmarks.machine import describe, load  # noqa: E402
from manifold_dirac._mechanics import small  # noqa: E402
from manifold_dirac._mechanics.composition import get_composition  # noqa: E402
from manifold_dirac._mechanics.newton import SolverOptions  # noqa: E402
from manifold_dirac._mechanics.step import StepMap  # noqa: E402

LOOP = 2000
"""Evaluations per timed loop."""

ENTRY_MAX = 14
"""Largest size at which the entry-by-entry elimination is timed (its compile time grows with ``n^3``)."""


def _entries(A, b):
    """The elimination entry by entry at every size (``solve_small``'s route below ``ROW_SOLVE_MIN``)."""
    saved = small.SMALL_SOLVE_MAX, small.ROW_SOLVE_MIN
    small.SMALL_SOLVE_MAX, small.ROW_SOLVE_MIN = 10 ** 6, 10 ** 6
    try:
        return small.solve_small(A, b)
    finally:
        small.SMALL_SOLVE_MAX, small.ROW_SOLVE_MIN = saved


def _timed_loop(body, x0, *args, repeats):
    """(ns per evaluation, compile s) of ``LOOP`` chained evaluations ``x -> body(x, *args)``."""
    f = jax.jit(lambda x, *a: jax.lax.fori_loop(0, LOOP, lambda i, y: body(y, *a), x))
    t = time.perf_counter()
    c = f.lower(x0, *args).compile()
    compile_s = time.perf_counter() - t
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(c(x0, *args))
        best = min(best, time.perf_counter() - t)
    return 1e9 * best / LOOP, compile_s


def solves(sizes, repeats):
    routes = {"entries": _entries, "rows": small.solve_rows, "rolled": small.solve_rolled,
              "lapack": jnp.linalg.solve}
    rows = []
    rng = np.random.default_rng(0)
    for n in sizes:
        A = jnp.asarray(rng.standard_normal((n, n)))
        b = jnp.asarray(rng.standard_normal(n))
        row = {"n": n}
        for name, solve in routes.items():
            if name == "entries" and n > ENTRY_MAX:
                continue
            x = np.asarray(solve(A, b))
            assert np.allclose(np.asarray(A) @ x, np.asarray(b), atol=1e-10), (name, n)
            ns, cs = _timed_loop(lambda y, A, solve=solve: y + 1e-30 * solve(A + 1e-30 * y[0], y), b, A,
                                 repeats=repeats)
            row[name] = {"ns": ns, "compile_s": cs}
        rows.append(row)
        print(n, {k: round(v["ns"]) for k, v in row.items() if k != "n"}, flush=True)
    return rows


def _case(name):
    if name == "snakeboard":
        sysm = md.systems.snakeboard()
        q0, v0 = md.systems.snakeboard_initial()
        return sysm, q0, v0
    ex = md.get_example(name)
    sysm = ex.system("exp") if name in ("rolling_disk", "chaplygin_sled") else ex.system()
    q0, v0 = ex.initial(sysm)
    return sysm, q0, v0


def matrices(names, repeats):
    rows = []
    gamma = float(get_composition("kahan_li8").coefficients[0])
    for name in names:
        sysm, q0, v0 = _case(name)
        sm = StepMap(sysm, md.get_scheme("split"), md.get_rule("midpoint"), SolverOptions())
        q = jax.tree.map(jnp.asarray, q0)
        v = jnp.asarray(v0, jnp.float64)
        p = sysm.momentum(q, v, sysm.params)
        h = gamma * 0.1
        N = sm.n + sm.ns + sm.m
        z = jnp.concatenate([h * v, jnp.zeros(N - sm.n)])
        params = sysm.params

        def residual(w, q, p):
            return sm.equations(w, q, p, 0.0, h, params)[0]

        def full(y, q, p):
            return y + 1e-30 * jnp.sum(jax.jacfwd(lambda w: residual(w, q, p))(y), axis=0)

        def closed(y, q, p):
            return y + 1e-30 * jnp.sum(sm.jacobian(y, q, p, 0.0, h, params), axis=0)

        def res(y, q, p):
            return y + 1e-30 * residual(y, q, p)

        def update(y, q, p):
            dz = small.solve_small(sm.jacobian(y, q, p, 0.0, h, params), -residual(y, q, p))
            r1, _, aux = sm.equations(y + dz, q, p, 0.0, h, params)
            return y + 1e-30 * (dz + r1 + jnp.sum(aux[1]))

        row = {"name": name, "N_z": N, "multipliers": sm.m}
        bodies = (("jacfwd", full), ("jacobian", closed), ("residual", res), ("newton_update", update))
        for label, body in bodies:
            ns, cs = _timed_loop(body, z, q, p, repeats=repeats)
            row[label] = {"ns": ns, "compile_s": cs}
        rows.append(row)
        print(name, {k: round(v["ns"]) for k, v in row.items() if isinstance(v, dict)}, flush=True)
    return rows


RUN_SYSTEMS = ("knife_edge", "chaplygin_sled", "lc_circuit", "cartesian_pendulum", "rolling_disk", "rolling_ball",
               "four_bar", "two_wheel_cart", "rolling_disk:kahan_li8:6", "snakeboard:kahan_li8:12")
"""The constrained catalog systems of ``--runs`` (one and more multipliers; the two largest left out for
their compile time): 2000 steps of the system's own ``h``; ``name:composition:n``, the composed run of
``n`` steps to ``T = 2`` of ``benchmarks/composition.py`` (the split scheme, the midpoint rule)."""


def _run_case(spec):
    """``(system, q0, v0, h, n_steps, rollout keywords)`` of a ``--runs`` case (a new system object)."""
    name, *comp = spec.split(":")
    if comp:
        sysm, q0, v0 = _case(name)
        n = int(comp[1])
        return sysm, q0, v0, 2.0 / n, n, dict(scheme="split", composition=comp[0])
    ex = md.get_example(name)
    sysm = ex.system()
    q0, v0 = ex.initial(sysm)
    return sysm, q0, v0, ex.h, 2000, {}


def runs(names, repeats):
    from manifold_dirac._mechanics import step as step_module

    rows = []
    saved = step_module.CLOSED_FORM_MULTIPLIERS
    for name in names:
        calls = {}
        for label, threshold in (("closed_form", 1), ("jacfwd", 10 ** 6)):
            sysm, q0, v0, h, n_steps, kw = _run_case(name)  # a new system object: a program of its own
            q0, v0 = jax.tree.map(jnp.asarray, q0), jnp.asarray(v0, jnp.float64)
            f = jax.jit(lambda q, v, h, sysm=sysm, n=n_steps, kw=kw: md.rollout(sysm, q, v, h=h, n_steps=n, **kw).q)
            step_module.CLOSED_FORM_MULTIPLIERS = threshold
            try:
                jax.block_until_ready(f(q0, v0, h))  # traced and compiled with this threshold
            finally:
                step_module.CLOSED_FORM_MULTIPLIERS = saved
            calls[label] = lambda f=f, q0=q0, v0=v0, h=h: jax.block_until_ready(f(q0, v0, h))
        best = {k: np.inf for k in calls}
        for r in range(repeats):
            for k in (list(calls) if r % 2 == 0 else list(calls)[::-1]):
                for _ in range(2):
                    t = time.perf_counter()
                    calls[k]()
                    best[k] = min(best[k], time.perf_counter() - t)
        row = {"name": name, "multipliers": sysm.n_constraints, "steps": n_steps,
               **{k: 1e6 * v / n_steps for k, v in best.items()}}
        rows.append(row)
        print(name, {k: round(v, 3) for k, v in row.items() if k in calls}, flush=True)
    return rows


def runs_table(out) -> str:
    lines = [f"Machine: {out['machine']['cpu']}, {out['machine']['cores']} cores; load average before/after: "
             f"{out['load_before']} / {out['load_after']}; `jax.jit(rollout)` of 2000 steps of each system's own "
             "h (`name:composition:n`: the composed run of n steps to T = 2), the two programs in one process "
             f"alternating, fastest of {out['repeats']} rounds (µs per step; composed: ms per call).", "",
             "| system | multipliers | closed-form columns | jax.jacfwd of the residual |", "|---|---|---|---|"]
    for r in out["runs"]:
        k = r["steps"] / 1e3 if ":" in r["name"] else 1.0  # a composed run: ms per call
        lines.append(f"| {r['name']} | {r['multipliers']} | {k * r['closed_form']:.3f} | {k * r['jacfwd']:.3f} |")
    return "\n".join(lines) + "\n"


def table(out) -> str:
    lines = [f"Machine: {out['machine']['cpu']}, {out['machine']['cores']} cores; load average before/after: "
             f"{out['load_before']} / {out['load_after']}; minimum of {out['repeats']} rounds of {LOOP} "
             "chained evaluations in a compiled loop (ns per evaluation; compile time of the loop in "
             "parentheses).", "",
             "### The solve of an n x n system", "",
             "| n | entry by entry | by rows | rolled loop | LAPACK |", "|---|---|---|---|---|"]
    for r in out["solves"]:
        cell = [f"{r[k]['ns']:.0f} ({r[k]['compile_s']:.1f} s)" if k in r else "-"
                for k in ("entries", "rows", "rolled", "lapack")]
        lines.append(f"| {r['n']} | " + " | ".join(cell) + " |")
    lines += ["", f"`solve_small`: entry by entry below {small.ROW_SOLVE_MIN} unknowns, by rows up to "
              f"{small.SMALL_SOLVE_MAX}, the rolled loop up to {small.ROLLED_SOLVE_MAX}, LAPACK above.", "",
              "### The Newton matrix of one sub-step (split scheme, midpoint rule)", "",
              "| system | N_z (multipliers) | jax.jacfwd of the residual | StepMap.jacobian | residual | "
              "Newton update |", "|---|---|---|---|---|---|"]
    for r in out["matrices"]:
        ns = [f"{r[k]['ns']:.0f}" for k in ("jacfwd", "jacobian", "residual", "newton_update")]
        lines.append(f"| {r['name']} | {r['N_z']} ({r['multipliers']}) | " + " | ".join(ns) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="three sizes, two systems, two rounds")
    ap.add_argument("--runs", action="store_true", help="whole runs with and without the closed form")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "newton_matrix")
    a = ap.parse_args(argv)
    repeats = 2 if a.quick else a.repeats
    sizes = [4, 7, 12] if a.quick else [3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 23]
    names = ["rolling_disk", "snakeboard"] if a.quick else ["rolling_disk", "chaplygin_sled", "snakeboard",
                                                            "two_wheel_cart"]
    out = {"machine": describe(), "load_before": load(), "repeats": repeats}
    if a.runs:
        out["runs"] = runs(RUN_SYSTEMS[:2] if a.quick else RUN_SYSTEMS, repeats)
        out["load_after"] = load()
        text = runs_table(out)
        print(text)
        if not a.quick:
            path = a.out.with_name(a.out.name + "_runs")
            path.with_suffix(".json").write_text(json.dumps(out, indent=1))
            path.with_suffix(".md").write_text(text)
        return 0
    out["solves"] = solves(sizes, repeats)
    out["matrices"] = matrices(names, repeats)
    out["load_after"] = load()
    md_text = table(out)
    print(md_text)
    if not a.quick:
        a.out.with_suffix(".json").write_text(json.dumps(out, indent=1))
        a.out.with_suffix(".md").write_text(md_text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
