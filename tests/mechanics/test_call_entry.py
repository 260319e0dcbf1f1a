"""What a compiled rollout runs around its loop: the operations of the program's entry computation.

XLA:CPU runs a program's entry computation as a graph of operations
("thunks") around the loop's compiled kernel. When more than 9 of them are
ready at once (its ``ThunkExecutor``'s split threshold, 8, plus the one it
runs), it hands half of them to another thread, which costs a short run tens
of microseconds (``docs/performance.md``, "What a call costs besides its
loop"). Two things keep a rollout's entry small, each checked here against
the compiled program and shown to be what does it:

* :func:`~manifold_dirac._mechanics.newton.forward_jacobian` computes the
  Newton matrix's tangent basis inside the loop: with ``jax.jacfwd``'s basis,
  XLA hoists the parts of the tangents that depend on the basis alone out of
  the loops, as operand-free operations of the entry;
* the rollout's loop carries its state, and stacks its per-step outputs, in
  one float and one integer array each (``ravel_pytree`` in ``_run/rollout.py``),
  with the step index a carry of its own, so that under ``vmap`` the first
  step's conditioning stays a branch.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
import manifold_dirac._mechanics.step as step_module
import manifold_dirac._run.rollout as rollout_module
from benchmarks.composition import entry_operations  # the one parser of a compiled program's entry
from manifold_dirac._mechanics.newton import forward_jacobian

SPLIT_READY = 9
"""At most this many entry operations ready at once run in the calling thread (XLA:CPU's split threshold + 1)."""


def ready_at_start(ops: dict[str, set[str]]) -> int:
    """How many entry operations are ready when the program starts (they read only parameters and constants)."""
    return sum(not inputs for inputs in ops.values())


def hoisted_constants(hlo: str, ops: dict[str, set[str]]) -> list[str]:
    """Entry operations that read nothing at all and come from inside a loop (their ``op_name`` has a ``while``):
    constants computed at every call that XLA's loop-invariant code motion moved out of the loops."""
    body = re.search(r"^ENTRY .*?\{\n(.*?)\n\}", hlo, re.S | re.M).group(1)
    return [n for n in ops if re.search(r"%" + re.escape(n) + r' = \S+ [a-z][\w-]*\(\).*op_name="[^"]*/while/', body)]


def disk_rollout(composition):
    """``jax.jit(rollout)`` of 6 steps of the rolling disk (a new system object: no program reused) and its data."""
    disk = md.systems.rolling_disk()
    q0 = disk.Q.from_coordinates([0.0, 0.0, 0.0, 0.0])
    q, v = jax.tree.map(jnp.asarray, q0), jnp.array([0.7, 1.0, 0.0, 2.0])
    f = jax.jit(lambda q, v, h: md.rollout(disk, q, v, h=h, n_steps=6, scheme="split", composition=composition))
    return f, (q, v, jnp.float64(0.3))


def compiled_rollout(composition):
    """The compiled text of ``jax.jit(rollout)`` of 6 steps of the rolling disk."""
    f, args = disk_rollout(composition)
    return f.lower(*args).compile().as_text()


@pytest.fixture(scope="module")
def composed():
    """``(f, args, compiled text)`` of the composed (``kahan_li8``) disk rollout, compiled once for the module."""
    f, args = disk_rollout("kahan_li8")
    return f, args, f.lower(*args).compile().as_text()


@pytest.mark.slow
def test_forward_jacobian_equals_jacfwd_and_batches():
    f = lambda x: jnp.stack([jnp.sin(x[0]) * x[1], x[1] ** 3, x[0] * x[1] * x[2]])  # noqa: E731
    x = jnp.array([0.3, 0.5, 0.7])
    J = forward_jacobian(f, x)
    assert J.dtype == jnp.float64
    np.testing.assert_array_equal(J, jax.jacfwd(f)(x))
    X = jnp.stack([x, 2.0 * x])
    np.testing.assert_array_equal(jax.vmap(lambda y: forward_jacobian(f, y))(X), jax.vmap(jax.jacfwd(f))(X))
    # differentiable (the implicit derivative of a solve and the unrolled mode differentiate the matrix)
    np.testing.assert_allclose(jax.jacfwd(lambda y: forward_jacobian(f, y))(x), jax.hessian(f)(x), rtol=1e-15)


# in the slow tier (its cold cost, tests/_tiers.py)
@pytest.mark.parametrize("composition", [None, "kahan_li8"])
@pytest.mark.slow
def test_rollout_entry_runs_in_the_calling_thread(composition, composed):
    hlo = composed[2] if composition == "kahan_li8" else compiled_rollout(composition)
    ops = entry_operations(hlo)
    assert hoisted_constants(hlo, ops) == []
    assert ready_at_start(ops) <= SPLIT_READY, sorted(n for n, i in ops.items() if not i)
    loop = [n for n in ops if n.startswith("call") or n.startswith("while")]
    assert len(loop) == 1
    after = [n for n, i in ops.items() if loop[0] in i]
    assert len(after) <= SPLIT_READY


@pytest.mark.slow
def test_the_entry_counts_see_hoisted_constants_and_many_outputs(monkeypatch):
    # sensitivity: jax.jacfwd's basis in the Newton matrix leaves operand-free operations in the entry
    monkeypatch.setattr(step_module, "forward_jacobian", lambda f, x, anchor=None: jax.jacfwd(f)(x))
    hlo = compiled_rollout("kahan_li8")
    assert len(hoisted_constants(hlo, entry_operations(hlo))) > 0
    # and a program with 12 independent outputs of 100 numbers has them all ready at its start
    many = jax.jit(lambda x: [jnp.sin(x) * (i + 1.5) for i in range(12)]).lower(jnp.ones(100)).compile().as_text()
    assert ready_at_start(entry_operations(many)) == 12 > SPLIT_READY


@pytest.mark.slow
def test_the_unpacked_loop_has_more_ready_at_its_start_and_the_same_values(monkeypatch, composed):
    packed, args, _ = composed
    monkeypatch.setattr(rollout_module, "PACKED", False)
    unpacked, _ = disk_rollout("kahan_li8")
    ops = entry_operations(unpacked.lower(*args).compile().as_text())
    assert ready_at_start(ops) > SPLIT_READY
    a, b = packed(*args), unpacked(*args)
    jax.tree.map(np.testing.assert_array_equal, a, b)


def test_the_composed_rollout_holds_few_reductions(monkeypatch):
    """The pivot search of the Newton solve's elimination by rows is a chain of comparisons and selects
    (``_mechanics/small.py``, ``first_largest``): an ``argmax`` is a reduction whose combining function is a
    computation of its own, with 26 values, each a buffer that XLA:CPU's runtime allocates and frees at every
    call (the disk's program 391 -> 251 buffers, a call of it that runs no step 37 -> 27 µs,
    ``docs/performance.md``). With the library's ``argmax`` as the pivot search, the lowered program holds one
    more reduction per column of the disk's 6-unknown elimination: the check sees them."""
    import manifold_dirac._mechanics.small as small

    def count() -> int:
        f, args = disk_rollout("kahan_li8")
        return len(re.findall(r"stablehlo\.reduce\b", f.lower(*args).as_text()))

    base = count()
    monkeypatch.setattr(small, "first_largest", lambda a: jnp.argmax(a).astype(jnp.int32))
    assert count() == base + 5


@pytest.mark.slow
def test_a_batched_rollout_keeps_the_first_steps_conditioning_a_branch():
    """The step index is not batched under ``vmap`` (the status is): the conditioning of the first step's Newton
    matrix, evaluated on the loop's first trip only, stays a ``conditional`` of the compiled loop, not a select
    that would evaluate it at every step."""
    disk = md.systems.rolling_disk()
    q0 = disk.Q.from_coordinates([0.0, 0.0, 0.0, 0.0])
    qs = jax.tree.map(lambda a: jnp.stack([a, a]), jax.tree.map(jnp.asarray, q0))
    vs = jnp.array([[0.7, 1.0, 0.0, 2.0], [0.5, 1.0, 0.0, 2.0]])
    f = jax.jit(jax.vmap(lambda q, v: md.rollout(disk, q, v, h=0.3, n_steps=6, scheme="split")))
    assert "conditional(" in f.lower(qs, vs).compile().as_text()


def test_a_rollout_step_takes_its_point_and_momenta_from_newtons_last_evaluation(monkeypatch):
    """A rollout's step traces the step equations once fewer than a step that evaluates them again at the
    solution: its new point and momenta are Newton's own last evaluation (the differentiation ``"detached"``,
    a test path, evaluates them again, and the count sees that one more evaluation)."""
    traced = []
    equations = step_module.StepMap.equations

    def counting(self, *args, **kwargs):
        traced.append(1)
        return equations(self, *args, **kwargs)

    monkeypatch.setattr(step_module.StepMap, "equations", counting)
    pendulum = md.systems.pendulum()
    counts = {}
    for mode in ("implicit", "detached"):
        traced.clear()
        # a solver of its own: a step map no other test compiled (nothing comes from a trace cache)
        jax.make_jaxpr(lambda q, v, mode=mode: md.rollout(
            pendulum, q, v, h=0.1, n_steps=3, differentiation=mode,
            solver=md.SolverOptions(rtol=1.234567e-10)))(jnp.array([0.4]), jnp.array([0.1]))
        counts[mode] = len(traced)
    assert counts["implicit"] > 0
    assert counts["detached"] == counts["implicit"] + 1, counts
