"""Options are refused up front with a sentence, through the public API.

Every bad option of :func:`integrate`, :class:`Integrator` (its constructor,
``initial_state``, ``step``, ``run``) and :class:`SolverOptions` raises a
``ValueError`` or ``TypeError`` before any step is taken, with one line that
names the option and what it must be. The accepted edge values (``n_steps =
0``, numpy integers, controls as nested lists) run.

One system (the bundled two-dimensional harmonic oscillator, built once per
session) serves every test: the refusals happen before compiling, and the
runs reuse one compiled program.
"""

import numpy as np
import pytest

from manifold_dirac._mechanics import SolverOptions
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._run.integrate import integrate

from .systems.bundled import new

OSC = new("harmonic_oscillator")  # Euclidean(2), no force, no constraint
Q0, V0 = np.array([1.0, 0.0]), np.array([0.0, 1.0])


def one_sentence(exc: BaseException, *names: str) -> str:
    """The message of ``exc``: one non-empty line, naming each of ``names``."""
    msg = str(exc)
    assert msg and msg == msg.strip() and "\n" not in msg, msg
    for name in names:
        assert name in msg, f"{name!r} not in {msg!r}"
    return msg


def run(**kw):
    return integrate(OSC, Q0, v0=V0, **{"h": 0.1, "n_steps": 3, **kw})


REFUSED = [
    # (keyword arguments of integrate, exception, the words the message must contain)
    (dict(t0=np.nan), ValueError, "t0 must be a finite number, got nan"),
    (dict(t0=np.inf), ValueError, "t0 must be a finite number, got inf"),
    (dict(t0=-np.inf), ValueError, "t0 must be a finite number"),
    (dict(t0=None), TypeError, "t0 must be a finite number, got None"),
    (dict(h=0.0), ValueError, "the step h must be a positive finite number, got 0.0"),
    (dict(h=-0.1), ValueError, "the step h must be a positive finite number, got -0.1"),
    (dict(h=np.nan), ValueError, "the step h must be a positive finite number, got nan"),
    (dict(h=np.inf), ValueError, "the step h must be a positive finite number, got inf"),
    (dict(h=None), TypeError, "the step h must be a positive number, got None"),
    (dict(h=0.1j), TypeError, "the step h must be a positive number, got 0.1j"),
    (dict(h=np.array([0.1, 0.2])), TypeError, "the step h must be a positive number"),
    (dict(n_steps=-1), ValueError, "n_steps must be an integer >= 0, got -1"),
    (dict(n_steps=2.5), ValueError, "n_steps must be an integer >= 0, got 2.5"),
    (dict(n_steps=3.0), ValueError, "n_steps must be an integer >= 0, got 3.0"),
    (dict(n_steps=np.nan), ValueError, "n_steps must be an integer >= 0, got nan"),
    (dict(n_steps="3"), ValueError, "n_steps must be an integer >= 0, got '3'"),
    (dict(n_steps=True), ValueError, "n_steps must be an integer >= 0, got True"),
    (dict(stride=0), ValueError, "stride must be an integer >= 1, got 0"),
    (dict(stride=-2), ValueError, "stride must be an integer >= 1, got -2"),
    (dict(stride=1.5), ValueError, "stride must be an integer >= 1, got 1.5"),
    (dict(stride=True), ValueError, "stride must be an integer >= 1, got True"),
    (dict(on_failure="ignore"), ValueError, "on_failure must be 'raise' or 'mark', got 'ignore'"),
    (dict(on_failure=1), ValueError, "on_failure must be 'raise' or 'mark', got 1"),
    (dict(scheme="rk4"), ValueError, "unknown scheme 'rk4'; valid: 'plus', 'minus', 'symmetric'"),
    (dict(scheme=None), ValueError, "unknown scheme None"),
    (dict(discrete_lagrangian="no-such-rule"), ValueError, "unknown discrete Lagrangian 'no-such-rule'; valid:"),
    (dict(discrete_lagrangian=None), ValueError, "unknown discrete Lagrangian None"),
    (dict(solver={"rtol": 1e-3}), TypeError, "solver must be a SolverOptions instance, got dict"),
    (dict(controls=np.zeros((2, 2))), ValueError, "controls: expected shape (3, *batch, 2), got (2, 2)"),
    (dict(controls=np.zeros((3, 3))), ValueError, "controls: expected shape (3, *batch, 2), got (3, 3)"),
    (dict(controls=np.zeros(3)), ValueError, "controls: expected shape (3, *batch, 2), got (3,)"),
]


