"""Differentiable simulation: exact gradients of the discrete map through whole trajectories.

:func:`rollout` runs the same step map as :func:`~manifold_dirac._run.integrate.integrate`
(:class:`~manifold_dirac._mechanics.step.StepMap`: the same scheme, discrete
Lagrangian and Newton solve) as one pure JAX function of the initial data,
the parameters, the step ``h`` and a control sequence, so that ``jax.grad``,
``jax.jacfwd``, ``jax.jacrev`` and ``jax.vmap`` go through it:

* each step's unknowns ``z`` solve ``r(z; q_k, p_k, t_k, h, theta, u_k) = 0``
  (the residual :meth:`StepMap.equations`, whatever its unknowns are); the
  derivative of the solution is taken by **implicit differentiation**
  (:func:`solve_step`), ``dz = -(dr/dz)^{-1} (dr/dx) dx``, never through
  Newton's iterations: it is exact to the solve's accuracy, costs one linear
  solve per step and does not depend on how many iterations Newton took;
* the steps are one fixed-length ``lax.scan``; in reverse mode each step is
  rematerialized (``jax.checkpoint``) from its stored state and its stored
  solution ``z`` (saved by name, so Newton is *not* run again on the way
  back): memory is the trajectory itself, ``O(N (size of q + n + size of z))``,
  not ``O(N x`` a step's intermediates ``)``.

A failed step is never silent: the run's ``status`` and ``fail_step`` say
what failed and where (the codes of :class:`~manifold_dirac._mechanics.status.Status`),
every value from the failed step on is NaN, and so is every derivative of
the run (the NaN is multiplied in, so it also reaches the gradient with
respect to anything upstream: a gradient of a failed run is NaN, never a
finite number of a different map).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name
from jax.flatten_util import ravel_pytree

from .._mechanics.composition import (check_composable, get_composition, predicted_solutions, sub_step_inputs,
                                      sub_step_matrix, sub_step_start)
from .._mechanics.newton import SolverOptions, newton
from .._mechanics.rules import QuadratureRule, get_rule
from .._mechanics.schemes import Scheme, get_scheme
from .._mechanics.status import Status, classify_step
from .._mechanics.step import BASIS_IN_LOOP_MAX, CLOSED_FORM_MULTIPLIERS, StepMap
from .._mechanics.system import LagrangeDiracSystem
from . import implicit
from .start import _SINGULAR_STEP, step_conditioning
from .._manifolds.base import Manifold
from .._types import ArrayLike, Params, Point, PyTree, Scalar

__all__ = ["DIFFERENTIATION_MODES", "Rollout", "rollout", "solve_step"]

DIFFERENTIATION_MODES = ("implicit", "unrolled", "detached")
"""How :func:`rollout` differentiates each step's solve.

``"implicit"`` (the default and the only correct one for a converged solve):
implicit differentiation of the step equations. ``"unrolled"``: through a
fixed number of Newton iterations (autodiff of the iterates; exact only in
the limit of many iterations, and then at a higher cost). ``"detached"``:
the solution is treated as a constant (its derivative dropped). The last
two are wrong on purpose, for tests and for showing what the implicit term
carries (``docs/differentiable.md``).
"""

_Z_NAME = "manifold_dirac_step_solution"
"""Name under which a step's solution is saved for the reverse pass (``jax.checkpoint`` policy)."""


