"""Own Newton (``manifold_dirac/_mechanics/newton.py``) vs ``optimistix.Newton`` + ``optimistix.root_find``.

Run: ``.venv/bin/python benchmarks/newton_vs_optimistix.py`` (about 2-4 minutes).
Prints a table and writes it to ``benchmarks/results/newton_vs_optimistix.txt``.

Cases (midpoint rule, symmetric scheme, default ``SolverOptions()``):

* heavy top, SO(3) exp, ``q0 = SO3().exp([0.3, 0.1, 0])``, ``v0 = (0.5, -0.2, 2)``, ``h = 0.01``;
* knife edge, SE(2) exp, ``q0 = I``, ``v0 = (0.8, 1, 0)``, ``h = 0.05`` (a relative
  equilibrium: after two steps the warm start is already the solution).

Solvers, all on ``StepMap.equations`` with the engine's warm start
``z0 = (state.xi, state.mu)`` (the previous step's solution; ``(h v0, 0)`` at step 0):

* ``own``       -- ``newton(fun, z0, options, active)`` of the library, unchanged;
* ``optx(tol)`` -- ``optimistix.Newton(rtol=tol, atol=tol, norm=max_norm, linear_solver=lineax.LU())``
  through :func:`optx_newton`, a drop-in adapter with ``newton``'s signature and result: it solves
  the residual divided by the per-equation scale at ``z0`` (row scaling: the same Newton iterates,
  the same exact dense Jacobian -- optimistix linearizes with ``jax.linearize`` and ``lineax.LU``
  materializes it column by column, i.e. ``jacfwd``), so that ``atol`` bounds the same scaled residual
  ``max_i |r_i| / scale_i`` our stopping rule uses; it then re-evaluates ``fun`` at the returned
  point, because optimistix returns the auxiliary output of the *previous* iterate and never
  evaluates the residual at the point it returns. Two tolerances:
  ``1e-10`` (the literal counterpart of ``SolverOptions.rtol``) and ``1e-6`` (the loosest that
  still ends at round-off on both problems, so the final residual matches ours);
* ``own(UNROLL=0)`` -- diagnostic: our ``newton`` without its two unrolled ``lax.cond`` iterations
  (a bare ``lax.while_loop``, the structure optimistix has), to separate the solver from the unrolling.

Timing: ``time.process_time``, A/B/C interleaved with the order rotated every repetition,
median over repetitions, after compilation. The persistent compilation cache is switched off
(``MANIFOLD_DIRAC_JAX_CACHE=0``) so that compile times are real.

Nothing in the library is modified: the trajectory loops below are minimal ``lax.scan`` loops
over ``StepMap.equations`` (the own-Newton loop is checked against ``Integrator.run``).
"""

from __future__ import annotations

import os

os.environ.setdefault("MANIFOLD_DIRAC_JAX_CACHE", "0")

import ast
import datetime
import inspect
import io
import platform
import re
import statistics
import subprocess
import sys
import time
import tokenize
from importlib import metadata
from pathlib import Path

import jax
import jax.numpy as jnp
import lineax as lx
import numpy as np
import optimistix as optx

from manifold_dirac._manifolds.so3 import SO3
from manifold_dirac._mechanics import newton as newton_module
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._mechanics.newton import NewtonResult, newton, scaled_error
from manifold_dirac._mechanics.status import Status
from manifold_dirac.systems import heavy_top, knife_edge

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent / "results" / "newton_vs_optimistix.txt"
N_STEPS = 1000
BATCH = 64
LINES: list[str] = []


def emit(s: str = "") -> None:
    print(s, flush=True)
    LINES.append(s)


# ------------------------------------------------------------------ the adapter
def optx_newton(fun, z0, options, active=True, tol=1e-10):
    """``newton``'s contract on top of ``optimistix.Newton`` (what a replacement would need)."""
    _, s0, _ = fun(z0)
    s0 = jnp.where(s0 > 0, s0, 1.0)
    act = jnp.asarray(active)

    def scaled(z, _):
        return jnp.where(act, fun(z)[0] / s0, 0.0)  # a frozen member: f = 0, stops after one step

    solver = optx.Newton(rtol=tol, atol=tol, norm=optx.max_norm, linear_solver=lx.LU())
    sol = optx.root_find(scaled, solver, z0, max_steps=options.max_iter, throw=False)
    r, scale, aux = fun(sol.value)  # optimistix's aux is the previous iterate's
    e = scaled_error(r, scale)
    status = jnp.where(~jnp.isfinite(e) | ~jnp.all(jnp.isfinite(sol.value)), Status.NONFINITE,
                       jnp.where(e <= options.rtol, Status.OK, Status.NO_CONVERGENCE)).astype(jnp.int32)
    return NewtonResult(sol.value, aux, status, sol.stats["num_steps"].astype(jnp.int32), e)


