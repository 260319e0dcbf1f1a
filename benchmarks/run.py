"""The benchmark suite of the compiled engine: ``python benchmarks/run.py [--quick] [--out DIR] [--only S ...]``.

Sections (``docs/performance.md`` lists the scripts that regenerate its numbers; this is the wider suite):

``step``     one trajectory (B = 1): microseconds per step of ``integrate(...)``
             over 10^5 steps with ``stride=1000`` (storage does not count) and
             with ``stride=1``, against the hand-specialized Numba floor of the
             same scheme (``benchmarks/numba_floor.py``: heavy top, free knife
             edge) and, for context, the numpy baselines of the numpy engine
             (``benchmarks/baselines.py``); the inclined knife edge (Newton work
             at every step) has no floor. The implementations are checked to
             agree (same equations, same Newton rule).
``batch``    trajectory-steps/s of ``B`` trajectories in one ``integrate`` call
             (batched ``q0``/``v0``), B = 1, 64, 4096, against the floor's
             ``prange`` loop (2 threads, and 1 thread).
``wp``       work--precision at T = 2 against ``scipy.integrate.solve_ivp``
             (DOP853, RK45): error at T versus wall time over several h /
             tolerances; wall time at matched accuracy (error 1e-3) by log-log
             interpolation; heavy top (reference ``systems.heavy_top_reference``)
             and the rolling disk (exact, ``systems.rolling_disk_exact``).
``compile``  compile time per system in fresh interpreters: first call minus
             steady-state call, with a cold and then a warm persistent
             compilation cache (``MANIFOLD_DIRAC_JAX_CACHE``).
``memory``   peak RSS (``resource.getrusage``) of a 10^6-step run storing every
             point, and with a stride, each in a fresh interpreter.

Timing: wall time by ``time.perf_counter`` and CPU time by
``time.process_time`` (the machine may be shared: CPU time is the steadier
number for one-threaded code; the Numba ``prange`` floor uses two threads, so
its CPU time is up to twice its wall time). Every timing is the **median**
over interleaved repeats (the competitors of a row alternate, in rotating
order); ratios are taken within one run. Compile time is always reported
separately and never inside a run time: each library timing follows a first
call of the same compiled program. This process runs with the persistent
compilation cache in a fresh temporary directory (unless
``MANIFOLD_DIRAC_JAX_CACHE`` is set), so first calls here are real compiles;
the memory children share that directory (they load, not compile).

Every section writes ``results-<section>.json`` into ``--out``; the report
(``results.md``, ``performance.png``) is rebuilt from every result file
present, so sections may be run separately.
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The suite's own first calls are real compiles: a fresh persistent-cache
# directory (section "compile" measures the cache itself). Set before the
# library is imported (it reads the variable at import).
SUITE_CACHE = os.environ.get("MANIFOLD_DIRAC_JAX_CACHE")
if SUITE_CACHE is None:
    SUITE_CACHE = tempfile.mkdtemp(prefix="md-bench-jax-")
    os.environ["MANIFOLD_DIRAC_JAX_CACHE"] = SUITE_CACHE
    atexit.register(shutil.rmtree, SUITE_CACHE, True)

from benchmarks import baselines as BL  # noqa: E402
from benchmarks.cases import CASES, batch_initial, pose_coordinates, system  # noqa: E402
from manifold_dirac import integrate  # noqa: E402
from manifold_dirac import systems as S  # noqa: E402

try:  # the floor needs the optional 'bench' extra (numba)
    from benchmarks import numba_floor as NF
except ImportError as exc:  # pragma: no cover - depends on the environment
    NF = None
    NF_MISSING = f"{type(exc).__name__}: {exc}"
else:
    NF_MISSING = None

SECTIONS = ("step", "batch", "wp", "compile", "memory")
TARGET_ERROR = 1e-3  # "matched accuracy": error at T = 2


# ---------------------------------------------------------------- timing
def clock(fn):
    """``(wall, cpu, fn())``: ``perf_counter`` and ``process_time`` around one call."""
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w, time.process_time() - c, out


def interleaved(fns: dict, repeats: int) -> dict:
    """Median wall and CPU time of each function over ``repeats`` interleaved rounds.

    Round ``r`` calls the functions in an order rotated by ``r``, so that a
    burst of load from other processes falls on all of them alike.
    """
    names = list(fns)
    walls: dict = {k: [] for k in names}
    cpus: dict = {k: [] for k in names}
    for r in range(repeats):
        j = r % len(names)
        for k in names[j:] + names[:j]:
            w, c, _ = clock(fns[k])
            walls[k].append(w)
            cpus[k].append(c)
    return {k: {"wall": statistics.median(walls[k]), "cpu": statistics.median(cpus[k]), "wall_min": min(walls[k]),
                "walls": walls[k], "cpus": cpus[k]} for k in names}


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # pragma: no cover
        return []


def _diff(a, b) -> float:
    """Max-norm difference of two points (arrays or tuples of arrays)."""
    if isinstance(a, (tuple, list)):
        return max(_diff(x, y) for x, y in zip(a, b))
    return float(np.max(np.abs(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))))


def _last(q):
    return tuple(np.asarray(x)[-1] for x in q) if isinstance(q, tuple) else np.asarray(q)[-1]


# ----------------------------------------------------------------- floor
def floor_fns(name: str):
    """``(make_state, run, run_batch)`` of the Numba floor for case ``name``, or None."""
    c = CASES[name]
    if NF is None or c.floor is None:
        return None
    return getattr(NF, f"{c.floor}_state"), getattr(NF, f"run_{c.floor}"), getattr(NF, f"run_{c.floor}_batch")


def _floor_threads() -> int:
    import numba

    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    return numba.get_num_threads()


def _one_thread(fn):
    import numba

    def go():
        k = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            return fn()
        finally:
            numba.set_num_threads(k)

    return go


def baseline_run(name: str, tr, n: int):
    """The numpy baseline (``benchmarks/baselines.py``) from the library's initial state: ``(state, wall)``."""
    c = CASES[name]
    if c.baseline is None:
        return None, None
    bl = c.baseline(c.h)
    sysm = system(name)
    q0 = tuple(np.asarray(x, dtype=float) for x in c.q0) if isinstance(c.q0, tuple) else np.asarray(c.q0, dtype=float)
    state = (q0, np.asarray(tr.p[0], dtype=float), c.h * np.asarray(c.v0, dtype=float), np.zeros(sysm.n_constraints))
    w, _, out = clock(lambda: BL.run(bl, state, n))
    return out, w


