"""The Galerkin rules (gauss4, gauss6) against independent references on every kind of system.

For each kind -- a degenerate Lagrangian with a constraint (the LC circuit), a degenerate
Lagrangian without one (Lotka--Volterra), holonomic (the Cartesian pendulum), nonholonomic (the
knife edge) and an interconnection (two masses torn apart at a spring) -- run the midpoint,
gauss4 and gauss6 rules at ``h`` and ``h/2`` and report the error at ``T`` against the example's
reference (closed form or a tight ``solve_ivp``; for Lotka--Volterra the conserved quantity) and
the observed order ``log2(e(h) / e(h/2))``, or the error the start raises.

Run: ``python tools/galerkin_audit.py`` (prints a markdown table; docs/schemes.md quotes it).
"""

from __future__ import annotations

import platform
import warnings

import numpy as np

import manifold_dirac  # noqa: F401
from manifold_dirac import integrate
from manifold_dirac.study import example_system, point_at
from manifold_dirac.systems import LOTKA_VOLTERRA_INITIAL, lotka_volterra_invariant
from manifold_dirac.systems.catalog import get_example
from manifold_dirac.systems.degenerate import lotka_volterra

KINDS = [("degenerate, constrained", "lc_circuit"), ("holonomic", "cartesian_pendulum"),
         ("nonholonomic", "knife_edge"), ("interconnected", "mass_spring_torn")]
RULES = ("midpoint", "gauss4", "gauss6")


def _catalog_error(name: str, rule: str, h: float) -> float:
    ex = get_example(name)
    sysm = example_system(ex, ex.retractions[0])
    q0, v0 = ex.initial(sysm)
    n = int(round(ex.T / h))
    tr = integrate(sysm, q0, v0=v0, h=h, n_steps=n, discrete_lagrangian=rule)
    return float(ex.error(sysm, point_at(tr.q, -1), tr.t[-1])), ex.T


def _lv_error(rule: str, h: float) -> float:
    q0, p0 = LOTKA_VOLTERRA_INITIAL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = integrate(lotka_volterra(), q0, p0=p0, h=h, t_final=2.0, discrete_lagrangian=rule)
    inv = lotka_volterra_invariant(np.asarray(tr.q))
    return float(np.max(np.abs(inv - inv[0]))), 2.0


def main() -> None:
    print(f"machine: {platform.machine()} {platform.processor() or ''}, python {platform.python_version()}")
    print("| kind | system | reference | rule | h | error(h) | error(h/2) | observed order |")
    print("|---|---|---|---|---|---|---|---|")
    cases = [(k, n, lambda r, h, n=n: _catalog_error(n, r, h), get_example(n).h) for k, n in KINDS]
    cases.insert(1, ("degenerate, unconstrained", "lotka_volterra", _lv_error, 0.1))
    for kind, name, err, h in cases:
        ref = ("conserved quantity" if name == "lotka_volterra" else
               ("closed form / solve_ivp" if get_example(name).reference is not None else "none"))
        for rule in RULES:
            try:
                e1, _ = err(rule, h)
                e2, _ = err(rule, h / 2)
                order = np.log2(e1 / e2) if e1 > 0 and e2 > 0 else float("nan")
                print(f"| {kind} | {name} | {ref} | {rule} | {h:g} | {e1:.2e} | {e2:.2e} | {order:.2f} |")
            except Exception as exc:  # noqa: BLE001 - the refusal is the result
                print(f"| {kind} | {name} | {ref} | {rule} | {h:g} | refused: {type(exc).__name__} | | |")


if __name__ == "__main__":
    main()
