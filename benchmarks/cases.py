"""The benchmarked systems and their initial data, shared by ``run.py`` and its child processes.

Every case is the library's bundled system (``manifold_dirac.systems``) with
the initial data of the Numba floor (``benchmarks/numba_floor.py``) where the
floor has the system, so that the two integrate the same trajectory:

* ``heavy_top``: ``I = diag(1, 2, 3)``, ``mgl = 1``, ``chi = e3``, SO(3) ``exp``,
  ``R0 = exp((0.3, 0.1, 0))``, ``w0 = (0.5, -0.2, 2)``, ``h = 0.01``;
* ``knife_edge``: the free knife edge (``m = 1``, ``J = 0.5``), SE(2) ``exp``,
  ``q0 = I``, twist ``(0.8, 1, 0)``, ``h = 0.05``: a relative equilibrium,
  so the warm start is exact after two steps (0 Newton iterations);
* ``inclined_knife_edge``: gravity along the incline (``alpha = 0.3``)
  drives Newton work at every step; from rest with ``omega = 1``, ``h = 0.05``.
  The floor does not have it (its knife edge has ``dL/dq = 0``);
* ``rolling_disk``: the interconnected vertical rolling disk on SE(2) x R
  (radius 0.5), heading rate 0.7, rolling rate 2, ``h = 0.01``;
* a few more for the compile-time table.

Initial rotations and poses are built with numpy, independently of the library.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from manifold_dirac import systems as S

__all__ = ["CASES", "Case", "batch_initial", "pose", "pose_coordinates", "rotation", "system"]


def rotation(rotvec) -> np.ndarray:
    """Rotation matrices ``exp(hat(w))`` of rotation vectors ``(..., 3)`` (Rodrigues' formula)."""
    w = np.asarray(rotvec, dtype=float)
    t = np.linalg.norm(w, axis=-1)[..., None, None]
    K = np.zeros(w.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2], K[..., 1, 2] = -w[..., 2], w[..., 1], -w[..., 0]
    K = K - np.swapaxes(K, -1, -2)
    with np.errstate(invalid="ignore", divide="ignore"):
        a = np.where(t > 1e-8, np.sin(t) / t, 1.0 - t * t / 6)
        b = np.where(t > 1e-8, (1.0 - np.cos(t)) / (t * t), 0.5 - t * t / 24)
    return np.eye(3) + a * K + b * (K @ K)


def pose(x, y, theta) -> np.ndarray:
    """SE(2) homogeneous poses ``(..., 3, 3)`` from coordinates."""
    x, y, theta = np.broadcast_arrays(*(np.asarray(a, dtype=float) for a in (x, y, theta)))
    g = np.zeros(x.shape + (3, 3))
    c, s = np.cos(theta), np.sin(theta)
    g[..., 0, 0], g[..., 0, 1], g[..., 0, 2] = c, -s, x
    g[..., 1, 0], g[..., 1, 1], g[..., 1, 2] = s, c, y
    g[..., 2, 2] = 1.0
    return g


def pose_coordinates(g) -> np.ndarray:
    """``(x, y, theta)`` of poses ``(..., 3, 3)``."""
    g = np.asarray(g)
    return np.stack([g[..., 0, 2], g[..., 1, 2], np.arctan2(g[..., 1, 0], g[..., 0, 0])], -1)


@dataclass(frozen=True)
class Case:
    """A system constructor and one trajectory's initial data."""

    label: str
    make: Callable[[], Any]
    q0: Any
    v0: np.ndarray
    h: float
    floor: str | None = None  # the numba_floor prefix ("heavy_top", "knife_edge") if the floor has it
    baseline: Callable[[float], Any] | None = None  # benchmarks.baselines constructor of h, if any


def _bl(name, **kw):
    def make(h):
        from benchmarks import baselines as BL

        return getattr(BL, name)(h=h, **kw) if name == "HeavyTop" else BL.SE2Vehicle(name, h=h, **kw)

    return make


CASES: dict[str, Case] = {
    "heavy_top": Case("heavy top, SO(3) exp", S.heavy_top, rotation([0.3, 0.1, 0.0]), np.array([0.5, -0.2, 2.0]),
                      0.01, floor="heavy_top", baseline=_bl("HeavyTop")),
    "knife_edge": Case("knife edge (free), SE(2) exp", S.knife_edge, np.eye(3), np.array([0.8, 1.0, 0.0]), 0.05,
                       floor="knife_edge", baseline=_bl("knife", incline=0.0)),
    "inclined_knife_edge": Case("inclined knife edge, SE(2) exp", S.inclined_knife_edge, np.eye(3),
                                np.array([1.0, 0.0, 0.0]), 0.05, baseline=_bl("knife")),
    "rolling_disk": Case("rolling disk, SE(2) x R (interconnected)", S.rolling_disk, (np.eye(3), np.zeros(1)),
                         np.array([0.7, 1.0, 0.0, 2.0]), 0.01, baseline=_bl("disk", inertia=0.0625)),
    # compile-time table only
    "pendulum": Case("pendulum, R", S.pendulum, np.array([1.0]), np.array([0.0]), 0.01),
    "double_pendulum": Case("double pendulum, R^2", S.double_pendulum, np.array([1.0, 0.5]), np.zeros(2), 0.01),
    "chaplygin_sled": Case("Chaplygin sled, SE(2)", S.chaplygin_sled, np.eye(3), np.array([1.0, 1.0, 0.0]), 0.01),
    "heavy_top_cayley": Case("heavy top, SO(3) Cayley", lambda: S.heavy_top(retraction="cayley"),
                             rotation([0.3, 0.1, 0.0]), np.array([0.5, -0.2, 2.0]), 0.01),
    "rolling_ball": Case("rolling ball, SO(3) x R^2 (interconnected)", S.rolling_ball, (np.eye(3), np.zeros(2)),
                         np.array([1.0, -0.5, 0.3, -0.25, -0.5]), 0.01),
}

_SYSTEMS: dict[str, Any] = {}


def system(name: str):
    """The case's system, built once per process (the compiled chunks are cached with the object)."""
    if name not in _SYSTEMS:
        _SYSTEMS[name] = CASES[name].make()
    return _SYSTEMS[name]


def batch_initial(name: str, B: int, rng: np.random.Generator):
    """``B`` generic initial states near the case's (the floor's distribution): ``(q0, v0)``."""
    if name == "heavy_top":
        R0 = rotation(rng.normal(0.0, 0.5, (B, 3)) + [0.3, 0.1, 0.0])
        return R0, np.array([0.5, -0.2, 2.0]) + 0.2 * rng.standard_normal((B, 3))
    if name in ("knife_edge", "inclined_knife_edge"):
        c = rng.normal(0.0, 1.0, (B, 3))
        v0 = np.stack([0.8 + 0.2 * rng.standard_normal(B), 1.0 + 0.2 * rng.standard_normal(B), np.zeros(B)], -1)
        return pose(c[:, 0], c[:, 1], c[:, 2]), v0
    raise KeyError(name)
