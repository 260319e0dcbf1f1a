"""The SE(2) and SO(3) steps' ``sin``/``cos`` are computed once per evaluation in the compiled program.

XLA:CPU counts ``sin`` and ``cos`` as cheap operations and recomputes them in
every fused kernel that reads them: before the closed forms routed them
through one reduction, the residual of one knife-edge step (midpoint rule,
symmetric scheme: the end point with its inverse Jacobians, the node at
``xi/2`` with its Jacobians) compiled to 9 ``sin``/``cos`` evaluations and
the whole step (Newton included) to 63 (now 14), each a call of the math library:
about half the time of a step. Their derivatives (the Newton matrix, by
forward mode) reuse the same values: the knife edge's residual and Jacobian
together compiled to 24 of them, now 2; the heavy top's (SO(3)) to 16, now 8
(``sin`` and ``cos`` of one angle, one library call). The count is read from
the optimized program XLA compiles (``Compiled.as_text()``).
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._manifolds import se2, so3


@pytest.fixture(scope="module")
def knife_edge():
    integ = md.Integrator(md.systems.knife_edge(), 0.05)
    return integ.stepmap, integ.initial_state(np.eye(3), np.array([0.8, 1.0, 0.0])).members


def _trig_count(system, z, jacobian=False) -> int:
    """``sin``/``cos`` operations in the compiled residual of ``system``'s step at ``z`` (or in its Jacobian)."""
    sm, st = system
    params = sm.system.params

    def residual(z, q, p):
        return sm.equations(z, q, p, 0.0, 0.05, params)[0]

    fn = jax.jacfwd(residual) if jacobian else residual
    text = jax.jit(fn).lower(z, st.q, st.p).compile().as_text()
    return len(re.findall(r"\b(?:sine|cosine)\(", text))


Z_KNIFE = jnp.array([0.04, 0.05, 0.0, 0.0])
Z_TOP = jnp.array([0.005, -0.002, 0.02])


@pytest.fixture(scope="module")
def heavy_top():
    integ = md.Integrator(md.systems.heavy_top(), 0.01)
    return integ.stepmap, integ.initial_state(np.eye(3), np.array([0.5, -0.2, 2.0])).members


def test_a_knife_edge_residual_evaluates_one_sine_and_one_cosine(knife_edge):
    # the end point needs sin/cos of w/2 (its inverse Jacobians hold cot(w/2)), the node at xi/2 those of its own
    # angle w/2: the same two values
    assert _trig_count(knife_edge, Z_KNIFE) == 2


def test_the_newton_matrix_adds_no_sine_or_cosine(knife_edge, heavy_top):
    assert _trig_count(knife_edge, Z_KNIFE, jacobian=True) == 2
    assert _trig_count(heavy_top, Z_TOP, jacobian=True) <= 8


@pytest.mark.parametrize("how", ["direct", "not_shared"])
def test_the_count_sees_the_recomputation(knife_edge, monkeypatch, how):
    # sensitivity: sin/cos read directly (no reduction) are recomputed in every kernel that reads them; the end
    # point's half angle computed from w rather than as the node computes its angle is a second sin/cos pair
    if how == "direct":
        monkeypatch.setattr(se2, "_sincos", lambda x1: (jnp.sin(x1[..., 0]), jnp.cos(x1[..., 0])))
        assert _trig_count(knife_edge, Z_KNIFE) > 4
    else:
        half_angle = se2._half_angle_coefficients
        monkeypatch.setattr(se2, "_half_angle_coefficients", lambda w, half1=None: half_angle(w))
        assert _trig_count(knife_edge, Z_KNIFE) == 4


def test_the_count_sees_derivatives_that_recompute(knife_edge, heavy_top, monkeypatch):
    # sensitivity: the same values without their own derivative rule: forward mode computes cos for d sin, ...
    monkeypatch.setattr(se2, "_trig", so3._trig.fun)
    monkeypatch.setattr(so3, "_trig", so3._trig.fun)
    assert _trig_count(knife_edge, Z_KNIFE, jacobian=True) > 2
    assert _trig_count(heavy_top, Z_TOP, jacobian=True) > 8


def test_the_reduction_passes_the_values_through_exactly():
    x = jnp.array([0.0, -0.0, 1e-300, 0.3, -2.5, 1e6, np.inf, np.nan])
    s, c = jax.jit(se2._sincos)(x[:, None])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(np.asarray(s), np.sin(np.asarray(x)))
        np.testing.assert_array_equal(np.asarray(c), np.cos(np.asarray(x)))
    assert np.signbit(np.asarray(s)[1])  # sin(-0) = -0 kept
