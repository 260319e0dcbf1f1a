"""The worker processes a sweep starts run XLA on one thread each, with the library's XLA flag."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from manifold_dirac import _spawn as SP
from manifold_dirac import _sweep as SW

# run in a fresh process: one small program, then the names of the process's threads
COUNT_XLA_THREADS = """
import os, sys
import jax, jax.numpy as jnp
jax.jit(lambda x: jnp.sum(jnp.exp(x)))(jnp.linspace(0.0, 1.0, 100_000)).block_until_ready()
names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
print(sum(n.startswith("tf_XLAEigen") for n in names))
"""


def _flags() -> dict[str, str]:
    return {k: os.environ.get(k, "") for k in ("XLA_FLAGS", "PJRT_NPROC")}


def _dask_settings() -> dict[str, object]:
    import dask

    return {k: dask.config.get(k) for k in SW.QUIET_CLUSTER}


@pytest.mark.slow
def test_workers_started_by_a_sweep_run_xla_single_threaded():
    pytest.importorskip("distributed")
    client, to_close = SW._client(None, 1, True)
    try:
        env = list(client.run(_flags).values())
        settings = list(client.run(_dask_settings).values())
    finally:
        for c in to_close:
            c.close()
    assert env == [SP.worker_env()] and env[0]["PJRT_NPROC"] == "1"
    assert env[0]["XLA_FLAGS"] == SP.worker_xla_flags() == os.environ.get("XLA_FLAGS", SP.worker_xla_flags())
    assert ("xla_cpu_small_while_loop_byte_threshold" in env[0]["XLA_FLAGS"]
            or os.environ.get("MANIFOLD_DIRAC_XLA_FLAGS") == "0")
    # the workers' Dask bookkeeping is quieter than Dask's defaults (no stack profile every 10 ms, ...),
    # and this process's settings are Dask's own
    assert settings == [SW.QUIET_CLUSTER] and settings[0]["distributed.worker.profile.enabled"] is False
    assert _dask_settings() != SW.QUIET_CLUSTER


@pytest.mark.skipif(not os.path.isdir("/proc/self/task") or len(os.sched_getaffinity(0)) < 2,
                    reason="counts the threads of a process through /proc, on a machine of two CPUs or more")
@pytest.mark.slow
def test_the_worker_environment_gives_xla_one_thread():
    """XLA:CPU's intra-op pool ("tf_XLAEigen" threads) has one thread in a process with the workers'
    environment, and one per CPU without it (the check can fail: ``XLA_FLAGS`` alone, even with
    ``intra_op_parallelism_threads=1``, leaves the pool at the CPU count)."""

    def threads(extra: dict[str, str]) -> int:
        env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PJRT_NPROC", "NPROC")}
        out = subprocess.run([sys.executable, "-c", COUNT_XLA_THREADS], env={**env, **extra}, capture_output=True,
                             text=True, check=True, timeout=300).stdout
        return int(out.split()[-1])

    assert threads(SP.worker_env()) == 1
    n_cpus = len(os.sched_getaffinity(0))
    assert threads({"XLA_FLAGS": SP.worker_xla_flags() + " --xla_cpu_multi_thread_eigen=false "
                               "intra_op_parallelism_threads=1"}) == n_cpus


# in a fresh process: compile one program with the persistent cache of argv[1]; print "hit" or "miss"
CACHE_HIT = """
import sys
import manifold_dirac  # noqa: F401 - the library's XLA flag, unless XLA_FLAGS is set
import jax, jax.numpy as jnp
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
seen = []
jax.monitoring.register_event_listener(lambda event, **kw: seen.append(event.rsplit("/", 1)[-1]))
jax.jit(lambda x: jnp.sin(x) @ jnp.cos(x).T + 1.0)(jnp.ones((7, 7))).block_until_ready()
print("hit" if "cache_hits" in seen else "miss")
"""


@pytest.mark.slow
def test_a_worker_finds_the_programs_of_the_users_processes_in_the_persistent_cache(tmp_path, monkeypatch):
    """Slow: three fresh processes import JAX (the workers' ``XLA_FLAGS`` are checked to be this process's
    by ``test_workers_started_by_a_sweep_run_xla_single_threaded``). A program compiled in a plain process (a user's script) is a cache hit in a process with the
    workers' environment: the one XLA thread does not change the programs' cache keys. The check can
    fail: an extra XLA flag (single-threaded Eigen) makes it a miss."""

    def run(extra: dict[str, str]) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "PJRT_NPROC", "MANIFOLD_DIRAC_XLA_FLAGS")}
        out = subprocess.run([sys.executable, "-c", CACHE_HIT, str(tmp_path)], env={**env, **extra},
                             capture_output=True, text=True, check=True, timeout=300).stdout
        return out.split()[-1]

    assert run({}) == "miss"  # the user's process compiles and writes the program
    from manifold_dirac import _config

    monkeypatch.setenv("XLA_FLAGS", _config.XLA_FLAGS)  # the user's process's flags, not the suite's (conftest.py)
    flags = SP.worker_env()
    assert run(flags) == "hit"
    assert run({**flags, "XLA_FLAGS": flags["XLA_FLAGS"] + " --xla_cpu_multi_thread_eigen=false"}) == "miss"


def test_worker_flags_keep_the_users_xla_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert SP.worker_xla_flags() == "--xla_cpu_enable_fast_math=false"
    assert SP.worker_env()["XLA_FLAGS"] == SP.worker_xla_flags()
    monkeypatch.setenv("PJRT_NPROC", "3")  # a pool size the user chose is kept
    assert SP.worker_env()["PJRT_NPROC"] == "3"


def _worker_facts(i: int) -> tuple[int, str, str, bool]:
    import signal

    return (i, os.environ.get("PJRT_NPROC", ""), os.environ.get("XLA_FLAGS", ""),
            signal.getsignal(signal.SIGINT) is signal.SIG_IGN)


@pytest.mark.slow
def test_worker_pool_workers_run_xla_on_one_thread_and_leave_ctrl_c_to_the_parent(monkeypatch):
    """The pool the tour uses: its workers get the worker environment (this process's is left as it
    was), ignore SIGINT (the parent stops them), and return results in order through ``imap``."""
    import signal

    monkeypatch.delenv("PJRT_NPROC", raising=False)
    before = dict(os.environ)
    handler = signal.getsignal(signal.SIGINT)
    with SP.worker_pool(2, "a test") as pool:
        facts = list(pool.imap(_worker_facts, range(4)))
    assert dict(os.environ) == before
    assert [f[0] for f in facts] == [0, 1, 2, 3]
    assert all(f[1] == "1" and f[2] == SP.worker_xla_flags() and f[3] for f in facts), facts
    # and this process's Ctrl-C handler is left as it was (not the workers'); a process started in the
    # background of a shell already ignores SIGINT, which is not the pool's doing
    assert signal.getsignal(signal.SIGINT) is handler


def _sleep_then_pid(seconds: float) -> int:
    import time

    time.sleep(seconds)
    return os.getpid()


@pytest.mark.slow
def test_a_worker_that_dies_is_an_error_not_a_hang():
    """A worker killed while it runs a task (as by the out-of-memory killer): the pool would replace it
    and wait for ever for the lost task; the results raise, naming the process and the signal. On
    that exception (as on a Ctrl-C) the pool's workers are terminated at once, not awaited: the
    replacement worker, asleep in the lost task or waiting for one, is gone too."""
    import multiprocessing
    import signal
    import time

    before = set(multiprocessing.active_children())
    with pytest.raises(RuntimeError, match=r"a test: worker process (\d+) ended \(killed by signal 9\)"):
        with SP.worker_pool(1, "a test") as pool:
            (victim,) = SP._WORKERS[id(pool)]
            results = SP.unordered_results(pool, _sleep_then_pid, [0.0, 60.0], "a test", poll=0.2)
            assert next(results) == victim.pid
            time.sleep(0.5)  # the second task has started: it sleeps in the worker
            os.kill(victim.pid, signal.SIGKILL)
            t0 = time.perf_counter()
            next(results)
    assert time.perf_counter() - t0 < 30  # neither the lost task nor a replacement's 60 s were awaited
    assert set(multiprocessing.active_children()) <= before
