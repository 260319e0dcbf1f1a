"""A bundled system with a given discrete Lagrangian in fresh processes, two checkouts alternating.

``python benchmarks/rule_first_call.py --before DIR ROUNDS NAME:RULE [NAME:RULE ...]`` runs, for each
``NAME:RULE`` (a bundled system and a ``discrete_lagrangian``, e.g. ``rolling_ball:gauss6``) and each
round, one fresh interpreter per checkout (``DIR``, then this one) with the persistent cache and the
serialized programs switched off: the first ``integrate`` call of 500 steps (wall and CPU time of the
process: tracing, lowering, XLA compile, with the loop compiled ahead on two cores), then the
fastest of 5 warm calls of 2000 steps recorded once (``stride=2000``), per step, and the first
coordinates of the final point. One line per process; no results file (redirect the output).
``all_systems.py`` does the same for every system with its own rule, in more detail.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import sys, time, resource
import manifold_dirac as md, numpy as np, jax
name, rule = sys.argv[1], sys.argv[2]
ex = md.get_example(name); s = ex.system(); q0, v0 = ex.initial(s)
r0 = resource.getrusage(resource.RUSAGE_SELF); t = time.perf_counter()
tr = md.integrate(s, q0, v0=v0, h=ex.h, n_steps=500, discrete_lagrangian=rule)
t1 = time.perf_counter() - t; r1 = resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
best = 1e9
for i in range(5):
    t = time.perf_counter()
    md.integrate(s, q0, v0=v0, h=ex.h, n_steps=2000, discrete_lagrangian=rule, stride=2000)
    best = min(best, time.perf_counter() - t)
print(f"cold {t1:.2f} cpu {cpu:.2f} us/step {best / 2000 * 1e6:.2f} final {np.ravel(np.asarray(jax.tree.leaves(tr.q)[0][-1]))[:2]}")
'''


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", type=Path, required=True, help="the other checkout")
    p.add_argument("rounds", type=int)
    p.add_argument("cases", nargs="+", help="NAME:RULE")
    args = p.parse_args(argv)
    for r in range(args.rounds):
        for case in args.cases:
            name, rule = case.split(":")
            for label, tree in (("before", args.before.resolve()), ("this", ROOT)):
                env = dict(os.environ, PYTHONPATH=str(tree), MANIFOLD_DIRAC_JAX_CACHE="0", MANIFOLD_DIRAC_EXPORT="0")
                env.pop("XLA_FLAGS", None)
                out = subprocess.run([sys.executable, "-c", CHILD, name, rule], env=env, capture_output=True, text=True,
                                     cwd=str(ROOT.parent))
                line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-300:]
                print(r, name, rule, label, line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
