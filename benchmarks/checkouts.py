"""Two or more checkouts of the library side by side in one process: composed ``jax.jit(rollout)`` runs and DOP853.

Run (from the repository root, with an older revision checked out beside it)::

    git worktree add /tmp/before <revision>
    PYTHONPATH= taskset -c 1 python benchmarks/checkouts.py /tmp/before,. --systems rolling_disk \\
        --out checkouts_noise_gate.md

Each checkout's package is imported in turn under the name ``manifold_dirac`` (the modules of the one before
are taken out of ``sys.modules`` first, so each keeps its own), with its own ``benchmarks/composition.py``. For
each system and target ``1e-6 ... 1e-10`` the composed run is the fastest of the **first** checkout's
``benchmarks/results/composition.json`` (so that every checkout runs the same composition and step count), and
DOP853 at the ``rtol`` that reached the target there. Wall time per call, minimum of ``--rounds`` interleaved
rounds of ``--calls`` calls, every checkout's calls and DOP853's in the same rounds: a machine whose speed
moves over minutes (a shared virtual machine) moves them all alike, which separate processes do not see. The
Newton iterations of each run are reported too (the same for a change that does not touch the solves).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _import_checkout(root: Path):
    """``(composition module, manifold_dirac module)`` of the checkout at ``root`` (imported afresh)."""
    for name in [m for m in sys.modules if m == "manifold_dirac" or m.startswith("manifold_dirac.")
                 or m == "composition"]:
        del sys.modules[name]
    sys.path[:0] = [str(root), str(root / "benchmarks")]
    try:
        comp = importlib.import_module("composition")
        md = importlib.import_module("manifold_dirac")
    finally:
        sys.path.remove(str(root))
        sys.path.remove(str(root / "benchmarks"))
    if Path(md.__file__).resolve().parent != (root / "manifold_dirac").resolve():
        raise RuntimeError(f"{root}: imported {md.__file__} instead (is PYTHONPATH empty?)")
    return comp, md


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkouts", help="comma-separated checkout roots; the first one's stored runs are used")
    ap.add_argument("--systems", default="rolling_disk")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--out", default="", help="write the table to benchmarks/results/OUT as well")
    args = ap.parse_args(argv)
    import jax
    import numpy as np
    from scipy.integrate import solve_ivp

    interleaved_min = _import_checkout(HERE.parent)[0].interleaved_min  # this checkout's timing loop
    roots = [Path(p).resolve() for p in args.checkouts.split(",")]
    labels = [f"{r.name} ({_revision(r)})" for r in roots]
    if len(set(labels)) < len(labels):  # the same folder name and commit twice: told apart by position
        labels = [f"{i + 1}: {lb}" for i, lb in enumerate(labels)]
    names = args.systems.split(",")
    stored = json.loads((roots[0] / "benchmarks" / "results" / "composition.json").read_text())["systems"]
    load_before = [round(x, 2) for x in os.getloadavg()]
    fs, iterations, chosen = {}, {}, {}
    for label, root in zip(labels, roots):
        C, md = _import_checkout(root)
        for name in names:
            case = C.SYSTEMS[name]()
            runs = stored[name]["runs"]
            for k in range(6, 11):
                tgt = 10.0 ** -k
                lib = [r for r in runs if r["method"].endswith("[jit rollout]") and "+" in r["method"]
                       and r["error"] <= tgt]
                ivp = [r for r in runs if r["method"] == "DOP853" and r["error"] <= tgt]
                if not lib or not ivp:
                    continue
                best = min(lib, key=lambda r: r["wall"])
                dop = min(ivp, key=lambda r: r["wall"])
                comp = best["method"].split("+ ")[1].split(" ")[0]
                n = int(round(C.T / best["setting"]))
                chosen[(name, k)] = (comp, n, dop["setting"])
                f = jax.jit(lambda q, v, h, s=case["system"], comp=comp, n=n, md=md: md.rollout(
                    s, q, v, h=h, n_steps=n, scheme="split", composition=comp))
                h = C.T / n
                r = f(case["q0"], case["v0"], h)
                iterations[(name, k, label)] = int(np.sum(r.iterations))
                fs[(name, k, label)] = lambda f=f, case=case, h=h: jax.block_until_ready(f(case["q0"], case["v0"], h))
                if label == labels[0]:
                    fs[(name, k, "DOP853")] = lambda case=case, rt=dop["setting"], T=C.T: solve_ivp(
                        case["rhs"], (0.0, T), case["y0"], method="DOP853", rtol=rt, atol=rt)
    best = interleaved_min(fs, args.rounds, args.calls)
    head = ("| system | target | composed run | DOP853 (rtol) | "
            + " | ".join(f"{lb}: time (iterations), / DOP853" for lb in labels) + " |")
    rows = [head, "|" + "---|" * (4 + len(labels))]
    for (name, k), (comp, n, rt) in chosen.items():
        d = best[(name, k, "DOP853")]
        cells = [f"{1e3 * best[(name, k, lb)]:.3g} ms ({iterations[(name, k, lb)]}), "
                 f"**{best[(name, k, lb)] / d:.2f}**" for lb in labels]
        rows.append(f"| {name} | 1e-{k:02d} | `{comp}`, {n} steps | {1e3 * d:.3g} ms ({rt:.0e}) | "
                    + " | ".join(cells) + " |")
    txt = (f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}; the process runs "
           f"on CPUs {sorted(os.sched_getaffinity(0))}; load average before: {load_before}.\n\n"
           f"`jax.jit(rollout)`, `split` scheme, T = 2, of each checkout in one process; minimum of {args.rounds} "
           f"interleaved rounds of {args.calls} calls (`benchmarks/checkouts.py`).\n\n" + "\n".join(rows)
           + f"\n\nLoad average after: {[round(x, 2) for x in os.getloadavg()]}.\n")
    if args.out:
        (HERE / "results" / args.out).write_text(txt)
    print(txt)
    return txt


def _revision(root: Path) -> str:
    """The short commit of a checkout (and ``+`` when its tree has changes), or ``?``."""
    import subprocess

    try:
        rev = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


if __name__ == "__main__":
    main()
