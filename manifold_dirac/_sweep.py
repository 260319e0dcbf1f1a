"""Sweeps: a grid of named axes, one function per cell, run on Dask, as an xarray Dataset.

:func:`sweep` calls ``cell(**coordinates)`` for every point of a grid of
named axes (retraction, scheme, discrete Lagrangian, step size, system
parameters, initial conditions, ...), optionally with a block of ensemble
members per call (the cell integrates them as one ``vmap`` batch), and
gathers the named metrics the cell returns into an :class:`xarray.Dataset`
whose coordinates are the axes.

* **Execution** on ``dask.distributed``: an embedded ``LocalCluster`` sized
  to the machine by default, ``workers=N`` for N local workers, a
  ``distributed.Client`` or a scheduler address (``client="tcp://host:8786"``)
  for a real cluster, or ``workers=0`` to run in this process without Dask.
  Cells are grouped into tasks (consecutive cells of the grid, last axis
  fastest, so that cells sharing a compiled program run in the same task).
* **Failures are values**: a cell that raises (a Newton failure, a domain
  error, anything) is recorded with ``status`` (the exception's class name)
  and ``message``; its metrics are NaN and the sweep goes on. A cell whose
  metrics contain NaN or inf is recorded as ``"partial"`` with a message naming them.
* **Resumable**: with ``store=DIR`` every finished task is written at once
  (one small JSON file per task, written atomically, by the client as the
  results arrive); a rerun with ``resume=True`` skips the cells already in
  the store. A worker that dies (killed, out of memory, segmentation fault)
  loses only its task in flight: the Dask scheduler reruns it on another
  worker (up to ``distributed.scheduler.allowed-failures`` times, 3 by
  default); a task that kills every worker it runs on is recorded with
  status ``"KilledWorker"``.
* **Compilation** is paid once per worker process, not per cell: the
  compiled steps of a system live with it (:func:`~manifold_dirac.study.example_system`
  keeps one per process), and every worker process shares the persistent
  compilation cache that importing ``manifold_dirac`` switches on
  (:mod:`manifold_dirac._config`), so a worker compiles a program another
  process compiled before only from the cache.

Dask and xarray are the optional extra ``sweep``
(``pip install "manifold_dirac[sweep]"``); the core package does not import them.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

import numpy as np

from ._spawn import cpu_count, hide_main_script, refuse_in_bootstrapping_worker, worker_env
from ._types import ArrayLike

if TYPE_CHECKING:
    from distributed import Client
    from xarray import Dataset

_AxisValue: TypeAlias = str | int | float
_Block: TypeAlias = tuple[int, int] | None

__all__ = ["clear_store", "sweep", "load_dataset", "save_dataset"]

OK = "ok"
PARTIAL = "partial"
SHAPE_ERROR = "MetricShapeError"
"""The status of a cell whose metric has another shape than in the other cells (its values are dropped)."""
RESERVED = ("status", "message", "wall_time", "member")
TASKS_PER_WORKER = 4
"""Grouping without workers (``workers=0``): about this many tasks (the store is written after each)."""
GUIDED_SHARE = 2
"""Default grouping on Dask: a task takes ``1 / (GUIDED_SHARE * workers)`` of the cells not yet given out."""
_STORE_VERSION = 1


def _require(what: str) -> ModuleType:
    """Import an optional dependency of the ``sweep`` extra, or say which extra to install."""
    import importlib

    try:
        return importlib.import_module(what)
    except ImportError as exc:
        raise ImportError(
            f"manifold_dirac.sweep needs {what.split('.')[0]!r} ({exc}); install the extra: "
            'pip install "manifold_dirac[sweep]"'
        ) from None


# ------------------------------------------------------------------ the grid
def _axis_values(name: str, values: object) -> list[_AxisValue]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise TypeError(f"sweep: axis {name!r} must be a sequence of values, got {type(values).__name__}")
    out = []
    for v in values:
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise TypeError(f"sweep: axis {name!r}: values must be str, int or float, got {v!r} "
                            f"({type(v).__name__})")
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"sweep: axis {name!r}: values must be finite, got {v!r}")
        out.append(v)
    if not out:
        raise ValueError(f"sweep: axis {name!r} is empty")
    kinds = {type(v) for v in out}
    if str in kinds and len(kinds) > 1:
        raise TypeError(f"sweep: axis {name!r} mixes strings and numbers: {out!r}")
    if kinds == {int, float}:
        out = [float(v) for v in out]
    if len(set(out)) != len(out):
        raise ValueError(f"sweep: axis {name!r} has repeated values: {out!r}")
    return out


def _units(axes: dict[str, list], blocks: list[tuple[int, int]] | None
           ) -> list[tuple[tuple[int, ...], dict, _Block]]:
    """Every (grid index, coordinates, member block) in C order (last axis fastest, member blocks last)."""
    names = list(axes)
    out = []
    for idx in np.ndindex(*(len(axes[n]) for n in names)):
        coords = {n: axes[n][i] for n, i in zip(names, idx)}
        for b in blocks if blocks is not None else [None]:
            out.append((tuple(int(i) for i in idx), coords, b))
    return out


def _key(coords: Mapping[str, _AxisValue], block: _Block) -> str:
    """The store's name of a cell: its coordinates (sorted by axis) and member block, as JSON."""
    return json.dumps([sorted(coords.items()), list(block) if block is not None else None])


