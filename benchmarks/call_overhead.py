"""Where the wall time of one short, warm ``integrate`` call goes, and the faster public paths.

Run (from the repository root)::

    PYTHONPATH=$PWD python benchmarks/call_overhead.py            # min of 30 calls each
    PYTHONPATH=$PWD python benchmarks/call_overhead.py --repeats 7

For each case (a short run whose compiled work is small: the Chaplygin sled
composed with ``kahan_li8``, the rolling disk with ``kahan_li6``, a plain
pendulum), all in one process, every program compiled first (not timed):

* ``integrate``: one whole call of :func:`manifold_dirac.integrate`;
* its phases: building the :class:`~manifold_dirac.Integrator`,
  ``initial_state`` (checks of the initial data, the compiled start: the
  momentum, the constraint rank, the Legendre and degeneracy tests, the
  first step's Newton matrix), and ``run`` (the compiled loop, its copy to
  the host, the :class:`~manifold_dirac.Trajectory`);
* the two compiled programs alone (``start program``, ``loop program``,
  called with the arguments ``integrate`` gives them, until their results
  are ready): the work the host cannot avoid. ``host overhead`` is
  ``integrate`` minus these two;
* :func:`manifold_dirac.rollout` called eagerly (its own checks, then one
  compiled call) and the same rollout inside ``jax.jit`` (one XLA call per
  run: the fastest public path when the same run is repeated with other
  initial data, ``h`` or parameters);
* ``solve_ivp`` DOP853 at ``rtol = atol = 1e-6`` on the same motion's
  reduced equations (as ``benchmarks/composition.py``), for scale.

Times are the minimum over ``--repeats`` interleaved rounds (round ``r``
calls the measurements in an order rotated by ``r``); the load average of
the machine is written with them. Output:
``benchmarks/results/call_overhead.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402

import manifold_dirac as md  # noqa: E402
from manifold_dirac._mechanics import compile_cache  # noqa: E402


def _program(system, kind: str):
    """The compiled program of ``kind`` ("start" or "chunk") last built for ``system`` (compile cache)."""
    sk = compile_cache.structure_key(system)
    found = [fn for k, fn in compile_cache.entries()
             if k[0] == sk and isinstance(k[-1], tuple) and k[-1][0] == kind]
    if not found:
        raise RuntimeError(f"no compiled {kind!r} program for {system.name!r} in the compile cache")
    return found[-1]


def cases():
    from benchmarks.composition import chaplygin_sled, rolling_disk

    sled, disk = chaplygin_sled(), rolling_disk()
    pend = md.systems.pendulum()

    def pend_rhs(_t, y, ml2=1.0, mgl=9.81):
        return [y[1], -mgl / ml2 * np.sin(y[0])]

    return {
        "chaplygin_sled + kahan_li8, h = 0.25, 8 steps": dict(
            system=sled["system"], q0=sled["q0"], v0=sled["v0"], h=0.25, n=8, scheme="split",
            composition="kahan_li8", rhs=sled["rhs"], y0=sled["y0"], T=2.0),
        "rolling_disk + kahan_li6, h = 0.5, 4 steps": dict(
            system=disk["system"], q0=disk["q0"], v0=disk["v0"], h=0.5, n=4, scheme="split",
            composition="kahan_li6", rhs=disk["rhs"], y0=disk["y0"], T=2.0),
        "pendulum, midpoint, h = 0.05, 40 steps": dict(
            system=pend, q0=np.array([1.0]), v0=np.array([0.0]), h=0.05, n=40, scheme="symmetric",
            composition=None, rhs=pend_rhs, y0=np.array([1.0, 0.0]), T=2.0),
    }


def calls(c):
    """``{label: callable}`` of one case (each returns once its result is on the host or ready)."""
    from scipy.integrate import solve_ivp

    s, q0, v0, h, n, scheme, comp = (c[k] for k in ("system", "q0", "v0", "h", "n", "scheme", "composition"))
    kw = dict(scheme=scheme, composition=comp)
    integ = md.Integrator(s, h, scheme, "midpoint", composition=comp)
    state = integ.initial_state(q0, v0=v0)
    integ.run(state, n, stride=n)
    start, loop = _program(s, "start"), _program(s, "chunk")
    params = jax.tree.map(np.asarray, s.params)
    vv = np.asarray(v0, dtype=float)
    start_args = (q0, vv, np.zeros_like(vv), np.float64(h), np.float64(0.0), params)
    m = state.members
    loop_args = (m, m.q, np.bool_(False), vv, np.int32(0), np.int32(0), np.int32(2), np.int32(n), np.int32(n),
                 np.float64(0.0), np.float64(h), params, None)
    jitted = jax.jit(lambda q, v, hh: md.rollout(s, q, v, h=hh, n_steps=n, **kw))
    return {
        "integrate": lambda: md.integrate(s, q0, v0, h=h, n_steps=n, stride=n, **kw),
        "Integrator(...)": lambda: md.Integrator(s, h, scheme, "midpoint", composition=comp),
        "initial_state": lambda: integ.initial_state(q0, v0=v0),
        "run": lambda: integ.run(state, n, stride=n),
        "start program": lambda: jax.block_until_ready(start(*start_args)),
        "loop program": lambda: jax.block_until_ready(loop(*loop_args)),
        "rollout": lambda: jax.block_until_ready(md.rollout(s, q0, v0, h=h, n_steps=n, **kw)),
        "jax.jit(rollout)": lambda: jax.block_until_ready(jitted(q0, v0, h)),
        "DOP853 1e-6": lambda: solve_ivp(c["rhs"], (0.0, c["T"]), c["y0"], method="DOP853", rtol=1e-6,
                                         atol=1e-6),
    }


def measure(repeats: int) -> dict:
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, c in cases().items():
            fns = calls(c)
            for f in fns.values():  # compile and warm every program (not timed)
                f()
            walls = {k: [] for k in fns}
            keys = list(fns)
            for r in range(repeats):
                j = r % len(keys)
                for k in keys[j:] + keys[:j]:
                    t0 = time.perf_counter()
                    fns[k]()
                    walls[k].append(time.perf_counter() - t0)
            best = {k: 1e3 * min(v) for k, v in walls.items()}
            compiled = best["start program"] + best["loop program"]
            best["host overhead of integrate"] = best["integrate"] - compiled
            best["host overhead of rollout"] = best["rollout"] - best["jax.jit(rollout)"]
            out[label] = best
            print(f"[call_overhead] {label}: integrate {best['integrate']:.3f} ms, host overhead "
                  f"{best['host overhead of integrate']:.3f} ms (load {os.getloadavg()})", file=sys.stderr,
                  flush=True)
    return out


def table(res: dict) -> str:
    labels = list(res["cases"])
    rows = list(next(iter(res["cases"].values())))
    lines = [f"Machine: {res['machine']}; load average before/after: {res['load_before']} / "
             f"{res['load_after']}; "
             f"minimum of {res['repeats']} interleaved rounds, compile excluded; ms per call.", "",
             "| | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for r in rows:
        lines.append(f"| {r} | " + " | ".join(f"{res['cases'][c][r]:.3f}" for c in labels) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args(argv)
    if args.repeats < 7:
        raise SystemExit("--repeats: at least 7 (the minimum of fewer calls is mostly the load)")
    res = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                      f"jax {jax.__version__}",
           "load_before": [round(x, 2) for x in os.getloadavg()], "repeats": args.repeats}
    res["cases"] = measure(args.repeats)
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    (HERE / "results" / "call_overhead.json").write_text(json.dumps(res, indent=1))
    txt = table(res)
    (HERE / "results" / "call_overhead.md").write_text(txt + "\n")
    print(txt)


if __name__ == "__main__":
    main()
