"""What a run tells its caller: progress, the failed members' statuses and messages, raised failures.

* :class:`Monitor` -- progress (a tqdm bar) and the user's callback between
  chunks, passed to the host loop (:func:`~manifold_dirac._run.loop.drive`);
* :func:`raise_if_failed` -- a failure raised as its
  :class:`~manifold_dirac._errors.StepError` subclass with the partial
  trajectory (``on_failure="raise"``), or left marked in the statuses;
* :func:`refined` -- each failed member's status as diagnosed at the
  boundary (:mod:`.diagnosis`) and its message;
* :func:`raise_interrupted` -- Ctrl-C or a callback's exception, with what
  was computed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import RunInterrupted, StepError
from .._mechanics.status import Status
from .diagnosis import diagnose
from .recording import Raw, Recording
from .state import RunState
from .trajectory import Trajectory

if TYPE_CHECKING:
    from .integrator import Integrator


_OK = int(Status.OK)
"""``Status.OK`` as a plain int (an enum member's lookup costs ~1 us, and every run checks its statuses)."""


class Monitor:
    """Progress and the user's callback between the compiled chunks of a run (host side).

    Parameters
    ----------
    n_steps : int
        The steps of the run (the progress bar's total).
    progress : bool
        Show a progress bar (tqdm) if the run takes more than a second.
    callback : callable ``(state) -> bool | None``, optional
        Called with the current :class:`RunState` after each chunk, the last
        one included; returning ``False`` stops the run (after the last
        chunk there is nothing left to stop).
    """

    def __init__(self, n_steps: int, progress: bool = False,
                 callback: Callable[[RunState], object] | None = None):
        self.n_steps, self.callback, self.bar = n_steps, callback, None
        if progress:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=n_steps, delay=1.0, unit="step", leave=False)

    def update(self, done: int) -> None:
        """``done`` steps of the run are taken."""
        if self.bar is not None:
            self.bar.update(min(done, self.n_steps) - self.bar.n)

    def stop(self, state: RunState) -> bool:
        """Whether the callback asks the run to stop at ``state``."""
        return self.callback is not None and self.callback(state) is False

    def close(self) -> None:
        """Close the progress bar (the run ended, however it ended)."""
        if self.bar is not None:
            self.bar.close()


def raises(on_failure: str | None, B: tuple[int, ...]) -> bool:
    """Whether a failed member is raised: ``on_failure="raise"``, or by default for a single trajectory."""
    return on_failure == "raise" or (on_failure is None and B == ())


def raise_interrupted(state: RunState, h: float, tr: Trajectory | None, error: Exception | None) -> None:
    """Raise the interruption of a run at ``state``: ``error`` (a callback's) with a note, else RunInterrupted.

    Either way ``.trajectory`` holds the points computed so far (``tr``).
    """
    k = state.k
    kept = "no point was stored yet" if tr is None else f"the {tr.n_points} points computed so far are in .trajectory"
    if error is not None:
        error.trajectory = tr  # type: ignore[attr-defined]
        error.add_note(f"manifold_dirac: this exception stopped the run at step {k} (t = "
                       f"{state.t0 + k * h:g}); {kept} (status INTERRUPTED for the members still running)")
        raise error
    raise RunInterrupted(f"integration interrupted at step {k} (t = {state.t0 + k * h:g}); {kept}", tr)


def raise_if_failed(integ: Integrator, state: RunState, partial: Trajectory | None) -> None:
    """Raise the first failed member's :class:`~manifold_dirac._errors.StepError` subclass, if failures are raised.

    ``partial`` (the trajectory so far, or None) goes with the exception; for
    a single trajectory it ends at the start of the failed step.
    """
    if not raises(integ.on_failure, state.batch_shape):
        return
    st = np.atleast_1d(np.asarray(state.members.status))
    if not (st != _OK).any():
        return
    i = int(np.argmax(st != Status.OK))
    code, msg = diagnosed(integ, state, i)
    fs = int(np.atleast_1d(np.asarray(state.members.fail_step))[i])
    err = float(np.atleast_1d(np.asarray(state.members.fail_error))[i])
    exc_type = code.exception or StepError
    if partial is not None and not state.batch_shape:
        partial = _with_failed_state(integ, partial, state, fs)
    raise exc_type(msg, step=fs, time=state.t0 + fs * integ.h, residual=err, trajectory=partial)


