"""JAX configuration: float64 on import, the persistent compilation cache on by default and switchable."""

import os
import subprocess
import sys

import jax
import pytest

import manifold_dirac  # noqa: F401


def _run(code: str, **env: str) -> str:
    full = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_float64_is_enabled_on_import():
    assert jax.config.jax_enable_x64
    assert jax.numpy.zeros(2).dtype == jax.numpy.float64


def test_the_compilation_cache_is_on_by_default_in_the_user_cache_directory(tmp_path):
    code = "import manifold_dirac, manifold_dirac._config as c; print(c.cache_directory())"
    env = {k: v for k, v in os.environ.items() if k != "MANIFOLD_DIRAC_JAX_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(tmp_path / "manifold_dirac" / "jax")


@pytest.mark.slow
def test_the_cache_can_be_switched_off_or_moved(tmp_path):
    code = "import manifold_dirac, manifold_dirac._config as c; print(c.cache_directory())"
    assert _run(code, MANIFOLD_DIRAC_JAX_CACHE="0") == "None"
    assert _run(code, MANIFOLD_DIRAC_JAX_CACHE=str(tmp_path / "elsewhere")) == str(tmp_path / "elsewhere")


@pytest.mark.slow
def test_the_cache_is_bounded_so_that_jax_locks_reads_and_writes():
    """Unbounded, JAX writes cache entries in place without a lock: a concurrent reader can load a
    half-written executable and segfault. Bounded, every get/put holds a file lock."""
    code = (
        "import jax, manifold_dirac, manifold_dirac._config as c; "
        "print(jax.config.jax_compilation_cache_max_size == c.CACHE_MAX_BYTES > 0)"
    )
    assert _run(code) == "True"


def test_the_xla_flag_is_set_only_when_the_user_has_not_set_xla_flags():
    code = "import os, manifold_dirac, manifold_dirac._config as c; print(repr(os.environ.get('XLA_FLAGS')), c.xla_flags_set())"
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MANIFOLD_DIRAC_XLA_FLAGS")}
    from manifold_dirac._config import XLA_FLAGS

    def run(**extra):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, **extra},
                             timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert run() == f"{XLA_FLAGS!r} True"
    assert run(XLA_FLAGS="--xla_cpu_enable_fast_math=false") == "'--xla_cpu_enable_fast_math=false' False"
    assert run(XLA_FLAGS="") == "'' False"  # set, even empty: the user's
    assert run(MANIFOLD_DIRAC_XLA_FLAGS="0") == "None False"  # the opt-out
    # JAX already running: the flag would have no effect, so it is not set
    late = "import os, jax; jax.numpy.zeros(1); import manifold_dirac._config as c; print(os.environ.get('XLA_FLAGS'), c.xla_flags_set())"
    out = subprocess.run([sys.executable, "-c", late], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "None False", out.stderr[-2000:]


_DISPATCH = (
    "import os, time, jax, jax.numpy as jnp\n"
    "if os.environ.get('START_FIRST'): jnp.zeros(1)\n"
    "import manifold_dirac, manifold_dirac._config as c\n"
    "def g(x):\n"
    "    a = jax.lax.fori_loop(0, 6000, lambda i, y: jnp.sin(y) + 0.5, x)\n"
    "    return a, jnp.cos(a)\n"
    "f = jax.jit(g)\n"
    "x = jnp.ones(1024)\n"
    "jax.block_until_ready(f(x))\n"
    "t0 = time.perf_counter(); y = f(x); back = time.perf_counter() - t0\n"
    "jax.block_until_ready(y); ready = time.perf_counter() - t0\n"
    "print(c.sync_dispatch_set(), jax.config.read('jax_cpu_enable_async_dispatch'), back / ready > 0.9)")


def test_cpu_dispatch_is_made_synchronous_unless_opted_out_or_too_late():
    """On import the library turns JAX's asynchronous CPU dispatch off; the call of a compiled program (one JAX
    hands to its CPU client's thread, more than 1000 flops) then returns when its result is ready. With
    ``MANIFOLD_DIRAC_SYNC_DISPATCH=0``, or when JAX's backend started before the import, JAX's asynchronous
    default stays and the same call returns before its result is ready: the check sees the difference."""
    env = {k: v for k, v in os.environ.items() if k != "MANIFOLD_DIRAC_SYNC_DISPATCH"}

    def run(**extra):
        out = subprocess.run([sys.executable, "-c", _DISPATCH], capture_output=True, text=True,
                             env={**env, **extra}, timeout=120)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.strip()

    assert run() == "True False True"
    assert run(MANIFOLD_DIRAC_SYNC_DISPATCH="0") == "False True False"
    assert run(START_FIRST="1") == "False True False"


def test_no_module_of_the_package_starts_jax_on_import():
    """Importing any module (the catalog of examples included) leaves JAX's backends unstarted, so that the JAX
    options a user sets after ``import manifold_dirac`` (the CPU dispatch mode, ``XLA_FLAGS``, the platform) still
    take effect. The check itself is shown to see a start: a module that makes an array does start it."""
    code = ("import importlib, pkgutil, sys\n"
            "from jax._src import xla_bridge\n"
            "import manifold_dirac\n"
            "names = [m.name for m in pkgutil.walk_packages(manifold_dirac.__path__, 'manifold_dirac.')]\n"
            "for name in names:\n"
            "    importlib.import_module(name)\n"
            "    if xla_bridge.backends_are_initialized():\n"
            "        sys.exit('started by ' + name)\n"
            "import jax.numpy as jnp; jnp.zeros(1)\n"
            "print(len(names), xla_bridge.backends_are_initialized())")
    count, started = _run(code).split()
    assert int(count) > 50 and started == "True"


def test_the_suite_compiles_at_its_level_and_its_fresh_interpreters_at_the_users(monkeypatch):
    """``tests/conftest.py``: the default tier's processes compile at ``MANIFOLD_DIRAC_SUITE_XLA_LEVEL`` (0 unless
    set) besides the library's flag, and :func:`user_environment` gives a fresh interpreter the user's defaults."""
    import pytest

    from manifold_dirac._config import XLA_FLAGS
    from tests.conftest import user_environment

    flags = os.environ.get("MANIFOLD_DIRAC_SUITE_XLA_FLAGS")
    if not flags:
        pytest.skip("the suite's level is off here: a selection other than the default tier (-m slow, ...), "
                    "MANIFOLD_DIRAC_SUITE_XLA_LEVEL=default, MANIFOLD_DIRAC_XLA_FLAGS=0 or XLA_FLAGS of one's own")
    level = int(os.environ.get("MANIFOLD_DIRAC_SUITE_XLA_LEVEL", "0").strip())
    assert os.environ["XLA_FLAGS"] == flags == f"{XLA_FLAGS} --xla_backend_optimization_level={level}"
    user = user_environment()
    assert "XLA_FLAGS" not in user and "MANIFOLD_DIRAC_COMPILE_AHEAD" not in user
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")  # a user's own XLA_FLAGS are theirs: kept
    assert user_environment()["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"
