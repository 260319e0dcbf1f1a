"""The Galerkin rules (gauss4, gauss6) against independent references on every kind of system.

For each kind -- a degenerate Lagrangian with a constraint (the LC circuit), a degenerate
Lagrangian without one (Lotka--Volterra), holonomic (the Cartesian pendulum), nonholonomic (the
knife edge), interconnected (the mass--spring chain torn at a massless port; the rolling disk,
an SE(2) body and a wheel joined by rolling without slipping) -- run the midpoint, gauss4 and
gauss6 rules at ``h`` and ``h/2`` and report the error at ``T`` against a reference that uses no
discrete Lagrangian (the example's closed form or tight ``solve_ivp``; ``solve_ivp`` of the
index-reduced equations of motion, :func:`ode_reference`; for Lotka--Volterra the conserved
quantity) and the observed order ``log2(e(h) / e(h/2))``, or the error the start raises.

Run: ``python tools/galerkin_audit.py`` (prints the machine and a markdown table;
docs/schemes.md quotes it).
"""

from __future__ import annotations

import os
import platform
import warnings

import numpy as np

import manifold_dirac as md
from manifold_dirac.study import example_system, point_at
from manifold_dirac.systems import LOTKA_VOLTERRA_INITIAL, lotka_volterra, lotka_volterra_invariant

KINDS = [("degenerate, constrained", "lc_circuit"), ("holonomic", "cartesian_pendulum"),
         ("nonholonomic", "knife_edge"),
         ("interconnected, massless port", "mass_spring_torn"),
         ("interconnected, rolling", "rolling_disk")]
RULES = ("midpoint", "gauss4", "gauss6")


def _catalog_error(name: str, rule: str, h: float) -> float:
    ex = md.get_example(name)
    sysm = example_system(ex, ex.retractions[0])
    q0, v0 = ex.initial(sysm)
    n = int(round(ex.T / h))
    tr = md.integrate(sysm, q0, v0=v0, h=h, n_steps=n, discrete_lagrangian=rule)
    return float(ex.error(sysm, point_at(tr.q, -1), tr.t[-1])), ex.T


def ode_reference(sysm, q0, v0, T: float) -> np.ndarray:
    """``q(T)`` of a system on a vector space with a quadratic kinetic energy, by a tight ``solve_ivp``.

    The equations of motion with the constant mass matrix ``M = d2L/dv2`` and
    ``C = [A; dg](q)``, differentiated once in the constraint (index reduction):

        [[M, C^T], [C, 0]] [v'; lam] = [dL/dq; -(dC/dq v) v],

    solved at every evaluation of the right-hand side. ``M`` may be singular
    (a massless coordinate, such as the port of a torn interconnection) as long
    as it is positive definite on ``ker C``: the block matrix is then regular
    and the algebraic equation of the massless coordinate is solved with the
    rest. The drift off the constraint over ``T`` stays at the integrator's
    tolerance. Independent of the discrete Lagrangians: no step map, no Newton
    solve.

    Returns the flattened coordinates at ``T``, shape ``(n,)``.
    """
    import jax
    import jax.numpy as jnp
    from scipy.integrate import solve_ivp

    flat0 = np.concatenate([np.ravel(np.asarray(a, dtype=float)) for a in jax.tree.leaves(q0)])
    treedef = jax.tree.structure(q0)
    sizes = [np.size(a) for a in jax.tree.leaves(q0)]
    shapes = [np.shape(a) for a in jax.tree.leaves(q0)]
    n = flat0.size

    def unflat(x):
        parts, i = [], 0
        for sz, sh in zip(sizes, shapes):
            parts.append(jnp.reshape(x[i:i + sz], sh))
            i += sz
        return jax.tree.unflatten(treedef, parts)

    params = sysm.params
    M = np.asarray(jax.jacfwd(lambda w: sysm.momentum(unflat(jnp.asarray(flat0)), w, params))(jnp.zeros(n)))

    @jax.jit
    def rhs(y):
        x, v = y[:n], y[n:]
        q = unflat(x)
        f = sysm.partials(q, v, params)[0]
        if not sysm.n_constraints:
            return jnp.concatenate([v, jnp.linalg.solve(M, f)])
        C = sysm.constraint_matrix(q, params)
        m = C.shape[0]
        dCv = jax.jvp(lambda xx: sysm.constraint_matrix(unflat(xx), params) @ v, (x,), (v,))[1]
        K = jnp.block([[M, C.T], [C, jnp.zeros((m, m))]])
        sol = jnp.linalg.solve(K, jnp.concatenate([f, -dCv]))
        return jnp.concatenate([v, sol[:n]])

    sol = solve_ivp(lambda t, y: np.asarray(rhs(jnp.asarray(y))), (0.0, T),
                    np.concatenate([flat0, np.asarray(v0, dtype=float)]),
                    method="DOP853", rtol=1e-13, atol=1e-13)
    if not sol.success:
        raise RuntimeError(f"ode_reference: solve_ivp failed: {sol.message}")
    return sol.y[:n, -1]