class Rollout(NamedTuple):
    """The result of :func:`rollout` (a pytree of arrays; differentiable where floating).

    Attributes
    ----------
    t : array, shape=[N + 1]
        ``t_k = t0 + k h``.
    q : point, shape=[N + 1, *point_shape]
        ``q_0 ... q_N``; NaN from the failed step on.
    p : array, shape=[N + 1, n]
        The scheme's momentum ``p_k`` (for the ``minus`` scheme the
        pre-momentum ``p~_k``); NaN from the failed step on.
    z : array, shape=[N, N_z]
        Each step's solved unknowns (``z = (xi, mu)`` for the schemes of
        :mod:`.schemes`); ``xi = z[:, :n]``.
    iterations : int32 array, shape=[N]
        Newton iterations of each step (a diagnostic; the gradient does not
        depend on them).
    status : int32 array, shape=[]
        ``Status.OK``, or the status of the first failed step.
    fail_step : int32 array, shape=[]
        The step ``k -> k+1`` that failed, ``-1`` while healthy.
    ok : bool
        Whether every step converged (a property; concrete values only).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> import manifold_dirac as md
    >>> r = md.rollout(md.systems.pendulum(), jnp.array([0.5]), jnp.array([0.0]), h=0.05, n_steps=20)
    >>> r.q.shape, r.z.shape, r.ok
    ((21, 1), (20, 1), True)
    >>> r.check() is r                      # a failed run would raise its StepError here
    True
    """

    t: jax.Array
    q: Any
    p: jax.Array
    z: jax.Array
    iterations: jax.Array
    status: jax.Array
    fail_step: jax.Array

    @property
    def ok(self) -> bool:
        """Whether every step converged (concrete values only)."""
        return int(self.status) == Status.OK

    def check(self) -> Rollout:
        """Raise the :class:`~manifold_dirac._errors.StepError` subclass of a failed run; else return self.

        Only on concrete values (outside ``jit``/``grad``): inside a traced
        function return ``status`` and check it after.
        """
        code = Status(int(self.status))
        if code == Status.OK:
            return self
        k = int(self.fail_step)
        t = float(np.asarray(self.t)[k])
        h = float(np.asarray(self.t)[1] - np.asarray(self.t)[0]) if len(self.t) > 1 else float("nan")
        msg = "rollout: " + code.describe(step=k, time=t, h=h)
        raise (code.exception or RuntimeError)(msg, step=k, time=t, residual=float("nan"), trajectory=None)


# ------------------------------------------------------------- one solve
def _basis_in_loop(sm: StepMap) -> bool:
    """Whether the step's Newton matrix takes its forward-mode basis inside the loop (:data:`BASIS_IN_LOOP_MAX`):
    for a small step, so that nothing of it is hoisted into the program's entry computation."""
    pushed = sm.n + sm.ns if sm.m >= CLOSED_FORM_MULTIPLIERS else sm.n + sm.ns + sm.m
    return pushed <= BASIS_IN_LOOP_MAX


def _newton_solve(sm: StepMap, z0, q, p, t, h, params, u, kept=None):
    """Newton's solve of one step (the primal; no derivative is taken through it): ``(z, info, aux, inverse)``,
    with ``aux = (q1, p1, c)`` the step's new point, momentum and constraint values at ``z`` (Newton's own last
    evaluation of the equations, so that the step does not evaluate them again; after a non-finite failure,
    at the failed iterate instead, which the step poisons with NaN whatever it holds). With
    ``SolverOptions(jacobian="keep")``, ``kept`` is the inverse Newton matrix to start with and ``inverse`` the
    one to keep for the next step (:func:`~manifold_dirac._mechanics.newton.newton`); otherwise ``inverse`` is
    empty, ``(0, 0)``. Neither is differentiated: the derivative of the solution does not depend on them."""
    res = newton(lambda z: sm.equations(z, q, p, t, h, params, u), z0, sm.options,
                 floor=lambda z: sm.roundoff_floor(z, q, p, t, h, params, u, basis_in_loop=_basis_in_loop(sm)),
                 jacobian=lambda z: sm.jacobian(z, q, p, t, h, params, u, basis_in_loop=_basis_in_loop(sm)),
                 kept=kept)
    info = jnp.stack([res.status.astype(z0.dtype), res.iterations.astype(z0.dtype), res.error])
    return res.z, info, res.aux, (res.inverse if res.inverse is not None else jnp.zeros((0, 0), z0.dtype))


