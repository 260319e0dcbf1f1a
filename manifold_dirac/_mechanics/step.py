"""The step map: ``(system, scheme, rule)`` bound once into a pure function of the state.

:class:`StepMap` reads like (52)/(53): :meth:`StepMap.equations` is the
residual in the unknowns ``z = (xi, mu)`` (plus the state), and
:meth:`StepMap.step` solves it with the generic Newton method and advances
the state. Everything here is for **one** trajectory member; a batch is
``jax.vmap`` of it, and a failure is a status value, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._manifolds.base import tree_where
from .newton import DEFER_FLOOR, FloorTest, RoundoffFloor, SolverOptions, forward_jacobian, newton
from .rules import DiscreteLagrangian, StepContext
from .schemes import Scheme
from .small import mv
from .status import Status, classify_step
from .system import LagrangeDiracSystem
from .._types import Params, Point, Scalar

__all__ = ["CLOSED_FORM_MULTIPLIERS", "FAIL_DEFERRED", "FAIL_ENERGY", "FAIL_ITERATE", "FAIL_SOLUTION", "State",
           "StepMap", "StepRecord"]

FAIL_SOLUTION = 0
"""``State.fail_kind``: the step's converged solution failed (out of the domain, non-finite ``q`` or ``p``)."""
FAIL_ITERATE = 1
"""``State.fail_kind``: Newton stopped without a solution; ``fail_z`` is its last (finite) iterate."""
FAIL_ENERGY = 2
"""``State.fail_kind``: the energy at the stored point ``q_k`` is not finite; ``fail_z = (v_k, 0)``."""
FAIL_DEFERRED = 3
"""``State.fail_kind``: a step compiled without the round-off-floor test stopped where it would have been tested
(:data:`~manifold_dirac._mechanics.newton.DEFER_FLOOR`); status ``NO_CONVERGENCE`` until the step is solved
again with the test (:func:`~manifold_dirac._run.loop.drive` does). Never in a finished run."""

_EPS = float(np.finfo(np.float64).eps)


class State(NamedTuple):
    """The state of one member at ``t_k`` (a pytree).

    Attributes
    ----------
    q : point
        ``q_k``: an array of the manifold's point shape (float64), or a
        tuple of them on a product.
    p : array, shape=[n]
        ``p_k``, or for the ``minus`` scheme the pre-momentum ``p~_k``.
    xi, mu : array, shape=[n], [m]
        The last step's solution: Newton's start of the next step (of a
        composed step, ``xi = R_{q_{k-1}}^{-1}(q_k)`` of the whole step and
        ``mu`` the sum of its sub-steps' multipliers; its sub-steps start
        from ``history``).
    stages : array, shape=[n_stages]
        What the rule keeps of the last step's internal stages for the next
        warm start (Galerkin rules: their deviation from the straight line,
        :meth:`~manifold_dirac._mechanics.galerkin.GalerkinRule.stored_stages`);
        empty for a rule without stages.
    status : int32 array, shape=[]
        ``Status.OK`` while healthy; once failed, the member is frozen.
    fail_step : int32 array, shape=[]
        The step at which it failed (-1 while healthy).
    fail_error : array, shape=[]
        Newton's scaled residual at the failure.
    fail_z : array, shape=[n + n_stages + m]
        Where the failure happened, for its diagnosis: the unknowns
        ``z = (xi, stages, mu)`` of the failed solve (its solution, or Newton's last
        finite iterate), or ``(v_k, 0)`` for a non-finite energy at ``q_k``.
    fail_kind : int32 array, shape=[]
        :data:`FAIL_SOLUTION`, :data:`FAIL_ITERATE` or :data:`FAIL_ENERGY` (or, inside a
        run's loop only, :data:`FAIL_DEFERRED`).
    history : array, shape=[2, s, n + n_stages + m], or None
        A composed step map's (:class:`~manifold_dirac._mechanics.composition.ComposedStepMap`):
        the unknowns ``(xi, stages, mu)`` of each of its ``s`` sub-steps on the last step (row 0)
        and the step before (row 1), from which the next step's sub-steps start Newton (kept as
        they were when a member fails; before the first step zeros, not read: the first step
        starts from the state's unknowns scaled by each ``gamma_i``). ``2 s`` times the unknowns
        per member (204 numbers for ``kahan_li8`` on the rolling disk). None for a step map that
        is not composed; a state carried from another integrator is adapted by
        :meth:`StepMap.conform`.
    newton : array, shape=[N, N] or [s, N, N], or None
        With ``SolverOptions(jacobian="keep")``: the inverse of the Newton matrix the last step's
        solve used last (``N = n + n_stages + m``), one per sub-step of a composed step map, the
        next step's first matrix (:func:`~manifold_dirac._mechanics.newton.newton`'s ``kept``).
        NaN before the first step (no matrix yet: the first step evaluates it; a composed step's
        sub-step of the second half takes its mirror's,
        :func:`~manifold_dirac._mechanics.composition.sub_step_matrix`). None with the other solver
        options.

    Examples
    --------
    The per-member part of a :class:`RunState`:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> integ = md.Integrator(md.systems.pendulum(), 0.05)
    >>> st = integ.initial_state(np.array([0.5]), np.array([0.0]))
    >>> s = st.members
    >>> isinstance(s, md.State), np.asarray(s.q).tolist(), md.Status(int(s.status)).name
    (True, [0.5], 'OK')
    """

    q: Any
    p: jax.Array
    xi: jax.Array
    mu: jax.Array
    status: jax.Array
    fail_step: jax.Array
    fail_error: jax.Array
    fail_z: jax.Array
    fail_kind: jax.Array
    stages: jax.Array
    history: jax.Array | None = None
    newton: jax.Array | None = None


