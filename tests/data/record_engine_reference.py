"""Record a fixed set of compiled-engine runs, the reference the engine must keep reproducing.

Run from the repository root::

    .venv/bin/python tests/data/record_engine_reference.py

It writes ``tests/data/engine_reference.npz``: for every run of :data:`RUNS`,
``<name>/<field>`` for the fields of :data:`FIELDS` (``q`` leaves as
``q/<i>``). ``tests/mechanics/test_engine_reference.py`` runs the same
:data:`RUNS` and compares field by field to ``1e-12`` (relative to each
field's size). Changing the engine's internals (the linear solver, the
Newton loop, the recording) must not change these results beyond round-off.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

if "PYTHONPATH" not in os.environ:  # the repository's own library, unless another is on PYTHONPATH
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import manifold_dirac  # noqa: E402,F401  (float64)
from manifold_dirac import systems as S  # noqa: E402
from manifold_dirac._manifolds import SO3  # noqa: E402
from manifold_dirac._run.integrate import integrate  # noqa: E402

STEP_FIELDS = ("xi", "mu", "iterations")
"""The fields recorded per step (of the step from each stored point), also recorded at stride 1 for strided runs."""
FIELDS = ("t", "q", "p", "v", "energy", "xi", "mu", "iterations", "slip", "holonomic_violation")
"""The recorded fields of each :class:`~manifold_dirac._run.trajectory.Trajectory`."""

_R0 = np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0])))


def _heavy_top_batch():
    rng = np.random.default_rng(7)
    w = rng.normal(0.0, 0.5, (3, 3)) + [0.3, 0.1, 0.0]
    return np.stack([np.asarray(SO3().exp(x)) for x in w]), np.array([0.5, -0.2, 2.0]) + 0.2 * rng.standard_normal((3, 3))


def _runs():
    """``name -> (system factory, kwargs of integrate)``: the fixed set of reference runs."""
    four_q, four_v = S.four_bar_initial()
    qb, vb = _heavy_top_batch()
    pose = np.eye(3)
    return {
        "heavy_top_midpoint": (S.heavy_top, dict(q0=_R0, v0=np.array([0.5, -0.2, 2.0]), h=0.01, n_steps=200)),
        "heavy_top_midpoint_stride10": (S.heavy_top, dict(q0=_R0, v0=np.array([0.5, -0.2, 2.0]), h=0.01,
                                                          n_steps=205, stride=10)),
        "heavy_top_gauss4": (S.heavy_top, dict(q0=_R0, v0=np.array([0.5, -0.2, 2.0]), h=0.05, n_steps=60,
                                               discrete_lagrangian="gauss4")),
        "heavy_top_gauss4_stride10": (S.heavy_top, dict(q0=_R0, v0=np.array([0.5, -0.2, 2.0]), h=0.05, n_steps=63,
                                                        discrete_lagrangian="gauss4", stride=10)),
        "heavy_top_batch": (S.heavy_top, dict(q0=qb, v0=vb, h=0.01, n_steps=50)),
        "heavy_top_batch_stride10": (S.heavy_top, dict(q0=qb, v0=vb, h=0.01, n_steps=57, stride=10)),
        "knife_edge": (S.knife_edge, dict(q0=pose, v0=np.array([0.8, 1.0, 0.0]), h=0.05, n_steps=100)),
        "inclined_knife_edge": (S.inclined_knife_edge, dict(q0=pose, v0=np.array([1.0, 0.0, 0.0]), h=0.05,
                                                           n_steps=100)),
        "inclined_knife_edge_plus_stride10": (S.inclined_knife_edge, dict(q0=pose, v0=np.array([1.0, 0.0, 0.0]),
                                                                          h=0.05, n_steps=95, stride=10,
                                                                          scheme="plus")),
        "chaplygin_sled_p0": (S.chaplygin_sled, dict(q0=pose, p0=np.array([0.3, 1.0, 0.0]), h=0.02, n_steps=80)),
        "rolling_disk": (S.rolling_disk, dict(q0=(pose, np.zeros(1)), v0=np.array([0.7, 1.0, 0.0, 2.0]), h=0.01,
                                              n_steps=100)),
        "four_bar": (S.four_bar, dict(q0=four_q, v0=four_v, h=0.01, n_steps=100)),
        "double_pendulum_stride10": (S.double_pendulum, dict(q0=np.array([1.0, -0.5]), v0=np.zeros(2), h=0.01,
                                                             n_steps=100, stride=10)),
    }


RUNS = _runs()


def flatten(tr) -> dict[str, np.ndarray]:
    """The recorded fields of a trajectory as ``field -> array`` (``q`` leaves as ``q/<i>``)."""
    import jax

    out = {}
    for f in FIELDS:
        val = getattr(tr, f)
        if f == "q":
            for i, leaf in enumerate(jax.tree.leaves(val)):
                out[f"q/{i}"] = np.asarray(leaf)
        else:
            out[f] = np.asarray(val)
    return out


def run(name: str, full: bool = False) -> dict[str, np.ndarray]:
    """The fields of run ``name``; ``full``: of the same run at stride 1 (its step fields only)."""
    make, kw = RUNS[name]
    if full:
        tr = integrate(make(), **{**kw, "stride": 1})
        return {f: np.asarray(getattr(tr, f)) for f in STEP_FIELDS}
    return flatten(integrate(make(), **kw))


def main() -> None:
    data = {}
    for name in RUNS:
        for k, v in run(name).items():
            data[f"{name}/{k}"] = v
        if RUNS[name][1].get("stride", 1) > 1:
            for k, v in run(name, full=True).items():
                data[f"{name}/full/{k}"] = v
    path = Path(__file__).with_name("engine_reference.npz")
    np.savez_compressed(path, **data)
    print(f"wrote {path} ({len(data)} arrays)")


if __name__ == "__main__":
    main()