# ------------------------------------------------------------------ a task (runs on a worker)
def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _run_cell(cell: Callable, coords: dict, block: _Block) -> dict:
    """Call the cell; turn its result or its exception into a record."""
    t0 = time.perf_counter()
    try:
        kwargs = dict(coords)
        if block is not None:
            kwargs["members"] = np.arange(block[0], block[1])
        out = cell(**kwargs)
        if not isinstance(out, Mapping):
            raise TypeError(f"the cell returned {type(out).__name__}, not a mapping of metric names to values")
        metrics = {}
        for name, v in out.items():
            if not isinstance(name, str) or name in RESERVED or name in coords:
                raise ValueError(f"metric name {name!r} is not a string, or is reserved "
                                 f"({', '.join(RESERVED)}) or an axis name")
            try:
                a = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"metric {name!r} is not numeric: {v!r}") from None
            if block is not None and (a.ndim == 0 or a.shape[0] != block[1] - block[0]):
                raise ValueError(f"metric {name!r} has shape {a.shape}; an ensemble cell returns one value per "
                                 f"member first (leading axis {block[1] - block[0]})")
            metrics[name] = a
        # "ok" means no NaN and no inf in any metric: anything else is partial, and says where
        bad = {n: int((~np.isfinite(a)).sum()) for n, a in metrics.items() if not np.all(np.isfinite(a))}
        status, message = OK, ""
        if bad:
            status = PARTIAL
            word = lambda a: "NaN" if np.all(np.isnan(a[~np.isfinite(a)])) else (  # noqa: E731
                "inf" if not np.any(np.isnan(a)) else "NaN/inf")
            message = "; ".join(f"{word(metrics[n])} in {n} ({k} of {metrics[n].size})" for n, k in bad.items())
    except Exception as exc:  # noqa: BLE001 - a failing cell is a value of the sweep, recorded with its reason
        metrics, status, message = {}, type(exc).__name__, _one_line(exc)
    return {"key": _key(coords, block), "coords": coords, "block": block, "status": status, "message": message,
            "wall_time": time.perf_counter() - t0, "metrics": metrics}


def _run_task(cell: Callable, units: list[tuple[dict, _Block]]) -> list[dict]:
    """One Dask task: the cells of ``units`` in order, in the worker's process (float64, compilation cache)."""
    import manifold_dirac  # noqa: F401 - float64 and the persistent compilation cache in this worker

    return [_run_cell(cell, coords, block) for coords, block in units]


_CELLS: dict[str, Callable] = {}
"""A worker's cells, unpickled once per sweep and reused by every task of it (by the digest of their pickle)."""
_CELLS_KEPT = 4
_CELLS_LOCK = threading.Lock()


def _packed_cell(cell: Callable) -> tuple[bytes, str]:
    """The cell pickled once in the client (as Dask pickles a task's function) and the digest of the bytes.

    Dask would pickle the cell again for every task: a function of a script travels by value, and
    cloudpickle walks its globals each time (a few milliseconds per task for a cell that names a few
    helpers of its script).
    """
    import hashlib

    from distributed.protocol.pickle import dumps

    blob = dumps(cell)
    return blob, hashlib.sha256(blob).hexdigest()


