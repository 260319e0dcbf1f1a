"""The bundled systems, built once per test session, and a comparison with the numpy engine's recorded runs.

Each compiled engine system is built once (:func:`new`, cached), so that every
test module running the same system with the same scheme and rule reuses its
compiled step (the compile cache lives with the system object).

The numpy engine (the library's first engine, removed at the engine switch)
ran each :data:`CASES` entry for 20 steps; its trajectories are recorded in
``tests/data/numpy_engine_systems.npz`` (see ``tests/data/README.md``), and
:func:`run_against_reference` returns the compiled run next to the recorded one.
"""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import manifold_dirac  # noqa: F401  (float64, compilation cache)
from manifold_dirac import systems as NEW
from manifold_dirac._manifolds import SO3
from manifold_dirac._run.integrate import integrate

__all__ = ["BUNDLED", "CASES", "FIELDS", "N_STEPS", "assert_same_trajectory", "new", "numpy_engine_reference",
           "recorded_run", "run_against_reference"]

BUNDLED: dict[str, tuple[str, dict]] = {
    "harmonic_oscillator": ("harmonic_oscillator", {"n": 2}),
    "damped_oscillator": ("damped_oscillator", {"damping": 0.3}),
    "pendulum": ("pendulum", {}),
    "double_pendulum": ("double_pendulum", {}),
    "spherical_pendulum": ("spherical_pendulum", {}),
    "free_rigid_body": ("free_rigid_body", {}),
    "free_rigid_body_cayley": ("free_rigid_body", {"retraction": "cayley"}),
    "heavy_top": ("heavy_top", {}),
    "heavy_top_cayley": ("heavy_top", {"retraction": "cayley"}),
    "knife_edge": ("knife_edge", {}),
    "inclined_knife_edge": ("inclined_knife_edge", {}),
    "inclined_knife_edge_cayley": ("inclined_knife_edge", {"retraction": "cayley"}),
    "inclined_knife_edge_so2xr2": ("inclined_knife_edge", {"retraction": "so2xr2"}),
    "chaplygin_sled": ("chaplygin_sled", {}),
    "chaplygin_sled_cayley": ("chaplygin_sled", {"retraction": "cayley"}),
    "chaplygin_sled_so2xr2": ("chaplygin_sled", {"retraction": "so2xr2"}),
    "differential_drive": ("differential_drive", {}),
    "lc_circuit": ("lc_circuit", {}),
    "lotka_volterra": ("lotka_volterra", {}),
}
"""Key -> (factory name, keyword arguments): the same call built the system in either engine."""


def _key(name: str, kw: dict) -> tuple:
    return (name, tuple(sorted(kw.items())))


@functools.lru_cache(maxsize=None)
def _new(name: str, items: tuple):
    return getattr(NEW, name)(**dict(items))


def new(key: str, **override):
    """The compiled-engine system of ``BUNDLED[key]`` (with keyword overrides), built once per session."""
    name, kw = BUNDLED[key] if key in BUNDLED else (key, {})
    return _new(*_key(name, {**kw, **override}))


_R0 = np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0])))
_POSE0 = np.eye(3)
_S2 = np.array([np.sin(2.5) * np.cos(0.3), np.sin(2.5) * np.sin(0.3), np.cos(2.5)])