# ------------------------------------------------------------------ step
def section_step(quick: bool) -> dict:
    n = 2_000 if quick else 100_000
    strides = (1,) if quick else (1000, 1)
    rep = 3 if quick else 7
    n_check = 50 if quick else 200
    n_base = 20 if quick else 200
    threads = _floor_threads() if NF is not None else 0
    rows = []
    names = ("heavy_top", "knife_edge") if quick else ("heavy_top", "knife_edge", "inclined_knife_edge")
    for name in names:
        c, sysm = CASES[name], system(name)
        fl = floor_fns(name)
        # agreement: the same scheme, the same Newton rule
        w_first1, _, tr = clock(lambda: integrate(sysm, c.q0, v0=c.v0, h=c.h, n_steps=n_check))
        agree = {}
        floor_first = None
        if fl is not None:
            make, run, _ = fl
            w0 = time.perf_counter()
            (qf, pf, _), _, done = run(make(c.q0, c.v0, c.h), c.h, n_check)
            floor_first = time.perf_counter() - w0
            assert done == n_check, f"{name}: the floor failed at step {done}"
            agree["floor"] = max(_diff(_last(tr.q), qf), _diff(tr.p[-1], pf))
        bstate, bwall = baseline_run(name, tr, n_check)
        if bstate is not None:
            agree["numpy_baseline"] = max(_diff(_last(tr.q), bstate[0]), _diff(tr.p[-1], bstate[1]))
            _, bwall = baseline_run(name, tr, n_base)
        for stride in strides:
            lib = partial(integrate, sysm, c.q0, v0=c.v0, h=c.h, n_steps=n, stride=stride)
            first_wall, first_cpu, trn = clock(lib) if stride != 1 else (None, None, None)
            if trn is None:  # stride 1 compiled by the agreement run above
                first_wall = w_first1
                trn = lib()
            fns = {"library": lib, "library_n10": partial(integrate, sysm, c.q0, v0=c.v0, h=c.h, n_steps=10,
                                                          stride=stride)}
            floor_its = None
            if fl is not None:
                make, run, _ = fl
                st = make(c.q0, c.v0, c.h)
                _, its, done = run(st, c.h, n)
                assert done == n, f"{name}: the floor failed at step {done}"
                floor_its = its / n
                fns["floor"] = partial(run, st, c.h, n)
            tm = interleaved(fns, rep)
            lw, lc = tm["library"]["wall"], tm["library"]["cpu"]
            row = {
                "name": name, "system": c.label, "h": c.h, "n_steps": n, "stride": stride,
                "library_us_per_step": 1e6 * lw / n, "library_cpu_us_per_step": 1e6 * lc / n,
                "library_call_n10_ms": 1e3 * tm["library_n10"]["wall"],
                "library_first_call_s": first_wall,
                "library_compile_s": None if first_wall is None else first_wall - (
                    tm["library_n10"]["wall"] if stride == 1 else lw),
                "library_newton_iterations_per_step": float(np.mean(trn.iterations)),
                "iterations_sampled": stride != 1,
                "floor_us_per_step": None, "floor_cpu_us_per_step": None, "ratio_wall": None, "ratio_cpu": None,
                "floor_newton_iterations_per_step": floor_its, "floor_first_call_s": floor_first,
                "numpy_baseline_us_per_step": None if bwall is None else 1e6 * bwall / n_base,
                "max_state_difference": agree, "n_check": n_check, "timings": tm,
            }
            if fl is not None:
                fw, fc = tm["floor"]["wall"], tm["floor"]["cpu"]
                row.update(floor_us_per_step=1e6 * fw / n, floor_cpu_us_per_step=1e6 * fc / n,
                           ratio_wall=lw / fw, ratio_cpu=lc / fc)
            rows.append(row)
            print(f"[step] {name} stride={stride}: {row['library_us_per_step']:.2f} us/step"
                  + (f", floor {row['floor_us_per_step']:.3f}, ratio {row['ratio_wall']:.1f}" if fl else ""),
                  file=sys.stderr)
    return {"rows": rows, "repeats": rep, "floor_threads": threads, "floor_missing": NF_MISSING}


# ----------------------------------------------------------------- batch
def section_batch(quick: bool) -> dict:
    sizes = (2,) if quick else (1, 64, 4096)
    stride = 10
    rep = 2 if quick else 5
    threads = _floor_threads() if NF is not None else 0
    rng = np.random.default_rng(0)
    rows = []
    for B in sizes:
        n = 50 if quick else max(500, int(round(100_000 / B / stride)) * stride)
        for name in ("heavy_top",) if quick else ("heavy_top", "knife_edge"):
            c, sysm = CASES[name], system(name)
            q0, v0 = batch_initial(name, B, rng)
            lib = partial(integrate, sysm, q0, v0=v0, h=c.h, n_steps=n, stride=stride)
            first_wall, first_cpu, tr = clock(lib)
            fns = {"library": lib}
            fl = floor_fns(name)
            floor_diff = None
            if fl is not None:
                make, _, run_batch = fl
                st = make(q0, v0, c.h)
                (qf, _, _), _, done = run_batch(st, c.h, n)
                assert np.all(done == n), f"{name}: the floor failed in a batch member"
                floor_diff = _diff(np.asarray(tr.q)[-1], qf)
                fns["floor"] = partial(run_batch, st, c.h, n)
                fns["floor_1thread"] = _one_thread(partial(run_batch, st, c.h, n))
            tm = interleaved(fns, rep if B < 4096 else max(2, rep - 2))
            lw = tm["library"]["wall"]
            row = {"name": name, "system": c.label, "B": B, "n_steps": n, "stride": stride,
                   "traj_steps_per_s": B * n / lw, "cpu_traj_steps_per_s": B * n / tm["library"]["cpu"],
                   "library_first_call_s": first_wall, "library_compile_s": first_wall - lw,
                   "failed_members": int(np.sum(np.asarray(tr.status) != 0)),
                   "floor_traj_steps_per_s": None, "floor_1thread_traj_steps_per_s": None, "ratio_floor_to_library": None,
                   "max_final_q_difference_to_floor": floor_diff, "timings": tm}
            if fl is not None:
                best = min(tm["floor"]["wall"], tm["floor_1thread"]["wall"])
                row.update(floor_traj_steps_per_s=B * n / tm["floor"]["wall"],
                           floor_1thread_traj_steps_per_s=B * n / tm["floor_1thread"]["wall"],
                           ratio_floor_to_library=lw / best)
            rows.append(row)
            print(f"[batch] {name} B={B}: {row['traj_steps_per_s']:.3g} traj-steps/s"
                  + (f", floor {row['floor_traj_steps_per_s']:.3g}" if fl else ""), file=sys.stderr)
    return {"rows": rows, "repeats": rep, "floor_threads": threads, "floor_missing": NF_MISSING}


