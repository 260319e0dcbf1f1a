"""Failures as values: one status per trajectory member, each with its message and exception.

Inside compiled code a failed step sets the member's status and freezes it;
nothing raises there. At the boundary (:func:`~manifold_dirac.mechanics.integrate.integrate`,
:meth:`Integrator.step`) a failure is turned into the exception named by its
status, with the step, the time, the residual and the hint below.
"""

from __future__ import annotations

import enum

from ..errors import ConvergenceError, IllPosedStepError, NonFiniteError, StepDomainError, StepError

__all__ = ["Status"]


class Status(enum.IntEnum):
    """Status of a trajectory member (``Trajectory.status``, ``StepRecord.status``).

    Each member carries a one-line ``summary``, the ``exception`` raised at the
    boundary, and a ``hint`` (a format string with the fields ``h``,
    ``residual``, ``max_iter``, ``detail``).
    """

    summary: str
    exception: type[StepError] | None
    hint: str

    def __new__(cls, value: int, summary: str, exception: type[StepError] | None, hint: str):
        obj = int.__new__(cls, value)
        obj._value_ = value
        obj.summary = summary
        obj.exception = exception
        obj.hint = hint
        return obj

    OK = (0, "ok", None, "")
    NO_CONVERGENCE = (
        1,
        "no convergence",
        ConvergenceError,
        "Newton's method did not converge in {max_iter} iterations (scaled residual {residual:.3e}). "
        "Likely cause: the step h={h:g} is too large for the dynamics here (try a smaller h), or the "
        "Lagrangian, force or constraint is not smooth at this state; SolverOptions(max_iter=...) raises "
        "the budget.",
    )
    ILL_POSED = (
        2,
        "ill-posed (singular step equations)",
        IllPosedStepError,
        "the step equations are singular ({detail}): they do not determine q_(k+1). For a degenerate "
        "Lagrangian the combined system (Lagrangian, constraints, interconnection) is not well posed "
        "with this discrete Lagrangian, or a constraint is redundant (rank drop).",
    )
    NONFINITE = (
        3,
        "non-finite value",
        NonFiniteError,
        "a non-finite value (NaN/inf) appeared {detail}; check that function near this state, or reduce "
        "h={h:g}.",
    )
    DOMAIN = (
        4,
        "left the retraction's domain",
        StepDomainError,
        "the step's chart coordinate xi left the domain of the retraction ({detail}): the motion over one "
        "step is too large for the chart (a rotation by pi or more per step aliases the velocity). "
        "Use a smaller h (h={h:g} now).",
    )
    INTERRUPTED = (
        5,
        "interrupted",
        None,
        "the run was interrupted (KeyboardInterrupt or an exception in user code); the trajectory holds "
        "the points computed before.",
    )

    def describe(self, *, step: int, time: float, member: tuple[int, ...] | None = None, **fields: object) -> str:
        """The full message: where (step, time, batch member), what, and the hint."""
        where = f"step {step} (t = {time:g})" + (f", batch member {list(member)}" if member else "")
        defaults: dict[str, object] = {"h": float("nan"), "residual": float("nan"), "max_iter": "?", "detail": ""}
        defaults.update(fields)
        if not defaults["detail"]:
            defaults["detail"] = _DEFAULT_DETAIL.get(self, "")
        return f"{where}: {self.summary}: " + self.hint.format(**defaults)


_DEFAULT_DETAIL: dict[Status, str] = {
    Status.NONFINITE: "in the step equations",
    Status.DOMAIN: "|xi| too large for the chart",
    Status.ILL_POSED: "singular Newton matrix",
}
"""The ``detail`` of a message when the failure was not refined (see :meth:`Status.describe`)."""