def _unpacked_cell(blob: bytes, digest: str) -> Callable:
    """In a worker: the cell of ``blob``, unpickled on the sweep's first task there and then reused
    (as a sweep without workers calls one cell object for every cell)."""
    with _CELLS_LOCK:  # the workers of a threaded cluster share this process
        cell = _CELLS.get(digest)
        if cell is None:
            from distributed.protocol.pickle import loads

            cell = loads(blob)
            while len(_CELLS) >= _CELLS_KEPT:  # the oldest sweeps' cells go first
                _CELLS.pop(next(iter(_CELLS)))
            _CELLS[digest] = cell
        return cell


def _run_packed_task(blob: bytes, digest: str, units: list[tuple[dict, _Block]]) -> list[dict]:
    """One Dask task of a sweep whose cell was pickled once (:func:`_packed_cell`)."""
    return _run_task(_unpacked_cell(blob, digest), units)


def _task_sizes(n: int, workers: int, per: int | None) -> list[int]:
    """Cells per task, in order: ``per`` each, or by default sizes that decrease along the grid.

    The default is guided self-scheduling: each task takes ``ceil(remaining / (2 * workers))`` cells, so
    the first tasks are large (few tasks, little scheduling) and the last ones single cells: workers take
    tasks in order as they become free, and they finish within about one cell of each other (equal tasks
    of several cells each leave one worker idle for up to a whole task at the end).
    """
    if per is not None:
        return [min(per, n - a) for a in range(0, n, per)]
    sizes, left = [], n
    while left > 0:
        k = max(1, math.ceil(left / (GUIDED_SHARE * workers)))
        sizes.append(k)
        left -= k
    return sizes


def _split(todo: list, sizes: list[int]) -> list[list]:
    out, a = [], 0
    for k in sizes:
        out.append(todo[a:a + k])
        a += k
    return out


def _rows(todo: list[tuple[dict, _Block]], names: list[str]) -> list[int]:
    """Lengths of the runs of consecutive cells of ``todo`` that differ only in the last axis (and member block).

    With several axes, the last one is the fastest and, as the docs ask, a traced one (step size, initial
    data): a row shares its compiled program. With one axis, every cell is its own row.
    """
    lead = names[:-1]
    if not lead:
        return [1] * len(todo)
    runs: list[int] = []
    prev = None
    for coords, _ in todo:
        key = tuple(coords[n] for n in lead)
        if runs and key == prev:
            runs[-1] += 1
        else:
            runs.append(1)
        prev = key
    return runs


def _dask_tasks(todo: list[tuple[dict, _Block]], names: list[str], workers: int, per: int | None) -> list[list]:
    """The Dask tasks of ``todo``: ``per`` cells each, or guided sizes (:func:`_task_sizes`) counted in whole
    rows (:func:`_rows`) when there are at least ``GUIDED_SHARE * workers`` of them -- a program is then
    compiled by one worker, not by two that share its row -- else counted in cells."""
    rows = _rows(todo, names)
    if per is not None or len(rows) < GUIDED_SHARE * workers:
        return _split(todo, _task_sizes(len(todo), workers, per))
    sizes, a = [], 0
    for k in _task_sizes(len(rows), workers, None):
        sizes.append(sum(rows[a:a + k]))
        a += k
    return _split(todo, sizes)


# ------------------------------------------------------------------ the store
def _describe(x: object) -> object:
    """A stable, JSON-able description of a value bound to a cell (what defines its cells)."""
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return repr(float(x))  # exact: 0.1 and 0.1000000001 are other cells
    if isinstance(x, (list, tuple)):
        return [_describe(v) for v in x]
    if isinstance(x, Mapping):
        return {str(k): _describe(v) for k, v in sorted(x.items(), key=lambda kv: str(kv[0]))}
    if isinstance(x, np.ndarray):
        return {"array": _describe(x.tolist())}
    text = repr(x)
    if " at 0x" in text:  # an object without a value repr: its type and name
        text = f"{type(x).__module__}.{type(x).__qualname__}:{getattr(x, 'name', '')}"
    return text


