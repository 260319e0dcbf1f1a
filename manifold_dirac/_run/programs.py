"""The compiled programs of a run, one per (system structure, scheme, rule, options, kind).

They live in one bounded, process-wide table
(:mod:`~manifold_dirac._mechanics.compile_cache`) keyed by what the system
computes, so a system built again from the same functions shares them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from .._mechanics import compile_cache
from .._mechanics.step import StepMap
from .._mechanics.system import LagrangeDiracSystem
from . import exported

if TYPE_CHECKING:
    from .._mechanics.composition import ComposedStepMap

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


def member_map(fn: Callable, in_axes: tuple, block: int | None = None, axis_name: str | None = None,
               batch_fn: Callable | None = None) -> Callable:
    """``jax.vmap(fn, in_axes)`` (batch axis 0 or None per argument), computed on a CPU as a loop over members.

    The batched arguments (``in_axes`` 0: the leading axis of every leaf)
    are cut into blocks of ``block`` members (default :data:`BLOCK`), the
    last padded with copies of the last member (whose results are dropped);
    ``jax.lax.map`` loops over the blocks, and a block of more than one
    member is a ``vmap`` (axis ``axis_name``) of ``batch_fn`` (default
    ``fn``: the function to ``vmap`` when it differs from one member's, as
    the step's, which branches on the whole block). On another backend (a
    GPU) it is ``jax.vmap`` itself unless ``block`` is given. The outputs
    have the batch axis first, as ``vmap``'s.

    One ``vmap`` over a whole batch computes the same values but is several
    times slower on a CPU (6x for the heavy-top step at 4096 members,
    ``docs/performance.md``): every operation then reads and writes arrays of
    the batch's size, and XLA:CPU compiles the function into many kernels
    that pass them through memory, where one member's function is one kernel
    working in registers. A loop in ``fn`` (Newton's) also runs for each
    member only until *it* has converged, not until the slowest member has.
    """
    vfn = jax.vmap(fn if batch_fn is None else batch_fn, in_axes=in_axes, axis_name=axis_name)
    if block is None and jax.default_backend() != "cpu":
        return vfn
    size = BLOCK if block is None else block
    one = fn if size == 1 else vfn  # a block of one: the member's own function, no batch axis
    batched = [a == 0 for a in in_axes]
    if any(a not in (0, None) for a in in_axes):
        raise ValueError(f"member_map: in_axes must be 0 or None, got {in_axes!r}")

    def mapped(*args):
        B = next(jnp.shape(x)[0] for a, b in zip(args, batched) if b for x in jax.tree.leaves(a))
        nb = -(-B // size)
        pad = nb * size - B
        lead = () if size == 1 else (size,)

        def blocks(a):
            if pad:
                a = jnp.concatenate([a, jnp.broadcast_to(a[-1:], (pad, *a.shape[1:]))])
            return a.reshape(nb, *lead, *a.shape[1:])

        xs = tuple(jax.tree.map(blocks, a) if b else None for a, b in zip(args, batched))

        def body(x):
            return one(*(xi if b else a for xi, a, b in zip(x, args, batched)))

        out = jax.lax.map(body, xs)
        return jax.tree.map(lambda a: a.reshape(nb * size, *a.shape[1 + len(lead):])[:B], out)

    return mapped


def member_step(sm: StepMap | ComposedStepMap, batched: bool, block: int | None = None,
                defer_floor: bool = False) -> Callable:
    """The step map of one member, or of a batch: ``(state, k, t, h, params, u) -> (state, record)``.

    A batch (leading axis of every leaf of ``state`` and of ``u``; ``k, t, h,
    params`` shared) is stepped by :func:`member_map`: on a CPU a loop over
    blocks of ``block`` members (default :data:`BLOCK`), a block of more than
    one member ``vmap``-ed with the axis ``MEMBERS``; on a GPU one ``vmap``.
    ``defer_floor``: one member's step without the round-off-floor test
    (:meth:`StepMap.step <manifold_dirac._mechanics.step.StepMap.step>`; a
    ``vmap``-ed block takes it from Newton's linearization either way).
    """
    one = functools.partial(sm.step, defer_floor=True) if defer_floor else sm.step
    if not batched:
        return one
    return member_map(one, (0, None, None, None, None, 0), block, MEMBERS,
                      batch_fn=functools.partial(sm.step, axis_name=MEMBERS))
