"""Work--precision of the higher-order rules against DOP853: the heavy top over T = 1000.

Run (from the repository root; ~10 min on two shared cores)::

    PYTHONPATH=$PWD python benchmarks/higher_order.py            # full: T = 1000
    PYTHONPATH=$PWD python benchmarks/higher_order.py --quick    # T = 20, smoke run

For each method and setting (the library's ``midpoint``, ``gauss4`` and
``gauss6`` over several ``h``; ``solve_ivp`` DOP853 over several tolerances)
it records, on the heavy top of ``benchmarks/cases.py`` (``I = diag(1, 2,
3)``, ``mgl = 1``, ``chi = e3``, SO(3) ``exp``):

* the **energy error** ``max_t |H(t) - H(0)|`` over the run, with
  ``H = 1/2 p.I^{-1}p + mgl e3.(R chi)`` from the stored ``(R, p)`` (the
  library: every 50th step; DOP853: its own steps);
* the **global error at T**, ``|log(R_ref(T)^T R(T))|``, against a reference
  run of ``gauss6`` at a small step (its agreement with DOP853 at
  ``rtol = 1e-13`` is reported as the reference's own uncertainty);
* the **SO(3) defect** ``|R^T R - I|_max`` at T;
* **wall and CPU time** of a run, compile excluded (each library program is
  compiled by a first call whose time is reported separately), the methods
  timed **interleaved** (round r calls them in an order rotated by r) and
  the median of ``--repeats`` rounds kept: the machine's cores are shared,
  so single timings are noisy.

The results go to ``benchmarks/results/higher_order.json`` and the figure to
``docs/figures/higher_order_wp.png``; ``docs/performance.md`` quotes them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import manifold_dirac  # noqa: E402,F401
from manifold_dirac import integrate  # noqa: E402
from manifold_dirac import systems as S  # noqa: E402
from manifold_dirac._manifolds import SO3  # noqa: E402

I = np.array([1.0, 2.0, 3.0])
MGL, CHI, E3 = 1.0, np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0])
R0 = np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0])))
W0 = np.array([0.5, -0.2, 2.0])
STRIDE = 50


def energy(R, p):
    """``H(R, p)`` for arrays ``(..., 3, 3)``, ``(..., 3)``."""
    return 0.5 * np.sum(p * p / I, axis=-1) + MGL * np.einsum("i,...ij,j->...", E3, R, CHI)


def hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def rhs(_t, y):
    R, w = y[:9].reshape(3, 3), y[9:]
    torque = -MGL * np.cross(CHI, R.T @ E3)
    return np.concatenate([(R @ hat(w)).ravel(), (np.cross(I * w, w) + torque) / I])


def nearest_rotation(R):
    U, _, Vt = np.linalg.svd(np.asarray(R, float))
    return U @ Vt


def rot_error(Ra, Rb):
    """``|log(Ra^T Rb)|`` after projecting both onto SO(3) (DOP853 drifts off the group)."""
    return float(np.linalg.norm(np.asarray(SO3().log(nearest_rotation(Ra).T @ nearest_rotation(Rb)))))


def clock(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def interleaved(fns: dict, repeats: int) -> dict:
    """Median wall and CPU time of each call over ``repeats`` rounds, the call order rotated each round."""
    keys = list(fns)
    walls: dict = {k: [] for k in keys}
    cpus: dict = {k: [] for k in keys}
    for r in range(repeats):
        for k in keys[r % len(keys):] + keys[: r % len(keys)]:
            w, c, _ = clock(fns[k])
            walls[k].append(w)
            cpus[k].append(c)
    return {k: {"wall": statistics.median(walls[k]), "cpu": statistics.median(cpus[k])} for k in keys}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="T = 20, fewer settings (a smoke run)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(HERE / "results" / "higher_order.json"))
    ap.add_argument("--figure", default=str(ROOT / "docs" / "figures" / "higher_order_wp.png"))
    args = ap.parse_args()
    from scipy.integrate import solve_ivp

    T = 20.0 if args.quick else 1000.0
    top = S.heavy_top()
    hs = {"midpoint": [0.02, 0.01, 0.005], "gauss4": [0.1, 0.05, 0.025], "gauss6": [0.2, 0.1, 0.05, 0.025]}
    tols = [1e-6, 1e-8, 1e-10, 1e-12]
    if args.quick:
        hs = {k: v[:2] for k, v in hs.items()}
        tols = [1e-6, 1e-10]
        args.repeats = 1

    def lib(rule, h):
        n = int(round(T / h))
        return lambda: integrate(top, R0, v0=W0, h=h, n_steps=n, discrete_lagrangian=rule,
                                 stride=max(1, int(round(STRIDE * 0.01 / h))))

    def ivp(rtol):
        return lambda: solve_ivp(rhs, (0.0, T), np.concatenate([R0.ravel(), W0]), method="DOP853",
                                 rtol=rtol, atol=rtol)

    # the reference: gauss6 at a small step, checked against DOP853 at rtol 1e-13
    compile_s = {}
    for rule in hs:
        w, c, _ = clock(lambda rule=rule: integrate(top, R0, v0=W0, h=0.1, n_steps=2, discrete_lagrangian=rule))
        w2, c2, _ = clock(lambda rule=rule: integrate(top, R0, v0=W0, h=0.1, n_steps=2, discrete_lagrangian=rule))
        compile_s[rule] = {"wall": w - w2, "cpu": c - c2}
        print(f"[compile] {rule}: {w - w2:.2f} s wall, {c - c2:.2f} s CPU", flush=True)
    h_ref = 0.0125 if not args.quick else 0.025
    ref_tr = integrate(top, R0, v0=W0, h=h_ref, n_steps=int(round(T / h_ref)), discrete_lagrangian="gauss6",
                       stride=int(round(T / h_ref)))
    R_ref = np.asarray(ref_tr.q[-1])
    dop_ref = solve_ivp(rhs, (0.0, T), np.concatenate([R0.ravel(), W0]), method="DOP853", rtol=1e-13, atol=1e-13)
    ref_uncertainty = rot_error(R_ref, dop_ref.y[:9, -1].reshape(3, 3))
    print(f"[reference] gauss6 h = {h_ref} vs DOP853 rtol 1e-13 at T = {T:g}: {ref_uncertainty:.2e}", flush=True)

    calls = {("lib", rule, h): lib(rule, h) for rule, v in hs.items() for h in v}
    calls.update({("DOP853", "rtol", r): ivp(r) for r in tols})
    for key, f in calls.items():  # compile every program (one per rule and stride) before timing
        if key[0] == "lib":
            f()
    tm = interleaved(calls, args.repeats)
    H0 = float(energy(R0, I * W0))
    runs = []
    for key, f in calls.items():
        out = f()
        if key[0] == "lib":
            R, p = np.asarray(out.q), np.asarray(out.p)
            n_steps = int(round(T / key[2]))
            setting = f"{key[1]} h={key[2]:g}"
        else:
            R, w = out.y[:9].T.reshape(-1, 3, 3), out.y[9:].T
            p = I * w
            n_steps = int(out.nfev)
            setting = f"DOP853 rtol={key[2]:g}"
        run = {"method": key[1] if key[0] == "lib" else "DOP853", "setting": setting,
               "n_steps_or_nfev": n_steps,
               "energy_error": float(np.max(np.abs(energy(R, p) - H0))),
               "global_error": rot_error(R_ref, R[-1]),
               "so3_defect": float(np.max(np.abs(R[-1].T @ R[-1] - np.eye(3)))),
               "wall": tm[key]["wall"], "cpu": tm[key]["cpu"]}
        runs.append(run)
        print(f"{setting:24s} energy {run['energy_error']:.2e}  global {run['global_error']:.2e}  "
              f"SO(3) {run['so3_defect']:.1e}  wall {run['wall']:.3f} s  cpu {run['cpu']:.3f} s", flush=True)
    for r in runs:  # DOP853's wall time at the same accuracy (energy, global error)
        if r["method"] != "DOP853":
            for key in ("energy_error", "global_error"):
                w = dop853_wall_at(runs, key, r[key])
                r[f"DOP853_wall_at_same_{key}"] = w
                r[f"speedup_vs_DOP853_{key}"] = None if w is None else w / r["wall"]
            print(f"{r['setting']:24s} DOP853 wall at same energy error: {r['DOP853_wall_at_same_energy_error']}, "
                  f"same global error: {r['DOP853_wall_at_same_global_error']}", flush=True)
    result = {"T": T, "stride_energy": "every 0.5 time units for the library", "repeats": args.repeats,
              "compile": compile_s, "reference": {"h": h_ref, "vs_DOP853_1e-13": ref_uncertainty},
              "runs": runs, "crossings": crossings(runs)}
    print("[crossings]", json.dumps(result["crossings"], indent=1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    figure(result, args.figure)


def _curve(runs, method, key):
    pts = sorted((r["wall"], r[key]) for r in runs if r["method"] == method)
    return np.array([p[0] for p in pts]), np.array([p[1] for p in pts])


def dop853_wall_at(runs, key: str, target: float):
    """DOP853's wall time to reach ``target`` in ``key`` (log-log interpolation; None outside its range)."""
    pts = sorted((r[key], r["wall"]) for r in runs if r["method"] == "DOP853" and r[key] > 0)
    for (e1, w1), (e2, w2) in zip(pts, pts[1:]):
        if e1 <= target <= e2:
            t = (np.log(target) - np.log(e1)) / (np.log(e2) - np.log(e1))
            return float(np.exp(np.log(w1) + t * (np.log(w2) - np.log(w1))))
    return None


