"""Batched Newton solver for one step's equations in ``(xi, mu)``.

The Jacobian is exact in ``mu`` (the equations are linear in it: columns
``[-G^-; 0]``) and a forward finite difference of the *exact* equations in
``xi``: the ``dim`` perturbed copies of ``xi`` travel as one extra leading
axis, so an iteration is a single vectorized evaluation for every member of
a batch. The accuracy of the Jacobian only affects the rate of convergence;
the solution satisfies the exact equations to the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import RetractionDomainError
from .discrete_lagrangians import DiscreteLagrangian
from .schemes import Scheme, StepEquations
from .system import LagrangeDiracSystem

__all__ = [
    "FAILED_CONVERGENCE", "FAILED_DOMAIN", "FAILED_ILL_POSED", "FAILED_NONFINITE", "OK", "STATUS_NAMES",
    "SolverOptions", "StepSolution", "solve_step",
]

OK, FAILED_CONVERGENCE, FAILED_ILL_POSED, FAILED_NONFINITE, FAILED_DOMAIN = 0, 1, 2, 3, 4
STATUS_NAMES = {
    OK: "ok",
    FAILED_CONVERGENCE: "no convergence",
    FAILED_ILL_POSED: "ill-posed (singular step equations)",
    FAILED_NONFINITE: "non-finite value",
    FAILED_DOMAIN: "an iterate left the inverse retraction's domain",
}
"""Human-readable names of the status codes of :class:`StepSolution` and ``Trajectory.status``."""


@dataclass(frozen=True)
class SolverOptions:
    """Options of the Newton solve of each step.

    Attributes
    ----------
    rtol, atol : float
        A step has converged when ``|r1|_inf <= atol + rtol * s1`` (``s1``
        the size of the momenta in ``r1``) and ``|r2|_inf <= atol + rtol * |xi|_inf``.
    max_iter : int
        Newton iterations per step before a :class:`ConvergenceError`.
    fd_step : float
        Relative step of the finite-difference Jacobian in ``xi``.
    singular_cond : float
        Condition number of the row- and column-equilibrated Newton matrix
        above which a step is reported as ill-posed rather than as
        non-convergent (equilibrated, so that large masses or small steps,
        which scale the blocks of the matrix, do not look singular).
    """

    rtol: float = 1e-12
    atol: float = 1e-13
    max_iter: int = 30
    fd_step: float = 1.5e-8
    singular_cond: float = 1e13

    def __post_init__(self) -> None:
        for name in ("rtol", "atol", "fd_step", "singular_cond"):
            v = getattr(self, name)
            if not (np.isfinite(v) and v >= 0):
                raise ValueError(f"SolverOptions.{name} must be a finite non-negative number, got {v!r}")
        if not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"SolverOptions.max_iter must be a positive integer, got {self.max_iter!r}")


@dataclass(frozen=True)
class StepSolution:
    """Result of one step for every member of the batch.

    Attributes
    ----------
    xi : ndarray, shape=[*B, n]
    mu : ndarray, shape=[*B, m]
    equations : StepEquations
        The equations at the solution (no leading finite-difference axis).
    iterations : ndarray of int, shape=[*B]
    residual : ndarray, shape=[*B]
        ``max(|r1|_inf, |r2|_inf)`` at the solution.
    status : ndarray of int, shape=[*B]
        ``OK`` or a failure code.
    condition : ndarray, shape=[*B]
        Condition number of the Newton matrix where it was computed, else NaN-free 0.
    """

    xi: np.ndarray
    mu: np.ndarray
    equations: StepEquations
    iterations: np.ndarray
    residual: np.ndarray
    status: np.ndarray
    condition: np.ndarray


def _inf(x: np.ndarray) -> np.ndarray:
    return np.max(np.abs(x), axis=-1, initial=0.0)


def solve_step(
    scheme: Scheme,
    system: LagrangeDiracSystem,
    rule: DiscreteLagrangian,
    q0: Any,
    p_in: np.ndarray,
    t0: float,
    h: float,
    xi0: np.ndarray,
    mu0: np.ndarray,
    options: SolverOptions,
    active: np.ndarray,
    force_override: Any = None,
    check_condition: bool = False,
) -> StepSolution:
    """Solve one step's equations by Newton's method, member by member.

    Parameters
    ----------
    q0 : point, shape=[*B, ...]
    p_in : ndarray, shape=[*B, n]
    xi0, mu0 : ndarray, shape=[*B, n], [*B, m]
        Warm start.
    active : ndarray of bool, shape=[*B]
        Members to solve; the others are carried unchanged (failed earlier).
    check_condition : bool
        Compute the Newton matrix's condition number at the first iteration
        (and flag an ill-posed step even if Newton would limp on).

    Returns
    -------
    StepSolution
    """
    n = xi0.shape[-1]
    m = mu0.shape[-1]
    B = xi0.shape[:-1]
    xi = np.array(xi0, dtype=float)
    mu = np.array(mu0, dtype=float)
    status = np.array(np.where(active, OK, -1))  # -1: not part of this solve
    todo = np.array(active, dtype=bool)
    iterations = np.zeros(B, dtype=int)
    condition = np.zeros(B)
    # the finite-difference directions e_j, one per leading index, broadcast over the batch
    eye_fd = np.eye(n).reshape((n,) + (1,) * len(B) + (n,))
    eye_K = np.eye(n + m)
    # preallocated per solve: the stacked iterates and the Newton matrix, with a
    # transposed view so that the difference quotients (direction axis first)
    # land in their columns without a moveaxis copy
    XI = np.empty((n + 1, *B, n))
    K = np.zeros((*B, n + m, n + m))
    Kt = np.moveaxis(K, -1, 0)  # Kt[j, ..., i] is K[..., i, j]
    rhs = np.empty((*B, n + m, 1))
    eq0: StepEquations | None = None
    K_last: np.ndarray | None = None
    res = np.zeros(B)
    with np.errstate(all="ignore"):
        for it in range(options.max_iter + 1):
            xi_norm = np.abs(xi).max(axis=-1, initial=0.0)
            d = options.fd_step * np.maximum(1.0, xi_norm)  # (*B,)
            XI[0] = xi
            np.add(xi, d[..., None] * eye_fd, out=XI[1:])
            MU = np.broadcast_to(mu, (n + 1, *B, m))
            try:
                eq = scheme.equations(system, rule, q0, p_in, XI, MU, h, t0, force_override)
            except RetractionDomainError as exc:
                if not B:
                    raise _DomainFailure(str(exc)) from exc
                # find the members whose iterates left the domain, mark and
                # park them at xi = 0 (always in the domain), go on with the rest
                out = _domain_failures(scheme, system, rule, q0, p_in, XI, MU, h, t0, force_override, B)
                if not out.any():  # pragma: no cover - the batch failed but no member alone does
                    raise _DomainFailure(str(exc)) from exc
                status = np.array(np.where(out & todo, FAILED_DOMAIN, status))
                todo &= ~out
                xi = np.where(out[..., None], 0.0, xi)
                mu = np.where(out[..., None], 0.0, mu)
                continue
            eq0 = eq
            r1, r2 = eq.r1[0], eq.r2[0]
            # |r|_inf is NaN/inf exactly when an entry is: one reduction gives both
            n1 = np.abs(r1).max(axis=-1, initial=0.0)
            n2 = np.abs(r2).max(axis=-1, initial=0.0)
            finite = np.isfinite(n1) & np.isfinite(n2)
            if not finite.all():
                bad = todo & ~finite
                status = np.array(np.where(bad, FAILED_NONFINITE, status))
                todo &= finite
            res = np.maximum(n1, n2)
            tol1 = options.atol + options.rtol * eq.scale[0]
            tol2 = options.atol + options.rtol * xi_norm
            conv = (n1 <= tol1) & (n2 <= tol2)
            todo &= ~conv
            if not todo.any() or it == options.max_iter:
                break
            # Newton matrix K = [[dr1/dxi, -G^-], [dr2/dxi, 0]]
            dcol = d[..., None]
            np.divide(eq.r1[1:] - r1, dcol, out=Kt[:n, ..., :n])
            if m:
                np.divide(eq.r2[1:] - r2, dcol, out=Kt[:n, ..., n:])
                np.negative(eq.G_minus[0], out=K[..., :n, n:])
            rhs[..., :n, 0] = r1
            rhs[..., n:, 0] = r2
            np.negative(rhs, out=rhs)
            if not np.isfinite(K).all():
                Kfinite = np.all(np.isfinite(K), axis=(-1, -2))
                status = np.array(np.where(todo & ~Kfinite, FAILED_NONFINITE, status))
                todo &= Kfinite
            K_last = K.copy() if it + 1 >= options.max_iter else None
            if check_condition and it == 0:
                condition = np.where(todo | conv, _cond(K), condition)
                sing = todo & (condition > options.singular_cond)
                status = np.array(np.where(sing, FAILED_ILL_POSED, status))
                todo &= ~sing
            all_todo = bool(todo.all())
            Ksafe = K if all_todo else np.where(todo[..., None, None], K, eye_K)
            try:
                delta = np.linalg.solve(Ksafe, rhs)[..., 0]
            except np.linalg.LinAlgError:
                delta = np.zeros((*B, n + m))
                for idx in np.ndindex(B):
                    if not todo[idx]:
                        continue
                    try:
                        delta[idx] = np.linalg.solve(Ksafe[idx], rhs[idx][..., 0])
                    except np.linalg.LinAlgError:
                        status[idx] = FAILED_ILL_POSED
                        condition[idx] = _cond(Ksafe[idx])
                        todo[idx] = False
                all_todo = bool(todo.all())
            dxi, dmu = delta[..., :n], delta[..., n:]
            if all_todo:
                xi = xi + dxi
                mu = mu + dmu
            else:
                upd = todo[..., None]
                xi = np.where(upd, xi + dxi, xi)
                mu = np.where(upd, mu + dmu, mu)
            iterations = iterations + todo
            # an update at round-off level means the iterate cannot improve further
            tiny = np.abs(dxi).max(axis=-1, initial=0.0) <= 4e-16 * (1.0 + np.abs(xi).max(axis=-1, initial=0.0))
            tiny &= np.abs(dmu).max(axis=-1, initial=0.0) <= 4e-16 * (1.0 + np.abs(mu).max(axis=-1, initial=0.0))
            tiny &= res <= 1e3 * np.maximum(tol1, tol2)
            todo &= ~tiny
    # leftovers: not converged within max_iter -- singular (ill-posed) or not?
    if todo.any():
        if K_last is not None:
            condition = np.where(todo, _cond(K_last), condition)
        status = np.where(todo & (condition > options.singular_cond), FAILED_ILL_POSED, status)
        status = np.where(todo & (status != FAILED_ILL_POSED), FAILED_CONVERGENCE, status)
    status = np.where(status == -1, OK, status)  # inactive members keep their earlier status outside
    assert eq0 is not None
    final = _take_first(eq0)
    return StepSolution(xi, mu, final, iterations, res, status, condition)


def _domain_failures(scheme, system, rule, q0, p_in, XI, MU, h, t0, force_override, B) -> np.ndarray:
    """Which members' equations raise :class:`RetractionDomainError` (one by one)."""
    Q = system.Q
    out = np.zeros(B, dtype=bool)
    for idx in np.ndindex(B):
        sl = (slice(None),) + idx
        f = force_override
        if f is not None and not callable(f):
            f = np.broadcast_to(np.asarray(f), (*B, XI.shape[-1]))[idx]
        try:
            scheme.equations(system, rule, Q.index_point(q0, idx) if Q.batch_shape(q0) else q0,
                             p_in[idx], XI[sl], MU[sl], h, t0, f)
        except RetractionDomainError:
            out[idx] = True
    return out


