"""Shared pytest configuration: hypothesis profiles.

* ``ci`` (selected when ``CI`` is set): bounded, derandomized, so CI runs
  in minutes and a failure reproduces;
* ``dev`` (default): a few more examples, random seeds;
* ``slow``: many examples, for ``pytest -m slow`` runs.

Select another with ``HYPOTHESIS_PROFILE=slow pytest ...``.
"""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=25,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("slow", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))



# Every compiled program maps its code into the process (~550 memory maps per
# compiled system on Linux), and the kernel refuses more than
# vm.max_map_count (65530 by default) maps per process: a session that kept
# every module's compiled systems alive crashed with a segmentation fault in
# XLA's compile or cache load after ~100 systems (twice on 2026-12-02, in the
# README test near the end of the run). After a test module, when the process
# holds more than MAX_MAPS maps, every compiled program is dropped; systems
# shared across modules then recompile from the persistent cache (dropping
# them after every module cost minutes of CI). docs/what-changed.md#configuration
# says the same for users.
import gc  # noqa: E402

# The suite measures what the programs compute, not how they reach the process: with the disk layer of
# serialized programs on, every bundled system's first compile would also export and write its programs
# (~0.4 s each, a minute or more of CI). tests/test_exported.py switches the layer on for its own tests
# (a directory of its own) and compares loaded programs with traced ones.
os.environ.setdefault("MANIFOLD_DIRAC_EXPORT", "0")

# The suite runs two worker processes on a machine of two CPUs (pytest-xdist, CI): each core is busy with a
# worker, so compiling a run's loop in a background thread while its start compiles (_run/ahead.py) overlaps
# nothing, and a test whose start is refused (many check that bad input raises) compiled a loop it never ran.
# Off, as it is in the tour's and a sweep's workers for the same reason. Measured on a sample of the suite's
# files, empty cache, two workers, the settings alternating (204-206 s off, 236-244 s on):
#   XDG_CACHE_HOME=$(mktemp -d) MANIFOLD_DIRAC_COMPILE_AHEAD=0 python -m pytest tests/faults \
#       tests/mechanics/test_errors.py tests/test_raises.py tests/mechanics/test_composition.py \
#       tests/interconnection/test_interconnection.py tests/mechanics/test_guarantees.py   (and =1)
# tests/test_compile_ahead.py switches it on for its own tests; tests/test_compile.py's fresh interpreters run
# with the user's default.
os.environ.setdefault("MANIFOLD_DIRAC_COMPILE_AHEAD", "0")

# Most of the suite's time is XLA compiling its programs (about two thirds, benchmarks/suite_profile.py), and
# about 30 % of a first call's compile is LLVM optimizing the kernels, which the suite's short runs do not repay.
# The default tier's processes compile with LLVM's optimizations off (`--xla_backend_optimization_level=0`,
# besides the library's own flag), as the library already compiles every run's start: on a sample of the
# suite's files (tests/mechanics/test_composition.py, test_holonomic.py, test_galerkin.py,
# tests/interconnection/test_interconnection.py; empty cache, two workers, the settings alternating) 220 and
# 218 s at XLA's default, 185 and 180 s with it (`python benchmarks/suite_xla_level.py suite FILES --rounds 2`,
# benchmarks/results/suite_xla_level_suite.json; docs/architecture.md has more). A run's values do not depend on
# the level beyond round-off (XLA:CPU does no fast-math at either): tests/mechanics/test_engine_reference.py
# holds the suite's runs to 1e-12 of a record made at XLA's default (tests/data/record_engine_reference.py runs
# outside the suite), and one of them in a fresh interpreter at the user's default level as well (slow tier);
# tests/test_compile.py's fresh interpreters compile at the user's default. Any other selection of tests
# (`pytest -m slow`, ...) compiles at XLA's default; so does the default tier with
# MANIFOLD_DIRAC_SUITE_XLA_LEVEL=default (or another level: an integer). A user's own XLA_FLAGS, or
# MANIFOLD_DIRAC_XLA_FLAGS=0, are left alone. Set once, in the first pytest process, before any test has started
# JAX's backend (pytest-xdist's workers inherit its environment); MANIFOLD_DIRAC_SUITE_XLA_FLAGS records what the
# suite set ("" when it set nothing).
DEFAULT_TIER = "not slow"
"""The marker expression of the default tier (pyproject.toml's addopts)."""


def pytest_configure(config):
    if "MANIFOLD_DIRAC_SUITE_XLA_FLAGS" in os.environ:  # a pytest-xdist worker, or a pytest started by a test
        return
    import manifold_dirac._config as library_config  # sets the library's XLA_FLAGS unless the user has

    level = os.environ.get("MANIFOLD_DIRAC_SUITE_XLA_LEVEL", "0").strip().lower()
    if level != "default" and not level.isdigit():
        raise pytest.UsageError(f"MANIFOLD_DIRAC_SUITE_XLA_LEVEL must be 'default' or an XLA optimization level "
                                f"(0-3), got {level!r}")
    flags = ""
    if library_config.xla_flags_set() and level != "default" and (config.option.markexpr or "").strip() == DEFAULT_TIER:
        flags = f"{library_config.XLA_FLAGS} --xla_backend_optimization_level={int(level)}"
        os.environ["XLA_FLAGS"] = flags
    os.environ["MANIFOLD_DIRAC_SUITE_XLA_FLAGS"] = flags


def user_environment() -> dict[str, str]:
    """This process's environment with the user's defaults for compiling: without the suite's ``XLA_FLAGS``
    and its switch of compiling ahead (for the tests whose fresh interpreters check what a user's first call
    compiles)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MANIFOLD_DIRAC_COMPILE_AHEAD", "MANIFOLD_DIRAC_SUITE_XLA_FLAGS")}
    if os.environ.get("MANIFOLD_DIRAC_SUITE_XLA_FLAGS") and env.get("XLA_FLAGS") == os.environ[
            "MANIFOLD_DIRAC_SUITE_XLA_FLAGS"]:
        del env["XLA_FLAGS"]
    return env


import jax  # noqa: E402
import pytest  # noqa: E402


MAX_MAPS = 30_000


def _n_maps() -> int:
    try:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)
    except OSError:  # not Linux: no such limit to guard
        return 0


@pytest.fixture(scope="module", autouse=True)
def _free_compiled_programs_when_the_process_holds_many():
    yield
    if _n_maps() > MAX_MAPS:
        jax.clear_caches()
        gc.collect()


_COMPILES = [0]


def _count_compile(event, duration, **kwargs):
    if event == "/jax/core/compile/backend_compile_duration":
        _COMPILES[0] += 1


@pytest.fixture(scope="session")
def compiles():
    """The number of XLA programs compiled so far in this process (a callable; counting from the first use)."""
    jax.monitoring.register_event_duration_secs_listener(_count_compile)
    return lambda: _COMPILES[0]
