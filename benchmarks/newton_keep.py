"""Newton's matrix kept from step to step (``SolverOptions(jacobian="keep")``): what it spares, and its threshold.

Run (from the repository root, pinned to one core for steadier numbers)::

    PYTHONPATH=$PWD taskset -c 1 python benchmarks/newton_keep.py     # writes results/newton_keep.md
    PYTHONPATH=$PWD taskset -c 1 python benchmarks/newton_keep.py --steps  # results/newton_keep_steps.md:
                                                      # per step of long runs, every / reuse / keep
    PYTHONPATH=$PWD taskset -c 1 python benchmarks/newton_keep.py --vmap   # results/newton_keep_vmap.md:
                                                      # composed runs under jax.vmap, every / keep

Three tables, measured in one process in this order:

* **what one update costs** on the rolling disk (SE(2) x R, six unknowns):
  a compiled loop of 2000 evaluations of the step equations, of the Newton
  matrix (forward-mode Jacobian), of the matrix and its solve, and of the
  equations and a product with a kept inverse; nanoseconds per evaluation,
  minimum of 7 rounds;
* **what a call costs with its length**: the disk's ``kahan_li8`` rollout
  with kept matrices over 2 to 18 steps, and a trivial jitted function of
  the same inputs (the fixed cost of any call);
* **the threshold** :data:`~manifold_dirac._mechanics.newton.KEEP_CONTRACTION`
  (a kept matrix is evaluated again after an update that does not cut the
  error to this fraction): the fastest composed ``jax.jit(rollout)`` run
  for each target of ``benchmarks/results/composition.json`` on the disk
  and the snakeboard with every update's matrix evaluated and with kept
  matrices at several thresholds, beside DOP853; wall time per call,
  minimum of 5 interleaved rounds of 20 calls, with each run's Newton
  updates and error at ``T``.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)

import composition as C  # noqa: E402  (the systems, DOP853 references and timing of the work-precision run)

import manifold_dirac._mechanics.newton as N  # noqa: E402
from manifold_dirac import SolverOptions, rollout  # noqa: E402
from manifold_dirac._mechanics.small import mv, solve_small  # noqa: E402
from manifold_dirac._run.integrator import Integrator  # noqa: E402
from manifold_dirac.systems.catalog import EXAMPLES  # noqa: E402

THRESHOLDS = (0.5, 0.125, 1.0 / 32.0)
LOOP = 2000


def update_costs(rounds: int = 7) -> str:
    """Nanoseconds per evaluation of the disk's equations, matrix, matrix and solve, and kept update."""
    ex = EXAMPLES["rolling_disk"]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    integ = Integrator(sysm, 0.1, "split", "midpoint")
    sm = integ.stepmap
    st = integ.initial_state(q0, v0=v0).members
    z, q, p = sm.warm_start(st), st.q, st.p
    M = jnp.linalg.inv(sm.jacobian(z, q, p, 0.0, 0.1, sysm.params))

    def loop(kind):
        def f(z, q, p, M):
            def body(i, c):
                zz, acc = c
                if kind == "equations":
                    x = sm.equations(zz, q, p, 0.0, 0.1, sysm.params)[0][0]
                elif kind == "equations and the kept inverse":
                    x = mv(M, sm.equations(zz, q, p, 0.0, 0.1, sysm.params)[0])[0]
                else:
                    J = sm.jacobian(zz, q, p, 0.0, 0.1, sysm.params, basis_in_loop=True)
                    x = J[0, 0] if kind == "the matrix" else solve_small(J, zz)[0]
                return zz + 1e-30 * x, acc + x
            return jax.lax.fori_loop(0, LOOP, body, (z, 0.0))[1]
        g = jax.jit(f)
        return lambda: jax.block_until_ready(g(z, q, p, M))

    kinds = ("equations", "the matrix", "the matrix and its solve", "equations and the kept inverse")
    best = C.interleaved_min({k: loop(k) for k in kinds}, rounds, 1)
    lines = ["| evaluation | ns |", "|---|---|"]
    lines += [f"| {k} | {1e9 * best[k] / LOOP:.0f} |" for k in kinds]
    return "\n".join(lines)


