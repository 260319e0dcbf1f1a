"""Time stepping: the step-by-step :class:`Integrator` and :func:`integrate`.

A state is ``(t_k, q_k, p_k)`` plus the previous step's ``(xi, mu)`` as the
warm start; every array carries the batch axes ``*B`` of ``q0``, so a batch
of trajectories advances together (one vectorized Newton solve per step).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..errors import (
    ConvergenceError,
    DegenerateLagrangianWarning,
    IllPosedStepError,
    NonFiniteError,
    StepError,
)
from .discrete_lagrangians import DiscreteLagrangian, get_discrete_lagrangian
from .schemes import Scheme, StepEquations, get_scheme
from .solver import (
    FAILED_CONVERGENCE,
    FAILED_DOMAIN,
    FAILED_ILL_POSED,
    FAILED_NONFINITE,
    OK,
    SolverOptions,
    _DomainFailure,
    solve_step,
)
from .system import LagrangeDiracSystem
from .trajectory import Trajectory

__all__ = ["Integrator", "State", "StepInfo", "integrate"]


@dataclass(frozen=True)
class State:
    """The state at ``t_k``.

    Attributes
    ----------
    k : int
        Step index.
    t : float
        Time ``t_k``.
    q : point, shape=[*B, *point_shape]
    p : ndarray, shape=[*B, n]
        The momentum carried by the scheme: ``p_k``, or for ``minus`` the
        pre-momentum ``p~_k = D2 L_d(q_{k-1}, q_k)``.
    xi : ndarray, shape=[*B, n]
        Warm start for the next step (the last step's ``xi``).
    mu : ndarray, shape=[*B, m]
        Warm start for the multipliers.
    status : ndarray of int, shape=[*B]
        0 while a member is healthy; a failure code once it failed (its
        state is then frozen).
    """

    k: int
    t: float
    q: Any
    p: np.ndarray
    xi: np.ndarray
    mu: np.ndarray
    status: np.ndarray

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self.status.shape


@dataclass(frozen=True)
class StepInfo:
    """What one step computed.

    Attributes
    ----------
    p_start : ndarray, shape=[*B, n]
        The momentum ``p_k`` at the start of the step (for ``minus``
        ``p~_k + A(q_k)^T mu_k``; otherwise the state's ``p``).
    xi, mu : ndarray
        The step's solution.
    iterations : ndarray of int, shape=[*B]
    residual : ndarray, shape=[*B]
    constraint_residual : ndarray, shape=[*B]
    status : ndarray of int, shape=[*B]
    equations : StepEquations
        The step equations at the solution (``D1 L_d``, ``D2 L_d``, ...).
    messages : tuple of str
        One message per member that failed in this step.
    """

    p_start: np.ndarray
    xi: np.ndarray
    mu: np.ndarray
    iterations: np.ndarray
    residual: np.ndarray
    constraint_residual: np.ndarray
    status: np.ndarray
    equations: StepEquations
    messages: tuple[str, ...]


_HINTS = {
    FAILED_CONVERGENCE: (
        ConvergenceError,
        "Newton's method did not converge in {max_iter} iterations (residual {res:.3e}). Likely "
        "cause: the step h={h:g} is too large for the dynamics here (try a smaller h), or the "
        "Lagrangian, force or constraint is not smooth at this state; SolverOptions(max_iter=...) "
        "raises the budget.",
    ),
    FAILED_ILL_POSED: (
        IllPosedStepError,
        "the step equations are singular (condition number {cond:.3e}): they do not determine "
        "q_(k+1). For a degenerate Lagrangian the combined system (Lagrangian, constraints, "
        "interconnection) is not well posed with this discrete Lagrangian, or a constraint is "
        "redundant (rank drop).",
    ),
    FAILED_NONFINITE: (
        NonFiniteError,
        "a non-finite value (NaN/inf) appeared in the step equations (residual {res:.3e}): the "
        "Lagrangian, force or constraint returned NaN/inf, or an iterate left the retraction's "
        "domain; check those functions near this state, or reduce h={h:g}.",
    ),
    FAILED_DOMAIN: (
        ConvergenceError,
        "a Newton iterate left the domain of the inverse retraction (e.g. Cayley at a rotation by "
        "pi); the step h={h:g} is probably too large for the motion here, or use retraction='exp'.",
    ),
}


class Integrator:
    """A discrete Lagrange--Dirac integrator for one system, stepped by hand or run.

    Parameters
    ----------
    system : LagrangeDiracSystem
    h : float
        Time step (> 0).
    scheme : {"symmetric", "plus", "minus"} or Scheme
        See :mod:`manifold_dirac.mechanics.schemes`; the default is
        second order for nonholonomic systems.
    discrete_lagrangian : {"midpoint", "trapezoid", "rectangle+", "rectangle-"} or DiscreteLagrangian
    solver : SolverOptions, optional
    on_failure : {"raise", "mark"}, optional
        ``raise`` (default for a single trajectory) raises a
        :class:`~manifold_dirac.errors.StepError` subclass; ``mark`` (default
        for a batch) marks the failed member, freezes it, and goes on with
        the others.
    check_partials : bool
        At :meth:`initial_state`, compare the automatic partials with finite
        differences once and refuse a Lagrangian that is not complex-safe.

    Examples
    --------
    >>> import numpy as np
    >>> from manifold_dirac import Euclidean, LagrangeDiracSystem, Integrator
    >>> osc = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v[..., 0]**2 - 0.5 * q[..., 0]**2)
    >>> integ = Integrator(osc, h=0.01)
    >>> s = integ.initial_state(np.array([1.0]), v0=np.array([0.0]))
    >>> for _ in range(10):
    ...     s, info = integ.step(s)
    >>> round(float(s.q[0]), 6)
    0.995004
    """

    def __init__(
        self,
        system: LagrangeDiracSystem,
        h: float,
        scheme: str | Scheme = "symmetric",
        discrete_lagrangian: str | DiscreteLagrangian = "midpoint",
        solver: SolverOptions | None = None,
        on_failure: str | None = None,
        check_partials: bool = True,
    ):
        if not isinstance(system, LagrangeDiracSystem):
            raise ValueError(f"Integrator: system must be a LagrangeDiracSystem, got {type(system).__name__}")
        try:
            h = float(h)
        except (TypeError, ValueError):
            raise ValueError(f"Integrator: the step h must be a positive number, got {h!r}") from None
        if not (np.isfinite(h) and h > 0):
            raise ValueError(f"Integrator: the step h must be a positive finite number, got {h!r}")
        if on_failure not in (None, "raise", "mark"):
            raise ValueError(f"Integrator: on_failure must be 'raise' or 'mark', got {on_failure!r}")
        self.system = system
        self.h = h
        self.scheme = get_scheme(scheme)
        self.rule = get_discrete_lagrangian(discrete_lagrangian)
        self.solver = solver if solver is not None else SolverOptions()
        if not isinstance(self.solver, SolverOptions):
            raise ValueError("Integrator: solver must be a SolverOptions instance")
        self.on_failure = on_failure
        self.check_partials = check_partials
        self._checked_condition = False

    @property
    def order(self) -> int:
        """Declared order of this scheme/rule on this manifold (constrained case)."""
        return self.scheme.order_with(self.rule, self.system.Q, constrained=self._m_or_none() != 0)

    def _m_or_none(self) -> int | None:
        try:
            return self.system.n_constraints()
        except ValueError:
            return None

    def __repr__(self) -> str:
        return (
            f"Integrator({self.system!r}, h={self.h:g}, scheme={self.scheme.name!r}, "
            f"discrete_lagrangian={self.rule.name!r})"
        )

    # --------------------------------------------------------------- start
    def initial_state(
        self, q0: Any, v0: Any = None, p0: Any = None, t0: float = 0.0
    ) -> State:
        """Validate initial data and build the state at ``t0``.

        Parameters
        ----------
        q0 : point, shape=[*B, *point_shape]
        v0 : array-like, shape=[*B, n], optional
            Initial velocity (frame coordinates); must lie in ``Delta(q0)``.
            Gives ``p0 = dL/dv(q0, v0)`` and the first Newton guess ``h v0``.
        p0 : array-like, shape=[*B, n], optional
            Initial momentum; with ``v0`` it must equal ``dL/dv(q0, v0)``.
            For the ``minus`` scheme it is the pre-momentum ``p~_0``.
        t0 : float

        Raises
        ------
        ValueError
            For a point off the manifold, wrong shapes, non-finite values,
            ``v0`` outside ``Delta(q0)``, or ``p0`` inconsistent with ``v0``.
        """
        sysm, Q, n = self.system, self.system.Q, self.system.dim
        q0 = Q.check_point(q0, name="q0")
        B = Q.batch_shape(q0)
        if v0 is None and p0 is None:
            raise ValueError("initial_state: give the initial velocity v0 or the initial momentum p0")
        vv = _vector(v0, B, n, "v0") if v0 is not None else None
        pp = _vector(p0, B, n, "p0") if p0 is not None else None
        m = sysm.n_constraints(q0)
        if m:
            self._check_constraint_rank(q0, m)
        if vv is not None:
            if self.check_partials and sysm.uses_automatic_partials:
                idx = (0,) * len(B)
                sysm.check_partials(Q.index_point(q0, idx) if B else q0, vv[idx] if B else vv, rtol=1e-5)
            if m:
                A = sysm.constraint_matrix(q0)
                viol = np.max(np.abs(np.einsum("...ij,...j->...i", A, vv)), axis=-1)
                tol = 1e-9 * (1.0 + np.max(np.abs(vv), axis=-1))
                if np.any(viol > tol):
                    i = np.unravel_index(np.argmax(viol - tol), viol.shape) if viol.ndim else ()
                    raise ValueError(
                        f"v0 is not in the constraint distribution: |A(q0) v0| = {np.max(viol):.3e} "
                        f"(batch index {list(i)}); the initial velocity must satisfy A(q0) v0 = 0"
                    )
            _, pv = sysm.partials(q0, vv)
            pv = np.real(pv)
            if pp is not None:
                dev = np.max(np.abs(pp - pv))
                if dev > 1e-8 * (1.0 + np.max(np.abs(pv))):
                    raise ValueError(
                        f"p0 differs from dL/dv(q0, v0) by {dev:.3e}: give v0 or p0, or a consistent pair"
                    )
            else:
                pp = pv
            xi0 = self.h * vv
        else:
            xi0 = np.zeros((*B, n))
        if not self.rule.degenerate_safe:
            vc = vv if vv is not None else np.zeros((*B, n))
            self._warn_if_degenerate(q0, vc, np.real(sysm.partials(q0, vc)[1]))
        assert pp is not None
        return State(
            k=0, t=float(t0), q=q0, p=np.array(pp, dtype=float), xi=np.array(xi0, dtype=float),
            mu=np.zeros((*B, m)), status=np.zeros(B, dtype=int),
        )

    def velocity_from_momentum(self, q: Any, p: Any, tol: float = 1e-12, max_iter: int = 30) -> np.ndarray | None:
        """Invert the Legendre transform: ``v`` with ``dL/dv(q, v) = p``.

        Newton's method with a finite-difference Hessian of the exact
        partials. Returns ``None`` for a degenerate Lagrangian (singular
        ``d^2L/dv^2``), where ``v`` is not a function of ``(q, p)``.

        Parameters
        ----------
        q : point, shape=[*B, ...]
        p : array-like, shape=[*B, n]

        Returns
        -------
        ndarray, shape=[*B, n], or None
        """
        sysm, n = self.system, self.system.dim
        p = np.asarray(p, dtype=float)
        v = np.zeros_like(p)
        for _ in range(max_iter):
            g = np.real(sysm.partials(q, v)[1])
            r = g - p
            if np.max(np.abs(r), initial=0.0) <= tol * (1.0 + np.max(np.abs(p), initial=0.0)):
                return v
            d = 1e-6 * (1.0 + np.max(np.abs(v), initial=0.0))
            H = np.stack([(np.real(sysm.partials(q, v + d * e)[1]) - g) / d for e in np.eye(n)], -1)
            s = np.linalg.svd(H, compute_uv=False)
            if np.any(s[..., -1] <= 1e-10 * np.maximum(s[..., 0], 1e-300)):
                return None
            v = v - np.linalg.solve(H, r[..., None])[..., 0]
        return None

    def _check_constraint_rank(self, q0: Any, m: int) -> None:
        """Refuse linearly dependent constraint one-forms (a non-regular distribution)."""
        A = np.asarray(self.system.constraint_matrix(q0), dtype=float)
        if A.shape[-2] > A.shape[-1]:
            raise ValueError(
                f"the {A.shape[-2]} constraint one-forms of {self.system.name or 'this system'} on a "
                f"{A.shape[-1]}-dimensional manifold cannot be independent: the distribution is not regular"
            )
        s = np.linalg.svd(A, compute_uv=False)
        rank = np.sum(s > 1e-10 * np.maximum(s[..., :1], 1e-300), axis=-1)
        if np.any(rank < m):
            raise ValueError(
                f"the constraint one-forms of {self.system.name or 'this system'} are linearly dependent "
                f"at q0 (rank {int(np.min(rank))} < {m} rows; smallest singular value "
                f"{float(np.min(s[..., -1])):.2e}): the constraint distribution (for an interconnection "
                "Delta ∩ Sigma) is not regular there. Drop the redundant one-forms."
            )

    def _warn_if_degenerate(self, q0: Any, v0: np.ndarray, p0: np.ndarray) -> None:
        """Warn when ``d^2L/dv^2`` is singular on ``ker A(q0)`` and the rule is not degenerate-safe."""
        sysm, n = self.system, self.system.dim
        d = 1e-6 * (1.0 + np.max(np.abs(v0)))
        Hv = np.stack([(np.real(sysm.partials(q0, v0 + d * e)[1]) - p0) / d for e in np.eye(n)], -1)
        A = sysm.constraint_matrix(q0)
        if A.shape[-2]:
            # orthonormal basis of ker A
            _, s, vt = np.linalg.svd(np.broadcast_to(A, (*Hv.shape[:-2], *A.shape[-2:])))
            N = np.swapaxes(vt[..., A.shape[-2]:, :], -1, -2)
            Hv = np.swapaxes(N, -1, -2) @ Hv @ N
        if Hv.shape[-1] == 0:
            return
        sv = np.linalg.svd(Hv, compute_uv=False)
        if np.any(sv[..., -1] <= 1e-8 * np.maximum(sv[..., 0], 1e-300)):
            warnings.warn(
                f"the Lagrangian of {sysm.name or 'this system'} is degenerate on the constraint "
                f"distribution (d2L/dv2 is singular there: linear in some velocities) and the "
                f"discrete Lagrangian {self.rule.name!r} is not known to be stable for such systems "
                "(rectangle rules: singular steps; trapezoid: parasitic modes). Use "
                "discrete_lagrangian='midpoint'.",
                DegenerateLagrangianWarning,
                stacklevel=3,
            )

    # ---------------------------------------------------------------- step
    def step(self, state: State, force: Any = None, *, raise_on_failure: bool | None = None) -> tuple[State, StepInfo]:
        """Advance one step ``k -> k+1``.

        Parameters
        ----------
        state : State
        force : ndarray or callable, optional
            Overrides the system's force for this step: a covector
            ``(*B, n)`` held over the step (zero-order hold, e.g. a control
            input) or a callable ``F(t, q, v)``.

        Returns
        -------
        (State, StepInfo)

        Raises
        ------
        ConvergenceError, IllPosedStepError, NonFiniteError
            When a member fails and failures are raised (see ``on_failure``).
        """
        B = state.batch_shape
        active = state.status == OK
        check = not self._checked_condition
        try:
            sol = solve_step(
                self.scheme, self.system, self.rule, state.q, state.p, state.t, self.h,
                state.xi, state.mu, self.solver, active, force, check_condition=check,
            )
        except _DomainFailure as exc:
            raise ConvergenceError(
                f"step {state.k} (t = {state.t:g}): a Newton iterate left the domain of the inverse "
                f"retraction ({exc}); the step h={self.h:g} is probably too large",
                step=state.k, time=state.t, residual=float("inf"),
            ) from exc
        self._checked_condition = True
        new_fail = active & (sol.status != OK)
        status = np.where(new_fail, sol.status, state.status)
        messages = []
        for idx in zip(*np.nonzero(np.atleast_1d(new_fail))):
            key = tuple(int(i) for i in idx) if B else ()
            code = int(np.atleast_1d(sol.status)[idx])
            _, hint = _HINTS[code]
            msg = f"step {state.k} (t = {state.t:g})" + (f", batch member {list(key)}" if B else "") + ": " + hint.format(
                max_iter=self.solver.max_iter, res=float(np.atleast_1d(sol.residual)[idx]), h=self.h,
                cond=float(np.atleast_1d(sol.condition)[idx]),
            )
            messages.append(msg)
        raise_it = raise_on_failure if raise_on_failure is not None else (
            self.on_failure == "raise" or (self.on_failure is None and B == ())
        )
        if messages and raise_it:
            first = np.argwhere(np.atleast_1d(new_fail))[0]
            code = int(np.atleast_1d(sol.status)[tuple(first)])
            exc_type, _ = _HINTS[code]
            raise exc_type(
                messages[0], step=state.k, time=state.t, residual=float(np.atleast_1d(sol.residual)[tuple(first)])
            )
        eq = sol.equations
        keep = (status != OK)
        Q = self.system.Q
        q1 = _where_point(Q, keep, state.q, eq.q1)
        p1 = np.where(keep[..., None], state.p, eq.p_out)
        xi = np.where(keep[..., None], state.xi, sol.xi)
        mu = np.where(keep[..., None], state.mu, sol.mu)
        p_start = self.scheme.reported_momentum(self.system, state.q, state.p, mu)
        info = StepInfo(
            p_start=p_start, xi=xi, mu=mu, iterations=sol.iterations, residual=sol.residual,
            constraint_residual=np.max(np.abs(eq.r2), axis=-1, initial=0.0), status=status,
            equations=eq, messages=tuple(messages),
        )
        new = State(k=state.k + 1, t=state.t + self.h, q=q1, p=p1, xi=xi, mu=mu, status=status)
        return new, info

    # ----------------------------------------------------------------- run
    def run(
        self,
        state: State,
        n_steps: int,
        *,
        stride: int = 1,
        callback: Callable[[State, StepInfo], Any] | None = None,
        progress: bool = False,
        v0: Any = None,
    ) -> Trajectory:
        """Take ``n_steps`` steps from ``state`` and record every ``stride``-th point.

        Parameters
        ----------
        state : State
        n_steps : int
        stride : int
            Store every ``stride``-th point (and the last); memory stays
            ``O(n_steps / stride)``.
        callback : callable ``(state, info) -> bool | None``, optional
            Called after every step with the new state; returning ``False``
            stops the run.
        progress : bool
            Show a progress bar (tqdm) if the run takes more than a second.
        v0 : array-like, optional
            The initial velocity, recorded as ``v[0]`` (otherwise the forward
            difference; :func:`integrate` passes the Legendre inverse of ``p0``
            when only ``p0`` is given and ``L`` is regular).

        Returns
        -------
        Trajectory

        Raises
        ------
        StepError
            With ``.trajectory`` holding the points computed so far.
        """
        if not isinstance(n_steps, (int, np.integer)) or n_steps < 0:
            raise ValueError(f"n_steps must be a non-negative integer, got {n_steps!r}")
        if not isinstance(stride, (int, np.integer)) or stride < 1:
            raise ValueError(f"stride must be a positive integer, got {stride!r}")
        rec = _Recorder(self, state, v0)
        rec.stride = int(stride)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=n_steps, delay=1.0, unit="step", leave=False)
        start = time.perf_counter()
        k_end = state.k + n_steps
        try:
            while state.k < k_end:
                new, info = self.step(state)
                rec.point(state, info, store=(state.k - rec.k0) % stride == 0)
                state = new
                if bar is not None:
                    bar.update(1)
                if callback is not None and callback(state, info) is False:
                    break
        except StepError as exc:
            exc.trajectory = rec.finish(state, closing=None, wall=time.perf_counter() - start)
            raise
        finally:
            if bar is not None:
                bar.close()
        # closing solve: the multiplier and the forward chart difference at the last point
        try:
            _, info = self.step(state, raise_on_failure=False)
            # the closing solve only completes the record; it must not mark a member as failed
            closing = info if np.all(info.status[state.status == OK] == OK) else None
            if closing is not None:
                closing = replace(closing, status=state.status, messages=())
        except StepError:
            closing = None
        return rec.finish(state, closing=closing, wall=time.perf_counter() - start)


class _Recorder:
    """Collects stored points and steps; computes velocities and energies."""

    def __init__(self, integ: Integrator, state: State, v0: Any):
        self.integ = integ
        self.k0 = state.k
        self.prev_q: Any = None
        self.v0 = None if v0 is None else np.broadcast_to(np.asarray(v0, float), state.p.shape)
        self.stride = 1
        self.pts: dict[str, list] = {"t": [], "q": [], "p": [], "v": [], "status": []}
        self.steps: dict[str, list] = {k: [] for k in ("xi", "mu", "cres", "res", "it")}
        self.messages: list[str] = []
        self.total_iterations = 0
        self.n_taken = 0

    def _velocity(self, state: State, xi_fwd: np.ndarray | None) -> np.ndarray:
        Q, h = self.integ.system.Q, self.integ.h
        back = None if self.prev_q is None else -Q.inverse_retract(state.q, self.prev_q)
        if back is not None and xi_fwd is not None:
            return 0.5 * (xi_fwd + back) / h
        if back is None and self.v0 is not None and state.k == self.k0:
            return np.array(self.v0)
        if xi_fwd is not None:
            return xi_fwd / h
        if back is not None:
            return back / h
        # no step at all was taken (the first one failed): nothing to difference
        return np.array(self.v0) if self.v0 is not None else np.zeros_like(state.p)

    def point(self, state: State, info: StepInfo, store: bool) -> None:
        self.total_iterations += int(np.sum(info.iterations))
        self.n_taken += 1
        self.messages.extend(info.messages)
        if store:
            self._store_point(state, info.p_start, info.xi, info.status)
            for key, val in (("xi", info.xi), ("mu", info.mu), ("cres", info.constraint_residual),
                             ("res", info.residual), ("it", info.iterations)):
                self.steps[key].append(val)
        self.prev_q = state.q

    def _store_point(self, state: State, p: np.ndarray, xi_fwd: np.ndarray | None, status: np.ndarray) -> None:
        self.pts["status"].append(status)
        self.pts["t"].append(state.t)
        self.pts["q"].append(state.q)
        self.pts["p"].append(p)
        self.pts["v"].append(self._velocity(state, xi_fwd))

    def finish(self, state: State, closing: StepInfo | None, wall: float) -> Trajectory:
        integ = self.integ
        sysm, Q = integ.system, integ.system.Q
        p_last = closing.p_start if closing is not None else state.p
        xi_last = closing.xi if closing is not None else None
        self._store_point(state, p_last, xi_last, state.status if closing is None else closing.status)
        q = Q.stack_points(self.pts["q"])
        p = np.stack(self.pts["p"])
        v = np.stack(self.pts["v"])
        energy = np.real(sysm.energy(q, v, p))
        # a member frozen by a failure has no velocity (nor energy) to difference
        failed = np.stack(self.pts["status"]) != OK
        if failed.any():
            v = np.where(failed[..., None], np.nan, v)
            energy = np.where(failed, np.nan, energy)
        B = state.status.shape
        n, m = sysm.dim, state.mu.shape[-1]

        def stack(key: str, tail: tuple[int, ...], dtype: Any = float) -> np.ndarray:
            vals = self.steps[key]
            return np.stack(vals) if vals else np.zeros((0, *B, *tail), dtype=dtype)

        meta = {
            "h": integ.h,
            "scheme": integ.scheme.name,
            "discrete_lagrangian": integ.rule.name,
            "order": integ.order,
            "system": sysm.name or "unnamed",
            "manifold": repr(Q),
            "n_steps": self.n_taken,
            "stride": self.stride,
            "total_iterations": self.total_iterations,
            "wall_time": wall,
            "names": getattr(sysm, "subsystem_slices", None),
        }
        return Trajectory(
            t=np.asarray(self.pts["t"], dtype=float), q=q, p=p, v=v, energy=energy,
            xi=stack("xi", (n,)), mu=stack("mu", (m,)), constraint_residual=stack("cres", ()),
            residual=stack("res", ()), iterations=stack("it", (), int), status=state.status.copy(),
            messages=tuple(self.messages), meta=meta,
        )


def _vector(x: Any, B: tuple[int, ...], n: int, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.shape[-1:] != (n,):
        raise ValueError(f"{name}: expected frame coordinates of shape (*batch, {n}), got {a.shape}")
    try:
        a = np.broadcast_to(a, (*B, n)).copy()
    except ValueError:
        raise ValueError(f"{name}: shape {a.shape} does not match the batch shape {B} of q0") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains non-finite values")
    return a


def _where_point(Q: Any, keep: np.ndarray, old: Any, new: Any) -> Any:
    if isinstance(old, tuple):
        return tuple(_where_point(f, keep, a, b) for f, a, b in zip(Q.factors, old, new))
    k = keep.reshape(keep.shape + (1,) * len(Q.point_shape))
    return np.where(k, old, new)


def integrate(
    system: LagrangeDiracSystem,
    q0: Any,
    v0: Any = None,
    p0: Any = None,
    *,
    h: float,
    n_steps: int,
    scheme: str | Scheme = "symmetric",
    discrete_lagrangian: str | DiscreteLagrangian = "midpoint",
    t0: float = 0.0,
    stride: int = 1,
    callback: Callable[[State, StepInfo], Any] | None = None,
    progress: bool = False,
    on_failure: str | None = None,
    solver: SolverOptions | None = None,
) -> Trajectory:
    """Integrate a Lagrange--Dirac system with a discrete Lagrange--Dirac scheme.

    Parameters
    ----------
    system : LagrangeDiracSystem
    q0 : point, shape=[*B, *point_shape]
        Initial configuration; leading axes ``*B`` integrate a batch.
    v0, p0 : array-like, shape=[*B, n]
        Initial velocity and/or momentum (see :meth:`Integrator.initial_state`).
    h : float
        Time step.
    n_steps : int
    scheme : {"symmetric", "plus", "minus"}
        ``plus`` is (52), ``minus`` (53), ``symmetric`` the second-order
        scheme with the constraint at the retraction midpoint (default).
    discrete_lagrangian : {"midpoint", "trapezoid", "rectangle+", "rectangle-"}
    t0 : float
    stride : int
        Store every ``stride``-th point.
    callback, progress
        See :meth:`Integrator.run`.
    on_failure : {"raise", "mark"}, optional
        See :class:`Integrator`.
    solver : SolverOptions, optional

    Returns
    -------
    Trajectory

    Notes
    -----
    Each step solves the scheme's equations (``docs/schemes.md``) by Newton's
    method in the chart centred at ``q_k``.
    """
    integ = Integrator(system, h, scheme, discrete_lagrangian, solver, on_failure)
    state = integ.initial_state(q0, v0=v0, p0=p0, t0=t0)
    if v0 is None and not integ.scheme.carries_pre_momentum:
        # record v[0] (and so E[0]) from the Legendre transform, not a one-sided difference
        v0 = integ.velocity_from_momentum(state.q, state.p)
    return integ.run(state, n_steps, stride=stride, callback=callback, progress=progress, v0=v0)