def _with_failed_state(integ: Integrator, tr: Trajectory, state: RunState, fs: int) -> Trajectory:
    """The partial trajectory of a single failed run, ending at the start ``q_fs`` of the failed step.

    With ``stride > 1`` the failed step's start is generally not a stored
    point; the frozen state of the member is that last good state, so it
    is appended (its ``v`` and ``energy`` NaN, as at the end of every
    partial trajectory), with an empty record (NaN, 0 iterations) for the
    unstored steps before the failed step's record. Nothing is changed
    when that point is already the last one (``stride = 1``).
    """
    t_fail = state.t0 + fs * integ.h
    if tr.n_points and np.isclose(tr.t[-1], t_fail, rtol=1e-12, atol=0.0) or tr.t[-1] > t_fail:
        return tr
    sm, sysm = integ.stepmap, integ.system
    mem = state.members
    _, rec = jax.jit(sm.step)(mem, np.int32(fs), np.float64(t_fail), np.float64(integ.h), integ._params, None)
    raw = Raw(mem.q, jnp.zeros(sysm.dim), mem.status, jnp.zeros((), bool))  # no previous point; the status as frozen
    pt = Recording.point(sm, raw, rec, False, False, jnp.full(sysm.dim, jnp.nan), np.float64(integ.h), integ._params)
    pt = jax.device_get(pt)
    add = lambda a, x: np.concatenate([np.asarray(a), np.asarray(x, dtype=np.asarray(a).dtype)[None]])  # noqa
    q = jax.tree.map(add, tr.q, pt.q)

    def gap(a, fill):  # one record for the unstored steps, before the failed step's record
        a = np.asarray(a)
        row = np.full(a.shape[1:], fill, dtype=a.dtype)[None]
        return np.concatenate([a[:-1], row, a[-1:]]) if len(a) else a

    return dataclasses.replace(
        tr, t=np.append(tr.t, t_fail), q=q, p=add(tr.p, pt.p), v=add(tr.v, np.full(sysm.dim, np.nan)),
        energy=add(tr.energy, np.nan),
        slip=None if tr.slip is None else add(tr.slip, np.nan),
        holonomic_violation=None if tr.holonomic_violation is None else add(tr.holonomic_violation,
                                                                            pt.holonomic_violation),
        xi=gap(tr.xi, np.nan), mu=gap(tr.mu, np.nan), constraint_residual=gap(tr.constraint_residual, np.nan),
        residual=gap(tr.residual, np.nan), iterations=gap(tr.iterations, 0),
    )


def refined(integ: Integrator, state: RunState, status: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
    """The status of each member as diagnosed at the boundary, and the failed members' messages.

    The compiled step knows only what it saw (a NaN in Newton's update:
    ``NONFINITE``); the diagnosis may refine it (a singular Newton matrix:
    ``ILL_POSED``). The trajectory records the refined code, the one whose
    exception is raised, so the two never disagree.
    """
    status = np.array(status, dtype=np.int32, copy=True)
    flat = status.reshape(-1)
    messages: list[str] = []
    for i in np.flatnonzero(flat != _OK):
        code, msg = diagnosed(integ, state, int(i))
        flat[i] = int(code)
        messages.append(msg)
    return flat.reshape(status.shape), tuple(messages)


def diagnosed(integ: Integrator, state: RunState, i: int) -> tuple[Status, str]:
    """The refined status of failed member ``i`` (flat index) and its full message."""
    code = Status(int(np.atleast_1d(np.asarray(state.members.status))[i]))
    if code == Status.INTERRUPTED:
        return code, code.summary
    fs = int(np.atleast_1d(np.asarray(state.members.fail_step))[i])
    err = float(np.atleast_1d(np.asarray(state.members.fail_error))[i])
    member = tuple(int(x) for x in np.unravel_index(i, state.batch_shape)) if state.batch_shape else None
    code, detail = diagnose(integ, state, i, code, fs)
    return code, code.describe(step=fs, time=state.t0 + fs * integ.h, member=member, h=integ.h, residual=err,
                               max_iter=integ.solver.max_iter, detail=detail)
