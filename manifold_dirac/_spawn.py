"""Worker processes started from a plain script: no ``if __name__ == "__main__":`` guard needed.

A Dask ``LocalCluster`` starts its workers with ``multiprocessing``'s *spawn*
method, which runs the parent's main script again in every new process (as
the module ``__mp_main__``) to recreate its functions. A script that calls
:func:`manifold_dirac.sweep` at top level, without the guard, would start a
cluster again from each worker ("Nanny failed to start").

The workers need nothing from the script: Dask pickles the functions and
objects of ``__main__`` by value (cloudpickle). So while the sweep's own
cluster runs, :func:`hide_main_script` hides the script's file name from
``multiprocessing`` and new workers do not run it. A worker that is started
anyway while it runs the script (another process pool, a cluster started by
the script itself) gets from :func:`refuse_in_bootstrapping_worker` an error
saying what to add.

A worker process runs XLA on one thread (:func:`worker_env`): its programs
(one trajectory each) gain nothing from XLA's intra-op thread pool, and two
workers on two cores would contend for it.

:func:`worker_pool` is a pool of such processes for work that does not need
Dask (the command line's tour): the script hidden, one XLA thread per worker,
Ctrl-C handled by the parent alone (which stops the workers).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

__all__ = ["GUARD_ADVICE", "WORKER_THREADS_ENV", "cpu_count", "hide_main_script", "refuse_in_bootstrapping_worker",
           "unordered_results", "worker_env", "worker_pool", "worker_xla_flags"]

WORKER_THREADS_ENV = {"PJRT_NPROC": "1"}
"""Environment of a worker process that sizes XLA:CPU's intra-op thread pool ("tf_XLAEigen" threads, which
Eigen's kernels use too) to one thread: ``PJRT_NPROC`` is what jaxlib's CPU client reads for the pool's size
(default: the CPUs the process may use). No ``XLA_FLAGS`` flag does this (``intra_op_parallelism_threads=1``
there is a TensorFlow session option; XLA ignores it), and a worker's ``XLA_FLAGS`` must stay this process's:
they are part of the key of every program in the persistent compilation cache, so another flag (such as
``--xla_cpu_multi_thread_eigen=false``) would make the workers miss every program the user's own processes
compiled, and the other way round. ``PJRT_NPROC`` is not part of the key."""


def worker_xla_flags() -> str:
    """``XLA_FLAGS`` of a worker process: this process's (the user's, or the library's), unchanged.

    Returns
    -------
    str
        ``XLA_FLAGS`` as set here (the user's, or the library's set at
        import), else the flag the library would set
        (:data:`manifold_dirac._config.XLA_FLAGS`, unless
        ``MANIFOLD_DIRAC_XLA_FLAGS=0``): the same compiled programs, the
        same cache keys, as in this process (see :data:`WORKER_THREADS_ENV`).
    """
    from . import _config as config

    return os.environ.get("XLA_FLAGS", config.XLA_FLAGS if os.environ.get("MANIFOLD_DIRAC_XLA_FLAGS") != "0" else "")


def worker_env() -> dict[str, str]:
    """Environment variables of a worker process (a sweep's Dask worker, a tour's worker): XLA on one thread.

    Returns
    -------
    dict of str to str
        ``XLA_FLAGS`` (:func:`worker_xla_flags`) and ``PJRT_NPROC=1``
        (:data:`WORKER_THREADS_ENV`; a value the user set is kept).
    """
    return {"XLA_FLAGS": worker_xla_flags(), "PJRT_NPROC": os.environ.get("PJRT_NPROC", WORKER_THREADS_ENV["PJRT_NPROC"])}

GUARD_ADVICE = (
    'put the lines that start the work under the guard `if __name__ == "__main__":` at the end of the '
    "script, for example\n\n"
    '    if __name__ == "__main__":\n'
    "        ds = md.sweep(cell, axes)\n\n"
    "(the functions the workers call, such as the cell, stay at top level)"
)
"""What to add to a script whose top level starts worker processes."""


class _Restore:
    """Puts back the ``__main__`` attributes :func:`hide_main_script` took away (``close()``, idempotent)."""

    def __init__(self, module: Any, saved: dict[str, Any]):
        self._module, self._saved = module, saved

    def close(self) -> None:
        for name, value in self._saved.items():
            setattr(self._module, name, value)
        self._saved = {}


def hide_main_script() -> _Restore:
    """Hide the main script from the processes ``multiprocessing`` spawns until ``close()`` is called.

    ``multiprocessing.spawn.get_preparation_data`` tells a new process to
    run the parent's ``__main__`` again when that module has a ``__spec__``
    name (``python -m pkg.mod``) or a ``__file__`` (``python script.py``);
    with both set to None it leaves the new process's ``__main__`` alone.
    In an interactive session (no ``__file__``) nothing changes.

    Returns
    -------
    object with a ``close()`` method
        Restores ``__main__.__file__`` and ``__main__.__spec__``.
    """
    main = sys.modules.get("__main__")
    saved: dict[str, Any] = {}
    if main is not None:
        for name in ("__file__", "__spec__"):
            if getattr(main, name, None) is not None:
                saved[name] = getattr(main, name)
                setattr(main, name, None)
    return _Restore(main, saved)


def refuse_in_bootstrapping_worker(what: str) -> None:
    """Raise ``RuntimeError`` if this is a spawned process running its parent's script at import.

    Parameters
    ----------
    what : str
        The function about to start worker processes (for the message).

    Raises
    ------
    RuntimeError
        In a process started by ``multiprocessing`` (spawn or forkserver)
        while it runs the parent's main script as ``__mp_main__``: the
        script's top level starts workers without the ``__main__`` guard.
    """
    # multiprocessing marks a spawned process as "inheriting" while it prepares (runs the parent's script)
    if not getattr(multiprocessing.current_process(), "_inheriting", False):
        return
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_code.co_name == "<module>"
                                     and frame.f_globals.get("__name__") == "__mp_main__"):
        frame = frame.f_back
    script = frame.f_code.co_filename if frame is not None else "?"
    raise RuntimeError(
        f"{what}: called in a new worker process while it runs the script {script!r} "
        "that started it (multiprocessing's spawn method runs the main script again in each new process, "
        f"so a script whose top level starts workers would start them again and again): {GUARD_ADVICE}"
    )


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one).

    Returns
    -------
    int
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _ignore_sigint() -> None:
    """A pool worker's initializer: a Ctrl-C at the terminal reaches the whole process group; the parent
    handles it (and stops the workers), so a worker neither stops half-way nor prints a traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@contextlib.contextmanager
