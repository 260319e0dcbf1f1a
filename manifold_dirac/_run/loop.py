"""The compiled loop of a run, and the host loop over its chunks.

A run is a sequence of compiled *chunks* (:func:`_build_chunk`): each chunk
is a loop over up to ``CHUNK`` stored points (fewer for a large batch or a
large stride), each stored point followed by ``stride - 1`` unstored steps,
so memory is ``O(n_steps / stride)`` and nothing between stored points is
materialized. Each stored point is computed in the loop, where it is
written (velocity, energy, constraint violations: a few hundred flops), so
that storing every point costs little more than the step itself. ``h``, the initial data, the
parameters, the stride and the step count are traced: changing them does
not recompile. Between chunks (:func:`drive`) the host copies the stored
points out, which is where a run can be interrupted without losing what it
computed, report progress, and stop early once every member has failed.

What is stored is the :class:`~manifold_dirac._run.recording.Recording`'s
business, progress and the user's callback the
:class:`~manifold_dirac._run.reports.Monitor`'s: both are passed in, the
loop itself has no branch for them.

Batches map the one-member step map and stored point over the members
(:func:`~manifold_dirac._run.programs.member_map`: a loop over members on a
CPU, ``jax.vmap`` on a GPU); the step index is shared by all members
(unbatched), so the loop that skips slots past the end stays a real loop.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._manifolds.base import tree_where
from .._mechanics.status import Status
from .._mechanics.step import FAIL_DEFERRED, FAIL_ENERGY, State, StepMap
from .._types import Params, Vector
from .programs import member_map, member_step
from .recording import Raw, Recording, _pack, _Store, _unpack, back_from_step, chart_back
from .reports import _OK, Monitor
from .state import RunState

CHUNK = 4096
"""Stored points per compiled chunk of a single trajectory (a fixed shape: one compile serves every run length).

Each chunk costs a fixed 0.1-0.25 ms (the call with its ~20 arguments and ~13 outputs, the output's allocation
and zero fill): over 4096 points, less than 0.1 us per stored point. A short run does not pay for the whole
chunk: the program runs its live slots only, and the host reads a view of the output (no copy on a CPU) and
copies the live rows; a 16-row program measured side by side saved ~0.02-0.05 ms a call."""

CHUNK_POINTS = 2 ** 14
"""Stored points (rows times members) per chunk of a batch at most (:func:`chunk_rows`)."""

CHUNK_MIN = 8
"""Rows per chunk at least, whatever the batch size."""

CHUNK_STEPS = 2 ** 18
"""Steps per chunk at most, when the stride is large (:func:`drive` runs fewer slots per chunk then)."""

LOOP_COMPILER_OPTIONS = {"xla_disable_hlo_passes": "reshape-mover"}
"""XLA options of a run's loop program (:func:`_build_chunk`) on a CPU: XLA's ``reshape-mover`` pass left out.

