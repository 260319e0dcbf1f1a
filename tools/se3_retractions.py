"""The SE(3) retraction table of docs/manifolds.md: error against Newton--Euler as the body flies faster.

The tumbling brick (``md.systems.tumbling_brick``: 1 kg, 0.2 x 0.1 x 0.05 m,
frame at the centre of mass) without gravity, spin ``w0 = (0.2, 8, 0.3)``
rad/s, thrown along ``(1, 0.5, 3)/|.|`` (body axes) at ``|v|`` m/s, symmetric
scheme, midpoint rule, ``h = 0.01``, ``T = 1``: the largest entry of the pose
error at ``T`` against ``tumbling_brick_reference`` (DOP853, tolerance 1e-13),
for the coupled ``exp``, ``cayley``, the split ``so3xr3`` and
``ProductManifold(SO3(), Euclidean(3))`` (``tumbling_brick_on_product``,
velocity ``R v`` in space axes). Then the catalog's brick in gravity
(``h = 0.01, 0.005, 0.0025``, ``T = 1``): errors and regression slope for
``exp`` and ``so3xr3``.

Usage (from the repository root)::

    python tools/se3_retractions.py
"""

from __future__ import annotations

import os
import platform

import numpy as np

import manifold_dirac as md

Q0 = np.asarray(md.SE3().from_coordinates([0.0, 0.0, 1.0, 0.3, -0.2, 0.1]))
DIRECTION = np.array([1.0, 0.5, 3.0]) / np.sqrt(10.25)
SPEEDS = (0.0, 1.0, 3.0, 10.0)
H, T = 0.01, 1.0


def pose_error(speed: float, retraction: str) -> float:
    v0 = np.concatenate([[0.2, 8.0, 0.3], speed * DIRECTION])
    ref = md.systems.tumbling_brick_reference(T, Q0, v0, gravity=0.0)
    n = int(round(T / H))
    if retraction == "product":
        sysm = md.systems.tumbling_brick_on_product(gravity=0.0)
        R0, x0 = Q0[:3, :3], Q0[:3, 3]
        tr = md.integrate(sysm, (R0, x0), v0=np.concatenate([v0[:3], R0 @ v0[3:]]), h=H, n_steps=n)
        qT = np.eye(4)
        qT[:3, :3], qT[:3, 3] = np.asarray(tr.q[0])[-1], np.asarray(tr.q[1])[-1]
    else:
        sysm = md.systems.tumbling_brick(gravity=0.0, retraction=retraction)
        qT = np.asarray(md.integrate(sysm, Q0, v0=v0, h=H, n_steps=n).q[-1])
    return float(np.max(np.abs(qT - ref)))


def main() -> None:
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}"
    )
    names = ("exp", "cayley", "so3xr3", "product")
    print("| |v| (m/s) | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for speed in SPEEDS:
        print(f"| {speed:g} | " + " | ".join(f"{pose_error(speed, r):.1e}" for r in names) + " |", flush=True)
    ex = md.get_example("tumbling_brick")
    hs = np.array([0.01, 0.005, 0.0025])
    for retraction in ("exp", "so3xr3"):
        sysm = ex.build(retraction)
        q0, v0 = ex.initial(sysm)
        errs = [
            float(
                ex.error(
                    sysm,
                    np.asarray(md.integrate(sysm, q0, v0=v0, h=h, n_steps=int(round(1.0 / h))).q[-1]),
                    1.0,
                )
            )
            for h in hs
        ]
        print(
            f"catalog brick, {retraction}: errors {', '.join(f'{e:.2g}' for e in errs)}, "
            f"slope {md.analysis.observed_order(hs, errs):.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
