"""JAX configuration the library relies on: float64, an XLA flag, synchronous CPU dispatch and the compilation cache.

* ``jax_enable_x64`` is switched on at import: every array the library
  makes is float64 (a float32 trajectory would lose the invariants the
  integrators exist to keep).
* The persistent compilation cache is on by default in the user cache
  directory (``$XDG_CACHE_HOME/manifold_dirac/jax`` or
  ``~/.cache/manifold_dirac/jax``), so that a new process reuses the
  compiled step of a system it has run before. Set the environment variable
  ``MANIFOLD_DIRAC_JAX_CACHE`` to another directory, or to ``0`` to switch it
  off; a cache directory the user configured in JAX already is left alone.
* ``XLA_FLAGS`` is set at import to :data:`XLA_FLAGS`, **only if the user
  has not set** ``XLA_FLAGS`` (and JAX has not started its CPU backend yet:
  XLA reads the variable once, process-wide). The flag raises XLA:CPU's
  byte threshold below which a ``while`` loop is compiled into the kernel
  around it: with it, a whole trajectory loop, Newton iterations included,
  runs as one kernel instead of hundreds of small ones per step (4-6x per
  step, and half the compile time, ``docs/performance.md``). It applies
  to every program of the process: its effect on other large JAX programs
  is measured by ``benchmarks/xla_flag.py`` (``docs/performance.md``). Set
  ``MANIFOLD_DIRAC_XLA_FLAGS=0`` to leave ``XLA_FLAGS`` alone; setting
  ``XLA_FLAGS`` yourself (even to an empty string) does the same.
* JAX's CPU dispatch is made **synchronous** at import
  (``jax_cpu_enable_async_dispatch = False``), if JAX has not started its
  CPU backend yet (the option is read then, once). A call of a compiled
  program then runs in the calling thread instead of being handed to a
  thread of JAX's CPU client while the caller waits for it: a short run's
  call (the rolling disk's 7 composed steps) takes 8 % less time on one
  core and 10-45 % less on two, and a user's other JAX code measured no
  slower (``benchmarks/composition.py --dispatch``,
  ``docs/performance.md``). A compiled program's call returns when its
  result is ready, and a Ctrl-C during a run is taken when the current
  chunk of steps ends (a chunk runs for a few seconds at most). Set
  ``MANIFOLD_DIRAC_SYNC_DISPATCH=0`` to keep JAX's asynchronous default, or
  set the option yourself after the import, before your first
  computation: no module of the library starts JAX's backend when
  imported.
* The persistent cache is relocatable: XLA's own caches (autotuning, kernel
  caches) are not written into it (``jax_persistent_cache_enable_xla_caches =
  "none"``), so a copied or moved cache directory still hits.
* The cache is size-bounded (``CACHE_MAX_BYTES``), which makes JAX guard every
  read and write with a file lock (the ``filelock`` package). Without it JAX
  writes entries in place, unlocked, and a second process (another test run, a
  Dask worker) can read a half-written executable and crash with a
  segmentation fault -- seen here with several processes sharing the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax

__all__ = ["XLA_FLAGS", "cache_directory", "configure", "sync_dispatch_set", "xla_flags_set"]

_CONFIGURED = False
_XLA_FLAGS_SET = False
_SYNC_DISPATCH_SET = False
SMALL_WHILE_LOOP_BYTES = 1 << 24
"""XLA:CPU's ``small_while_loop_byte_threshold`` set by :data:`XLA_FLAGS` (16 MiB: the carried state of a
4096-member batch, a few MiB, stays below it)."""
XLA_FLAGS = f"--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold={SMALL_WHILE_LOOP_BYTES}"
"""What the library sets ``XLA_FLAGS`` to at import when the user has not set it (see the module docstring)."""
CACHE_MAX_BYTES = 2 * 1024**3
"""Upper bound of the persistent cache; least recently used entries are evicted beyond it."""


def cache_directory() -> Path | None:
    """The persistent compilation cache directory in use, or None if off.

    Returns
    -------
    pathlib.Path or None
        Where compiled programs are kept between processes
        (``MANIFOLD_DIRAC_JAX_CACHE`` chooses it; ``0`` switches the cache off).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> d = md.cache_directory()          # a Path, or None when the cache is off
    """
    d = jax.config.jax_compilation_cache_dir
    return Path(d) if d else None


def xla_flags_set() -> bool:
    """Whether the library set ``XLA_FLAGS`` in this process (see the module docstring)."""
    return _XLA_FLAGS_SET


def sync_dispatch_set() -> bool:
    """Whether the library made JAX's CPU dispatch synchronous in this process (see the module docstring)."""
    return _SYNC_DISPATCH_SET


def _backend_started() -> bool:
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge._backends)
    except (ImportError, AttributeError):  # pragma: no cover  (another JAX layout: assume started)
        return True


def _set_xla_flags() -> None:
    global _XLA_FLAGS_SET
    if os.environ.get("MANIFOLD_DIRAC_XLA_FLAGS", "") == "0" or "XLA_FLAGS" in os.environ or _backend_started():
        return
    os.environ["XLA_FLAGS"] = XLA_FLAGS
    _XLA_FLAGS_SET = True


def _set_sync_dispatch() -> None:
    global _SYNC_DISPATCH_SET
    if os.environ.get("MANIFOLD_DIRAC_SYNC_DISPATCH", "") == "0" or _backend_started():
        return
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    _SYNC_DISPATCH_SET = True


def configure() -> None:
    """Enable float64, the XLA flag, synchronous CPU dispatch and (unless switched off) the persistent cache."""
    global _CONFIGURED
    jax.config.update("jax_enable_x64", True)
    if _CONFIGURED:
        return
    _CONFIGURED = True
    _set_xla_flags()
    _set_sync_dispatch()
    setting = os.environ.get("MANIFOLD_DIRAC_JAX_CACHE", "")
    if setting == "0" or jax.config.jax_compilation_cache_dir:
        return
    if setting:
        path = Path(setting).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        path = Path(base) / "manifold_dirac" / "jax"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:  # a read-only home: run without the cache
        return
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_compilation_cache_max_size", CACHE_MAX_BYTES)  # locked reads and writes
    # 0 (cache every program) measured no faster on a first call from the cache: a locked cache read of a small
    # program costs about what compiling it does (benchmarks/first_call.py)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    jax.config.update("jax_persistent_cache_enable_xla_caches", "none")  # a copied cache directory hits
