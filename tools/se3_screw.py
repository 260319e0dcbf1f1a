"""The manifolds page's SE(3) numbers beyond the speed table: orders in gravity, and the screw motion.

1. The tumbling brick (``md.systems.tumbling_brick``, 1 kg, 0.2 x 0.1 x 0.05 m) in
   gravity, spinning near its intermediate axis and thrown up at 2 m/s (the initial
   data of ``tests/systems/test_tumbling_brick.py``), symmetric scheme, midpoint rule,
   ``h = 0.01, 0.005, 0.0025`` to ``T = 0.5``: the largest entry of the pose error
   against ``tumbling_brick_reference`` (DOP853, tolerance 1e-13) and the regression
   slope, for ``exp``, ``cayley`` and ``so3xr3``.
2. A cube (no gravity) constrained to move along its own x-axis with twist
   ``xi = (1, 0.5, 2, 1.5, 0, 0)``, whose exact motion is the screw ``q0 exp(t xi)``,
   to ``T = 2`` at ``h = 0.02`` and ``0.01``: started from the discrete momentum of the
   screw (``p0 = -J0(h xi)^T dL/dv``) with ``exp``, ``so3xr3`` and ``cayley``, and
   from the continuous Legendre transform (``v0 = xi``) with ``exp``, for a cube of
   side 0.1 m and of side 1 m.

Prints the machine and the numbers docs/manifolds.md quotes (errors do not depend on
the machine). About a minute of CPU (one compilation per system).

Usage (from the repository root)::

    python tools/se3_screw.py
"""

from __future__ import annotations

import datetime
import os
import platform

import numpy as np

import manifold_dirac as md
from manifold_dirac.systems.rigid_bodies import brick_inertia

Q0 = np.asarray(md.SE3().from_coordinates([0.0, 0.0, 1.0, 0.3, -0.2, 0.1]))
V0 = np.array([0.2, 3.0, 0.3, 0.3, 0.2, 2.0])  # near the intermediate axis, thrown up at 2 m/s
XI = np.array([1.0, 0.5, 2.0, 1.5, 0.0, 0.0])
A = np.array([[0.0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]])  # no velocity across the body's x-axis


def gravity_orders() -> None:
    T, hs = 0.5, np.array([0.01, 0.005, 0.0025])
    ref = md.systems.tumbling_brick_reference(T, Q0, V0)
    for retraction in ("exp", "cayley", "so3xr3"):
        sysm = md.systems.tumbling_brick(retraction=retraction)
        errs = [
            float(
                np.max(
                    np.abs(np.asarray(md.integrate(sysm, Q0, v0=V0, h=h, n_steps=round(T / h)).q[-1]) - ref)
                )
            )
            for h in hs
        ]
        print(
            f"in gravity, {retraction}: errors {', '.join(f'{e:.2g}' for e in errs)} at h = {list(hs)}, "
            f"slope {md.analysis.observed_order(hs, errs):.2f}",
            flush=True,
        )


def screw(side: float, retraction: str, start: str, h: float, T: float = 2.0) -> float:
    base = md.systems.tumbling_brick(sides=(side, side, side), gravity=0.0, retraction=retraction)
    sysm = md.LagrangeDiracSystem(base.Q, base._user_L, A, partials=base._user_partials, params=base.params)
    ref = Q0 @ np.asarray(md.SE3().exp(T * XI))
    n = round(T / h)
    if start == "discrete":
        mu = np.concatenate([brick_inertia(1.0, (side, side, side)) * XI[:3], XI[3:]])
        J0 = np.asarray(sysm.Q.retract_with_inverse_jacobians(Q0, h * XI)[1])
        tr = md.integrate(sysm, Q0, p0=-J0.T @ mu, h=h, n_steps=n)
    else:
        tr = md.integrate(sysm, Q0, v0=XI, h=h, n_steps=n)
    return float(np.max(np.abs(np.asarray(tr.q[-1]) - ref)))


def main() -> None:
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    )
    gravity_orders()
    for side, retraction, start in [
        (0.1, "exp", "discrete"),
        (0.1, "so3xr3", "discrete"),
        (0.1, "cayley", "discrete"),
        (0.1, "exp", "continuous"),
        (1.0, "exp", "continuous"),
    ]:
        errs = [screw(side, retraction, start, h) for h in (0.02, 0.01)]
        print(
            f"screw, cube {side:g} m, {retraction}, {start} start: error at T = 2 "
            f"{errs[0]:.2g} (h = 0.02), {errs[1]:.2g} (h = 0.01)",
            flush=True,
        )


if __name__ == "__main__":
    main()