def own_no_unroll(fun, z0, options, active=True):
    """Diagnostic: the library's ``newton`` with ``UNROLL = 0`` (a bare ``lax.while_loop``, like optimistix).

    ``newton`` reads the module constant at trace time; it is restored at once (no file is edited).
    """
    old = newton_module.UNROLL
    newton_module.UNROLL = 0
    try:
        return newton(fun, z0, options, active)
    finally:
        newton_module.UNROLL = old


SOLVERS = {
    "own": newton,
    "own(UNROLL=0)": own_no_unroll,
    "optx(1e-10)": lambda f, z0, o, a=True: optx_newton(f, z0, o, a, tol=1e-10),
    "optx(1e-6)": lambda f, z0, o, a=True: optx_newton(f, z0, o, a, tol=1e-6),
}


# ------------------------------------------------------------------ cases
def cases():
    ht = heavy_top()
    ke = knife_edge()
    return [
        ("heavy_top", ht, SO3().exp(jnp.array([0.3, 0.1, 0.0])), np.array([0.5, -0.2, 2.0]), 0.01),
        ("knife_edge", ke, jnp.eye(3), np.array([0.8, 1.0, 0.0]), 0.05),
    ]


def batch_initial(name, q0, v0, rng):
    if name == "heavy_top":
        w = np.array([0.3, 0.1, 0.0]) + 0.05 * rng.standard_normal((BATCH, 3))
        q = jax.vmap(SO3().exp)(jnp.asarray(w))
        v = v0 + 0.1 * rng.standard_normal((BATCH, 3))
    else:  # the constraint kills the third frame coordinate: perturb the first two
        q = jnp.broadcast_to(q0, (BATCH, 3, 3))
        v = v0 + np.concatenate([0.1 * rng.standard_normal((BATCH, 2)), np.zeros((BATCH, 1))], axis=1)
    return q, v


# ------------------------------------------------------------------ building blocks
def make_solve(sm, solver):
    """One step's solve (what ``StepMap.step`` does before advancing the state)."""

    def solve(z0, q, p, t, h, params):
        res = solver(lambda z: sm.equations(z, q, p, t, h, params, None), z0, sm.options, True)
        return res.z, res.aux[0], res.aux[1], res.iterations, res.error, res.status

    return solve


def make_member_step(sm, solver):
    def step(q, p, z, t, h, params):
        res = solver(lambda z: sm.equations(z, q, p, t, h, params, None), z, sm.options, True)
        q1, p1, _ = res.aux
        return q1, p1, res.z, res.iterations, res.error, res.status

    return step


def make_trajectory(sm, solver, batched):
    """``N_STEPS`` steps under ``lax.scan`` (state ``q, p, z``; the warm start is the last ``z``)."""
    step = make_member_step(sm, solver)
    if batched:
        step = jax.vmap(step, in_axes=(0, 0, 0, None, None, None))

    def run(q, p, z, h, params):
        def body(c, k):
            q, p, z = c
            q1, p1, z1, it, e, st = step(q, p, z, k * h, h, params)
            return (q1, p1, z1), (it, e, st)

        return jax.lax.scan(body, (q, p, z), jnp.arange(N_STEPS))

    return run


def block(x):
    return jax.block_until_ready(x)


def interleaved(fns: dict, args, n_rep: int, n_inner: int) -> dict:
    """Median seconds per call of each function (process time), repetitions interleaved."""
    names = list(fns)
    samples = {k: [] for k in names}
    for r in range(n_rep):
        order = names[r % len(names):] + names[:r % len(names)]
        for k in order:
            f = fns[k]
            t0 = time.process_time()
            for _ in range(n_inner):
                out = f(*args)
            block(out)
            samples[k].append((time.process_time() - t0) / n_inner)
    return {k: statistics.median(v) for k, v in samples.items()}


def compile_times(builders: dict, args, n_rep: int = 3) -> dict:
    """Median (trace + lower, compile) process seconds of fresh jits, interleaved."""
    out = {k: ([], []) for k in builders}
    for r in range(n_rep):
        for k in builders:
            f = jax.jit(builders[k]())
            t0 = time.process_time()
            low = f.lower(*args)
            t1 = time.process_time()
            low.compile()
            t2 = time.process_time()
            out[k][0].append(t1 - t0)
            out[k][1].append(t2 - t1)
    return {k: (statistics.median(a), statistics.median(b)) for k, (a, b) in out.items()}


