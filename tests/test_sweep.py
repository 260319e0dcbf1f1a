"""Sweeps on Dask (manifold_dirac.sweep): Dataset, failures as values, resume, retries, ensembles.

Two clusters per module, started once: a threaded ``LocalCluster`` (no start-up cost) and one of
two worker processes (what users run; a few seconds to start and to import JAX in each worker).
The cells are tiny (20 pendulum steps): what is tested is the bookkeeping, against direct
computations in this process.
"""

import os
import subprocess
import sys
import uuid
from functools import partial
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("xarray")

import cloudpickle  # noqa: E402
import distributed  # noqa: E402

from manifold_dirac._run.integrate import integrate  # noqa: E402
from manifold_dirac.study import example_system  # noqa: E402
from manifold_dirac._sweep import clear_store, load_dataset, save_dataset, sweep  # noqa: E402
from manifold_dirac.systems.catalog import get_example  # noqa: E402

# the cells below travel to the process workers by value: the workers need manifold_dirac, not tests/
cloudpickle.register_pickle_by_value(sys.modules[__name__])


# ------------------------------------------------------------------ cells
def _log(log):
    if log is not None:
        (Path(log) / uuid.uuid4().hex).touch()


AXES = {"h": [0.1, 0.05, 1.3], "amplitude": [1.0, 0.5]}


def pendulum_cell(h, amplitude, log=None):
    """20 steps of the pendulum; h = 1.3 fails (Newton's method does not converge at step 3)."""
    _log(log)
    sysm = example_system(get_example("pendulum"))
    tr = integrate(sysm, np.array([amplitude]), v0=np.array([0.0]), h=h, n_steps=20)
    return {"q_end": tr.q[-1, 0], "energy_error": tr.energy_error, "path": tr.q[::10, 0]}


_OWN = []


def direct_q_end(h, amplitude):
    if not _OWN:
        _OWN.append(get_example("pendulum").system())  # a system of its own: an independent route
    return float(integrate(_OWN[0], np.array([amplitude]), v0=np.array([0.0]), h=h, n_steps=20).q[-1, 0])


def ensemble_cell(h, members, log=None):
    """A batch of pendulums, amplitude 0.1 * (1 + member): one vmap batch per call."""
    _log(log)
    sysm = example_system(get_example("pendulum"))
    amp = 0.1 * (1.0 + members)
    tr = integrate(sysm, amp[:, None], v0=np.zeros((len(members), 1)), h=h, n_steps=20)
    err = tr.energy_error.copy()
    err[members == 4] = np.nan  # a member the cell could not measure
    return {"q_end": tr.q[-1, :, 0], "energy_error": err}


def dies_once(a, flag):
    """Kills its worker process the first time it runs with a = 1."""
    if a == 1 and not Path(flag).exists():
        Path(flag).write_text("died once")
        os._exit(1)
    return {"x": 10.0 * a, "pid": float(os.getpid())}


_CALLS: list[int] = []


def counting_cell(a):
    """How many cells this cell object has run (its module's globals travel with it, by value)."""
    _CALLS.append(a)
    return {"calls": float(len(_CALLS))}


def where_imported():
    import manifold_dirac

    return manifold_dirac.__file__


# ------------------------------------------------------------------ clusters
@pytest.fixture(scope="module")
def threads():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        yield client


@pytest.fixture(scope="module")
def processes():
    """One worker process (two would double the start-up and compilation on CI's two cores)."""
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        yield client




def _check_pendulum_dataset(ds, axes=AXES):
    assert list(ds.dims) == ["h", "amplitude", "path_dim_0"] and ds.sizes["path_dim_0"] == 3
    assert ds.h.values.tolist() == axes["h"] and ds.amplitude.values.tolist() == axes["amplitude"]
    assert ds.h.dtype == np.float64 and ds.amplitude.dtype == np.float64
    for name in ("q_end", "energy_error", "path", "wall_time"):
        assert ds[name].dtype == np.float64, name
    # the failing cell is recorded, with the reason, and the sweep went on
    bad = ds.sel(h=1.3, amplitude=1.0)
    assert str(bad.status.values) == "ConvergenceError"
    assert "step 3 (t = 3.9)" in str(bad.message.values)
    assert "Newton's method did not converge" in str(bad.message.values)
    assert np.isnan(bad.q_end) and np.isnan(bad.path).all()
    for h in axes["h"]:
        for a in axes["amplitude"]:
            if (h, a) != (1.3, 1.0):
                c = ds.sel(h=h, amplitude=a)
                assert str(c.status.values) == "ok" and str(c.message.values) == ""
                assert float(c.q_end) == pytest.approx(direct_q_end(h, a), rel=1e-12)
    # sensitivity: the cells are not interchangeable (another h or amplitude gives another value)
    assert abs(float(ds.q_end.sel(h=0.1, amplitude=1.0)) - direct_q_end(0.05, 1.0)) > 1e-4
    assert abs(float(ds.q_end.sel(h=0.1, amplitude=1.0)) - direct_q_end(0.1, 0.5)) > 1e-2