def _store_spec(cell: Callable, axes: dict, members: int | None, members_per_task: int | None) -> dict:
    """What defines the cells of a store besides their coordinates (compared on ``resume``).

    The cell function, the values bound to it by ``functools.partial`` (the
    system, ``T``, ``long_steps`` of a study), the axis names, the ensemble
    and the library's version: a store written with any of these different
    holds other cells under the same coordinates.
    """
    from . import __version__

    f, bound = cell, []
    while hasattr(f, "func"):  # functools.partial: the function underneath, and what each level binds
        bound.append({"args": _describe(list(getattr(f, "args", ()))),
                      "keywords": _describe(dict(getattr(f, "keywords", {}) or {}))})
        f = f.func
    return {"version": _STORE_VERSION, "cell": f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', '')}",
            "bound": bound, "axes": sorted(axes), "members": members, "members_per_task": members_per_task,
            "library": __version__}


def _jsonable(rec: dict) -> dict:
    return {**rec, "metrics": {n: a.tolist() for n, a in rec["metrics"].items()},
            "block": list(rec["block"]) if rec["block"] is not None else None}


def _read_store(store: Path) -> dict[str, dict]:
    done: dict[str, dict] = {}
    for f in sorted((store / "done").glob("task-*.json")):
        try:
            recs = json.loads(f.read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"sweep: store {store}: cannot read {f.name} ({exc}); delete that file to rerun "
                             "its cells") from None
        for r in recs:
            r["metrics"] = {n: np.asarray(v, dtype=np.float64) for n, v in r["metrics"].items()}
            done[r["key"]] = r
    return done


def _write_task(store: Path, recs: list[dict]) -> None:
    """Write the records of one finished task atomically (a temporary file renamed)."""
    final = store / "done" / f"task-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:10]}.json"
    tmp = final.with_suffix(".tmp")
    tmp.write_text(json.dumps([_jsonable(r) for r in recs]))
    os.replace(tmp, final)


def clear_store(store: str | Path) -> int:
    """Delete the finished cells of a store (before a fresh run in the same directory).

    Parameters
    ----------
    store : str or Path
        The directory a sweep wrote with ``store=``.

    Returns
    -------
    int
        How many task files were removed.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> ds = md.sweep(lambda h: {"x": 2 * h}, {"h": [0.1, 0.2]}, workers=0, progress=False, store="cells")
    >>> md.clear_store("cells") >= 1
    True
    """
    store = Path(store)
    n = 0
    for f in list((store / "done").glob("task-*.json")) + list((store / "done").glob("task-*.tmp")):
        f.unlink()
        n += 1
    spec = store / "sweep.json"
    if spec.exists():
        spec.unlink()
    return n


def _open_store(store: Path, spec: dict, resume: bool, retry_failed: bool) -> dict[str, dict]:
    (store / "done").mkdir(parents=True, exist_ok=True)
    spec_file = store / "sweep.json"
    done = _read_store(store)
    if done and not resume:
        raise ValueError(
            f"sweep: store {store} already holds {len(done)} finished cells; pass resume=True to skip them, "
            "or clear_store(store) / another directory to start afresh")
    if spec_file.exists():
        old = json.loads(spec_file.read_text())
        diff = [k for k in spec if old.get(k) != spec[k]]
        if diff and done:
            raise ValueError(
                f"sweep: store {store} was written by another sweep ("
                + "; ".join(f"{k}: {old.get(k)!r} there, {spec[k]!r} here" for k in diff)
                + "); use another directory, or clear_store(store) to start afresh")
    spec_file.write_text(json.dumps(spec))
    if retry_failed:
        done = {k: r for k, r in done.items() if r["status"] in (OK, PARTIAL)}
    return done


# ------------------------------------------------------------------ Dask
def _client(client: Client | str | None, workers: int | None, processes: bool) -> tuple[Client, list]:
    """The Dask client to use and what to close afterwards."""
    distributed = _require("distributed")
    if client is not None:
        if isinstance(client, str):
            c = distributed.Client(client)
            return c, [c]
        if not isinstance(client, distributed.Client):
            raise TypeError(f"sweep: client must be a distributed.Client or a scheduler address, "
                            f"got {type(client).__name__}")
        return client, []
    n = cpu_count() if workers is None else workers
    cluster, shown = _local_cluster(n, processes)
    c = distributed.Client(cluster)
    return c, [c, cluster] + ([shown] if shown is not None else [])