def solve_step(sm: StepMap, z0: jax.Array, q: Any, p: jax.Array, t: Any, h: Any, params: Any, u: Any = None):
    """The solution ``z`` of one step's equations, differentiated implicitly.

    Parameters
    ----------
    sm : StepMap
        The step map (system, scheme, discrete Lagrangian and Newton options;
        static: not differentiated).
    z0 : array, shape=[N_z]
        Newton's starting guess (its derivative is ignored: the solution does
        not depend on it).
    q : point
        ``q_k``, the start of the step.
    p : array, shape=[n]
        ``p_k`` (for the ``minus`` scheme the pre-momentum).
    t : float or array, shape=[]
        ``t_k``.
    h : float or array, shape=[]
        The step.
    params : pytree
        The system's parameters.
    u : array, shape=[n], optional
        A control covector held over the step (None for none).

    Returns
    -------
    z : array, shape=[N_z]
        The solution of ``r(z; q, p, t, h, params, u) = 0``.
    info : array, shape=[3]
        ``(status, iterations, scaled error)`` of the solve, as floats
        (derivative zero).

    Notes
    -----
    With ``r`` the residual of (52)/(53) (Parks & Leok 2017) and ``x`` the
    step's data, the solution ``z(x)`` of ``r(z(x), x) = 0`` has, by the
    implicit function theorem where ``dr/dz`` is regular,
    ``dz = -(dr/dz)^{-1} (dr/dx) dx``. The JVP below is that formula, linear
    in ``dx``; reverse mode transposes it (one solve with ``(dr/dz)^T``). It
    is the derivative of the exact discrete map, to the accuracy of the
    solve, and independent of Newton's iteration count and starting guess.
    The rule computes its primal by the solve again, so second and higher
    derivatives apply it again too (never Newton's iterations; a JAX
    primitive, :mod:`manifold_dirac._run.implicit`, so that ``lax.scan``'s
    reverse pass does not inline the solve and drop the rule).

    Examples
    --------
    One step of a pendulum, and the derivative of its solution ``xi`` with
    respect to ``h`` (implicit, not through Newton's iterations):

    >>> import jax
    >>> import jax.numpy as jnp
    >>> import manifold_dirac as md
    >>> pendulum = md.systems.pendulum()
    >>> sm = md.StepMap(pendulum, md.get_scheme("symmetric"), md.get_rule("midpoint"), md.SolverOptions())
    >>> q, p = jnp.array([0.5]), jnp.array([0.0])
    >>> def xi(h):
    ...     z, info = md.solve_step(sm, jnp.zeros(1), q, p, 0.0, h, pendulum.params)
    ...     return z[0]
    >>> dxi = jax.jit(jax.grad(xi))       # compiled once (eagerly, each operation would compile apart)
    >>> bool(xi(0.05) < 0), bool(dxi(0.05) < 0)      # the pendulum falls back, faster with h
    (True, True)
    """
    z, info, _, _ = _solve_step_aux(sm, z0, q, p, t, h, params, u)
    return z, info


def _solve_step_aux(sm: StepMap, z0: jax.Array, q: Point, p: jax.Array, t: Scalar, h: Scalar, params: Params,
                    u: jax.Array | None = None, kept: jax.Array | None = None):
    """:func:`solve_step` and the step's ``aux = (q1, p1, c)`` at its solution, differentiated implicitly.

    Without a derivative, ``aux`` is Newton's own last evaluation of the equations (the step does not
    evaluate them again); its tangent is that of the equations at ``z(x)``: ``d aux = (d aux / dz) dz +
    (d aux / dx) dx``, with ``dz`` from :func:`solve_step`'s Notes. A primitive (:func:`.implicit.call`),
    not a ``jax.custom_jvp``: that rule is lost at the second order inside a ``lax.scan`` (a step that
    accepts its start had a zero second derivative), :mod:`.implicit`.
    """
    try:
        z, info, aux, inv = implicit.call(_newton_solve, _solve_step_jvp, sm, z0, q, p, t, h, params, u, kept)
    except implicit.Unsupported:  # side effects, or a system closing over outer tracers: first order only
        z, info, aux, inv = _solve_step_custom_jvp(sm, z0, q, p, t, h, params, u, kept)
    # named, so that a checkpointed step saves them and its reverse pass does not run Newton again
    # (the status is needed there too: it decides the NaN poisoning of the step's derivative)
    return checkpoint_name(z, _Z_NAME), checkpoint_name(info, _Z_NAME), aux, inv


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _solve_step_custom_jvp(sm: StepMap, z0: jax.Array, q: Point, p: jax.Array, t: Scalar, h: Scalar, params: Params,
                           u: jax.Array | None = None, kept: jax.Array | None = None):
    """:func:`_solve_step_aux` as a ``jax.custom_jvp``, for a step the primitive cannot hold
    (:class:`.implicit.Unsupported`): its first derivative is the same; inside a ``lax.scan`` its second
    derivative may go through Newton's loop (:mod:`.implicit`)."""
    return _newton_solve(sm, z0, q, p, t, h, params, u, kept)


@_solve_step_custom_jvp.defjvp
def _solve_step_custom_jvp_rule(sm, primals, tangents):
    return _solve_step_jvp(sm, primals, tangents, solve=_solve_step_custom_jvp)