def state_at(integ, q0, v0, k):
    st = integ.initial_state(q0, v0=v0)
    for _ in range(k):
        st, _ = integ.step(st)
    return st


# ------------------------------------------------------------------ lines of code
def code_lines(src: str) -> int:
    """Lines holding code: no blank lines, comments or docstrings."""
    tree = ast.parse(src)
    doc = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)) and node.body:
            b = node.body[0]
            if isinstance(b, ast.Expr) and isinstance(getattr(b, "value", None), ast.Constant) \
                    and isinstance(b.value.value, str):
                doc.update(range(b.lineno, b.end_lineno + 1))
    lines = set()
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                        tokenize.ENDMARKER):
            continue
        for ln in range(tok.start[0], tok.end[0] + 1):
            if ln not in doc:
                lines.add(ln)
    return len(lines)


def _req_names(dist: str) -> set[str]:
    out = set()
    for r in metadata.requires(dist) or []:
        if "extra ==" in r:
            continue
        out.add(re.split(r"[ ;<>=!~\[(]", r.strip(), maxsplit=1)[0].lower().replace("_", "-"))
    return out


def closure(dist: str) -> set[str]:
    seen, todo = set(), [dist.lower()]
    while todo:
        d = todo.pop()
        if d in seen:
            continue
        seen.add(d)
        try:
            todo.extend(_req_names(d))
        except metadata.PackageNotFoundError:
            pass
    return seen


def dist_py_lines(dist: str) -> tuple[int, int]:
    files = [f for f in (metadata.files(dist) or []) if str(f).endswith(".py")]
    n = 0
    for f in files:
        try:
            n += sum(1 for _ in open(f.locate(), encoding="utf-8", errors="replace"))
        except OSError:
            pass
    return len(files), n


def import_seconds(n: int = 3) -> float:
    code = ("import os; os.environ['MANIFOLD_DIRAC_JAX_CACHE']='0'; import time, jax, manifold_dirac; "
            "t=time.perf_counter(); import optimistix; print(time.perf_counter()-t)")
    ts = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
          for _ in range(n)]
    return statistics.median(ts)