QUIET_CLUSTER = {
    "distributed.worker.profile.enabled": False,
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
}
"""Dask settings of the local cluster a sweep starts: less bookkeeping on the cores the cells run on.

By default every Dask worker samples its task thread's stack every 10 ms (the dashboard's profile),
the nanny measures the worker's memory every 100 ms, and every server wakes up every 20 ms to check
that its event loop is responsive: on two cores with two workers, these take a few per cent of the
CPU the cells need. Here the profile is off and the others run every second or two (the memory
limits still apply). A cluster the user passes (``client=``) keeps its own settings."""


def _local_cluster(n: int, processes: bool) -> tuple[object, object | None]:
    """A ``LocalCluster`` of ``n`` single-threaded workers as :func:`sweep` starts it (processes: one XLA thread
    each, the main script hidden; :data:`QUIET_CLUSTER`); and what restores the script (None for threads)."""
    distributed = _require("distributed")
    import dask

    refuse_in_bootstrapping_worker("sweep")
    # the workers do not run the script again (no __main__ guard needed)
    shown = hide_main_script() if processes else None
    extra = {"env": worker_env()} if processes else {}
    try:
        with dask.config.set(QUIET_CLUSTER):
            cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=processes,
                                               dashboard_address=":0", **extra)
    except BaseException:
        if shown is not None:
            shown.close()
        raise
    return cluster, shown


def _warm_worker() -> None:
    """Run on every worker first: float64 and the persistent compilation cache, JAX imported once."""
    import manifold_dirac  # noqa: F401


def _n_workers(client: Client) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))


def _killed(units: list[tuple[dict, _Block]], exc: BaseException) -> list[dict]:
    """Records of the cells of a task that could not finish (its workers died, or the task itself raised)."""
    return [{"key": _key(c, b), "coords": c, "block": b, "status": type(exc).__name__,
             "message": _one_line(exc), "wall_time": 0.0, "metrics": {}} for c, b in units]


