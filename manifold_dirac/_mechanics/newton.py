"""Newton's method for one step's equations, compiled (``lax.while_loop``).

Generic: it knows nothing of schemes. ``fun(z) -> (r, scale, aux)`` gives
the residual ``r (N,)``, a per-equation scale ``(N,)`` (the size of the terms
each equation sums: momenta for the momentum equations, ``|xi|`` for the
constraints) and any auxiliary output; the Jacobian ``dr/dz`` is exact, by
forward-mode autodiff (``jax.jacfwd``) or a function the caller gives.

Stopping rule (round-off by default, relative to the problem's own scale):
with the scaled error ``e = max_i |r_i| / scale_i`` (a zero residual counts
as 0 whatever its scale),

* stop, converged, when ``e <= 4 eps`` (round-off reached; for the start
  itself, before any update, :data:`START_ACCEPT`);
* stop, converged, when the error stagnates at an acceptable level:
  ``e >= e_prev / 2`` and ``e <= rtol`` (no further digits to gain);
* stop, converged, when the error stagnates at the round-off floor of the
  data (only with a ``floor``, tested by a probe trip of the loop only then):
  ``|r_i| <= 4 (eps scale_i + floor_i)`` for every ``i``, where ``floor_i``
  is the residual's sensitivity to the rounding of the points it is
  evaluated at (a system at a large offset, ``q ~ 1e9``, whose positions are
  only resolved to ``1e9 eps``);
  With ``floor=DEFER_FLOOR`` the test is not in the program: where a probe
  would be taken the solve stops instead, ``NO_CONVERGENCE`` with
  ``NewtonResult.deferred`` set, and the caller solves the step again with
  the test (:func:`~manifold_dirac._run.loop.drive` runs the chunk again
  with the program that holds it);
* stop after ``max_iter`` updates: converged iff ``e <= rtol``;
* stop, failed, on a non-finite residual (the last finite iterate is returned).

No fixed absolute floor: a system in SI units at the micro scale converges
like the same system in unit scale, and the round-off floor scales with the
problem.

The iteration is one plain ``lax.while_loop`` (one copy of the Newton
update in the compiled program), and the Newton matrix is solved by
:func:`~manifold_dirac._mechanics.small.solve_small`, Gaussian elimination with partial pivoting written out
for the matrix's static size (no LAPACK call) up to
:data:`~manifold_dirac._mechanics.small.SMALL_SOLVE_MAX`
unknowns, and as a compiled loop up to
:data:`~manifold_dirac._mechanics.small.ROLLED_SOLVE_MAX`: with neither a LAPACK call nor a library matrix product inside
it, XLA:CPU compiles a whole trajectory loop, Newton included, into one
kernel (``docs/performance.md``). Under ``vmap`` the loop runs until every
member has stopped; members already stopped keep their iterate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .small import mv, solve_small
from .status import Status
from .._types import PyTree

__all__ = ["DEFER_FLOOR", "FloorTest", "NewtonResult", "RoundoffFloor", "SolverOptions", "forward_jacobian",
           "newton", "scaled_error"]

_EPS = float(np.finfo(np.float64).eps)

_DEFERRED = -1
"""Newton's status inside its loop for a stop left to the round-off-floor test (:data:`DEFER_FLOOR`); reported
as ``NO_CONVERGENCE`` with :attr:`NewtonResult.deferred` set."""

KEEP_CONTRACTION = 1.0 / 32.0
"""With ``SolverOptions(jacobian="keep")``, a kept matrix is used while each update cuts the scaled error to at
most this fraction of what it was; after an update that does not, the next trip evaluates the matrix at its
iterate.

From a matrix of the last step, an update contracts the error by a factor of the order of the change of the
matrix over a step; at ``1/32`` a solve from a start at ``1e-3`` reaches round-off in at most eight such
updates. Measured on the composed snakeboard and rolling disk (``python benchmarks/newton_keep.py``,
``benchmarks/results/newton_keep.md``): at ``1/2`` the snakeboard's runs took 3.1 to 5.3 times the updates of
``"every"`` and were slower than it from ``1e-8`` down; at ``1/8`` they took 1.7 to 2.5 times the updates and
5 to 27 % less time, at ``1/32`` 1.4 to 1.8 times the updates and 8 to 25 % less time; on the disk the three
were within the noise of each other."""


START_ACCEPT = 4.0
"""The start ``z0`` is a solution, with no update, when its scaled error is at most ``START_ACCEPT * eps``.

