"""The integrator of one system: :class:`Integrator`, stepped by hand or run.

:meth:`Integrator.initial_state` checks the initial data and refuses an
ill-posed start (:mod:`.start`); :meth:`Integrator.step` takes one compiled
step (a control loop); :meth:`Integrator.run` runs the compiled loop
(:mod:`.loop`), recording what a :class:`~manifold_dirac._run.recording.Recording`
says and reporting through a :class:`~manifold_dirac._run.reports.Monitor`,
and returns a :class:`~manifold_dirac._run.trajectory.Trajectory`, raising a
failure (:mod:`.reports`) with the partial trajectory.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import NamedTuple

import jax
import numpy as np
from numpy.typing import ArrayLike

from .._mechanics.composition import ComposedStepMap, Composition, composed_order, get_composition
from .._mechanics.newton import SolverOptions
from .._mechanics.rules import QuadratureRule, get_rule
from .._mechanics.schemes import Scheme, get_scheme
from .._mechanics.status import Status
from .._mechanics.step import State, StepMap, StepRecord
from .._mechanics.system import LagrangeDiracSystem
from .._types import Params, Point
from . import ahead
from .exported import _aval
from .loop import Outcome, _build_chunk, drive
from .programs import _compiled, member_step
from .recording import Recording, _Store, assemble
from .reports import Monitor, raise_if_failed, raise_interrupted, raises, refined
from .start import build_start, check_start, unpack_values
from .state import RunState, _flatten_batch
from .trajectory import Trajectory
from .validate import _controls, _count, _finite_float, _positive_step, _refuse_complex, _vector, run_params

__all__ = ["Integrator"]

_log = logging.getLogger(__name__)


class _Start(NamedTuple):
    """The start of a run before it runs: its program, the program's arguments, the checked initial data."""

    fn: Callable
    args: tuple
    q0: Point
    vv: np.ndarray | None
    pp: np.ndarray | None
    B: tuple[int, ...]
    t0: float


def _carried(sm: StepMap | ComposedStepMap) -> dict[str, tuple[tuple[int, ...], float]]:
    """The parts of one member's state a step map carries beyond what the start program returns, ``{field:
    (shape, value at step 0)}``: a composed map's ``history`` (zeros, not read by the first step) and the kept
    Newton matrices' ``newton`` (NaN: none yet, the first step evaluates them). Added on the host
    (:meth:`Integrator._started`) and in the shapes of a loop compiled ahead (:meth:`Integrator._member_shapes`)."""
    out: dict[str, tuple[tuple[int, ...], float]] = {}
    if sm.history_shape is not None:
        out["history"] = (sm.history_shape, 0.0)
    if sm.newton_shape is not None:
        out["newton"] = (sm.newton_shape, np.nan)
    return out


def _step_program(sm: StepMap | ComposedStepMap, batched: bool) -> Callable:
    """The compiled step of :meth:`Integrator.step`.

    A state of another integrator is first put in this step map's form
    (:meth:`StepMap.conform <manifold_dirac._mechanics.step.StepMap.conform>`), then stepped.
    """
    step = member_step(sm, batched)
    conform = jax.vmap(sm.conform) if batched else sm.conform
    return jax.jit(lambda state, *args: step(conform(state), *args))