# ------------------------------------------------------------------ the API
def sweep(
    cell: Callable[..., Mapping[str, ArrayLike]],
    axes: Mapping[str, Sequence[_AxisValue]],
    *,
    members: int | None = None,
    members_per_task: int | None = None,
    dims: Mapping[str, Sequence[str]] | None = None,
    coords: Mapping[str, Sequence[_AxisValue]] | None = None,
    store: str | Path | None = None,
    resume: bool = False,
    retry_failed: bool = False,
    client: Client | str | None = None,
    workers: int | None = None,
    processes: bool = True,
    cells_per_task: int | None = None,
    progress: bool = True,
    attrs: Mapping[str, _AxisValue] | None = None,
) -> Dataset:
    """Run ``cell`` on every point of a grid of named axes and gather its metrics in a Dataset.

    Parameters
    ----------
    cell : callable ``(**coordinates) -> {name: value}``
        Called with one keyword per axis (and ``members=`` for an ensemble);
        returns named metrics, each a number or a small array of a fixed
        shape. It runs on the workers: it must be picklable (a function of
        an importable module or of the script itself -- Dask sends those by
        value -- or a ``functools.partial`` of one).
    axes : mapping ``name -> sequence``
        The grid: values are str, int or float (distinct). Put the axes that
        change the compiled program (system, retraction, scheme, rule) first
        and the traced ones (step size, initial data) last: consecutive cells
        go to the same task and then reuse the worker's compiled step.
    members : int, optional
        An ensemble of this many members per grid point. The cell is called
        with ``members=`` an integer array (a block of member indices) and
        returns every metric with a leading axis of that length -- integrate
        the block as one batch (``vmap``). The Dataset gets a ``member`` dimension.
    members_per_task : int, optional
        Members per call (default: all of them in one call).
    dims : mapping ``metric -> sequence of str``, optional
        Names of the trailing dimensions of array metrics (default
        ``<metric>_dim_<i>``).
    coords : mapping ``dim -> sequence``, optional
        Coordinates of those dimensions.
    store : str or Path, optional
        A directory: every finished task is written there as it arrives, and
        the Dataset at the end (``sweep.nc``).
    resume : bool
        Skip the cells already in ``store`` (else a non-empty store is an error).
    retry_failed : bool
        With ``resume``, run again the cells whose status is a failure.
    client : distributed.Client or str, optional
        A client, or a scheduler address, of the cluster to run on.
    workers : int, optional
        Without ``client``: the number of workers of the embedded
        ``LocalCluster`` (default: the CPUs this process may use); ``0`` runs
        every cell in this process, without Dask.
    processes : bool
        Worker processes (default) or threads of this process (a
        ``LocalCluster(processes=False)``: no start-up cost, but the cells
        share one interpreter).
    cells_per_task : int, optional
        Cells per Dask task. Default: on Dask, tasks that shrink along the grid (each takes
        ``1 / (2 * workers)`` of the cells not yet given out, the last ones a single cell, so that
        the workers finish together), in whole rows of the last axis when the grid has several
        axes and at least ``2 * workers`` rows; without workers, about ``TASKS_PER_WORKER`` tasks.
    progress : bool
        A progress bar (tqdm) over the cells, shown after a second.
    attrs : mapping, optional
        Attributes of the Dataset (str, int or float values).

    Returns
    -------
    xarray.Dataset
        Dimensions: the axes in order, then ``member`` (ensembles), then the
        metrics' own. Data variables: every metric (float64, NaN where the
        cell failed), ``status`` (str: ``"ok"``, ``"partial"`` -- NaN or inf in a
        metric --, ``"MetricShapeError"`` or the exception's class name), ``message`` (str) and
        ``wall_time`` (seconds of the cell's call, float64; for an ensemble,
        of the call that computed the member's block). Attributes:
        ``cells`` (in the grid, member blocks counted), ``cells_run`` (this
        call), ``cells_resumed`` (from the store), ``tasks``, ``workers``
        (Dask workers; 1 with ``workers=0``: this process), ``wall_time`` (of this
        call), ``startup_time`` (of it, starting the cluster and importing
        the library on the workers), ``cell_time`` (sum of the cells' times
        of this call), ``overhead`` (``1 - cell_time / (workers * (wall_time
        - startup_time))``: scheduling, transfer and idle workers).

    Raises
    ------
    TypeError
        For axes that are not sequences of str/int/float, a client of another type.
    ValueError
        For an empty axis or repeated values, both ``client`` and ``workers``,
        a non-empty store without ``resume``, or a store written by another sweep (other cell
        function, values bound to it by ``functools.partial``, axis names, ensemble or library
        version). A cell whose metric has another shape than in the other cells is not an error:
        it is recorded with status ``"MetricShapeError"`` and its values are dropped.
    ImportError
        Without the ``sweep`` extra (dask.distributed, xarray).

    Notes
    -----
    A cell that raises is recorded, never re-raised: ``ds.status`` says which
    cells failed and ``ds.message`` why. A cell keyed by its coordinates and
    member block: a rerun on a larger grid (more step sizes, say) with the
    same store and ``resume=True`` computes only the new cells.

    A script that calls ``sweep`` at its top level needs no
    ``if __name__ == "__main__":`` guard: while its own local cluster runs,
    the worker processes do not run the script again (``docs/sweeps.md``,
    "From a plain script").

    Examples
    --------
    The final angle of a pendulum over a grid of step sizes and amplitudes,
    in this process (``workers=0``; without it, on a local Dask cluster):

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> def cell(h, amplitude):
    ...     sysm = md.example_system(md.get_example("pendulum"))    # built once per process
    ...     tr = md.integrate(sysm, np.array([amplitude]), v0=np.array([0.0]), h=h, n_steps=20)
    ...     return {"q_end": tr.q[-1, 0], "energy_error": tr.energy_error}
    >>> ds = md.sweep(cell, {"h": [0.1, 0.05], "amplitude": [1.0, 0.5]}, workers=0, progress=False)
    >>> ds.q_end.dims, ds.q_end.shape
    (('h', 'amplitude'), (2, 2))
    >>> [str(s) for s in np.unique(ds.status.values)]
    ['ok']
    """
    xr = _require("xarray")
    if not isinstance(axes, Mapping) or not axes:
        raise TypeError("sweep: axes must be a non-empty mapping of axis names to sequences of values")
    if not callable(cell):
        raise TypeError(f"sweep: cell must be callable, got {type(cell).__name__}")
    grid = {str(n): _axis_values(str(n), v) for n, v in axes.items()}
    bad = [n for n in grid if n in RESERVED]
    if bad:
        raise ValueError(f"sweep: axis names {bad} are reserved ({', '.join(RESERVED)})")
    blocks = None
    if members is not None:
        if int(members) < 1:
            raise ValueError(f"sweep: members must be positive, got {members}")
        members = int(members)
        per = members if members_per_task is None else int(members_per_task)
        if per < 1:
            raise ValueError(f"sweep: members_per_task must be positive, got {members_per_task}")
        blocks = [(a, min(a + per, members)) for a in range(0, members, per)]
        members_per_task = per
    if workers is not None and int(workers) < 0:
        raise ValueError(f"sweep: workers must be >= 0, got {workers}")
    if workers is not None and client is not None:
        raise ValueError("sweep: give client (a running cluster) or workers (a local one), not both")
    units = _units(grid, blocks)
    store_path = Path(store) if store is not None else None
    done: dict[str, dict] = {}
    if store_path is not None:
        done = _open_store(store_path, _store_spec(cell, grid, members, members_per_task), resume, retry_failed)
    todo = [(c, b) for _, c, b in units if _key(c, b) not in done]
    resumed = len(units) - len(todo)

    new: list[dict] = []
    t0 = time.perf_counter()
    bar = None
    if progress and todo:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo), unit="cell", delay=1.0, leave=False, desc="sweep")

    def finished(recs: list[dict]) -> None:
        new.extend(recs)
        if store_path is not None:
            _write_task(store_path, recs)
        if bar is not None:
            bar.update(len(recs))

    n_workers, n_tasks, startup = 1, 0, 0.0
    try:
        if todo and workers == 0:
            per = cells_per_task or max(1, math.ceil(len(todo) / TASKS_PER_WORKER))
            tasks = [todo[i:i + per] for i in range(0, len(todo), per)]
            n_tasks = len(tasks)
            for t in tasks:
                finished(_run_task(cell, t))
        elif todo:
            distributed = _require("distributed")
            c, to_close = _client(client, workers, processes)
            try:
                c.run(_warm_worker)  # import the library on every worker before the clock of the cells starts
                n_workers = _n_workers(c)
                startup = time.perf_counter() - t0
                tasks = _dask_tasks(todo, list(grid), n_workers, cells_per_task)
                n_tasks = len(tasks)
                blob, digest = _packed_cell(cell)
                futures = {c.submit(_run_packed_task, blob, digest, t, pure=False): t for t in tasks}
                try:
                    for fut in distributed.as_completed(futures):
                        try:
                            recs = fut.result()
                        except Exception as exc:  # noqa: BLE001 - KilledWorker after the retries: recorded per cell
                            recs = _killed(futures[fut], exc)
                        finished(recs)
                except BaseException:  # Ctrl-C: the finished tasks are in the store; stop the others
                    c.cancel(list(futures))
                    raise
            finally:
                for obj in to_close:
                    obj.close()
    finally:
        if bar is not None:
            bar.close()
    wall = time.perf_counter() - t0

    records = dict(done)
    records.update((r["key"], r) for r in new)
    cell_time = float(sum(r["wall_time"] for r in new))
    ds = _dataset(xr, grid, units, records, members, dims or {}, coords or {})
    ds.attrs.update({
        "cells": len(units), "cells_run": len(new), "cells_resumed": resumed, "tasks": n_tasks,
        "workers": n_workers if todo else 0, "wall_time": wall, "startup_time": startup, "cell_time": cell_time,
        "overhead": (1.0 - cell_time / (n_workers * (wall - startup))) if (todo and wall > startup) else 0.0,
    })
    for k, v in (attrs or {}).items():
        ds.attrs[str(k)] = v
    if store_path is not None:
        save_dataset(ds, store_path / "sweep.nc")
    return ds


