"""The compiled programs of a run, one per (system structure, scheme, rule, options, kind).

They live in one bounded, process-wide table
(:mod:`~manifold_dirac._mechanics.compile_cache`) keyed by what the system
computes, so a system built again from the same functions shares them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable

import jax

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


def member_step(sm: StepMap, batched: bool) -> Callable:
    """The step map of one member, or ``vmap``-ed over a batch (axis ``MEMBERS``; controls batched, ``k, t, h,
    params`` shared): ``(state, k, t, h, params, u) -> (state, record)``."""
    if not batched:
        return sm.step
    return jax.vmap(functools.partial(sm.step, axis_name=MEMBERS), in_axes=(0, None, None, None, None, 0),
                    axis_name=MEMBERS)
