"""A sweep cell that kills its worker process: the sweep finishes, that cell is recorded as failed
with the reason (the worker died), the other cells keep their results, and a resume with
``retry_failed`` recomputes only the failed cell."""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
import dask  # noqa: E402

from manifold_dirac import sweep  # noqa: E402


def _cell(x: int, *, kill_file: str) -> dict:
    """Kills its own worker process at ``x = 2`` while ``kill_file`` exists."""
    if x == 2 and Path(kill_file).exists():
        os._exit(1)
    return {"y": 10.0 * x}


@pytest.mark.slow  # about 35 s: two worker processes start, one is killed and replaced
def test_a_cell_that_kills_its_worker_is_recorded_and_only_it_is_recomputed(tmp_path):
    kill = tmp_path / "kill"
    kill.touch()
    cell = functools.partial(_cell, kill_file=str(kill))
    store = tmp_path / "store"
    t0 = time.perf_counter()
    # one retry, on a fresh worker; one task per worker at a time, so that the scheduler suspects only the
    # cell running on the dying worker (a task merely queued there counts as a failure of its own too)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1, "distributed.scheduler.worker-saturation": 1.0}):
        ds = sweep(cell, {"x": [0, 1, 2, 3]}, workers=2, cells_per_task=1, store=store, progress=False)
    took = time.perf_counter() - t0
    status = [str(s) for s in ds.status.values]
    assert status == ["ok", "ok", "KilledWorker", "ok"], status
    msg = str(ds.message.values[2])
    assert "died" in msg.lower() or "killed" in msg.lower(), msg
    y = ds.y.values
    np.testing.assert_array_equal(y[[0, 1, 3]], [0.0, 10.0, 30.0])
    assert np.isnan(y[2])
    assert ds.attrs["cells_run"] == 4 and took < 300

    # resume: the killed cell is computed again (and now succeeds), the others come from the store
    kill.unlink()
    again = sweep(cell, {"x": [0, 1, 2, 3]}, workers=0, store=store, resume=True, retry_failed=True,
                  progress=False)
    assert again.attrs["cells_run"] == 1 and again.attrs["cells_resumed"] == 3
    assert [str(s) for s in again.status.values] == ["ok"] * 4
    np.testing.assert_array_equal(again.y.values, [0.0, 10.0, 20.0, 30.0])
    # a store where every cell finished: a resume runs nothing, even with a cell that would kill its worker
    kill.touch()
    same = sweep(cell, {"x": [0, 1, 2, 3]}, workers=0, store=store, resume=True, progress=False)
    assert same.attrs["cells_run"] == 0