def worker_pool(processes: int, what: str) -> Iterator[multiprocessing.pool.Pool]:
    """A ``multiprocessing`` pool of fresh worker processes (spawn), each running XLA on one thread.

    Parameters
    ----------
    processes : int
        Worker processes (at least 1).
    what : str
        The command that starts them (for the message of
        :func:`refuse_in_bootstrapping_worker`).

    Yields
    ------
    multiprocessing.pool.Pool
        Its workers have :func:`worker_env` (this process's environment is
        left as it was), ignore SIGINT and do not run the main script again
        (:func:`hide_main_script`). On leaving the block normally the pool
        is closed and joined; on an exception (a Ctrl-C, a SIGTERM turned
        into one, a task's error) its workers are terminated at once.

    Raises
    ------
    RuntimeError
        Called in a spawned process while it runs its parent's script
        (see :func:`refuse_in_bootstrapping_worker`).
    """
    refuse_in_bootstrapping_worker(what)
    env = worker_env()
    saved = {k: os.environ.get(k) for k in env}
    shown = hide_main_script()
    try:
        os.environ.update(env)  # spawn copies this process's environment when it starts each worker
        try:
            before = set(multiprocessing.active_children())
            pool = multiprocessing.get_context("spawn").Pool(max(1, int(processes)), initializer=_ignore_sigint)
            _WORKERS[id(pool)] = [p for p in multiprocessing.active_children() if p not in before]
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        try:
            yield pool
        except BaseException:
            pool.terminate()
            raise
        else:
            pool.close()
        finally:
            pool.join()
            _WORKERS.pop(id(pool), None)
    finally:
        shown.close()


_WORKERS: dict[int, list[multiprocessing.process.BaseProcess]] = {}
"""The worker processes each open :func:`worker_pool` started (by the pool's id)."""


_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def unordered_results(pool: multiprocessing.pool.Pool, fn: Callable[[_Item], _Result], items: Iterable[_Item], what: str,
                      poll: float = 1.0) -> Iterator[_Result]:
    """``pool.imap_unordered(fn, items)`` (one item per task) that raises if a worker process dies.

    A ``multiprocessing`` pool replaces a worker that died (killed, out of
    memory, a crash in compiled code) but loses the task it ran, and
    ``imap`` would then wait for ever. Here the pool's workers are checked
    every ``poll`` seconds while a result is awaited.

    Parameters
    ----------
    pool : multiprocessing.pool.Pool
        From :func:`worker_pool`.
    fn : callable
        A picklable function of one item (a module-level function).
    items : iterable
        The tasks.
    what : str
        The command (for the message).
    poll : float
        Seconds between checks.

    Yields
    ------
    object
        ``fn(item)`` for every item, in the order they finish.

    Raises
    ------
    RuntimeError
        When a worker process has ended while results were awaited: which
        process, its exit code, and that its task is lost.
    """
    workers = _WORKERS.get(id(pool), [])
    results = pool.imap_unordered(fn, items, chunksize=1)
    while True:
        try:
            yield results.next(timeout=poll)
        except StopIteration:
            return
        except multiprocessing.TimeoutError:
            dead = [(p.pid, p.exitcode) for p in workers if p.exitcode is not None]
            if dead:
                pid, code = dead[0]
                how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
                raise RuntimeError(
                    f"{what}: worker process {pid} ended ({how}) while the work was not finished; the "
                    "task it ran is lost (out of memory? see the messages above)") from None
