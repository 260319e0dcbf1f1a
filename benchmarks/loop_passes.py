"""The loop program's XLA compile under two sets of options, split into XLA's passes, code generation and kernels.

``python benchmarks/loop_passes.py [--rounds 3] [--against xla|level2] [--out FILE] NAME ...`` (default: the
bundled systems whose first call took longest) runs, for each bundled system and each of two variants, fresh
interpreters that build the loop program ``md.integrate`` compiles (one member, no controls, the
system's default retraction, initial data and ``h``), compile it once with the persistent cache and
the serialized programs off, and run it for 20 steps:

* ``library``: the loop's options as the library sets them
  (``manifold_dirac._run.loop.LOOP_COMPILER_OPTIONS``: XLA's ``reshape-mover`` pass left out);
* ``xla``: XLA's defaults (the options emptied before the program is built); with ``--against level2``
  instead, ``level2``: the library's options with LLVM at level 2 instead of XLA's default 3 (measured and
  not taken, ``docs/performance.md``).

XLA's own timers (``TF_CPP_VMODULE=cpu_compiler=1,ir_compiler=1``) give the time of its HLO passes and of
its code generation (LLVM) for the loop program alone, and LLVM's time on each of the program's kernels
(its modules): ``largest_kernel`` is the longest (the loop's steps, compiled into one kernel), ``kernels``
their number and ``kernels_sum`` their total (kernels compile on several threads). The variants
alternate, their order rotating from one round to the next, and the minimum over ``--rounds`` is
reported. The final points of the two variants are compared bit for bit. ``XLA_FLAGS`` is the
library's own in every child.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.machine import describe, load  # noqa: E402

DEFAULT = ("knife_edge", "rolling_disk", "two_wheel_cart", "rolling_disk_3d", "tumbling_brick", "rolling_ball",
           "four_bar", "spherical_pendulum", "rigid_double_pendulum", "heavy_top")
AGAINST = ("xla", "level2")

CHILD = """
import json, sys
import jax
import numpy as np
import manifold_dirac as md
from manifold_dirac._run import loop
if sys.argv[2] == "xla":
    loop.LOOP_COMPILER_OPTIONS = {}
elif sys.argv[2] == "level2":
    loop.LOOP_COMPILER_OPTIONS = {**loop.LOOP_COMPILER_OPTIONS, "xla_backend_optimization_level": 2}
ex = md.get_example(sys.argv[1])
system = ex.system()
q0, v0 = ex.initial(system)
tr = md.integrate(system, q0, v0=v0, h=ex.h, n_steps=20)
final = np.concatenate([np.asarray(leaf)[-1].ravel() for leaf in jax.tree.leaves(tr.q)])
print("RESULT " + json.dumps({"final": final.tolist()}))
"""


def _seconds(text: str) -> float:
    value, unit = re.match(r"([\d.]+) (us|ms|s)", text).groups()
    return float(value) * {"us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def child(name: str, variant: str) -> dict:
    """One fresh interpreter: the loop's HLO passes and code generation [s], LLVM's time on its kernels (the
    largest, their number and sum), and the final point."""
    from manifold_dirac._config import XLA_FLAGS

    env = {**os.environ, "PYTHONPATH": str(ROOT), "XLA_FLAGS": XLA_FLAGS, "MANIFOLD_DIRAC_JAX_CACHE": "0",
           "MANIFOLD_DIRAC_EXPORT": "0", "MANIFOLD_DIRAC_COMPILE_AHEAD": "0", "TF_CPP_MIN_LOG_LEVEL": "0",
           "TF_CPP_VMODULE": "cpu_compiler=1,ir_compiler=1"}
    res = subprocess.run([sys.executable, "-c", CHILD, name, variant], capture_output=True, text=True, env=env,
                         timeout=900, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{name} ({variant}): {res.stderr[-2000:]}")
    unit = r"([\d.]+ (?:us|ms|s))"
    passes = re.findall(rf"Running HLO passes on \[jit_chunk\] for CPU time: {unit}", res.stderr)
    codegen = re.findall(rf"Compiling \[jit_chunk\] for CPU using JIT time: {unit}", res.stderr)
    if not passes or not codegen:
        raise RuntimeError(f"{name} ({variant}): XLA's timers were not found in its log")
    final = json.loads(res.stdout.split("RESULT ", 1)[1])["final"]
    lines = res.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if "Running HLO passes on [jit_chunk]" in line)
    last = next(i for i, line in enumerate(lines) if "Compiling [jit_chunk] for CPU using JIT time" in line)
    kernels = [_seconds(m.group(1)) for line in lines[first:last]
               if (m := re.search(rf"Compiled LLVM module: \S+ time: {unit}", line))]
    if not kernels:
        raise RuntimeError(f"{name} ({variant}): LLVM's timers of the loop's kernels were not found in its log")
    return {"passes": _seconds(passes[0]), "codegen": _seconds(codegen[0]), "largest_kernel": max(kernels),
            "kernels": len(kernels), "kernels_sum": sum(kernels), "final": final}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", default=list(DEFAULT), help="bundled systems (md.get_example)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--against", choices=AGAINST, default="xla",
                   help="the variant compared with the library's options (default: %(default)s)")
    p.add_argument("--out", type=Path, help="default: results/loop_passes.json, with --against level2 "
                   "results/loop_passes_level2.json")
    a = p.parse_args()
    variants = ("library", a.against)
    a.out = a.out or HERE / "results" / ("loop_passes.json" if a.against == "xla" else "loop_passes_level2.json")
    meta = describe()
    runs: dict[str, dict[str, list[dict]]] = {n: {v: [] for v in variants} for n in a.names}
    for r in range(a.rounds):
        for i, name in enumerate(a.names):
            for variant in (variants if (r + i) % 2 == 0 else variants[::-1]):
                runs[name][variant].append(child(name, variant))
    rows = []
    for name in a.names:
        row: dict = {"name": name}
        for variant in variants:
            rs = runs[name][variant]
            row[variant] = {k: min(x[k] for x in rs) for k in ("passes", "codegen", "largest_kernel", "kernels_sum")}
            row[variant]["kernels"] = rs[0]["kernels"]
            row[variant]["total"] = min(x["passes"] + x["codegen"] for x in rs)
        finals = [x["final"] for v in variants for x in runs[name][v]]
        row["same_final_point"] = all(f == finals[0] for f in finals)
        rows.append(row)
        lib, other = row["library"], row[a.against]
        print(f"{name:24s} XLA's passes {other['passes']:.3f} -> {lib['passes']:.3f} s, code generation "
              f"{other['codegen']:.3f} -> {lib['codegen']:.3f} s (its largest kernel {other['largest_kernel']:.3f} -> "
              f"{lib['largest_kernel']:.3f} s of {lib['kernels']}), loop compile {other['total']:.3f} -> "
              f"{lib['total']:.3f} s, same final point: {row['same_final_point']}", flush=True)
    out = {"meta": meta, "load_end": load(), "rounds": a.rounds, "against": a.against,
           "command": "python benchmarks/loop_passes.py" + (" --against level2" if a.against == "level2" else ""),
           "rows": rows}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
