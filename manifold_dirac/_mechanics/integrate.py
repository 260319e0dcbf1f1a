"""Time stepping: the compiled trajectory loop, :class:`Integrator` and :func:`integrate`.

A run is a sequence of compiled *chunks*: each chunk is one ``lax.scan``
over ``CHUNK`` stored points, each stored point followed by ``stride - 1``
unstored steps (an inner ``scan``), so memory is ``O(n_steps / stride)`` and
nothing between stored points is materialized. ``h``, the initial data, the
parameters and the step count are traced: changing them does not recompile.
Between chunks the host copies the stored points out (numpy), which is where
a run can be interrupted without losing what it computed, report progress,
and stop early once every member has failed.

Batches are ``jax.vmap`` of the one-member step map; the step index is shared
by all members (unbatched), so the ``lax.cond`` that skips slots past the
end stays a real branch under ``vmap``.
"""

from __future__ import annotations

import dataclasses
import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import DegenerateLagrangianWarning, IllPosedSystemError, RunInterrupted, StepError
from .._manifolds.base import tree_where
from . import compile_cache
from .newton import SolverOptions
from .rules import QuadratureRule, get_rule
from .composition import ComposedStepMap, Composition, composed_order, get_composition
from .schemes import Scheme, get_scheme
from .status import Status
from .step import FAIL_ENERGY, FAIL_ITERATE, State, StepMap, StepRecord
from .system import LagrangeDiracSystem, over_batch
from .trajectory import Trajectory

__all__ = ["CHUNK", "Integrator", "RunState", "integrate"]

CHUNK = 256
"""Stored points per compiled chunk (a fixed shape: one compile serves every run length)."""


class Point(NamedTuple):
    """One stored point of one member (inside the compiled loop)."""

    q: Any
    p: jax.Array
    v: jax.Array
    energy: jax.Array
    status: jax.Array
    slip: jax.Array
    holonomic_violation: jax.Array


@dataclass
class RunState:
    """The state of a (batch of) trajectories between steps, on the host side.

    Attributes
    ----------
    k : int
        Step index.
    t0 : float
        Time at step 0 (``t_k = t0 + k h``).
    members : State
        The per-member state, batch axis flattened to one leading axis (or none).
    batch_shape : tuple of int
        The leading batch axes ``B`` of the run (``()`` for one trajectory).
    q_prev : point or None
        ``q_{k-1}`` (for the central velocity at ``q_k``).
    v_init : array or None
        The velocity recorded at step 0 (given ``v0``, or the Legendre inverse of ``p0``).
    v_legendre : array or None
        For a start from ``p0`` alone: the velocity ``v in Delta(q0)`` with
        ``dL/dv(q0, v) - p0 in Delta°(q0)`` (None where it is not unique).
    """

    k: int
    t0: float
    members: State
    batch_shape: tuple[int, ...]
    q_prev: Any = None
    v_init: Any = None
    v_legendre: Any = None

    @property
    def q(self) -> Any:
        return _unflatten_batch(self.members.q, self.batch_shape)

    @property
    def status(self) -> np.ndarray:
        return np.asarray(self.members.status).reshape(self.batch_shape)


def _unflatten_batch(x: Any, B: tuple[int, ...]) -> Any:
    return jax.tree.map(lambda a: jnp.reshape(a, (*B, *jnp.shape(a)[1 if B else 0:])), x)


def _flatten_batch(x: Any, nb: int) -> Any:
    if nb == 0:
        return x
    # numpy stays numpy (an eager JAX reshape would compile a program of its own)
    return jax.tree.map(lambda a: a.reshape((int(np.prod(np.shape(a)[:nb])), *np.shape(a)[nb:])), x)


# ---------------------------------------------------------------- compiled
MEMBERS = "members"
"""Name of the batch axis of a batched run (``vmap``), used by Newton to branch on the whole batch."""


def compiled_functions(system: LagrangeDiracSystem) -> dict:
    """The compiled programs that serve ``system`` (key: scheme, rule, options, kind).

    They live in one bounded, process-wide table keyed by what the system
    computes (:mod:`~manifold_dirac._mechanics.compile_cache`): a system built
    again from the same functions shares them.
    """
    sk = compile_cache.structure_key(system)
    return {k[1:]: fn for k, fn in compile_cache.entries() if k[0] == sk}


def _compiled(sm: StepMap, kind: Any, build: Callable[[], Callable]) -> Callable:
    """One compiled program per (system structure, scheme, rule, options, composition, kind)."""
    key = (compile_cache.structure_key(sm.system), sm.scheme, sm.rule, sm.options,
           getattr(sm, "composition", None), kind)
    return compile_cache.cached(key, build)


def _member_point(sm: StepMap, state: State, rec: StepRecord, q_prev: Any, have_prev: Any, v_init: Any,
                  use_v_init: Any, closing: Any, h: Any, params: Any) -> Point:
    """The stored point at ``q_k``: momentum, velocity, energy, status.

    The velocity is the central difference
    ``(R_{q_k}^{-1}(q_{k+1}) - R_{q_k}^{-1}(q_{k-1}))/(2h)`` (second order),
    or, for a rule of order above 2 (:func:`_legendre_reported`), the
    Legendre inverse of the reported momentum ``p_k``:
    ``dL/dv(q_k, v_k) = p_k + C(q_k)^T lam``, ``C(q_k) v_k = 0`` with
    ``C = [A; dg]``, solved by :data:`_REPORTED_NEWTON` Newton iterations
    from the central difference. The momentum of a variational integrator
    is accurate to the rule's order, so this velocity (and the energy
    ``<p_k, v_k> - L(q_k, v_k) = H(q_k, p_k)``) is too. Where the Legendre
    map is not invertible (``d2L/dv2`` singular on ``ker C``: a degenerate
    Lagrangian) or the solve misses, the central difference is kept.
    ``slip`` is measured at the central difference in either case (the
    motion's own slip; the Legendre velocity lies in ``ker C`` by
    construction).
    """
    Q = sm.system.Q
    fwd_ok = rec.status == Status.OK
    back = -Q.inverse_retract(state.q, q_prev)
    fwd = rec.xi
    v = jnp.where(
        have_prev,
        jnp.where(fwd_ok, 0.5 * (fwd + back) / h, back / h),
        jnp.where(use_v_init & jnp.all(jnp.isfinite(v_init)), v_init, fwd / h),
    )
    status = jnp.where(closing, state.status, rec.status)
    failed = status != Status.OK
    p = rec.p_start
    if sm.system.n_holonomic:  # the RATTLE projection of the reported velocity and momentum onto dg(q_k) v = 0
        v, p = sm.system.holonomic_projection(state.q, v, p, params)
        p = jnp.where(failed, rec.p_start, p)
    v = jnp.where(failed, jnp.nan, v)
    # the slip is the motion's own (at the central difference): the Legendre velocity is in ker C by construction
    slip, g_violation = sm.system.constraint_violation(state.q, v, params)
    if _legendre_reported(sm):
        v = jnp.where(failed, jnp.nan, _reported_legendre_velocity(sm.system, state.q, p, v, params))
    energy = jnp.where(failed, jnp.nan, sm.system.energy(state.q, v, p, params))
    return Point(state.q, p, v, energy, status, slip, g_violation)


def _legendre_reported(sm: StepMap) -> bool:
    """Whether the reported velocity is the Legendre inverse of ``p_k`` (rules of order above 2).

    The second-order rules keep the central difference: it is as accurate
    as their momenta (both second order), costs nothing, and is what their
    recorded results were computed with. A composition of order above 2
    (:class:`~manifold_dirac._mechanics.composition.ComposedStepMap`) reports
    the Legendre velocity too.
    """
    comp = getattr(sm, "composition", None)
    return int(getattr(sm.rule, "order", 2) or 2) > 2 or (comp is not None and comp.order > 2)


def _reported_legendre_velocity(sysm: LagrangeDiracSystem, q: Any, p: jax.Array, v_central: jax.Array,
                                params: Any) -> jax.Array:
    """``v`` with ``dL/dv(q, v) = p + C(q)^T lam``, ``C(q) v = 0``; ``v_central`` where that fails (traceable).

    Newton on the bordered system from ``(v_central, 0)`` (the central
    difference is within ``O(h^2)``, so a few iterations reach round-off;
    one suffices for ``L`` quadratic in ``v``) by :func:`_legendre_solve`,
    which also reports the residual and the regularity of ``d2L/dv2`` on
    ``ker C(q)``.
    """
    n, c = sysm.dim, sysm.n_constraints
    C = sysm.constraint_matrix(q, params) if c else None
    N = jnp.linalg.svd(C)[2][c:].T if c else jnp.eye(n)
    start = jnp.where(jnp.all(jnp.isfinite(v_central)), v_central, jnp.zeros_like(v_central))
    sol = _legendre_solve(sysm, q, p, C, N, params, v_start=start, iterations=_REPORTED_NEWTON)
    ok = (sol["residual"] <= 1e-9 * jnp.maximum(sol["scale"], 1e-300)) & (sol["degeneracy"] > _DEGENERATE)
    ok = ok & jnp.all(jnp.isfinite(sol["v"]))
    return jnp.where(ok, sol["v"], v_central)


def _energy_failure(st: State, k: Any, v: jax.Array, error: jax.Array) -> State:
    """``st`` frozen with status ``NONFINITE``: the energy at its stored point ``q_k`` is not finite."""
    return st._replace(
        status=jnp.full_like(st.status, Status.NONFINITE),
        fail_step=jnp.full_like(st.fail_step, k),
        fail_error=error,
        fail_z=jnp.concatenate([v, jnp.zeros((*jnp.shape(v)[:-1], st.fail_z.shape[-1] - v.shape[-1]))], axis=-1),
        fail_kind=jnp.full_like(st.fail_kind, FAIL_ENERGY),
    )


