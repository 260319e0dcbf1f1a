"""The Galerkin page's tables of measured orders (free systems and holonomic constraints).

For every system of the order matrix of ``tests/mechanics/test_galerkin.py`` (the same
systems, initial data, horizons, step sizes and references: ``solve_ivp`` DOP853 where
the test has one, else ``gauss6`` at a quarter of the smallest step) and the rules
``gauss4`` and ``gauss6``: the observed order (least-squares slope of the global error
at ``T`` over three step sizes, ``md.analysis.observed_order``) and the three errors.
Then the midpoint rule with SO(3)'s Cayley map (quoted on the schemes page) and the
pre-asymptotic slopes the page quotes: ``gauss6`` on the heavy top at
``h = 0.1 … 0.025``, on the double pendulum at ``h = 0.1 … 0.025``, and both rules on
the four-bar at ``h = 0.1 … 0.025``. Prints the machine and Markdown tables
(docs/galerkin.md quotes them). About 5 minutes of CPU (one compilation per system and
rule dominates; 20 minutes and more of wall time on a loaded machine).

Usage (from the repository root)::

    python tools/galerkin_orders.py            # everything
    python tools/galerkin_orders.py --extra    # only the lines after the table
    python tools/galerkin_orders.py --keys cartesian_pendulum,four_bar   # these rows, then the lines
"""

from __future__ import annotations

import datetime
import importlib
import os
import platform
import sys
from pathlib import Path

import numpy as np

from manifold_dirac.analysis import observed_order

ROOT = Path(__file__).resolve().parents[1]
KEYS = [
    "heavy_top_exp",
    "heavy_top_cayley",
    "double_pendulum",
    "planar_body_exp",
    "planar_body_cayley",
    "planar_body_so2xr2",
    "body_and_spring",
    "cartesian_pendulum",
    "four_bar",
]
RULES = ("gauss4", "gauss6")
# pre-asymptotic step ranges quoted on the page: (key, rule, step sizes)
EXTRA = [
    ("heavy_top_cayley", "midpoint", [0.04, 0.02, 0.01]),  # not declared symmetric (the schemes page)
    ("heavy_top_exp", "gauss6", [0.1, 0.05, 0.025]),
    ("heavy_top_cayley", "gauss6", [0.1, 0.05, 0.025]),
    ("double_pendulum", "gauss6", [0.1, 0.05, 0.025]),
    ("four_bar", "gauss4", [0.1, 0.05, 0.025]),
    ("four_bar", "gauss6", [0.1, 0.05, 0.025]),
]


def _cases():
    """The order matrix's systems and helpers: the test module itself (one definition of each case)."""
    sys.path.insert(0, str(ROOT))
    return importlib.import_module("tests.mechanics.test_galerkin")


def equispaced_gauss6(t) -> tuple[float, list[float]]:
    """``gauss6`` with ``g`` held at the equispaced interior points 1/3, 2/3 instead of the Lobatto
    points (the sensitivity case of ``test_holonomic_order_needs_the_lobatto_points``)."""
    from manifold_dirac import integrate

    bad = t.GalerkinRule("gauss6_equispaced_constraint", 3)
    object.__setattr__(bad, "_Lc", t._lagrange_tables(np.arange(4) / 3, np.array([1 / 3, 2 / 3]))[0])
    c = t.case("cartesian_pendulum")
    hs = np.array(t.H_CART[6])
    qref = t.reference("cartesian_pendulum")
    errs = [
        float(
            np.linalg.norm(
                np.asarray(
                    integrate(
                        c["system"], t.X0, v0=t.V0, h=h, n_steps=round(1 / h), discrete_lagrangian=bad
                    ).q[-1]
                )
                - qref
            )
        )
        for h in hs
    ]
    return float(observed_order(hs, errs)), errs


def main() -> None:
    args = sys.argv[1:]
    extra_only = "--extra" in args
    keys = args[args.index("--keys") + 1].split(",") if "--keys" in args else KEYS
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    )
    t = _cases()
    if extra_only:
        _extra(t)
        return
    print("| system | h (gauss4 / gauss6) | `gauss4` slope (errors) | `gauss6` slope (errors) |")
    print("|---|---|---|---|")
    for key in keys:
        cells, steps = [], []
        for rule in RULES:
            order, slope, errs = t.observed(key, rule)
            steps.append(", ".join(f"{h:g}" for h in t.case(key)["hs"][order]))
            cells.append(f"{slope:.2f} ({', '.join(f'{e:.1e}' for e in errs)})")
        print(f"| {key} | {' / '.join(steps)} | " + " | ".join(cells) + " |", flush=True)
    _extra(t)


def _extra(t) -> None:
    print("\nmidpoint with Cayley, and pre-asymptotic ranges:")
    for key, rule, hs in EXTRA:
        qref = t.reference(key)
        errs = [t.error(key, t.end_point(key, rule, h), qref) for h in hs]
        print(
            f"  {key} {rule} h = {hs}: slope {observed_order(np.array(hs), errs):.2f}, "
            f"errors {', '.join(f'{e:.1e}' for e in errs)}",
            flush=True,
        )
    slope, errs = equispaced_gauss6(t)
    print(
        f"  cartesian_pendulum gauss6, g at equispaced interior points: slope {slope:.2f}, "
        f"errors {', '.join(f'{e:.1e}' for e in errs)}",
        flush=True,
    )


if __name__ == "__main__":
    main()