# ------------------------------------------------------------------ main
def main() -> None:
    t_start = time.perf_counter()
    names = list(SOLVERS)
    emit("Own Newton (manifold_dirac/_mechanics/newton.py) vs optimistix.Newton + root_find")
    emit(f"date {datetime.datetime.now().isoformat(timespec='seconds')}  python {platform.python_version()}  "
         f"jax {jax.__version__}  jaxlib {metadata.version('jaxlib')}  optimistix {metadata.version('optimistix')}  "
         f"lineax {metadata.version('lineax')}  equinox {metadata.version('equinox')}")
    emit(f"machine {platform.machine()}, {os.cpu_count()} CPUs, load average at start "
         f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; backend {jax.default_backend()}; "
         "times are process CPU time, medians of interleaved repetitions")
    emit("optx(tol): optimistix.Newton(rtol=tol, atol=tol, norm=max_norm, linear_solver=lineax.LU()) on r/scale(z0), "
         "max_steps=30, throw=False, + one residual evaluation at the returned z (see the module docstring)")
    emit("own: newton(fun, z0, SolverOptions()) (rtol=1e-10, stop at round-off or stagnation), jnp.linalg.solve(jacfwd)")

    rng = np.random.default_rng(0)
    summary = {}
    for cname, sysm, q0, v0, h in cases():
        integ = Integrator(sysm, h, "symmetric", "midpoint")
        sm = integ.stepmap
        params = sysm.params
        hj = jnp.asarray(h)
        emit()
        emit(f"=== {cname}: {sysm.Q!r}, n={sysm.dim}, m={sysm.n_constraints}, h={h}, symmetric/midpoint")

        # ---- 1. one step's solve
        emit("-- 1. one step's solve, jitted (same z0 = engine's warm start, same equations)")
        emit(f"{'state':<10}{'solver':<15}{'iters':>6}{'final e':>11}{'|dz| vs own':>13}"
             f"{'us/solve':>10}{'ratio':>7}{'trace ms':>10}{'compile ms':>11}")
        for k in (0, 100):
            st = state_at(integ, q0, v0, k)
            m = st.members
            z0 = jnp.concatenate([m.xi, m.mu])
            args = (z0, m.q, m.p, jnp.asarray(k * h), hj, params)
            fns = {s: jax.jit(make_solve(sm, SOLVERS[s])) for s in names}
            outs = {s: block(fns[s](*args)) for s in names}
            fns["dispatch"] = jax.jit(lambda z0, q, p, t, h, params: (z0, q, p))
            block(fns["dispatch"](*args))
            tm = interleaved(fns, args, n_rep=41, n_inner=100)
            ct = compile_times({s: (lambda s=s: make_solve(sm, SOLVERS[s])) for s in names}, args) if k == 0 else None
            for s in names:
                z, q1, p1, it, e, status = outs[s]
                assert int(status) == Status.OK, (cname, s, int(status))
                dz = float(jnp.max(jnp.abs(z - outs["own"][0])))
                c = f"{1e3 * ct[s][0]:>10.0f}{1e3 * ct[s][1]:>11.0f}" if ct else f"{'':>10}{'':>11}"
                emit(f"{'step ' + str(k):<10}{s:<15}{int(it):>6}{float(e):>11.2e}{dz:>13.1e}"
                     f"{1e6 * tm[s]:>10.1f}{tm[s] / tm['own']:>7.2f}{c}")
            emit(f"{'step ' + str(k):<10}{'(dispatch)':<15}{'':>6}{'':>11}{'':>13}{1e6 * tm['dispatch']:>10.1f}"
                 f"{'':>7}   <- a jitted no-op with the same arguments (included in every us/solve)")
            if k == 0:
                summary[(cname, "compile")] = {s: sum(ct[s]) for s in names}
            summary[(cname, "solve", k)] = {s: tm[s] - tm["dispatch"] for s in names}

        # ---- 2. a trajectory under lax.scan
        emit(f"-- 2. trajectory, {N_STEPS} steps under lax.scan (one jitted call)")
        st = integ.initial_state(q0, v0=v0)
        m = st.members
        targs = (m.q, m.p, jnp.concatenate([m.xi, m.mu]), hj, params)
        tfns = {s: jax.jit(make_trajectory(sm, SOLVERS[s], False)) for s in names}
        touts = {s: block(tfns[s](*targs)) for s in names}
        ref = integ.run(integ.initial_state(q0, v0=v0), N_STEPS)
        (qo, po, _), _ = touts["own"]
        engine_dq = float(np.max(np.abs(np.asarray(ref.q[-1]) - np.asarray(qo))))
        ttm = interleaved(tfns, targs, n_rep=21, n_inner=1)
        emit(f"{'solver':<15}{'iters/step':>11}{'hist 0/1/2/3+':>17}{'max e':>10}{'median e':>10}"
             f"{'us/step':>9}{'ratio':>7}{'final |dq|':>12}{'final |dp|':>12}")
        for s in names:
            (q, p, _), (it, e, status) = touts[s]
            it = np.asarray(it)
            assert np.all(np.asarray(status) == Status.OK), (cname, s)
            hist = np.bincount(np.minimum(it, 3), minlength=4)
            dq = float(jnp.max(jnp.abs(q - qo)))
            dp = float(jnp.max(jnp.abs(p - po)))
            emit(f"{s:<15}{it.mean():>11.3f}{'/'.join(map(str, hist)):>17}{float(e.max()):>10.1e}"
                 f"{float(jnp.median(e)):>10.1e}{1e6 * ttm[s] / N_STEPS:>9.2f}{ttm[s] / ttm['own']:>7.2f}"
                 f"{dq:>12.1e}{dp:>12.1e}")
        emit(f"(check: own-Newton scan loop vs Integrator.run, final q differs by {engine_dq:.1e})")
        summary[(cname, "traj")] = {s: ttm[s] / N_STEPS for s in names}

        # ---- 3. vmap over a batch
        emit(f"-- 3. vmap, B={BATCH} perturbed members, {N_STEPS} steps under lax.scan (per-member convergence)")
        qb, vb = batch_initial(cname, q0, v0, rng)
        sb = integ.initial_state(qb, v0=vb)
        mb = sb.members
        bargs = (mb.q, mb.p, jnp.concatenate([mb.xi, mb.mu], axis=-1), hj, params)
        bfns = {s: jax.jit(make_trajectory(sm, SOLVERS[s], True)) for s in names}
        bouts = {s: block(bfns[s](*bargs)) for s in names}
        btm = interleaved(bfns, bargs, n_rep=7, n_inner=1)
        (qbo, pbo, _), _ = bouts["own"]
        emit(f"{'solver':<15}{'iters/member-step':>18}{'max e':>10}{'us/batch-step':>14}{'us/member-step':>15}"
             f"{'ratio':>7}{'final |dq|':>12}{'final |dp|':>12}")
        for s in names:
            (q, p, _), (it, e, status) = bouts[s]
            assert np.all(np.asarray(status) == Status.OK), (cname, s)
            dq = float(jnp.max(jnp.abs(q - qbo)))
            dp = float(jnp.max(jnp.abs(p - pbo)))
            emit(f"{s:<15}{float(np.mean(it)):>18.3f}{float(e.max()):>10.1e}{1e6 * btm[s] / N_STEPS:>14.1f}"
                 f"{1e6 * btm[s] / N_STEPS / BATCH:>15.2f}{btm[s] / btm['own']:>7.2f}{dq:>12.1e}{dp:>12.1e}")
        summary[(cname, "vmap")] = {s: btm[s] / N_STEPS / BATCH for s in names}

    # ---- 4. code and dependencies
    emit()
    emit("=== 4. code and dependencies")
    src = Path(newton_module.__file__).read_text()
    own_total, own_code = len(src.splitlines()), code_lines(src)
    ad_src = inspect.getsource(optx_newton)
    emit(f"own newton.py: {own_total} lines, {own_code} code lines (no docstrings/comments/blanks); "
         "dependencies: jax, numpy (already required)")
    emit(f"optimistix adapter (optx_newton above, keeping newton's contract): {len(ad_src.splitlines())} lines, "
         f"{code_lines(ad_src)} code lines; plus SolverOptions/NewtonResult/scaled_error kept from newton.py")
    base = closure("manifold-dirac") if _has_dist("manifold-dirac") else closure("jax") | {"numpy"}
    new = sorted(closure("optimistix") - base)
    tot_files = tot_lines = 0
    rows = []
    for d in new:
        try:
            nf, nl = dist_py_lines(d)
            rows.append(f"{d} {metadata.version(d)} ({nf} .py files, {nl} lines)")
            tot_files, tot_lines = tot_files + nf, tot_lines + nl
        except metadata.PackageNotFoundError:
            rows.append(f"{d} (not installed)")
    emit(f"new distributions optimistix brings (not already required by manifold_dirac): {len(new)}")
    for r in rows:
        emit(f"  {r}")
    emit(f"  total {tot_files} .py files, {tot_lines} lines of Python")
    emit(f"import optimistix after jax + manifold_dirac: {1e3 * import_seconds():.0f} ms wall (median of 3 fresh processes)")

    # ---- summary
    emit()
    emit("=== summary: optx / own (time ratios; >1 means optimistix is slower)")
    emit(f"{'case':<12}{'solver':<15}{'solve@0':>9}{'solve@100':>10}{'traj':>7}{'vmap':>7}{'compile':>9}")
    for cname in ("heavy_top", "knife_edge"):
        for s in names[1:]:
            r = [summary[(cname, "solve", 0)][s] / summary[(cname, "solve", 0)]["own"],
                 summary[(cname, "solve", 100)][s] / summary[(cname, "solve", 100)]["own"],
                 summary[(cname, "traj")][s] / summary[(cname, "traj")]["own"],
                 summary[(cname, "vmap")][s] / summary[(cname, "vmap")]["own"],
                 summary[(cname, "compile")][s] / summary[(cname, "compile")]["own"]]
            emit(f"{cname:<12}{s:<15}" + "".join(f"{x:>{w}.2f}" for x, w in zip(r, (9, 10, 7, 7, 9))))
    emit("(solve ratios net of the jitted-call dispatch floor)")
    emit("notes: one jitted call of a solve costs far more than the same solve inside the scan (per-call cost")
    emit("  of an XLA:CPU executable with control flow; process time also counts JAX's dispatch thread), so the")
    emit("  engine-relevant numbers are sections 2 and 3 (the engine's pattern: warm start carried by lax.scan).")
    emit("  own(UNROLL=0) is own newton with a bare while_loop: it isolates the effect of the unrolled lax.cond")
    emit("  iterations, which under vmap become selects (both branches computed for every member).")
    emit(f"total benchmark wall time {time.perf_counter() - t_start:.0f} s")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(LINES) + "\n")
    print(f"written to {OUT.relative_to(ROOT)}")


def _has_dist(name: str) -> bool:
    try:
        metadata.version(name)
        return True
    except metadata.PackageNotFoundError:
        return False


if __name__ == "__main__":
    main()
