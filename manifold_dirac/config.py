"""JAX configuration the library relies on: float64 and the compilation cache.

* ``jax_enable_x64`` is switched on at import: every array the library
  makes is float64 (a float32 trajectory would lose the invariants the
  integrators exist to keep).
* The persistent compilation cache is on by default in the user cache
  directory (``$XDG_CACHE_HOME/manifold_dirac/jax`` or
  ``~/.cache/manifold_dirac/jax``), so that a new process reuses the
  compiled step of a system it has run before. Set the environment variable
  ``MANIFOLD_DIRAC_JAX_CACHE`` to another directory, or to ``0`` to switch it
  off; a cache directory the user configured in JAX already is left alone.
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

__all__ = ["cache_directory", "configure"]

_CONFIGURED = False
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


def configure() -> None:
    """Enable float64 and (unless switched off) the persistent compilation cache."""
    global _CONFIGURED
    jax.config.update("jax_enable_x64", True)
    if _CONFIGURED:
        return
    _CONFIGURED = True
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
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
