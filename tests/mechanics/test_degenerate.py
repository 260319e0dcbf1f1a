"""Degenerate Lagrangians: the LC circuit and a Lagrangian linear in velocities (compiled engine).

Ported from the numpy engine's ``tests/mechanics/test_degenerate.py`` with
every assertion and tolerance. The Lotka--Volterra cases start from ``p0``
only, as before; the compiled engine warns about a rule that is not
degenerate-safe when the state is built, exactly like the numpy engine.

Compile time, not run time, is the cost here (one compiled program per
system, scheme and rule; ~2-9 s each on two cores): the CI set keeps the
cases that share their compiled step with the bundled-systems tests, and
marks the others ``slow`` (``pytest -m slow``), asserting exactly the same.
"""

import warnings

import numpy as np
import pytest

from manifold_dirac.analysis import observed_order
from manifold_dirac._run.integrate import integrate
from manifold_dirac.systems import LOTKA_VOLTERRA_INITIAL, lc_circuit_exact, lotka_volterra_invariant
from manifold_dirac._errors import DegenerateLagrangianWarning, IllPosedSystemError, StepError

from ..systems.bundled import new

LC = [(s, r, o) for s in ("symmetric", "plus", "minus")
      for r, o in (("midpoint", 2), ("trapezoid", 2), ("rectangle+", 1))]
LC_CI = (("symmetric", "midpoint", 2), ("plus", "rectangle+", 1))


@pytest.mark.parametrize("scheme,rule,order", [c if c in LC_CI else pytest.param(*c, marks=pytest.mark.slow)
                                               for c in LC])
def test_lc_circuit_runs_and_converges(scheme, rule, order):
    lc = new("lc_circuit", inductance=1.0, capacitance=0.25)
    hs = np.array([0.02, 0.01, 0.005])
    errs = []
    for h in hs:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DegenerateLagrangianWarning)  # regular on ker A: no warning
            tr = integrate(lc, np.array([1.0, 1.0]), v0=np.zeros(2), h=h, n_steps=int(round(1.0 / h)),
                           scheme=scheme, discrete_lagrangian=rule)
        errs.append(abs(tr.q[-1, 0] - lc_circuit_exact(1.0, 1.0, 0.0)))
        assert np.max(tr.constraint_residual) < 1e-12
    assert observed_order(hs, errs) == pytest.approx(order, abs=0.12)


def test_lc_frequency_matches():
    ell, C = 0.5, 0.08
    lc = new("lc_circuit", inductance=ell, capacitance=C)  # the same compiled step as lc_circuit(): params
    tr = integrate(lc, np.array([1.0, 1.0]), v0=np.zeros(2), h=0.002, n_steps=2000)
    qc = tr.q[:, 0]
    up = np.nonzero((qc[:-1] < 0) & (qc[1:] >= 0))[0]
    tz = tr.t[up] - qc[up] * (tr.t[up + 1] - tr.t[up]) / (qc[up + 1] - qc[up])
    period = np.mean(np.diff(tz))
    assert period == pytest.approx(2 * np.pi * np.sqrt(ell * C), rel=1e-5)


def lotka_volterra():
    """``L = theta(q) . v - H(q)``, linear in the velocities (Kraus 2017)."""
    return new("lotka_volterra"), lotka_volterra_invariant


Q0, P0 = LOTKA_VOLTERRA_INITIAL


def test_midpoint_is_stable_on_a_lagrangian_linear_in_velocities():
    lv, H = lotka_volterra()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateLagrangianWarning)
        tr = integrate(lv, Q0, p0=P0, h=0.05, n_steps=4000)
    Hs = H(tr.q)
    assert np.max(np.abs(Hs - Hs[0])) < 5e-3  # bounded over 200 time units: no parasitic growth


@pytest.mark.parametrize("rule", [pytest.param("trapezoid", marks=pytest.mark.slow), "rectangle+",
                                  pytest.param("rectangle-", marks=pytest.mark.slow)])
def test_other_rules_warn_and_fail_loudly(rule):
    """Trapezoid excites parasitic modes that end the run within a few hundred
    steps; the rectangle rules give singular steps at once. Each is warned
    about up front and fails with a StepError, never with silent garbage."""
    lv, H = lotka_volterra()
    if rule.startswith("rectangle"):  # singular at the first step: refused before any step, naming it
        with pytest.warns(DegenerateLagrangianWarning, match=rule.replace("+", r"\+")):
            with pytest.raises(IllPosedSystemError, match="singular at the start.*frame direction"):
                integrate(lv, Q0, p0=P0, h=0.05, n_steps=4000, discrete_lagrangian=rule)
        return
    with pytest.warns(DegenerateLagrangianWarning, match=rule.replace("+", r"\+")):
        with pytest.raises(StepError) as ei:
            integrate(lv, Q0, p0=P0, h=0.05, n_steps=4000, discrete_lagrangian=rule)
    assert ei.value.step < 400