def _pack(tree: Any, spec: list, batched: bool) -> jax.Array:
    """All leaves of ``tree`` raveled into one float64 vector per member (``(B, F)`` if batched).

    One output array per stored point instead of one per field: on a CPU,
    each separate output of a ``scan`` costs a dynamic update per iteration.
    ``spec`` receives ``(treedef, [(shape, dtype), ...])`` at trace time.
    """
    leaves, treedef = jax.tree.flatten(tree)
    lead = 1 if batched else 0
    if not spec:
        spec.append((treedef, [(tuple(x.shape[lead:]), x.dtype) for x in leaves]))
    if batched:
        return jnp.concatenate([jnp.reshape(x, (x.shape[0], -1)).astype(jnp.float64) for x in leaves], axis=-1)
    return jnp.concatenate([jnp.ravel(x).astype(jnp.float64) for x in leaves])


def _unpack(flat: np.ndarray, spec: tuple) -> Any:
    """Inverse of :func:`_pack` on host arrays ``(..., F)``."""
    treedef, shapes = spec
    out, i = [], 0
    for shape, dtype in shapes:
        size = int(np.prod(shape))
        out.append(flat[..., i:i + size].reshape(*flat.shape[:-1], *shape).astype(dtype, copy=False))
        i += size
    return jax.tree.unflatten(treedef, out)


class _Store:
    """The stored points on the host: one array per result field, filled chunk by chunk.

    The arrays are allocated once, at full length, when the first chunk
    arrives, and each chunk's packed output is copied into them and dropped:
    the results are held once (no list of chunks, no concatenation, no
    unpacking copy), so storing every point of a long run costs what the
    :class:`Trajectory` holds plus one chunk.
    """

    def __init__(self, n_slots: int, spec: list):
        self.n_slots, self.spec, self.filled, self.arrays = n_slots, spec, 0, None

    def add(self, out: Any) -> None:
        info, packed = out
        m = min(len(info), self.n_slots - self.filled)
        if m <= 0:
            return
        pts, recs = _unpack(np.asarray(packed[:m]), self.spec[0])
        parts = {"t": info[:m, 0], "is_step": info[:m, 1] > 0, "q": pts.q, "p": pts.p, "v": pts.v,
                 "energy": pts.energy, "slip": pts.slip, "holonomic_violation": pts.holonomic_violation,
                 "xi": recs.xi, "mu": recs.mu,
                 "constraint_residual": recs.constraint_residual, "error": recs.error,
                 "iterations": recs.iterations}
        if self.arrays is None:
            self.arrays = jax.tree.map(lambda a: np.empty((self.n_slots, *a.shape[1:]), a.dtype), parts)
        lo, hi = self.filled, self.filled + m

        def put(dst: np.ndarray, src: np.ndarray) -> None:
            dst[lo:hi] = src

        jax.tree.map(put, self.arrays, parts)
        self.filled = hi


def _build_chunk(sm: StepMap, batched: bool) -> Callable:
    """The compiled chunk: ``CHUNK`` slots, each one stored point and up to ``stride`` steps.

    ``stride`` is an argument (traced): another stride does not recompile.
    Inside a slot the steps are a loop with a traced trip count whose first
    iteration keeps its step record; the stored point of the slot is
    computed after that loop from the slot's first state and that record, so
    the step map and the point appear once each in the program. The last
    live slot takes only the steps left (none are computed and discarded),
    and at least one: the point at ``q_k`` needs the step from ``q_k`` (its
    central velocity), which is taken but not kept at the end of the run.
    The slots are a loop over the live slots only (``fori_loop`` with a
    traced trip count, writing each slot's output in place): a short run
    does not pay for a whole chunk. Rows of the output past the live slots
    are left zero and never read.
    """
    member_step = sm.step
    member_point = _member_point
    if batched:
        member_step = jax.vmap(functools.partial(sm.step, axis_name=MEMBERS), in_axes=(0, None, None, None, None, 0),
                               axis_name=MEMBERS)
        member_point = jax.vmap(_member_point, in_axes=(None, 0, 0, 0, None, 0, None, None, None, None))
    spec: list = []

    def chunk(members, q_prev, have_prev, v_init, k0, slot0, n_slots, n_total, stride, t0, h, params, controls):
        def control(k):
            return None if controls is None else controls[..., jnp.clip(k, 0, controls.shape[-2] - 1), :]

        def run_slot(carry):
            st0, qp0, hp, k = carry
            k_end = jnp.minimum(k + stride, n_total)
            n_sub = jnp.maximum(k_end - k, 1)  # the steps of this slot; one (not kept) at the end of the run

            def sub(i, c):
                st, qp, kk, rec0 = c
                new, rec = member_step(st, kk, t0 + kk * h, h, params, control(kk))
                rec0 = jax.tree.map(lambda a, b: jnp.where(i == 0, a, b), rec, rec0)  # i unbatched: one select
                advance = kk < k_end
                return tree_where(advance, new, st), tree_where(advance, st.q, qp), kk + advance, rec0

            rec_init = jax.eval_shape(lambda: member_step(st0, k, t0, h, params, control(k))[1])
            rec_init = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), rec_init)
            st, qp, k2, rec = jax.lax.fori_loop(0, n_sub, sub, (st0, qp0, k, rec_init))
            pt = member_point(sm, st0, rec, qp0, hp, v_init, k == 0, k >= n_total, h, params)
            # a non-finite energy at a stored point of a healthy member is a failure at that point:
            # the member is frozen at q_k (the slot's steps from it are discarded), never ok with a NaN energy
            bad = (pt.status == Status.OK) & ~jnp.isfinite(pt.energy)
            st = tree_where(bad, _energy_failure(st0, k, pt.v, rec.error), st)
            qp = tree_where(bad, st0.q, qp)
            pt = pt._replace(status=jnp.where(bad, Status.NONFINITE, pt.status).astype(pt.status.dtype))
            slot_info = jnp.stack([t0 + k * h, (k < n_total).astype(jnp.float64), 1.0])
            return (st, qp, hp | (k2 > k), k2), (slot_info, _pack((pt, rec), spec, batched))

        carry0 = (members, q_prev, have_prev, k0)
        # the live slots only (a loop with a traced trip count): a short run does not pay for a whole chunk
        shapes = jax.eval_shape(lambda c: run_slot(c)[1], carry0)
        bufs0 = jax.tree.map(lambda x: jnp.zeros((CHUNK, *x.shape), x.dtype), shapes)

        def slot(j, c):
            carry, bufs = c
            carry, out = run_slot(carry)
            return carry, jax.tree.map(lambda b, o: jax.lax.dynamic_update_index_in_dim(b, o, j, 0), bufs, out)

        n_live = jnp.clip(n_slots - slot0, 0, CHUNK)
        return jax.lax.fori_loop(0, n_live, slot, (carry0, bufs0))

    compiled = jax.jit(chunk)
    compiled.spec = spec  # type: ignore[attr-defined]  # filled at the first trace
    return compiled


