"""A run's loop compiled while its start compiles: the two programs of a first call on two cores.

The first :func:`~manifold_dirac._run.integrate.integrate` call of a new
system compiles two programs, the start of the run (the state at ``t0``
and the values its checks need) and the loop over the steps, and XLA
compiles each on one thread. One after the other, the loop's compile waits
for the start to be compiled, run and checked. Here the loop is traced
and lowered first (in the calling thread: tracing is Python), then
compiled in a background thread while the calling thread traces,
compiles, runs and checks the start; the run waits for the loop's
executable before its first chunk. Same programs, same values (the executable is the one the
call would have compiled); only the wall time changes, on a machine with
two CPUs or more (``docs/performance.md``).

The loop's arguments are known before the start is traced: its state is the
start's output, whose shapes are those of ``StepMap.initial`` (a trace of
a few constants), so the loop's compile starts before the start is traced.

It is done only where it can pay: in :func:`integrate` (not in
``Integrator.initial_state`` and ``run`` called apart, where the loop's
arguments are not known at the start), for a loop program this process
has not compiled yet, when this process may use two CPUs or more and is
not a worker told to use one (``PJRT_NPROC=1``: the tour's and a sweep's
workers). A loop program already compiled for other shapes (another
batch size) is compiled after the start, as without this.
``MANIFOLD_DIRAC_COMPILE_AHEAD=0`` switches it off.

A failure here costs only the overlap: the run then compiles its loop as
without it, and raises what it would have raised. What it does cost: if the
start's checks refuse the initial data, the error comes after the loop's
tracing (later than without it), the loop's compile
goes on in the background (its executable kept for the next call, and in
the persistent cache), and a process that exits meanwhile waits for it.
A compile that fails in the background falls back to the traced program.
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable
from typing import cast

import jax

from .exported import DiskProgram

__all__ = ["ENV", "compile_in_background", "enabled", "pending", "waiting"]

ENV = "MANIFOLD_DIRAC_COMPILE_AHEAD"
"""The environment variable that switches compiling ahead off (``0``)."""

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pending: dict[int, tuple[Callable, concurrent.futures.Future]] = {}
stats = {"submitted": 0}
"""Counts of this process (for the tests): loop programs compiled ahead."""


def enabled() -> bool:
    """Whether :func:`integrate` compiles a new loop in the background (see the module docstring)."""
    if os.environ.get(ENV, "1") == "0" or os.environ.get("PJRT_NPROC") == "1":
        return False
    from .._spawn import cpu_count

    return cpu_count() >= 2


def _submit(work: Callable[[], object]) -> concurrent.futures.Future:
    global _pool
    with _lock:
        if _pool is None:
            # one thread: a run compiles one loop ahead; its workers are joined at exit, so an exit during a
            # compile waits for it rather than ending a thread inside XLA
            _pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="manifold_dirac-compile")
    stats["submitted"] += 1
    return _pool.submit(work)


def compile_in_background(fn: Callable, args: tuple) -> None:
    """Lower ``fn`` for ``args`` (arrays or ``jax.ShapeDtypeStruct``) now, and compile it in the background.

    The first call of ``fn`` with those arguments' shapes finds the
    executable (through :func:`waiting`, for a ``jax.jit`` function; a
    :class:`~.exported.DiskProgram`'s call waits itself).
    """
    if isinstance(fn, DiskProgram):
        fn.compile_ahead(*args, submit=_submit)
        return
    # entries whose compile is done are dropped (their executable is the jitted function's own): only compiles in
    # flight are held here, not every program a refused start or a refused run left behind
    for key in [k for k, (_, f) in _pending.items() if f.done()]:
        del _pending[key]
    lowered = cast(jax.stages.Wrapped, fn).lower(*args)  # a jax.jit function (a DiskProgram returned above)
    _pending[id(fn)] = (fn, _submit(lowered.compile))


def pending(fn: Callable) -> bool:
    """Whether ``fn`` has a compile in the background that no run has waited for yet."""
    return id(fn) in _pending


def waiting(fn: Callable) -> Callable:
    """``fn``, or ``fn`` whose first call waits for its compile in the background (see :func:`compile_in_background`).

    The wait is part of the first call, so that a run takes a Ctrl-C during it
    as during a chunk (``RunInterrupted``, with what was stored: nothing).
    A compile that failed in the background is left to the call, which
    compiles again and raises the error where a run's errors are raised.
    """
    if id(fn) not in _pending:
        return fn

    def first_waits(*args: object) -> object:
        item = _pending.get(id(fn))  # removed once waited for (a Ctrl-C during the wait leaves it for the next run)
        if item is not None:
            exc = item[1].exception()
            if exc is not None:
                _log.debug("compiling ahead failed: %s", exc)
            _pending.pop(id(fn), None)
        return fn(*args)

    return first_waits