def thresholds(rounds: int = 5, calls: int = 20) -> str:
    """The fastest composed run per target with every matrix evaluated and kept at each threshold."""
    from scipy.integrate import solve_ivp

    stored = json.loads((HERE / "results" / "composition.json").read_text())["systems"]
    fs, info, rows = {}, {}, []
    saved = N.KEEP_CONTRACTION
    try:
        for name in ("rolling_disk", "snakeboard"):
            case = C.SYSTEMS[name]()
            for k in range(6, 11):
                tgt = f"1e-{k:02d}"
                runs = stored[name]["runs"]
                lib = [r for r in runs if r["method"].endswith(C.FAST) and "+" in r["method"]
                       and r["error"] <= float(tgt)]
                dop = min((r for r in runs if r["method"] == "DOP853" and r["error"] <= float(tgt)),
                          key=lambda r: r["wall"])
                best = min(lib, key=lambda r: r["wall"])
                comp = best["method"].split("+ ")[1].split(" ")[0]
                n = int(round(C.T / best["setting"]))
                key = (name, tgt, comp, n)
                rows.append(key)
                variants = [("every", None)] + [("keep", t) for t in THRESHOLDS]
                for jac, t in variants:
                    if t is not None:
                        N.KEEP_CONTRACTION = t  # read when the program is traced: a new system object each,
                        case = C.SYSTEMS[name]()  # so that rollout compiles its own program (not a cached one)
                    f = jax.jit(lambda q, v, h, comp=comp, n=n, sysm=case["system"], jac=jac: rollout(
                        sysm, q, v, h=h, n_steps=n, scheme="split", composition=comp,
                        solver=SolverOptions(jacobian=jac)))
                    r = jax.block_until_ready(f(case["q0"], case["v0"], C.T / n))
                    label = jac if t is None else f"keep {t:g}"
                    info[(key, label)] = (int(np.sum(r.iterations)), case["err_lib"](r), int(r.status))
                    fs[(key, label)] = (lambda f=f, n=n, case=case:
                                        jax.block_until_ready(f(case["q0"], case["v0"], C.T / n)))
                rt = dop["setting"]
                fs[(key, "DOP853")] = (lambda case=case, rt=rt: solve_ivp(
                    case["rhs"], (0.0, C.T), case["y0"], method="DOP853", rtol=rt, atol=rt))
    finally:
        N.KEEP_CONTRACTION = saved
    best = C.interleaved_min(fs, rounds, calls)
    labels = ["every"] + [f"keep {t:g}" for t in THRESHOLDS]
    lines = ["| system | target | composed run | DOP853 | " + " | ".join(
        f"`{lab}` (updates; error at T)" for lab in labels) + " |", "|---|---|---|---|" + "---|" * len(labels)]
    for key in rows:
        name, tgt, comp, n = key
        d = best[(key, "DOP853")]
        cells = []
        for lab in labels:
            it, err, status = info[(key, lab)]
            cells.append(f"{1e3 * best[(key, lab)]:.3g} ms, {best[(key, lab)] / d:.2f}x ({it}; {err:.1e}"
                         + (f"; status {status}" if status else "") + ")")
        lines.append(f"| {C.DOCS_NAMES[name]} | {tgt} | `{comp}`, {n} steps | {1e3 * d:.3g} ms | "
                     + " | ".join(cells) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def call_length(rounds: int = 7, calls: int = 30) -> str:
    """Microseconds per call of the disk's kahan_li8 rollout with kept matrices, by its number of steps."""
    case = C.SYSTEMS["rolling_disk"]()
    q = jax.tree.map(jnp.asarray, case["q0"])
    v = jnp.asarray(case["v0"], jnp.float64)
    fs = {}
    for n in (2, 3, 4, 6, 10, 18):
        f = jax.jit(lambda q, v, h, n=n: rollout(case["system"], q, v, h=h, n_steps=n, scheme="split",
                                                 composition="kahan_li8", solver=SolverOptions(jacobian="keep")))
        h = jnp.asarray(C.T / n, jnp.float64)  # device arrays made once: only the call is timed
        fs[f"{n} steps"] = lambda f=f, h=h: jax.block_until_ready(f(q, v, h))
    triv = jax.jit(lambda q, v, h: (jax.tree.map(lambda a: a + h, q), v * h))
    h1 = jnp.asarray(0.1, jnp.float64)
    fs["trivial jitted function"] = lambda: jax.block_until_ready(triv(q, v, h1))
    best = C.interleaved_min(fs, rounds, calls)
    return "\n".join(["| call | µs |", "|---|---|"] + [f"| {k} | {1e6 * t:.1f} |" for k, t in best.items()])


STEPS_RUNS = (("heavy_top", 0.02, None), ("knife_edge", 0.05, None), ("rolling_disk", 0.1, "kahan_li8"))
"""``(system, h, composition)`` of ``--steps``: long uncomposed runs and a composed one."""


def per_step(n_steps: int = 20000, rounds: int = 5) -> str:
    """Microseconds per step of one long ``integrate`` call (the end point stored only) with each Newton matrix
    option, and Newton updates per step (from ``rollout``, the same map), on the catalog's systems."""
    from manifold_dirac import integrate

    fs, updates = {}, {}
    for name, h, comp in STEPS_RUNS:
        ex = EXAMPLES[name]
        sysm = ex.system("exp")
        q0, v0 = ex.initial(sysm)
        scheme = "split" if comp else "symmetric"
        for jac in ("every", "reuse", "keep"):
            solver = SolverOptions(jacobian=jac)
            fs[(name, jac)] = (lambda sysm=sysm, q0=q0, v0=v0, h=h, comp=comp, scheme=scheme, solver=solver:
                               integrate(sysm, q0, v0, h=h, n_steps=n_steps, stride=n_steps, scheme=scheme,
                                         composition=comp, solver=solver))
            r = rollout(sysm, q0, v0, h=h, n_steps=2000, scheme=scheme, composition=comp, solver=solver).check()
            updates[(name, jac)] = float(np.sum(r.iterations)) / 2000
    best = C.interleaved_min(fs, rounds, 1)
    lines = ["| system | h | composition | every update: µs per step (updates per step) | `\"reuse\"` | `\"keep\"` |",
             "|---|---|---|---|---|---|"]
    for name, h, comp in STEPS_RUNS:
        cells = [f"{1e6 * best[(name, j)] / n_steps:.3g} ({updates[(name, j)]:.2f})" for j in ("every", "reuse", "keep")]
        lines.append(f"| {name.replace('_', ' ')} | {h} | {comp or '—'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


VMAP_RUNS = (("rolling_disk", 10), ("snakeboard", 21))
"""``(system, kahan_li8 steps)`` of ``--vmap``: runs of the matched-accuracy comparison (``composition.py --matched``)
for 1e-8."""


def under_vmap(batches=(16, 256), rounds: int = 5, calls: int = 3) -> str:
    """Wall time per call of ``jax.jit(jax.vmap(rollout))`` of composed runs with each Newton matrix option:
    without an axis name Newton's choice of a new matrix is a select, both branches run for every member."""
    fs = {}
    for name, n in VMAP_RUNS:
        case = C.SYSTEMS[name]()
        q, v = jax.tree.map(jnp.asarray, case["q0"]), jnp.asarray(case["v0"], jnp.float64)
        for B in batches:
            vb = v[None] * (1.0 + 0.01 * jnp.arange(B) / B)[:, None]  # members 0 to 1 % apart
            qb = jax.tree.map(lambda a, B=B: jnp.broadcast_to(a, (B, *a.shape)), q)
            for jac in ("every", "keep"):
                f = jax.jit(jax.vmap(lambda q, v, sysm=case["system"], n=n, jac=jac: (lambda r: (r.p[-1], r.status))(
                    rollout(sysm, q, v, h=C.T / n, n_steps=n, scheme="split", composition="kahan_li8",
                            solver=SolverOptions(jacobian=jac)))))
                p, status = jax.block_until_ready(f(qb, vb))
                if np.any(np.asarray(status) != 0):
                    raise RuntimeError(f"{name}, batch {B}, jacobian={jac!r}: members failed, status {status}")
                fs[(name, n, B, jac)] = lambda f=f, qb=qb, vb=vb: jax.block_until_ready(f(qb, vb))
    best = C.interleaved_min(fs, rounds, calls)
    lines = ["| system | kahan_li8 steps | batch | every update [ms] | `\"keep\"` [ms] | keep / every |",
             "|---|---|---|---|---|---|"]
    for (name, n, B, jac), t in best.items():
        if jac == "every":
            k = best[(name, n, B, "keep")]
            lines.append(f"| {name.replace('_', ' ')} | {n} | {B} | {1e3 * t:.3g} | {1e3 * k:.3g} | {k / t:.2f} |")
    return "\n".join(lines)


def _report(filename: str, body, what: str = "") -> None:
    """Write ``results/filename``: the time, machine, CPUs and load around ``body()``, what was measured
    (``what``), the table; and print it."""
    import os

    load0 = os.getloadavg()
    t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    table = body()
    out = HERE / "results" / filename
    out.write_text(f"{t0}; machine: {platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}; CPUs {sorted(os.sched_getaffinity(0))}; load average before "
                   f"{[round(x, 2) for x in load0]}, after {[round(x, 2) for x in os.getloadavg()]}."
                   + (f" {what}" if what else "") + "\n\n" + table + "\n")
    print(out.read_text())


def main() -> None:
    if "--vmap" in sys.argv[1:]:
        _report("newton_keep_vmap.md", under_vmap,
                "`jax.jit(jax.vmap(rollout))` of composed runs (the final momenta and the status returned), "
                "members with velocities 0 to 1 % apart per batch size; wall time per call, the fastest of 5 "
                "interleaved rounds of 3 calls.")
        return
    if "--steps" in sys.argv[1:]:
        _report("newton_keep_steps.md", per_step,
                "One `integrate` call of 20000 steps (the end point stored), wall time per step, the fastest of 5 "
                "interleaved rounds (compilation excluded: each is called once first); Newton updates per step "
                "from a 2000-step `rollout` of the same map.")
        return
    _report("newton_keep.md", lambda: "\n\n".join([
        "## What one update costs (rolling disk, compiled loops of 2000)\n\n" + update_costs(),
        "## A call by its length (rolling disk, kahan_li8, kept matrices)\n\n" + call_length(),
        "## The threshold KEEP_CONTRACTION (wall time per call; ratio to DOP853)\n\n" + thresholds()]))


if __name__ == "__main__":
    main()
    sys.exit(0)