def _cond(K: np.ndarray) -> np.ndarray:
    """Condition numbers of the equilibrated matrices, ``inf`` for singular or non-finite ones.

    Rows, then columns, are scaled to unit max-norm first: the blocks of the
    Newton matrix carry the physical scales (``M/h`` against ``A``), which
    alone would make a well-posed step look singular.
    """
    ok = np.all(np.isfinite(K), axis=(-1, -2))
    Ks = np.where(ok[..., None, None], K, np.eye(K.shape[-1]))
    r = np.abs(Ks).max(axis=-1, keepdims=True)
    Ks = Ks / np.where(r > 0, r, 1.0)
    c = np.abs(Ks).max(axis=-2, keepdims=True)
    Ks = Ks / np.where(c > 0, c, 1.0)
    with np.errstate(all="ignore"):
        s = np.linalg.svd(Ks, compute_uv=False)
    smin = s[..., -1]
    c = np.where(smin > 0, s[..., 0] / np.where(smin > 0, smin, 1.0), np.inf)
    return np.where(ok, c, np.inf)


def _first(x: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, tuple):
        return tuple(_first(a) for a in x)
    x = np.asarray(x)
    return x[0] if x.ndim else x


def _take_first(eq: StepEquations) -> StepEquations:
    """Drop the finite-difference axis (index 0 is the unperturbed iterate)."""
    from .discrete_lagrangians import DiscreteLagrangianValue, NodeGeometry

    ld = eq.ld
    # the node at s = 0 is q0 itself, which carries no finite-difference axis
    nodes = tuple(
        NodeGeometry(g.s, g.point if g.s == 0.0 else _first(g.point), _first(g.P0), _first(g.P1), _first(g.Jxi))
        for g in ld.nodes
    )
    ld1 = DiscreteLagrangianValue(
        _first(ld.xi), _first(ld.J0), _first(ld.J1), _first(ld.D1), _first(ld.D2),
        _first(ld.f_minus), _first(ld.f_plus), nodes,
    )
    return StepEquations(
        _first(eq.r1), _first(eq.r2), _first(eq.G_minus), _first(eq.p_out), _first(eq.q1), ld1, _first(eq.scale)
    )


class _DomainFailure(RuntimeError):
    """Internal: an iterate left the domain of the inverse retraction."""
