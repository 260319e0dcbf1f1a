"""_compat.import_geomstats: the numpy >= 2.4 workaround, and that the core never imports geomstats."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from manifold_dirac import _compat


def _run(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GEOMSTATS_BACKEND"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_core_and_testing_module_do_not_import_geomstats():
    out = _run(
        "import sys, manifold_dirac, manifold_dirac.testing, manifold_dirac.manifolds;"
        "print('geomstats' in sys.modules)"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_import_geomstats_in_a_fresh_interpreter():
    code = (
        "import os, numpy as np; had = hasattr(np, 'trapz');"
        "from manifold_dirac._compat import import_geomstats; g = import_geomstats();"
        "from geomstats.geometry.hypersphere import Hypersphere; Hypersphere(2);"
        "print(had, os.environ['GEOMSTATS_BACKEND'], np.trapz is getattr(np, 'trapezoid', np.trapz), g.__version__)"
    )
    out = _run(code)
    if "GeomstatsUnavailableError" in out.stderr:
        pytest.skip("geomstats not installed")
    assert out.returncode == 0, out.stderr
    had, backend, aliased, _version = out.stdout.split()
    assert backend == "numpy"
    if had == "False":  # numpy >= 2.4: the alias was installed
        assert aliased == "True"


def test_plain_geomstats_import_fails_on_new_numpy_without_the_shim():
    # documents why the shim exists; on numpy < 2.4 there is nothing to show
    fresh = _run("import numpy; print(hasattr(numpy, 'trapz'))")  # this process may hold the alias
    if fresh.stdout.strip() == "True":
        pytest.skip("numpy still has trapz")
    out = _run("import geomstats")
    if "No module named 'geomstats'" in out.stderr:
        pytest.skip("geomstats not installed")
    assert out.returncode != 0 and "trapz" in out.stderr


def test_patch_only_when_missing(monkeypatch):
    sentinel = object()
    monkeypatch.setattr(np, "trapz", sentinel, raising=False)
    assert _compat._patch_numpy_for_geomstats() is False
    assert np.trapz is sentinel
    monkeypatch.delattr(np, "trapz")
    assert _compat._patch_numpy_for_geomstats() is True
    assert np.trapz is np.trapezoid


def test_missing_geomstats_gives_install_hint(monkeypatch):
    import importlib

    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "geomstats":
            raise ModuleNotFoundError("No module named 'geomstats'", name="geomstats")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", fake)
    with pytest.raises(_compat.GeomstatsUnavailableError, match=r"pip install manifold_dirac\[geomstats\]"):
        _compat.import_geomstats()
    assert _compat.geomstats_available() is False
