"""What a run stores: the stored points, their packing out of the compiled loop, the result.

A :class:`Recording` says what is stored (as diffrax's ``SaveAt``): every
``stride``-th point and the last, each a :class:`Point` (``q_k``, the
reported momentum, velocity and energy, the status, the constraint
violations) with the record of the step taken from it. The compiled loop
keeps of each stored point what the step produces anyway (:class:`Raw`)
and computes the rest in the slot that stores it, with
:meth:`Recording.point`; the points are packed into one array
(:func:`_pack`); the host unpacks each chunk into a :class:`_Store`;
:func:`assemble` makes the :class:`~manifold_dirac._run.trajectory.Trajectory`.
"""

from __future__ import annotations

import functools
import math
from types import ModuleType
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .._manifolds.base import Manifold
from .._mechanics.composition import ComposedStepMap
from .._mechanics.small import solve_small
from .._mechanics.status import Status
from .._mechanics.step import StepMap, StepRecord
from .._mechanics.system import LagrangeDiracSystem
from .._types import Covector, Params, Point as PointT, PyTree, Scalar, Vector
from .start import _DEGENERATE
from .state import RunState
from .trajectory import Trajectory


class Point(NamedTuple):
    """One stored point of one member (inside the compiled loop).

    Attributes
    ----------
    q : point
        ``q_k``.
    p : array, shape=[n]
        The reported momentum ``p_k`` (projected on ``dg(q_k) v = 0`` for holonomic constraints).
    v : array, shape=[n]
        The reported velocity (:func:`_member_point`); NaN for a failed member.
    energy : array, shape=[]
        ``<p_k, v_k> - L(q_k, v_k)``; NaN for a failed member.
    status : int32 array, shape=[]
        The member's :class:`~manifold_dirac._mechanics.status.Status` after the step from ``q_k``.
    slip : array, shape=[m]
        ``A(q_k) v`` at the central-difference velocity (the one-form constraints' violation).
    holonomic_violation : array, shape=[n_holonomic]
        ``g(q_k)``.
    """

    q: PointT
    p: Covector
    v: Vector
    energy: jax.Array
    status: jax.Array
    slip: jax.Array
    holonomic_violation: jax.Array


_REPORTED_NEWTON = 3
"""Newton iterations of the reported Legendre velocity (from the central difference, ``O(h^2)`` away)."""


class Raw(NamedTuple):
    """What the compiled loop keeps of a stored point of one member: what the step produces anyway.

    The rest of the stored point (:class:`Point`: the velocity, the energy,
    the constraint violations) is computed from it and the step's record
    (:meth:`Recording.point`), in the slot that stores the point.

    Attributes
    ----------
    q : point
        ``q_k``.
    back : array, shape=[n]
        ``-R_{q_k}^{-1}(q_{k-1})``: the chart coordinates of the last step
        seen from its end (:func:`chart_back`); any finite value where there
        is no ``q_{k-1}``.
    status : int32 array, shape=[]
        The member's status after the step from ``q_k`` (its status before
        that step at the closing point of a run, where the step is not kept).
    frozen : bool array, shape=[]
        The member was frozen at ``q_k`` because its energy there is not
        finite (the stored status becomes ``NONFINITE``).
    """

    q: PointT
    back: Vector
    status: jax.Array
    frozen: jax.Array


def back_from_step(sm: StepMap) -> bool:
    """Whether ``-R_{q_k}^{-1}(q_{k-1})`` is the last step's own ``xi`` (``q_k = R_{q_{k-1}}(xi)``) for ``sm``.

    It is exactly when the retraction is symmetric,
    ``R_{q_1}^{-1}(q_0) = -R_{q_0}^{-1}(q_1)`` in the frames
    (:attr:`Retraction.symmetric <manifold_dirac._manifolds.base.Retraction.symmetric>`,
    checked by :func:`manifold_dirac.testing.check_symmetry`): on a Lie group
    ``tau(-xi) = tau(xi)^{-1}`` (``exp``, ``cayley``), on a vector space
    ``q + xi``, on a product when every factor's is. Then
    ``-R_{q_k}^{-1}(q_{k-1}) = R_{q_{k-1}}^{-1}(q_k) = xi``, and the compiled
    loop carries the step's ``xi`` instead of recomputing the inverse
    retraction at every stored point (on SE(2) an ``atan2``, a sine and
    cosine and a group product: about a third of what a stored point of the
    knife edge cost). Otherwise (SE(2)'s ``so2xr2``, SE(3)'s split
    retraction, the sphere's frames) it is :func:`chart_back` of the two
    points. A composition's step
    (:class:`~manifold_dirac._mechanics.composition.ComposedStepMap`) is not
    solved for its ``xi`` but recovers it by an inverse retraction, which
    keeps the previous ``xi`` where that is not finite: its points take the
    two-point route, which then reports the non-finite velocity.
    """
    return bool(sm.system.Q.retraction.symmetric) and not isinstance(sm, ComposedStepMap)