def _dataset(xr: ModuleType, grid: dict, units: list, records: dict, members: int | None, dims: Mapping,
             coords: Mapping) -> Dataset:
    """Assemble the records into a Dataset (NaN metrics where a cell failed)."""
    names = list(grid)
    shape = tuple(len(grid[n]) for n in names)
    lead = names + (["member"] if members is not None else [])
    lead_shape = shape + ((members,) if members is not None else ())
    status = np.full(lead_shape, "", dtype=object)
    message = np.full(lead_shape, "", dtype=object)
    wall = np.full(lead_shape, np.nan)
    # a metric keeps its shape over the grid: the shape most cells give (the first on a tie); a cell that
    # gives another is recorded as failed (status MetricShapeError), and the other cells are kept
    counts: dict[str, dict[tuple, int]] = {}
    for idx, c, b in units:
        for n, a in records[_key(c, b)]["metrics"].items():
            s = a.shape[1:] if members is not None else a.shape
            counts.setdefault(n, {}).setdefault(s, 0)
            counts[n][s] += 1
    metric_shapes = {n: max(cs, key=lambda s, cs=cs: cs[s]) for n, cs in counts.items()}
    for idx, c, b in units:
        key = _key(c, b)
        r = records[key]
        wrong = {n: a.shape[1:] if members is not None else a.shape for n, a in r["metrics"].items()}
        wrong = {n: s for n, s in wrong.items() if s != metric_shapes[n]}
        if wrong:
            records[key] = {**r, "metrics": {}, "status": SHAPE_ERROR, "message": "; ".join(
                f"metric {n!r} has shape {s} in this cell but {metric_shapes[n]} in the others (a metric keeps "
                "its shape over the grid); its values are dropped" for n, s in wrong.items())}
    data = {n: np.full(lead_shape + s, np.nan) for n, s in metric_shapes.items()}
    for idx, c, b in units:
        r = records[_key(c, b)]
        where = idx + ((slice(b[0], b[1]),) if b is not None else ())
        status[where] = r["status"]
        message[where] = r["message"]
        wall[where] = r["wall_time"]
        for n, a in r["metrics"].items():
            data[n][where] = a
    variables = {}
    for n, a in data.items():
        extra = tuple(dims.get(n, ())) or tuple(f"{n}_dim_{i}" for i in range(len(metric_shapes[n])))
        if len(extra) != len(metric_shapes[n]):
            raise ValueError(f"sweep: dims[{n!r}] = {extra} names {len(extra)} dimensions; the metric has "
                             f"{len(metric_shapes[n])} (shape {metric_shapes[n]})")
        variables[n] = (tuple(lead) + extra, a)
    variables["status"] = (tuple(lead), status.astype(str))
    variables["message"] = (tuple(lead), message.astype(str))
    variables["wall_time"] = (tuple(lead), wall)
    cds: dict[str, np.ndarray] = {n: np.asarray(v) for n, v in grid.items()}
    if members is not None:
        cds["member"] = np.arange(members)
    for n, v in coords.items():
        cds[n] = np.asarray(v)
    return xr.Dataset(variables, coords=cds)


