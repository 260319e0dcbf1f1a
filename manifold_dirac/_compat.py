"""Compatibility shims for optional third-party packages.

The core of manifold_dirac never imports geomstats; the adapter
(:mod:`manifold_dirac.manifolds.geomstats_adapter`) and the cross-check tests
do, through :func:`import_geomstats`.

geomstats 2.8.0 (its latest release) fails to import with numpy >= 2.4:
its numpy backend does ``from numpy import trapz``, and numpy 2.4 removed
``trapz`` (deprecated since 2.0 in favour of ``trapezoid``, the same
function). :func:`import_geomstats` installs the alias ``np.trapz =
np.trapezoid`` -- only if ``trapz`` is missing -- before the first geomstats
import. ``docs/dependencies.md`` records why this was chosen over pinning
numpy or vendoring geomstats.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import numpy as np

__all__ = ["GeomstatsUnavailableError", "geomstats_available", "import_geomstats"]


class GeomstatsUnavailableError(ImportError):
    """geomstats is not installed (``pip install manifold_dirac[geomstats]``)."""


def _patch_numpy_for_geomstats() -> bool:
    """Alias ``np.trapz`` to ``np.trapezoid`` where numpy no longer has it.

    Returns
    -------
    bool
        Whether the alias was installed by this call.
    """
    if hasattr(np, "trapz"):
        return False
    trapezoid = getattr(np, "trapezoid", None)
    if trapezoid is None:  # pragma: no cover - numpy < 2.0 always has trapz
        return False
    np.trapz = trapezoid  # type: ignore[attr-defined]
    return True


def import_geomstats() -> ModuleType:
    """Import and return :mod:`geomstats`, working around numpy >= 2.4.

    Sets ``GEOMSTATS_BACKEND=numpy`` if the variable is unset (geomstats
    reads it at its first import; manifold_dirac computes with numpy) and
    aliases ``np.trapz = np.trapezoid`` if numpy lacks ``trapz``.

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
    _patch_numpy_for_geomstats()
    try:
        return importlib.import_module("geomstats")
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