def _solve_step_jvp(sm: StepMap, primals: tuple, tangents: tuple, solve: Callable | None = None):
    """The implicit derivative of :func:`_solve_step_aux` (the rule of its primitive)."""
    z0, q, p, t, h, params, u, kept = primals
    _, dq, dp, dt, dh, dparams, du, _ = tangents
    # the primitive again (or the custom_jvp): the rule holds at the next order
    z, info, _, inv = (solve or _solve_step_aux)(sm, z0, q, p, t, h, params, u, kept)

    def eqs(z, q, p, t, h, params, u):
        r, _, aux = sm.equations(z, q, p, t, h, params, u)
        return r, aux

    def r(q, p, t, h, params, u):
        return eqs(z, q, p, t, h, params, u)[0]

    _, dr = jax.jvp(r, (q, p, t, h, params, u), (dq, dp, dt, dh, dparams, du))
    J = sm.jacobian(z, q, p, t, h, params, u, basis_in_loop=_basis_in_loop(sm))
    dz = -jnp.linalg.solve(J, dr)
    # the step's point and momenta at z(x): their primal from the equations at the saved solution (so a
    # checkpointed step's reverse pass does not run Newton again for them), their tangent through z and x
    (_, aux), (_, daux) = jax.jvp(eqs, (z, q, p, t, h, params, u), (dz, dq, dp, dt, dh, dparams, du))
    return (z, info, aux, inv), (dz, jnp.zeros_like(info), daux, jnp.zeros_like(inv))


def _solve_unrolled(sm: StepMap, iterations: int, z0, q, p, t, h, params, u, kept=None):
    """``iterations`` plain Newton updates from ``z0``, differentiated through (the wrong way, for tests)."""
    z = jax.lax.stop_gradient(z0)

    def r(zz):
        return sm.equations(zz, q, p, t, h, params, u)[0]

    for _ in range(iterations):
        z = z - jnp.linalg.solve(jax.jacfwd(r)(z), r(z))
    # the status of the forward solve is Newton's own (the values agree once converged)
    _, info, _, inv = _newton_solve(sm, z0, *jax.lax.stop_gradient((q, p, t, h, params, u, kept)))
    info = checkpoint_name(info, _Z_NAME)  # saved: the reverse pass does not run Newton again for the status
    return z, info, sm.equations(z, q, p, t, h, params, u)[2], inv


def _solve_detached(sm: StepMap, z0, q, p, t, h, params, u, kept=None):
    """Newton's solution with its derivative dropped (the wrong way, for tests)."""
    z, info, _, inv = jax.lax.stop_gradient(_newton_solve(sm, z0, *jax.lax.stop_gradient((q, p, t, h, params, u,
                                                                                          kept))))
    z, info = checkpoint_name(z, _Z_NAME), checkpoint_name(info, _Z_NAME)
    return z, info, sm.equations(z, q, p, t, h, params, u)[2], inv


# ------------------------------------------------------------------ rollout
class _Carry(NamedTuple):
    q: Any
    p: jax.Array
    z: jax.Array
    status: jax.Array
    fail_step: jax.Array
    inv: jax.Array | None = None  # SolverOptions(jacobian="keep"): the Newton matrices' inverses of the last step


PACKED = True
"""Whether :func:`rollout`'s loop carries its state and stacks its outputs packed (one float vector each,
``jax.flatten_util.ravel_pytree``); False
carries and stacks one array per leaf, as before 2026-12-05 (``tests/mechanics/test_call_entry.py`` compiles
both: the same values, more operations in the program's entry)."""


def _initial_unknowns(sm: StepMap, q0: Any, p0: jax.Array, xi0: jax.Array) -> jax.Array:
    """Newton's first guess ``z`` of the first step: ``xi = h v0``, the other unknowns 0.

    Built from the step map's own initial state (its ``fail_z`` has the
    shape of the unknowns), so it follows the step map's unknowns.
    """
    st = sm.initial(q0, p0, xi0)
    n = sm.n
    z = jnp.zeros_like(st.fail_z)
    return z.at[:n].set(xi0)


