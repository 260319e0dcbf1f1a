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