Not looser: a start accepted without an update leaves out what its residual
holds beyond the threshold, and from the previous step's solution that
omission repeats at every step and adds up. ``64 eps`` was tried (on the
rolling disk, a relative equilibrium, the predicted starts of a composed
rollout's repeated sub-steps lay at 5 to 40 ``eps``: round-off of the
solutions, multiplied by the predictor's extrapolation); it dropped a damping
of ``5e-13`` on a free particle entirely over 2000 steps, each reported OK
(``tests/mechanics/test_newton_start.py``)."""


@dataclass(frozen=True)
class SolverOptions:
    """Options of the Newton solve of each step.

    Attributes
    ----------
    rtol : float
        Largest scaled residual accepted when the iteration stagnates or the
        budget is spent (relative to each equation's own scale). Iterations
        continue to round-off whenever they still gain digits.
    max_iter : int
        Newton updates per step before the step is reported as not converged.
    jacobian : {"every", "reuse", "keep"}
        ``"every"`` (default): the Newton matrix is evaluated at every
        iterate. ``"reuse"`` (simplified Newton): it is evaluated at the
        step's first iterate and reused, and evaluated again after an
        update that failed to halve the scaled residual; the stopping rule is
        the same (stagnation is judged on updates made with a matrix
        evaluated at their iterate). Measured in ``benchmarks/simplified_newton.py``
        (``docs/performance.md``). ``"keep"`` (simplified Newton across
        steps): the inverse of the matrix is kept from one step to the next
        (in the state, ``State.newton``; for a composition, one per sub-step,
        from the same sub-step on the last step) and used while each update
        cuts the scaled error to :data:`KEEP_CONTRACTION` of what it was;
        after an update that does not, and on the first step, the matrix is
        evaluated at the iterate (on a composition's first step, a sub-step
        of the second half starts from the matrix its mirror used:
        :func:`~manifold_dirac._mechanics.composition.sub_step_matrix`). The same stopping rule and tolerance: the
        solutions agree with ``"every"``'s to Newton's tolerance, and an
        update with a kept matrix costs one evaluation of the equations and
        a product with the kept inverse instead of a Jacobian and a solve.
        For runs of many small steps, where the matrix changes little from
        step to step (``docs/composition.md``). With ``"reuse"`` and
        ``"keep"``, an update made with a matrix not evaluated at its
        iterate that raises the error or gives a non-finite value is not
        taken (nor counted): the matrix is evaluated at the same iterate
        instead. So a kept matrix of another step size or system (a state
        carried over) costs one evaluation of the equations. Under
        ``jax.vmap`` without an axis name (``jax.vmap(rollout)``) both
        branches of the choice run for every member at every update, the
        matrix and its inverse included: use ``"every"`` there
        (``integrate``'s batches choose per member).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> tight = md.SolverOptions(rtol=1e-12, max_iter=30)
    >>> tr = md.integrate(md.systems.pendulum(), np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=10,
    ...                   solver=tight)
    >>> bool(tr.residual.max() < 1e-12)
    True
    """

    rtol: float = 1e-10
    max_iter: int = 30
    jacobian: str = "every"

    def __post_init__(self) -> None:
        if isinstance(self.rtol, bool) or not isinstance(self.rtol, (int, float)) or not (0 < self.rtol < 1):
            raise ValueError(f"SolverOptions: rtol must be a number in (0, 1), got {self.rtol!r}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"SolverOptions: max_iter must be a positive integer, got {self.max_iter!r}")
        if not isinstance(self.jacobian, str):
            raise TypeError(f"SolverOptions: jacobian must be a string, got {type(self.jacobian).__name__}")
        if self.jacobian not in ("every", "reuse", "keep"):
            raise ValueError(f"SolverOptions: jacobian must be 'every', 'reuse' or 'keep', got {self.jacobian!r}")


class NewtonResult(NamedTuple):
    """Outcome of :func:`newton`.

    Attributes
    ----------
    z : array, shape=[N]
        The solution; on a non-finite failure the last finite iterate.
    aux : pytree
        ``fun``'s auxiliary output at ``z``.
    status : int32 array, shape=[]
        ``Status.OK``, ``NO_CONVERGENCE`` or ``NONFINITE``.
    iterations : int32 array, shape=[]
    error : array, shape=[]
        The scaled residual at ``z``.
    deferred : bool array, shape=[]
        With ``floor=DEFER_FLOOR``: the solve stopped where the round-off
        floor would have been tested (status ``NO_CONVERGENCE``; the caller
        solves again with the test). False otherwise.
    inverse : array, shape=[N, N], or None
        With ``SolverOptions(jacobian="keep")``: the inverse of the Newton
        matrix the solve used last (to keep for the next step), or the one
        it was given when it made no update. None otherwise.
    """

    z: jax.Array
    aux: Any
    status: jax.Array
    iterations: jax.Array
    error: jax.Array
    deferred: jax.Array | bool = False
    inverse: jax.Array | None = None


def forward_jacobian(f: Callable[[jax.Array], jax.Array], x: jax.Array, anchor: PyTree = None) -> jax.Array:
    """``jax.jacfwd(f)(x)``, shape ``(*f(x).shape, N)``, with its tangent basis computed where ``x`` is.

    The same forward-mode pass as ``jax.jacfwd`` (one ``jvp`` per basis
    vector, batched with ``vmap``), with the basis (the identity ``(N, N)``,
    a literal) passed through ``lax.optimization_barrier`` together with
    ``x``. With ``jax.jacfwd``'s own basis, every part of the tangents that
    depends on the basis alone (the linear parts of ``f``) is a constant of
    the Newton and step loops, and XLA's loop-invariant code motion hoists
    it out of them into the program's entry computation: computed once per
    call, but each an operation XLA:CPU runs outside the loop's kernel, and
    with more than 9 ready at once it hands half of them to another thread
    (``docs/performance.md``, "What a call costs besides its loop"). Here
    they are computed at every evaluation instead: cheaper for a short
    call of a small system, dearer per step for a large one, so
    :func:`~manifold_dirac.rollout` uses it for small steps only
    (:data:`~manifold_dirac._mechanics.step.BASIS_IN_LOOP_MAX`) and
    :func:`~manifold_dirac.integrate` not at all.
    Equal to ``jax.jacfwd`` entry by entry (``tests/mechanics/test_call_entry.py``, and
    ``tests/mechanics/test_step_jacobian.py`` for the step's matrix).

    Parameters
    ----------
    f : callable
        ``f(x) -> array``, differentiable in forward mode.
    x : array, shape=[N]
        The point at which the Jacobian is taken.
    anchor : pytree, optional
        Values the basis is computed with instead of ``x`` alone (passed
        through the same barrier): for an ``x`` that is itself a constant,
        such as the zero of a perturbation, the loop's iterate.

    Returns
    -------
    array, shape=[*f(x).shape, N]
        ``J[..., j] = d f / d x_j`` at ``x``.
    """
    x = jnp.asarray(x)
    basis, x, _ = jax.lax.optimization_barrier((np.eye(x.shape[0], dtype=x.dtype), x, anchor))
    basis = jax.lax.stop_gradient(basis)  # a constant: its tangent stays symbolic under differentiation
    return jax.vmap(lambda t: jax.jvp(f, (x,), (t,))[1], out_axes=-1)(basis)


def scaled_error(r: jax.Array, scale: jax.Array) -> jax.Array:
    """``max_i |r_i| / scale_i``, a zero ``r_i`` counting as 0 (NaN propagates)."""
    a = jnp.abs(r)
    ratio = jnp.where(a == 0, 0.0, a / jnp.where(scale > 0, scale, 1.0))
    ratio = jnp.where((a > 0) & ~(scale > 0), jnp.inf, ratio)  # a nonzero residual of a zero-scale equation
    ratio = jnp.where(jnp.isnan(r) | jnp.isnan(scale), jnp.nan, ratio)
    return jnp.max(ratio, initial=0.0)


class RoundoffFloor(NamedTuple):
    """What :func:`newton` needs to test whether a residual is at the round-off floor of its data.

    Attributes
    ----------
    residual : callable
        ``residual(z, eta) -> (N,)``: the residual with the data it is
        evaluated at moved by ``eta`` (shape ``(dim,)``; ``eta = 0`` is
        ``fun``'s residual).
    dim : int
        The size of ``eta`` (at most ``N``).
    resolution : callable
        ``resolution(z, aux) -> scalar``: the rounding of that data at ``z``
        (``eps`` times its largest coordinate).
    """

    residual: Callable[[jax.Array, jax.Array], jax.Array]
    dim: int
    resolution: Callable[[jax.Array, PyTree], jax.Array]


FloorTest = RoundoffFloor | Callable[[jax.Array], jax.Array] | str
"""What :func:`newton` takes as ``floor``: a :class:`RoundoffFloor`, ``floor(z) -> (N,)`` itself, or
:data:`DEFER_FLOOR`."""

DEFER_FLOOR = "defer"
"""``newton(..., floor=DEFER_FLOOR)``: the round-off-floor test left out of the program, its probe replaced by a stop.

Where a probe would be taken (an update with a matrix evaluated at its iterate stagnates above ``rtol``) the
solve stops with ``NO_CONVERGENCE`` and :attr:`NewtonResult.deferred` set; up to there its iterates are those
of the solve with the test. A run's loop is compiled this way (the test's own copy of the step equations and
their derivatives, about a quarter of the loop's program, is not compiled, ``docs/performance.md``), and a chunk
in which a member stops so is run again by the program with the test (:func:`~manifold_dirac._run.loop.drive`).
"""


def newton(
    fun: Callable[[jax.Array], tuple[jax.Array, jax.Array, Any]], z0: jax.Array, options: SolverOptions,
    active: Any = True, floor: FloorTest | None = None, axis_name: str | None = None,
    jacobian: Callable[[jax.Array], jax.Array] | None = None, kept: jax.Array | None = None,
) -> NewtonResult:
    """Solve ``fun(z)[0] = 0`` from ``z0`` (see the module docstring for the stopping rule).

    ``active = False`` (a failed, frozen batch member) evaluates ``fun`` once
    and iterates no further, so that it does not hold up the batch.

    ``floor``, optional (a :class:`RoundoffFloor`): tests whether a stagnating residual is at the
    round-off floor of the data, ``|r_i| <= 4 (eps scale_i + floor_i)`` with
    ``floor_i = sum_j |dr_i / d eta_j| resolution``. Its Jacobian
    ``dr/d eta`` comes from the **same** linearization as the Newton matrix
    ``dr/dz`` (one forward-mode pass over the tangents ``(dz, d eta)``, whose
    basis a per-member flag selects): when an update stagnates above
    ``rtol`` the next trip of the loop is a *probe* that evaluates the
    ``eta`` columns at the current iterate instead of the ``z`` columns, and
    either stops (at the floor) or goes on with Newton. So the program holds
    one linearized copy of the step equations, with no branch, and the probe
    costs one Jacobian evaluation where it is needed (it is not counted as
    an iteration). ``floor`` may also be a function ``floor(z) -> (N,)``
    giving ``floor_i`` itself, evaluated in a branch of the probe, or
    :data:`DEFER_FLOOR`: no test in the program, a stop where the probe
    would be.

    ``kept``, optional, with ``options.jacobian == "keep"``: the inverse of a Newton matrix ``(N, N)`` to start
    with (a non-finite one, as the default of NaN: none, the first trip evaluates the matrix); the inverse the
    solve used last is returned as :attr:`NewtonResult.inverse`.

    ``jacobian``, optional: ``jacobian(z) -> (N, N)``, the exact ``dr/dz``
    at ``z`` (default ``jax.jacfwd`` of ``fun``'s residual), for a caller
    that knows columns of it in closed form (:meth:`StepMap.jacobian`: the
    multipliers' columns). Not with a :class:`RoundoffFloor`, whose probe
    shares the forward-mode linearization (a ``ValueError``).

    With ``options.jacobian == "reuse"`` the linearization is a branch taken
    on the first trip, after an update that did not halve the error, and for
    a probe; ``axis_name``, when ``newton`` runs under ``jax.vmap(...,
    axis_name=...)``, makes it one branch for the whole batch (taken when any
    member needs it) instead of a select that evaluates it at every trip.
    """
    rtol, max_iter = options.rtol, options.max_iter

    def value(z):
        r, scale, aux = fun(z)
        return r, scale, scaled_error(r, scale), aux

    def lin(z):
        r, _, _ = fun(z)
        return r

    N = z0.shape[0]
    if isinstance(floor, str):
        if floor != DEFER_FLOOR:
            raise ValueError(f"newton: floor must be a RoundoffFloor, a function or {DEFER_FLOOR!r}, got {floor!r}")
        defer, floor = True, None
    else:
        defer = False
    linear = floor if isinstance(floor, RoundoffFloor) else None  # the floor's Jacobian from the linearization
    if linear is not None and jacobian is not None:
        raise ValueError("newton: a RoundoffFloor takes the Newton matrix from its own linearization; "
                         "give a jacobian only with a floor function or none")
    shared = linear is not None
    if linear is not None:
        eta0 = jnp.zeros(linear.dim, z0.dtype)
        basis_z = jnp.eye(N, dtype=z0.dtype)
        basis_eta = jnp.eye(N, linear.dim, dtype=z0.dtype)  # probe: the columns dr/d eta_j, then zeros

        def jac_or_probe(z, probe):
            tz = jnp.where(probe, 0.0, basis_z)
            te = jnp.where(probe, basis_eta, 0.0)
            col = lambda a, b: jax.jvp(linear.residual, (z, eta0), (a, b))[1]  # noqa: E731
            return jax.vmap(col, out_axes=1)(tz, te)
    else:
        jac = jax.jacfwd(lin) if jacobian is None else jacobian

    r0, s0, e0, aux0 = value(z0)
    finite0 = jnp.isfinite(e0)
    done0 = (e0 <= START_ACCEPT * _EPS) | ~finite0 | ~jnp.asarray(active)
    status0 = jnp.where(finite0, Status.OK, Status.NONFINITE).astype(jnp.int32)

    reuse = options.jacobian in ("reuse", "keep")
    keep = options.jacobian == "keep"
    if keep:
        if kept is None:
            kept = jnp.full((N, N), jnp.nan, z0.dtype)
        kept_valid = jnp.all(jnp.isfinite(kept))

    def linearize(z, probe):
        return jac_or_probe(z, probe) if shared else jac(z)

    def cond(c):
        return ~c[4]

    def body(c):
        z, r, e, it, done_in, _, aux, s, probe, J_kept, stale, trip, M_kept = c
        if reuse:
            # keep: the first trip uses the matrix it was given, if any
            need = ((trip == 0) & ~kept_valid if keep else trip == 0) | probe | stale
            if axis_name is not None:
                need = jax.lax.pmax(need.astype(jnp.int32), axis_name) == 1  # unbatched: a real branch
            if keep:  # the update needs the inverse only; J is read by a probe's floor, which evaluates it

                def fresh_inverse():
                    Jf = linearize(z, probe)
                    return Jf, jnp.where(probe, M_kept, solve_small(Jf, np.eye(N)))

                J, M = jax.lax.cond(need, fresh_inverse, lambda: (jnp.zeros((N, N), z0.dtype), M_kept))
            else:
                J = jax.lax.cond(need, lambda: linearize(z, probe), lambda: J_kept)
            fresh = need
        else:
            J = linearize(z, probe)
            fresh = jnp.bool_(True)
        if linear is not None:
            floor_z = jnp.sum(jnp.abs(J), axis=1) * linear.resolution(z, aux)
        if keep:
            z1 = jnp.where(probe, z, z - mv(M, r))
        else:
            z1 = jnp.where(probe, z, z + solve_small(J, -r))  # a probe does not move
        if floor is not None:
            if not shared:  # a floor function of its own (a branch: its own copy of the equations)
                floor_z = jax.lax.cond(probe, floor, jnp.zeros_like, z)
            at_floor = probe & jnp.all(jnp.abs(r) <= 4.0 * (_EPS * jnp.abs(s) + floor_z))
        r1, s1, e1, aux1 = value(z1)
        finite = jnp.isfinite(e1) & jnp.all(jnp.isfinite(z1))
        if reuse:
            # an update made with a matrix not evaluated at its iterate (kept from an earlier iterate or step)
            # that gives a non-finite value or a larger error is not taken: the trip is not counted, and the
            # next one evaluates the matrix at the same iterate (a kept matrix is a guess, not a failure)
            reject = ~probe & ~fresh & ~(finite & (e1 <= e))
            z1, r1, s1, e1 = (jnp.where(reject, a, b) for a, b in ((z, z1), (r, r1), (s, s1), (e, e1)))
            aux1 = jax.tree.map(lambda a, b: jnp.where(reject, a, b), aux, aux1)
            finite = finite | reject
        else:
            reject = jnp.bool_(False)
        it1 = it + jnp.where(probe | reject, 0, 1).astype(jnp.int32)
        stagnant = e1 >= 0.5 * e
        # stagnation is judged on updates made with a matrix evaluated at their iterate: a kept matrix's slow
        # update is no sign that the iteration has reached what it can
        converged = (e1 <= 4 * _EPS) | (fresh & stagnant & (e1 <= rtol))
        if floor is None:
            probe_next = jnp.bool_(False)
        else:
            # stagnation above rtol with a matrix evaluated at this iterate: test the floor (a reused
            # matrix is evaluated again first: the update, not the data, may be what stagnates)
            converged = jnp.where(probe, at_floor, converged)
            probe_next = ~probe & fresh & finite & stagnant & ~converged
        if reuse:  # an update that did not halve the error (keep: cut it to KEEP_CONTRACTION), or one not taken:
            # the next Newton trip evaluates the matrix
            slow = (e1 > KEEP_CONTRACTION * e) if keep else stagnant
            stale_next = jnp.where(probe, stale, finite & slow & ~converged)
        else:
            stale_next = stale
        out_of_budget = it1 >= max_iter
        done = ~finite | converged | (out_of_budget & ~probe_next)
        status = jnp.where(
            ~finite, Status.NONFINITE, jnp.where(converged | (e1 <= rtol), Status.OK, Status.NO_CONVERGENCE)
        ).astype(jnp.int32)
        if defer:  # where the test's probe would start (there are no probes here): stop, marked in the status
            deferred = fresh & finite & stagnant & ~converged
            done = done | deferred
            status = jnp.where(deferred, _DEFERRED, status).astype(jnp.int32)
        # a non-finite iterate: keep the last finite one (where the failure can be diagnosed)
        z1 = jnp.where(jnp.all(jnp.isfinite(z1)), z1, z)
        # (under vmap the loop runs while any member runs, and JAX keeps a stopped member's values)
        if reuse and not keep:  # kept for the next trip (a probe's columns are not the Newton matrix)
            J_next = jnp.where(probe, J_kept, J) if shared else J
        else:
            J_next = J_kept
        M_next = M if keep else M_kept
        return z1, r1, e1, it1, done, status, aux1, s1, probe_next, J_next, stale_next, trip + 1, M_next

    J0 = jnp.zeros((N, N) if reuse and not keep else (0, 0), z0.dtype)  # the matrix reused (not with keep)
    c = (z0, r0, e0, jnp.int32(0), done0, status0, aux0, s0, jnp.bool_(False), J0,
         jnp.bool_(False), jnp.int32(0), kept if keep else jnp.zeros((0, 0), z0.dtype))
    z, _, e, it, _, status, aux, *_, M_out = jax.lax.while_loop(cond, body, c)
    inverse = M_out if keep else None
    if not defer:
        return NewtonResult(z, aux, status, it, e, inverse=inverse)
    deferred = status == _DEFERRED  # (carried in the status: no value of its own in the loop)
    return NewtonResult(z, aux, jnp.where(deferred, Status.NO_CONVERGENCE, status).astype(jnp.int32), it, e,
                        deferred, inverse)