# -------------------------------------------------------------- integrator
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
        Newton's tolerances and iteration limit (default ``SolverOptions()``).
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
        composition: str | Composition | Any = None,
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

    def _use_params(self, params: Any, where: str) -> Any:
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
    def initial_state(self, q0: Any, v0: Any = None, p0: Any = None, t0: float = 0.0, *,
                      params: Any = None) -> RunState:
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
        sysm, Q, n = self.system, self.system.Q, self.system.dim
        t0 = _finite_float(t0, "t0")
        _refuse_complex(q0, "q0")
        q0 = Q.check_point(q0, name="q0")
        B = Q.batch_shape(q0)
        if v0 is None and p0 is None:
            raise ValueError("initial_state: give the initial velocity v0 or the initial momentum p0")
        vv = _vector(v0, B, n, "v0") if v0 is not None else None
        pp = _vector(p0, B, n, "p0") if p0 is not None else None
        nb = len(B)
        fn = _compiled(self.stepmap, ("start", nb, vv is not None, not self.rule.degenerate_safe),
                       lambda: self._build_start(nb, vv is not None, not self.rule.degenerate_safe))
        zeros = np.zeros((*B, n))
        params = self._use_params(params, "initial_state")
        out = fn(q0, zeros if vv is None else vv, zeros if pp is None else pp, np.float64(self.h), np.float64(t0),
                 params)
        members = out.pop("members")
        out = jax.device_get(out)  # the values checked on the host
        m = sysm.n_constraints
        sysm.check_position(q0)  # g(q0) = 0 (holonomic constraints; nothing without)
        if m:
            A = out["A"]
            _check_finite_constraint(sysm, A, B)
            _check_constraint_rank(sysm, A.reshape(-1, m, n))
        if vv is not None:
            if m:
                viol = np.max(np.abs(np.einsum("...ij,...j->...i", A, vv)), axis=-1)
                tol = 1e-9 * (1.0 + np.max(np.abs(vv), axis=-1))
                if np.any(viol > tol):
                    i = np.unravel_index(np.argmax(viol - tol), viol.shape) if viol.ndim else ()
                    which = {(True, False): "A(q0) v0", (False, True): "dg(q0) v0"}.get(
                        (sysm.n_one_forms > 0, sysm.n_holonomic > 0), "[A; dg](q0) v0")
                    where = f" (batch index {list(i)})" if B else ""
                    raise ValueError(
                        f"v0 is not in the constraint distribution: |{which}| = {np.max(viol):.3e}{where}, above "
                        "the tolerance 1e-9 (1 + |v0|); the initial velocity must satisfy A(q0) v0 = 0 for the "
                        "constraint one-forms and dg(q0) v0 = 0 for the holonomic constraints: "
                        "system.project_velocity(q0, v0) projects a nearly consistent v0 onto it"
                    )
            pv = out["p"]
            if not np.all(np.isfinite(pv)):
                raise ValueError("dL/dv(q0, v0) is not finite: the Lagrangian is not defined at the initial data")
            if pp is not None:
                dev = np.max(np.abs(pp - pv))
                if dev > 1e-8 * (1.0 + np.max(np.abs(pv))):
                    raise ValueError(f"p0 differs from dL/dv(q0, v0) by {dev:.3e}: give v0 or p0, or a consistent pair")
        # ill-posed systems and initial data, refused before any step
        _check_velocity_dependence(sysm, out["dLdv_probe"])
        v_legendre = None if vv is not None else _check_primary_constraint(sysm, out["legendre"], B)
        if "degeneracy" in out and np.any(out["degeneracy"] <= 1e-8):
            warnings.warn(
                f"the Lagrangian of {sysm.name or 'this system'} is degenerate on the constraint distribution "
                f"(d2L/dv2 is singular there: linear in some velocities) and the discrete Lagrangian "
                f"{self.rule.name!r} is not known to be stable for such systems (rectangle rules: singular "
                "steps; trapezoid: parasitic modes). Use discrete_lagrangian='midpoint'.",
                DegenerateLagrangianWarning,
                stacklevel=2,
            )
        # undetermined or wrongly determined steps, refused before any step (after the warning above)
        if "degeneracy_full" in out:
            _check_galerkin_degeneracy(sysm, self.rule, out["degeneracy_full"], out["degenerate_direction"], B)
        if "secondary" in out:
            _check_secondary_constraint(sysm, out["secondary"], out["secondary_direction"], B)
        _check_step_matrix(sysm, self, out["step_cond"], out["step_null"], B)
        return RunState(k=0, t0=t0, members=members, batch_shape=B, q_prev=None,
                        v_init=None if vv is None else _flatten_batch(vv, nb),
                        v_legendre=None if v_legendre is None else _flatten_batch(v_legendre, nb))

    def _build_start(self, nb: int, has_v: bool, check_degenerate: bool) -> Callable:
        """The compiled start of a run: ``A(q0)``, ``p0 = dL/dv(q0, v0)``, the degeneracy test, the state.

        Returns a function ``(q0, v0, p0, h, params) -> dict`` over ``nb``
        batch axes (``v0`` or ``p0`` is ignored when not given); the checks
        on its outputs run on the host, in :meth:`initial_state`.
        """
        sm, sysm, m = self.stepmap, self.system, self.system.n_constraints

        n = sysm.dim
        stage_check = _galerkin_stages_unconstrained(sm)
        from .galerkin import _is_vector_space

        algebraic_check = _is_vector_space(sysm.Q)
        # fixed velocities at which dL/dv is probed (a Lagrangian without velocity dependence is refused)
        probes = np.random.default_rng(20240610).standard_normal((_N_PROBES, n))

        def one(q, v, p, h, t0, params):
            out = {}
            A = sysm.constraint_matrix(q, params) if m else None
            N = jnp.linalg.svd(A)[2][m:].T if m else jnp.eye(n)  # a basis of Delta(q0) = ker A(q0)
            if m:
                out["A"] = A
            # dL/dv on Delta(q0) at v0 (or 0) and at the probe velocities in Delta(q0)
            W = jnp.concatenate([v[None], probes @ N @ N.T])
            if n > m:
                out["dLdv_probe"] = jnp.max(jnp.abs(jax.vmap(lambda w: sysm.momentum(q, w, params) @ N)(W)))
            else:  # Delta(q0) = 0: nothing to probe (a system that cannot move)
                out["dLdv_probe"] = jnp.ones(())
            if has_v:
                p = sysm.momentum(q, v, params)
                out["p"] = p
            else:
                out["legendre"] = _legendre_solve(sysm, q, p, A, N, params)
            if check_degenerate:
                # the smallest singular value of d2L/dv2 on ker A(q0), relative to the largest
                H = jax.jacfwd(lambda w: sysm.momentum(q, w, params))(v)
                if m:
                    N = jnp.linalg.svd(A)[2][m:].T
                    H = N.T @ H @ N
                if H.shape[-1]:
                    sv = jnp.linalg.svd(H, compute_uv=False)
                    out["degeneracy"] = sv[-1] / jnp.maximum(sv[0], 1e-300)
            if stage_check:
                # the smallest singular value of d2L/dv2 on the whole frame space (the internal stages of a
                # Galerkin curve are not held in Delta: see _check_galerkin_degeneracy)
                Hf = jax.jacfwd(lambda w: sysm.momentum(q, w, params))(v)
                _, svf, Vf = jnp.linalg.svd(Hf)
                out["degeneracy_full"] = svf[-1] / jnp.maximum(svf[0], 1e-300)
                out["degenerate_direction"] = Vf[-1]
            if has_v:
                xi0 = h * v
            else:  # warm start from the Legendre inverse of p0 (on Delta(q0)), not from rest
                vl = out["legendre"]["v"]
                xi0 = jnp.where(jnp.all(jnp.isfinite(vl)), h * vl, jnp.zeros_like(p))
            if algebraic_check:
                out["secondary"], out["secondary_direction"] = _secondary_residual(sysm, q, v, N, t0, params)
            out["members"] = sm.initial(q, p, xi0)
            # the first step's Newton matrix at its warm start: a singular one is refused (_check_step_matrix)
            out["step_cond"], out["step_null"] = step_conditioning(
                sm, q, p, sm.warm_start(out["members"]), t0, h, params)
            return out

        def start(q, v, p, h, t0, params):
            res = over_batch(lambda qq, vv, pp: one(qq, vv, pp, h, t0, params), nb)(q, v, p)
            res["members"] = _flatten_batch(res["members"], nb)
            return res

        return jax.jit(start)

    # ---------------------------------------------------------------- step
    def step(self, state: RunState, u: Any = None, *, params: Any = None) -> tuple[RunState, StepRecord]:
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

        def build():
            f = sm.step
            if batched:
                f = jax.vmap(functools.partial(f, axis_name=MEMBERS), in_axes=(0, None, None, None, None, 0),
                             axis_name=MEMBERS)
            return jax.jit(f)

        fn = _compiled(sm, ("step", batched, u is None), build)
        uu = None if u is None else _flatten_batch(_vector(u, B, self.system.dim, "u"), len(B))
        h = np.float64(self.h)
        params = self._use_params(params, "Integrator.step")
        new, rec = fn(state.members, np.int32(state.k), np.float64(state.t0 + state.k * self.h), h,
                      params, uu)
        out = RunState(state.k + 1, state.t0, new, B, state.members.q, state.v_init)
        self._raise_if_failed(out, partial=None)
        return out, rec

    # ----------------------------------------------------------------- run
    def run(self, state: RunState, n_steps: int, *, stride: int = 1, controls: Any = None,
            progress: bool = False, callback: Callable[[RunState], Any] | None = None,
            params: Any = None) -> Trajectory:
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
            steps) with the current :class:`RunState`; returning ``False``
            stops the run there. (A per-step Python callback would defeat the
            compiled loop: step by step, use :meth:`step`.)
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
        if controls is not None:
            try:
                c = np.asarray(controls)
            except (TypeError, ValueError) as exc:
                raise TypeError(f"controls: expected an array of real numbers, shape ({n_steps}, *batch, {n}) "
                                f"({exc})") from None
            if c.dtype == object or not (np.issubdtype(c.dtype, np.floating) or np.issubdtype(c.dtype, np.integer)):
                raise TypeError(f"controls: expected real numbers, got dtype {c.dtype}")
            c = c.astype(float)
            if c.shape[:1] != (n_steps,) or c.shape[-1:] != (n,):
                raise ValueError(f"controls: expected shape ({n_steps}, *batch, {n}), got {c.shape}")
            if not np.all(np.isfinite(c)):
                k_bad = int(np.argwhere(~np.isfinite(c))[0][0])
                raise ValueError(f"controls: contains non-finite values (NaN/inf), first at step {k_bad}")
            try:
                c = np.broadcast_to(c, (n_steps, *B, n))
            except ValueError:
                raise ValueError(f"controls: shape {c.shape} does not match (n_steps, *batch, n) = "
                                 f"{(n_steps, *B, n)}") from None
            c = c.reshape((n_steps, -1, n) if nb else (n_steps, n))
            if nb:
                c = np.moveaxis(c, 0, 1)  # (members, n_steps, n): vmapped over members
            controls_j = jnp.asarray(c)
        else:
            controls_j = None
        fn = _compiled(sm, ("chunk", bool(nb), controls is None), lambda: _build_chunk(sm, bool(nb)))
        n_slots = -(-n_steps // stride) + 1
        members = state.members
        q_prev = state.q_prev if state.q_prev is not None else members.q
        have_prev = state.q_prev is not None
        v_init = state.v_init if state.v_init is not None else np.zeros(np.shape(members.p))
        v_nan = np.full(np.shape(v_init), np.nan)
        use_v_init = state.v_init is not None and state.k == 0
        k = state.k
        store = _Store(n_slots, fn.spec)
        start = time.perf_counter()
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=n_steps, delay=1.0, unit="step", leave=False)
        interrupted = False
        error: Exception | None = None
        slot0 = 0
        n_total = state.k + n_steps
        try:
            while slot0 < n_slots:
                # host scalars as numpy values: eager jnp scalars cost ~70 us each to dispatch
                args = (members, q_prev, np.bool_(have_prev), v_init if use_v_init else v_nan,
                        np.int32(k), np.int32(slot0), np.int32(n_slots), np.int32(n_total), np.int32(stride),
                        np.float64(state.t0), np.float64(h), params, controls_j)
                carry, out = fn(*args)
                store.add(jax.device_get(out))
                # the state advances only once its points are stored: an interruption keeps the two consistent
                (members, q_prev, hp, kk), slot0 = carry, slot0 + CHUNK
                have_prev = bool(hp)
                k = int(kk)
                if bar is not None:
                    bar.update(min(k - state.k, n_steps) - bar.n)
                st = np.asarray(members.status)
                if np.all(st != Status.OK) or (np.any(st != Status.OK) and self._raises(B)):
                    break
                if callback is not None and slot0 < n_slots:
                    if callback(RunState(k, state.t0, members, B, q_prev, None)) is False:
                        # one more (closing) slot records the state the callback saw, then the run ends
                        n_total, n_slots = k, slot0 + 1
        except KeyboardInterrupt:
            interrupted = True
        except Exception as exc:  # noqa: BLE001  (the callback's, or the host's between chunks: re-raised below)
            interrupted, error = True, exc
        finally:
            if bar is not None:
                bar.close()
        final = RunState(k, state.t0, members, B, q_prev, None)
        tr = self._assemble(store, n_slots, final, stride, time.perf_counter() - start, interrupted)
        if interrupted:
            kept = "no point was stored yet" if tr is None else f"the {tr.n_points} points computed so far are in .trajectory"
            if error is not None:
                error.trajectory = tr  # type: ignore[attr-defined]
                error.add_note(f"manifold_dirac: this exception stopped the run at step {k} (t = "
                               f"{state.t0 + k * h:g}); {kept} (status INTERRUPTED for the members still running)")
                raise error
            raise RunInterrupted(f"integration interrupted at step {k} (t = {state.t0 + k * h:g}); {kept}", tr)
        self._raise_if_failed(final, partial=tr)
        return tr

    def _raises(self, B: tuple[int, ...]) -> bool:
        return self.on_failure == "raise" or (self.on_failure is None and B == ())

    # ------------------------------------------------------------ boundary
    def _raise_if_failed(self, state: RunState, partial: Trajectory | None) -> None:
        if not self._raises(state.batch_shape):
            return
        st = np.atleast_1d(np.asarray(state.members.status))
        if np.all(st == Status.OK):
            return
        i = int(np.argmax(st != Status.OK))
        code, msg = self._diagnosed(state, i)
        fs = int(np.atleast_1d(np.asarray(state.members.fail_step))[i])
        err = float(np.atleast_1d(np.asarray(state.members.fail_error))[i])
        exc_type = code.exception or StepError
        if partial is not None and not state.batch_shape:
            partial = self._with_failed_state(partial, state, fs)
        raise exc_type(msg, step=fs, time=state.t0 + fs * self.h, residual=err, trajectory=partial)

    def _with_failed_state(self, tr: Trajectory, state: RunState, fs: int) -> Trajectory:
        """The partial trajectory of a single failed run, ending at the start ``q_fs`` of the failed step.

        With ``stride > 1`` the failed step's start is generally not a stored
        point; the frozen state of the member is that last good state, so it
        is appended (its ``v`` and ``energy`` NaN, as at the end of every
        partial trajectory), with an empty record (NaN, 0 iterations) for the
        unstored steps before the failed step's record. Nothing is changed
        when that point is already the last one (``stride = 1``).
        """
        t_fail = state.t0 + fs * self.h
        if tr.n_points and np.isclose(tr.t[-1], t_fail, rtol=1e-12, atol=0.0) or tr.t[-1] > t_fail:
            return tr
        sm, sysm = self.stepmap, self.system
        mem = state.members
        _, rec = jax.jit(sm.step)(mem, np.int32(fs), np.float64(t_fail), np.float64(self.h), self._params, None)
        pt = _member_point(sm, mem, rec, mem.q, False, jnp.full(sysm.dim, jnp.nan), False, True,
                           np.float64(self.h), self._params)
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

    def _message(self, state: RunState, i: int) -> str:
        return self._diagnosed(state, i)[1]

    def _refined(self, state: RunState, status: np.ndarray) -> tuple[np.ndarray, tuple[str, ...]]:
        """The status of each member as diagnosed at the boundary, and the failed members' messages.

        The compiled step knows only what it saw (a NaN in Newton's update:
        ``NONFINITE``); the diagnosis may refine it (a singular Newton matrix:
        ``ILL_POSED``). The trajectory records the refined code, the one whose
        exception is raised, so the two never disagree.
        """
        status = np.array(status, dtype=np.int32, copy=True)
        flat = status.reshape(-1)
        messages = []
        for i in np.flatnonzero(flat != Status.OK):
            code, msg = self._diagnosed(state, int(i))
            flat[i] = int(code)
            messages.append(msg)
        return flat.reshape(status.shape), tuple(messages)

    def _diagnosed(self, state: RunState, i: int) -> tuple[Status, str]:
        """The refined status of failed member ``i`` (flat index) and its full message."""
        code = Status(int(np.atleast_1d(np.asarray(state.members.status))[i]))
        if code == Status.INTERRUPTED:
            return code, code.summary
        fs = int(np.atleast_1d(np.asarray(state.members.fail_step))[i])
        err = float(np.atleast_1d(np.asarray(state.members.fail_error))[i])
        member = tuple(int(x) for x in np.unravel_index(i, state.batch_shape)) if state.batch_shape else None
        code, detail = self._diagnose(state, i, code, fs)
        return code, code.describe(step=fs, time=state.t0 + fs * self.h, member=member, h=self.h, residual=err,
                                   max_iter=self.solver.max_iter, detail=detail)

    def _diagnose(self, state: RunState, i: int, code: Status, k: int) -> tuple[Status, str]:
        """Refine a failure eagerly at the frozen state of member ``i`` (outside compiled code).

        Returns the (possibly refined) status and the ``detail`` of its message:
        for ``DOMAIN`` the size of ``xi`` and the largest step inside the
        domain; for ``NONFINITE`` the user function that returned NaN/inf and
        where (the quadrature node and time of the step, or the stored point
        whose energy is not finite); for ``NO_CONVERGENCE`` a non-finite
        function at the step's start or a singular Newton matrix.
        """
        sm, sysm, h, params = self.stepmap, self.system, self.h, self._params
        n = sysm.dim
        mem = jax.tree.map(lambda a: a[i], state.members) if state.batch_shape else state.members
        t = state.t0 + k * h
        kind = int(np.asarray(mem.fail_kind))
        fz = np.asarray(mem.fail_z)
        if code == Status.DOMAIN:
            return code, self._domain_detail(fz[:n], kind)
        if code == Status.NONFINITE and kind == FAIL_ENERGY:
            return code, self._energy_detail(mem, fz[:n], k, t)
        if code == Status.NONFINITE and np.all(np.isfinite(fz)):
            found = self._locate_nonfinite(mem.q, fz, t)
            if found:
                at = "at the solution of the step" if kind != FAIL_ITERATE else (
                    f"at Newton's iterate with |xi| = {np.linalg.norm(fz[:n]):.3g}")
                return code, f"in the step equations: {found} ({at})"
        if code in (Status.NONFINITE, Status.NO_CONVERGENCE):
            z = sm.warm_start(mem)
            found = self._locate_nonfinite(mem.q, np.asarray(z), t)
            if found:
                return Status.NONFINITE, f"in the step equations: {found} (at the step's start, its warm start)"
            J = np.asarray(jax.jacfwd(lambda z: sm.equations(z, mem.q, mem.p, t, h, params)[0])(z))
            if np.all(np.isfinite(J)) and J.size:
                Je = J / np.maximum(np.abs(J).max(axis=1, keepdims=True), 1e-300)
                Je = Je / np.maximum(np.abs(Je).max(axis=0, keepdims=True), 1e-300)
                s = np.linalg.svd(Je, compute_uv=False)
                cond = s[0] / s[-1] if s[-1] > 0 else np.inf
                if cond > 1e13:
                    return Status.ILL_POSED, f"condition number of the equilibrated Newton matrix {cond:.3e}"
            if code == Status.NONFINITE:
                return code, "in the step equations (an iterate left the region where the functions are finite)"
        return code, ""

    def _domain_detail(self, xi: np.ndarray, kind: int) -> str:
        """``|xi|``, where along ``xi`` the retraction's domain ends, and the ``h`` that stays inside."""
        Q = self.system.Q
        lo, hi = 0.0, 1.0  # in_domain(lo xi) holds, in_domain(hi xi) does not
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if bool(np.asarray(Q.in_domain(jnp.asarray(mid * xi)))) else (lo, mid)
        where = "the step's solution" if kind != FAIL_ITERATE else "Newton's last iterate (the solve did not converge)"
        return (f"|xi| = {np.linalg.norm(xi):.4g} at {where}, where the domain of the retraction "
                f"{Q.retraction.name!r} of {Q!r} ends at |xi| = {lo * np.linalg.norm(xi):.4g} along xi; try "
                f"h < {0.5 * lo * self.h:.3g}, which would halve that if xi scales with h")

    def _energy_detail(self, mem: State, v: np.ndarray, k: int, t: float) -> str:
        """Why the energy ``<p, v> - L(q, v)`` at the stored point ``q_k`` is not finite."""
        sysm = self.system
        L = np.asarray(sysm.lagrangian(mem.q, jnp.asarray(v), self._params))
        kind = "Legendre inverse of p_k" if _legendre_reported(self.stepmap) else "central difference"
        what = (f"the Lagrangian L(q, v) returned {_nonfinite_word(L)} at q_{k} with the recorded ({kind}) "
                f"velocity v_{k}" if not np.all(np.isfinite(L)) else "<p, v> overflowed")
        return (f"in the energy E = <p, v> - L(q, v) at the stored point q_{k} (t = {t:g}): {what}, although the "
                f"step equations, which evaluate L at the quadrature nodes, were finite (|v_{k}| = "
                f"{np.max(np.abs(v), initial=0.0):.4g} in the max-norm)")

    def _locate_nonfinite(self, q0: Any, z: np.ndarray, t: float) -> str:
        """The first user function that is not finite where the step evaluates it at ``z = (xi, mu)`` (eager).

        Checks, at each quadrature node ``R_{q_k}(s xi)`` of the rule and the
        scheme (``s = 0`` is ``q_k``, ``s = 1`` is ``q_{k+1}``) with ``v = xi / h``:
        ``L``, its partials, the force at ``t_k + s h``, the constraint
        ``A``; then the same functions' first derivatives (what the Newton
        matrix holds). Returns "" when every one is finite.
        """
        sysm, Q, h, params = self.system, self.system.Q, self.h, self._params
        n = sysm.dim
        xi = jnp.asarray(z[:n])
        v = xi / h
        nodes = sorted({s for s, _ in self.rule.nodes})  # where the rule evaluates L and F
        # where the schemes evaluate A: q_k (the reaction), their own nodes, q_(k+1) (minus)
        a_nodes = sorted({0.0, 1.0, *self.scheme.extra_nodes})
        points = {s: q0 if s == 0.0 else Q.retract(q0, s * xi) for s in {*nodes, *a_nodes}}

        def node(s: float) -> str:
            what = {0.0: "q_k", 1.0: "q_(k+1)"}.get(s, f"the quadrature node s = {s:g} of the step")
            return f"{what} (t = {t + s * h:g})"

        checks: list[tuple[str, str, Callable[[], Any]]] = []
        for s in nodes:
            c, ts = points[s], t + s * h
            checks += [("the Lagrangian L(q, v)", node(s), lambda c=c: sysm.lagrangian(c, v, params)),
                       ("the partials of L (dL/dq, dL/dv)", node(s),
                        lambda c=c: jnp.concatenate(sysm.partials(c, v, params)))]
            if sysm.has_force:
                checks.append(("the force F(t, q, v)", node(s), lambda c=c, ts=ts: sysm.force(ts, c, v, params)))
        if sysm.n_constraints:
            for s in a_nodes:
                checks.append(("the constraint A(q)", node(s), lambda c=points[s]: sysm.constraint_matrix(c, params)))
        zero = jnp.zeros(n)
        for s in nodes:
            c, ts = points[s], t + s * h

            def curve(eta, c=c):
                return Q.first_order_curve(c, eta)

            checks.append(("the second derivatives of L", node(s), lambda c=c, curve=curve: jax.jacfwd(
                lambda e, w: jnp.concatenate(sysm.partials(curve(e), w, params)), argnums=(0, 1))(zero, v)))
            if sysm.has_force:
                checks.append(("the derivatives of the force F(t, q, v)", node(s),
                               lambda c=c, ts=ts, curve=curve: jax.jacfwd(
                                   lambda e, w: sysm.force(ts, curve(e), w, params), argnums=(0, 1))(zero, v)))
        if sysm.n_constraints and not sysm.has_constant_constraint:
            for s in a_nodes:
                checks.append(("the derivatives of the constraint A(q)", node(s), lambda c=points[s]: jax.jacfwd(
                    lambda e: sysm.constraint_matrix(Q.first_order_curve(c, e), params))(zero)))
        for name, where, f in checks:
            leaves = [np.asarray(x) for x in jax.tree.leaves(f())]
            bad = [x for x in leaves if not np.all(np.isfinite(x))]
            if bad:
                return f"{name} returned {_nonfinite_word(bad[0])} at {where}"
        return ""

    # ------------------------------------------------------------- assemble
    def _assemble(self, store: _Store, n_slots: int, final: RunState, stride: int, wall: float,
                  interrupted: bool) -> Trajectory | None:
        sysm, Q = self.system, self.system.Q
        B, nb = final.batch_shape, len(final.batch_shape)
        if store.arrays is None:  # interrupted before the first chunk came back
            return None
        a = store.arrays
        t, is_step = a["t"][:store.filled], a["is_step"][:store.filled]
        n_rec = min(len(t), n_slots)
        # a raised failure: keep the points up to the failed step
        st = np.atleast_1d(np.asarray(final.members.status))
        if self._raises(B) and np.any(st != Status.OK):
            fs = int(np.min(np.atleast_1d(np.asarray(final.members.fail_step))[st != Status.OK]))
            ks = np.rint((t[:n_rec] - final.t0) / self.h).astype(int)
            n_rec = int(np.searchsorted(ks, fs, side="right"))
        keep = slice(0, n_rec)
        unflat = lambda x: x.reshape((x.shape[0], *B, *x.shape[2:])) if nb else x
        q = jax.tree.map(lambda x: unflat(x[keep]), a["q"])
        # the slots that took a step are a prefix (the step index only grows): slices, not copies
        n_step_slots = int(np.count_nonzero(is_step[keep]))
        if not np.all(is_step[:n_step_slots]):  # an internal invariant, never a user error
            raise RuntimeError("manifold_dirac: the stored steps are not a prefix of the stored points (a bug)")
        steps = slice(0, n_step_slots)
        n_steps_taken = final.k
        meta = {
            "h": self.h, "scheme": self.scheme.name, "discrete_lagrangian": self.rule.name, "order": self.order,
            "composition": None if self.composition is None else self.composition.name,
            "system": sysm.name or "unnamed", "manifold": repr(Q), "n_steps": n_steps_taken, "stride": stride,
            "total_iterations": int(np.sum(a["iterations"][steps])), "wall_time": wall,
            "names": getattr(sysm, "subsystem_slices", None), "interrupted": interrupted,
            "solver_rtol": self.solver.rtol,
        }
        status = np.asarray(final.members.status).reshape(B) if nb else np.asarray(final.members.status)
        status, messages = self._refined(final, status)
        if interrupted:
            status = np.where(status == Status.OK, int(Status.INTERRUPTED), status)
        return Trajectory(
            slip=unflat(a["slip"][keep]), holonomic_violation=unflat(a["holonomic_violation"][keep]),
            t=t[keep], q=q, p=unflat(a["p"][keep]), v=unflat(a["v"][keep]), energy=unflat(a["energy"][keep]),
            xi=unflat(a["xi"][steps]), mu=unflat(a["mu"][steps]),
            constraint_residual=unflat(a["constraint_residual"][steps]), residual=unflat(a["error"][steps]),
            iterations=unflat(a["iterations"][steps]), status=status, messages=messages, meta=meta,
        )


