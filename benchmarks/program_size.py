"""The size of a bundled system's step-loop program: operations of its lowered StableHLO, before XLA's passes.

``python benchmarks/program_size.py [--compile] NAME ...`` imports the library found on ``PYTHONPATH``
(so that the same script measures another checkout), traces and lowers the loop program that
``md.integrate`` compiles for the system's default retraction, initial data and ``h`` (one member,
no controls), and prints one JSON line per system: the number of StableHLO operations, the most
frequent ones, the lowering time and, with ``--compile``, one XLA compile's wall and CPU time (the
persistent cache is off here). ``--step`` does the same for one step of that loop jitted alone (its
step map, as the loop calls it): what the loop adds around its steps is the difference. A loop that is
smaller before XLA's passes compiles in less time (the sphere's written-out Jacobians:
``docs/manifolds.md``); compile times of single runs vary with the machine's load.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import time

os.environ.setdefault("MANIFOLD_DIRAC_JAX_CACHE", "0")  # a compile, not a cache load

import jax  # noqa: E402
import numpy as np  # noqa: E402

import manifold_dirac as md  # noqa: E402
from manifold_dirac._run.integrator import Integrator  # noqa: E402


def size(name: str, compile_it: bool, step: bool = False) -> dict:
    ex = md.get_example(name)
    system = ex.system()
    q0, v0 = ex.initial(system)
    it = Integrator(system, h=ex.h)
    if step:  # one step alone, as the loop runs it (the round-off-floor test left out): what the loop adds is the rest
        state = it.initial_state(q0, v0=v0).members
        fn = jax.jit(lambda s, k, t, h, p: it.stepmap.step(s, k, t, h, p, defer_floor=True))
        args = (state, np.int32(0), np.float64(0.0), np.float64(ex.h), system.params)
    else:
        start = it._start(q0, v0, None, 0.0, None)
        fn = it._chunk_program(len(start.B), True)
        members = it._member_shapes(start)
        f64 = np.dtype(np.float64)
        args = (members, members.q, np.zeros(6, np.int32), jax.ShapeDtypeStruct(members.p.shape, f64), np.zeros(2),
                it._use_params(None, "program_size"), None)  # the loop's arguments, as Integrator._loop_ahead builds
    t = time.perf_counter()
    lowered = fn.lower(*args)
    out = {"name": name, "program": "step" if step else "loop", "lower_s": time.perf_counter() - t}
    ops = re.findall(r'= "?(stablehlo\.[a-z_]+)', lowered.as_text())
    out["ops"] = len(ops)
    out["most_frequent"] = collections.Counter(ops).most_common(5)
    if compile_it:
        t, c = time.perf_counter(), time.process_time()
        lowered.compile()
        out["compile_s"], out["compile_cpu_s"] = time.perf_counter() - t, time.process_time() - c
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="+", help="bundled systems (md.get_example)")
    p.add_argument("--compile", action="store_true", help="also time one XLA compile of the loop")
    p.add_argument("--step", action="store_true", help="one step of the loop alone (jitted) instead of the loop")
    a = p.parse_args()
    for name in a.names:
        print(json.dumps(size(name, a.compile, a.step)), flush=True)


if __name__ == "__main__":
    main()