The step's small arrays meet in two shapes (SE(2)'s angle as ``(1,)`` and
as a scalar; a Jacobian's tangents batched over them), and XLA's reshape
mover sinks each reshape between them one operation per round of its
simplification pipeline, which runs again until nothing changes: 20 to 27
rounds over the whole loop program instead of 6 to 8. Without the pass,
XLA's passes over the knife edge's loop took 0.24 s instead of 0.43 s, the
three-dimensional rolling disk's 0.68 s instead of 1.32 s, and the loop's
whole compile 7 to 19 % less on the systems whose steps hold such reshapes
(``python benchmarks/loop_passes.py``); the others compile as before. In a
loop compiled into one kernel a reshape is a view of the same memory, so
where it sits does not change the kernel's work: the results are the same
bit for bit (``tests/test_loop_options.py``) and the time per step the same
(``benchmarks/results/per_step_loop_options.md``). The options are part of
the persistent cache's key; a value of the same option in the user's
``XLA_FLAGS`` is replaced for this program only. On another backend, XLA's
defaults (:func:`loop_compiler_options`)."""


def loop_compiler_options() -> dict | None:
    """:data:`LOOP_COMPILER_OPTIONS` when JAX's default backend is the CPU, else ``None`` (XLA's defaults)."""
    return dict(LOOP_COMPILER_OPTIONS) if jax.default_backend() == "cpu" else None


def _energy_failure(st: State, k: jax.Array, v: Vector, error: jax.Array) -> State:
    """``st`` frozen with status ``NONFINITE``: the energy at its stored point ``q_k`` is not finite."""
    return st._replace(
        status=jnp.full_like(st.status, Status.NONFINITE),
        fail_step=jnp.full_like(st.fail_step, k),
        fail_error=error,
        fail_z=jnp.concatenate([v, jnp.zeros((*jnp.shape(v)[:-1], st.fail_z.shape[-1] - v.shape[-1]))], axis=-1),
        fail_kind=jnp.full_like(st.fail_kind, FAIL_ENERGY),
    )


def _build_chunk(sm: StepMap, batched: bool, recording: type[Recording] = Recording,
                 defer_floor: bool = False) -> Callable:
    """The compiled chunk: up to ``CHUNK`` slots, each one stored point and up to ``stride`` steps.

    ``defer_floor``: the step without the round-off-floor test of Newton's
    stop (:data:`~manifold_dirac._mechanics.newton.DEFER_FLOOR`), the program
    a run starts with: the test's copy of the step equations and their
    derivatives is about a quarter of the loop's operations and of its
    compile, and a run that never reaches it computes the same values
    without it. :func:`drive` runs a chunk in which a member reached it
    again with the program that holds it.

    ``stride`` is an argument (traced): another stride does not recompile.
    The program is ``chunk(members, q_prev, counts, v_init, times, params,
    controls) -> ((members, q_prev), rows)``: ``counts`` the int32 vector
    ``(have_prev, k0, slot0, n_slots, n_total, stride)``, ``times`` the
    float64 vector ``(t0, h)`` (two arguments instead of eight: each one
    costs its conversion in every call); the step index after the chunk is
    not an output, the host computes it (:func:`_after`).
    Inside a slot the steps are a loop with a traced trip count whose first
    iteration keeps its step record; the slot computes its stored point
    (:meth:`Recording.point <manifold_dirac._run.recording.Recording.point>`:
    velocity, energy, constraint violations, from ``q_k``, ``q_{k-1}`` and
    that record) and writes it, with the record, as one packed row, so the
    step map appears once in the program and the stored point costs its
    arithmetic only (the slot loop is one compiled loop: a pass over the rows
    after it would be a few dozen separate small kernels per chunk, which on
    a CPU cost more than the arithmetic). The last live slot takes only the
    steps left (none are computed and discarded), and at least one: the
    point at ``q_k`` needs the step from ``q_k`` (its central velocity),
    which is taken but not kept at the end of the run. The slots are a loop
    over the live slots only (``fori_loop`` with a traced trip count,
    writing each slot's row in place): a short run does not pay for a whole
    chunk. Rows of the output past the live slots are left zero and never
    read.

    The central velocity of a stored point needs ``-R_{q_k}^{-1}(q_{k-1})``
    (:func:`~manifold_dirac._run.recording.back_from_step`): with a symmetric
    retraction that is the last step's ``xi``, which the slots carry (it is
    computed from ``q_k`` and ``q_{k-1}`` once, for the chunk's first point);
    otherwise each slot computes it from the two points.

    A healthy member whose energy at its stored point ``q_k`` is not finite
    fails there, in the slot that finds it: it is frozen at ``q_k`` (the
    slot's steps from ``q_k`` discarded, status ``NONFINITE``), as the step's
    own failures are, and its stored point at ``q_k`` carries that status.
    """
    # jitted: its trace is cached and reused by the shape queries and the loop body below (one trace of the step
    # per program instead of four); XLA inlines the call, the compiled program is the same
    step = jax.jit(member_step(sm, batched, defer_floor=defer_floor))
    # a state of another integrator (a composed one, another composition) in this step map's form: a static
    # decision at the trace, nothing for a state already in form
    conform = jax.vmap(sm.conform) if batched else sm.conform
    point = recording.point
    if batched:
        point = member_map(point, in_axes=(None, 0, 0, None, None, 0, None, None))
    lead = 1 if batched else 0
    spec: list = []
    Q = sm.system.Q
    # -R_{q_k}^{-1}(q_{k-1}) of a stored point: with a symmetric retraction the last step's xi, carried from slot to
    # slot (computed from the two points once per chunk, for its first point); otherwise from the two points
    carried = back_from_step(sm)
    back_of: Callable = functools.partial(chart_back, Q)
    if batched:
        back_of = member_map(back_of, in_axes=(0, 0))

    def chunk(members, q_prev, counts, v_init, times, params, controls):
        # the host's scalars come as two small arrays (one argument each, not eight: each argument of a call
        # costs its conversion and transfer); see :func:`drive`
        members = conform(members)
        have_prev = counts[0] != 0
        k0, slot0, n_slots, n_total, stride = (counts[i] for i in range(1, 6))
        t0, h = times[0], times[1]

        def control(k):
            return None if controls is None else controls[..., jnp.clip(k, 0, controls.shape[-2] - 1), :]

        def run_slot(carry):
            st0, qp0, b0, hp, k = carry
            k_end = jnp.minimum(k + stride, n_total)
            n_sub = jnp.maximum(k_end - k, 1)  # the steps of this slot; one (not kept) at the end of the run

            def sub(i, c):
                st, qp, kk, rec0, its = c
                new, rec = step(st, kk, t0 + kk * h, h, params, control(kk))
                rec0 = jax.tree.map(lambda a, b: jnp.where(i == 0, a, b), rec, rec0)  # i unbatched: one select
                advance = kk < k_end
                its = its + jnp.where(advance, rec.iterations, 0)  # every step's, stored or not
                return tree_where(advance, new, st), tree_where(advance, st.q, qp), kk + advance, rec0, its

            rec_init = jax.eval_shape(lambda: step(st0, k, t0, h, params, control(k))[1])
            rec_init = jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype), rec_init)
            its0 = jnp.zeros_like(rec_init.iterations)
            st, qp, k2, rec, its = jax.lax.fori_loop(0, n_sub, sub, (st0, qp0, k, rec_init, its0))
            status = jnp.where(k >= n_total, st0.status, rec.status)
            raw = Raw(st0.q, b0 if carried else back_of(st0.q, qp0), status, jnp.zeros_like(status, dtype=bool))
            pt = point(sm, raw, rec, hp, k == 0, v_init, h, params)
            # a non-finite energy at the stored point of a healthy member is a failure there: the member is frozen
            # at q_k (never ok with a NaN energy), its steps of this slot discarded
            frozen = (pt.status == Status.OK) & ~jnp.isfinite(pt.energy)
            st = tree_where(frozen, _energy_failure(st0, k, pt.v, rec.error), st)
            qp = tree_where(frozen, st0.q, qp)
            pt = pt._replace(status=jnp.where(frozen, Status.NONFINITE, pt.status).astype(pt.status.dtype))
            shape = jnp.shape(pt.status)
            row = (jnp.full(shape, t0 + k * h), jnp.full(shape, k < n_total), pt, rec, its)
            # the next point's back: the last step's xi (a failed or frozen member's is never read: its v is NaN)
            b1 = jnp.where(k2 > k, st.xi, b0) if carried else None
            return (st, qp, b1, hp | (k2 > k), k2), _pack(row, spec, lead)

        carry0 = (members, q_prev, back_of(members.q, q_prev) if carried else None, have_prev, k0)
        # the live slots only (a loop with a traced trip count): a short run does not pay for a whole chunk
        shape = jax.eval_shape(lambda c: run_slot(c)[1], carry0)
        rows = chunk_rows(shape.shape[0] if batched else 1)
        buf0 = jnp.zeros((rows, *shape.shape), shape.dtype)

        def slot(j, c):
            carry, buf = c
            carry, out = run_slot(carry)
            return carry, jax.lax.dynamic_update_index_in_dim(buf, out, j, 0)

        n_live = jnp.clip(n_slots - slot0, 0, rows)
        (members, q_prev, _, _, _), buf = jax.lax.fori_loop(0, n_live, slot, (carry0, buf0))
        # the step index and "a previous point is known" after the chunk are not outputs: the host knows them
        # (:func:`_after`), and every output of a call costs its own buffer and conversion
        return (members, q_prev), buf

    compiled = jax.jit(chunk, compiler_options=loop_compiler_options())  # on disk too: exported.compiler_options
    compiled.spec = spec  # type: ignore[attr-defined]  # filled at the first trace
    return compiled


def chunk_rows(batch_size: int) -> int:
    """The stored points per chunk of a run of ``batch_size`` members (1 for a single trajectory).

    :data:`CHUNK` for a single trajectory and small batches; fewer for large
    batches, so that a chunk's output (``rows x batch_size`` stored points)
    stays within :data:`CHUNK_POINTS` (at least :data:`CHUNK_MIN` rows).
    A function of the batch size alone: it changes only with the shapes, which
    compile anyway.
    """
    return int(min(CHUNK, max(CHUNK_MIN, CHUNK_POINTS // max(batch_size, 1))))


def _after(k: int, slot0: int, n_slots: int, stride: int, n_total: int, rows: int) -> int:
    """The step index after a chunk that starts at step ``k`` and runs the slots ``slot0 .. n_slots - 1`` (host side).

    Each slot advances ``stride`` steps, the last live one only up to
    ``n_total`` (the step it takes past ``n_total`` is not kept), and a chunk
    runs at most ``rows`` slots (:func:`_build_chunk`): the index is
    ``min(k + live * stride, n_total)``, whatever the members' statuses
    (a failed member is frozen, the index goes on). "A previous point is
    known" after the chunk is ``have_prev or`` (the index advanced).
    """
    live = min(max(n_slots - slot0, 0), rows)
    return max(k, min(k + live * stride, n_total))


def _replay_to_failure(run_chunk: Callable, store: _Store, filled0: int, chunk_start: tuple, fs: int,
                       stride: int, rows: int) -> None:
    """Replace the stored points of a chunk by its points up to the failed step ``fs``, the last stride at stride 1.

    The chunk started at ``chunk_start = (members, q_prev, have_prev, k0)``
    and its points were stored from row ``filled0``. It is run again (the
    same compiled program, the same steps from the same state: the same
    values) with the run's stride up to the last stored point
    ``k_s <= fs``, then with stride 1 from ``k_s`` to ``fs + 1``: the
    points ``k_s, ..., fs`` of every member (the failed step's record at
    ``fs``; the point at ``fs + 1`` is cut with the failure). A batch's
    partial trajectory then ends at the start of the failed step with every
    member's state there, as a single trajectory's does.
    """
    members, q_prev, have_prev, k0 = chunk_start
    k_s = k0 + (fs - k0) // stride * stride
    store.filled = filled0
    if k_s > k0:  # the stored points k0, k0 + stride, ..., k_s (a closing point at k_s, dropped: stored again below)
        n_a = (k_s - k0) // stride + 1
        store.reserve(filled0 + n_a + fs + 2 - k_s)
        (members, q_prev), out = run_chunk(members, q_prev, have_prev, k0, 0, n_a, k_s, stride)
        store.add(np.asarray(out), n_a)
        store.filled -= 1
        have_prev = True  # k_s > k0: the chunk advanced
    n_b = fs + 2 - k_s  # the points k_s, ..., fs + 1, at stride 1
    store.reserve(store.filled + n_b)
    k, slot0 = k_s, 0
    while slot0 < n_b:
        (members, q_prev), out = run_chunk(members, q_prev, have_prev, k, slot0, n_b, fs + 1, 1)
        store.add(np.asarray(out), n_b - slot0)
        k_next = _after(k, slot0, n_b, 1, fs + 1, rows)
        have_prev, k, slot0 = have_prev or k_next > k, k_next, slot0 + rows


def _deferred(members: State) -> bool:
    """Whether a member of a chunk's final state stopped at a step left to the round-off-floor test (host side)."""
    failed = np.asarray(members.status) != _OK  # (read again by drive: JAX keeps the host copy)
    if not failed.any():  # the common case: the failure kinds are not fetched
        return False
    return bool(np.any((np.asarray(members.fail_kind) == FAIL_DEFERRED) & failed))


@dataclass
class Outcome:
    """Where the host loop ended: the final state, the points it stores, and why it stopped.

    Attributes
    ----------
    final : RunState
        The state after the last chunk whose points were stored.
    n_slots : int
        The points the run stores (fewer than planned when the callback stopped it).
    interrupted : bool
        Ctrl-C, or an exception on the host between chunks.
    error : Exception or None
        That exception (None for Ctrl-C or a run that was not interrupted).
    wall : float
        Wall-clock seconds of the loop.
    """

    final: RunState
    n_slots: int
    interrupted: bool
    error: Exception | None
    wall: float


def drive(fn: Callable, state: RunState, recording: Recording, store: _Store, monitor: Monitor,
          stop_on_failure: bool, h: float, params: Params, controls: jax.Array | None,
          with_floor: Callable[[], Callable] | None = None) -> Outcome:
    """Run the compiled chunks ``fn`` from ``state`` until ``recording``'s points are stored.

    ``fn`` may be compiled without the round-off-floor test of Newton's stop
    (``_build_chunk(..., defer_floor=True)``); ``with_floor()`` then gives
    the program that holds it. A chunk in which a member's step stopped
    where the test would have been taken (``fail_kind``
    :data:`~manifold_dirac._mechanics.step.FAIL_DEFERRED`) is discarded and
    run again from its start with that program, which runs the rest of the
    run: the same steps from the same state, the same values up to the
    test, and the test's verdict there. Nothing of the discarded chunk is
    stored or reported.

    Each call of ``fn`` (a *chunk*) runs at most :func:`chunk_rows` slots and
    about :data:`CHUNK_STEPS` steps, whichever is fewer (so that a large
    stride keeps the host's turns, where Ctrl-C, progress and the callback
    are taken, a few seconds apart at most). After each
    chunk its points go into ``store`` and ``monitor`` sees the
    step index (progress) and the state (the user's callback, which may stop
    the run: one more, closing, slot then records the state it saw). The run
    stops early once every member has failed, or once one has when
    ``stop_on_failure``. Ctrl-C or an exception between chunks ends the loop
    with what was stored (:attr:`Outcome.interrupted`).
    """
    B = state.batch_shape
    members = state.members
    q_prev = state.q_prev if state.q_prev is not None else members.q
    have_prev = state.q_prev is not None
    v_init = state.v_init if state.v_init is not None else np.zeros(np.shape(members.p))
    v_nan = np.full(np.shape(v_init), np.nan)
    rows = chunk_rows(int(np.prod(B)) if B else 1)
    per_call = min(rows, max(1, CHUNK_STEPS // recording.stride))  # the slots of one call
    use_v_init = state.v_init is not None and state.k == 0
    k = state.k
    n_slots, stride = recording.n_slots, recording.stride
    n_total = state.k + recording.n_steps
    start = time.perf_counter()
    interrupted = False
    error: Exception | None = None
    slot0 = 0
    stopped = False

    t0h = np.array([state.t0, h], np.float64)
    v_arg = v_init if use_v_init else v_nan

    def run_chunk(members, q_prev, have_prev, k, slot0, n_slots, n_total, stride):
        # the host's scalars as two numpy arrays (eager jnp scalars cost ~70 us each to dispatch, and each
        # argument its own conversion)
        counts = np.array([have_prev, k, slot0, n_slots, n_total, stride], np.int32)
        return fn(members, q_prev, counts, v_arg, t0h, params, controls)

    try:
        while slot0 < n_slots:
            chunk_start, filled0 = (members, q_prev, have_prev, k), store.filled
            n_live = min(per_call, n_slots - slot0)
            carry, out = run_chunk(members, q_prev, have_prev, k, slot0, slot0 + n_live, n_total, stride)
            if _deferred(carry[0]):
                if with_floor is None:
                    raise RuntimeError("drive: a step was left to the round-off-floor test, and no program holds "
                                       "it (a bug: please report)")
                # a step reached the round-off-floor test, which this program does not hold: the chunk again,
                # and the rest of the run, with the program that does
                fn, with_floor = with_floor(), None
                continue
            # on a CPU a view of the program's output (no copy); the store copies its live rows
            store.add(np.asarray(out), n_live)
            # the state advances only once its points are stored: an interruption keeps the two consistent
            k_next = _after(k, slot0, slot0 + n_live, stride, n_total, rows)
            (members, q_prev), have_prev, k, slot0 = carry, have_prev or k_next > k, k_next, slot0 + n_live
            monitor.update(k - state.k)
            failed = np.asarray(members.status) != _OK
            any_failed = bool(failed.any())
            if any_failed and stop_on_failure and stride > 1 and B:
                # a raised failure of a batch: the chunk's points again up to the failed step, the last
                # stride at stride 1, so that every member's good states up to that step are kept
                fs = int(np.min(np.asarray(members.fail_step)[failed]))
                _replay_to_failure(run_chunk, store, filled0, chunk_start, fs, stride, rows)
                n_slots = store.filled
                break
            if any_failed and (stop_on_failure or bool(failed.all())):
                break
            # the callback sees every chunk's end, the last one's too (a run of one chunk included)
            # (not after the closing slot of a stop: the callback saw that state already)
            if not stopped and monitor.stop(RunState(k, state.t0, members, B, q_prev, None)) and slot0 < n_slots:
                # one more (closing) slot records the state the callback saw, then the run ends
                n_total, n_slots, stopped = k, slot0 + 1, True
    except KeyboardInterrupt:
        interrupted = True
    except Exception as exc:  # noqa: BLE001  (the callback's, or the host's between chunks: re-raised by the caller)
        interrupted, error = True, exc
    finally:
        monitor.close()
    final = RunState(k, state.t0, members, B, q_prev, None)
    return Outcome(final, n_slots, interrupted, error, time.perf_counter() - start)
