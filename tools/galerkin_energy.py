"""The energy reports of the Galerkin page ("Energy reports"): Legendre against central-difference velocity.

Heavy top (SO(3), ``exp``; the start of the page's first example), T = 20:
for each rule and step, the variation ``max_k |E_k - E_0|`` of the reported
energy (``Trajectory.energy_error``), its largest distance to ``H(q_k, p_k)``
(the energy at the Legendre inverse ``v = M^{-1} p`` of the stored momentum,
``M = d2L/dv2``), and the variation of the energy computed instead with the
central-difference velocity ``(R^{-1}_{q_k}(q_{k+1}) - R^{-1}_{q_k}(q_{k-1}))/(2h)``
(interior points, against the reported ``E_0`` of the initial velocity, as the
reported energy of the second-order rules is), and with the Legendre velocity.

Usage (from the repository root)::

    python tools/galerkin_energy.py
"""

from __future__ import annotations

import os
import platform

import jax
import jax.numpy as jnp
import numpy as np

import manifold_dirac as md

RUNS = (
    ("gauss4", 0.1),
    ("gauss4", 0.05),
    ("gauss6", 0.1),
    ("gauss6", 0.05),
    ("midpoint", 0.02),
    ("midpoint", 0.01),
)


def main() -> None:
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}"
    )
    top = md.systems.heavy_top()
    params = top.params
    q0, w0 = top.Q.from_coordinates([0.3, 0.1, 0.0]), np.array([0.5, -0.2, 2.0])

    def legendre_v(q, p):
        M = jax.jacfwd(lambda v: top.momentum(q, v, params))(jnp.zeros(top.dim))
        return jnp.linalg.solve(M, p)

    energy = jax.jit(jax.vmap(lambda q, v, p: top.energy(q, v, p, params)))
    legendre = jax.jit(jax.vmap(legendre_v))
    inv = jax.jit(jax.vmap(top.Q.inverse_retract))

    print(
        "| rule | h | reported energy variation | max abs(E - H(q, p)) | central-difference variation"
        " | Legendre variation |"
    )
    print("|---|---|---|---|---|---|")
    for rule, h in RUNS:
        tr = md.integrate(top, q0, v0=w0, h=h, t_final=20.0, discrete_lagrangian=rule)
        q, p = jnp.asarray(tr.q), jnp.asarray(tr.p)
        H = np.asarray(energy(q, legendre(q, p), p))
        vc = (inv(q[1:-1], q[2:]) - inv(q[1:-1], q[:-2])) / (2 * h)
        Ec = np.asarray(energy(q[1:-1], vc, p[1:-1]))
        rep = np.asarray(tr.energy)
        ok = np.isfinite(rep)
        print(
            f"| {rule} | {h:g} | {tr.energy_error:.3e} | {np.max(np.abs(rep[ok] - H[ok])):.0e} | "
            f"{np.max(np.abs(Ec - rep[0])):.3e} | {np.max(np.abs(H - H[0])):.3e} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
