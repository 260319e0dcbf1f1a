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

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> half_turn = np.diag([1.0, -1.0, -1.0])               # a rotation by pi about x
    >>> md.SO3("cayley").inverse_retract(np.eye(3), half_turn)
    Traceback (most recent call last):
        ...
    manifold_dirac...RetractionDomainError: ...
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

    Examples
    --------
    Catch it to keep what was computed before the failure (the subclass says why):

    >>> import jax.numpy as jnp
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> log_potential = md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v + jnp.log(1.0 + q[0]))
    >>> try:                                      # log(1 + q) is NaN at q = -3
    ...     md.integrate(log_potential, np.array([-3.0]), v0=np.array([0.0]), h=0.1, n_steps=5)
    ... except md.StepError as err:
    ...     print(type(err).__name__, err.step, err.time, len(err.trajectory.t))
    NonFiniteError 0 0.0 1
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
    """Newton's method did not converge within its iteration budget.

    Examples
    --------
    The error of the status ``NO_CONVERGENCE`` (a batch marks the member instead
    of raising); ``SolverOptions`` sets the budget:

    >>> import manifold_dirac as md
    >>> md.Status.NO_CONVERGENCE.exception is md.ConvergenceError, issubclass(md.ConvergenceError, md.StepError)
    (True, True)
    >>> md.SolverOptions().max_iter > 1
    True
    """


class IllPosedStepError(StepError):
    """The Newton system of a step is singular: the discrete equations do
    not determine the next state (an ill-posed degenerate or constrained
    system), which is not a convergence failure.

    Examples
    --------
    The error of the status ``ILL_POSED`` (a batch marks the member instead of raising):

    >>> import manifold_dirac as md
    >>> md.Status.ILL_POSED.exception is md.IllPosedStepError, issubclass(md.IllPosedStepError, md.StepError)
    (True, True)
    """


class IllPosedSystemError(ValueError):
    """The system or its initial data is ill-posed, refused at the start of a run
    (:meth:`~manifold_dirac._run.integrator.Integrator.initial_state`): a
    Lagrangian without velocity dependence (the step equations have no unique
    solution), or an initial momentum ``p0`` that violates the primary
    constraint ``p = dL/dv(q, v)`` of a degenerate Lagrangian. A ``ValueError``:
    the input is wrong, not a step.

    Examples
    --------
    A Lagrangian without velocities is refused before the first step:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> static = md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: -0.5 * q @ q)
    >>> md.integrate(static, np.array([0.5]), v0=np.array([0.0]), h=0.1, n_steps=2)
    Traceback (most recent call last):
        ...
    manifold_dirac...IllPosedSystemError: ...
    """


class NonFiniteError(StepError):
    """The Lagrangian, a force or a constraint returned a non-finite value in a
    step's equations, or the energy at a stored point is not finite; the message
    names the function, the step, and the quadrature node or stored point.

    Examples
    --------
    A Lagrangian that is not finite where the run starts:

    >>> import jax.numpy as jnp
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> log_potential = md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v + jnp.log(1.0 + q[0]))
    >>> md.integrate(log_potential, np.array([-3.0]), v0=np.array([0.0]), h=0.1, n_steps=2)
    Traceback (most recent call last):
        ...
    manifold_dirac...NonFiniteError: ...
    """


class DegenerateLagrangianWarning(UserWarning):
    """The Lagrangian is degenerate on the constraint distribution (linear in
    some velocities) and the chosen discrete Lagrangian is known to misbehave
    on such systems: the rectangle rules give singular step equations and the
    trapezoid rule excites parasitic modes that grow within a few hundred
    steps (Kraus, arXiv 1708.07356; Ellison et al., Phys. Plasmas 2018). The
    midpoint rule is stable there.

    Examples
    --------
    The trapezoid rule on the Lotka--Volterra system (a Lagrangian linear in
    the velocities), warned about before the first step:

    >>> import warnings
    >>> import manifold_dirac as md
    >>> q0, p0 = md.systems.LOTKA_VOLTERRA_INITIAL
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     tr = md.integrate(md.systems.lotka_volterra(), q0, p0=p0, h=0.05, n_steps=2,
    ...                       discrete_lagrangian="trapezoid")
    >>> any(issubclass(w.category, md.DegenerateLagrangianWarning) for w in caught)
    True
    """


class StepDomainError(StepError):
    """A step's chart coordinate left the retraction's domain of injectivity
    (``|xi| >= pi`` for ``exp`` on SO(3) or SE(2); near a rotation by pi for
    Cayley): the step is too large for the motion, and the recorded velocity
    would be aliased. Raised for a solution outside the domain and for a solve
    whose Newton iterates left it without converging; the message gives
    ``|xi|``, where the domain ends along ``xi`` and a smaller ``h`` to try.

    Examples
    --------
    The error of the status ``DOMAIN``; a step of a rotation by more than pi
    with ``exp`` on SO(3) raises it:

    >>> import manifold_dirac as md
    >>> md.Status.DOMAIN.exception is md.StepDomainError, issubclass(md.StepDomainError, md.StepError)
    (True, True)
    """


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

    Examples
    --------
    A run stopped with Ctrl-C (here: by its callback, called after each
    compiled chunk of steps) keeps its points:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> def stop(chunk):
    ...     raise KeyboardInterrupt
    >>> try:
    ...     md.integrate(md.systems.pendulum(), np.array([1.0]), v0=np.array([0.0]), h=0.1, n_steps=1000,
    ...                  callback=stop)
    ... except md.RunInterrupted as err:
    ...     print(md.Status(int(err.trajectory.status)).name, err.trajectory.t[-1] > 0)
    INTERRUPTED True
    """

    def __init__(self, message: str, trajectory: Any = None) -> None:
        super().__init__(message)
        self.trajectory = trajectory
