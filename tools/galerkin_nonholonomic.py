"""The Galerkin page's table of the rules with nonholonomic constraints.

The symmetric scheme with the ``midpoint``, ``gauss4`` and ``gauss6`` rules
on the inclined knife edge (SE(2), ``exp`` and ``cayley``) and the rolling
disk (SE(2) x R, ``cayley`` and ``exp``), ``h = 0.04, 0.02, 0.01`` over
``T = 2``, against the closed forms of the catalog: the observed order (the
least-squares slope, ``md.analysis.observed_order``) and the error at
``h = 0.01``. Prints the machine and a Markdown table (docs/galerkin.md
quotes it).

Usage (from the repository root)::

    python tools/galerkin_nonholonomic.py
"""

from __future__ import annotations

import os
import platform

import numpy as np

import manifold_dirac as md
from manifold_dirac.analysis import observed_order
from manifold_dirac.study import example_system, point_at

CASES = [
    ("inclined knife edge, SE(2) `exp`", "inclined_knife_edge", "exp"),
    ("inclined knife edge, SE(2) `cayley`", "inclined_knife_edge", "cayley"),
    ("rolling disk, SE(2) × R `cayley`", "rolling_disk", "cayley"),
    ("rolling disk, SE(2) × R `exp`", "rolling_disk", "exp"),
]
RULES = ("midpoint", "gauss4", "gauss6")
HS = np.array([0.04, 0.02, 0.01])
T = 2.0


def errors(name: str, retraction: str, rule: str) -> list[float]:
    ex = md.get_example(name)
    sysm = example_system(ex, retraction)
    q0, v0 = ex.initial(sysm)
    out = []
    for h in HS:
        tr = md.integrate(sysm, q0, v0=v0, h=h, n_steps=int(round(T / h)), discrete_lagrangian=rule)
        out.append(float(ex.error(sysm, point_at(tr.q, -1), tr.t[-1])))
    return out


def main() -> None:
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}"
    )
    print("| system | " + " | ".join(f"`{r}`" for r in RULES) + " |")
    print("|---|" + "---|" * len(RULES))
    for label, name, retraction in CASES:
        cells = []
        for rule in RULES:
            e = errors(name, retraction, rule)
            cells.append(f"{observed_order(HS, e):.2f} ({e[-1]:.1e})")
        print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