@pytest.mark.slow
def test_sweep_on_threads_records_metrics_and_failures(threads):
    ds = sweep(pendulum_cell, AXES, client=threads, progress=False)
    _check_pendulum_dataset(ds)
    assert ds.attrs["cells"] == ds.attrs["cells_run"] == 6 and ds.attrs["cells_resumed"] == 0
    # guided grouping on 2 workers: tasks of ceil(remaining / 4) cells, 2 + 1 + 1 + 1 + 1
    assert ds.attrs["workers"] == 2 and ds.attrs["tasks"] == 5


def test_sweep_on_processes_imports_this_package_and_matches(processes):
    import manifold_dirac

    # process workers import the same package as this process (PYTHONPATH / the install is inherited)
    assert set(processes.run(where_imported).values()) == {manifold_dirac.__file__}
    # (the failing cell is left to the other tests: its diagnosis compiles a second program per process)
    ds = sweep(pendulum_cell, {"h": [0.1, 0.05], "amplitude": [1.0]}, client=processes, progress=False,
               cells_per_task=1)
    assert ds.attrs["tasks"] == 2 and ds.attrs["workers"] == 1 and (ds.status == "ok").all()
    assert ds.q_end.dtype == np.float64 and ds.h.dtype == np.float64
    for h in (0.1, 0.05):
        assert float(ds.q_end.sel(h=h, amplitude=1.0)) == pytest.approx(direct_q_end(h, 1.0), rel=1e-12)
    assert abs(float(ds.q_end.sel(h=0.1, amplitude=1.0)) - direct_q_end(0.05, 1.0)) > 1e-4


def test_a_worker_unpickles_the_cell_once_per_sweep_as_a_serial_run_calls_one_cell(processes):
    """The cell is pickled once in the client and unpickled once per worker: the tasks of a sweep share
    one cell object there, as the cells of a sweep without workers do, and a new sweep of another cell
    object (here a ``partial`` of it) starts from that object's own state (the counts restart at 1)."""
    _CALLS.clear()
    serial = sweep(counting_cell, {"a": [0, 1, 2, 3]}, workers=0, cells_per_task=1, progress=False)
    assert serial.calls.values.tolist() == [1.0, 2.0, 3.0, 4.0] and serial.attrs["tasks"] == 4
    _CALLS.clear()  # the cell travels by value, with the list as it is here
    ds = sweep(counting_cell, {"a": [0, 1, 2, 3]}, client=processes, cells_per_task=1, progress=False)
    assert ds.attrs["tasks"] == 4 and ds.attrs["workers"] == 1
    np.testing.assert_array_equal(ds.calls.values, serial.calls.values)
    # another sweep of the same cell reuses the worker's object; another cell is another object
    again = sweep(counting_cell, {"a": [4, 5]}, client=processes, progress=False)
    assert again.calls.values.tolist() == [5.0, 6.0]
    _CALLS.clear()
    other = sweep(partial(counting_cell), {"a": [0]}, client=processes, progress=False)
    assert other.calls.values.tolist() == [1.0]


