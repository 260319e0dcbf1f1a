"""The compiled loop's XLA options (:data:`~manifold_dirac._run.loop.CHUNK_COMPILER_OPTIONS`) change its compile
time, not what it computes: the same run, bit for bit, as with XLA's defaults."""

from __future__ import annotations

import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._mechanics import compile_cache
from manifold_dirac._run import loop


def _run(options: dict) -> np.ndarray:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loop, "CHUNK_COMPILER_OPTIONS", options)
        compile_cache.clear()
        tr = md.integrate(md.systems.pendulum(), np.array([1.0]), v0=np.array([0.2]), h=0.05, n_steps=200, stride=7)
    compile_cache.clear()
    return np.concatenate([tr.q.ravel(), tr.p.ravel(), tr.v.ravel(), tr.energy.ravel(), tr.xi.ravel()])


def test_the_loop_compiled_with_its_options_computes_the_same():
    assert loop.CHUNK_COMPILER_OPTIONS == {"xla_disable_hlo_passes": "while-loop-invariant-code-motion"}
    ours, default = _run(dict(loop.CHUNK_COMPILER_OPTIONS)), _run({})
    np.testing.assert_array_equal(ours, default)
    # sensitivity: a run that differs in its last bits is told apart
    assert not np.array_equal(ours, ours * (1.0 + 1e-15 * np.sign(ours)))
