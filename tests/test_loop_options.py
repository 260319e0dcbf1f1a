"""A run's loop program is compiled with its own XLA options (``loop.LOOP_COMPILER_OPTIONS``): XLA's reshape mover
left out, which the loop's compile time gains from (``benchmarks/loop_passes.py``) and its results do not see."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._mechanics import compile_cache
from manifold_dirac._run import exported, loop
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._run.start import START_COMPILER_OPTIONS


def test_the_loop_programs_carry_the_loop_options_and_the_start_its_own():
    """Both loop programs (with and without the round-off-floor test) take the loop's options, in memory and on
    disk; the start keeps its own; another program none."""
    assert jax.default_backend() == "cpu"
    assert loop.LOOP_COMPILER_OPTIONS == {"xla_disable_hlo_passes": "reshape-mover"}
    for kind in (("chunk", False, True), ("chunk_floor", True, False)):
        assert exported.compiler_options(kind) == loop.LOOP_COMPILER_OPTIONS
    assert exported.compiler_options(("start", 0, True, True)) == START_COMPILER_OPTIONS
    assert exported.compiler_options(("step", 0)) is None
    options = loop.loop_compiler_options()
    assert options is not None
    options["xla_disable_hlo_passes"] = ""  # a copy: the module's options are not changed through it
    assert loop.LOOP_COMPILER_OPTIONS["xla_disable_hlo_passes"] == "reshape-mover"


def _knife_edge(options: dict) -> tuple[np.ndarray, str]:
    """The knife edge's run (its points, momenta, velocities, energies) and its compiled loop's text, with the
    loop compiled with ``options``."""
    ex = md.get_example("knife_edge")
    system = ex.system()
    q0, v0 = ex.initial(system)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loop, "LOOP_COMPILER_OPTIONS", options)
        compile_cache.clear()
        tr = md.integrate(system, q0, v0=v0, h=ex.h, n_steps=300, stride=7)
        integ = Integrator(system, h=ex.h)
        start = integ._start(q0, v0, None, 0.0, None)
        members = integ._member_shapes(start)
        args = (members, members.q, np.zeros(6, np.int32), jax.ShapeDtypeStruct(members.p.shape, np.float64),
                np.zeros(2), integ._use_params(None, "test"), None)
        text = integ._chunk_program(0, True).lower(*args).compile().as_text()
    compile_cache.clear()
    run = np.concatenate([np.asarray(x).ravel() for x in (tr.q, tr.p, tr.v, tr.energy)])
    return run, text


@pytest.mark.slow  # two compiles of the knife edge's loop
def test_the_loop_without_the_reshape_mover_is_another_program_and_computes_the_same():
    """With the options, XLA compiles another loop program (the option reaches it: the knife edge's reshapes stay
    where the step put them) and the run is the same bit for bit as with XLA's defaults."""
    ours, ours_text = _knife_edge(dict(loop.LOOP_COMPILER_OPTIONS))
    default, default_text = _knife_edge({})
    assert ours_text != default_text
    np.testing.assert_array_equal(ours, default)
    assert np.all(np.isfinite(ours))
    # sensitivity: a run that differs in its last bits is told apart
    assert not np.array_equal(ours, ours * (1.0 + 1e-15 * np.sign(ours)))
