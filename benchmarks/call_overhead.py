"""Where the wall time of one short, warm ``integrate`` call goes, and the faster public paths.

Run (from the repository root)::

    PYTHONPATH=$PWD python benchmarks/call_overhead.py            # min of 30 calls each
    PYTHONPATH=$PWD python benchmarks/call_overhead.py --repeats 7
    PYTHONPATH=$PWD python benchmarks/call_overhead.py --compare ../other-checkout

For each case (a short run whose compiled work is small: the Chaplygin sled
composed with ``kahan_li8``, the rolling disk with ``kahan_li6`` over 4
steps and over 16 -- its run for ``1e-6`` in ``composition.py`` --, the
snakeboard's ``kahan_li8`` run for ``1e-6`` (12 steps), a plain pendulum,
the heavy top, the four-bar linkage with its holonomic constraints), all in
one process, every program compiled first (not timed):

* ``integrate``: one whole call of :func:`manifold_dirac.integrate`;
* its phases: building the :class:`~manifold_dirac.Integrator`,
  ``initial_state`` (checks of the initial data, the compiled start: the
  momentum, the constraint rank, the Legendre and degeneracy tests, the
  first step's Newton matrix), and ``run`` (the compiled loop, its copy to
  the host, the :class:`~manifold_dirac.Trajectory`);
* the compiled programs alone (``start program``, ``loop program``): every
  call that one ``integrate`` call makes to them, recorded during a call
  and replayed with the same arguments until the results are ready (the
  work the host cannot avoid). ``host overhead of integrate`` is
  ``integrate`` minus these;
* :func:`manifold_dirac.rollout` called eagerly (its own checks, then one
  compiled call) and the same rollout inside ``jax.jit`` (one XLA call per
  run: the fastest public path when the same run is repeated with other
  initial data, ``h`` or parameters);
* ``solve_ivp`` DOP853 at ``rtol = atol = 1e-6`` on the same motion's
  reduced equations (as ``benchmarks/composition.py``), for scale, where
  the case has them.

Times are the minimum over ``--repeats`` interleaved rounds (round ``r``
calls the measurements in an order rotated by ``r``); the load average of
the machine is written with them. Output:
``benchmarks/results/call_overhead.md`` and ``.json``.

``--compare DIR`` measures another checkout's library (``DIR``, e.g. a
worktree of the main branch) side by side: a second process imports
``manifold_dirac`` from ``DIR`` and the two take turns round by round (one
round of every measurement each, the order alternating), so both see the
same load. Output: ``benchmarks/results/call_overhead_compare.md`` and
``.json`` (``DIR``'s times as "before", this checkout's as "after").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# the library measured: this checkout's, or another's (--library, the second process of --compare)
_LIB = Path(sys.argv[sys.argv.index("--library") + 1]).resolve() if "--library" in sys.argv else ROOT
sys.path.insert(0, str(_LIB))

import numpy as np  # noqa: E402
import jax  # noqa: E402

import manifold_dirac as md  # noqa: E402
from manifold_dirac._mechanics import compile_cache  # noqa: E402

PROGRAMS = ("start", "chunk")
"""The kinds of compiled program one ``integrate`` call runs (their key's last entry starts with the kind)."""


class _Recorder:
    """A compiled program that records the arguments of its calls (every other attribute is the program's)."""

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __call__(self, *args):
        self.calls.append(args)
        return self.fn(*args)

    def __getattr__(self, name):
        return getattr(self.fn, name)


def recorded_calls(system, call) -> dict:
    """``{kind: [(program, args), ...]}``: the compiled programs' calls that one ``call()`` makes for ``system``.

    The programs serving ``system`` in the compile cache are wrapped for
    the call, then put back.
    """
    sk = compile_cache.structure_key(system)
    table = compile_cache._TABLE
    wrapped = {}
    for k, fn in list(table.items()):
        if k[0] == sk and isinstance(k[-1], tuple) and k[-1][0] in PROGRAMS:
            wrapped[k] = table[k] = _Recorder(fn)
    try:
        call()
    finally:
        for k, rec in wrapped.items():
            table[k] = rec.fn
    return {kind: [(rec.fn, a) for k, rec in wrapped.items() if k[-1][0] == kind for a in rec.calls]
            for kind in PROGRAMS}


def replay(calls):
    """Call the recorded programs again and wait for their results."""
    def f():
        for fn, args in calls:
            jax.block_until_ready(fn(*args))
    return f


def cases():
    from benchmarks.composition import chaplygin_sled, heavy_top, rolling_disk, snakeboard

    sled, disk, top, board = chaplygin_sled(), rolling_disk(), heavy_top(), snakeboard()
    pend = md.systems.pendulum()
    four_bar = md.systems.four_bar()
    q_fb, v_fb = md.systems.four_bar_initial()

    def pend_rhs(_t, y, ml2=1.0, mgl=9.81):
        return [y[1], -mgl / ml2 * np.sin(y[0])]

    return {
        "chaplygin_sled + kahan_li8, h = 0.25, 8 steps": dict(
            system=sled["system"], q0=sled["q0"], v0=sled["v0"], h=0.25, n=8, scheme="split",
            composition="kahan_li8", rhs=sled["rhs"], y0=sled["y0"], T=2.0),
        "rolling_disk + kahan_li6, h = 0.5, 4 steps": dict(
            system=disk["system"], q0=disk["q0"], v0=disk["v0"], h=0.5, n=4, scheme="split",
            composition="kahan_li6", rhs=disk["rhs"], y0=disk["y0"], T=2.0),
        "rolling_disk + kahan_li6, h = 0.125, 16 steps": dict(
            system=disk["system"], q0=disk["q0"], v0=disk["v0"], h=0.125, n=16, scheme="split",
            composition="kahan_li6", rhs=disk["rhs"], y0=disk["y0"], T=2.0),
        "snakeboard + kahan_li8, h = 1/6, 12 steps": dict(
            system=board["system"], q0=board["q0"], v0=board["v0"], h=1 / 6, n=12, scheme="split",
            composition="kahan_li8", rhs=board["rhs"], y0=board["y0"], T=2.0),
        "pendulum, midpoint, h = 0.05, 40 steps": dict(
            system=pend, q0=np.array([1.0]), v0=np.array([0.0]), h=0.05, n=40, scheme="symmetric",
            composition=None, rhs=pend_rhs, y0=np.array([1.0, 0.0]), T=2.0),
        "heavy_top, midpoint, h = 0.01, 10 steps": dict(
            system=top["system"], q0=top["q0"], v0=top["v0"], h=0.01, n=10, scheme="symmetric",
            composition=None, rhs=top["rhs"], y0=top["y0"], T=0.1),
        "four_bar (holonomic), midpoint, h = 0.01, 10 steps": dict(
            system=four_bar, q0=q_fb, v0=v_fb, h=0.01, n=10, scheme="symmetric", composition=None, rhs=None),
    }


def calls(c):
    """``{label: callable}`` of one case (each returns once its result is on the host or ready)."""
    from scipy.integrate import solve_ivp

    s, q0, v0, h, n, scheme, comp = (c[k] for k in ("system", "q0", "v0", "h", "n", "scheme", "composition"))
    kw = dict(scheme=scheme, composition=comp)
    integ = md.Integrator(s, h, scheme, "midpoint", composition=comp)
    state = integ.initial_state(q0, v0=v0)
    integ.run(state, n, stride=n)
    whole = lambda: md.integrate(s, q0, v0, h=h, n_steps=n, stride=n, **kw)  # noqa: E731
    whole()  # compiled
    programs = recorded_calls(s, whole)
    jitted = jax.jit(lambda q, v, hh: md.rollout(s, q, v, h=hh, n_steps=n, **kw))
    out = {
        "integrate": whole,
        "Integrator(...)": lambda: md.Integrator(s, h, scheme, "midpoint", composition=comp),
        "initial_state": lambda: integ.initial_state(q0, v0=v0),
        "run": lambda: integ.run(state, n, stride=n),
        "start program": replay(programs["start"]),
        "loop program": replay(programs["chunk"]),
        "rollout": lambda: jax.block_until_ready(md.rollout(s, q0, v0, h=h, n_steps=n, **kw)),
        "jax.jit(rollout)": lambda: jax.block_until_ready(jitted(q0, v0, h)),
    }
    if c.get("rhs") is not None:
        out["DOP853 1e-6"] = lambda: solve_ivp(c["rhs"], (0.0, c["T"]), c["y0"], method="DOP853", rtol=1e-6,
                                               atol=1e-6)
    return out


class Bench:
    """Every case's calls, compiled and warm; :meth:`round` times each once."""

    def __init__(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.fns = {label: calls(c) for label, c in cases().items()}
            for fns in self.fns.values():  # compile and warm every program (not timed)
                for f in fns.values():
                    f()
        self.walls = {label: {k: [] for k in fns} for label, fns in self.fns.items()}

    def round(self, r: int) -> dict:
        """Time every call once (order rotated by ``r``); ``{case: {label: seconds}}``."""
        out = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for label, fns in self.fns.items():
                keys = list(fns)
                j = r % len(keys)
                out[label] = {}
                for k in keys[j:] + keys[:j]:
                    t0 = time.perf_counter()
                    fns[k]()
                    out[label][k] = time.perf_counter() - t0
        return out


def summary(walls: dict) -> dict:
    """The minimum of each call over the rounds (ms), and the host overheads derived from them."""
    out = {}
    for label, w in walls.items():
        best = {k: 1e3 * min(v) for k, v in w.items()}
        best["host overhead of integrate"] = best["integrate"] - best["start program"] - best["loop program"]
        best["host overhead of rollout"] = best["rollout"] - best["jax.jit(rollout)"]
        out[label] = best
    return out


def _add(walls: dict, rnd: dict) -> None:
    for label, times in rnd.items():
        for k, t in times.items():
            walls.setdefault(label, {}).setdefault(k, []).append(t)


def measure(repeats: int) -> dict:
    bench = Bench()
    walls: dict = {}
    for r in range(repeats):
        _add(walls, bench.round(r))
    res = summary(walls)
    for label, best in res.items():
        print(f"[call_overhead] {label}: integrate {best['integrate']:.3f} ms, host overhead "
              f"{best['host overhead of integrate']:.3f} ms (load {os.getloadavg()})", file=sys.stderr, flush=True)
    return res


def serve() -> None:
    """The second process of ``--compare``: compile, say ``ready``, then time one round per line read."""
    bench = Bench()
    print(json.dumps("ready"), flush=True)
    for line in sys.stdin:
        print(json.dumps(bench.round(int(line))), flush=True)


def compare(other: Path, repeats: int) -> dict:
    """This checkout's and ``other``'s library, round by round (the order alternating); ``{before, after}``."""
    env = dict(os.environ, PYTHONPATH=str(other))
    child = subprocess.Popen([sys.executable, __file__, "--serve", "--library", str(other)], cwd=str(other),
                             env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        bench = Bench()
        if json.loads(child.stdout.readline()) != "ready":
            raise RuntimeError("the compared process did not start")
        before: dict = {}
        after: dict = {}
        for r in range(repeats):
            for who in ((0, 1) if r % 2 == 0 else (1, 0)):
                if who == 0:
                    child.stdin.write(f"{r}\n")
                    child.stdin.flush()
                    line = child.stdout.readline()
                    if not line:
                        raise RuntimeError("the compared process ended early")
                    _add(before, json.loads(line))
                else:
                    _add(after, bench.round(r))
            print(f"[call_overhead] round {r + 1}/{repeats} (load {os.getloadavg()})", file=sys.stderr, flush=True)
    finally:
        child.stdin.close()
        child.wait(timeout=60)
    return {"before": summary(before), "after": summary(after)}


def table(res: dict) -> str:
    labels = list(res["cases"])
    rows = list(dict.fromkeys(r for c in res["cases"].values() for r in c))
    lines = [f"Machine: {res['machine']}; load average before/after: {res['load_before']} / "
             f"{res['load_after']}; "
             f"minimum of {res['repeats']} interleaved rounds, compile excluded; ms per call.", "",
             "| | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for r in rows:
        cells = [f"{res['cases'][c][r]:.3f}" if r in res["cases"][c] else "–" for c in labels]
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compare_table(res: dict) -> str:
    before, after = res["before"], res["after"]
    rows = ("integrate", "initial_state", "run", "start program", "loop program", "host overhead of integrate")
    lines = [f"Machine: {res['machine']}; load average before/after: {res['load_before']} / {res['load_after']}; "
             f"minimum of {res['repeats']} rounds, the two libraries taking turns in two processes; compile "
             f"excluded; ms per call. before: {res['before_library']}; after: {res['after_library']}.", "",
             "| case | " + " | ".join(f"{r} before | after" for r in rows) + " |",
             "|---" * (2 * len(rows) + 1) + "|"]
    for c in after:
        cells = [f"{before[c][r]:.3f} | {after[c][r]:.3f}" if c in before else "– | –" for r in rows]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _describe(tree: Path) -> str:
    """The commit a checkout is at (and whether its files differ from it), for the record."""
    try:
        rev = subprocess.run(["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True,
                             text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        rev = "not a git checkout"
    return f"the library at {rev}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--compare", type=Path, default=None,
                    help="another checkout whose library is measured side by side (before)")
    ap.add_argument("--library", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve:
        return serve()
    if args.repeats < 7:
        raise SystemExit("--repeats: at least 7 (the minimum of fewer calls is mostly the load)")
    res = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
                      f"jax {jax.__version__}",
           "load_before": [round(x, 2) for x in os.getloadavg()], "repeats": args.repeats}
    if args.compare is not None:
        res.update(compare(args.compare.resolve(), args.repeats))
        res["before_library"], res["after_library"] = _describe(args.compare), _describe(ROOT)
        res["load_after"] = [round(x, 2) for x in os.getloadavg()]
        (HERE / "results" / "call_overhead_compare.json").write_text(json.dumps(res, indent=1))
        txt = compare_table(res)
        (HERE / "results" / "call_overhead_compare.md").write_text(txt + "\n")
        print(txt)
        return
    res["cases"] = measure(args.repeats)
    res["load_after"] = [round(x, 2) for x in os.getloadavg()]
    (HERE / "results" / "call_overhead.json").write_text(json.dumps(res, indent=1))
    txt = table(res)
    (HERE / "results" / "call_overhead.md").write_text(txt + "\n")
    print(txt)


if __name__ == "__main__":
    main()
