"""Compatibility shims for optional third-party packages.

The core of manifold_dirac never imports geomstats; the adapter
(:mod:`manifold_dirac._manifolds.geomstats_adapter`), ``Sphere2(values="geomstats")``
and the cross-check tests do, through :func:`import_geomstats`.

geomstats 2.8.0 (its latest release) fails to import with numpy >= 2.4:
its numpy backend does ``from numpy import trapz`` at import time, and numpy
2.4 removed ``trapz`` (deprecated since 2.0 in favour of ``trapezoid``, the
same function). :func:`import_geomstats` lends numpy the alias
``trapz = trapezoid`` for the duration of the import only (the backend keeps
its own reference) and removes it afterwards, so numpy is left as it was for
every other user: nothing is patched globally. ``docs/dependencies.md``
records why this was chosen over pinning numpy or vendoring geomstats.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Iterator
from types import ModuleType

import numpy as np

__all__ = ["GeomstatsUnavailableError", "geomstats_available", "import_geomstats"]


class GeomstatsUnavailableError(ImportError):
    """geomstats is not installed (``pip install manifold_dirac[geomstats]``)."""


@contextlib.contextmanager
def _numpy_trapz_alias() -> Iterator[bool]:
    """Within the block, ``np.trapz`` is ``np.trapezoid`` if numpy lacks it; removed again on exit.

    Yields whether the alias was lent (False where numpy has its own ``trapz``).
    """
    lend = not hasattr(np, "trapz") and hasattr(np, "trapezoid")
    if lend:
        np.trapz = np.trapezoid  # type: ignore[attr-defined]
    try:
        yield lend
    finally:
        if lend:
            del np.trapz  # type: ignore[attr-defined]


def import_geomstats(*submodules: str) -> ModuleType:
    """Import and return :mod:`geomstats` (and import ``geomstats.<submodule>`` for each name given).

    Sets ``GEOMSTATS_BACKEND=numpy`` if the variable is unset (geomstats
    reads it at its first import; manifold_dirac computes with numpy). The
    imports run with ``np.trapz`` aliased to ``np.trapezoid`` where numpy
    lacks it; the alias is removed when they return.

    Parameters
    ----------
    *submodules : str
        Submodules to import inside the same scope, e.g. ``"geometry.hypersphere"``.

    Returns
    -------
    module
        The imported ``geomstats`` package.

    Raises
    ------
    GeomstatsUnavailableError
        If geomstats is not installed; the message says how to install it.
    """
    os.environ.setdefault("GEOMSTATS_BACKEND", "numpy")
    try:
        with _numpy_trapz_alias():
            module = importlib.import_module("geomstats")
            for name in submodules:
                importlib.import_module(f"geomstats.{name}")
        return module
    except ModuleNotFoundError as exc:
        if exc.name is not None and exc.name.split(".")[0] == "geomstats":
            raise GeomstatsUnavailableError(
                "geomstats is not installed; install the optional extra with "
                "`pip install manifold_dirac[geomstats]`"
            ) from exc
        raise


def geomstats_available() -> bool:
    """Whether :func:`import_geomstats` succeeds (geomstats installed and importable)."""
    try:
        import_geomstats()
    except ImportError:
        return False
    return True