_REFS: dict = {}


def _ode_error(name: str, rule: str, h: float) -> float:
    import jax

    ex = md.get_example(name)
    sysm = example_system(ex, ex.retractions[0])
    q0, v0 = ex.initial(sysm)
    ref = _REFS.get(name)
    if ref is None:
        ref = _REFS[name] = ode_reference(sysm, q0, np.asarray(v0, dtype=float), ex.T)
    tr = md.integrate(sysm, q0, v0=v0, h=h, n_steps=int(round(ex.T / h)), discrete_lagrangian=rule)
    end = np.concatenate([np.ravel(np.asarray(a)) for a in jax.tree.leaves(point_at(tr.q, -1))])
    return float(np.max(np.abs(end - ref))), ex.T


def _lv_error(rule: str, h: float) -> float:
    q0, p0 = LOTKA_VOLTERRA_INITIAL
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = md.integrate(lotka_volterra(), q0, p0=p0, h=h, t_final=2.0, discrete_lagrangian=rule)
    inv = lotka_volterra_invariant(np.asarray(tr.q))
    return float(np.max(np.abs(inv - inv[0]))), 2.0


def _reference_name(name: str) -> str:
    if name == "lotka_volterra":
        return "conserved quantity"
    if md.get_example(name).reference is not None:
        return "closed form"  # the catalog's references of the systems in KINDS are closed forms
    return "solve_ivp, index-reduced"


def main() -> None:
    print(f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}")
    print("| kind | system | reference | rule | h | error(h) | error(h/2) | observed order |")
    print("|---|---|---|---|---|---|---|---|")
    cases = [(k, n, (lambda r, h, n=n: _catalog_error(n, r, h)) if md.get_example(n).reference is not None
              else (lambda r, h, n=n: _ode_error(n, r, h)), md.get_example(n).h) for k, n in KINDS]
    cases.insert(1, ("degenerate, unconstrained", "lotka_volterra", _lv_error, 0.1))
    for kind, name, err, h0 in cases:
        ref = _reference_name(name)
        for rule in RULES:
            # gauss6 reaches the reference's round-off at the others' h
            h = h0 * (5 if rule == "gauss6" else 1)
            try:
                e1, _ = err(rule, h)
                e2, _ = err(rule, h / 2)
                order = np.log2(e1 / e2) if e1 > 0 and e2 > 0 else float("nan")
                print(f"| {kind} | {name} | {ref} | {rule} | {h:g} | {e1:.2e} | {e2:.2e} | {order:.2f} |")
            except Exception as exc:  # noqa: BLE001 - the refusal is the result
                print(f"| {kind} | {name} | {ref} | {rule} | {h:g} | refused (`{type(exc).__name__}`) | | |")


if __name__ == "__main__":
    main()
