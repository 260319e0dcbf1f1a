"""The reference of the Galerkin audit for an interconnection with a massless port.

``tools/galerkin_audit.py`` measures the rules on the mass--spring chain torn
at a massless port against ``solve_ivp`` of the index-reduced equations of
the torn system (a saddle-point solve for the accelerations and the
multiplier, the port's algebraic equation solved with them). That reference
uses no discrete Lagrangian; here it is checked against the closed form of
the untorn chain (normal modes), and shown to tell a wrong spring constant
apart. The midpoint rule converges to it at order 2; the Galerkin rules
refuse the system (degenerate Lagrangian with constraint one-forms).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

import manifold_dirac as md

ROOT = Path(__file__).resolve().parents[1]
M1, M2, K1, K12, K2 = 1.0, 2.0, 3.0, 1.5, 2.0
Q0 = (np.array([0.3, -0.2]), np.array([-0.2]))
V0 = np.array([0.1, 0.4, 0.4])
T = 10.0


@pytest.fixture(scope="module")
def audit():
    spec = importlib.util.spec_from_file_location("galerkin_audit", ROOT / "tools" / "galerkin_audit.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def reference(audit):
    torn = md.systems.mass_spring_torn(M1, M2, K1, K12, K2)
    return audit.ode_reference(torn, Q0, V0, T)


def chain_closed_form(t, k12=K12):
    """``(x1, x2)(t)`` of the untorn chain by its normal modes: ``M x'' = -K x``."""
    M = np.diag([M1, M2])
    K = np.array([[K1 + k12, -k12], [-k12, k12 + K2]])
    w2, phi = scipy.linalg.eigh(K, M)  # phi.T M phi = I
    w = np.sqrt(w2)
    x0, v0 = np.array([Q0[0][0], Q0[1][0]]), np.array([V0[0], V0[2]])
    a, b = phi.T @ M @ x0, phi.T @ M @ v0
    return phi @ (a * np.cos(w * t) + b * np.sin(w * t) / w)


def test_the_torn_reference_is_the_untorn_chain(reference):
    x1, y, x2 = reference
    exact = chain_closed_form(T)
    assert abs(x1 - exact[0]) < 1e-10 and abs(x2 - exact[1]) < 1e-10
    assert abs(y - x2) < 1e-10  # the port follows the second mass
    # sensitivity: a spring constant off by 1e-4 is seen far above the agreement
    assert np.max(np.abs(chain_closed_form(T, K12 + 1e-4) - exact)) > 1e-6


def test_midpoint_converges_to_it_at_order_two(reference):
    torn = md.systems.mass_spring_torn(M1, M2, K1, K12, K2)
    errors = []
    for h in (0.02, 0.01):
        tr = md.integrate(torn, Q0, v0=V0, h=h, n_steps=int(round(T / h)))
        end = np.concatenate([np.asarray(a)[-1] for a in tr.q])
        errors.append(np.max(np.abs(end - reference)))
    assert abs(np.log2(errors[0] / errors[1]) - 2.0) < 0.05 and errors[1] < 1e-4
    # sensitivity: the same run of a chain with another coupling spring misses the reference
    wrong = md.systems.mass_spring_torn(M1, M2, K1, 1.6, K2)
    tr = md.integrate(wrong, Q0, v0=V0, h=0.01, n_steps=int(round(T / 0.01)))
    assert np.max(np.abs(np.concatenate([np.asarray(a)[-1] for a in tr.q]) - reference)) > 1e-2


@pytest.mark.parametrize("rule", ["gauss4", "gauss6"])
def test_the_galerkin_rules_refuse_the_massless_port(rule):
    torn = md.systems.mass_spring_torn()
    with pytest.raises(md.IllPosedSystemError, match="degenerate"):
        md.integrate(torn, Q0, v0=V0, h=0.02, n_steps=10, discrete_lagrangian=rule)