# -------------------------------------------------------------------- wp
def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def top_rhs(inertia, mgl, chi):
    """The heavy top in first-order form ``y = (R, w)`` (12 numbers), as in ``heavy_top_reference``."""
    I, chi, e3 = np.asarray(inertia, float), np.asarray(chi, float), np.array([0.0, 0.0, 1.0])

    def f(_t, y):
        R, w = y[:9].reshape(3, 3), y[9:]
        torque = -mgl * np.cross(chi, R.T @ e3)
        return np.concatenate([(R @ _hat(w)).ravel(), (np.cross(I * w, w) + torque) / I])

    return f


def disk_rhs(radius):
    """The vertical rolling disk reduced to ``y = (x, y, theta, phi, omega, phi')``: rates constant."""

    def f(_t, y):
        s = radius * y[5]
        return [s * math.cos(y[2]), s * math.sin(y[2]), y[4], y[5], 0.0, 0.0]

    return f


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def wall_at(runs: list, target: float, key: str = "wall"):
    """Wall time at error ``target``: log-log interpolation between the runs that bracket it.

    Returns ``(wall, how)``: ``how`` is ``"interpolated"``, ``"upper bound"``
    (every run is more accurate than the target: the cheapest one's time) or
    ``"not reached"`` (``wall`` None).
    """
    pts = sorted((r["error_at_T"], r[key]) for r in runs if r["ok"] and np.isfinite(r["error_at_T"]))
    if not pts:
        return None, "not reached"
    if pts[0][0] > target:
        return None, "not reached"
    if all(e <= target for e, _ in pts):
        return min(w for _, w in pts), "upper bound"
    best = None
    for (e1, w1), (e2, w2) in zip(pts, pts[1:]):  # e1 <= target < e2 brackets
        if e1 <= target <= e2 and e1 > 0 and e1 != e2:
            s = (math.log(target) - math.log(e1)) / (math.log(e2) - math.log(e1))
            w = math.exp(math.log(w1) + s * (math.log(w2) - math.log(w1)))
            best = w if best is None else min(best, w)
    if best is None:  # the target only reached by runs whose neighbours do not bracket it
        best = min(w for e, w in pts if e <= target)
    return best, "interpolated"


def _wp_system(label, lib_case, hs, error_of, rhs, y0, tols, T, rep, reference):
    """Runs of the library (one per h) and of solve_ivp (one per method and rtol), timed interleaved."""
    from scipy.integrate import solve_ivp

    c, sysm = lib_case
    first = {}
    lib_calls = {}
    loops: dict = {}

    def lib_call(h, n, key):
        tr = integrate(sysm, c.q0, v0=c.v0, h=h, n_steps=n)
        loops.setdefault(key, []).append(tr.meta["wall_time"])
        return tr

    for h in hs:
        n = int(round(T / h))
        key = ("manifold_dirac", f"h={h:g}", n)
        lib_calls[key] = partial(lib_call, h, n, key)
    w, _, _ = clock(next(iter(lib_calls.values())))  # compile (or reuse) the stride-1 program
    first["library_first_call_s"] = w
    ivp_calls = {(m, f"rtol={r:g}", r): partial(solve_ivp, rhs, (0.0, T), y0, method=m, rtol=r, atol=r)
                 for m, rs in tols.items() for r in rs}
    calls = {**lib_calls, **ivp_calls}
    tm = interleaved({k: v for k, v in calls.items()}, rep)
    runs = []
    for key, f in calls.items():
        out = f()
        meth, setting, extra = key
        if meth == "manifold_dirac":
            err = error_of(out)
            runs.append({"method": meth, "setting": setting, "n_steps": extra, "ok": bool(np.all(out.status == 0)),
                         "error_at_T": err, "loop_wall": statistics.median(loops[key]), "wall": tm[key]["wall"],
                         "cpu": tm[key]["cpu"]})
        else:
            err = error_of(out.y[:, -1])
            runs.append({"method": meth, "setting": setting, "nfev": int(out.nfev), "ok": bool(out.success),
                         "error_at_T": err, "wall": tm[key]["wall"], "cpu": tm[key]["cpu"]})
    steady = min(r["wall"] for r in runs if r["method"] == "manifold_dirac")
    first["library_compile_s"] = first["library_first_call_s"] - steady
    matched = {}
    for m in ["manifold_dirac", *tols]:
        mine = [r for r in runs if r["method"] == m]
        matched[m] = dict(zip(("wall", "how"), wall_at(mine, TARGET_ERROR)))
        matched[m]["cpu"], matched[m]["cpu_how"] = wall_at(mine, TARGET_ERROR, "cpu")
    return {"label": label, "reference": reference, "runs": runs, "matched": matched, **first}