# ------------------------------------------------------------- validation
def _nonfinite_word(x: Any) -> str:
    """``"NaN"``, ``"inf"`` or ``"NaN and inf"``: which non-finite values ``x`` holds."""
    x = np.asarray(x)
    words = [w for w, hit in (("NaN", np.any(np.isnan(x))), ("inf", np.any(np.isinf(x)))) if hit]
    return " and ".join(words) or "a finite value"


def _positive_step(h: Any) -> float:
    if isinstance(h, (bool, np.bool_, str, bytes)):
        raise TypeError(f"the step h must be a positive number, got {h!r}")
    try:
        hf = float(h)
    except (TypeError, ValueError):
        raise TypeError(f"the step h must be a positive number, got {h!r}") from None
    if not (np.isfinite(hf) and hf > 0):
        raise ValueError(f"the step h must be a positive finite number, got {h!r}")
    if hf < _H_MIN:
        raise ValueError(
            f"the step h = {hf!r} is too small for float64: h^2 underflows (below {_H_MIN:.1e} it is less than the "
            "smallest normal number 2.2e-308), so a step's displacement h^2 F / M is lost and the step equations "
            "cannot be solved; rescale time (a unit of time of about h), or use h >= 1.5e-154")
    return hf


_H_MIN = float(np.sqrt(np.finfo(np.float64).tiny))
"""The smallest step ``h``: ``h^2`` is still a normal float64 (``1.49e-154``)."""


