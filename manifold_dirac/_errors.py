"""Exceptions raised by manifold_dirac.

Every error says what went wrong, where (step and time, for a solve) and the
likely cause; none of them is a silent NaN.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "RetractionDomainError",
    "ConvergenceError",
    "IllPosedStepError",
    "IllPosedSystemError",
    "NonFiniteError",
    "RunInterrupted",
    "StepDomainError",
    "StepError",
    "DegenerateLagrangianWarning",
]


class RetractionDomainError(ValueError):
    """A point is outside the domain of an inverse retraction.

    Raised, for example, by the Cayley inverse at a rotation by pi, where
    ``(g + I)`` is singular, or by the SO(3) logarithm fed a non-rotation.
    """


class StepError(RuntimeError):
    """A step of an integration failed.

    Attributes
    ----------
    message : str
        What failed, where (step, time, batch member) and why, with a hint.
    step : int
        Index ``k`` of the step ``k -> k+1`` that failed.
    time : float
        Time ``t_k`` at the start of the failed step.
    residual : float
        Norm of the residual when Newton stopped.
    trajectory : Trajectory or None
        The trajectory computed up to and including ``t_k``.
    """

    def __init__(
        self,
        message: str,
        *,
        step: int,
        time: float,
        residual: float,
        trajectory: Any = None,
    ) -> None:
        super().__init__(message)
        self.step = step
        self.time = time
        self.residual = residual
        self.trajectory = trajectory


class ConvergenceError(StepError):
    """Newton's method did not converge within its iteration budget."""


class IllPosedStepError(StepError):
    """The Newton system of a step is singular: the discrete equations do
    not determine the next state (an ill-posed degenerate or constrained
    system), which is not a convergence failure."""


class IllPosedSystemError(ValueError):
    """The system or its initial data is ill-posed, refused at the start of a run
    (:meth:`~manifold_dirac._run.integrator.Integrator.initial_state`): a
    Lagrangian without velocity dependence (the step equations have no unique
    solution), or an initial momentum ``p0`` that violates the primary
    constraint ``p = dL/dv(q, v)`` of a degenerate Lagrangian. A ``ValueError``:
    the input is wrong, not a step."""


class NonFiniteError(StepError):
    """The Lagrangian, a force or a constraint returned a non-finite value in a
    step's equations, or the energy at a stored point is not finite; the message
    names the function, the step, and the quadrature node or stored point."""


class DegenerateLagrangianWarning(UserWarning):
    """The Lagrangian is degenerate on the constraint distribution (linear in
    some velocities) and the chosen discrete Lagrangian is known to misbehave
    on such systems: the rectangle rules give singular step equations and the
    trapezoid rule excites parasitic modes that grow within a few hundred
    steps (Kraus, arXiv 1708.07356; Ellison et al., Phys. Plasmas 2018). The
    midpoint rule is stable there."""


class StepDomainError(StepError):
    """A step's chart coordinate left the retraction's domain of injectivity
    (``|xi| >= pi`` for ``exp`` on SO(3) or SE(2); near a rotation by pi for
    Cayley): the step is too large for the motion, and the recorded velocity
    would be aliased. Raised for a solution outside the domain and for a solve
    whose Newton iterates left it without converging; the message gives
    ``|xi|``, where the domain ends along ``xi`` and a smaller ``h`` to try."""


class RunInterrupted(KeyboardInterrupt):
    """A run was interrupted (Ctrl-C): ``.trajectory`` holds every point computed
    before the interruption, with status ``INTERRUPTED`` for members that were
    still running. (Any other exception raised by a run's callback is re-raised
    as it is, with the same ``.trajectory`` attached.)

    Parameters
    ----------
    message : str
        Where the run stopped (step and time) and what was kept.
    trajectory : Trajectory or None
        The points computed before the interruption (None if none was stored).
    """

    def __init__(self, message: str, trajectory: Any = None) -> None:
        super().__init__(message)
        self.trajectory = trajectory
