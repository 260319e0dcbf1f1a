"""The compiled programs of a run, one per (system structure, scheme, rule, options, kind).

They live in one bounded, process-wide table
(:mod:`~manifold_dirac._mechanics.compile_cache`) keyed by what the system
computes, so a system built again from the same functions shares them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable

import jax
import jax.numpy as jnp

from .._mechanics import compile_cache
from .._mechanics.step import StepMap
from .._mechanics.system import LagrangeDiracSystem
from . import exported

MEMBERS = "members"
"""Name of the batch axis of a batched run (``vmap``), used by Newton to branch on the whole batch."""

def compiled_functions(system: LagrangeDiracSystem) -> dict:
    """The compiled programs that serve ``system`` (key: scheme, rule, options, kind).

    They live in one bounded, process-wide table keyed by what the system
    computes (:mod:`~manifold_dirac._mechanics.compile_cache`): a system built
    again from the same functions shares them.
    """
    sk = compile_cache.structure_key(system)
    return {k[1:]: fn for k, fn in compile_cache.entries() if k[0] == sk}


def _compiled(sm: StepMap, kind: Hashable, build: Callable[[], Callable]) -> Callable:
    """One compiled program per (system structure, scheme, rule, options, composition, kind)."""
    parts = (sm.system, sm.scheme, sm.rule, sm.options, getattr(sm, "composition", None))
    key = (compile_cache.structure_key(sm.system), *parts[1:], kind)
    # the bundled systems' start and loop programs also go to disk, serialized (_run/exported.py)
    return compile_cache.cached(key, lambda: exported.program(parts, kind, build))


BLOCK = 1
"""Members stepped together (one ``vmap``) per trip of the loop over a batch on a CPU (:func:`member_step`).

One member per trip measured as fast as blocks of 4-16 members (``benchmarks/batch_layout.py``) and
compiles in half the time."""


def member_step(sm: StepMap, batched: bool, block: int | None = None) -> Callable:
    """The step map of one member, or of a batch: ``(state, k, t, h, params, u) -> (state, record)``.

    A batch (leading axis of every leaf of ``state`` and of ``u``; ``k, t, h,
    params`` shared) is stepped on a CPU as a loop over blocks of ``block``
    members (default :data:`BLOCK`; ``jax.lax.map``), a block of more than
    one member ``jax.vmap``-ed (axis ``MEMBERS``) and the last block padded
    with copies of the last member, whose results are dropped. On another
    backend (a GPU) the whole batch is one ``vmap`` unless ``block`` is given.

    One ``vmap`` over a whole batch computes the same values but is several
    times slower on a CPU (6x for the heavy top at 4096 members,
    ``docs/performance.md``): every operation of the step then reads and
    writes arrays of the batch's size, and XLA:CPU compiles the step into
    many kernels that pass them through memory, where one member's step is
    one kernel working in registers. A member also iterates Newton only
    until *it* has converged, not until the slowest member of the batch has.
    """
    if not batched:
        return sm.step
    vstep = jax.vmap(functools.partial(sm.step, axis_name=MEMBERS), in_axes=(0, None, None, None, None, 0),
                     axis_name=MEMBERS)
    if block is None and jax.default_backend() != "cpu":
        return vstep
    size = BLOCK if block is None else block
    one = sm.step if size == 1 else vstep  # a block of one: the member's own step, no batch axis

    def step(state, k, t, h, params, u=None):
        B = jnp.shape(state.status)[0]
        nb = -(-B // size)
        pad = nb * size - B
        lead = () if size == 1 else (size,)

        def blocks(a):
            if pad:
                a = jnp.concatenate([a, jnp.broadcast_to(a[-1:], (pad, *a.shape[1:]))])
            return a.reshape(nb, *lead, *a.shape[1:])

        out = jax.lax.map(lambda x: one(x[0], k, t, h, params, x[1]), jax.tree.map(blocks, (state, u)))
        return jax.tree.map(lambda a: a.reshape(nb * size, *a.shape[1 + len(lead):])[:B], out)

    return step