@pytest.mark.parametrize("kw,exc,words", REFUSED, ids=[f"{next(iter(c[0]))}={next(iter(c[0].values()))!r}" for c in REFUSED])
def test_integrate_refuses_a_bad_option_in_one_sentence(kw, exc, words):
    with pytest.raises(exc) as ei:
        run(**kw)
    one_sentence(ei.value, words)


def test_the_same_call_with_good_options_runs():
    """The control of the test above: only the option changed."""
    # the values the compiled program was built for (scheme, rule, stride and solver options are part
    # of its key; another value of those compiles again, which is what the refusals above never reach)
    tr = run(t0=1.5, h=0.05, n_steps=3, stride=1, on_failure="raise", scheme="symmetric",
             discrete_lagrangian="midpoint", solver=SolverOptions(rtol=1e-10, max_iter=30))
    assert tr.ok and tr.n_points == 4 and tr.t[0] == 1.5 and tr.t[-1] == pytest.approx(1.65)


@pytest.mark.parametrize(
    "kw,exc,words",
    [
        (dict(rtol=0, atol=0), TypeError, "unexpected keyword argument 'atol'"),
        (dict(rtol=0), ValueError, "SolverOptions: rtol must be a number in (0, 1), got 0"),
        (dict(rtol=-1e-3), ValueError, "rtol must be a number in (0, 1), got -0.001"),
        (dict(rtol=1.0), ValueError, "rtol must be a number in (0, 1), got 1.0"),
        (dict(rtol=np.nan), ValueError, "rtol must be a number in (0, 1), got nan"),
        (dict(rtol=np.inf), ValueError, "rtol must be a number in (0, 1), got inf"),
        (dict(rtol="1e-3"), ValueError, "rtol must be a number in (0, 1), got '1e-3'"),
        (dict(rtol=True), ValueError, "rtol must be a number in (0, 1), got True"),
        (dict(max_iter=0), ValueError, "SolverOptions: max_iter must be a positive integer, got 0"),
        (dict(max_iter=-1), ValueError, "max_iter must be a positive integer, got -1"),
        (dict(max_iter=2.5), ValueError, "max_iter must be a positive integer, got 2.5"),
        (dict(max_iter=True), ValueError, "max_iter must be a positive integer, got True"),
        (dict(max_iter=None), ValueError, "max_iter must be a positive integer, got None"),
    ],
)
def test_solver_options_refuse_bad_values(kw, exc, words):
    with pytest.raises(exc) as ei:
        SolverOptions(**kw)
    one_sentence(ei.value, words)


def test_solver_options_accept_their_range():
    assert SolverOptions(rtol=0.5, max_iter=np.int64(1)).max_iter == 1
    assert SolverOptions(rtol=1e-300).rtol == 1e-300


def test_integrator_refuses_bad_arguments():
    for args, kw, exc, words in [
        ((OSC, 0.0), {}, ValueError, "the step h must be a positive finite number, got 0.0"),
        (("oscillator", 0.1), {}, TypeError, "Integrator: system must be a LagrangeDiracSystem, got str"),
        ((OSC, 0.1), dict(on_failure="skip"), ValueError, "Integrator: on_failure must be 'raise' or 'mark'"),
        ((OSC, 0.1), dict(solver=1e-8), TypeError, "Integrator: solver must be a SolverOptions instance, got float"),
        ((OSC, 0.1), dict(scheme="euler"), ValueError, "unknown scheme 'euler'"),
    ]:
        with pytest.raises(exc) as ei:
            Integrator(*args, **kw)
        one_sentence(ei.value, words)


