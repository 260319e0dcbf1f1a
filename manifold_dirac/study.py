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

Wall times are those of the stepping loops (``Trajectory.meta["wall_time"]``)
and exclude compilation: each (system, scheme, rule, stride) is compiled
once by a one-step run before the timed runs (the step size, the initial
data and the step count are traced, so the timed runs reuse it).
The system of an example and retraction is built once per process
(:func:`example_system`): its compiled steps live with it, so a second study
of the same example, or the command line's tour, compiles nothing again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from .errors import StepError
from .analysis import observed_order
from .mechanics.integrate import integrate
from .mechanics.trajectory import Trajectory
from .systems.catalog import Example, get_example

__all__ = ["StudyResult", "StudyRow", "example_system", "point_at", "retraction_study"]

_SYSTEMS: dict[tuple[Any, str], Any] = {}


@dataclass(frozen=True)
class StudyRow:
    """One (retraction, scheme, rule) combination of a study.

    Attributes
    ----------
    retraction, scheme, rule : str
        The combination.
    hs : tuple of float
        Step sizes, largest first.
    errors : tuple of float
        Error at ``T`` for each step size (NaN-free: a failed run is recorded
        in ``failure`` instead).
    order : float or None
        Observed order (None when fewer than two errors are above round-off, 1e-13).
    reference : str
        ``"closed form / solve_ivp"`` or ``"self-convergence"``.
    energy_error : float
        ``max |E - E0| / max(1, |E0|)`` over the long run.
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
    """

    system: str
    T: float
    long_T: float
    rows: tuple[StudyRow, ...] = field(default_factory=tuple)

    def table(self) -> str:
        """A markdown table of the rows.

        Returns
        -------
        str
        """
        head = (
            f"Retraction study of `{self.system}`: error at T = {self.T:g} for h in "
            f"{', '.join(f'{h:g}' for h in self.rows[0].hs) if self.rows else '-'}; energy over T = {self.long_T:g}\n\n"
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

    def figure(self, path: Any = None) -> Any:
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
            for r in self.rows if not r.failure
            for h, e in zip(r.hs, r.errors) if e > 0
        ]
        return plot_work_precision(data, path=path, title=f"work-precision: {self.system}")


def point_at(q: Any, index: int) -> Any:
    """The point at ``index`` of the leading (time) axis of a recorded point (a tuple on a product).

    Parameters
    ----------
    q : point, shape=[K+1, ...]
        ``Trajectory.q``: an array, or a nested tuple of arrays on a product.
    index : int

    Returns
    -------
    point
        The same structure with numpy arrays.
    """
    return jax.tree.map(lambda a: np.asarray(a)[index], q)


def example_system(example: Example, retraction: str | None = None) -> Any:
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
    retraction : str, optional
        Default: the example's first.

    Returns
    -------
    LagrangeDiracSystem

    Raises
    ------
    ValueError
        For a retraction the example does not offer.
    """
    ret = retraction or example.retractions[0]
    key = (example.build, ret)
    sysm = _SYSTEMS.get(key)
    if sysm is None:
        sysm = _SYSTEMS[key] = example.system(ret)
    return sysm


def _run(example: Example, system: Any, h: float, n: int, scheme: str, rule: str, stride: int = 1,
         warm: set | None = None) -> tuple[Trajectory, float, int]:
    """One run and the time of its stepping loop; compiled beforehand (once per key in ``warm``)."""
    q0, v0 = example.initial(system)
    key = (id(system), scheme, rule, stride)
    if warm is not None and key not in warm:
        integrate(system, q0, v0=v0, h=h, n_steps=1, scheme=scheme, discrete_lagrangian=rule, stride=stride)
        warm.add(key)
    tr = integrate(system, q0, v0=v0, h=h, n_steps=n, scheme=scheme, discrete_lagrangian=rule, stride=stride)
    return tr, float(tr.meta["wall_time"]), n


def retraction_study(
    system: str | Example,
    retractions: Sequence[str] | None = None,
    schemes: Sequence[str] = ("symmetric", "plus", "minus"),
    rules: Sequence[str] = ("midpoint",),
    hs: Sequence[float] | None = None,
    T: float | None = None,
    long_steps: int = 2000,
    progress: bool = False,
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
        Steps of the energy run (at the largest h).
    progress : bool
        A progress bar over the combinations.

    Returns
    -------
    StudyResult

    Raises
    ------
    ValueError
        For a retraction the example does not offer, fewer than two distinct
        positive step sizes, a step size that does not divide ``T``, or a
        non-positive ``T`` or ``long_steps``. A failed run is not an error:
        its row records the failure.
    """
    ex = system if isinstance(system, Example) else get_example(system)
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
    combos = [(r, s, u) for r in rets for s in schemes for u in rules]
    bar: Iterable[Any] = combos
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(combos, delay=1.0, unit="case", leave=False)
    warm: set = set()
    rows = []
    for ret, scheme, rule in bar:
        sysm = example_system(ex, ret)
        errors: list[float] = []
        walls, its, steps, cres = [], [], [], [0.0]
        failure = ""
        ref_kind = "closed form / solve_ivp" if ex.reference is not None else "self-convergence"
        try:
            for h in hs:
                tr, wall, n = _run(ex, sysm, h, n_of[h], scheme, rule, warm=warm)
                walls.append(wall)
                steps.append(n)
                its.append(tr.meta["total_iterations"])
                cres.append(float(np.max(tr.constraint_residual, initial=0.0)))
                q_end = point_at(tr.q, -1)
                if ex.reference is not None:
                    errors.append(ex.error(sysm, q_end, tr.t[-1]))
                else:
                    fine, _, _ = _run(ex, sysm, h / 16, 16 * n, scheme, rule, stride=16)
                    d = np.asarray(sysm.Q.inverse_retract(point_at(fine.q, -1), q_end))
                    errors.append(float(np.max(np.abs(d))))
            long_stride = max(1, long_steps // 2000)
            sl, _, _ = _run(ex, sysm, hs[0], long_steps, scheme, rule, stride=long_stride)
            e0 = float(sl.energy[0])
            energy = float(np.max(np.abs(sl.energy - e0)) / max(1.0, abs(e0)))
            cres.append(float(np.max(sl.constraint_residual, initial=0.0)))
        except StepError as exc:
            failure = str(exc).split(":")[0] + ": " + type(exc).__name__
            energy = float("inf")
        # errors at round-off (an exact discrete solution) carry no order
        usable = [(h, e) for h, e in zip(hs, errors) if e > 1e-13]
        order = observed_order(*zip(*usable)) if len(usable) >= 2 else None
        rows.append(StudyRow(
            retraction=ret, scheme=scheme, rule=rule, hs=hs, errors=tuple(errors), order=order,
            reference=ref_kind, energy_error=energy, constraint_residual=max(cres),
            iterations_per_step=sum(its) / max(1, sum(steps)),
            wall_time_per_step=(sum(walls) / max(1, sum(steps))), failure=failure,
        ))
    return StudyResult(system=ex.name, T=T, long_T=hs[0] * long_steps, rows=tuple(rows))
