"""The benchmark suite: ``python benchmarks/run.py [--quick] [--out DIR] [--only S ...]``.

Sections (``docs/performance.md`` explains each and quotes a run):

``steps``   steps/s of the library (analytic and automatic partials) against the
            hand-specialized numpy baseline of the same scheme
            (``benchmarks/baselines.py``) and, for the pendulum, a scalar
            pure-Python loop; the two implementations are checked to agree.
``wp``      work--precision over ``T`` against ``scipy.integrate.solve_ivp``
            (RK45, DOP853, Radau): error at ``T``, energy error, and distance
            from SO(3), versus wall time, for the Lagrange top and the knife
            edge on an inclined plane.
``batch``   trajectory-steps/s of ``B`` trajectories advanced together versus a
            Python loop over single trajectories.
``memory``  peak RSS of a long run in a fresh interpreter, storing every
            ``stride``-th point versus every point.

Every section writes ``results-<section>.json`` into ``--out``; the report
(``results.md``, ``performance.png``) is rebuilt from all result files
present, so sections may be run separately. The machine is noisy: each timing
is the minimum over interleaved repeats, and the ratios are what to read.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from benchmarks import baselines as BL  # noqa: E402
from manifold_dirac import Integrator, LagrangeDiracSystem, integrate  # noqa: E402
from manifold_dirac.manifolds import SO3  # noqa: E402
from manifold_dirac import systems as S  # noqa: E402

SECTIONS = ("steps", "wp", "batch", "memory")


# ----------------------------------------------------------------- helpers
def automatic(sysm: LagrangeDiracSystem) -> LagrangeDiracSystem:
    """The same system without its analytic partials (complex-step path)."""
    A = sysm._A_const if sysm.has_constant_constraint else sysm._A_fun
    return LagrangeDiracSystem(sysm.Q, sysm.lagrangian, A, sysm.force, name=f"{sysm.name} (automatic)")


def time_min(fn, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def library_stepper(sysm, q0, v0, h):
    integ = Integrator(sysm, h)
    box = [integ.initial_state(q0, v0=v0)]

    def go(n):
        s = box[0]
        for _ in range(n):
            s, _ = integ.step(s)
        box[0] = s

    return go, box


def baseline_stepper(bl, sysm, q0, v0, h):
    integ = Integrator(sysm, h)
    s = integ.initial_state(q0, v0=v0)
    box = [(s.q, s.p, s.xi, s.mu)]

    def go(n):
        box[0] = BL.run(bl, box[0], n)

    return go, box


def _pt_diff(a, b):
    if isinstance(a, tuple):
        return max(_pt_diff(x, y) for x, y in zip(a, b))
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


# ----------------------------------------------------------------- systems
def step_cases():
    top_q = SO3().exp(np.array([0.3, 0.1, 0.0]))
    top_v = np.array([1.0, 2.0, 3.0])
    return [
        ("pendulum (R)", S.pendulum(), np.array([1.0]), np.array([0.0]), BL.Pendulum()),
        ("double pendulum (R^2)", S.double_pendulum(), np.array([1.0, 0.5]), np.array([0.0, 0.0]), BL.DoublePendulum()),
        ("heavy top, SO(3) exp", S.heavy_top(), top_q, top_v, BL.HeavyTop()),
        ("heavy top, SO(3) Cayley", S.heavy_top(retraction="cayley"), top_q, top_v, BL.HeavyTop(retraction="cayley")),
        ("inclined knife edge, SE(2)", S.inclined_knife_edge(), np.eye(3), np.array([1.0, 0.0, 0.0]), BL.SE2Vehicle("knife")),
        ("Chaplygin sled, SE(2)", S.chaplygin_sled(), np.eye(3), np.array([1.0, 1.0, 0.0]),
         BL.SE2Vehicle("sled", inertia=0.2)),
        ("rolling disk, SE(2) x R (interconnected)", S.rolling_disk(), (np.eye(3), np.zeros(1)),
         np.array([0.7, 1.0, 0.0, 2.0]), BL.SE2Vehicle("disk", inertia=0.0625)),
    ]


# ------------------------------------------------------------------ steps
def section_steps(quick: bool) -> dict:
    n, rep = (20, 2) if quick else (200, 7)
    h = 0.01
    rows = []
    for name, sysm, q0, v0, bl in step_cases():
        lib, lbox = library_stepper(sysm, q0, v0, h)
        auto, _ = library_stepper(automatic(sysm), q0, v0, h)
        base, bbox = baseline_stepper(bl, sysm, q0, v0, h)
        # the same scheme: both implementations agree over n steps
        lib(n)
        base(n)
        s = lbox[0]
        agree = max(_pt_diff(s.q, bbox[0][0]), _pt_diff(s.p, bbox[0][1]))
        t_lib = t_auto = t_base = math.inf
        for _ in range(rep):  # interleaved: a noisy machine hits all three alike
            t_lib = min(t_lib, time_min(lambda: lib(n), 1))
            t_auto = min(t_auto, time_min(lambda: auto(n), 1))
            t_base = min(t_base, time_min(lambda: base(n), 1))
        rows.append({
            "system": name, "steps_per_s_library": n / t_lib, "steps_per_s_automatic": n / t_auto,
            "steps_per_s_baseline": n / t_base, "ratio_library_to_baseline": t_lib / t_base,
            "ratio_automatic_to_analytic": t_auto / t_lib, "max_state_difference": agree,
        })
    # the scalar pure-Python pendulum
    ns = 2000 if quick else 200000
    t_py = time_min(lambda: BL.scalar_pendulum(1.0, 0.0, h, ns), 3)
    q_py, _ = BL.scalar_pendulum(1.0, 0.0, h, n)
    lib, lbox = library_stepper(S.pendulum(), np.array([1.0]), np.array([0.0]), h)
    lib(n)
    return {"n_steps": n, "repeats": rep, "h": h, "rows": rows, "scalar_python_pendulum": {
        "steps_per_s": ns / t_py, "max_state_difference": abs(q_py - float(lbox[0].q[0]))}}


# --------------------------------------------------------------------- wp
def lagrange_top():
    """The integrable (Lagrange) heavy top: a reference solution at T is meaningful."""
    return S.heavy_top(inertia=(1.0, 1.0, 2.0), mgl=1.0)


TOP_I = np.array([1.0, 1.0, 2.0])
TOP_CHI = np.array([0.0, 0.0, 1.0])
TOP_R0 = SO3().exp(np.array([0.4, 0.0, 0.0]))
TOP_W0 = np.array([0.0, 0.5, 4.0])
KNIFE_W, KNIFE_G, KNIFE_A, KNIFE_M, KNIFE_J = 1.0, 9.81, 0.3, 1.0, 0.5


def top_rhs(_t, y):
    R = y[:9].reshape(3, 3)
    w = y[9:]
    W = np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])
    torque = -np.cross(TOP_CHI, R[2])
    dw = (np.cross(TOP_I * w, w) + torque) / TOP_I
    return np.concatenate([(R @ W).ravel(), dw])


def top_energy_Rw(R, w):
    return 0.5 * np.sum(TOP_I * w * w, -1) + np.einsum("...j,j->...", R[..., 2, :], TOP_CHI)


def knife_rhs(_t, y):
    x, yy, th, v, w = y
    return [v * np.cos(th), v * np.sin(th), w, KNIFE_G * np.sin(KNIFE_A) * np.cos(th), 0.0]


def knife_energy(x, v, w):
    return 0.5 * KNIFE_M * v * v + 0.5 * KNIFE_J * w * w - KNIFE_M * KNIFE_G * np.sin(KNIFE_A) * x


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def section_wp(quick: bool) -> dict:
    from scipy.integrate import solve_ivp

    T = 5.0 if quick else 1000.0
    n_eval = 100 if quick else 1000
    t_eval = np.linspace(0, T, n_eval + 1)
    hs = [0.1] if quick else [0.2, 0.1, 0.05]
    tols = {"RK45": [1e-6], "DOP853": [1e-8], "Radau": [1e-6]} if quick else {
        "RK45": [1e-4, 1e-6, 1e-8], "DOP853": [1e-6, 1e-8, 1e-10, 1e-12], "Radau": [1e-4, 1e-6, 1e-8]}
    out: dict = {"T": T, "systems": {}}

    # reference for the top: DOP853 at the tightest tolerance
    y0 = np.concatenate([TOP_R0.ravel(), TOP_W0])
    t = time.perf_counter()
    ref = solve_ivp(top_rhs, (0, T), y0, method="DOP853", rtol=1e-13, atol=1e-13)
    ref_R = ref.y[:9, -1].reshape(3, 3)
    ref_wall = time.perf_counter() - t
    E0 = top_energy_Rw(TOP_R0, TOP_W0)
    runs = []
    for meth, rtols in tols.items():
        for rtol in rtols:
            t = time.perf_counter()
            sol = solve_ivp(top_rhs, (0, T), y0, method=meth, rtol=rtol, atol=rtol * 1e-2, t_eval=t_eval)
            wall = time.perf_counter() - t
            R = sol.y[:9].T.reshape(-1, 3, 3)
            w = sol.y[9:].T
            runs.append({"method": meth, "setting": f"rtol={rtol:g}", "wall": wall, "ok": bool(sol.success),
                         "error_at_T": float(np.max(np.abs(R[-1] - ref_R))),
                         "energy_error": float(np.max(np.abs(top_energy_Rw(R, w) - E0)) / abs(E0)),
                         "so3_error": float(np.max(np.linalg.norm(np.swapaxes(R, -1, -2) @ R - np.eye(3), axis=(-2, -1))))})
    top = lagrange_top()
    for h in hs:
        n = int(round(T / h))
        stride = max(1, n // n_eval)
        t = time.perf_counter()
        tr = integrate(top, TOP_R0, v0=TOP_W0, h=h, n_steps=n, stride=stride)
        wall = time.perf_counter() - t
        R = tr.q
        runs.append({"method": "manifold_dirac", "setting": f"h={h:g}", "wall": wall, "ok": bool(np.all(tr.status == 0)),
                     "error_at_T": float(np.max(np.abs(R[-1] - ref_R))),
                     "energy_error": float(np.max(np.abs(tr.energy - tr.energy[0])) / abs(tr.energy[0])),
                     "so3_error": float(np.max(np.linalg.norm(np.swapaxes(R, -1, -2) @ R - np.eye(3), axis=(-2, -1))))})
    out["systems"]["Lagrange top, SO(3)"] = {"reference": f"DOP853 rtol=atol=1e-13 ({ref_wall:.1f} s)", "runs": runs}

    # knife edge on an inclined plane: exact solution
    exact = S.inclined_knife_edge_exact(np.array([T]), KNIFE_W, KNIFE_G, KNIFE_A)[0]
    E0 = knife_energy(0.0, 0.0, KNIFE_W)
    runs = []
    y0 = [0.0, 0.0, 0.0, 0.0, KNIFE_W]
    for meth, rtols in tols.items():
        for rtol in rtols:
            t = time.perf_counter()
            sol = solve_ivp(knife_rhs, (0, T), y0, method=meth, rtol=rtol, atol=rtol * 1e-2, t_eval=t_eval)
            wall = time.perf_counter() - t
            x, yy, th, v, w = sol.y
            err = max(abs(x[-1] - exact[0]), abs(yy[-1] - exact[1]), abs(_wrap(th[-1] - exact[2])))
            runs.append({"method": meth, "setting": f"rtol={rtol:g}", "wall": wall, "ok": bool(sol.success),
                         "error_at_T": float(err),
                         "energy_error": float(np.max(np.abs(knife_energy(x, v, w) - E0)) / abs(E0))})
    knife = S.inclined_knife_edge(KNIFE_M, KNIFE_J, KNIFE_G, KNIFE_A)
    for h in hs:
        n = int(round(T / h))
        stride = max(1, n // n_eval)
        t = time.perf_counter()
        tr = integrate(knife, np.eye(3), v0=np.array([KNIFE_W, 0.0, 0.0]), h=h, n_steps=n, stride=stride)
        wall = time.perf_counter() - t
        c = knife.Q.to_coordinates(tr.q[-1])
        err = max(abs(c[0] - exact[0]), abs(c[1] - exact[1]), abs(_wrap(c[2] - exact[2])))
        runs.append({"method": "manifold_dirac", "setting": f"h={h:g}", "wall": wall, "ok": bool(np.all(tr.status == 0)),
                     "error_at_T": float(err),
                     "energy_error": float(np.max(np.abs(tr.energy - tr.energy[0])) / abs(tr.energy[0]))})
    out["systems"]["inclined knife edge, SE(2)"] = {"reference": "exact solution", "runs": runs}
    return out


# ------------------------------------------------------------------ batch
def batch_cases(B, rng):
    top = S.heavy_top()
    R0 = SO3().exp(0.5 * rng.standard_normal((*B, 3)))
    w0 = np.array([1.0, 2.0, 3.0]) + 0.3 * rng.standard_normal((*B, 3))
    knife = S.inclined_knife_edge()
    th = rng.uniform(-np.pi, np.pi, B)
    pose = knife.Q.from_coordinates(np.stack([rng.standard_normal(B), rng.standard_normal(B), th], -1))
    v = np.stack([1.0 + 0.3 * rng.standard_normal(B), rng.standard_normal(B), np.zeros(B)], -1)
    return [("heavy top, SO(3) exp", top, R0, w0, BL.HeavyTop()),
            ("inclined knife edge, SE(2)", knife, pose, v, BL.SE2Vehicle("knife"))]


def section_batch(quick: bool) -> dict:
    sizes = [1, 16] if quick else [1, 16, 256, 4096]
    n_single = 10 if quick else 100
    rng = np.random.default_rng(0)
    rows = []
    singles = {}
    for name, sysm, q0, v0, bl in batch_cases((), rng):
        go, _ = library_stepper(sysm, q0, v0, 0.01)
        go(3)
        singles[name] = n_single / time_min(lambda: go(n_single), 3)
    for B in sizes:
        for name, sysm, q0, v0, bl in batch_cases((B,), rng):
            n = max(3, min(50, 20000 // B)) if not quick else 3
            go, box = library_stepper(sysm, q0, v0, 0.01)
            go(1)
            t_lib = time_min(lambda: go(n), 2 if B >= 256 else 3)
            bgo, _ = baseline_stepper(bl, sysm, q0, v0, 0.01)
            bgo(1)
            t_base = time_min(lambda: bgo(n), 2 if B >= 256 else 3)
            failed = int(np.sum(box[0].status != 0))
            rows.append({"system": name, "B": B, "n_steps": n, "traj_steps_per_s": B * n / t_lib,
                         "baseline_traj_steps_per_s": B * n / t_base,
                         "speedup_vs_single_loop": (B * n / t_lib) / singles[name],
                         "failed_members": failed})
    return {"single_loop_traj_steps_per_s": singles, "rows": rows}


# ----------------------------------------------------------------- memory
def section_memory(quick: bool, n: int | None = None) -> dict:
    n = n or (2000 if quick else 1_000_000)
    child = str(HERE / "memory_child.py")
    env = dict(os.environ, PYTHONPATH=str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    res = {}
    for label, steps, stride in (("interpreter + import", 10, 0), ("stride=1000", n, 1000), ("every step", n, 1)):
        cmd = [sys.executable, child, str(steps), str(stride)]
        out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
        res[label] = json.loads(out.stdout.strip().splitlines()[-1])
    base = res["interpreter + import"]["maxrss_kb"]
    rows = [{"run": k, "steps": v["steps"], "stored_points": v["stored"], "peak_rss_mb": v["maxrss_kb"] / 1024,
             "above_import_mb": (v["maxrss_kb"] - base) / 1024, "wall": v["wall"]} for k, v in res.items()]
    return {"n_steps": n, "system": "pendulum, h = 0.01", "rows": rows}


# ----------------------------------------------------------------- report
def _fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-2:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def report(out: Path, command: str) -> str:
    R = {s: json.loads((out / f"results-{s}.json").read_text()) for s in SECTIONS if (out / f"results-{s}.json").exists()}
    meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else {}
    L = ["# manifold_dirac benchmark results", ""]
    L += [f"Machine: {meta.get('machine', '?')}; Python {meta.get('python', '?')}, numpy {meta.get('numpy', '?')}, "
          f"scipy {meta.get('scipy', '?')}. Commands: " + "; ".join(f"`{c}`" for c in meta.get("commands", [command])), ""]
    L += ["Timings are minima over interleaved repeats on a noisy machine: read the ratios; "
          "absolute times are context only.", ""]
    if "steps" in R:
        r = R["steps"]
        L += ["## 1. Steps per second, one trajectory (symmetric scheme, midpoint rule, h = %g)" % r["h"], ""]
        L += ["| system | library (analytic) | library (automatic) | baseline (numpy) | library / baseline time "
              "| automatic / analytic time | max state difference |", "|---|---|---|---|---|---|---|"]
        for row in r["rows"]:
            L.append(f"| {row['system']} | {_fmt(row['steps_per_s_library'])} | {_fmt(row['steps_per_s_automatic'])} | "
                     f"{_fmt(row['steps_per_s_baseline'])} | **{row['ratio_library_to_baseline']:.2f}** | "
                     f"**{row['ratio_automatic_to_analytic']:.2f}** | {_fmt(row['max_state_difference'])} |")
        sp = r["scalar_python_pendulum"]
        L += ["", f"Scalar pure-Python pendulum loop: {_fmt(sp['steps_per_s'])} steps/s "
              f"(agrees with the library to {_fmt(sp['max_state_difference'])}). "
              "Not measured here (trep is not installable): the issue quotes trep's C-backed MidpointVI at about "
              "170,000 steps/s (pendulum) and 100,000 (double pendulum).", ""]
    if "wp" in R:
        r = R["wp"]
        L += [f"## 2. Work--precision over T = {r['T']:g}", ""]
        for name, d in r["systems"].items():
            L += [f"**{name}** (error at T against the {d['reference']})", "",
                  "| method | setting | wall time [s] | error at T | max relative energy error | max |R^T R - I| |",
                  "|---|---|---|---|---|---|"]
            for run in d["runs"]:
                L.append(f"| {run['method']} | {run['setting']} | {run['wall']:.3g} | {_fmt(run['error_at_T'])} | "
                         f"{_fmt(run['energy_error'])} | {_fmt(run.get('so3_error'))} |")
            L.append("")
    if "batch" in R:
        r = R["batch"]
        L += ["## 3. Batched integration (library `Integrator.step` on leading batch axes)", "",
              "Single-trajectory loop: " + ", ".join(f"{k}: {_fmt(v)} steps/s" for k, v in r["single_loop_traj_steps_per_s"].items()), "",
              "| system | B | trajectory-steps/s | speed-up vs single loop | baseline (numpy) trajectory-steps/s | failed members |",
              "|---|---|---|---|---|---|"]
        for row in r["rows"]:
            L.append(f"| {row['system']} | {row['B']} | {_fmt(row['traj_steps_per_s'])} | **{row['speedup_vs_single_loop']:.1f}** | "
                     f"{_fmt(row['baseline_traj_steps_per_s'])} | {row['failed_members']} |")
        L.append("")
    if "memory" in R:
        r = R["memory"]
        L += [f"## 4. Peak memory of a {r['n_steps']:,}-step run ({r['system']}; fresh interpreter, ru_maxrss)", "",
              "| run | steps | stored points | peak RSS [MB] | above interpreter + import [MB] | wall [s] |",
              "|---|---|---|---|---|---|"]
        for row in r["rows"]:
            L.append(f"| {row['run']} | {row['steps']:,} | {row['stored_points']:,} | {row['peak_rss_mb']:.1f} | "
                     f"{row['above_import_mb']:.1f} | {row['wall']:.1f} |")
        L.append("")
    text = "\n".join(L)
    (out / "results.md").write_text(text)
    figure(R, out / "performance.png")
    return text


def figure(R: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(12, 9))
    ax = axes[0, 0]
    if "steps" in R:
        rows = R["steps"]["rows"]
        y = np.arange(len(rows))
        ax.barh(y - 0.2, [r["ratio_library_to_baseline"] for r in rows], 0.4, label="library / numpy baseline")
        ax.barh(y + 0.2, [r["ratio_automatic_to_analytic"] for r in rows], 0.4, label="automatic / analytic partials")
        ax.axvline(2, color="k", ls="--", lw=0.8)
        ax.axvline(5, color="gray", ls=":", lw=0.8)
        ax.set_yticks(y, [r["system"] for r in rows], fontsize=8)
        ax.set_xlabel("time ratio per step (targets: 2, 5)")
        ax.legend(fontsize=8)
    for ax, name in zip((axes[0, 1], axes[1, 0]), ("Lagrange top, SO(3)", "inclined knife edge, SE(2)")):
        if "wp" not in R or name not in R["wp"]["systems"]:
            ax.set_visible(False)
            continue
        runs = R["wp"]["systems"][name]["runs"]
        for meth, mk in (("manifold_dirac", "o-"), ("RK45", "s--"), ("DOP853", "^--"), ("Radau", "v--")):
            pts = [(r["wall"], max(r["energy_error"], 1e-17)) for r in runs if r["method"] == meth]
            if pts:
                ax.loglog(*zip(*sorted(pts)), mk, label=meth)
        ax.set_xlabel("wall time [s]")
        ax.set_ylabel("max relative energy error")
        ax.set_title(f"{name}, T = {R['wp']['T']:g}", fontsize=9)
        ax.legend(fontsize=8)
    ax = axes[1, 1]
    if "batch" in R:
        for name in R["batch"]["single_loop_traj_steps_per_s"]:
            rows = [r for r in R["batch"]["rows"] if r["system"] == name]
            ax.loglog([r["B"] for r in rows], [r["traj_steps_per_s"] for r in rows], "o-", label=f"{name}")
            ax.loglog([r["B"] for r in rows], [r["baseline_traj_steps_per_s"] for r in rows], "x:", label=f"{name}, numpy baseline")
        ax.set_xlabel("batch size B")
        ax.set_ylabel("trajectory-steps / s")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a smoke run of every section in seconds (CI)")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, help="run only these sections (others' results are kept)")
    ap.add_argument("--skip", nargs="+", choices=SECTIONS, default=[], help="skip these sections")
    ap.add_argument("--memory-steps", type=int, default=None, help="steps of the memory runs (default 10^6; quick 2000)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    todo = [s for s in (args.only or SECTIONS) if s not in args.skip]
    command = "python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
    import scipy

    meta_path = args.out / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.update(machine=f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
                python=platform.python_version(), numpy=np.__version__, scipy=scipy.__version__)
    meta["commands"] = list(dict.fromkeys(meta.get("commands", []) + [command.strip()]))
    meta_path.write_text(json.dumps(meta, indent=1))
    fns = {"steps": section_steps, "wp": section_wp, "batch": section_batch, "memory": section_memory}
    for s in todo:
        t = time.perf_counter()
        res = fns[s](args.quick, args.memory_steps) if s == "memory" else fns[s](args.quick)
        res["quick"] = args.quick
        (args.out / f"results-{s}.json").write_text(json.dumps(res, indent=1))
        print(f"[{s}] done in {time.perf_counter() - t:.1f} s", file=sys.stderr)
    print(report(args.out, command))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
