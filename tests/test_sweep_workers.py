"""The worker processes a sweep starts run XLA on one thread each, with the library's XLA flag."""

from __future__ import annotations

import os

import pytest

from manifold_dirac import _sweep as SW


def _flags() -> str:
    return os.environ.get("XLA_FLAGS", "")


def test_workers_started_by_a_sweep_run_xla_single_threaded():
    pytest.importorskip("distributed")
    client, to_close = SW._client(None, 1, True)
    try:
        flags = list(client.run(_flags).values())
    finally:
        for c in to_close:
            c.close()
    assert flags == [SW.worker_xla_flags()]
    assert SW.WORKER_THREAD_FLAGS in flags[0]
    assert "xla_cpu_small_while_loop_byte_threshold" in flags[0] or os.environ.get("MANIFOLD_DIRAC_XLA_FLAGS") == "0"


def test_worker_flags_keep_the_users_xla_flags(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    assert SW.worker_xla_flags() == "--xla_cpu_enable_fast_math=false " + SW.WORKER_THREAD_FLAGS