def save_dataset(ds: Dataset, path: str | Path) -> Path:
    """Write a sweep's Dataset to NetCDF (netCDF4), atomically.

    Parameters
    ----------
    ds : xarray.Dataset
        The Dataset :func:`sweep` returned.
    path : str or Path
        The NetCDF file (``.nc``).

    Returns
    -------
    Path

    Examples
    --------
    >>> import manifold_dirac as md
    >>> ds = md.sweep(lambda h: {"x": 2 * h}, {"h": [0.1, 0.2]}, workers=0, progress=False)
    >>> md.save_dataset(ds, "run.nc").name
    'run.nc'
    >>> md.load_dataset("run.nc").x.values.tolist()
    [0.2, 0.4]
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    ds.to_netcdf(tmp, engine="netcdf4")
    os.replace(tmp, path)
    return path


def load_dataset(path: str | Path) -> Dataset:
    """Read a sweep's Dataset written by :func:`save_dataset` (loaded into memory, file closed).

    Parameters
    ----------
    path : str or Path
        The NetCDF file (``.nc``).

    Returns
    -------
    xarray.Dataset

    Examples
    --------
    >>> import manifold_dirac as md
    >>> ds = md.sweep(lambda h: {"x": 2 * h}, {"h": [0.1, 0.2]}, workers=0, progress=False)
    >>> path = md.save_dataset(ds, "run.nc")
    >>> back = md.load_dataset(path)
    >>> back.x.values.tolist(), back.status.values.tolist()
    ([0.2, 0.4], ['ok', 'ok'])
    """
    xr = _require("xarray")
    with xr.open_dataset(path, engine="netcdf4") as ds:
        return ds.load()