def chart_back(Q: Manifold, q: PointT, q_prev: PointT) -> Vector:
    """``-R_{q}^{-1}(q_prev)`` (one member or a batch, traceable): the last step's chart coordinates at its end."""
    return -Q.inverse_retract(q, q_prev)


def _member_point(sm: StepMap, raw: Raw, rec: StepRecord, have_prev: jax.Array, first: jax.Array, v_init: Vector,
                  h: Scalar, params: Params) -> Point:
    """The stored point at ``q_k``: momentum, velocity, energy, status (one member; traceable).

    ``raw`` and ``rec`` are what the loop kept at ``q_k`` (the step from it:
    ``rec.xi = R_{q_k}^{-1}(q_{k+1})``; ``raw.back = -R_{q_k}^{-1}(q_{k-1})``);
    ``have_prev`` says whether ``q_{k-1}`` is known (not at the start of a
    run from ``q0``), ``first`` whether ``k = 0`` (where a given ``v0``,
    ``v_init``, is the velocity when finite).

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
    fwd_ok = rec.status == Status.OK
    back = raw.back
    fwd = rec.xi
    v = jnp.where(
        have_prev,
        jnp.where(fwd_ok, 0.5 * (fwd + back) / h, back / h),
        jnp.where(first & jnp.all(jnp.isfinite(v_init)), v_init, fwd / h),
    )
    status = raw.status
    failed = status != Status.OK
    p = rec.p_start
    if sm.system.n_holonomic:  # the RATTLE projection of the reported velocity and momentum onto dg(q_k) v = 0
        v, p = sm.system.holonomic_projection(raw.q, v, p, params)
        p = jnp.where(failed, rec.p_start, p)
    v = jnp.where(failed, jnp.nan, v)
    # the slip is the motion's own (at the central difference): the Legendre velocity is in ker C by construction
    slip, g_violation = sm.system.constraint_violation(raw.q, v, params)
    if _legendre_reported(sm):
        v = jnp.where(failed, jnp.nan, _reported_legendre_velocity(sm.system, raw.q, p, v, params))
    energy = jnp.where(failed, jnp.nan, sm.system.energy(raw.q, v, p, params))
    status = jnp.where(raw.frozen, Status.NONFINITE, status).astype(raw.status.dtype)
    return Point(raw.q, p, v, energy, status, slip, g_violation)


def _legendre_reported(sm: StepMap) -> bool:
    """Whether the reported velocity is the Legendre inverse of ``p_k`` (rules of order above 2).

    The second-order rules keep the central difference: it is as accurate
    as their momenta (both second order), costs nothing, and is what their
    recorded results were computed with. A composition of order above 2
    (:class:`~manifold_dirac._mechanics.composition.ComposedStepMap`) reports
    the Legendre velocity too.
    """
    return sm.rule.order > 2 or (isinstance(sm, ComposedStepMap) and sm.composition.order > 2)


def _reported_legendre_velocity(sysm: LagrangeDiracSystem, q: PointT, p: Covector, v_central: Vector,
                                params: Params) -> Vector:
    """``v`` with ``dL/dv(q, v) = p + C(q)^T lam``, ``C(q) v = 0``; ``v_central`` where that fails (traceable).

    Newton on the bordered system ``r(v, lam) = (dL/dv(q, v) - p + C^T lam,
    C v)`` from ``(v_central, 0)`` (the central difference is within
    ``O(h^2)``, so a few iterations reach round-off; one suffices for ``L``
    quadratic in ``v``), each iteration one solve with the bordered matrix
    ``K = [[d2L/dv2, C^T], [C, 0]]`` by the unrolled elimination
    :func:`~manifold_dirac._mechanics.small.solve_small` (no LAPACK call, no
    SVD: this runs at every stored point, inside the compiled loop).

    The Legendre map is invertible on ``ker C`` exactly where ``K`` is
    regular (``C`` of full rank). Its regularity is measured on ``K`` with
    the rows of ``C`` normalized and the border scaled to ``d2L/dv2``'s size
    (so that units do not matter): ``1 / (|K|_inf |K^{-1}|)``, ``|K^{-1}|``
    estimated by :data:`_REGULARITY_ITERATIONS` steps of inverse iteration
    from a fixed vector. Below :data:`~manifold_dirac._run.start._DEGENERATE`
    (a degenerate Lagrangian, ``L`` linear in some velocity), or when the
    residual is not at round-off, the central difference is kept.
    """
    n, c = sysm.dim, sysm.n_constraints
    C = sysm.constraint_matrix(q, params) if c else jnp.zeros((0, n))

    def r(z):
        v, lam = z[:n], z[n:]
        return jnp.concatenate([sysm.momentum(q, v, params) - p + C.T @ lam, C @ v])

    def newton(_, z):
        return z - solve_small(jax.jacfwd(r)(z), r(z))

    start = jnp.where(jnp.all(jnp.isfinite(v_central)), v_central, jnp.zeros_like(v_central))
    z = jax.lax.fori_loop(0, _REPORTED_NEWTON, newton, jnp.concatenate([start, jnp.zeros(c)]))
    v, lam = z[:n], z[n:]
    res = jnp.max(jnp.abs(r(z)), initial=0.0)
    pv = sysm.momentum(q, v, params)
    scale = jnp.maximum(jnp.maximum(jnp.max(jnp.abs(p)), jnp.max(jnp.abs(pv))), jnp.max(jnp.abs(C.T @ lam), initial=0.0))
    M = jax.jacfwd(lambda w: sysm.momentum(q, w, params))(v)
    m_size = jnp.maximum(jnp.max(jnp.abs(M)), 1e-300)
    Cn = m_size * C / jnp.maximum(jnp.max(jnp.abs(C), axis=1, keepdims=True), 1e-300)
    K = jnp.block([[M, Cn.T], [Cn, jnp.zeros((c, c))]])
    x = jnp.sin(1.0 + 2.3 * jnp.arange(n + c))  # fixed, with a component along any direction in practice
    grow = jnp.ones(())
    for _ in range(_REGULARITY_ITERATIONS):
        x = x / jnp.max(jnp.abs(x))
        y = solve_small(K, x)
        grow = jnp.max(jnp.abs(y))  # ~ |K^{-1}| once x is along its dominant direction
        x = y
    regularity = 1.0 / (jnp.max(jnp.sum(jnp.abs(K), axis=1)) * grow)
    ok = (res <= 1e-9 * jnp.maximum(scale, 1e-300)) & (regularity > _DEGENERATE) & jnp.isfinite(regularity)
    ok = ok & jnp.all(jnp.isfinite(v))
    return jnp.where(ok, v, v_central)


_REGULARITY_ITERATIONS = 3
"""Inverse iterations estimating ``|K^{-1}|`` in the regularity test of :func:`_reported_legendre_velocity`."""


class Recording:
    """What a run stores: every ``stride``-th point and the last (as diffrax's ``SaveAt``).

    Parameters
    ----------
    stride : int
        Store every ``stride``-th point (``stride >= 1``; traced by the
        compiled loop, so another stride does not recompile).
    n_steps : int
        The steps of the run; ``n_slots = ceil(n_steps / stride) + 1`` points
        are stored (the initial one and the last one included).

    Notes
    -----
    The compiled loop keeps, per stored point, what the step produces
    anyway (:class:`Raw` and the step's record); :meth:`point` computes the
    rest (velocity, energy, constraint violations) in the slot that stores
    the point. It is a static method (the same for every recording), so the
    loop's program does not depend on the recording.
    """

    def __init__(self, stride: int, n_steps: int):
        self.stride = stride
        self.n_steps = n_steps
        self.n_slots = -(-n_steps // stride) + 1

    point = staticmethod(_member_point)

    def store(self, spec: list) -> _Store:
        """An empty host store for this recording's points (``spec``: the loop's packing, filled at its trace)."""
        return _Store(self.n_slots, spec)


def _pack(tree: PyTree, spec: list, lead: int) -> jax.Array:
    """All leaves of ``tree`` raveled into one float64 vector per entry of the ``lead`` leading axes.

    One output array per stored point instead of one per field: on a CPU,
    each separate output of a loop costs a dynamic update per iteration.
    ``spec`` receives ``(treedef, [(shape, dtype), ...])`` (the shapes past
    the ``lead`` axes) at trace time.
    """
    leaves, treedef = jax.tree.flatten(tree)
    if not spec:
        spec.append((treedef, [(tuple(x.shape[lead:]), x.dtype) for x in leaves]))
    return jnp.concatenate([jnp.reshape(x, (*x.shape[:lead], -1)).astype(jnp.float64) for x in leaves], axis=-1)


def _unpack(flat: np.ndarray | jax.Array, spec: tuple, xp: ModuleType = np) -> PyTree:
    """Inverse of :func:`_pack` on arrays ``(..., F)``: host arrays (``xp = numpy``) or traced ones (``jax.numpy``).

    On the host the parts are views of ``flat`` (a copy only where the dtype
    is not float64: the integer fields).
    """
    treedef, shapes = spec
    lead = flat.shape[:-1]
    out = []
    for start, stop, shape, dtype in _layout(tuple(shapes)):
        part = flat[..., start:stop].reshape(*lead, *shape)
        out.append(part.astype(dtype, copy=False) if xp is np else part.astype(dtype))
    return jax.tree.unflatten(treedef, out)


@functools.lru_cache(maxsize=256)
def _layout(shapes: tuple) -> tuple:
    """``(start, stop, shape, dtype)`` of each leaf in a packed row (computed once per layout, not per call)."""
    out, i = [], 0
    for shape, dtype in shapes:
        size = math.prod(shape)
        out.append((i, i + size, tuple(shape), np.dtype(dtype)))
        i += size
    return tuple(out)


_FIELDS = ("t", "is_step", "point", "record", "slot_iterations")
"""The parts of a packed row of the compiled loop, in order (:func:`~manifold_dirac._run.loop._build_chunk`)."""


class _Store:
    """The stored points on the host, packed as the compiled loop writes them: one array, filled chunk by chunk.

    The array (``(n_slots, ..., F)``, float64) is allocated once, at full
    length, when the first chunk arrives, and each chunk's rows are copied
    into it with one copy: the per-chunk cost on the host is a transfer and
    a copy, whatever the system. :attr:`arrays` unpacks it once, at the end,
    into views per result field (no copy but for the integer fields), so the
    results are held once (no list of chunks, no concatenation).
    """

    def __init__(self, n_slots: int, spec: list):
        self.n_slots, self.spec, self.filled = n_slots, spec, 0
        self.packed: np.ndarray | None = None
        self._arrays: dict | None = None

    def reserve(self, n_slots: int) -> None:
        """Room for ``n_slots`` points (a replay of a failed chunk's tail at stride 1 may need more)."""
        if n_slots <= self.n_slots:
            return
        grow = n_slots - self.n_slots
        self.n_slots = n_slots
        if self.packed is not None:
            self.packed = np.concatenate([self.packed, np.empty((grow, *self.packed.shape[1:]), self.packed.dtype)])

    def add(self, packed: np.ndarray, n_live: int | None = None) -> None:
        """Copy one chunk's packed rows (a host array; its first ``n_live`` rows) into the store."""
        m = min(len(packed), self.n_slots - self.filled, len(packed) if n_live is None else n_live)
        if m <= 0:
            return
        if self.packed is None:
            self.packed = np.empty((self.n_slots, *packed.shape[1:]), np.float64)
        self.packed[self.filled:self.filled + m] = packed[:m]
        self.filled += m
        self._arrays = None

    @property
    def arrays(self) -> dict | None:
        """The stored rows unpacked per result field (None before the first chunk came back)."""
        if self.packed is None:
            return None
        if self._arrays is None:
            parts = dict(zip(_FIELDS, _unpack(self.packed[:self.filled], self.spec[0]), strict=True))
            pts, recs = parts["point"], parts["record"]
            # the time and "a step was taken" are the slot's, the same for every member of a batch
            t, is_step = (parts[f].reshape(self.filled, -1)[:, 0] for f in ("t", "is_step"))
            self._arrays = {
                "t": t, "is_step": is_step, "q": pts.q, "p": pts.p, "v": pts.v,
                "energy": pts.energy, "slip": pts.slip, "holonomic_violation": pts.holonomic_violation,
                "xi": recs.xi, "mu": recs.mu, "constraint_residual": recs.constraint_residual, "error": recs.error,
                "iterations": recs.iterations, "slot_iterations": parts["slot_iterations"]}
        return self._arrays


def assemble(store: _Store, n_slots: int, final: RunState, h: float, meta: dict, status: np.ndarray,
             messages: tuple[str, ...], cut_at_failure: bool) -> Trajectory | None:
    """The :class:`~manifold_dirac._run.trajectory.Trajectory` of the points in ``store`` (None if it is empty).

    Parameters
    ----------
    store : _Store
        The stored points, as the chunks brought them back.
    n_slots : int
        The points the run stores (fewer than ``store.n_slots`` when a
        callback stopped it early: rows past them are not points).
    final : RunState
        The state where the run ended.
    h : float
        The step (the stored times are ``t0 + k h``).
    meta : dict
        The run's metadata; its ``total_iterations`` entry is set here (the
        Newton iterations of every step taken up to the last kept point,
        stored or not: the same for every ``stride``).
    status : ndarray of int32, shape=B
        Each member's final status (as diagnosed at the boundary).
    messages : tuple of str
        The failed members' messages.
    cut_at_failure : bool
        Keep only the points up to the first failed step (a failure that is
        raised: the trajectory is the partial one).
    """
    B, nb = final.batch_shape, len(final.batch_shape)
    if store.arrays is None:  # interrupted before the first chunk came back
        return None
    a = store.arrays
    t, is_step = a["t"][:store.filled], a["is_step"][:store.filled]
    n_rec = min(len(t), n_slots)
    # a raised failure: keep the points up to the failed step
    st = np.atleast_1d(np.asarray(final.members.status))
    if cut_at_failure and np.any(st != Status.OK):
        fs = int(np.min(np.atleast_1d(np.asarray(final.members.fail_step))[st != Status.OK]))
        ks = np.rint((t[:n_rec] - final.t0) / h).astype(int)
        n_rec = int(np.searchsorted(ks, fs, side="right"))
    keep = slice(0, n_rec)

    def unflat(x: np.ndarray) -> np.ndarray:
        return x.reshape((x.shape[0], *B, *x.shape[2:])) if nb else x

    q = jax.tree.map(lambda x: unflat(x[keep]), a["q"])
    # the slots that took a step are a prefix (the step index only grows): slices, not copies
    n_step_slots = int(np.count_nonzero(is_step[keep]))
    if not np.all(is_step[:n_step_slots]):  # an internal invariant, never a user error
        raise RuntimeError("manifold_dirac: the stored steps are not a prefix of the stored points (a bug)")
    steps = slice(0, n_step_slots)
    meta["total_iterations"] = int(np.sum(a["slot_iterations"][steps]))  # every step's, stored or not
    return Trajectory(
        slip=unflat(a["slip"][keep]), holonomic_violation=unflat(a["holonomic_violation"][keep]),
        t=t[keep], q=q, p=unflat(a["p"][keep]), v=unflat(a["v"][keep]), energy=unflat(a["energy"][keep]),
        xi=unflat(a["xi"][steps]), mu=unflat(a["mu"][steps]),
        constraint_residual=unflat(a["constraint_residual"][steps]), residual=unflat(a["error"][steps]),
        iterations=unflat(a["iterations"][steps]), status=status, messages=messages, meta=meta,
    )
