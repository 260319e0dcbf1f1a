"""The diagnosis of a failed step, eager, at the frozen state of the failed member.

The compiled step knows only what it saw (a NaN in Newton's update, a
step outside the retraction's domain, no convergence); here, outside
compiled code, the failure is refined and explained: which user function
returned NaN/inf and where (:func:`_locate_nonfinite`), where along the step
the retraction's domain ends (:func:`_domain_detail`), why a stored point's
energy is not finite (:func:`_energy_detail`), whether the Newton matrix is
singular (:func:`diagnose`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from .._mechanics.status import Status
from .._mechanics.step import FAIL_ENERGY, FAIL_ITERATE, State
from .._types import Point
from .recording import _legendre_reported
from .state import RunState
from .validate import _nonfinite_word

if TYPE_CHECKING:
    from .integrator import Integrator


def diagnose(integ: Integrator, state: RunState, i: int, code: Status, k: int) -> tuple[Status, str]:
    """Refine a failure eagerly at the frozen state of member ``i`` (outside compiled code).

    ``integ`` is the run's integrator (its step map, step ``h`` and the
    parameters of its last call), ``i`` the member's flat index, ``code`` its
    status from the compiled step, ``k`` the failed step.

    Returns the (possibly refined) status and the ``detail`` of its message:
    for ``DOMAIN`` the size of ``xi`` and the largest step inside the
    domain; for ``NONFINITE`` the user function that returned NaN/inf and
    where (the quadrature node and time of the step, or the stored point
    whose energy is not finite); for ``NO_CONVERGENCE`` a non-finite
    function at the step's start or a singular Newton matrix.
    """
    sm, sysm, h, params = integ.stepmap, integ.system, integ.h, integ._params
    n = sysm.dim
    mem = jax.tree.map(lambda a: a[i], state.members) if state.batch_shape else state.members
    t = state.t0 + k * h
    kind = int(np.asarray(mem.fail_kind))
    fz = np.asarray(mem.fail_z)
    if code == Status.DOMAIN:
        return code, _domain_detail(integ, fz[:n], kind)
    if code == Status.NONFINITE and kind == FAIL_ENERGY:
        return code, _energy_detail(integ, mem, fz[:n], k, t)
    if code == Status.NONFINITE and np.all(np.isfinite(fz)):
        found = _locate_nonfinite(integ, mem.q, fz, t)
        if found:
            at = "at the solution of the step" if kind != FAIL_ITERATE else (
                f"at Newton's iterate with |xi| = {_norm(fz[:n]):.3g}")
            return code, f"in the step equations: {found} ({at})"
    if code in (Status.NONFINITE, Status.NO_CONVERGENCE):
        z = sm.warm_start(mem)
        found = _locate_nonfinite(integ, mem.q, np.asarray(z), t)
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


def _norm(x: np.ndarray) -> float:
    """``|x|`` without overflow for entries beyond ``1e154`` (a diverged iterate's): NumPy's ``hypot``, reduced."""
    return float(np.hypot.reduce(np.ravel(x)))


def _domain_detail(integ: Integrator, xi: np.ndarray, kind: int) -> str:
    """``|xi|``, where along ``xi`` the retraction's domain ends, and the ``h`` that stays inside."""
    Q = integ.system.Q
    lo, hi = 0.0, 1.0  # in_domain(lo xi) holds, in_domain(hi xi) does not
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bool(np.asarray(Q.in_domain(jnp.asarray(mid * xi)))) else (lo, mid)
    where = "the step's solution" if kind != FAIL_ITERATE else "Newton's last iterate (the solve did not converge)"
    return (f"|xi| = {_norm(xi):.4g} at {where}, where the domain of the retraction "
            f"{Q.retraction.name!r} of {Q!r} ends at |xi| = {lo * _norm(xi):.4g} along xi; try "
            f"h < {0.5 * lo * integ.h:.3g}, which would halve that if xi scales with h")


def _energy_detail(integ: Integrator, mem: State, v: np.ndarray, k: int, t: float) -> str:
    """Why the energy ``<p, v> - L(q, v)`` at the stored point ``q_k`` is not finite."""
    sysm = integ.system
    L = np.asarray(sysm.lagrangian(mem.q, jnp.asarray(v), integ._params))
    kind = "Legendre inverse of p_k" if _legendre_reported(integ.stepmap) else "central difference"
    what = (f"the Lagrangian L(q, v) returned {_nonfinite_word(L)} at q_{k} with the recorded ({kind}) "
            f"velocity v_{k}" if not np.all(np.isfinite(L)) else "<p, v> overflowed")
    return (f"in the energy E = <p, v> - L(q, v) at the stored point q_{k} (t = {t:g}): {what}, although the "
            f"step equations, which evaluate L at the quadrature nodes, were finite (|v_{k}| = "
            f"{np.max(np.abs(v), initial=0.0):.4g} in the max-norm)")


def _locate_nonfinite(integ: Integrator, q0: Point, z: np.ndarray, t: float) -> str:
    """The first user function that is not finite where the step evaluates it at ``z = (xi, mu)`` (eager).

    Checks, at each quadrature node ``R_{q_k}(s xi)`` of the rule and the
    scheme (``s = 0`` is ``q_k``, ``s = 1`` is ``q_{k+1}``) with ``v = xi / h``:
    ``L``, its partials, the force at ``t_k + s h``, the constraint
    ``A``; then the same functions' first derivatives (what the Newton
    matrix holds). Returns "" when every one is finite.
    """
    sysm, Q, h, params = integ.system, integ.system.Q, integ.h, integ._params
    n = sysm.dim
    xi = jnp.asarray(z[:n])
    v = xi / h
    nodes = sorted({s for s, _ in integ.rule.nodes})  # where the rule evaluates L and F
    # where the schemes evaluate A: q_k (the reaction), their own nodes, q_(k+1) (minus)
    a_nodes = sorted({0.0, 1.0, *integ.scheme.extra_nodes})
    points = {s: q0 if s == 0.0 else Q.retract(q0, s * xi) for s in {*nodes, *a_nodes}}

    def node(s: float) -> str:
        what = {0.0: "q_k", 1.0: "q_(k+1)"}.get(s, f"the quadrature node s = {s:g} of the step")
        return f"{what} (t = {t + s * h:g})"

    checks: list[tuple[str, str, Callable[[], object]]] = []
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