def section_wp(quick: bool) -> dict:
    T = 2.0
    rep = 1 if quick else 15
    if quick:
        hs = [0.1, 0.02]
        tols = {"DOP853": [1e-4], "RK45": [1e-4]}
    else:
        hs = [0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001]
        tols = {"DOP853": [10.0**-k for k in range(2, 12)], "RK45": [10.0**-k for k in range(2, 10)]}
    out = {"T": T, "target_error": TARGET_ERROR, "repeats": rep, "systems": {}}

    # heavy top: the tight DOP853 reference of the library's tests
    c = CASES["heavy_top"]
    ref = S.heavy_top_reference(T, np.asarray(c.q0), c.v0)

    def top_error(x):
        R = np.asarray(x.q)[-1] if hasattr(x, "q") else np.asarray(x)[:9].reshape(3, 3)
        return float(np.max(np.abs(R - ref)))

    y0 = np.concatenate([np.asarray(c.q0).ravel(), c.v0])
    out["systems"]["heavy_top"] = _wp_system(
        c.label, (c, system("heavy_top")), hs, top_error, top_rhs((1.0, 2.0, 3.0), 1.0, (0.0, 0.0, 1.0)), y0, tols, T,
        rep, "systems.heavy_top_reference (DOP853, rtol = atol = 1e-12); error = max |R(T) - R_ref(T)|")

    # rolling disk: exact
    c = CASES["rolling_disk"]
    radius, rate_th, rate_phi = 0.5, float(c.v0[0]), float(c.v0[3])
    exact = S.rolling_disk_exact(np.array([T]), radius, rate_th, rate_phi)[0]

    def disk_error(x):
        if hasattr(x, "q"):
            xyz = pose_coordinates(np.asarray(x.q[0])[-1])
            phi = float(np.asarray(x.q[1])[-1][0])
        else:
            xyz, phi = np.asarray(x[:3]), float(x[3])
        return float(max(abs(xyz[0] - exact[0]), abs(xyz[1] - exact[1]), abs(_wrap(xyz[2] - exact[2])),
                         abs(phi - exact[3])))

    y0 = np.array([0.0, 0.0, 0.0, 0.0, rate_th, rate_phi])
    out["systems"]["rolling_disk"] = _wp_system(
        c.label, (c, system("rolling_disk")), hs, disk_error, disk_rhs(radius), y0, tols, T, rep,
        "systems.rolling_disk_exact; error = max over (x, y, theta, phi) at T; solve_ivp on the reduced "
        "equations (x, y, theta, phi, omega, phi')")
    for k, d in out["systems"].items():
        print(f"[wp] {k}: matched-accuracy wall " + ", ".join(
            f"{m} {v['wall'] if v['wall'] is None else round(v['wall'] * 1e3, 2)} ms ({v['how']})"
            for m, v in d["matched"].items()), file=sys.stderr)
    return out