def crossings(runs) -> dict:
    """Where each rule's global-error curve meets DOP853's (log-log interpolation in wall time)."""
    out = {}
    wd, ed = _curve(runs, "DOP853", "global_error")
    for rule in ("midpoint", "gauss4", "gauss6"):
        wl, el = _curve(runs, rule, "global_error")
        if len(wl) < 2 or len(wd) < 2:
            continue
        grid = np.exp(np.linspace(np.log(max(wl.min(), wd.min())), np.log(min(wl.max(), wd.max())), 200))
        if grid.size == 0 or grid[0] >= grid[-1]:
            out[rule] = "wall-time ranges do not overlap"
            continue
        fl = np.interp(np.log(grid), np.log(wl), np.log(el))
        fd = np.interp(np.log(grid), np.log(wd), np.log(ed))
        sign = np.sign(fl - fd)
        idx = np.nonzero(np.diff(sign))[0]
        out[rule] = ([{"wall": float(grid[i]), "error": float(np.exp(fl[i]))} for i in idx]
                     or ("library below DOP853 over the common range" if sign[0] < 0 else
                         "DOP853 below the library over the common range"))
    return out


def figure(result, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    style = {"midpoint": "o-", "gauss4": "s-", "gauss6": "D-", "DOP853": "^--"}
    for ax, key, label in ((axes[0], "energy_error", "max |H(t) - H(0)|"),
                           (axes[1], "global_error", "|log(R_ref^T R)| at T")):
        for m, st in style.items():
            w, e = _curve(result["runs"], m, key)
            if len(w):
                ax.loglog(w, np.maximum(e, 1e-17), st, label=m)
        ax.set_xlabel("wall time per run [s] (compile excluded)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", lw=0.3)
    axes[0].legend()
    fig.suptitle(f"heavy top, T = {result['T']:g}: work-precision (2 shared cores: timings noisy)")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