def test_integrator_methods_refuse_bad_arguments():
    integ = Integrator(OSC, 0.1)
    state = integ.initial_state(Q0, v0=V0)
    cases = [
        (lambda: integ.initial_state(Q0, v0=V0, t0=np.nan), ValueError, "t0 must be a finite number, got nan"),
        (lambda: integ.initial_state(Q0), ValueError, "give the initial velocity v0 or the initial momentum p0"),
        (lambda: integ.initial_state(Q0, v0=np.zeros(3)), ValueError, "v0: expected frame coordinates of shape"),
        (lambda: integ.initial_state(Q0, v0=[np.inf, 0.0]), ValueError, "v0: contains non-finite values"),
        (lambda: integ.initial_state(Q0, p0=np.ones((2, 2))), ValueError, "p0: shape (2, 2) does not match the batch"),
        (lambda: integ.run(state, -1), ValueError, "n_steps must be an integer >= 0, got -1"),
        (lambda: integ.run(state, 2.0), ValueError, "n_steps must be an integer >= 0, got 2.0"),
        (lambda: integ.run(state, 3, stride=0), ValueError, "stride must be an integer >= 1, got 0"),
        (lambda: integ.run(state, 3, stride=-1), ValueError, "stride must be an integer >= 1, got -1"),
        (lambda: integ.run(state, 3, controls=np.zeros((4, 2))), ValueError, "controls: expected shape (3, *batch, 2)"),
        (lambda: integ.step(state, np.zeros(3)), ValueError, "u: expected frame coordinates of shape (*batch, 2)"),
        (lambda: integ.step(state, np.array([np.nan, 0.0])), ValueError, "u: contains non-finite values"),
    ]
    for call, exc, words in cases:
        with pytest.raises(exc) as ei:
            call()
        one_sentence(ei.value, words)


def test_edge_values_that_are_valid_run():
    zero = run(n_steps=0)
    assert zero.ok and zero.n_points == 1 and zero.xi.shape == (0, 2)
    assert run(n_steps=np.int64(2)).n_points == 3
    assert run(controls=np.zeros((3, 2))).ok and run(controls=[[0.0, 0.0]] * 3).ok


# ------------------------------------------------------ types, controls, callback, state
@pytest.mark.parametrize("kw", [dict(t0="1"), dict(t0=True), dict(h="0.1"), dict(h=True)], ids=["t0=str", "t0=True",
                                                                                               "h=str", "h=True"])
def test_numbers_given_as_text_or_bool_are_refused(kw):
    with pytest.raises(TypeError) as ei:
        run(**kw)
    one_sentence(ei.value, next(iter(kw)))


@pytest.mark.parametrize(
    "controls,exc",
    [
        (np.full((3, 2), np.nan), ValueError),
        (np.full((3, 2), np.inf), ValueError),
        ([[None, 1.0]] * 3, (ValueError, TypeError)),
        (np.zeros((3, 4, 2)), ValueError),
        (np.zeros((3, 2)) + 1j, TypeError),
        ("abc", (ValueError, TypeError)),
    ],
    ids=["nan", "inf", "None", "batch-mismatch", "complex", "text"],
)
def test_bad_controls_are_refused_up_front_naming_controls(controls, exc):
    """Today: NaN controls run and fail at step 0 as a NonFiniteError that blames 'an iterate'; a
    batch mismatch is numpy's 'input operand has more dimensions than allowed by the axis
    remapping'; complex controls lose their imaginary part with a ComplexWarning."""
    with pytest.raises(exc) as ei:
        run(controls=controls)
    one_sentence(ei.value, "controls")


def test_a_callback_that_is_not_callable_is_refused():
    with pytest.raises(TypeError) as ei:
        run(callback=5)
    one_sentence(ei.value, "callback")


def test_run_refuses_a_state_that_is_not_a_run_state():
    with pytest.raises(TypeError) as ei:
        Integrator(OSC, 0.1).run(None, 3)
    one_sentence(ei.value, "RunState")