def test_guided_task_sizes_shrink_to_single_cells():
    from manifold_dirac._sweep import _split, _task_sizes

    assert _task_sizes(48, 2, None) == [12, 9, 7, 5, 4, 3, 2, 2, 1, 1, 1, 1]
    for n in (1, 2, 7, 48, 2000):
        for w in (1, 2, 5):
            sizes = _task_sizes(n, w, None)
            assert sum(sizes) == n and sizes == sorted(sizes, reverse=True) and sizes[-1] == 1
            assert sizes[0] == -(-n // (2 * w)) and len(sizes) <= 2 * w * (1 + np.log(n)) + 1
    assert _task_sizes(7, 2, 3) == [3, 3, 1]
    assert _split(list("abcdefg"), [3, 3, 1]) == [list("abc"), list("def"), ["g"]]


def test_guided_tasks_keep_rows_of_the_last_axis_together():
    """A study's grid (program-changing axes first, the step size last): no row -- one compiled program --
    is split between two tasks, so no program is compiled on two workers; with fewer rows than
    ``2 * workers``, or one axis, the tasks are counted in cells."""
    from manifold_dirac._sweep import _dask_tasks, _units

    grid = {"retraction": ["exp", "cayley", "so2xr2"], "scheme": ["symmetric", "plus"], "h": [0.1, 0.05, 0.025]}
    todo = [(c, b) for _, c, b in _units(grid, None)]
    tasks = _dask_tasks(todo, list(grid), 2, None)
    assert [len(t) for t in tasks] == [6, 3, 3, 3, 3]
    for t in tasks:
        assert len({(c["retraction"], c["scheme"]) for c, _ in t}) == len(t) // 3  # whole rows only
    # counted in cells, a row would be split (the check can fail)
    cells = _dask_tasks(todo, list(grid), 2, 1)
    assert any(len({(c["retraction"], c["scheme"]) for c, _ in t}) * 3 != len(t) for t in cells)
    # a resumed grid (some cells done): rows are runs of what is left
    tasks = _dask_tasks(todo[1:], list(grid), 2, None)
    assert [len(t) for t in tasks] == [5, 3, 3, 3, 3]
    # few rows (4 < 2 * 3 workers), or one axis: guided in cells
    assert [len(t) for t in _dask_tasks(todo[:12], list(grid), 3, None)] == [2, 2, 2, 1, 1, 1, 1, 1, 1]
    single = [({"i": i}, None) for i in range(48)]
    assert [len(t) for t in _dask_tasks(single, ["i"], 2, None)] == [12, 9, 7, 5, 4, 3, 2, 2, 1, 1, 1, 1]


def test_in_process_and_embedded_cluster_give_the_same_dataset():
    ds0 = sweep(pendulum_cell, AXES, workers=0, progress=False)
    ds1 = sweep(pendulum_cell, AXES, workers=1, processes=False, progress=False)  # the embedded LocalCluster
    _check_pendulum_dataset(ds0)
    for name in ("q_end", "energy_error", "path", "status", "message"):
        np.testing.assert_array_equal(ds0[name].values, ds1[name].values)


def test_resume_skips_finished_cells_and_computes_only_new_ones(tmp_path, threads):
    store, log = tmp_path / "store", tmp_path / "log"
    log.mkdir()
    cell = partial(pendulum_cell, log=str(log))
    first = sweep(cell, {"h": [0.1, 1.3], "amplitude": [1.0, 0.5]}, store=store, client=threads, progress=False)
    assert len(list(log.iterdir())) == 4 and first.attrs["cells_run"] == 4
    assert (store / "sweep.nc").exists() and len(list((store / "done").glob("task-*.json"))) == 4
    # a larger grid, resumed: only the two new cells run; the failed ones are kept as recorded
    ds = sweep(cell, AXES, store=store, resume=True, client=threads, progress=False)
    assert len(list(log.iterdir())) == 6
    assert ds.attrs["cells_run"] == 2 and ds.attrs["cells_resumed"] == 4
    _check_pendulum_dataset(ds)
    # the whole grid done: nothing runs
    again = sweep(cell, AXES, store=store, resume=True, client=threads, progress=False)
    assert len(list(log.iterdir())) == 6 and again.attrs["cells_run"] == 0
    np.testing.assert_array_equal(again.q_end.values, ds.q_end.values)
    # retry_failed: only the failed cell (h = 1.3, amplitude 1) runs again
    sweep(cell, AXES, store=store, resume=True, retry_failed=True, client=threads, progress=False)
    assert len(list(log.iterdir())) == 7
    # the Dataset written in the store is the one returned
    np.testing.assert_array_equal(load_dataset(store / "sweep.nc").q_end.values, ds.q_end.values)


def test_store_is_never_silently_reused(tmp_path):
    store = tmp_path / "store"
    sweep(pendulum_cell, {"h": [0.1], "amplitude": [1.0]}, store=store, workers=0, progress=False)
    with pytest.raises(ValueError, match=r"already holds 1 finished cells; pass resume=True"):
        sweep(pendulum_cell, {"h": [0.1], "amplitude": [1.0]}, store=store, workers=0, progress=False)
    with pytest.raises(ValueError, match=r"written by another sweep \(cell: .*pendulum_cell.*ensemble_cell"):
        sweep(ensemble_cell, {"h": [0.1]}, members=2, store=store, resume=True, workers=0, progress=False)
    with pytest.raises(ValueError, match=r"axes: \['amplitude', 'h'\] there, \['h', 'x'\] here"):
        sweep(pendulum_cell, {"h": [0.1], "x": [1.0]}, store=store, resume=True, workers=0, progress=False)
    assert clear_store(store) == 1
    ds = sweep(pendulum_cell, {"h": [0.1], "amplitude": [1.0]}, store=store, workers=0, progress=False)
    assert ds.attrs["cells_run"] == 1


@pytest.mark.slow
def test_a_killed_worker_is_replaced_and_its_cells_run_again(tmp_path, processes):
    """A worker process dies (``os._exit``) in the middle of a sweep; the nanny starts another, the
    scheduler reruns the lost task there, and every cell is in the Dataset. Slow: the new worker
    imports JAX again (~4 s on two free cores, 22 s on two cores shared with other jobs)."""
    flag = tmp_path / "flag"
    ds = sweep(partial(dies_once, flag=str(flag)), {"a": [0, 1, 2, 3]}, client=processes, cells_per_task=1,
               progress=False)
    assert flag.read_text() == "died once"  # the worker did die
    assert (ds.status == "ok").all() and ds.x.values.tolist() == [0.0, 10.0, 20.0, 30.0]


def test_ensemble_members_batched_per_task(tmp_path):
    """In this process (one compilation of the batch of 2; the clusters are tested above)."""
    log = tmp_path / "log"
    log.mkdir()
    ds = sweep(partial(ensemble_cell, log=str(log)), {"h": [0.1, 0.05]}, members=6, members_per_task=2,
               workers=0, progress=False)
    assert len(list(log.iterdir())) == 2 * 3  # blocks of 2 members: 3 calls per step size
    assert list(ds.dims) == ["h", "member"] and ds.member.values.tolist() == list(range(6))
    assert ds.q_end.dtype == np.float64
    for h in (0.1, 0.05):
        for m in (0, 3, 5):
            assert float(ds.q_end.sel(h=h, member=m)) == pytest.approx(direct_q_end(h, 0.1 * (1 + m)), rel=1e-11)
    assert abs(float(ds.q_end.sel(h=0.1, member=3)) - direct_q_end(0.1, 0.1 * 3)) > 1e-3  # not member 2's
    # the block holding member 4 (members 4, 5) is "partial": NaN in a metric is never behind "ok"
    st = ds.status.sel(h=0.1).values.tolist()
    assert st == ["ok"] * 4 + ["partial"] * 2
    assert str(ds.message.sel(h=0.1, member=4).values) == "NaN in energy_error (1 of 2)"


def test_bad_cells_and_axes_are_reported():
    def returns_list(a):
        return [a]

    def changing_shape(a):
        return {"v": np.zeros(a)}

    def reserved(a):
        return {"status": 1.0}

    ds = sweep(returns_list, {"a": [1]}, workers=0, progress=False)
    assert str(ds.status.values[0]) == "TypeError" and "not a mapping" in str(ds.message.values[0])
    ds = sweep(reserved, {"a": [1]}, workers=0, progress=False)
    assert str(ds.status.values[0]) == "ValueError" and "reserved" in str(ds.message.values[0])
    # a cell whose metric changes shape is recorded as failed; the other cells are kept
    ds = sweep(changing_shape, {"a": [1, 2]}, workers=0, progress=False)
    assert list(ds.status.values) == ["ok", "MetricShapeError"]
    assert "metric 'v' has shape (2,) in this cell but (1,) in the others" in str(ds.message.values[1])
    assert float(ds.v.values[0, 0]) == 0.0 and np.isnan(ds.v.values[1, 0])
    with pytest.raises(ValueError, match="axis 'a' has repeated values"):
        sweep(returns_list, {"a": [1, 1]}, workers=0)
    with pytest.raises(ValueError, match="axis 'a' is empty"):
        sweep(returns_list, {"a": []}, workers=0)
    with pytest.raises(ValueError, match="reserved"):
        sweep(returns_list, {"member": [1]}, workers=0)
    with pytest.raises(TypeError, match="values must be str, int or float"):
        sweep(returns_list, {"a": [None]}, workers=0)
    with pytest.raises(ValueError, match="give client .* or workers .*, not both"):
        sweep(returns_list, {"a": [1]}, client="tcp://10.0.0.1:8786", workers=2)
    with pytest.raises(TypeError, match="client must be a distributed.Client or a scheduler address"):
        sweep(returns_list, {"a": [1]}, client=object())


def test_netcdf_round_trip(tmp_path):
    ds = sweep(pendulum_cell, AXES, workers=0, progress=False, attrs={"note": "round trip"})
    back = load_dataset(save_dataset(ds, tmp_path / "s.nc"))
    assert back.attrs["note"] == "round trip" and back.attrs["cells"] == 6
    for name in ("q_end", "path", "wall_time", "h", "amplitude"):
        assert back[name].dtype == np.float64
        np.testing.assert_array_equal(back[name].values, ds[name].values)
    np.testing.assert_array_equal(back.status.values, ds.status.values)
    np.testing.assert_array_equal(back.message.values, ds.message.values)


def test_without_the_extra_the_error_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "xarray", None)
    with pytest.raises(ImportError, match=r"needs 'xarray'.*pip install \"manifold_dirac\[sweep\]\""):
        sweep(pendulum_cell, AXES, workers=0)


def test_the_core_does_not_import_dask_or_xarray():
    code = ("import sys, manifold_dirac, manifold_dirac._sweep, manifold_dirac.study, manifold_dirac.cli; "
            "print(sorted(m for m in ('xarray', 'dask', 'distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"