def _build(sm: StepMap, n_steps: int, has_v: bool, has_u: bool, mode: str, unrolled_iterations: int,
           checkpoint: bool, warm_start: bool, gammas: tuple[float, ...] | None = None) -> Callable:
    """The compiled rollout for one step map and one set of static choices.

    ``gammas``: the coefficients of a composition (each step of ``h`` is the
    sub-steps ``gamma_i h`` of ``sm``, :mod:`.composition`), or None.
    """
    sysm = sm.system
    Q, n = sysm.Q, sysm.dim
    if mode == "implicit":
        solve = functools.partial(_solve_step_aux, sm)
    elif mode == "unrolled":
        solve = functools.partial(_solve_unrolled, sm, unrolled_iterations)
    else:
        solve = functools.partial(_solve_detached, sm)

    def run(q0, v0, p0, h, t0, params, controls):
        h = jnp.asarray(h, jnp.float64)
        t0 = jnp.asarray(t0, jnp.float64)
        if has_v:
            p0 = sysm.momentum(q0, v0, params)
            xi0 = h * v0
        else:
            xi0 = jnp.zeros(n, jnp.float64)  # a first guess only: the solution does not depend on it
        z0 = _initial_unknowns(sm, q0, p0, jax.lax.stop_gradient(xi0))
        if gammas is not None:
            # the solutions of every sub-step on the last two steps (the predictor's history, below); before the
            # first step: the state's unknowns scaled by gamma_i
            z0 = jnp.broadcast_to(jnp.asarray(gammas, jnp.float64)[None, :, None] * z0[None, None, :],
                                  (2, len(gammas), z0.shape[0]))

        keep = sm.options.jacobian == "keep"
        N_z = z0.shape[-1]
        inv0 = None
        if keep:  # NaN: no matrix kept yet (the first step evaluates it)
            inv0 = jnp.full((N_z, N_z) if gammas is None else (len(gammas), N_z, N_z), jnp.nan)

        def start_status(c: _Carry):
            # a singular Newton matrix at the first step's start: the steps are undetermined (integrate refuses
            # such a start with IllPosedSystemError; traced here, the run is marked ILL_POSED at step 0). The
            # first (sub-)step's matrix at its Newton start, as integrate's start checks it. Evaluated inside
            # the loop on its first trip: there it is part of the loop's compiled kernel (outside, its
            # hundred-odd small operations cost more than the rest of a short run)
            z, hh = (c.z, h) if gammas is None else (c.z[0, 0], gammas[0] * h)
            cond, _ = step_conditioning(sm, c.q, c.p, z, t0, hh, params, direction=False,
                                        basis_in_loop=_basis_in_loop(sm))
            singular = ~(cond <= _SINGULAR_STEP)
            return (jnp.where(singular, Status.ILL_POSED, c.status).astype(jnp.int32),
                    jnp.where(singular, 0, c.fail_step).astype(jnp.int32))

        def body(c: _Carry, xs):
            k, u = xs
            t = t0 + k * h
            status, fail_step = jax.lax.cond(k == 0, start_status, lambda c: (c.status, c.fail_step), c)
            c = c._replace(status=status, fail_step=fail_step)
            if gammas is None:
                return sub_step(c, k, t, h, u, c.z)
            z1, z2 = c.z[0], c.z[1]  # (s, N_z) each: every sub-step's solution on steps k - 1 and k - 2
            # the predicted solution of every sub-step from the same sub-step on the last two steps: linear
            # extrapolation from step k >= 2, the last value on step 1 (and gamma_i z0, unused, on step 0)
            P = predicted_solutions(z1, z2, k)

            def one(carry, x):
                cc, zs, last, mats = carry  # zs: this step's sub-step solutions so far; last: the previous one's
                i, gi, ti, ri, Pi, P_before, mi, mbi = x
                # kept matrices: the sub-step's own of the last step, or on the first step its mirror's of this
                # step (integrate's composed steps choose by the same rule, one function)
                inv_i = None if mats is None else sub_step_matrix(mats[i], mats, mi)
                # Newton's start: the predicted solution, corrected by gamma_i / gamma_(i-1) times the error of
                # that prediction on the sub-step before (which has just been solved: what the prediction
                # missed there, it misses here scaled by the ratio of the steps); on the first step there is
                # no history: a sub-step of the second half starts from its mirror in the first half (the same
                # coefficient, gamma_i = gamma_(s+1-i)), corrected as above by the sub-step before and its
                # mirror; a sub-step of the first half from the sub-step before scaled by
                # gamma_i / gamma_(i-1) (the first one: gamma_1 z0). integrate's composed steps start by the
                # same rule (one function)
                guess = sub_step_start(k == 0, i, Pi, P_before, last, zs, ri, mi, mbi)
                cc, (q1, p1, z1_, it) = sub_step(cc._replace(z=Pi, inv=inv_i), k, t + h * ti, gi * h, u, guess)
                mats = None if mats is None else mats.at[i].set(cc.inv)
                return (cc._replace(inv=None), zs.at[i].set(cc.z), cc.z, mats), (z1_, it)

            (c, zs, _, inv_new), (zout, its) = jax.lax.scan(
                one, (c._replace(z=P[0], inv=None), z1, P[-1], c.inv), sub_step_inputs(gammas, P))
            c = c._replace(z=jnp.stack([zs, z1]), inv=inv_new)
            return c, (c.q, c.p, zout, jnp.sum(its).astype(jnp.int32))

        def sub_step(c: _Carry, k, t, h, u, guess):
            guess = jax.lax.stop_gradient(guess) if warm_start else jnp.zeros_like(guess)
            z1, info, (q1, p1, _), inv = solve(guess, c.q, c.p, t, h, params, u, c.inv)
            st = classify_step(info[0].astype(jnp.int32), Q, z1[:n], q1, p1)
            healthy = c.status == Status.OK
            status = jnp.where(healthy, st, c.status).astype(jnp.int32)
            ok = status == Status.OK
            # NaN multiplied in (not selected): it reaches every derivative, forward and reverse
            poison = jnp.where(ok, 1.0, jnp.nan)
            q1 = jax.tree.map(lambda x: x * poison, q1)
            p1 = p1 * poison
            fail_step = jnp.where(healthy & ~ok, k, c.fail_step).astype(jnp.int32)
            z_next = jnp.where(ok, z1, c.z)
            out = (q1, p1, z1 * poison, info[1].astype(jnp.int32))
            return _Carry(q1, p1, z_next, status, fail_step, inv if keep else None), out

        if checkpoint:
            body = jax.checkpoint(body, policy=jax.checkpoint_policies.save_only_these_names(_Z_NAME))
        us = controls if has_u else None
        if PACKED:
            # the loop's state (q, p, z) and its per-step outputs packed into one float vector each (ravel_pytree),
            # the status and failed step into one integer vector: every carried or stacked array is an operation
            # of the program's entry computation, and XLA:CPU hands half of them to another thread when more than
            # 9 are ready at once (docs/performance.md, "What a call costs besides its loop"; unpacked, the
            # disk's composed rollout had 14; tests/mechanics/test_call_entry.py). The step index is a carry of
            # its own: it is never batched (under vmap the status is), so the first step's conditioning stays a
            # branch
            F0, unravel = ravel_pytree((q0, p0, z0, inv0))
            z_out = z0 if gammas is None else z0[0]  # one step's recorded unknowns: (N_z,), or (s, N_z) composed
            _, unravel_out = ravel_pytree((q0, p0, z_out))

            def packed_body(carry, u):
                F, I, k = carry
                q, p, z, inv = unravel(F)
                c, (q1, p1, zo, it) = body(_Carry(q, p, z, I[0], I[1], inv), (k, u))
                return (ravel_pytree((c.q, c.p, c.z, c.inv))[0], jnp.stack([c.status, c.fail_step]), k + 1), \
                    (ravel_pytree((q1, p1, zo))[0], it)

            I0 = jnp.array([Status.OK, -1], jnp.int32)
            (_, IN, _), (Fs, its) = jax.lax.scan(packed_body, (F0, I0, jnp.int32(0)), us,
                                                 length=n_steps)
            qs, ps, zs = jax.vmap(unravel_out)(Fs)
            status, fail_step = IN[0], IN[1]
        else:
            ks = jnp.arange(n_steps, dtype=jnp.int32)
            c0 = _Carry(q0, p0, z0, jnp.int32(Status.OK), jnp.int32(-1), inv0)
            cN, (qs, ps, zs, its) = jax.lax.scan(body, c0, (ks, us), length=n_steps)
            status, fail_step = cN.status, cN.fail_step
        q_all = jax.tree.map(lambda a, b: jnp.concatenate([a[None], b]), q0, qs)
        p_all = jnp.concatenate([p0[None], ps])
        t = t0 + h * jnp.arange(n_steps + 1, dtype=jnp.float64)
        return Rollout(t, q_all, p_all, zs, its, status, fail_step)

    return jax.jit(run)


