"""A run's loop compiled while its start compiles: the two programs of a first call on two cores.

The first :func:`~manifold_dirac._run.integrate.integrate` call of a new
system compiles two programs, the start of the run (the state at ``t0``
and the values its checks need) and the loop over the steps, and XLA
compiles each on one thread. One after the other, the loop's compile waits
for the start to be compiled, run and checked. Here the loop is traced
and lowered first (in the calling thread: tracing is Python), then
compiled in a background thread while the calling thread traces,
compiles, runs and checks the start; the run waits for the loop's executable before its
first chunk. Same programs, same values (the executable is the one the
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
workers). ``MANIFOLD_DIRAC_COMPILE_AHEAD=0`` switches it off. A failure
here costs nothing but the overlap: the run then compiles its loop as
without it, and raises what it would have raised. If the start's checks
refuse the initial data, the loop's compile goes on in the background
and its executable is kept for the next call (the persistent cache too).
"""

from __future__ import annotations

import concurrent.futures
import logging
import os
import threading
from collections.abc import Callable

from .exported import DiskProgram

__all__ = ["ENV", "compile_in_background", "enabled", "wait"]

ENV = "MANIFOLD_DIRAC_COMPILE_AHEAD"
"""The environment variable that switches compiling ahead off (``0``)."""

_log = logging.getLogger(__name__)
_lock = threading.Lock()
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pending: dict[int, tuple[Callable, concurrent.futures.Future]] = {}
stats = {"submitted": 0, "waited": 0}
"""Counts of this process (for the tests): loop programs compiled ahead, and runs that waited for one."""


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
    executable (:func:`wait` first, for a ``jax.jit`` function: a call
    before the compile has finished would compile it again).
    """
    if isinstance(fn, DiskProgram):
        fn.compile_ahead(*args, submit=_submit)  # its call waits for the compile itself
        return
    lowered = fn.lower(*args)
    _pending[id(fn)] = (fn, _submit(lowered.compile))


def wait(fn: Callable) -> None:
    """Wait for ``fn``'s compile in the background, if there is one (its failure is left to the call)."""
    item = _pending.pop(id(fn), None)
    if item is None:
        return
    stats["waited"] += 1
    exc = item[1].exception()  # the call compiles again and raises it, where a run's errors are raised
    if exc is not None:
        _log.debug("compiling ahead failed: %s", exc)
