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
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from typing import Any

__all__ = ["GUARD_ADVICE", "WORKER_THREAD_FLAGS", "hide_main_script", "refuse_in_bootstrapping_worker", "worker_env",
           "worker_xla_flags"]

WORKER_THREAD_FLAGS = "--xla_cpu_multi_thread_eigen=false"
"""XLA flag of a worker process: Eigen's matrix kernels on the calling thread (see :func:`worker_env`)."""
WORKER_THREADS_ENV = {"PJRT_NPROC": "1"}
"""Environment of a worker process that sizes XLA:CPU's intra-op thread pool ("tf_XLAEigen" threads) to one
thread: ``PJRT_NPROC`` is what jaxlib's CPU client reads for the pool's size (default: the CPUs the process
may use). No ``XLA_FLAGS`` flag does this (``intra_op_parallelism_threads=1`` there is a TensorFlow session
option; XLA ignores it)."""


def worker_xla_flags() -> str:
    """``XLA_FLAGS`` of a worker process: this process's (the user's or the library's) + one thread.

    Returns
    -------
    str
        ``XLA_FLAGS`` as set here (the user's), else the library's flag
        (:data:`manifold_dirac._config.XLA_FLAGS`, unless
        ``MANIFOLD_DIRAC_XLA_FLAGS=0``), followed by :data:`WORKER_THREAD_FLAGS`.
    """
    from . import _config as config

    own = os.environ.get("XLA_FLAGS", config.XLA_FLAGS if os.environ.get("MANIFOLD_DIRAC_XLA_FLAGS") != "0" else "")
    return f"{own} {WORKER_THREAD_FLAGS}".strip()


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
