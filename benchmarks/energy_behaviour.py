"""Energy behaviour of the three schemes over long runs (the table in ``docs/schemes.md``).

For each system and scheme: ``h = 0.02``, ``T = 300`` (15 000 steps), midpoint rule. Prints
the energy's least-squares slope (J/s), the relative energy error ``e(t) = max_{s<=t} |E - E0| / E0``
at ``T/10`` and ``T``, and how the run ended, and classifies the behaviour:

* **bounded**: ``e(T) < 3 e(T/10)`` (the error does not grow after its first oscillations);
* **drift**: it grows; the run is repeated at ``h = 0.01`` and the ratio ``e_0.02(T) / e_0.01(T)``
  printed (2: an O(h) drift);
* **unstable**: the run failed, or ``e(T) > 30 e(T/10)`` (faster than linear growth).

Systems (all energy-conserving in continuous time):

* ``nonholonomic_particle``: ``R^3``, ``L = |v|^2/2 - (x^2 + y^2)/2``, ``z' = y x'``
  (a one-form that varies in the coordinates);
* ``knife_edge_R3``: the knife edge in ``(x, y, theta)`` coordinates on ``R^3``, one-form
  ``[sin theta, -cos theta, 0]``, with the incline's gravity ``g sin(alpha) x``;
* ``chaplygin_sled``: SE(2) ``exp``, body constraint ``v_y = 0`` (constant in the body frame);
* ``veselova``: a rigid body on SO(3) ``exp``, ``I = diag(1, 2, 3)``, ``<w, R^T e3> = 0``;
* ``rolling_disk``: the interconnected vertical disk (SE(2) ``exp`` x R), and the same with
  SE(2)'s ``so2xr2`` retraction (not symmetric; ``A(c(s)) c'(s)`` then varies along the curve).

Run: ``PYTHONPATH=. python benchmarks/energy_behaviour.py`` (about 5 min on two busy cores:
mostly compilation).
"""

from __future__ import annotations

import sys
import time

import jax.numpy as jnp
import numpy as np

from manifold_dirac import Euclidean, LagrangeDiracSystem, integrate
from manifold_dirac.analysis import energy_drift
from manifold_dirac._errors import StepError
from manifold_dirac._manifolds.se2 import SE2
from manifold_dirac._manifolds.so3 import SO3
from manifold_dirac.systems import chaplygin_sled
from manifold_dirac.systems import interconnected as S


def nonholonomic_particle():
    return LagrangeDiracSystem(Euclidean(3), lambda q, v: 0.5 * v @ v - 0.5 * (q[0] ** 2 + q[1] ** 2),
                               constraint=lambda q: jnp.stack([-q[1], 0.0 * q[0], 1.0 + 0.0 * q[0]])[None],
                               name="nonholonomic_particle")


def knife_edge_R3(g=9.81, alpha=0.3):
    return LagrangeDiracSystem(
        Euclidean(3), lambda q, v: 0.5 * (v[0] ** 2 + v[1] ** 2) + 0.25 * v[2] ** 2 + g * np.sin(alpha) * q[0],
        constraint=lambda q: jnp.stack([jnp.sin(q[2]), -jnp.cos(q[2]), 0.0 * q[2]])[None], name="knife_edge_R3")


def veselova(inertia=(1.0, 2.0, 3.0)):
    I = jnp.asarray(inertia)
    return LagrangeDiracSystem(SO3("exp"), lambda q, v: 0.5 * v @ (I * v),
                               constraint=lambda q: (q.T @ jnp.array([0.0, 0.0, 1.0]))[None], name="veselova")


def cases():
    R0 = np.asarray(SO3().exp(jnp.array([0.3, -0.2, 0.1])))
    g = R0.T @ np.array([0.0, 0.0, 1.0])
    w0 = np.cross(g, np.array([1.0, 0.5, -0.3]))  # perpendicular to R^T e3
    return {
        "nonholonomic_particle": (nonholonomic_particle(), np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0])),
        "knife_edge_R3": (knife_edge_R3(), np.zeros(3), np.array([2.0, 0.0, 1.0])),
        "chaplygin_sled": (chaplygin_sled(), SE2().identity(), np.array([1.0, 1.0, 0.0])),
        "veselova": (veselova(), R0, w0),
        "rolling_disk": (S.rolling_disk(0.5), (SE2().identity(), np.zeros(1)), np.array([0.7, 1.0, 0.0, 2.0])),
        "rolling_disk_so2xr2": (S.rolling_disk(0.5, retraction="so2xr2"), (SE2("so2xr2").identity(), np.zeros(1)),
                                np.array([0.7, 1.0, 0.0, 2.0])),
    }


def one(sysm, q0, v0, h, T, scheme):
    """(slope, e(T/10), e(T), how the run ended) of one run."""
    n = int(round(T / h))
    try:
        tr = integrate(sysm, q0, v0=v0, h=h, n_steps=n, scheme=scheme, stride=10)
        t, E, end = tr.t, tr.energy, "ok"
    except StepError as e:
        part = e.trajectory
        t, E = (part.t, part.energy) if part is not None else (np.array([0.0]), np.array([np.nan]))
        end = f"{type(e).__name__} at t = {e.time:.1f}"
    good = np.isfinite(E)
    t, E = t[good], E[good]
    E0 = E[0]
    slope = energy_drift(t, E)[0] if len(t) > 2 else np.nan
    err = np.abs(E - E0) / abs(E0)
    early = float(np.max(err[t <= T / 10]))
    return slope, early, float(np.max(err)), end


def main(T=300.0):
    print("| system | scheme | slope (J/s) | e(T/10) | e(T) | e(T) ratio h=0.02/0.01 | end | behaviour |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (sysm, q0, v0) in cases().items():
        for scheme in ("symmetric", "plus", "minus"):
            t0 = time.time()
            slope, early, rel, end = one(sysm, q0, v0, 0.02, T, scheme)
            ratio = "-"
            if end != "ok" or not np.isfinite(rel) or rel > 30 * early:
                kind = "unstable"
            elif rel < 3 * early:
                kind = "bounded"
            else:
                r = rel / one(sysm, q0, v0, 0.01, T, scheme)[2]
                ratio = f"{r:.2f}"
                kind = "O(h) drift" if 1.6 < r < 2.4 else ("O(h^2) drift" if 3.2 < r < 4.8 else "drift")
            print(f"| {name} | {scheme} | {slope:.2e} | {early:.1e} | {rel:.1e} | {ratio} | {end} | {kind} |"
                  f"  <!-- {time.time() - t0:.0f} s -->", flush=True)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 300.0)
