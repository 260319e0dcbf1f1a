"""The bundled systems of both engines, built once per test session, and a trajectory comparison.

Each compiled engine system is built once (:func:`new`, cached), so that every
test module running the same system with the same scheme and rule reuses its
compiled step (the compile cache lives with the system object).
"""

from __future__ import annotations

import functools

import numpy as np

import manifold_dirac._next  # noqa: F401  (float64, compilation cache)
from manifold_dirac import integrate as old_integrate
from manifold_dirac import systems as OLD
from manifold_dirac._next import systems as NEW
from manifold_dirac._next.mechanics.integrate import integrate

__all__ = ["BUNDLED", "CASES", "FIELDS", "assert_same_trajectory", "new", "old", "run_both"]

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
"""Key -> (factory name, keyword arguments): the same call builds the system in either engine."""


def _key(name: str, kw: dict) -> tuple:
    return (name, tuple(sorted(kw.items())))


@functools.lru_cache(maxsize=None)
def _new(name: str, items: tuple):
    return getattr(NEW, name)(**dict(items))


def new(key: str, **override):
    """The compiled-engine system of ``BUNDLED[key]`` (with keyword overrides), built once per session."""
    name, kw = BUNDLED[key] if key in BUNDLED else (key, {})
    return _new(*_key(name, {**kw, **override}))


def old(key: str, **override):
    """The numpy-engine system of the same factory and parameters."""
    name, kw = BUNDLED[key] if key in BUNDLED else (key, {})
    return getattr(OLD, name)(**{**kw, **override})


_R0 = np.asarray(OLD.heavy_top().Q.exp(np.array([0.3, 0.1, 0.0])))
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
    "lotka_volterra": dict(q0=OLD.LOTKA_VOLTERRA_INITIAL[0], p0=OLD.LOTKA_VOLTERRA_INITIAL[1], h=0.05),
}
"""Initial data and step of each comparison run (the catalog's data where it has the system)."""

FIELDS = ("q", "p", "v", "energy", "xi", "mu")


def run_both(key: str, new_system=None, n_steps: int = 20, **kw):
    """The same run through both engines: ``(new trajectory, old trajectory)``."""
    case = {**CASES[key], **kw}
    q0, h = case.pop("q0"), case.pop("h")
    sysm = new(key) if new_system is None else new_system
    tn = integrate(sysm, q0, h=h, n_steps=n_steps, **case)
    to = old_integrate(old(key), q0, h=h, n_steps=n_steps, **case)
    return tn, to


def assert_same_trajectory(tn, to, atol: float = 1e-10, fields=FIELDS) -> None:
    """Field by field, the two trajectories agree to ``atol`` (relative to each field's size above 1)."""
    for f in fields:
        a, b = np.asarray(getattr(tn, f)), np.asarray(getattr(to, f))
        assert a.shape == b.shape, f"{f}: shapes {a.shape} != {b.shape}"
        scale = 1.0 + (np.max(np.abs(b)) if b.size else 0.0)
        err = np.max(np.abs(a - b)) if a.size else 0.0
        assert err <= atol * scale, f"{f}: the engines differ by {err:.3e} > {atol:.0e} * {scale:.3g}"