def _finite_float(x: Any, name: str) -> float:
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a finite number, got {x!r}")
    try:
        xf = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a finite number, got {x!r}") from None
    if not np.isfinite(xf):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return xf


def run_params(system: LagrangeDiracSystem, params: Any, where: str) -> Any:
    """The parameters of one call: ``system.params`` when ``params`` is None, else ``params``, checked.

    Both are returned with every leaf as a numpy array, so that the default
    and an override enter the compiled functions with the same types (no
    recompilation between them). An override must have the structure and
    leaf shapes of ``system.params`` and real, finite values.
    """
    if params is None:
        return jax.tree.map(np.asarray, system.params)
    if system.params is None:
        raise ValueError(
            f"{where}: params given, but {system.name or 'this system'} has no parameters (system.params is "
            "None): build it with LagrangeDiracSystem(..., params=...) and functions that take params as "
            "their last argument")
    ref, _ = jax.tree_util.tree_flatten_with_path(system.params)
    try:
        leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    except Exception as exc:  # noqa: BLE001
        raise TypeError(f"{where}: params is not a pytree ({exc})") from None
    if treedef != jax.tree.structure(system.params):
        raise ValueError(f"{where}: params must have the structure of system.params, "
                         f"{jax.tree.structure(system.params)}; got {treedef}")
    out = []
    for (path, x), (_, r) in zip(leaves, ref):
        name = "params" + jax.tree_util.keystr(path)
        try:
            a = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where}: {name} must be an array of real numbers ({exc})") from None
        real = np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
        if a.dtype == object or not real:
            raise TypeError(f"{where}: {name} must be real numbers, got dtype {a.dtype}")
        if a.shape != np.shape(r):
            raise ValueError(f"{where}: {name} has shape {a.shape}, system.params has {np.shape(r)}: "
                             "the shapes must match (a parameter of another shape is another system)")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{where}: {name} contains non-finite values (NaN/inf)")
        rd = np.asarray(r).dtype
        if not np.can_cast(a.dtype, rd, "same_kind"):
            raise TypeError(f"{where}: {name} has dtype {a.dtype}, system.params has {rd}: it cannot be cast "
                            "without losing values")
        out.append(a.astype(rd, copy=False))
    return jax.tree.unflatten(treedef, out)


