"""The fast paths of composed runs: one compiled call, and the work a warm call repeats.

* a composed :func:`manifold_dirac.rollout` traced inside ``jax.jit`` (one
  XLA call for a whole run, the fastest public path for many short runs)
  gives the positions of :func:`manifold_dirac.integrate`;
* the composition's refusal of a base that is not self-adjoint is decided on
  concrete values also when it is first asked for inside a trace.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._mechanics.rules import is_flow
from manifold_dirac.systems.catalog import EXAMPLES


def _last(tree):
    return [np.asarray(a)[-1] for a in jax.tree.leaves(tree)]


@pytest.mark.parametrize("name,composition", [("chaplygin_sled", "triple_jump4")])
@pytest.mark.slow
def test_jitted_composed_rollout_matches_integrate(name, composition):
    """``jax.jit`` of a composed rollout: the final positions of ``integrate`` to round-off.

    The check of the base map's self-adjointness (whether the retraction is
    a flow, evaluated numerically) used to run on traced values when first
    asked inside ``jax.jit`` and failed with a concretization error.
    """
    ex = EXAMPLES[name]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    h, n = 0.25, 4
    is_flow.cache_clear()  # the first question about this manifold is asked inside the trace
    fast_run = jax.jit(lambda q, v, hh: md.rollout(sysm, q, v, h=hh, n_steps=n, scheme="split",
                                                   composition=composition))

    def fast(q, v, hh):
        return fast_run(q, v, hh).q

    run = fast_run(q0, v0, h)
    got = _last(run.q)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tr = md.integrate(sysm, q0, v0, h=h, n_steps=n, scheme="split", composition=composition)
    want = _last(tr.q)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    # the same Newton starts, so the same iterations step by step (test_rollout_conditioning.py)
    assert tr.iterations[:n].tolist() == np.asarray(run.iterations).tolist()
    # sensitivity: another step size moves the positions far beyond that tolerance
    other = _last(fast(q0, v0, 1.1 * h))
    assert max(float(np.max(np.abs(a - b))) for a, b in zip(other, want)) > 1e-3


def test_is_flow_inside_a_trace_is_concrete():
    """``is_flow`` asked first inside ``jax.jit`` answers as outside (exp: a flow; Cayley: not)."""
    exp_q = EXAMPLES["heavy_top"].system("exp").Q
    cay_q = EXAMPLES["heavy_top"].system("cayley").Q
    is_flow.cache_clear()
    seen = {}

    @jax.jit
    def probe(x):
        seen["exp"], seen["cayley"] = is_flow(exp_q), is_flow(cay_q)
        return x

    probe(1.0)
    assert seen == {"exp": True, "cayley": False}


@pytest.mark.slow
def test_eager_rollout_takes_host_values_as_they_are():
    """The eager call (numpy inputs, integer ``v0``) gives the values of the jitted one, in float64.

    The eager wrapper converts host inputs with numpy (an eager ``jnp``
    conversion dispatches a program of its own per leaf); traced inputs pass
    through unchanged, so the same call works inside ``jax.jit``.
    """
    sysm = md.systems.pendulum()
    q0, v0 = np.array([1]), np.array([0])  # integers: converted to float64
    eager = md.rollout(sysm, q0, v0, h=0.05, n_steps=10, composition="triple_jump4")
    jitted = jax.jit(lambda q, v: md.rollout(sysm, q, v, h=0.05, n_steps=10, composition="triple_jump4"))(
        q0.astype(float), v0.astype(float))
    assert eager.q.dtype == np.float64
    np.testing.assert_allclose(np.asarray(eager.q), np.asarray(jitted.q), rtol=0, atol=1e-13)  # one program or two
    # sensitivity: another start moves the end point
    other = md.rollout(sysm, np.array([1.1]), np.array([0.0]), h=0.05, n_steps=10, composition="triple_jump4")
    assert abs(float(other.q[-1, 0] - eager.q[-1, 0])) > 1e-3
