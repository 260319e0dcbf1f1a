"""Shared helpers of the mechanics tests."""

import numpy as np

from manifold_dirac import SO3, integrate


def heavy_top_reference(T, R0, w0, inertia=(1.0, 2.0, 3.0), mgl=1.0, chi=(0.0, 0.0, 1.0)):
    """Tight-tolerance solve_ivp reference for the heavy top (rotation matrix at T)."""
    from scipy.integrate import solve_ivp

    I = np.asarray(inertia, float)
    c = np.asarray(chi, float)
    G = SO3()

    def f(t, y):
        R = y[:9].reshape(3, 3)
        w = y[9:]
        torque = -mgl * np.cross(c, R.T @ np.array([0.0, 0.0, 1.0]))
        return np.concatenate([(R @ G.hat(w)).ravel(), (np.cross(I * w, w) + torque) / I])

    sol = solve_ivp(f, (0, T), np.concatenate([R0.ravel(), w0]), rtol=1e-12, atol=1e-12, method="DOP853")
    return sol.y[:9, -1].reshape(3, 3)


def run_errors(system, q0, v0, T, hs, error, **kw):
    """Errors ``error(trajectory)`` of runs to time T for each h."""
    out = []
    for h in hs:
        tr = integrate(system, q0, v0=v0, h=h, n_steps=int(round(T / h)), **kw)
        out.append(error(tr))
    return np.array(out)
