"""Cost of one exact gradient of a T = 10 s trajectory functional, against one forward run.

For two systems, the functional ``J`` of a run of ``T / h`` steps and its
gradient with respect to all parameters the task has:

* heavy top (SO(3)), ``h = 0.01`` (1000 steps), ``theta`` = inertia (3),
  ``mgl``, ``chi`` (3), the initial attitude in the tangent frame (3) and the
  initial angular velocity (3): 13 numbers;
* differential drive (SE(2), no slip), ``h = 0.05`` (200 steps), ``theta`` =
  the controls (200 x 3 = 600 numbers, the sideways component included) and mass, inertia, damping.

Timed, each as the median of interleaved repeats (wall time), every program
compiled first (compile times reported separately):

* ``forward``: ``J`` alone (``rollout``, compiled);
* ``integrate``: the same run by :func:`manifold_dirac.integrate` (host loop, for reference);
* ``reverse``: ``jax.value_and_grad(J)`` (one reverse pass, implicit differentiation per step);
* ``forward-mode``: ``jax.jacfwd(J)`` (heavy top only: 13 directions);
* ``central FD``: ``2 P`` forward runs over the same ``P`` parameters (timed as
  ``2 P`` times the forward run: the runs are identical in cost).

With ``--memory``: the peak resident memory of one reverse-mode gradient of
the heavy top over ``N`` steps (each in a fresh process), with the steps
rematerialized from their saved solutions (``checkpoint=True``, the default)
and with every step's intermediates stored (``checkpoint=False``).

Run: ``python benchmarks/gradient_cost.py [--repeats 7] [--quick] [--memory]``.
The machine's load is printed: on shared cores the numbers are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.flatten_util import ravel_pytree  # noqa: E402

from manifold_dirac import integrate, rollout  # noqa: E402
from manifold_dirac.systems import differential_drive, heavy_top  # noqa: E402


def timed(fn, *args):
    t = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t


def cases(T: float):
    top = heavy_top(inertia=(1.0, 2.0, 3.0), mgl=1.0, chi=(0.1, 0.2, 1.0))
    q0 = top.Q.retract(jnp.eye(3), jnp.array([0.3, 0.2, 0.1]))
    w0 = jnp.array([0.5, 1.0, 2.0])
    h_top = 0.01
    n_top = int(round(T / h_top))
    W = jnp.arange(1.0, 10.0).reshape(3, 3)

    def J_top(x):
        params, eta, w = x
        r = rollout(top, top.Q.retract(q0, eta), w, h=h_top, n_steps=n_top, params=params)
        return jnp.sum(r.q[-1] * W) + jnp.mean(r.p ** 2)

    x_top = (jax.tree.map(jnp.asarray, top.params), jnp.zeros(3), w0)

    def run_top():
        return integrate(top, np.asarray(q0), np.asarray(w0), h=h_top, n_steps=n_top)

    zero = lambda t: 0.0 * t  # noqa: E731
    car = differential_drive(drive=zero, steer=zero, damping=0.2)
    h_car = 0.05
    n_car = int(round(T / h_car))
    rng = np.random.default_rng(0)
    u = jnp.asarray(np.c_[rng.normal(0, 0.3, n_car), rng.normal(0.5, 0.3, n_car), np.zeros(n_car)])

    def J_car(x):
        params, u = x
        r = rollout(car, jnp.eye(3), jnp.zeros(3), h=h_car, n_steps=n_car, params=params, controls=u)
        return jnp.sum(r.q[-1] ** 2) + jnp.mean(r.p ** 2)

    x_car = (jax.tree.map(jnp.asarray, car.params), u)

    def run_car():
        return integrate(car, np.eye(3), np.zeros(3), h=h_car, n_steps=n_car, controls=np.asarray(u))

    return [("heavy_top", n_top, J_top, x_top, run_top, True), ("differential_drive", n_car, J_car, x_car, run_car,
                                                                 False)]


def memory_child(n_steps: int, checkpoint: bool) -> None:
    """One reverse-mode gradient of the heavy top over ``n_steps``; prints the peak RSS in MB."""
    top = heavy_top()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def J(params):
        r = rollout(top, jnp.eye(3), jnp.array([0.5, 1.0, 2.0]), h=0.01, n_steps=n_steps, params=params,
                    checkpoint=checkpoint)
        return jnp.sum(r.q[-1]) + jnp.mean(r.p ** 2)

    jax.block_until_ready(jax.jit(jax.grad(J))(jax.tree.map(jnp.asarray, top.params)))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"n_steps": n_steps, "checkpoint": checkpoint, "peak_mb": peak, "import_mb": before}))


def memory(steps=(1_000, 10_000, 100_000)) -> list[dict]:
    rows = []
    print("\n## memory of one reverse-mode gradient, heavy top (peak RSS of a fresh process)")
    print(f"{'steps':>8s} {'checkpoint':>10s} {'peak MB':>8s} {'above import MB':>16s}")
    for n in steps:
        for ck in (True, False):
            out = subprocess.run([sys.executable, __file__, "--memory-child", str(n), str(int(ck))],
                                 capture_output=True, text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            rows.append(row)
            print(f"{n:8d} {str(ck):>10s} {row['peak_mb']:8.0f} {row['peak_mb'] - row['import_mb']:16.0f}")
    return rows


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--memory-child":
        memory_child(int(sys.argv[2]), bool(int(sys.argv[3])))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="T = 1 s and 3 repeats (a smoke run)")
    ap.add_argument("--json", default=None, help="write the results to this JSON file")
    ap.add_argument("--memory", action="store_true", help="only the memory of gradients over 1e3..1e5 steps")
    args = ap.parse_args()
    if args.memory:
        rows = memory()
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2))
        return
    T = 1.0 if args.quick else 10.0
    repeats = 3 if args.quick else args.repeats
    print(f"# gradient cost, T = {T:g} s, {repeats} interleaved repeats, jax {jax.__version__}, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the start")
    results = {}
    for name, n_steps, J, x, run_int, fwd_mode in cases(T):
        P = ravel_pytree(x)[0].size
        programs = {"forward": jax.jit(J), "reverse": jax.jit(jax.value_and_grad(J))}
        if fwd_mode:
            programs["forward-mode"] = jax.jit(jax.jacfwd(J))
        compile_s = {k: timed(f, x) for k, f in programs.items()}
        compile_s["integrate"] = timed(lambda: run_int().q)
        # the gradient is checked once against central differences of the forward program (a few entries)
        g = ravel_pytree(programs["reverse"](x)[1])[0]
        flat, unravel = ravel_pytree(x)
        idx = np.unique(np.linspace(0, P - 1, 5).astype(int))
        fd = [(programs["forward"](unravel(flat.at[i].add(1e-6))) - programs["forward"](unravel(flat.at[i].add(-1e-6))))
              / 2e-6 for i in idx]
        fd_err = float(np.max(np.abs(np.asarray(g)[idx] - np.asarray(fd))) / np.max(np.abs(g)))
        times: dict[str, list[float]] = {k: [] for k in [*programs, "integrate"]}
        for rep in range(repeats):
            order = list(programs) + ["integrate"]
            order = order[rep % len(order):] + order[:rep % len(order)]  # rotating order
            for k in order:
                times[k].append(timed(lambda: run_int().q) if k == "integrate" else timed(programs[k], x))
        med = {k: float(np.median(v)) for k, v in times.items()}
        med["central FD"] = 2 * P * med["forward"]
        results[name] = {"n_steps": n_steps, "parameters": P, "median_s": med, "compile_s": compile_s,
                         "fd_check_rel_err": fd_err}
        f = med["forward"]
        print(f"\n## {name}: {n_steps} steps, {P} parameters (gradient vs central FD on {len(idx)} entries: "
              f"relative {fd_err:.1e})")
        print(f"{'':14s} {'median':>10s} {'x forward':>10s} {'compile':>9s}")
        for k in ["forward", "integrate", "reverse", "forward-mode", "central FD"]:
            if k in med:
                c = compile_s.get(k)
                print(f"{k:14s} {med[k] * 1e3:8.2f}ms {med[k] / f:10.2f} "
                      + (f"{c:8.2f}s" if c is not None else f"{'':9s}"))
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
