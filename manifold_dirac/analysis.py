"""Diagnostics shared by the tests, the retraction study and the benchmarks.

Plain numpy on recorded arrays (a trajectory's fields are numpy arrays), so
nothing here depends on the engine that computed them.
"""

from __future__ import annotations

import numpy as np

__all__ = ["energy_drift", "observed_order"]


def observed_order(h, err) -> float:
    """The slope of ``log(err)`` against ``log(h)`` by least squares.

    Parameters
    ----------
    h, err : array-like, shape=[k]
        Step sizes (at least 2, distinct) and the errors they gave (> 0).

    Returns
    -------
    float
        The observed order of convergence.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> round(md.observed_order([0.1, 0.05, 0.025], [4e-3, 1e-3, 2.5e-4]), 6)
    2.0
    """
    h = np.asarray(h, dtype=float)
    e = np.asarray(err, dtype=float)
    if h.shape != e.shape or h.ndim != 1 or h.size < 2:
        raise ValueError(f"observed_order: need two 1-d arrays of equal length >= 2, got {h.shape} and {e.shape}")
    if np.any(h <= 0) or np.any(~np.isfinite(e)) or np.any(e <= 0):
        raise ValueError("observed_order: step sizes must be positive and errors positive and finite")
    return float(np.polyfit(np.log(h), np.log(e), 1)[0])


def energy_drift(t, energy) -> tuple[float, float]:
    """``(slope, spread)`` of an energy record.

    A variational integrator shows a bounded, oscillating error (spread) with
    no drift; a non-symplectic one a growing trend.

    Parameters
    ----------
    t : array-like, shape=[K+1]
        Times of the record.
    energy : array-like, shape=[K+1]
        Energies at those times.

    Returns
    -------
    slope : float
        The least-squares drift rate ``dE/dt``.
    spread : float
        The peak-to-peak range of ``E - E_0``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> tr = md.integrate(md.systems.pendulum(), np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=400)
    >>> slope, spread = md.energy_drift(tr.t, tr.energy)
    >>> bool(abs(slope) < 1e-4 and spread < 1e-2)          # bounded oscillation, no drift
    True
    """
    t = np.asarray(t, dtype=float)
    e = np.asarray(energy, dtype=float) - float(np.asarray(energy)[0])
    slope = float(np.polyfit(t, e, 1)[0])
    return slope, float(np.max(e) - np.min(e))
