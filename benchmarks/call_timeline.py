"""Where the wall time of one short ``jax.jit(rollout)`` call goes, from JAX's profiler trace.

    PYTHONPATH=$PWD python benchmarks/call_timeline.py            # writes results/call_timeline.md

A short composed run of the rolling disk costs about as much as DOP853's
whole run on its reduced equations, most of it a cost that does not grow
with the run. This script splits that cost for a 16-step ``kahan_li6`` run
(to ``T = 2``, the ``split`` scheme, as in ``composition.py``) and for a
2-step run, next to a trivial jitted function of the same inputs and DOP853
on the reduced equations:

* **untimed by the profiler**: the wall time per call, minimum of
  ``--rounds`` interleaved rounds of ``--calls`` calls;
* **from a trace** of ``--traced`` calls (``jax.profiler.trace``; the
  profiler adds some time of its own), per call: the time in the compiled
  loop kernel (the longest XLA:CPU thunk), in the program's other thunks
  (its small kernels and copies outside the loop), in the transfer of the
  arguments (``DevicePut``), and the rest of the call: JAX's and the
  runtime's work and any hand-off between threads (to JAX's CPU client
  thread with asynchronous dispatch, which the library switches off; to
  the thunk executor's worker threads when more than 9 thunks are ready at
  once). The thunks are the trace's events named as the program's entry
  instructions, on whatever thread they ran;
* the compiled kernel again with Newton's start accepted at ``64 eps``
  (``newton.START_ACCEPT`` set for this measurement only, a diagnostic: the
  library's test is ``4 eps``, see ``tests/mechanics/test_newton_start.py``),
  which shows what the repeated sub-steps' null Newton updates cost.

The split is of one process on one machine: the thread hand-offs in
particular depend on the operating system and the load.
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

T = 2.0


def entry_names(compiled_text: str) -> set[str]:
    """The names of a compiled program's entry instructions: its thunks' trace events carry them (on the
    executor's threads, or on the calling thread where the program runs there, with synchronous dispatch)."""
    import re

    body = re.search(r"^ENTRY .*?\{\n(.*?)\n\}", compiled_text, re.S | re.M).group(1)
    return set(re.findall(r"^\s*(?:ROOT )?%(\S+) = ", body, re.M))


def _calls(trace_dir: str, names: set[str]) -> list[dict]:
    """Per traced call: its wall time and the time in its thunks (the events named as the program's entry
    instructions ``names``), from the trace's events (us)."""
    import jax

    path = glob.glob(os.path.join(trace_dir, "**", "*.xplane.pb"), recursive=True)[0]
    pd = jax.profiler.ProfileData.from_file(path)
    events = []
    for plane in pd.planes:
        for line in plane.lines:
            for ev in line.events:
                events.append((ev.start_ns, ev.duration_ns, line.name, ev.name))
    events.sort()
    # a call: from the outermost PjitFunction on the Python thread to the end of the block_until_ready after it
    starts = [e for e in events if e[2] == "python" and e[3].startswith("PjitFunction")]
    outer, last_end = [], -1.0
    for e in starts:
        if e[0] >= last_end:
            outer.append(e)
            last_end = e[0] + e[1]
    waits = [e for e in events if e[2] == "python" and "block_until_ready" in e[3]]
    calls = []
    for i, (s, d, _, _) in enumerate(outer):
        nxt = outer[i + 1][0] if i + 1 < len(outer) else math.inf
        w = [e for e in waits if s <= e[0] < nxt]
        end = max([s + d] + [e[0] + e[1] for e in w])
        inside = [e for e in events if s <= e[0] < end]
        thunks = [e[1] for e in inside if e[3] in names]
        put = sum(e[1] for e in inside if e[2] == "python" and e[3] == "DevicePut")
        kernel = max(thunks, default=0.0)
        calls.append({"wall": (end - s) / 1e3, "kernel": kernel / 1e3, "other_thunks": (sum(thunks) - kernel) / 1e3,
                      "n_thunks": len(thunks), "device_put": put / 1e3})
    return calls


def measure(rounds: int, calls: int, traced: int) -> dict:
    import jax
    from composition import SYSTEMS, interleaved_min  # the same disk and reduced equations as the work-precision run
    from scipy.integrate import solve_ivp

    import manifold_dirac as md
    from manifold_dirac._mechanics import newton

    case = SYSTEMS["rolling_disk"]()
    sysm = case["system"]
    q0, v0 = case["q0"], case["v0"]
    runs = {"trivial jit": (None, 1), "kahan_li6, 2 steps": ("kahan_li6", 2), "kahan_li6, 16 steps": ("kahan_li6", 16)}
    fs, its = {}, {}
    for label, (comp, n) in runs.items():
        if comp is None:
            fs[label] = jax.jit(lambda q, v, h: (jax.tree.map(lambda a: a * h, q), v * h))
        else:
            fs[label] = jax.jit(lambda q, v, h, comp=comp, n=n: md.rollout(
                sysm, q, v, h=h, n_steps=n, scheme="split", composition=comp))
            its[label] = int(np.sum(fs[label](q0, v0, T / n).iterations))
    hs = {label: T / n for label, (_, n) in runs.items()}
    names = {label: entry_names(fs[label].lower(q0, v0, hs[label]).compile().as_text()) for label in runs}

    def call(label):
        return jax.block_until_ready(fs[label](q0, v0, hs[label]))

    def dop853():
        return solve_ivp(case["rhs"], (0.0, T), case["y0"], method="DOP853", rtol=1e-3, atol=1e-3)

    timed = {**{label: (lambda label=label: call(label)) for label in runs}, "DOP853, rtol = 1e-3": dop853}
    wall = interleaved_min(timed, rounds, calls)
    out = {"wall_us": {k: 1e6 * v for k, v in wall.items()}, "iterations": its, "trace": {}}
    for label in runs:
        with tempfile.TemporaryDirectory() as d:
            for _ in range(20):
                call(label)
            with jax.profiler.trace(d):
                for _ in range(traced):
                    call(label)
            cs = _calls(d, names[label])
        out["trace"][label] = {k: float(np.median([c[k] for c in cs])) for k in cs[0]}
    # the same runs with the start accepted at 64 eps (a diagnostic; traced for the kernel time only)
    saved = newton.START_ACCEPT
    newton.START_ACCEPT = 64.0
    try:
        loose = {}
        fresh = SYSTEMS["rolling_disk"]()["system"]  # a new system object: none of its programs compiled yet
        for label, (comp, n) in runs.items():
            if comp is None:
                continue
            f = jax.jit(lambda q, v, h, comp=comp, n=n: md.rollout(
                fresh, q, v, h=h, n_steps=n, scheme="split", composition=comp))
            r = jax.block_until_ready(f(q0, v0, hs[label]))
            with tempfile.TemporaryDirectory() as d:
                for _ in range(20):
                    jax.block_until_ready(f(q0, v0, hs[label]))
                with jax.profiler.trace(d):
                    for _ in range(traced):
                        jax.block_until_ready(f(q0, v0, hs[label]))
                cs = _calls(d, entry_names(f.lower(q0, v0, hs[label]).compile().as_text()))
            loose[label] = {"kernel": float(np.median([c["kernel"] for c in cs])),
                            "iterations": int(np.sum(r.iterations))}
    finally:
        newton.START_ACCEPT = saved
    out["start_64_eps"] = loose
    return out


def table(res: dict) -> str:
    runs = [k for k in res["trace"] if k != "trivial jit"]
    lines = ["| | trivial jit | " + " | ".join(f"`{k}`" for k in runs) + " |", "|---|---|" + "---|" * len(runs)]

    def row(name, f):
        lines.append(f"| {name} | " + " | ".join(f(k) for k in ["trivial jit"] + runs) + " |")

    row("wall time per call, not traced", lambda k: f"{res['wall_us'][k]:.0f}")
    row("Newton iterations", lambda k: "" if k not in res["iterations"] else str(res["iterations"][k]))
    row("traced call (median)", lambda k: f"{res['trace'][k]['wall']:.0f}")
    row("  in the compiled loop kernel", lambda k: "" if k == "trivial jit" else f"{res['trace'][k]['kernel']:.0f}")
    row("  in the other thunks (number)",
        lambda k: f"{res['trace'][k]['other_thunks']:.0f} ({res['trace'][k]['n_thunks'] - 1:.0f})"
        if k != "trivial jit" else f"{res['trace'][k]['other_thunks'] + res['trace'][k]['kernel']:.0f} "
                                   f"({res['trace'][k]['n_thunks']:.0f})")
    row("  transferring the arguments", lambda k: f"{res['trace'][k]['device_put']:.0f}")
    row("  the rest: runtime, hand-offs between threads", lambda k: f"{rest(res['trace'][k]):.0f}")
    row("loop kernel, start accepted at 64 eps (iterations)",
        lambda k: "" if k == "trivial jit" else
        f"{res['start_64_eps'][k]['kernel']:.0f} ({res['start_64_eps'][k]['iterations']})")
    lines.append("")
    lines.append(f"DOP853 at `rtol = atol = 1e-3` on the reduced equations (the reference's accuracy): "
                 f"{res['wall_us']['DOP853, rtol = 1e-3']:.0f} us per call, not traced.")
    return "\n".join(lines)


def rest(t: dict) -> float:
    return t["wall"] - t["kernel"] - t["other_thunks"] - t["device_put"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--traced", type=int, default=200)
    args = ap.parse_args(argv)
    load0 = [round(x, 2) for x in os.getloadavg()]
    res = measure(args.rounds, args.calls, args.traced)
    load1 = [round(x, 2) for x in os.getloadavg()]
    txt = (f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; the process "
           f"runs on CPUs {sorted(os.sched_getaffinity(0))}; load average before {load0}, after {load1}.\n\n"
           f"The rolling disk, `jax.jit(rollout)`, `split` scheme, T = {T}; microseconds per call. Not traced: "
           f"minimum of {args.rounds} interleaved rounds of {args.calls} calls. Traced: median over "
           f"{args.traced} calls in `jax.profiler.trace` (which adds time of its own).\n\n" + table(res) + "\n")
    (HERE / "results" / "call_timeline.md").write_text(txt)
    print(txt)


if __name__ == "__main__":
    main()