def conform_newton(state: State, shape: tuple[int, ...] | None) -> State:
    """``state`` with a ``State.newton`` of ``shape`` (one member): dropped for None, NaN (none kept) for a
    state without one of that shape."""
    kept = state.newton
    if shape is None:
        return state if kept is None else state._replace(newton=None)
    if kept is not None and tuple(kept.shape) == tuple(shape):
        return state
    return state._replace(newton=jnp.full(shape, jnp.nan))


class StepRecord(NamedTuple):
    """What one step computed (for one member).

    Attributes
    ----------
    p_start : array, shape=[n]
        The momentum ``p_k`` of (52)/(53) at the start of the step.
    xi, mu : array
        The step's solution (the frozen warm start for a failed member).
    error : array, shape=[]
        Newton's scaled residual at the solution.
    iterations : int32 array, shape=[]
        Newton iterations the step took.
    constraint_residual : array, shape=[]
        ``|c(xi)|_inf``, the scheme's discrete constraint at the solution.
    status : int32 array, shape=[]
        The member's status after the step.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> integ = md.Integrator(md.systems.pendulum(), 0.05)
    >>> st, rec = integ.step(integ.initial_state(np.array([0.5]), np.array([0.0])))
    >>> isinstance(rec, md.StepRecord), int(rec.iterations) >= 1, float(rec.error) < 1e-10
    (True, True, True)
    """

    p_start: jax.Array
    xi: jax.Array
    mu: jax.Array
    error: jax.Array
    iterations: jax.Array
    constraint_residual: jax.Array
    status: jax.Array


BASIS_IN_LOOP_MAX = 6
"""Largest number of forward-mode columns of a step's Newton matrix (``n + n_stages``, or ``N_z`` with fewer
than :data:`CLOSED_FORM_MULTIPLIERS` multipliers) for which :func:`~manifold_dirac.rollout` computes the
tangent basis inside the loop (:meth:`StepMap.jacobian` with ``basis_in_loop``).

Above it, the parts of the tangents that ``jax.jacfwd`` leaves constant are worth computing once per call:
measured on :func:`~manifold_dirac.integrate`'s loop with the basis inside it for every system
(``python benchmarks/all_systems.py --before DIR --label entry_check --rounds 2``,
``benchmarks/results/all_systems_entry_check.json``), per step: the heavy top (3 columns) 2.90 -> 3.02 us,
the four-bar 7.54 -> 7.95, the two-wheel cart (8) 2.34 -> 2.92, the rigid double pendulum (12) 155 -> 230.
The bundled systems' composed rollouts of ``docs/composition.md`` push 4 (the rolling disk, the sled) or 5
(the snakeboard)."""

