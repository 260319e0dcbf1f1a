"""The retraction study: which retraction and scheme for my system, and at what cost?

For a system, a set of retractions x schemes x discrete Lagrangians x step
sizes, :func:`retraction_study` reports per combination

* the observed order (regression slope of the error over the step sizes),
* the error at ``T`` against a reference (closed form, a tight ``solve_ivp``,
  or, for a system without one, a run with a step 16 times smaller of the
  same combination -- a self-convergence estimate),
* the energy error over a long run (``long_steps`` steps at the largest h),
* the largest constraint residual,
* Newton iterations per step and wall time per step,

as a :class:`StudyResult` with a markdown table and a work--precision figure.

The study is a :func:`~manifold_dirac.sweep.sweep` over the axes
``retraction x scheme x rule x h``: one cell (:func:`study_cell`) is one
combination at one step size (its error at ``T``, and the energy error over
``long_steps`` steps at that step size); the table and the figure are made
from the sweep's Dataset (:meth:`StudyResult.from_dataset`), kept as
``StudyResult.dataset``. By default the cells run in this process
(``workers=0``); ``workers=N`` runs them on a local Dask cluster,
``client=`` on a real one, and ``store=`` with ``resume=True`` continues an
interrupted study.

Wall times are those of the stepping loops (``Trajectory.meta["wall_time"]``)
and exclude compilation: each (system, scheme, rule, stride) is compiled
once by a one-step run before the timed runs (the step size, the initial
data and the step count are traced, so the timed runs reuse it).
The system of an example and retraction is built once per process
(:func:`example_system`): its compiled steps live with it, so a second study
of the same example, or the command line's tour, compiles nothing again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import jax
import numpy as np

from .analysis import observed_order
from ._run.integrate import integrate
from ._run.trajectory import Trajectory
from .systems.catalog import Example, get_example
from ._types import PointBatch

if TYPE_CHECKING:
    from ._mechanics.system import LagrangeDiracSystem
    from distributed import Client
    from matplotlib.figure import Figure
    from xarray import Dataset

__all__ = ["StudyResult", "StudyRow", "example_system", "point_at", "retraction_study", "study_cell"]

_SYSTEMS: dict[tuple[Callable[[str], LagrangeDiracSystem], str], LagrangeDiracSystem] = {}
_WARM: set = set()  # (system, scheme, rule, stride) compiled in this process
STUDY_METRICS = ("error", "energy_error", "constraint_residual", "iterations", "steps", "run_time")
"""The metrics of one cell of the study (:func:`study_cell`)."""


@dataclass(frozen=True)
class StudyRow:
    """One (retraction, scheme, rule) combination of a study.

    Attributes
    ----------
    retraction, scheme, rule : str
        The combination.
    hs : tuple of float
        Step sizes whose cells succeeded, largest first (the study's are in ``StudyResult.dataset.h``).
    errors : tuple of float
        Error at ``T`` for each step size (NaN-free: a failed run is recorded
        in ``failure`` instead, and its step size left out of ``hs``).
    order : float or None
        Observed order (None when fewer than two errors are above round-off, 1e-13).
    reference : str
        ``"closed form / solve_ivp"`` or ``"self-convergence"``.
    energy_error : float
        ``max |E - E0| / max(1, |E0|)`` over the long run at the largest
        step size of the study (``inf`` if that run failed).
    constraint_residual : float
        Largest discrete constraint residual of all the runs.
    iterations_per_step : float
        Newton iterations per step over the runs of the order measurement.
    wall_time_per_step : float
        Seconds per step (mean over the runs of the order measurement): the
        time of the stepping loop, without compilation and without the
        validation of the initial data.
    failure : str
        Empty, or the message of the run that failed.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> result = md.retraction_study("pendulum", schemes=["symmetric"], hs=[0.1, 0.05], T=0.5, long_steps=20)
    >>> row = result.rows[0]
    >>> row.label, row.hs, row.failure
    ('identity/symmetric/midpoint', (0.1, 0.05), '')
    >>> round(row.order, 1)                     # the midpoint rule's order 2
    2.0
    """

    retraction: str
    scheme: str
    rule: str
    hs: tuple[float, ...]
    errors: tuple[float, ...]
    order: float | None
    reference: str
    energy_error: float
    constraint_residual: float
    iterations_per_step: float
    wall_time_per_step: float
    failure: str = ""

    @property
    def label(self) -> str:
        """``"retraction/scheme/rule"``."""
        return f"{self.retraction}/{self.scheme}/{self.rule}"


@dataclass(frozen=True)
class StudyResult:
    """The rows of a study and how to show them.

    Attributes
    ----------
    system : str
        Name of the example.
    T : float
        Time at which the errors are measured.
    long_T : float
        Duration of the energy run.
    rows : tuple of StudyRow
        One row per (retraction, scheme, rule): errors, observed order,
        energy error, constraint residual, Newton iterations, run time.
    dataset : xarray.Dataset, optional
        The sweep behind the rows (dimensions ``retraction, scheme, rule,
        h``; see :func:`study_cell` for the metrics).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> result = md.retraction_study("free_rigid_body", retractions=["cayley"], schemes=["symmetric"],
    ...                              hs=[0.1, 0.05], T=0.5, long_steps=50)
    >>> isinstance(result, md.StudyResult), len(result.rows), result.T
    (True, 1, 0.5)
    """

    system: str
    T: float
    long_T: float
    rows: tuple[StudyRow, ...] = field(default_factory=tuple)
    dataset: Dataset | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_dataset(cls, ds: Dataset, system: str | None = None) -> StudyResult:
        """The rows of a study from its sweep Dataset (one row per retraction x scheme x rule).

        Parameters
        ----------
        ds : xarray.Dataset
            From :func:`retraction_study` (``.dataset``) or a
            :func:`~manifold_dirac.sweep.sweep` of :func:`study_cell` over
            ``retraction, scheme, rule, h`` (with ``attrs`` ``T`` and
            ``long_steps``; select one system first if the sweep has a
            ``system`` axis).
        system : str, optional
            Default: ``ds.attrs["system"]``.

        Returns
        -------
        StudyResult

        Notes
        -----
        Per row: the observed order is the regression slope of
        ``log(error)`` on ``log(h)`` over the cells that succeeded with an
        error above round-off (1e-13); wall time and Newton iterations per
        step are sums over those runs divided by their steps; the energy
        error is that of the largest step size.
        """
        hs = sorted((float(h) for h in ds.h.values), reverse=True)
        T = float(ds.attrs["T"])
        long_steps = int(ds.attrs["long_steps"])
        name = system or str(ds.attrs.get("system", "?"))
        ref = str(ds.attrs.get("reference", ""))
        rows = []
        for ret in ds.retraction.values:
            for scheme in ds.scheme.values:
                for rule in ds.rule.values:
                    c = ds.sel(retraction=ret, scheme=scheme, rule=rule)
                    ok_h, errors, failure = [], [], ""
                    walls = its = steps = 0.0
                    cres = 0.0
                    for h in hs:
                        x = c.sel(h=h)
                        st = str(x.status.values)
                        if st != "ok":
                            failure = failure or (str(x.message.values).split(":")[0] + ": " + st)
                            continue
                        ok_h.append(h)
                        errors.append(float(x.error))
                        walls += float(x.run_time)
                        its += float(x.iterations)
                        steps += float(x.steps)
                        cres = max(cres, float(x.constraint_residual))
                    top = c.sel(h=hs[0])
                    energy = float(top.energy_error) if str(top.status.values) == "ok" else float("inf")
                    usable = [(h, e) for h, e in zip(ok_h, errors) if e > 1e-13]
                    order = observed_order(*zip(*usable)) if len(usable) >= 2 else None
                    rows.append(StudyRow(
                        retraction=str(ret), scheme=str(scheme), rule=str(rule), hs=tuple(ok_h),
                        errors=tuple(errors), order=order, reference=ref, energy_error=energy,
                        constraint_residual=cres, iterations_per_step=its / max(1.0, steps),
                        wall_time_per_step=walls / max(1.0, steps), failure=failure,
                    ))
        return cls(system=name, T=T, long_T=hs[0] * long_steps, rows=tuple(rows), dataset=ds)

    def table(self) -> str:
        """A markdown table of the rows.

        Returns
        -------
        str
        """
        head = (
            f"Retraction study of `{self.system}`: error at T = {self.T:g} for h in "
            f"{', '.join(f'{h:g}' for h in self._hs()) or '-'}; energy over T = {self.long_T:g}\n\n"
            "| retraction | scheme | rule | order | error (smallest h) | reference | energy error | "
            "constraint residual | Newton it/step | µs/step | note |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n"
        )
        lines = []
        for r in self.rows:
            err = f"{r.errors[-1]:.2e}" if r.errors else "-"
            order = f"{r.order:.2f}" if r.order is not None else "-"
            lines.append(
                f"| {r.retraction} | {r.scheme} | {r.rule} | {order} | {err} | {r.reference} | "
                f"{r.energy_error:.1e} | {r.constraint_residual:.1e} | {r.iterations_per_step:.2f} | "
                f"{1e6 * r.wall_time_per_step:.0f} | {r.failure[:60]} |"
            )
        return head + "\n".join(lines) + "\n"

    def _hs(self) -> list[float]:
        """Step sizes of the study: the Dataset's, else those of the rows."""
        if self.dataset is not None:
            return sorted((float(h) for h in self.dataset.h.values), reverse=True)
        return sorted({h for r in self.rows for h in r.hs}, reverse=True)

    def figure(self, path: str | Path | None = None) -> Figure:
        """The work--precision plot (error at T against wall time per run).

        Parameters
        ----------
        path : str or Path, optional
            Write the figure there.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from .plotting import plot_work_precision

        data = [
            {"label": r.label, "h": h, "error": e, "wall_time": r.wall_time_per_step * round(self.T / h)}
            for r in self.rows
            for h, e in zip(r.hs, r.errors) if e > 0
        ]
        return plot_work_precision(data, path=path, title=f"work-precision: {self.system}")


def point_at(q: PointBatch, index: int) -> PointBatch:
    """The point at ``index`` of the leading (time) axis of a recorded point (a tuple on a product).

    Parameters
    ----------
    q : point, shape=[K+1, ...]
        ``Trajectory.q``: an array, or a nested tuple of arrays on a product.
    index : int
        The time index (negative counts from the end).

    Returns
    -------
    point
        The same structure with numpy arrays.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> q = (np.zeros((5, 3, 3)), np.arange(10.0).reshape(5, 2))     # a product's recorded points
    >>> R, x = md.study.point_at(q, -1)
    >>> R.shape, x
    ((3, 3), array([8., 9.]))
    """
    return jax.tree.map(lambda a: np.asarray(a)[index], q)


def example_system(example: Example, retraction: str | None = None) -> LagrangeDiracSystem:
    """``example.system(retraction)``, built once per process and then reused.

    The compiled steps of a system are cached with the system object, so
    reusing it spares a compilation per (scheme, rule, stride) on every later
    run. Systems are not modified by integrating them, so sharing one is safe.
    The key is the example's ``build`` function and the retraction: a copy of
    an example (``dataclasses.replace``, e.g. with fewer retractions) shares
    the original's systems.

    Parameters
    ----------
    example : Example
        An entry of the catalog (:func:`~manifold_dirac.systems.catalog.get_example`).
    retraction : str, optional
        Default: the example's first.

    Returns
    -------
    LagrangeDiracSystem

    Raises
    ------
    ValueError
        For a retraction the example does not offer.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> ex = md.get_example("pendulum")
    >>> md.example_system(ex) is md.example_system(ex)     # the same object: compiled once per process
    True
    """
    ret = retraction or example.retractions[0]
    key = (example.build, ret)
    sysm = _SYSTEMS.get(key)
    if sysm is None:
        sysm = _SYSTEMS[key] = example.system(ret)
    return sysm


def _run(example: Example, system: LagrangeDiracSystem, h: float, n: int, scheme: str, rule: str, stride: int = 1,
         warm: set | None = None) -> tuple[Trajectory, float, int]:
    """One run and the time of its stepping loop; compiled beforehand (once per key in ``warm``)."""
    q0, v0 = example.initial(system)
    key = (id(system), scheme, rule, stride)
    scheme, comp = _scheme_and_composition(scheme)
    if warm is not None and key not in warm:
        integrate(system, q0, v0=v0, h=h, n_steps=1, scheme=scheme, discrete_lagrangian=rule, stride=stride,
                  composition=comp)
        warm.add(key)
    tr = integrate(system, q0, v0=v0, h=h, n_steps=n, scheme=scheme, discrete_lagrangian=rule, stride=stride,
                   composition=comp)
    return tr, float(tr.meta["wall_time"]), n


def _scheme_and_composition(scheme: str) -> tuple[str, str | None]:
    """``"split+triple_jump4"`` -> ``("split", "triple_jump4")``; ``"symmetric"`` -> ``("symmetric", None)``.

    A study's scheme axis names a composition after a ``+`` (the axis of
    :func:`retraction_study`'s ``compositions``).
    """
    base, _, comp = str(scheme).partition("+")
    return base, (comp or None)


def _example(system: str | Example) -> Example:
    return system if isinstance(system, Example) else get_example(system)


def study_cell(system: str | Example, retraction: str, scheme: str, rule: str, h: float, *, T: float,
               long_steps: int) -> dict[str, float]:
    """One cell of the retraction study: one combination at one step size.

    Parameters
    ----------
    system : str or Example
        A catalog name, or an example.
    retraction, scheme, rule : str
        The retraction (one the example offers), the scheme and the discrete
        Lagrangian, by their registered names.
    h : float
        Step size; it must divide ``T``.
    T : float
        Time at which the error is measured.
    long_steps : int
        Steps of the energy run (at ``h``; stored with a stride of
        ``long_steps // 2000`` at most 2000 points).

    Returns
    -------
    dict
        ``error`` (max-norm error at ``T`` against the example's reference,
        or against a run with ``h/16`` of the same combination when it has
        none), ``energy_error`` (``max |E - E0| / max(1, |E0|)`` over the
        energy run), ``constraint_residual`` (largest of both runs),
        ``iterations`` (Newton iterations of the run to ``T``), ``steps``
        (its steps) and ``run_time`` (the time of its stepping loop,
        without compilation).

    Raises
    ------
    StepError
        When a run fails (the sweep records it as the cell's status).

    Notes
    -----
    Each (system, scheme, rule, stride) is compiled once per process by a
    one-step run before the timed run; the step size and the initial data
    are traced, so the cells of the other step sizes reuse it.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> cell = md.study.study_cell("pendulum", "identity", "symmetric", "midpoint", 0.1, T=1.0, long_steps=20)
    >>> sorted(cell)
    ['constraint_residual', 'energy_error', 'error', 'iterations', 'run_time', 'steps']
    >>> cell["steps"], bool(cell["error"] < 1e-2)
    (10.0, True)
    """
    ex = _example(system)
    sysm = example_system(ex, retraction)
    n = int(round(T / h))
    tr, wall, _ = _run(ex, sysm, h, n, scheme, rule, warm=_WARM)
    cres = float(np.max(tr.constraint_residual, initial=0.0))
    q_end = point_at(tr.q, -1)
    if ex.reference is not None:
        error = ex.error(sysm, q_end, tr.t[-1])
    else:
        fine, _, _ = _run(ex, sysm, h / 16, 16 * n, scheme, rule, stride=16)
        d = np.asarray(sysm.Q.inverse_retract(point_at(fine.q, -1), q_end))
        error = float(np.max(np.abs(d)))
    sl, _, _ = _run(ex, sysm, h, long_steps, scheme, rule, stride=max(1, long_steps // 2000))
    e0 = float(sl.energy[0])
    energy = float(np.max(np.abs(sl.energy - e0)) / max(1.0, abs(e0)))
    cres = max(cres, float(np.max(sl.constraint_residual, initial=0.0)))
    return {"error": error, "energy_error": energy, "constraint_residual": cres,
            "iterations": float(tr.meta["total_iterations"]), "steps": float(n), "run_time": wall}


def retraction_study(
    system: str | Example,
    retractions: Sequence[str] | None = None,
    schemes: Sequence[str] = ("symmetric", "plus", "minus"),
    rules: Sequence[str] = ("midpoint",),
    hs: Sequence[float] | None = None,
    T: float | None = None,
    long_steps: int = 2000,
    progress: bool = False,
    *,
    workers: int = 0,
    client: Client | str | None = None,
    processes: bool = True,
    store: str | Path | None = None,
    resume: bool = False,
    compositions: Sequence[str] | None = None,
) -> StudyResult:
    """Compare retractions x schemes x discrete Lagrangians on a bundled example.

    Parameters
    ----------
    system : str or Example
        A name from the catalog's ``EXAMPLES`` (``manifold-dirac list``), or an example.
    retractions : sequence of str, optional
        Default: every retraction the example offers.
    schemes, rules : sequence of str
        Schemes and discrete Lagrangians to combine.
    hs : sequence of float, optional
        At least two different step sizes, each dividing ``T`` (default: the
        example's h times 2, 1, 1/2).
    T : float, optional
        Time at which errors are measured (default: the example's).
    long_steps : int
        Steps of the energy run (every cell runs one at its step size; the
        table reports the one at the largest).
    progress : bool
        A progress bar over the cells.
    workers : int
        ``0`` (default): every cell in this process (the compiled systems are
        this process's, shared with later studies and runs); ``N``: a local
        Dask cluster of ``N`` worker processes (threads with ``processes=False``).
    client : distributed.Client or str, optional
        Run on this Dask client, or on the scheduler at this address.
    processes : bool
        With ``workers=N``: worker processes (default) or threads.
    store : str or Path, optional
        Write each finished cell there (see :func:`~manifold_dirac.sweep.sweep`).
    resume : bool
        Skip the cells already in ``store``.
    compositions : sequence of str, optional
        Composition methods to cross with the schemes
        (:mod:`~manifold_dirac._mechanics.composition`; ``"none"`` for the
        scheme alone): the scheme axis then holds ``"scheme+composition"``
        (e.g. ``"split+triple_jump4"``). A combination whose base is not
        self-adjoint is refused before any run.

    Returns
    -------
    StudyResult
        With the sweep's Dataset as ``.dataset`` (attributes ``system``,
        ``T``, ``long_steps``, ``reference``).

    Raises
    ------
    ValueError
        For a retraction the example does not offer, fewer than two distinct
        positive step sizes, a step size that does not divide ``T``, or a
        non-positive ``T`` or ``long_steps``. A failed run is not an error:
        its cell records the failure, and its row says so.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> result = md.retraction_study("free_rigid_body", retractions=["cayley"], schemes=["symmetric"],
    ...                              hs=[0.1, 0.05], T=0.5, long_steps=50)
    >>> [(row.retraction, row.scheme) for row in result.rows]
    [('cayley', 'symmetric')]
    """
    ex = _example(system)
    rets = tuple(retractions) if retractions else ex.retractions
    for r in rets:
        if r not in ex.retractions:
            raise ValueError(
                f"study: {ex.name!r} has no retraction {r!r}; valid: " + ", ".join(repr(x) for x in ex.retractions)
            )
    hs = tuple(float(h) for h in (hs if hs is not None else (2 * ex.h, ex.h, ex.h / 2)))
    if any(not (np.isfinite(h) and h > 0) for h in hs):
        raise ValueError(f"study: step sizes must be positive, got {hs}")
    hs = tuple(sorted(set(hs), reverse=True))
    if len(hs) < 2:
        raise ValueError(f"study: need at least two positive step sizes, all different, got {hs}")
    T = float(T if T is not None else ex.T)
    if not (np.isfinite(T) and T > 0):
        raise ValueError(f"study: T must be positive, got {T}")
    n_of = {h: int(round(T / h)) for h in hs}
    off = [h for h in hs if abs(n_of[h] * h - T) > 1e-9 * T]
    if off:
        raise ValueError(
            f"study: every step size must divide T = {T:g} (so all runs end at T); "
            + ", ".join(f"{h:g}" for h in off) + " do not"
        )
    if long_steps < 1:
        raise ValueError(f"study: long_steps must be positive, got {long_steps}")
    if compositions:
        from ._run.integrator import Integrator

        schemes = [s if c in ("none", "") else f"{s}+{c}" for s in schemes for c in compositions]
        for r in rets:  # refuse a combination that cannot be composed, before any run (the reason is the error)
            for sc in schemes:
                base, comp = _scheme_and_composition(sc)
                for rule in rules:
                    if comp is not None:
                        Integrator(example_system(ex, r), hs[0], base, rule, composition=comp)
    from ._sweep import sweep

    # a catalog example travels to the workers by name; another one (a modified copy) as itself
    from .systems.catalog import EXAMPLES

    ref = EXAMPLES.get(ex.name) is ex
    cell = functools.partial(study_cell, ex.name if ref else ex, T=T, long_steps=int(long_steps))
    reference = "closed form / solve_ivp" if ex.reference is not None else "self-convergence"
    ds = sweep(cell, {"retraction": list(rets), "scheme": list(schemes), "rule": list(rules), "h": list(hs)},
               store=store, resume=resume, client=client, workers=None if client is not None else workers,
               processes=processes,
               progress=progress,
               attrs={"system": ex.name, "T": T, "long_steps": int(long_steps), "reference": reference})
    return StudyResult.from_dataset(ds)
