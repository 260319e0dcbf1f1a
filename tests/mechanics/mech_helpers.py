"""Shared helpers of the compiled-engine mechanics tests."""

import re

import numpy as np

from manifold_dirac._run.integrator import Integrator
from manifold_dirac._run.integrate import integrate
from manifold_dirac.systems import rigid_bodies


LAPACK_PRIMITIVE = re.compile(r"= (svd|lu|qr|eigh|cholesky|triangular_solve|lu_pivots_to_permutation)\b")
"""A jaxpr primitive that XLA:CPU lowers to a LAPACK call (it splits a compiled step loop into several kernels)."""


def heavy_top_reference(T, R0, w0):
    """Tight-tolerance solve_ivp reference for the heavy top (rotation matrix at T)."""
    return rigid_bodies.heavy_top_reference(T, R0, w0)


def run_errors(system, q0, v0, T, hs, error, **kw):
    """Errors ``error(trajectory)`` of runs to time T for each h (one compile: h is traced)."""
    out = []
    for h in hs:
        tr = integrate(system, q0, v0=v0, h=h, n_steps=int(round(T / h)), **kw)
        out.append(error(tr))
    return np.array(out)


def declared(system, scheme, rule):
    """The order an integrator declares for this system, scheme and rule."""
    return Integrator(system, 0.1, scheme, rule).order