CLOSED_FORM_MULTIPLIERS = 2
"""Multipliers from which :meth:`StepMap.jacobian` takes their columns in closed form.

Measured on whole runs, ``jax.jit(rollout)`` of 2000 steps of each constrained catalog system's own
``h`` and two composed runs, the two programs in one process alternating, fastest of 7 rounds,
pinned to one core (``python benchmarks/newton_matrix.py --runs``,
``benchmarks/results/newton_matrix_runs.md``), closed form against ``jax.jacfwd`` of the whole
residual: with one multiplier no consistent gain (µs per step: the knife edge 0.256 / 0.260, the
sled 0.681 / 0.702, the LC circuit 0.204 / 0.185, the Cartesian pendulum 0.624 / 0.804, the last two
the other way round in earlier, unrecorded runs); with two or more the four-bar 5.68 / 7.15 and the rolling ball 0.518 /
0.552, the rolling disk 0.266 / 0.256 and the two-wheel cart 5.27 / 5.05 (at these small steps their
solves mostly take no update, and the matrix is rarely evaluated); where it is evaluated at every
sub-step of a composed run, ms per call: the rolling disk's ``kahan_li8`` run for ``1e-6`` (6 steps
to ``T = 2``) 0.248 / 0.271, the snakeboard's (12 steps) 1.27 / 1.51."""


