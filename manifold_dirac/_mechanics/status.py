"""Failures as values: one status per trajectory member, each with its message and exception.

Inside compiled code a failed step sets the member's status and freezes it;
nothing raises there. At the boundary (:func:`~manifold_dirac._run.integrate.integrate`,
:meth:`Integrator.step`) a failure is turned into the exception named by its
status, with the step, the time, the residual and the hint below.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp

from .._errors import ConvergenceError, IllPosedStepError, NonFiniteError, StepDomainError, StepError

if TYPE_CHECKING:
    from .._manifolds.base import Manifold
    from .._types import Covector, Point, Vector

__all__ = ["Status", "classify_step"]


class Status(enum.IntEnum):
    """Status of a trajectory member (``Trajectory.status``, ``StepRecord.status``).

    Each member carries a one-line ``summary``, the ``exception`` raised at the
    boundary, and a ``hint`` (a format string with the fields ``h``,
    ``residual``, ``max_iter``, ``detail``).

    Attributes
    ----------
    summary : str
        One line saying what happened (``"ok"``, ``"no convergence"``, ...).
    exception : type of StepError or None
        What a failed run raises for this status (None for ``OK``).
    hint : str
        A format string: what to try (a smaller ``h``, more iterations, ...).

    Examples
    --------
    In a batch a failed member is marked, not raised: its status says why.

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> pendulum = md.systems.pendulum()
    >>> tr = md.integrate(pendulum, np.array([[0.5], [1.0]]), v0=np.zeros((2, 1)), h=0.05, n_steps=10)
    >>> [md.Status(s).name for s in tr.status]
    ['OK', 'OK']
    >>> md.Status.OK.summary
    'ok'
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


def classify_step(newton_status: jax.Array, Q: Manifold, xi: Vector, q1: Point, p1: Covector) -> jax.Array:
    """The status of one solved step from Newton's status and what the step computed (traced, int32).

    Parameters
    ----------
    newton_status : int array, shape=[]
        What the Newton solve reported (``OK``, ``NO_CONVERGENCE``, ``ILL_POSED``, ``NONFINITE``).
    Q : Manifold
        The configuration manifold (its retraction's domain).
    xi : array, shape=[n]
        The step's chart coordinate: the solution, or Newton's last iterate.
    q1, p1 : point, array of shape [n]
        The step's end point and momentum.

    Returns
    -------
    int32 array, shape=[]

    Notes
    -----
    Two refinements of Newton's verdict, in this order:

    1. a converged solution whose ``q_{k+1}`` or ``p_{k+1}`` is not finite (a
       function finite in the residual only) is ``NONFINITE``;
    2. a finite ``xi`` outside the retraction's domain (a converged solution
       or an unconverged last iterate) is ``DOMAIN``: the step is too large
       for the chart, which is not a convergence failure.
    """
    status = jnp.asarray(newton_status)
    finite_out = jnp.all(jnp.isfinite(p1)) & jnp.all(jnp.stack([jnp.all(jnp.isfinite(x))
                                                               for x in jax.tree.leaves(q1)]))
    status = jnp.where((status == Status.OK) & ~finite_out, Status.NONFINITE, status)
    outside = ~Q.in_domain(xi) & jnp.all(jnp.isfinite(xi))
    return jnp.where(outside & ((status == Status.OK) | (status == Status.NO_CONVERGENCE)), Status.DOMAIN,
                     status).astype(jnp.int32)