def rollout(
    system: LagrangeDiracSystem,
    q0: Any,
    v0: Any = None,
    p0: Any = None,
    *,
    h: Any,
    n_steps: int,
    params: Any = None,
    controls: Any = None,
    t0: Any = 0.0,
    scheme: str | Scheme = "symmetric",
    discrete_lagrangian: str | QuadratureRule = "midpoint",
    solver: SolverOptions | None = None,
    composition: Any = None,
    differentiation: str = "implicit",
    unrolled_iterations: int = 1,
    checkpoint: bool = True,
    warm_start: bool = True,
) -> Rollout:
    """A differentiable run of ``n_steps`` steps: ``jax.grad``/``jacfwd``/``vmap`` go through it.

    The same discrete map as :func:`~manifold_dirac._run.integrate.integrate`
    (same scheme, discrete Lagrangian, Newton solve and failure statuses),
    written as one pure JAX function of its array arguments.

    Parameters
    ----------
    system : LagrangeDiracSystem
        The system (its manifold ``system.Q``, ``n = Q.dim``).
    q0 : point, shape=[*point_shape]
        Initial configuration (one member; batch with ``jax.vmap``). For the
        derivative with respect to ``q0`` as a group element, differentiate
        ``eta -> f(rollout(system, system.Q.retract(q0, eta), ...))`` at
        ``eta = 0`` (the tangent frame of ``docs/differentiable.md``).
    v0 : array, shape=[n], optional
        Initial velocity (``p0 = dL/dv(q0, v0)``, differentiable); it should
        lie in ``Delta(q0)`` (:func:`integrate` checks this; here it is not
        checked when traced).
    p0 : array, shape=[n], optional
        Initial momentum, when ``v0`` is not given (for the ``minus`` scheme,
        the pre-momentum).
    h : float or array, shape=[]
        Time step (traced: differentiable, no recompile).
    n_steps : int
        Number of steps (static: the length of the ``lax.scan``; another
        value compiles another program).
    params : pytree, optional
        The system's parameters (default ``system.params``); differentiable.
    controls : array, shape=[n_steps, n], optional
        A control covector per step, added to the force and held over the
        step (as in :meth:`Integrator.run`); differentiable.
    t0 : float or array, shape=[]
        The time of the initial data (float64; differentiable).
    scheme, discrete_lagrangian, solver, composition
        As in :func:`integrate`. With a composition each step of ``h``
        is its sub-steps ``gamma_i h``, and ``z`` has shape ``(N, s, N_z)``:
        the solution of every sub-step. Composed, ``SolverOptions(jacobian=
        "keep")`` is the faster solver, except under ``jax.vmap`` (see
        :class:`~manifold_dirac.SolverOptions`).
    differentiation : {"implicit", "unrolled", "detached"}
        See :data:`DIFFERENTIATION_MODES`; anything but ``"implicit"`` gives
        wrong derivatives on purpose (for tests and demonstrations).
    unrolled_iterations : int
        Newton updates differentiated through with ``"unrolled"``.
    checkpoint : bool
        Rematerialize each step in reverse mode from its stored state and
        solution (memory ``O(N)`` states instead of ``O(N)`` steps'
        intermediates); False stores every step's intermediates.
    warm_start : bool
        Newton starts each step from the previous step's solution (True) or
        from ``z = 0`` (False, more iterations): the values and derivatives
        agree to the solve's accuracy either way. Composed, sub-step ``i``
        starts from a prediction ``P_i`` of its solution corrected by
        ``gamma_i / gamma_{i-1}`` times what the prediction of sub-step
        ``i - 1`` missed (``z_{i-1} - P_{i-1}``, just solved): ``P_i`` is
        the same sub-step's solution on the previous step (on the second
        step), extrapolated linearly from the last two steps (from the
        third). On the first step, a sub-step of the second half of a
        palindromic composition starts from its mirror in the first half
        (the same coefficient), corrected likewise; one of the first half
        from sub-step ``i - 1``'s solution scaled by ``gamma_i / gamma_{i-1}``,
        the first from ``gamma_1 (h v_0, 0)``. :func:`integrate`'s composed
        steps (:class:`~manifold_dirac._mechanics.composition.ComposedStepMap`)
        start by the same rule
        (:func:`~manifold_dirac._mechanics.composition.sub_step_start`).

    Returns
    -------
    Rollout
        ``t (N+1,)``, ``q (N+1, ...)``, ``p (N+1, n)``, ``z (N, N_z)`` (``(N, s, N_z)`` composed),
        ``iterations (N,)``, ``status ()``, ``fail_step ()``.

    Raises
    ------
    ValueError, TypeError
        Wrong shapes or options (checked at trace time). A failed *step* does
        not raise (the run may be traced): it sets ``status``/``fail_step``
        and NaN-poisons the values and derivatives from that step on;
        :meth:`Rollout.check` raises its error on concrete values.

    Notes
    -----
    Each step solves (52)/(53) of Parks & Leok (2017) for ``z`` with
    ``r(z; q_k, p_k, t_k, h, theta, u_k) = 0`` and sets
    ``q_{k+1} = R_{q_k}(xi)``, ``p_{k+1} = D2 L_d + f^+`` (see
    :class:`StepMap`). The derivative of the run is the derivative of this
    discrete map (the discrete adjoint in reverse mode), with each solve
    differentiated implicitly (:func:`solve_step`).

    Examples
    --------
    The derivative of the final angle of a pendulum with respect to its
    initial angle and to its parameters:

    >>> import jax
    >>> import jax.numpy as jnp
    >>> import manifold_dirac as md
    >>> pendulum = md.systems.pendulum()
    >>> def final_angle(theta0, params):
    ...     r = md.rollout(pendulum, jnp.array([theta0]), jnp.array([0.0]), h=0.05, n_steps=20, params=params)
    ...     return r.q[-1, 0]
    >>> d_theta0, d_params = jax.grad(final_angle, argnums=(0, 1))(0.5, pendulum.params)
    >>> sorted(d_params)
    ['mgl', 'ml2']
    """
    if not isinstance(system, LagrangeDiracSystem):
        raise TypeError(f"rollout: system must be a LagrangeDiracSystem, got {type(system).__name__}")
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"rollout: n_steps must be an integer >= 1 (the length of the scan), got {n_steps!r}")
    n_steps = int(n_steps)
    if differentiation not in DIFFERENTIATION_MODES:
        raise ValueError(f"rollout: differentiation must be one of {DIFFERENTIATION_MODES}, got {differentiation!r}")
    if isinstance(unrolled_iterations, bool) or not isinstance(unrolled_iterations, (int, np.integer)) \
            or unrolled_iterations < 1:
        raise ValueError(f"rollout: unrolled_iterations must be a positive integer, got {unrolled_iterations!r}")
    if (v0 is None) == (p0 is None):
        raise ValueError("rollout: give exactly one of the initial velocity v0 or the initial momentum p0")
    solver = SolverOptions() if solver is None else solver
    if not isinstance(solver, SolverOptions):
        raise TypeError(f"rollout: solver must be a SolverOptions instance, got {type(solver).__name__}")
    comp = None if composition is None else get_composition(composition)
    sm = StepMap(system, get_scheme(scheme), get_rule(discrete_lagrangian), solver)
    if comp is not None:
        check_composable(sm.scheme, sm.rule, system)  # a base that is not self-adjoint is refused, with the reason
    n = system.dim
    point_shape = _point_shape(system.Q)
    given_shape = jax.tree.map(np.shape, q0)
    if given_shape != point_shape:
        raise ValueError(f"rollout: q0 must be one point of shape {point_shape} (batch with jax.vmap), "
                         f"got {given_shape}")
    x0 = v0 if v0 is not None else p0
    if np.shape(x0) != (n,):
        raise ValueError(f"rollout: {'v0' if v0 is not None else 'p0'} must have shape ({n},) "
                         f"(one member; batch with jax.vmap), got {np.shape(x0)}")
    if controls is not None and np.shape(controls) != (n_steps, n):
        raise ValueError(f"rollout: controls must have shape (n_steps, n) = ({n_steps}, {n}), "
                         f"got {np.shape(controls)}")
    params = system.params if params is None else params
    key = ("rollout", sm.scheme, sm.rule, sm.options, comp, n_steps, v0 is not None, controls is not None,
           differentiation, int(unrolled_iterations), bool(checkpoint), bool(warm_start))
    cache = system.__dict__.setdefault("_compiled_functions", {})
    fn = cache.get(key)
    if fn is None:
        fn = cache[key] = _build(sm, n_steps, v0 is not None, controls is not None, differentiation,
                                 int(unrolled_iterations), bool(checkpoint), bool(warm_start),
                                 None if comp is None else comp.coefficients)
    # host values stay numpy (an eager jnp conversion is a dispatched program: tens of microseconds each)
    zeros = np.zeros(n)
    return fn(_f64(q0), zeros if v0 is None else _f64(v0), zeros if p0 is None else _f64(p0), h, t0, params,
              None if controls is None else _f64(controls))


def _f64(x: PyTree) -> PyTree:
    """Every leaf of ``x`` as float64: traced or float64 JAX arrays as they are, host values as numpy arrays."""

    def one(a: ArrayLike) -> jax.Array | np.ndarray:
        if isinstance(a, jax.Array):
            return a if a.dtype == jnp.float64 else jnp.asarray(a, jnp.float64)
        return np.asarray(a, dtype=np.float64)

    return jax.tree.map(one, x)


@functools.lru_cache(maxsize=64)
def _point_shape(Q: Manifold) -> PyTree:
    """The shapes of one point of ``Q`` (a pytree of tuples), computed once per manifold."""
    with jax.ensure_compile_time_eval():  # concrete also when first asked inside a trace
        return jax.tree.map(np.shape, Q.default_point())