class StepMap:
    """One step of ``scheme`` with the discrete Lagrangian ``rule`` for ``system``.

    Parameters
    ----------
    system : LagrangeDiracSystem
        The system whose steps are taken.
    scheme : Scheme
        The discrete scheme ((+), (-) or symmetric).
    rule : DiscreteLagrangian
        The discrete Lagrangian (a quadrature or Galerkin rule).
    options : SolverOptions
        Newton's tolerances and iteration limit.

    Notes
    -----
    The residual (:meth:`equations`) in ``z = (xi, stages, mu)``, with
    ``q_{k+1} = R_{q_k}(xi)``::

        r1 = p_in + D1 L_d(q_k, q_{k+1}) + f^- - G(q_k) mu     (52d) / (53c)
        rs = stationarity of the action in the rule's stages   (Galerkin rules; none otherwise;
             and g at the curve's interior Lobatto points     with holonomic g, GalerkinRule (G2)-(G3))
        r2 = c(xi)                                             (52a) / (53a) / symmetric
             g(q_{k+1}) / |dg(q_k)|                            holonomic (SHAKE/RATTLE)
        p_out = D2 L_d(q_k, q_{k+1}) + f^+                     (52c) / (53d)

    with ``G`` and ``c`` from the scheme and ``D1, D2, f^-, f^+`` from the
    rule: one Newton system, its Jacobian exact (:meth:`jacobian`: autodiff, and
    the multipliers' columns in closed form).

    Examples
    --------
    An :class:`Integrator` builds one; its ``equations`` are the residual above:

    >>> import manifold_dirac as md
    >>> integ = md.Integrator(md.systems.pendulum(), 0.05, scheme="symmetric")
    >>> sm = integ.stepmap
    >>> isinstance(sm, md.StepMap), sm.scheme.name, sm.rule.name
    (True, 'symmetric', 'midpoint')
    """

    def __init__(self, system: LagrangeDiracSystem, scheme: Scheme, rule: DiscreteLagrangian,
                 options: SolverOptions):
        self.system, self.scheme, self.rule, self.options = system, scheme, rule, options
        self.n, self.m = system.dim, system.n_constraints
        self.ns = rule.n_stages(self.n, system.n_holonomic)
        self.ns_curve = rule.n_curve_stages(self.n)
        if self.ns:
            rule.order_on(system.Q)  # a manifold the rule cannot serve is refused here, with the reason

    def _key(self) -> tuple:
        return (id(self.system), self.scheme, self.rule, self.options)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StepMap) and self._key() == other._key() and self.system is other.system

    def __hash__(self) -> int:
        return hash(self._key())

    # ------------------------------------------------------------ equations
    def equations(self, z: jax.Array, q0: Any, p_in: jax.Array, t0: Any, h: Any, params: Any, u: Any = None):
        """Residual, per-equation scale and ``(q1, p_out, c(xi))`` at ``z = (xi, stages, mu)``.

        Returns
        -------
        r : array, shape=[n + n_stages + m]
        scale : array, shape=[n + n_stages + m]
        aux : (q1, p_out, constraint)
        """
        sysm, n, ns = self.system, self.n, self.ns
        xi, st, mu = z[:n], z[n:n + ns], z[n + ns:]
        ld = self.rule.evaluate(sysm, q0, xi, StepContext(h, t0, params, u, self.scheme.extra_nodes), st)
        r1 = p_in + ld.D1 + ld.f_minus + jnp.where(ld.finite, 0.0, jnp.nan)  # a NaN/inf L fails the step
        s1 = jnp.maximum(jnp.max(jnp.abs(p_in)), ld.scale)
        if self.m:
            reaction = mv(self.scheme.reaction(sysm, q0, params), mu)
            r1 = r1 - reaction
            s1 = jnp.maximum(s1, jnp.max(jnp.abs(reaction)))
            c = self.scheme.constraint_residual(sysm, q0, xi, ld, params)
        else:
            c = jnp.zeros(0)
        rs = ld.stage_residual if ns else jnp.zeros(0)
        r = jnp.concatenate([r1, rs, c])
        # momentum-like rows, then the constraint rows (node constraints g(c_i) of a Galerkin rule, c(xi))
        # a constraint row is a displacement in the chart: its scale is the step's size, and at least the
        # resolution of the points (a step from rest with g(q_k) at round-off is not a zero-scale equation)
        size = jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree.leaves(q0)]))
        sc = jnp.maximum(jnp.max(jnp.abs(xi), initial=0.0), _EPS * jnp.maximum(size, 1.0))
        scale = jnp.concatenate([jnp.full(n + self.ns_curve, s1), jnp.full(ns - self.ns_curve + self.m, sc)])
        p_out = ld.D2 + ld.f_plus
        if self.m:  # the scheme's reaction at q_(k+1), if any (the split scheme)
            p_out = self.scheme.outgoing_momentum(sysm, ld.q1, p_out, mu, params)
        return r, scale, (ld.q1, p_out, c)

    def jacobian(self, z: jax.Array, q0: Point, p_in: jax.Array, t0: Scalar, h: Scalar, params: Params,
                 u: jax.Array | None = None, basis_in_loop: bool = False) -> jax.Array:
        """The Newton matrix ``dr/dz`` of :meth:`equations` at ``z``, shape ``(N_z, N_z)``.

        The residual is linear in the multipliers ``mu``, with the columns
        ``dr/dmu = (-G(q_k), 0, 0)``: ``G`` the scheme's reaction matrix
        ``(n, m)``, which does not depend on ``z`` (the stage and constraint
        rows do not contain ``mu``). Those ``m`` columns are that matrix, and
        forward-mode autodiff (``jax.jacfwd``) gives the other ``n +
        n_stages``: ``m`` tangents fewer to push through the equations (a
        third off the rolling disk's matrix, a quarter off the snakeboard's,
        ``benchmarks/newton_matrix.py``), from :data:`CLOSED_FORM_MULTIPLIERS`
        multipliers on (with fewer, ``jax.jacfwd`` of the whole residual; so
        too a step batched with ``vmap``, whose Newton matrix comes from the
        linearization it shares with the round-off-floor test,
        :meth:`floor_test`).
        Equal to ``jax.jacfwd`` of the residual in every entry
        (``tests/mechanics/test_step_jacobian.py``). ``basis_in_loop``:
        forward mode by :func:`~manifold_dirac._mechanics.newton.forward_jacobian`
        (its basis computed with ``z``, nothing hoisted out of the loops into
        the program's entry; :func:`~manifold_dirac.rollout` for small steps,
        :data:`BASIS_IN_LOOP_MAX`) instead of ``jax.jacfwd``.

        Notes
        -----
        With the residual of (52d)/(53c) (Parks & Leok 2017),
        ``r1 = p_in + D1 L_d(q_k, R_{q_k}(xi)) + f^- - G(q_k) mu``, and the
        constraint rows ``c(xi)``: ``dr1/dmu = -G(q_k)``, ``dc/dmu = 0``.
        """
        k = self.n + self.ns

        def residual(w):
            return self.equations(w, q0, p_in, t0, h, params, u)[0]

        jac = forward_jacobian if basis_in_loop else (lambda f, x: jax.jacfwd(f)(x))
        if self.m < CLOSED_FORM_MULTIPLIERS:
            return jac(residual, z)
        head = jac(lambda w: residual(jnp.concatenate([w, z[k:]])), z[:k])
        G = self.scheme.reaction(self.system, q0, params)
        mu_columns = jnp.concatenate([-G, jnp.zeros((self.ns + self.m, self.m), G.dtype)])
        return jnp.concatenate([head, mu_columns.astype(head.dtype)], axis=1)

    def roundoff_floor(self, z: jax.Array, q0: Any, p_in: jax.Array, t0: Any, h: Any, params: Any,
                       u: Any = None, basis_in_loop: bool = False) -> jax.Array:
        """The round-off floor of each residual at ``z``, shape ``(n + m,)``.

        The step equations evaluate the user's functions at points of the
        retraction curve, which are stored to a relative precision ``eps``:
        a point at ``1e9`` is only resolved to ``1e9 eps``, and no ``xi``
        makes the residual smaller than what that rounding changes it by.
        The floor is ``|dr/d eta| (eps max|q|)``, the residual's sensitivity
        to moving the base point ``q_k`` along its frame (with ``xi`` held),
        times the resolution of the largest point coordinate (of ``q_k`` and
        ``q_{k+1}``). Newton evaluates it only when it stagnates above its
        ``rtol`` (see :func:`~manifold_dirac._mechanics.newton.newton`).
        ``basis_in_loop`` as :meth:`jacobian`'s (the basis computed with ``z``).
        """
        Q, n = self.system.Q, self.n
        q1 = Q.retract(q0, z[:n])
        size = jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree.leaves((q0, q1))]))

        def moved(eta):
            return self.equations(z, Q.retract(q0, eta), p_in, t0, h, params, u)[0]

        eta0 = jnp.zeros(n)
        dr = forward_jacobian(moved, eta0, anchor=z) if basis_in_loop else jax.jacfwd(moved)(eta0)
        return jnp.sum(jnp.abs(dr), axis=1) * (_EPS * size)

    def floor_test(self, q0: Point, p_in: jax.Array, t0: Scalar, h: Scalar, params: Params,
                   u: jax.Array | None = None) -> RoundoffFloor:
        """:meth:`roundoff_floor` in the form Newton evaluates it, from its own linearization.

        The residual with the base point moved along its frame,
        ``r(z, R_{q_k}(eta))``, and the resolution ``eps max|q|`` of ``q_k``
        and ``q_{k+1}`` (the latter from the equations' output at ``z``):
        Newton takes ``dr/d eta`` in the same forward-mode pass as its own
        matrix, so the check adds no copy of the equations to the program.
        """
        Q = self.system.Q

        def residual(z, eta):
            return self.equations(z, Q.retract(q0, eta), p_in, t0, h, params, u)[0]

        def resolution(z, aux):
            return _EPS * jnp.max(jnp.stack([jnp.max(jnp.abs(x)) for x in jax.tree.leaves((q0, aux[0]))]))

        return RoundoffFloor(residual, self.n, resolution)

    # ----------------------------------------------------------------- step
    def step(self, state: State, k: Any, t: Any, h: Any, params: Any, u: Any = None,
             axis_name: str | None = None, z0: jax.Array | None = None,
             defer_floor: bool = False) -> tuple[State, StepRecord]:
        """Solve the step ``k -> k+1`` from ``state`` and advance (a failed member stays frozen).

        ``z0``: Newton's start (default :meth:`warm_start` of ``state``; a composed step map passes its
        sub-steps' predictions).

        ``defer_floor``: for one member, the round-off-floor test left out
        (:data:`~manifold_dirac._mechanics.newton.DEFER_FLOOR`): a step that would test it fails with
        ``fail_kind`` :data:`FAIL_DEFERRED`, to be solved again with the test. A run's loop is compiled so
        (:func:`~manifold_dirac._run.loop.drive`); the same values wherever the test is not reached.

        ``axis_name``: the batch axis when the step runs under ``jax.vmap(..., axis_name=...)``
        (with ``SolverOptions(jacobian="reuse")`` Newton then branches on the whole batch, see
        :func:`~manifold_dirac._mechanics.newton.newton`). The round-off floor of Newton's stop
        (:meth:`roundoff_floor`) is, for one member, a branch of its own that only a probe trip takes, so the
        Newton matrix is ``dr/dz`` alone (17 % off a heavy-top step, ``benchmarks/batch_layout.py --floor``);
        under ``vmap`` (``axis_name`` given), where both sides of a branch run, it comes from the Newton
        linearization (:meth:`floor_test`).
        """
        sysm, n = self.system, self.n
        active = state.status == Status.OK
        z0 = self.warm_start(state) if z0 is None else z0
        floor: FloorTest
        jacobian: Callable[[jax.Array], jax.Array] | None
        if axis_name is None:  # one member: the floor in a branch taken only by a probe (a real branch), or none
            floor = DEFER_FLOOR if defer_floor else (  # deferred: left to a program that holds it
                lambda z: self.roundoff_floor(z, state.q, state.p, t, h, params, u))
            jacobian = lambda z: self.jacobian(z, state.q, state.p, t, h, params, u)  # noqa: E731
        else:  # a vmapped batch, where a branch runs for every member at every trip: from Newton's linearization
            floor, jacobian = self.floor_test(state.q, state.p, t, h, params, u), None
        res = newton(lambda z: self.equations(z, state.q, state.p, t, h, params, u), z0, self.options, active,
                     floor=floor, axis_name=axis_name, jacobian=jacobian, kept=state.newton)
        q1, p_out, c = res.aux
        xi, st, mu = res.z[:n], res.z[n:n + self.ns], res.z[n + self.ns:]
        converged = res.status == Status.OK
        status = classify_step(res.status, sysm.Q, xi, q1, p_out)
        newly_failed = active & (status != Status.OK)
        status = jnp.where(active, status, state.status)
        ok = status == Status.OK
        p_start = self.scheme.reported_momentum(sysm, state.q, state.p, mu, params)
        new = State(
            q=tree_where(ok, q1, state.q),
            p=jnp.where(ok, p_out, state.p),
            xi=jnp.where(ok, xi, state.xi),
            mu=jnp.where(ok, mu, state.mu),
            status=status,
            fail_step=jnp.where(newly_failed, jnp.asarray(k, jnp.int32), state.fail_step),
            fail_error=jnp.where(newly_failed, res.error, state.fail_error),
            fail_z=jnp.where(newly_failed, res.z, state.fail_z),
            fail_kind=jnp.where(newly_failed, jnp.where(res.deferred, FAIL_DEFERRED, jnp.where(
                converged, FAIL_SOLUTION, FAIL_ITERATE)).astype(jnp.int32), state.fail_kind),
            stages=jnp.where(ok, self.rule.stored_stages(xi, st), state.stages),
            newton=res.inverse,
        )
        record = StepRecord(
            p_start=jnp.where(active, p_start, state.p),
            xi=new.xi,
            mu=new.mu,
            error=res.error,
            iterations=res.iterations,
            constraint_residual=jnp.max(jnp.abs(c), initial=0.0),
            status=status,
        )
        return new, record

    history_shape: tuple[int, int, int] | None = None
    """The shape of one member's ``State.history`` (None: a step map that is not composed keeps none)."""

    @property
    def newton_shape(self) -> tuple[int, ...] | None:
        """The shape of one member's ``State.newton``: ``(N, N)`` with ``SolverOptions(jacobian="keep")``, else None."""
        N = self.n + self.ns + self.m
        return (N, N) if self.options.jacobian == "keep" else None

    def conform(self, state: State) -> State:
        """``state`` in this step map's form (one member; traceable): without a composed map's ``history``.

        A run or a step may continue from a state of another integrator (a
        composed one, or another composition, or other solver options): the
        parts of the state that only a step map of another kind keeps are
        dropped (a composed map's ``conform`` builds its ``history`` instead),
        and a kept Newton matrix of another shape is replaced by none (NaN:
        the next step evaluates it). A static decision: a state already in
        form passes unchanged.
        """
        if state.history is not None:
            state = state._replace(history=None)
        return conform_newton(state, self.newton_shape)

    def warm_start(self, state: State) -> jax.Array:
        """The Newton start ``z0 = (xi, stages, mu)`` of the step from ``state`` (one member)."""
        parts = [state.xi]
        if self.ns:
            parts.append(self.rule.warm_stages(state.xi, state.stages))
        return jnp.concatenate(parts + [state.mu])

    def initial(self, q0: Any, p0: jax.Array, xi0: jax.Array) -> State:
        """The state at step 0 for one member."""
        return State(
            q=q0, p=p0, xi=xi0, mu=jnp.zeros(self.m), status=jnp.int32(Status.OK),
            fail_step=jnp.int32(-1), fail_error=jnp.zeros(()), fail_z=jnp.zeros(self.n + self.ns + self.m),
            fail_kind=jnp.int32(FAIL_SOLUTION), stages=jnp.zeros(self.ns),
        )