def _count(x: Any, name: str, minimum: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")
    return int(x)


def _refuse_complex(x: Any, name: str) -> None:
    """A TypeError for complex initial data (they would be cast to real, dropping the imaginary part)."""
    if x is None or isinstance(x, (str, bytes)):
        return
    try:
        leaves = jax.tree.leaves(x)
    except Exception:  # noqa: BLE001 - not a pytree: the shape checks that follow say what it is
        return
    if any(np.iscomplexobj(a) for a in leaves):
        raise TypeError(f"{name}: expected real values, got complex ones (the imaginary part would be dropped): "
                        f"pass {name}.real if that is what you mean")


def _vector(x: Any, B: tuple[int, ...], n: int, name: str) -> np.ndarray:
    _refuse_complex(x, name)
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected real frame coordinates of shape (*batch, {n}), got {type(x).__name__}") from None
    if a.shape[-1:] != (n,):
        raise ValueError(f"{name}: expected frame coordinates of shape (*batch, {n}), got shape {a.shape}")
    try:
        a = np.broadcast_to(a, (*B, n)).copy()
    except ValueError:
        raise ValueError(f"{name}: shape {a.shape} does not match the batch shape {B} of q0") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains non-finite values")
    return a


def _check_finite_constraint(sysm: LagrangeDiracSystem, A: np.ndarray, B: tuple[int, ...]) -> None:
    """Refuse a constraint matrix ``A(q0)`` with a NaN or inf entry, naming the batch member."""
    finite = np.all(np.isfinite(A), axis=(-2, -1))
    if not np.all(finite):
        i = [int(x) for x in np.unravel_index(int(np.argmin(finite)), B)] if B else []
        raise ValueError(
            f"the constraint A(q) of {sysm.name or 'this system'} is not finite at q0 (batch index {i}): it "
            f"returned {_nonfinite_word(A[tuple(i)])} there; A must be a finite matrix of one-forms at the initial "
            "configuration (check the constraint function, or start where it is defined)"
        )


def _check_constraint_rank(sysm: LagrangeDiracSystem, A: np.ndarray) -> None:
    """Refuse linearly dependent constraint one-forms at q0 (a non-regular distribution)."""
    m, n = A.shape[-2:]
    if m > n:
        raise ValueError(f"the {m} constraint one-forms of {sysm.name or 'this system'} on a {n}-dimensional "
                         "manifold cannot be independent: the distribution is not regular")
    s = np.linalg.svd(A, compute_uv=False)
    rank = np.sum(s > 1e-10 * np.maximum(s[..., :1], 1e-300), axis=-1)
    if np.any(rank < m):
        raise ValueError(
            f"the constraint one-forms of {sysm.name or 'this system'} are linearly dependent at q0 (rank "
            f"{int(np.min(rank))} < {m} rows; smallest singular value {float(np.min(s[..., -1])):.2e}): the "
            "constraint distribution is not regular there. Drop the redundant one-forms."
        )


def integrate(
    system: LagrangeDiracSystem,
    q0: Any,
    v0: Any = None,
    p0: Any = None,
    *,
    h: float,
    n_steps: int | None = None,
    t_final: float | None = None,
    scheme: str | Scheme = "symmetric",
    discrete_lagrangian: str | QuadratureRule = "midpoint",
    composition: str | Composition | Any = None,
    t0: float = 0.0,
    stride: int = 1,
    controls: Any = None,
    progress: bool = False,
    callback: Callable[[RunState], Any] | None = None,
    on_failure: str | None = None,
    solver: SolverOptions | None = None,
    params: Any = None,
) -> Trajectory:
    """Integrate a Lagrange--Dirac system with a discrete Lagrange--Dirac scheme.

    Parameters
    ----------
    system : LagrangeDiracSystem
        The system (its manifold ``system.Q``, of dimension ``n = Q.dim``).
    q0 : point, shape=[*B, *point_shape]
        Initial configuration, float64 in the manifold's representation
        (``(*B, n)`` on ``Euclidean(n)``, ``(*B, 3, 3)`` rotation matrices on
        SO(3), a tuple on a product); leading axes ``*B`` integrate a batch.
    v0, p0 : array-like of float, shape=[*B, n]
        Initial velocity and/or momentum in frame coordinates (see
        :meth:`Integrator.initial_state`); give at least one.
    h : float
        Time step (> 0); another ``h`` does not recompile.
    n_steps : int, optional
        Number of steps. Give it or ``t_final``.
    t_final : float, optional
        The final time: ``n_steps = (t_final - t0) / h``, which must be a
        whole number to within ``1e-9`` relative (``abs(x - round(x)) <=
        1e-9 * max(1, x)`` for ``x = (t_final - t0) / h``: the round-off of
        ``10 / 0.1 = 99.99999999999999``, not a step of another length),
        else a ``ValueError`` says the nearest ``t_final`` and ``h`` that fit.
        The last stored time is ``t0 + n_steps h``.
    scheme : {"symmetric", "split", "plus", "minus"} or Scheme
        ``plus`` is (52), ``minus`` (53), ``symmetric`` the second-order
        scheme with the constraint at the retraction midpoint (default),
        ``split`` the same with the reaction split between the two ends.
    discrete_lagrangian : str or QuadratureRule
        The quadrature of the action over a step (``"midpoint"``,
        ``"trapezoid"``, ``"rectangle+"``, ``"rectangle-"``, ``"gauss4"``,
        ``"gauss6"``, or a rule object); ``gauss4``/``gauss6`` are
        of order 4 and 6 without constraint one-forms (``docs/galerkin.md``).
    composition : {"triple_jump4", "suzuki4", "yoshida6", "kahan_li6", "suzuki6", "triple_jump6", "kahan_li8"}, optional
        Compose each step of ``h`` from sub-steps ``gamma_i h`` of the
        scheme (a :class:`~manifold_dirac._mechanics.composition.Composition`,
        its name, or a sequence of coefficients): order 4, 6 or 8 from a
        self-adjoint scheme of order 2 (``docs/composition.md``). A base that
        is not self-adjoint is refused with the reason.
    t0 : float
        The time of the initial data (``t_k = t0 + k h``).
    stride : int
        Store every ``stride``-th point (and the last).
    controls : array-like of float, shape=[n_steps, *B, n], optional
        Control covectors added to the force, one per step.
    progress, callback
        See :meth:`Integrator.run`.
    on_failure : {"raise", "mark"}, optional
        What a failed step does: ``raise`` (the default for one trajectory)
        raises a :class:`~manifold_dirac._errors.StepError` with the partial
        trajectory; ``mark`` (the default for a batch) records the member's
        status and goes on with the others.
    solver : SolverOptions, optional
        Newton's tolerances and iteration limit.
    params : pytree, optional
        The system's parameters for this run, overriding ``system.params``
        (which stays unchanged): same structure and leaf shapes, real finite
        values. They are traced, so another value does not recompile.

    Returns
    -------
    Trajectory
        The stored points (numpy float64 arrays with a leading time axis),
        the steps' records, statuses and metadata.

    Notes
    -----
    Each step solves the scheme's equations (``docs/schemes.md``) by Newton's
    method in the chart centred at ``q_k``; see :class:`StepMap`.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> pendulum = md.systems.pendulum()
    >>> tr = md.integrate(pendulum, np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=100)
    >>> tr.q.shape, tr.ok
    ((101, 1), True)
    >>> bool(tr.energy_error < 1e-2)                     # bounded energy error, no drift
    True

    A batch of three initial angles, and other parameters for one call:

    >>> q0 = np.array([[0.1], [0.5], [1.0]])
    >>> batch = md.integrate(pendulum, q0, v0=np.zeros((3, 1)), h=0.05, n_steps=100)
    >>> batch.q.shape
    (101, 3, 1)
    >>> heavier = md.integrate(pendulum, np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=100,
    ...                        params={"ml2": 2.0, "mgl": 19.62})
    """
    if not isinstance(system, LagrangeDiracSystem):
        raise TypeError(f"integrate: system must be a LagrangeDiracSystem, got {type(system).__name__}")
    if any(isinstance(x, jax.core.Tracer)
           for x in jax.tree.leaves((q0, v0, p0, h, t0, controls, system.params, params))):
        raise TypeError(
            "integrate runs its loop on the host (chunks, progress, failures raised) and cannot be traced by "
            "jax.grad/jacfwd/jit/vmap; for derivatives of a run use manifold_dirac.rollout, the same discrete "
            "map as one differentiable JAX function (docs/differentiable.md)")
    integ = Integrator(system, h, scheme, discrete_lagrangian, solver, on_failure, composition=composition)
    n_steps = _steps_to(n_steps, t_final, _finite_float(t0, "t0"), integ.h)
    state = integ.initial_state(q0, v0=v0, p0=p0, t0=t0, params=params)
    if v0 is None and not integ.scheme.carries_pre_momentum:
        state.v_init = state.v_legendre
    return integ.run(state, n_steps, stride=stride, controls=controls, progress=progress, callback=callback,
                     params=params)


_T_FINAL_RTOL = 1e-9
"""Relative tolerance of ``(t_final - t0) / h`` being a whole number of steps (:func:`integrate`)."""


def _steps_to(n_steps: Any, t_final: Any, t0: float, h: float) -> int:
    """``n_steps`` given directly or from ``t_final`` (a whole number of steps of ``h`` after ``t0``)."""
    if t_final is None:
        if n_steps is None:
            raise ValueError("integrate: give n_steps (a number of steps) or t_final (the final time)")
        return n_steps
    if n_steps is not None:
        raise ValueError(f"integrate: give n_steps or t_final, not both (n_steps={n_steps!r}, t_final={t_final!r})")
    T = _finite_float(t_final, "t_final")
    if T < t0:
        raise ValueError(f"integrate: t_final = {T!r} is before t0 = {t0!r}")
    x = (T - t0) / h
    n = int(round(x))
    if abs(x - n) > _T_FINAL_RTOL * max(1.0, x):
        lo, hi = int(np.floor(x)), int(np.ceil(x))
        raise ValueError(
            f"integrate: t_final - t0 = {T - t0!r} is not a whole number of steps h = {h!r} ({x:.6g} steps): "
            f"use t_final = {t0 + lo * h:.12g} or {t0 + hi * h:.12g}, n_steps, or h = {(T - t0) / max(hi, 1):.12g} "
            f"({max(hi, 1)} steps)"
        )
    return n


_LEGENDRE_ITERATIONS = 12
"""Gauss--Newton iterations of the Legendre inverse at the start of a run from ``p0``."""
_REPORTED_NEWTON = 3
"""Newton iterations of the reported Legendre velocity (from the central difference, ``O(h^2)`` away)."""
_N_PROBES = 3
"""Velocities (besides ``v0``) at which the start probes whether ``L`` depends on the velocity at all."""
_DEGENERATE = 1e-8
"""``d2L/dv2`` on ``Delta(q0)`` is singular (the Lagrangian degenerate) below this relative singular value."""
_PRIMARY_RTOL = 1e-8
"""Relative violation of the primary constraint ``p0 = dL/dv(q0, v)`` (mod ``Delta°``) that refuses a start."""


def _legendre_solve(sysm: LagrangeDiracSystem, q: Any, p: jax.Array, A: jax.Array | None, N: jax.Array,
                    params: Any, v_start: jax.Array | None = None, iterations: int = _LEGENDRE_ITERATIONS) -> dict:
    """The least-squares Legendre inverse of ``p`` at one point (traceable).

    Gauss--Newton with the pseudo-inverse of the exact bordered Jacobian on
    ``r(v, lam) = (dL/dv(q, v) - p + A^T lam, A v)``: Newton's method where
    ``d2L/dv2`` is regular on ``Delta(q)``, the closest momentum of the
    Legendre map's image where it is not (a degenerate Lagrangian, whose
    momenta satisfy a primary constraint).

    Returns
    -------
    dict
        ``v (n,)``; ``residual``: ``|r|_inf`` at the end (how far ``p`` is
        from the image, modulo ``Delta°(q)``); ``scale``: the size of the
        momenta (``max(|p|, |dL/dv|, |A^T lam|)``); ``degeneracy``: the
        smallest singular value of ``d2L/dv2`` on ``Delta(q)`` relative to the
        largest (0 for a Lagrangian linear in ``v``).
    """
    n = sysm.dim
    m = 0 if A is None else A.shape[0]
    At = jnp.zeros((n, 0)) if A is None else A.T

    def r(z):
        v, lam = z[:n], z[n:]
        return jnp.concatenate([sysm.momentum(q, v, params) - p + At @ lam, At.T @ v])

    def body(_, z):
        return z - jnp.linalg.pinv(jax.jacfwd(r)(z)) @ r(z)

    z0 = jnp.zeros(n + m) if v_start is None else jnp.concatenate([v_start, jnp.zeros(m)])
    z = jax.lax.fori_loop(0, iterations, body, z0)
    v, lam = z[:n], z[n:]
    res = r(z)
    pv = sysm.momentum(q, v, params)
    scale = jnp.maximum(jnp.maximum(jnp.max(jnp.abs(p)), jnp.max(jnp.abs(pv))), jnp.max(jnp.abs(At @ lam), initial=0.0))
    H = N.T @ jax.jacfwd(lambda w: sysm.momentum(q, w, params))(v) @ N
    if H.shape[-1]:
        sv = jnp.linalg.svd(H, compute_uv=False)
        degeneracy = sv[-1] / jnp.maximum(sv[0], 1e-300)
    else:
        degeneracy = jnp.ones(())
    return {"v": v, "residual": jnp.max(jnp.abs(res), initial=0.0), "scale": scale, "degeneracy": degeneracy}


def _check_velocity_dependence(sysm: LagrangeDiracSystem, dLdv: np.ndarray) -> None:
    """Refuse a Lagrangian with no velocity dependence on ``Delta(q0)`` (``L = 0``, ``L = L(q)``)."""
    if np.any(np.asarray(dLdv) == 0.0):
        raise IllPosedSystemError(
            f"the Lagrangian of {sysm.name or 'this system'} does not depend on the velocity: dL/dv = 0 on the "
            f"constraint distribution at q0 at the initial velocity and at {_N_PROBES} others, so the step equations "
            "have "
            "no unique solution (L = 0, or L a function of q alone). A Lagrange--Dirac system needs a Lagrangian "
            "with a velocity dependence (a kinetic term, or a term linear in v)."
        )


def _check_primary_constraint(sysm: LagrangeDiracSystem, sol: dict, B: tuple[int, ...]) -> np.ndarray | None:
    """Refuse ``p0`` off the primary constraint of a degenerate Lagrangian; the Legendre velocity or None.

    For a degenerate Lagrangian (``d2L/dv2`` singular on ``Delta(q0)``) the
    momenta ``dL/dv(q0, v)``, ``v in Delta(q0)``, fill only part of the
    covectors: ``p0`` must be one of them modulo ``Delta°(q0)`` (the primary
    constraint). An inconsistent ``p0`` is not projected: it would excite a
    parasitic mode of the discrete map that fails much later.
    """
    res, scale, deg = (np.asarray(sol[k], dtype=float) for k in ("residual", "scale", "degeneracy"))
    rel = np.where(res == 0.0, 0.0, res / np.where(scale > 0, scale, 1.0))
    bad = (deg <= _DEGENERATE) & ~(rel <= _PRIMARY_RTOL)
    if np.any(bad):
        i = tuple(int(x) for x in np.unravel_index(int(np.argmax(np.where(bad, rel, -1.0))), np.shape(bad)))
        where = f" (batch index {list(i)})" if B else ""
        raise IllPosedSystemError(
            f"p0 violates the primary constraint p = dL/dv(q0, v) of the degenerate Lagrangian of "
            f"{sysm.name or 'this system'}{where}: no velocity v in the constraint distribution has "
            f"dL/dv(q0, v) = p0 (modulo the constraint forces); the closest misses by {float(res[i]):.3e} "
            f"(relative {float(rel[i]):.2e}). A degenerate Lagrangian fixes some momenta by q: give "
            "p0 = dL/dv(q0, v0) for some v0, or give v0."
        )
    ok = (rel <= 1e-9) & (deg > _DEGENERATE)
    return sol["v"] if bool(np.all(ok)) else None


_SINGULAR_STEP = 1e13
"""Condition number of the equilibrated Newton matrix above which a step's equations are singular."""


def equilibrated_condition(J: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The condition number of ``J`` scaled by rows then columns (traceable), and its null direction.

    Rows and columns are divided by their largest entry (so the units of the
    unknowns and of the equations drop out); the condition number is the
    ratio of the extreme singular values of the scaled matrix (``inf`` for a
    zero singular value), the direction the right singular vector of the
    smallest one, in the scaled unknowns.
    """
    Je = J / jnp.maximum(jnp.max(jnp.abs(J), axis=1, keepdims=True), 1e-300)
    col = jnp.maximum(jnp.max(jnp.abs(Je), axis=0, keepdims=True), 1e-300)
    Je = Je / col
    _, s, Vt = jnp.linalg.svd(Je)
    cond = jnp.where(s[-1] > 0, s[0] / jnp.where(s[-1] > 0, s[-1], 1.0), jnp.inf)
    return cond, Vt[-1] / col[0]


def step_conditioning(sm: StepMap, q: Any, p: jax.Array, z: jax.Array, t: Any, h: Any,
                      params: Any) -> tuple[jax.Array, jax.Array]:
    """``(cond, direction)`` of the step's equilibrated Newton matrix ``dr/dz`` at ``z`` (one member; traceable).

    Used at the start of a run (:meth:`Integrator.initial_state`,
    :func:`~manifold_dirac._mechanics.differentiable.rollout`) on the first
    step's warm start; the inputs are not differentiated.
    """
    q, p, z, t, h, params = jax.lax.stop_gradient((q, p, z, t, h, params))
    J = jax.jacfwd(lambda zz: sm.equations(zz, q, p, t, h, params)[0])(z)
    if J.size == 0:
        return jnp.ones(()), jnp.zeros(z.shape)
    finite = jnp.all(jnp.isfinite(J))
    cond, d = equilibrated_condition(jnp.where(finite, J, 0.0))
    # a non-finite matrix is the step's own failure (NONFINITE, diagnosed there), not a singular system
    return jnp.where(finite, cond, 1.0), d


def _direction_words(sysm: LagrangeDiracSystem, d: np.ndarray) -> str:
    """A frame direction in words: its largest components, with the coordinate names of a vector space."""
    d = np.asarray(d, dtype=float)
    n = d.size
    scale = np.max(np.abs(d)) if n else 0.0
    if not scale > 0:
        return "(no direction found)"
    d = d / scale
    big = [int(i) for i in np.flatnonzero(np.abs(d) > 1e-3)]
    names = tuple(getattr(sysm.Q, "coordinate_names", ()) or ())
    from .._manifolds.euclidean import Euclidean

    if isinstance(sysm.Q, Euclidean) and len(names) == n:
        label = [names[i] for i in big]
    else:
        label = [f"frame component {i}" for i in big]
    vec = np.array2string(np.round(d, 3), separator=", ", suppress_small=True)
    return f"{vec} ({', '.join(label)})"


def _galerkin_stages_unconstrained(sm: StepMap) -> bool:
    """Whether the rule has internal curve stages that the step does not hold in the distribution Delta."""
    return sm.system.n_one_forms > 0 and sm.rule.n_stages(sm.system.dim) > 0


def _check_galerkin_degeneracy(sysm: LagrangeDiracSystem, rule: Any, deg: np.ndarray, direction: np.ndarray,
                               B: tuple[int, ...]) -> None:
    """Refuse a Galerkin rule (internal stages) for a degenerate Lagrangian with one-form constraints.

    The stages ``X_1..X_{s-1}`` of a Galerkin curve are free in every frame
    direction (the scheme's constraint holds only at the ends of the step),
    and their equations are the stationarity of the action alone. In a
    direction ``e`` where ``d2L/dv2`` vanishes, ``dL/dv . e`` does not see the
    curve's velocity, so the stage equation in ``e`` is the Gauss-weighted
    moment of ``dL/dq . e`` along the curve -- an equation of the potential
    alone, unrelated to the motion, which the constraint (not the kinetic
    term) determines in that direction. The step then solves, converges and
    is wrong at O(1) (the LC circuit's charge stays put). Refused, naming the
    direction; the midpoint rule has no stages and is exact for this.
    """
    deg = np.asarray(deg, dtype=float)
    bad = deg <= _DEGENERATE
    if not np.any(bad):
        return
    i = tuple(int(x) for x in np.unravel_index(int(np.argmax(bad)), np.shape(bad))) if B else ()
    where = f" (batch index {list(i)})" if B else ""
    raise IllPosedSystemError(
        f"discrete Lagrangian {rule.name!r} cannot integrate {sysm.name or 'this system'}{where}: its Lagrangian "
        f"is degenerate (d2L/dv2 is singular at q0, relative singular value {float(deg[i]):.1e}, in the frame "
        f"direction {_direction_words(sysm, np.asarray(direction)[i])}) and the system has constraint one-forms; "
        "the internal stages of a Galerkin curve are not held in the constraint distribution, so in that "
        "direction their equations hold the potential alone and the step converges to a wrong motion. Use "
        "discrete_lagrangian='midpoint'."
    )


def _check_step_matrix(sysm: LagrangeDiracSystem, integ: Any, cond: np.ndarray, null: np.ndarray,
                       B: tuple[int, ...]) -> None:
    """Refuse a run whose first step's (equilibrated) Newton matrix is singular: the step is undetermined.

    Newton's method on a singular matrix does not stop with an error: a
    least-squares or LU solve picks one of the solutions, the residual
    vanishes and the step is accepted, with ``q_{k+1}`` moving freely along
    the null direction (a body with no kinetic energy in a direction, a
    coordinate with no kinetic term). Evaluated once at the first step's warm
    start (O(h) from its solution), where it costs one Jacobian; a matrix that
    becomes singular later is diagnosed at the failed step.
    """
    cond = np.asarray(cond, dtype=float)
    bad = cond > _SINGULAR_STEP  # inf included; NaN (non-finite data) is left to the step's own diagnosis
    if not np.any(bad):
        return
    i = tuple(int(x) for x in np.unravel_index(int(np.argmax(np.where(bad, cond, -1.0))), np.shape(bad))) if B else ()
    where = f" (batch index {list(i)})" if B else ""
    n = sysm.dim
    d = np.asarray(null)[i]
    xi_part = d[:n]
    if np.max(np.abs(xi_part), initial=0.0) > 1e-6 * np.max(np.abs(d), initial=0.0):
        what = f"the step xi in the frame direction {_direction_words(sysm, xi_part)}"
    else:
        what = "the constraint multipliers or internal stages only (a redundant constraint or a singular rule)"
    raise IllPosedSystemError(
        f"the step equations of {sysm.name or 'this system'} are singular at the start{where} (condition number "
        f"of the equilibrated Newton matrix {float(cond[i]):.3e} > {_SINGULAR_STEP:.0e}, with "
        f"scheme {integ.scheme.name!r} and discrete Lagrangian {integ.rule.name!r}): they do not determine "
        f"{what}. Give that direction a kinetic term (d2L/dv2 regular on the constraint distribution) or "
        "constrain it; for a Lagrangian degenerate by design, use discrete_lagrangian='midpoint'."
    )


def _secondary_residual(sysm: LagrangeDiracSystem, q: Any, v: jax.Array, N: jax.Array, t: Any,
                        params: Any) -> tuple[jax.Array, jax.Array]:
    """The violation of the algebraic equations of motion at ``(q0, v0)`` (one member, a vector space; traceable).

    A direction ``e`` of the constraint distribution (``e = N c``) whose
    momentum ``dL/dv . e`` is locally constant -- ``d2L/dv2 e = 0``,
    ``d2L/dv dq`` annihilating ``e`` on both sides -- has the equation of
    motion ``d/dt (dL/dv . e) = 0 = (dL/dq + F) . e`` (the constraint forces
    vanish on ``Delta``): not a differential equation but a constraint on
    ``q`` alone (and on ``v`` through ``F`` only), which the initial data must
    satisfy. Returns the largest violation relative to the size of the terms
    and its direction ``e``.
    """
    n = sysm.dim
    H = jax.jacfwd(lambda w: sysm.momentum(q, w, params))(v)
    M = jax.jacfwd(lambda e: sysm.momentum(sysm.Q.first_order_curve(q, e), v, params))(jnp.zeros(n))  # dp_i/dq_j
    dq = sysm.partials(q, v, params)[0]
    F = sysm.force(t, q, v, params) if sysm.has_force else None
    g = dq if F is None else dq + F
    norm = lambda X: X / jnp.maximum(jnp.max(jnp.abs(X)), 1e-300)  # noqa: E731
    K = jnp.concatenate([norm(H) @ N, norm(M) @ N, norm(M.T) @ N])
    if K.shape[-1] == 0:
        return jnp.zeros(()), jnp.zeros(n)
    s, Vt = jnp.linalg.svd(K, full_matrices=False)[1:]
    null = s <= 1e-8
    E = Vt @ N.T  # rows: candidate directions e in Delta, unit length
    scale = jnp.maximum(jnp.max(jnp.abs(dq)), jnp.max(jnp.abs(sysm.momentum(q, v, params))))
    if F is not None:
        scale = jnp.maximum(scale, jnp.max(jnp.abs(F)))
    res = jnp.where(null, jnp.abs(E @ g), 0.0) / jnp.maximum(scale, 1e-300)
    j = jnp.argmax(res)
    return res[j], E[j]


_SECONDARY_RTOL = 1e-8
"""Relative violation of an algebraic equation of motion at ``q0`` that refuses a start."""


def _check_secondary_constraint(sysm: LagrangeDiracSystem, res: np.ndarray, direction: np.ndarray,
                                B: tuple[int, ...]) -> None:
    """Refuse initial data that violate an algebraic equation of motion (see :func:`_secondary_residual`).

    A coordinate with no kinetic term (its momentum constant) obeys
    ``dL/dq . e + F . e = 0`` at every instant; started off it, no motion
    satisfies the equations, and the discrete map answers with a parasitic
    mode (the coordinate flips sign every step).
    """
    res = np.asarray(res, dtype=float)
    bad = res > _SECONDARY_RTOL  # a NaN (non-finite data at q0) is the first step's failure, diagnosed there
    if not np.any(bad):
        return
    i = tuple(int(x) for x in np.unravel_index(int(np.argmax(np.where(bad, res, -1.0))), np.shape(bad))) if B else ()
    where = f" (batch index {list(i)})" if B else ""
    raise IllPosedSystemError(
        f"the initial data violate an algebraic equation of motion of {sysm.name or 'this system'}{where}: in the "
        f"direction {_direction_words(sysm, np.asarray(direction)[i])} the momentum dL/dv does not depend on q or "
        f"v (no kinetic term), so its equation of motion is (dL/dq + F) . e = 0, a constraint on q0; at q0 it "
        f"is off by {float(res[i]):.3e} relative to the size of dL/dq, dL/dv and F. Start where it holds (no "
        "motion satisfies the equations from this q0; the discrete map would answer with a parasitic mode)."
    )