# --------------------------------------------------------------- compile
def _child(script: str, args: list[str], cache: str) -> dict:
    env = dict(os.environ, MANIFOLD_DIRAC_JAX_CACHE=cache)
    proc = subprocess.run([sys.executable, str(HERE / script), *args], capture_output=True, text=True, env=env,
                          cwd=str(ROOT))
    if proc.returncode != 0:
        raise RuntimeError(f"{script} {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def section_compile(quick: bool) -> dict:
    """One empty cache directory per system (structurally identical systems, e.g. the free and the
    inclined knife edge, compile to the same program and would share an entry): cold, a fresh process on
    it; warm, a second fresh process on the same directory (a copied directory does not hit: JAX's cache
    key includes options that name the directory)."""
    flags = ["--no-warmup"] if quick else []
    names = ["pendulum"] if quick else [
        "pendulum", "double_pendulum", "heavy_top", "heavy_top_cayley", "knife_edge", "inclined_knife_edge",
        "chaplygin_sled", "rolling_disk", "rolling_ball"]
    colds, warms = [], []
    entries = 0
    with tempfile.TemporaryDirectory(prefix="md-bench-compile-") as top:
        for name in names:
            d = Path(top) / name
            d.mkdir()
            for runs in (colds, warms) if not quick else (colds,):  # the smoke run: cold only (CPU budget)
                w, _, r = clock(lambda: _child("compile_child.py", [*flags, name], str(d)))
                r["process_wall"] = w
                runs.append(r)
            entries += sum(1 for f in d.iterdir() if f.name.endswith("-cache"))

    def merge(runs):
        if not runs:
            return {"import_wall": None, "warmup": None, "process_wall": None, "rows": [None] * len(names)}
        return {"import_wall": statistics.median(c["import_wall"] for c in runs),
                "warmup": None if runs[0]["warmup"] is None else
                {"compile_wall": statistics.median(c["warmup"]["compile_wall"] for c in runs)},
                "process_wall": sum(c["process_wall"] for c in runs), "rows": [c["rows"][0] for c in runs]}

    cold, warm = merge(colds), merge(warms)
    rows = []
    for rc, rw in zip(cold["rows"], warm["rows"]):
        rw = rw or {"first": {"wall": None, "cache_retrieval": None, "trace": None, "lower": None}, "compile_wall": None}
        rows.append({"name": rc["name"], "system": rc["system"], "cold_first_call_s": rc["first"]["wall"],
                     "cold_compile_s": rc["compile_wall"], "cold_compile_cpu_s": rc["compile_cpu"],
                     "trace_s": rc["first"]["trace"], "lower_s": rc["first"]["lower"],
                     "backend_compile_s": rc["first"]["backend_compile"],
                     "warm_first_call_s": rw["first"]["wall"], "warm_compile_s": rw["compile_wall"],
                     "warm_cache_retrieval_s": rw["first"]["cache_retrieval"], "warm_trace_s": rw["first"]["trace"],
                     "warm_lower_s": rw["first"]["lower"], "steady_call_ms": 1e3 * rc["steady_wall"]})
        print(f"[compile] {rc['name']}: cold {rows[-1]['cold_compile_s']:.2f} s, warm {_fmt(rows[-1]['warm_compile_s'])} s",
              file=sys.stderr)
    return {"rows": rows, "cold": {k: cold[k] for k in ("import_wall", "warmup", "process_wall")},
            "warm": {k: warm[k] for k in ("import_wall", "warmup", "process_wall")}, "cache_files": entries,
            "n_steps_per_call": 10}


# ---------------------------------------------------------------- memory
def section_memory(quick: bool, n: int | None = None) -> dict:
    n = n or (10_000 if quick else 1_000_000)
    # the short runs first: they compile what the suite's cache lacks, so that the long runs load it
    plan = [] if quick else [("heavy top, stride 1000, n/100", "heavy_top", n // 100, 1000),
                             ("heavy top, every point, n/10", "heavy_top", n // 10, 1),
                             ("pendulum, every point, n/10", "pendulum", n // 10, 1)]
    if quick:  # the smoke run: the cheapest system to compile (CPU budget)
        plan = [("pendulum, stride 1000", "pendulum", n, 1000), ("pendulum, every point", "pendulum", n, 1)]
    else:
        plan += [("heavy top, stride 1000", "heavy_top", n, 1000), ("heavy top, every point", "heavy_top", n, 1),
                 ("pendulum, every point", "pendulum", n, 1)]
    rows = []
    for label, name, steps, stride in plan:
        r = _child("memory_child.py", [name, str(steps), str(stride)], SUITE_CACHE)
        r["run"] = label
        rows.append(r)
        print(f"[memory] {label}: {r['maxrss_kb'] / 1024:.0f} MB peak", file=sys.stderr)
    for r in rows:
        r.update(peak_rss_mb=r["maxrss_kb"] / 1024, import_mb=r["maxrss_import_kb"] / 1024,
                 above_import_mb=(r["maxrss_kb"] - r["maxrss_import_kb"]) / 1024,
                 warmup_peak_mb=r["maxrss_warm_kb"] / 1024,
                 above_warmup_mb=max(0, r["maxrss_kb"] - r["rss_warm_kb"]) / 1024,
                 bytes_per_stored_point=None if not r["stored"] else
                 1024 * max(0, r["maxrss_kb"] - r["rss_warm_kb"]) / r["stored"])
    return {"n_steps": n, "rows": rows}


# ---------------------------------------------------------------- report
def _fmt(x, digits=3):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-2:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}"


def _status(ok) -> str:
    return "-" if ok is None else ("met" if ok else "**not met**")


def targets(R: dict) -> list[tuple[str, str, str]]:
    """``(target, measured, status)`` rows of the issue's performance targets, from the results present."""
    out = []
    if "step" in R:
        rows = [r for r in R["step"]["rows"] if r["ratio_wall"] is not None]
        main = [r for r in rows if r["stride"] == max(x["stride"] for x in rows if x["name"] == r["name"])]
        if main:
            txt = "; ".join(f"{r['name']} {r['ratio_wall']:.1f}x (CPU {r['ratio_cpu']:.1f}x, stride {r['stride']})"
                            for r in main)
            out.append(("per step at B = 1 within 5x of the Numba floor", txt,
                        _status(all(r["ratio_wall"] <= 5 for r in main))))
    if "batch" in R:
        goal = {"knife_edge": 1e6, "heavy_top": 3e5}
        big = [r for r in R["batch"]["rows"] if r["B"] == 4096]
        if big:
            txt = "; ".join(f"{r['name']} {_fmt(r['traj_steps_per_s'])} (goal {_fmt(goal[r['name']])})" for r in big)
            out.append(("B = 4096: knife edge >= 1 M, heavy top >= 300 k trajectory-steps/s", txt,
                        _status(all(r["traj_steps_per_s"] >= goal[r["name"]] for r in big))))
    if "wp" in R:
        parts, oks = [], []
        for k, d in R["wp"]["systems"].items():
            lib, dop = d["matched"]["manifold_dirac"], d["matched"]["DOP853"]
            if lib["wall"] is None or dop["wall"] is None:
                parts.append(f"{k}: library {lib['how']}, DOP853 {dop['how']}")
                oks.append(False if lib["wall"] is None else None)
                continue
            txt = (f"{k}: library {1e3 * lib['wall']:.3g} ms vs DOP853 {1e3 * dop['wall']:.3g} ms wall "
                   f"({lib['wall'] / dop['wall']:.2g}x)")
            ok = lib["wall"] <= dop["wall"]
            if lib.get("cpu") is not None and dop.get("cpu") is not None:
                txt += f", {1e3 * lib['cpu']:.3g} vs {1e3 * dop['cpu']:.3g} ms CPU ({lib['cpu'] / dop['cpu']:.2g}x)"
                ok = ok and lib["cpu"] <= dop["cpu"]  # met only if wall and CPU time agree
            parts.append(txt)
            oks.append(ok)
        out.append((f"at matched accuracy (error {R['wp']['target_error']:g} at T = {R['wp']['T']:g}) wall time "
                    "<= DOP853 (heavy top, rolling disk; met only if on wall and on CPU time)", "; ".join(parts),
                    _status(None if any(o is None for o in oks) else all(oks))))
    if "compile" in R:
        rows = R["compile"]["rows"]
        worst = max(rows, key=lambda r: r["cold_compile_s"])
        warm = max((r["warm_compile_s"] for r in rows if r["warm_compile_s"] is not None), default=None)
        out.append(("compile <= 3 s per system (first call - steady call, fresh process)",
                    f"cold cache: {min(r['cold_compile_s'] for r in rows):.2f}-{worst['cold_compile_s']:.2f} s wall, "
                    f"{min(r['cold_compile_cpu_s'] for r in rows):.2f}-{max(r['cold_compile_cpu_s'] for r in rows):.2f} s "
                    f"CPU (worst {worst['name']}); warm cache: up to {_fmt(warm)} s",
                    _status(worst["cold_compile_s"] <= 3)))
    if "memory" in R:
        n = R["memory"]["n_steps"]
        full = [r for r in R["memory"]["rows"] if r["steps"] == n]
        every = next((r for r in full if r["stride"] == 1), None)
        strd = next((r for r in full if r["stride"] == 1000), None)
        if every and strd:
            flat = next((r for r in R["memory"]["rows"] if r["stride"] == 1000 and r["steps"] < n
                         and r["name"] == strd["name"]), None)
            flat_txt = ""
            flat_ok = strd["above_warmup_mb"] <= 5
            if flat:
                flat_txt = f" (at n/100: adds {flat['above_warmup_mb']:.1f} MB, peak {flat['peak_rss_mb']:.0f} MB)"
                flat_ok = flat_ok and abs(strd["above_warmup_mb"] - flat["above_warmup_mb"]) <= 5
            out.append((f"{n:,} steps storing every point <= 200 MB (judged on what the run adds to the resident set "
                        "after a 10-step run of the same compiled program); flat with a stride",
                        f"{every['run']}: the run adds {every['above_warmup_mb']:.0f} MB (process peak "
                        f"{every['peak_rss_mb']:.0f} MB, {every['above_import_mb']:.0f} MB above interpreter + import; "
                        f"result arrays {every['trajectory_mb']:.0f} MB); stride 1000: the run adds "
                        f"{strd['above_warmup_mb']:.1f} MB, peak {strd['peak_rss_mb']:.0f} MB{flat_txt}",
                        _status(every["above_warmup_mb"] <= 200 and flat_ok)))
    return out


def report(out: Path) -> str:
    R = {s: json.loads((out / f"results-{s}.json").read_text()) for s in SECTIONS if (out / f"results-{s}.json").exists()}
    meta = json.loads((out / "meta.json").read_text()) if (out / "meta.json").exists() else {}
    L = ["# manifold_dirac benchmark results (compiled engine)", ""]
    L += [f"Machine: {meta.get('machine', '?')}; Python {meta.get('python', '?')}, jax {meta.get('jax', '?')}, "
          f"numpy {meta.get('numpy', '?')}, scipy {meta.get('scipy', '?')}, numba {meta.get('numba', '-')}; "
          f"library at commit {meta.get('library_commit', '?')}"
          + (f" with local changes to {', '.join(meta['library_modified_files'])}"
             if meta.get("library_modified_files") else "")
          + ". Commands: " + "; ".join(f"`{c}`" for c in meta.get("commands", [])), ""]
    loads = {s: R[s].get("load_average") for s in R}
    L += ["Medians over interleaved repeats; wall time (`perf_counter`) and CPU time (`process_time`). "
          "Compile time is reported separately and is in no run time. Load average (1, 5, 15 min) at the start "
          "of each section: " + ", ".join(f"{s} {v}" for s, v in loads.items() if v) + ".", ""]
    if any(R[s].get("quick") for s in R):
        L += ["**Quick mode** (a smoke run): the numbers are not measurements.", ""]
    T = targets(R)
    if T:
        L += ["## Targets", "", "| target | measured | status |", "|---|---|---|"]
        L += [f"| {a} | {b} | {c} |" for a, b, c in T]
        L.append("")
    if "step" in R:
        r = R["step"]
        L += ["## 1. Per step, one trajectory (B = 1)", "",
              f"`integrate(system, q0, v0=v0, h=h, n_steps={r['rows'][0]['n_steps']:,}, stride=...)` against the "
              f"Numba floor's `run_*` loop over the same steps (the symmetric scheme, midpoint rule, the same Newton "
              f"rule); {r['repeats']} interleaved repeats. The numpy-engine baseline is context (a short run)."
              + ("" if r.get("floor_missing") is None else f" **Floor not available**: {r['floor_missing']}."), "",
              "| system | h | stride | library us/step (CPU) | floor us/step (CPU) | library / floor wall (CPU) | "
              "Newton it./step library, floor | call with n_steps=10 [ms] | first call [s] | numpy baseline us/step "
              "| max state diff. floor, baseline |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for x in r["rows"]:
            d = x["max_state_difference"]
            its = f"{x['library_newton_iterations_per_step']:.2f}{'*' if x['iterations_sampled'] else ''}"
            fits = "-" if x["floor_newton_iterations_per_step"] is None else f"{x['floor_newton_iterations_per_step']:.2f}"
            ratio = "-" if x["ratio_wall"] is None else f"**{x['ratio_wall']:.1f}** ({x['ratio_cpu']:.1f})"
            fl = "-" if x["floor_us_per_step"] is None else f"{x['floor_us_per_step']:.3g} ({x['floor_cpu_us_per_step']:.3g})"
            L.append(f"| {x['system']} | {x['h']:g} | {x['stride']} | {x['library_us_per_step']:.3g} "
                     f"({x['library_cpu_us_per_step']:.3g}) | {fl} | {ratio} | {its}, {fits} | "
                     f"{x['library_call_n10_ms']:.3g} | {_fmt(x['library_first_call_s'])} | "
                     f"{_fmt(x['numpy_baseline_us_per_step'])} | {_fmt(d.get('floor'))}, {_fmt(d.get('numpy_baseline'))} |")
        L += ["", "\\* sampled at the stored steps only. The state differences are after "
              f"{r['rows'][0]['n_check']} steps (max-norm over q and p). The floor has no inclined knife edge "
              "(its knife edge has dL/dq = 0): the free knife edge is a relative equilibrium that converges in 0 "
              "Newton iterations after step 2, the inclined one is the library's Newton-work case.", ""]
    if "batch" in R:
        r = R["batch"]
        L += ["## 2. Batched trajectories", "",
              f"One `integrate` call with batched `q0`, `v0` (stride {r['rows'][0]['stride']}) against the floor's "
              f"`run_*_batch` (`prange`, {r['floor_threads']} threads, and 1 thread); {r['repeats']} interleaved "
              "repeats (fewer at B = 4096).", "",
              "| system | B | steps | library traj-steps/s (CPU-based) | floor, 2 threads | floor, 1 thread | "
              "library / best floor time | compile [s] | failed members |", "|---|---|---|---|---|---|---|---|---|"]
        for x in r["rows"]:
            L.append(f"| {x['system']} | {x['B']} | {x['n_steps']} | **{_fmt(x['traj_steps_per_s'])}** "
                     f"({_fmt(x['cpu_traj_steps_per_s'])}) | {_fmt(x['floor_traj_steps_per_s'])} | "
                     f"{_fmt(x['floor_1thread_traj_steps_per_s'])} | {_fmt(x['ratio_floor_to_library'])} | "
                     f"{_fmt(x['library_compile_s'])} | {x['failed_members']} |")
        L.append("")
    if "wp" in R:
        r = R["wp"]
        L += [f"## 3. Work--precision at T = {r['T']:g}", "",
              "Library: `integrate(system, q0, v0=v0, h=h, n_steps=T/h)` (defaults: stride 1), the whole call "
              "(validation, run, assembly of the result); its compiled loop alone in the column *loop*. "
              "`solve_ivp` with `rtol = atol`. Wall time at matched accuracy (error "
              f"{r['target_error']:g}) by log-log interpolation of each method's curve.", ""]
        for k, d in r["systems"].items():
            L += [f"**{d['label']}** -- {d['reference']}. Library compile (first call - steady): "
                  f"{_fmt(d['library_compile_s'])} s.", "",
                  f"| method | wall at error {r['target_error']:g} [ms] | CPU at error {r['target_error']:g} [ms] |",
                  "|---|---|---|"]
            for m, v in d["matched"].items():
                wall = "-" if v["wall"] is None else f"{1e3 * v['wall']:.3g}"
                cpu = "-" if v.get("cpu") is None else f"{1e3 * v['cpu']:.3g}"
                L.append(f"| {m} | {wall} ({v['how']}) | {cpu} ({v.get('cpu_how', '-')}) |")
            L += ["", "| method | setting | wall [ms] | CPU [ms] | loop [ms] | error at T | steps / nfev |",
                  "|---|---|---|---|---|---|---|"]
            for x in d["runs"]:
                L.append(f"| {x['method']} | {x['setting']} | {1e3 * x['wall']:.3g} | {1e3 * x['cpu']:.3g} | "
                         f"{_fmt(None if 'loop_wall' not in x else 1e3 * x['loop_wall'])} | {_fmt(x['error_at_T'])} | "
                         f"{x.get('n_steps', x.get('nfev'))} |")
            L.append("")
    if "compile" in R:
        r = R["compile"]
        L += ["## 4. Compile time per system", "",
              f"Fresh interpreters, `integrate(..., n_steps={r['n_steps_per_call']})`: first call minus the median "
              "of three steady calls, after a warm-up on the harmonic oscillator (backend start and shared eager "
              "operations, median: "
              + ("skipped" if r["cold"]["warmup"] is None or r["warm"]["warmup"] is None else
                 f"{r['cold']['warmup']['compile_wall']:.2f} s cold, {r['warm']['warmup']['compile_wall']:.2f} s warm")
              + "). "
              "*Cold*: a fresh process per system with an empty persistent-cache directory of its own; *warm*: a "
              "second fresh process on that directory (JAX's cache key names the directory: a copied cache does "
              "not hit). "
              "Trace / lower / XLA: JAX's compile events during the first call (cold; warm). Import of the library "
              f"(median): {_fmt(r['cold']['import_wall'])} s cold, {_fmt(r['warm']['import_wall'])} s warm.", "",
              "| system | cold compile [s] | (CPU [s]) | trace [s] | lower [s] | XLA compile [s] | warm compile [s] | "
              "warm: trace, lower, cache retrieval [s] | steady call [ms] |", "|---|---|---|---|---|---|---|---|---|"]
        for x in r["rows"]:
            L.append(f"| {x['system']} | **{x['cold_compile_s']:.2f}** | {x['cold_compile_cpu_s']:.2f} | "
                     f"{x['trace_s']:.2f} | {x['lower_s']:.2f} | {x['backend_compile_s']:.2f} | "
                     f"**{_fmt(x['warm_compile_s'])}** | {_fmt(x['warm_trace_s'])}, {_fmt(x['warm_lower_s'])}, "
                     f"{_fmt(x['warm_cache_retrieval_s'])} | {x['steady_call_ms']:.3g} |")
        L.append("")
    if "memory" in R:
        r = R["memory"]
        L += [f"## 5. Peak memory ({r['n_steps']:,} steps; fresh interpreter each)", "",
              "Peak RSS = the process's resident high-water mark (`VmHWM`; `resource.getrusage`'s `ru_maxrss` is "
              "recorded in the JSON but on Linux it inherits the parent's RSS at the fork, here ~1 GB). Each run "
              "follows a 10-step call with the same stride (compiled, or loaded from the suite's cache: compiling "
              "peaks higher); *run adds* = the peak during the run above the resident set when it starts "
              "(`VmRSS` after the warm-up), i.e. what the run itself costs; *result arrays* = the returned "
              "trajectory's arrays.", "",
              "| run | steps | stored points | peak RSS [MB] | after interpreter + import [MB] | peak after warm-up "
              "[MB] | run adds [MB] | bytes / stored point | result arrays [MB] | wall [s] |",
              "|---|---|---|---|---|---|---|---|---|---|"]
        for x in r["rows"]:
            L.append(f"| {x['run']} | {x['steps']:,} | {x['stored']:,} | {x['peak_rss_mb']:.0f} | {x['import_mb']:.0f} | "
                     f"{x['warmup_peak_mb']:.0f} | {x['above_warmup_mb']:.1f} | "
                     f"{_fmt(x['bytes_per_stored_point'] if x['stride'] == 1 else None)} | "
                     f"{_fmt(x.get('trajectory_mb'))} | {x['wall']:.1f} |")
        L.append("")
    text = "\n".join(L)
    (out / "results.md").write_text(text)
    figure(R, out / "performance.png")
    return text


def figure(R: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(16, 9))
    ax = axes[0, 0]
    if "step" in R:
        rows = R["step"]["rows"]
        labels = [f"{r['name']}\nstride {r['stride']}" for r in rows]
        y = np.arange(len(rows))
        ax.barh(y - 0.2, [r["library_us_per_step"] for r in rows], 0.4, label="library")
        ax.barh(y + 0.2, [r["floor_us_per_step"] or np.nan for r in rows], 0.4, label="Numba floor")
        ax.set_xscale("log")
        ax.set_yticks(y, labels, fontsize=7)
        ax.set_xlabel("microseconds per step (B = 1, wall)")
        ax.legend(fontsize=7, loc="lower right", framealpha=0.9)
        ax.set_title("1. per step", fontsize=9)
    else:
        ax.set_visible(False)
    ax = axes[0, 1]
    if "batch" in R:
        for name in dict.fromkeys(r["name"] for r in R["batch"]["rows"]):
            rows = [r for r in R["batch"]["rows"] if r["name"] == name]
            Bs = [r["B"] for r in rows]
            (ln,) = ax.loglog(Bs, [r["traj_steps_per_s"] for r in rows], "o-", label=f"{name}, library")
            if rows[0]["floor_traj_steps_per_s"] is not None:
                ax.loglog(Bs, [r["floor_traj_steps_per_s"] for r in rows], "x:", color=ln.get_color(),
                          label=f"{name}, floor")
        ax.axhline(1e6, color="gray", ls="--", lw=0.7)
        ax.axhline(3e5, color="gray", ls=":", lw=0.7)
        ax.set_xlabel("batch size B")
        ax.set_ylabel("trajectory-steps / s")
        ax.set_ylim(top=ax.get_ylim()[1] * 10)  # room for the legend above the curves
        ax.legend(fontsize=7, loc="upper right", ncol=2)
        ax.set_title("2. batched (targets at B = 4096: 1 M knife edge, 300 k top)", fontsize=9)
    else:
        ax.set_visible(False)
    for ax, key in zip((axes[0, 2], axes[1, 0]), ("heavy_top", "rolling_disk")):
        if "wp" not in R or key not in R["wp"]["systems"]:
            ax.set_visible(False)
            continue
        d = R["wp"]["systems"][key]
        for meth, mk in (("manifold_dirac", "o-"), ("DOP853", "^--"), ("RK45", "s--")):
            pts = [(r["wall"], max(r["error_at_T"], 1e-16)) for r in d["runs"] if r["method"] == meth]  # h / rtol order
            if pts:
                ax.loglog(*zip(*pts), mk, label=meth)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.axhline(R["wp"]["target_error"], color="gray", ls=":", lw=0.8)
        ax.set_xlabel("wall time [s]")
        ax.set_ylabel(f"error at T = {R['wp']['T']:g}")
        ax.set_title(f"3. {d['label']}", fontsize=9)
        ax.legend(fontsize=8)
    ax = axes[1, 1]
    if "compile" in R:
        rows = R["compile"]["rows"]
        y = np.arange(len(rows))
        ax.barh(y - 0.2, [r["cold_compile_s"] for r in rows], 0.4, label="cold cache")
        ax.barh(y + 0.2, [r["warm_compile_s"] or np.nan for r in rows], 0.4, label="warm cache")
        ax.axvline(3, color="k", ls="--", lw=0.8)
        ax.set_yticks(y, [r["name"] for r in rows], fontsize=7)
        ax.set_xlabel("compile time [s] (target 3 s)")
        ax.legend(fontsize=8)
        ax.set_title("4. compile per system", fontsize=9)
    else:
        ax.set_visible(False)
    ax = axes[1, 2]
    if "memory" in R:
        rows = R["memory"]["rows"]
        y = np.arange(len(rows))
        imp = np.array([r["import_mb"] for r in rows])
        start = np.array([r["rss_warm_kb"] / 1024 for r in rows])
        run = np.array([r["above_warmup_mb"] for r in rows])
        peak = np.array([r["peak_rss_mb"] for r in rows])
        ax.barh(y, imp, 0.6, label="interpreter + import")
        ax.barh(y, start - imp, 0.6, left=imp, label="resident after a 10-step warm-up")
        ax.barh(y, run, 0.6, left=start, label="added by the run")
        ax.plot(peak, y, "k|", ms=12, label="process peak (incl. compiling)")
        ax.set_yticks(y, [f"{r['run']} ({r['steps']:,})" for r in rows], fontsize=7)
        ax.set_xlabel("peak RSS [MB]")
        ax.legend(fontsize=7)
        ax.set_title("5. memory", fontsize=9)
    else:
        ax.set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


# ------------------------------------------------------------------ main
def _versions() -> dict:
    import jax
    import jaxlib
    import scipy

    v = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
         "python": platform.python_version(), "numpy": np.__version__, "scipy": scipy.__version__,
         "jax": jax.__version__, "jaxlib": jaxlib.__version__}
    if NF is not None:
        import numba

        v["numba"] = numba.__version__
    try:  # which engine was measured: the library's commit, and whether its files had local changes
        import manifold_dirac

        src = Path(manifold_dirac.__file__).resolve().parent
        git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True, cwd=src,  # noqa: E731
                                        timeout=10).stdout.strip()
        v["library_commit"] = git("rev-parse", "--short", "HEAD") or None
        v["library_modified_files"] = [x[3:] for x in git("status", "--porcelain", "--", str(src)).splitlines()
                                       if x[:2].strip() and x[3:].endswith(".py")]
    except (OSError, subprocess.SubprocessError):
        pass
    return v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a smoke run of every section (CI); numbers are not measurements")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="output directory (default benchmarks/results)")
    ap.add_argument("--only", nargs="+", choices=SECTIONS, metavar="SECTION",
                    help=f"run only these sections of {', '.join(SECTIONS)} (the others' results are kept)")
    ap.add_argument("--memory-steps", type=int, default=None, help="steps of the memory runs (default 10^6; quick 10^4)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    todo = list(args.only or SECTIONS)
    command = "python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:])
    meta_path = args.out / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.update(_versions())
    meta["commands"] = list(dict.fromkeys(meta.get("commands", []) + [command.strip()]))
    meta["date"] = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    meta_path.write_text(json.dumps(meta, indent=1))
    fns = {"step": section_step, "batch": section_batch, "wp": section_wp, "compile": section_compile,
           "memory": section_memory}

    def run_section(s):
        load = _load()
        w, c, res = clock(lambda: fns[s](args.quick, args.memory_steps) if s == "memory" else fns[s](args.quick))
        res.update(quick=args.quick, load_average=load, load_average_end=_load(), section_wall=w, section_cpu=c)
        (args.out / f"results-{s}.json").write_text(json.dumps(res, indent=1))
        print(f"[{s}] done in {w:.1f} s (CPU {c:.1f} s of this process), load {load}", file=sys.stderr)

    background = None
    if args.quick:  # a smoke run: the child-process sections overlap the others (2 cores); no timing is meant
        from concurrent.futures import ThreadPoolExecutor

        kids = [s for s in todo if s in ("compile", "memory")]
        todo = [s for s in todo if s not in kids]
        pool = ThreadPoolExecutor(1)
        background = [pool.submit(run_section, s) for s in kids]
    for s in todo:
        run_section(s)
    for f in background or []:
        f.result()
    print(report(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
