"""The dependencies page's accuracy of geomstats as a reference (where its values lose digits).

1. ``Hypersphere(2).metric.log`` (through ``arccos`` of the inner product): the
   relative error of ``log_p(exp_p(v))`` against ``v`` (``exp`` in closed form) for
   ``|v| = 1e-9``, ``1e-6`` and ``pi - 1e-6`` (largest over 200 random ``p``, ``v``).
2. ``SpecialOrthogonal(3, point_type="vector").rotation_vector_from_matrix``: the
   error against the rotation vector of a ``scipy`` rotation matrix (and of the matrix
   the result stands for) at angles 2.8 rad and ``pi - 0.04, 0.02, 0.01, 0.001``.
3. ``SpecialEuclidean(2, point_type="vector").log_from_identity``: the largest error
   of ``log(exp(x))`` against ``x`` for ``|omega|`` in ``[5e-4, 0.15]`` and, for
   comparison, in ``[0.2, 3]``.

Prints the machine, the geomstats version and the numbers docs/dependencies.md
quotes (accuracy does not depend on the machine). Needs the ``geomstats`` extra; a
few seconds.

Usage (from the repository root)::

    python tools/geomstats_accuracy.py
"""

from __future__ import annotations

import datetime
import os
import platform

import numpy as np
from scipy.spatial.transform import Rotation

from manifold_dirac._compat import import_geomstats


def sphere_log(gs, norm: float, rng: np.random.Generator, n: int = 200) -> float:
    metric = gs.geometry.hypersphere.Hypersphere(dim=2).metric
    worst = 0.0
    for _ in range(n):
        p = rng.normal(size=3)
        p /= np.linalg.norm(p)
        u = rng.normal(size=3)
        u -= (u @ p) * p
        u /= np.linalg.norm(u)
        v = norm * u
        q = np.cos(norm) * p + np.sin(norm) * u
        worst = max(worst, float(np.linalg.norm(np.asarray(metric.log(q, p)) - v) / norm))
    return worst


def so3_rotation_vector(gs, angle: float, rng: np.random.Generator, n: int = 200) -> tuple[float, float]:
    """Largest error of the rotation vector, and of the rotation matrix it stands for."""
    so3 = gs.geometry.special_orthogonal.SpecialOrthogonal(3, point_type="vector")
    axes = rng.normal(size=(n, 3))
    r = angle * axes / np.linalg.norm(axes, axis=1, keepdims=True)
    m = Rotation.from_rotvec(r).as_matrix()
    got = np.asarray(so3.rotation_vector_from_matrix(m))
    return float(np.max(np.abs(got - r))), float(np.max(np.abs(Rotation.from_rotvec(got).as_matrix() - m)))


def se2_log(gs, lo: float, hi: float, rng: np.random.Generator, n: int = 2000) -> float:
    se2 = gs.geometry.special_euclidean.SpecialEuclidean(2, point_type="vector")
    x = np.column_stack([rng.choice([-1, 1], n) * rng.uniform(lo, hi, n), rng.uniform(-2, 2, (n, 2))])
    back = np.asarray(se2.log_from_identity(se2.exp_from_identity(x)))
    return float(np.max(np.abs(back - x)))


def main() -> None:
    gs = import_geomstats("geometry.hypersphere", "geometry.special_orthogonal", "geometry.special_euclidean")
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"python {platform.python_version()}, geomstats {gs.__version__}, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    )
    for norm, label in ((1e-9, "1e-9"), (1e-6, "1e-6"), (np.pi - 1e-6, "pi - 1e-6")):
        err = sphere_log(gs, norm, np.random.default_rng(0))
        print(f"Hypersphere metric.log, |xi| = {label}: relative error {err:.1e}")
    for d in (np.pi - 2.8, 0.04, 0.02, 0.01, 1e-3):
        vec, mat = so3_rotation_vector(gs, np.pi - d, np.random.default_rng(1))
        print(
            f"SO(3) rotation_vector_from_matrix at pi - {d:.3g}: vector error {vec:.1e}, matrix error {mat:.1e}"
        )
    for lo, hi in ((5e-4, 0.15), (0.2, 3.0)):
        err = se2_log(gs, lo, hi, np.random.default_rng(2))
        print(f"SE(2) log_from_identity, |omega| in [{lo:g}, {hi:g}], |x|, |y| <= 2: error up to {err:.1e}")


if __name__ == "__main__":
    main()