CASES: dict[str, dict] = {
    "harmonic_oscillator": dict(q0=np.array([1.0, 0.0]), v0=np.array([0.0, 0.5]), h=0.04),
    "damped_oscillator": dict(q0=np.array([1.0]), v0=np.array([0.0]), h=0.04),
    "pendulum": dict(q0=np.array([0.5]), v0=np.array([0.0]), h=0.01),
    "double_pendulum": dict(q0=np.array([1.0, -0.5]), v0=np.array([0.0, 0.0]), h=0.01),
    "spherical_pendulum": dict(q0=_S2, v0=np.array([0.5, 1.0]), h=0.01),
    "free_rigid_body": dict(q0=_R0, v0=np.array([1.0, 0.3, -0.5]), h=0.05),
    "free_rigid_body_cayley": dict(q0=_R0, v0=np.array([1.0, 0.3, -0.5]), h=0.05),
    "heavy_top": dict(q0=_R0, v0=np.array([0.5, -0.2, 2.0]), h=0.01),
    "heavy_top_cayley": dict(q0=_R0, v0=np.array([0.5, -0.2, 2.0]), h=0.01),
    "knife_edge": dict(q0=_POSE0, v0=np.array([0.8, 1.0, 0.0]), h=0.05),
    "inclined_knife_edge": dict(q0=_POSE0, v0=np.array([1.0, 0.0, 0.0]), h=0.02),
    "inclined_knife_edge_cayley": dict(q0=_POSE0, v0=np.array([1.0, 0.0, 0.0]), h=0.02),
    "inclined_knife_edge_so2xr2": dict(q0=_POSE0, v0=np.array([1.0, 0.0, 0.0]), h=0.02),
    "chaplygin_sled": dict(q0=_POSE0, v0=np.array([1.0, 1.0, 0.0]), h=0.02),
    "chaplygin_sled_cayley": dict(q0=_POSE0, v0=np.array([1.0, 1.0, 0.0]), h=0.02),
    "chaplygin_sled_so2xr2": dict(q0=_POSE0, v0=np.array([1.0, 1.0, 0.0]), h=0.02),
    "differential_drive": dict(q0=_POSE0, v0=np.zeros(3), h=0.05),
    "lc_circuit": dict(q0=np.array([1.0, 1.0]), v0=np.zeros(2), h=0.01),
    "lotka_volterra": dict(q0=NEW.LOTKA_VOLTERRA_INITIAL[0], p0=NEW.LOTKA_VOLTERRA_INITIAL[1], h=0.05),
}
"""Initial data and step of each comparison run (the catalog's data where it has the system)."""

FIELDS = ("q", "p", "v", "energy", "xi", "mu")
N_STEPS = 20
"""Steps of each recorded run."""


@functools.lru_cache(maxsize=None)
def numpy_engine_reference(name: str = "numpy_engine_systems") -> dict[str, np.ndarray]:
    """The arrays of ``tests/data/<name>.npz``, recorded from the numpy engine (``tests/data/README.md``).

    The data directory is found by walking up from this file, so the lookup
    works from ``tests/next/systems/`` and, after the engine switch, from
    ``tests/systems/``. Do not modify the returned arrays (the dict is cached).
    """
    for parent in Path(__file__).resolve().parents:
        path = parent / "data" / f"{name}.npz"
        if path.is_file():
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
    raise FileNotFoundError(f"{name}.npz: no data/ directory holding it above {Path(__file__).resolve()}")


def recorded_run(key: str) -> SimpleNamespace:
    """The numpy engine's ``N_STEPS``-step run of ``CASES[key]``: ``t``, the :data:`FIELDS` and ``meta``."""
    ref = numpy_engine_reference()
    run = {f: ref[f"run/{key}/{f}"] for f in ("t", *FIELDS)}
    return SimpleNamespace(**run, meta={"system": str(ref[f"run/{key}/system"])})


def run_against_reference(key: str, new_system=None):
    """The run of ``CASES[key]`` on the compiled engine next to the numpy engine's recorded one:
    ``(new trajectory, recorded run)``."""
    case = dict(CASES[key])
    q0, h = case.pop("q0"), case.pop("h")
    sysm = new(key) if new_system is None else new_system
    tn = integrate(sysm, q0, h=h, n_steps=N_STEPS, **case)
    return tn, recorded_run(key)


def assert_same_trajectory(tn, to, atol: float = 1e-10, fields=FIELDS) -> None:
    """Field by field, the run ``tn`` agrees with the recorded ``to`` to ``atol``
    (relative to each field's size above 1)."""
    for f in fields:
        a, b = np.asarray(getattr(tn, f)), np.asarray(getattr(to, f))
        assert a.shape == b.shape, f"{f}: shapes {a.shape} != {b.shape}"
        scale = 1.0 + (np.max(np.abs(b)) if b.size else 0.0)
        err = np.max(np.abs(a - b)) if a.size else 0.0
        assert err <= atol * scale, (
            f"{f}: the engines differ (compiled run vs the numpy engine's recorded run) "
            f"by {err:.3e} > {atol:.0e} * {scale:.3g}"
        )