class Integrator:
    """A discrete Lagrange--Dirac integrator for one system, stepped by hand or run.

    Parameters
    ----------
    system : LagrangeDiracSystem
        The system to integrate (its manifold ``system.Q``, ``n = Q.dim``).
    h : float
        Time step (> 0); traced, so another ``h`` does not recompile.
    scheme : {"symmetric", "split", "plus", "minus"} or Scheme
        The default is second order for nonholonomic systems.
    discrete_lagrangian : str or QuadratureRule
        The quadrature of the action over a step: a registered name
        (``"midpoint"``, ``"trapezoid"``, ``"rectangle+"``, ``"rectangle-"``,
        ``"gauss4"``, ``"gauss6"``) or a rule object; ``gauss4``/``gauss6``
        are the Galerkin rules of order 4 and 6 (``docs/galerkin.md``).
    solver : SolverOptions, optional
        Newton's tolerances, iteration limit and Newton matrix option (default ``SolverOptions()``;
        with ``jacobian="keep"`` the state carries the matrices, ``State.newton``).
    on_failure : {"raise", "mark"}, optional
        ``raise`` (default for a single trajectory) raises the
        :class:`~manifold_dirac._errors.StepError` subclass of the failure with
        the partial trajectory; ``mark`` (default for a batch) marks the
        failed member, freezes it, and goes on with the others.
    composition : str, Composition or sequence of float, optional
        Each step of ``h`` composed of sub-steps ``gamma_i h`` of a
        self-adjoint scheme (:mod:`~manifold_dirac._mechanics.composition`).

    Examples
    --------
    Step by step (a control loop), then a run from where the steps ended:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> pendulum = md.systems.pendulum()
    >>> integ = md.Integrator(pendulum, h=0.05)
    >>> state = integ.initial_state(np.array([0.5]), v0=np.array([0.0]))
    >>> for k in range(3):
    ...     state, record = integ.step(state, u=np.array([0.1]))   # a control torque
    >>> state.k
    3
    >>> tr = integ.run(state, 10)
    >>> tr.q.shape, tr.t[-1].round(2)
    ((11, 1), np.float64(0.65))
    """

    def __init__(
        self,
        system: LagrangeDiracSystem,
        h: float,
        scheme: str | Scheme = "symmetric",
        discrete_lagrangian: str | QuadratureRule = "midpoint",
        solver: SolverOptions | None = None,
        on_failure: str | None = None,
        composition: str | Composition | Sequence[float] | None = None,
    ):
        if not isinstance(system, LagrangeDiracSystem):
            raise TypeError(f"Integrator: system must be a LagrangeDiracSystem, got {type(system).__name__}")
        self.h = _positive_step(h)
        if on_failure not in (None, "raise", "mark"):
            raise ValueError(f"Integrator: on_failure must be 'raise' or 'mark', got {on_failure!r}")
        solver = SolverOptions() if solver is None else solver
        if not isinstance(solver, SolverOptions):
            raise TypeError(f"Integrator: solver must be a SolverOptions instance, got {type(solver).__name__}")
        self.system = system
        self.composition = None if composition is None else get_composition(composition)
        self.scheme = get_scheme(scheme)
        self.rule = get_rule(discrete_lagrangian)
        self.solver = solver
        self.on_failure = on_failure
        self.stepmap = StepMap(system, self.scheme, self.rule, solver)
        if self.composition is not None:  # refuses a base that is not self-adjoint, with the reason
            self.stepmap = ComposedStepMap(self.stepmap, self.composition)
        self._params = system.params  # the parameters of the last call (what a failure is diagnosed with)

    def _use_params(self, params: Params, where: str) -> Params:
        """The parameters of a call (``system.params`` when None), checked; kept for diagnosing a failure."""
        self._params = run_params(self.system, params, where)
        return self._params

    @property
    def order(self) -> int:
        """Declared order of this scheme and rule on this retraction (constrained or not), and composition."""
        o = self.scheme.order_with(self.rule, self.system.Q, constrained=self.system.n_one_forms > 0)
        return o if self.composition is None else composed_order(self.composition, o)

    def __repr__(self) -> str:
        comp = "" if self.composition is None else f", composition={self.composition.name!r}"
        return (f"Integrator({self.system!r}, h={self.h:g}, scheme={self.scheme.name!r}, "
                f"discrete_lagrangian={self.rule.name!r}{comp})")

    # --------------------------------------------------------------- start
    def initial_state(self, q0: Point, v0: ArrayLike | None = None, p0: ArrayLike | None = None,
                      t0: float = 0.0, *, params: Params = None) -> RunState:
        """Validate initial data (eagerly) and build the state at ``t0``.

        Parameters
        ----------
        q0 : point, shape=[*B, *point_shape]
        v0 : array-like, shape=[*B, n], optional
            Initial velocity in frame coordinates; must lie in ``Delta(q0)``.
        p0 : array-like, shape=[*B, n], optional
            Initial momentum; with ``v0`` it must equal ``dL/dv(q0, v0)``.
            For the ``minus`` scheme it is the pre-momentum ``p~_0``.
        t0 : float
            The time of the initial data (``t_k = t0 + k h``).
        params : pytree, optional
            The system's parameters for this call (the momentum ``dL/dv(q0, v0)``
            and the constraint ``A(q0)`` are evaluated with them); default
            ``system.params``. Same structure and leaf shapes as
            ``system.params``, real finite values.

        Returns
        -------
        RunState
            The state at step 0, for :meth:`run` or :meth:`step`.

        Raises
        ------
        ValueError, TypeError
            For a point off the manifold, wrong shapes or types, non-finite
            values, ``v0`` outside ``Delta(q0)`` or ``p0`` inconsistent with ``v0``.
        """
        return self._started(self._start(q0, v0, p0, t0, params))

    def _start(self, q0: Point, v0: ArrayLike | None, p0: ArrayLike | None, t0: float, params: Params) -> _Start:
        """The initial data checked on the host, with the start program and its arguments (nothing compiled)."""
        Q, n = self.system.Q, self.system.dim
        t0 = _finite_float(t0, "t0")
        _refuse_complex(q0, "q0")
        q0 = Q._check_point_host(q0, name="q0")  # numpy: the start program takes it as it is
        B = Q.batch_shape(q0)
        if v0 is None and p0 is None:
            raise ValueError("initial_state: give the initial velocity v0 or the initial momentum p0")
        vv = _vector(v0, B, n, "v0") if v0 is not None else None
        pp = _vector(p0, B, n, "p0") if p0 is not None else None
        nb = len(B)
        check_degenerate = not self.rule.degenerate_safe
        fn = _compiled(self.stepmap, ("start", nb, vv is not None, check_degenerate),
                       lambda: build_start(self.stepmap, nb, vv is not None, check_degenerate))
        zeros = np.zeros((*B, n))
        params = self._use_params(params, "initial_state")
        args = (q0, zeros if vv is None else vv, zeros if pp is None else pp, np.float64(self.h), np.float64(t0),
                params)
        return _Start(fn, args, q0, vv, pp, B, t0)

    def _started(self, start: _Start) -> RunState:
        """The start program run and its values checked on the host: the state at ``t0``."""
        fn, q0, vv, pp, B = start.fn, start.q0, start.vv, start.pp, start.B
        members, values = fn(*start.args)
        # the values checked on the host, in one transfer
        spec = fn.spec  # type: ignore[attr-defined]  # set by build_start
        v_legendre = check_start(self.stepmap, unpack_values(np.asarray(values), spec), q0, vv, pp, B)
        batch = np.shape(members.p)[:-1]
        members = members._replace(**{name: np.full((*batch, *shape), fill)
                                      for name, (shape, fill) in _carried(self.stepmap).items()})
        return RunState(k=0, t0=start.t0, members=members, batch_shape=B, q_prev=None,
                        v_init=None if vv is None else _flatten_batch(vv, len(B)), v_legendre=v_legendre)

    def _loop_ahead(self, start: _Start, n_steps: int, controls: ArrayLike | None, params: Params) -> None:
        """Compile the loop of :meth:`run` from ``start`` in the background, if it is new (:mod:`.ahead`).

        Its arguments are those :func:`~.loop.drive` passes: the state at
        ``t0`` (its shapes without tracing the start: :meth:`_member_shapes`), the previous point
        (``q0``), the counts, the initial velocity, ``(t0, h)``, the
        parameters and the controls. Any failure leaves the loop to
        :meth:`run`, which compiles it and raises what it would have raised.
        """
        nb = len(start.B)
        fn = self._chunk_program(nb, controls is None)
        if fn._cache_size() or ahead.pending(fn) or not ahead.enabled():  # type: ignore[attr-defined]
            return  # compiled already (for some shapes), or compiling
        try:
            controls_j = _controls(controls, n_steps, start.B, self.system.dim)
            members = self._member_shapes(start)
            f64 = np.dtype(np.float64)
            args = (members, members.q, np.zeros(6, np.int32), jax.ShapeDtypeStruct(members.p.shape, f64),
                    np.zeros(2), self._use_params(params, "Integrator.run"),
                    None if controls_j is None else jax.ShapeDtypeStruct(np.shape(controls_j), f64))
            ahead.compile_in_background(fn, args)
        except Exception as exc:  # noqa: BLE001  (the run compiles its loop itself and raises what is wrong)
            _log.debug("the loop was not compiled ahead: %s", exc)

    def _member_shapes(self, start: _Start) -> State:
        """The shapes of the state at ``t0`` that the start program returns, without tracing the start.

        :meth:`StepMap.initial <manifold_dirac._mechanics.step.StepMap.initial>`
        of one member (a trace of a few constants), its batch axes flattened
        to one as the start flattens them, with a composed map's history and the kept Newton
        matrices' place as :meth:`_started` adds them. A mismatch would only make the
        run compile its loop itself (``tests/test_compile_ahead.py`` counts).
        """
        nb, n = len(start.B), self.system.dim

        def member(a: object) -> jax.ShapeDtypeStruct:  # one member's point: its type as a call would see it
            shape, dtype, weak = _aval(a)
            return jax.ShapeDtypeStruct(shape[nb:], np.dtype(dtype), weak_type=weak)

        q1 = jax.tree.map(member, start.q0)
        vec = jax.ShapeDtypeStruct((n,), np.dtype(np.float64))
        one = jax.eval_shape(self.stepmap.initial, q1, vec, vec)
        one = one._replace(**{name: jax.ShapeDtypeStruct(shape, np.dtype(np.float64))
                              for name, (shape, _) in _carried(self.stepmap).items()})
        if not nb:
            return one
        size = int(np.prod(start.B))
        return jax.tree.map(lambda s: jax.ShapeDtypeStruct((size, *s.shape), s.dtype, weak_type=s.weak_type), one)

    def _chunk_program(self, nb: int, no_controls: bool, floor: bool = False) -> Callable:
        """The compiled loop of :meth:`run`; without the round-off-floor test unless ``floor`` (:func:`.loop.drive`)."""
        sm = self.stepmap
        kind = ("chunk_floor" if floor else "chunk", bool(nb), no_controls)
        return _compiled(sm, kind, lambda: _build_chunk(sm, bool(nb), defer_floor=not floor))

    # ---------------------------------------------------------------- step
    def step(self, state: RunState, u: ArrayLike | None = None, *,
             params: Params = None) -> tuple[RunState, StepRecord]:
        """Advance one step ``k -> k+1`` (compiled; for control loops).

        Parameters
        ----------
        state : RunState
        u : array-like, shape=[*B, n], optional
            A control covector added to the force, held over the step.
        params : pytree, optional
            The system's parameters for this step (default ``system.params``;
            see :meth:`run`).

        Returns
        -------
        state : RunState
            The state at step ``k + 1``.
        record : StepRecord
            The step's Newton record (residual, iterations, status).

        Raises
        ------
        StepError
            When a member fails and failures are raised (see ``on_failure``).
        """
        if not isinstance(state, RunState):
            raise TypeError(f"Integrator.step: state must be a RunState (from Integrator.initial_state), "
                            f"got {type(state).__name__}")
        B = state.batch_shape
        batched = bool(B)
        sm = self.stepmap

        fn = _compiled(sm, ("step", batched, u is None), lambda: _step_program(sm, batched))
        uu = None if u is None else _flatten_batch(_vector(u, B, self.system.dim, "u"), len(B))
        h = np.float64(self.h)
        params = self._use_params(params, "Integrator.step")
        new, rec = fn(state.members, np.int32(state.k), np.float64(state.t0 + state.k * self.h), h,
                      params, uu)
        out = RunState(state.k + 1, state.t0, new, B, state.members.q, state.v_init)
        raise_if_failed(self, out, partial=None)
        return out, rec

    # ----------------------------------------------------------------- run
    def run(self, state: RunState, n_steps: int, *, stride: int = 1, controls: ArrayLike | None = None,
            progress: bool = False, callback: Callable[[RunState], object] | None = None,
            params: Params = None) -> Trajectory:
        """Take ``n_steps`` steps from ``state`` and record every ``stride``-th point (and the last).

        Parameters
        ----------
        state : RunState
        n_steps : int
        stride : int
            Store every ``stride``-th point; memory stays ``O(n_steps / stride)``.
        controls : array-like, shape=[n_steps, *B, n], optional
            Control covectors added to the force, one per step (zero-order hold).
        progress : bool
            Show a progress bar (tqdm) if the run takes more than a second.
        callback : callable ``(state) -> bool | None``, optional
            Called on the host after every compiled chunk (``CHUNK * stride``
            steps), the last one included (a run shorter than one chunk calls
            it once, at its end), with the current :class:`RunState`;
            returning ``False`` stops the run there: one closing point
            records that state, so the trajectory ends at ``state.k``. It is
            not called once a failure ends the run. (A per-step Python
            callback would defeat the compiled loop: step by step, use
            :meth:`step`.)
        params : pytree, optional
            The system's parameters for this run, overriding
            ``system.params`` (which stays unchanged). They are an argument
            of the compiled loop, so new values do not recompile; they must
            have the structure and leaf shapes of ``system.params`` (real,
            finite values), and the system must have been built with
            ``params`` (its functions take them as their last argument).

        Returns
        -------
        Trajectory

        Raises
        ------
        StepError
            With ``.trajectory`` holding the points computed so far.
        RunInterrupted
            On Ctrl-C (or a ``KeyboardInterrupt`` from the callback), with
            ``.trajectory`` holding the points computed so far, status
            ``INTERRUPTED`` for the members that were still running.
        Exception
            Any other exception raised by the callback (or on the host between
            chunks) is re-raised as it is, with the same ``.trajectory``
            attached and a note saying where the run stopped: no work is lost.
        """
        if not isinstance(state, RunState):
            raise TypeError(f"Integrator.run: state must be a RunState (from Integrator.initial_state), "
                            f"got {type(state).__name__}")
        n_steps = _count(n_steps, "n_steps", minimum=0)
        stride = _count(stride, "stride", minimum=1)
        B, nb = state.batch_shape, len(state.batch_shape)
        sm, sysm, h = self.stepmap, self.system, self.h
        n = sysm.dim
        if callback is not None and not callable(callback):
            raise TypeError(f"Integrator.run: callback must be callable (state) -> bool | None, got {callback!r}")
        params = self._use_params(params, "Integrator.run")
        controls_j = _controls(controls, n_steps, B, n)
        fn = self._chunk_program(nb, controls is None)
        recording = Recording(stride, n_steps)
        store = recording.store(fn.spec)  # type: ignore[attr-defined]  # the jitted loop's recording layout
        # a loop compiled in the background during the start (integrate): its first call waits for it
        out = drive(ahead.waiting(fn), state, recording, store, Monitor(n_steps, progress, callback),
                    raises(self.on_failure, B), h, params, controls_j,
                    with_floor=lambda: self._chunk_program(nb, controls is None, floor=True))
        final = out.final
        tr = self._assemble(store, out, stride)
        if out.interrupted:
            raise_interrupted(final, h, tr, out.error)
        if tr is None:  # pragma: no cover - only a run interrupted before its first chunk stores no point
            raise RuntimeError("Integrator.run: a run that was not interrupted stored no point (a bug: please report)")
        raise_if_failed(self, final, partial=tr)
        return tr

    def _assemble(self, store: _Store, out: Outcome, stride: int) -> Trajectory | None:
        """The trajectory of a run that ended at ``out`` (None if no point was stored)."""
        if store.arrays is None:  # interrupted before the first chunk came back
            return None
        final, sysm = out.final, self.system
        B = final.batch_shape
        meta = {
            "h": self.h, "scheme": self.scheme.name, "discrete_lagrangian": self.rule.name, "order": self.order,
            "composition": None if self.composition is None else self.composition.name,
            "system": sysm.name or "unnamed", "manifold": repr(sysm.Q), "n_steps": final.k, "stride": stride,
            "total_iterations": 0, "wall_time": out.wall,
            "names": getattr(sysm, "subsystem_slices", None), "interrupted": out.interrupted,
            "solver_rtol": self.solver.rtol,
        }
        status = np.asarray(final.members.status).reshape(B) if B else np.asarray(final.members.status)
        status, messages = refined(self, final, status)
        if out.interrupted:
            status = np.where(status == Status.OK, int(Status.INTERRUPTED), status)
        return assemble(store, out.n_slots, final, self.h, meta, status, messages,
                        cut_at_failure=raises(self.on_failure, B))
