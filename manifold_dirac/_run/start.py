"""The start of a run: the Legendre map at ``q0``, and the checks that refuse an ill-posed start.

One compiled program (:func:`build_start`) evaluates at the initial data
what the checks need -- ``A(q0)``, ``p0 = dL/dv(q0, v0)`` or the Legendre
inverse of ``p0``, the regularity of ``d2L/dv2`` on the constraint
distribution, the algebraic equations of motion, the first step's Newton
matrix (its condition number is computed on the host,
:func:`host_condition`), ``g(q0)`` of holonomic constraints -- and
:func:`check_start` checks them on the host, refusing a start with an
error that says what is wrong and where (the batch member), before any step
is taken. The program returns the values the checks need packed into one
float64 array (:func:`_pack_values`), so that the host fetches them in one
transfer (each array fetched on its own costs a few microseconds).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from .._errors import DegenerateLagrangianWarning, IllPosedSystemError
from .._manifolds.euclidean import Euclidean
from .._mechanics.galerkin import _is_vector_space
from .._mechanics.rules import DiscreteLagrangian
from .._mechanics.schemes import Scheme
from .._mechanics.small import SMALL_SOLVE_MAX, solve_small
from .._mechanics.step import StepMap
from .._mechanics.system import LagrangeDiracSystem, over_batch
from .._types import Covector, Matrix, Params, Point, Scalar, Vector
from .state import _flatten_batch
from .validate import _nonfinite_word

try:  # the routine of np.linalg.inv and np.linalg.cond, which gives NaN or inf for a singular matrix (no exception)
    from numpy.linalg import _umath_linalg

    _GUFUNC_INV: Callable | None = _umath_linalg.inv
except (ImportError, AttributeError):  # pragma: no cover  (another NumPy layout)
    _GUFUNC_INV = None

_LEGENDRE_ITERATIONS = 12
"""Gauss--Newton iterations of the Legendre inverse at the start of a run from ``p0``."""


_N_PROBES = 3
"""Velocities (besides ``v0``) at which the start probes whether ``L`` depends on the velocity at all."""


_DEGENERATE = 1e-8
"""``d2L/dv2`` on ``Delta(q0)`` is singular (the Lagrangian degenerate) below this relative singular value."""


_PRIMARY_RTOL = 1e-8
"""Relative violation of the primary constraint ``p0 = dL/dv(q0, v)`` (mod ``Delta°``) that refuses a start."""


_SINGULAR_STEP = 1e13
"""Condition number of the equilibrated Newton matrix above which a step's equations are singular."""


_SECONDARY_RTOL = 1e-8
"""Relative violation of an algebraic equation of motion at ``q0`` that refuses a start."""


_REGULAR_BOUND = 1e-12
"""A lower bound of the squared smallest singular value of ``d2L/dv2`` (scaled to a largest entry of 1) above which
every direction has a kinetic term: singular values above ``1e-6``, the algebraic equations' null test (``1e-8``,
:func:`host_secondary_residual`) with a margin for the rounding of the bound."""


START_COMPILER_OPTIONS = {"xla_backend_optimization_level": 0}
"""XLA options of the start program (:func:`build_start`): no LLVM optimization.

The start runs once per call, so its compile time is what counts: without
LLVM's optimization passes it compiled in about 30% less CPU time (heavy
top, knife edge, heavy top with ``gauss4``: ``benchmarks/first_call.py``)
and runs a fraction of a millisecond either way. The options are part of the
persistent cache's key. The loop keeps XLA's defaults (its run time is what
counts: ``xla_backend_optimization_level`` 1 ran the knife edge's loop 2.4x
slower)."""


def build_start(sm: StepMap, nb: int, has_v: bool, check_degenerate: bool) -> Callable:
    """The compiled start of a run: ``A(q0)``, ``p0 = dL/dv(q0, v0)``, the degeneracy test, the state.

    Returns a function ``(q0, v0, p0, h, t0, params) -> (members, values)``
    over ``nb`` batch axes (``v0`` or ``p0`` is ignored when not given):
    the state at step 0 (batch axes flattened) and the values the checks
    need, packed into one float64 array ``(*B, F)``; its attribute ``spec``
    (filled at the first trace) unpacks them on the host
    (:func:`unpack_values`) into the dict that :func:`check_start` checks.
    """
    sysm, m = sm.system, sm.system.n_constraints

    n = sysm.dim
    stage_check = _galerkin_stages_unconstrained(sm)
    algebraic_check = _is_vector_space(sysm.Q)
    # fixed velocities at which dL/dv is probed (a Lagrangian without velocity dependence is refused)
    probes = np.random.default_rng(20240610).standard_normal((_N_PROBES, n))

    # an orthonormal basis N of Delta(q0) = ker A(q0) is needed in the program by the Legendre inverse of p0 only
    # (which calls LAPACK anyway); the rest needs only the projector N N^T, computed without a LAPACK call (a
    # program with none loads from the cache without initializing LAPACK, ~0.1 s); the singular value
    # decompositions of the checks (A(q0), d2L/dv2, the algebraic equations) are the host's (check_start)
    needs_basis = bool(m) and not has_v

    def one(q, v, p, h, t0, params):
        out = {}
        A = sysm.constraint_matrix(q, params) if m else None
        N = P = jnp.eye(n)  # a basis of Delta(q0) = ker A(q0), and the orthogonal projector onto it
        if m:
            out["A"] = A  # its rank is checked on the host
            if needs_basis:
                N = jnp.linalg.svd(A)[2][m:].T
                P = N @ N.T
            else:
                P = _null_projector(A)
        if sysm.n_holonomic:  # g(q0) = 0 is checked on the host (its differential is in A)
            out["g"] = sysm.holonomic(q, params)
        # dL/dv on Delta(q0) at v0 (or 0) and at the probe velocities in Delta(q0) (only whether it vanishes is
        # checked: |dL/dv N| = 0 exactly where |dL/dv N N^T| = 0)
        W = jnp.concatenate([v[None], probes @ P])
        if n > m:
            out["dLdv_probe"] = jnp.max(jnp.abs(jax.vmap(lambda w: sysm.momentum(q, w, params) @ P)(W)))
        else:  # Delta(q0) = 0: nothing to probe (a system that cannot move)
            out["dLdv_probe"] = jnp.ones(())
        if has_v:
            p = sysm.momentum(q, v, params)
            out["p"] = p
        else:
            out["legendre"] = _legendre_solve(sysm, q, p, A, N, params)
        if check_degenerate or stage_check or algebraic_check:
            # d2L/dv2 at (q0, v0): its singular values on ker A(q0) and on the whole frame space are the host's
            # (host_degeneracy)
            out["d2L_dv2"] = jax.jacfwd(lambda w: sysm.momentum(q, w, params))(v)
        if has_v:
            xi0 = h * v
        else:  # warm start from the Legendre inverse of p0 (on Delta(q0)), not from rest
            vl = out["legendre"]["v"]
            xi0 = jnp.where(jnp.all(jnp.isfinite(vl)), h * vl, jnp.zeros_like(p))
        if algebraic_check:
            out["secondary_terms"] = _secondary_terms(sysm, q, v, t0, params)
            if not m and n <= SMALL_SOLVE_MAX:  # the usual case told apart here: d2L/dv2 regular, nothing to check
                out["kinetic_bound"] = _kinetic_bound(out["d2L_dv2"])
        out["members"] = sm.initial(q, p, xi0)
        # the first step's Newton matrix at its warm start: a singular one is refused (_check_step_matrix); its
        # condition number is computed on the host (host_condition): compiled here, the inverse and the singular
        # value decomposition of the null direction were half of this program's compile time
        out["step_matrix"] = step_matrix(sm, q, p, sm.warm_start(out["members"]), t0, h, params)
        return out

    spec: list = []

    def start(q, v, p, h, t0, params):
        res = over_batch(lambda qq, vv, pp: one(qq, vv, pp, h, t0, params), nb)(q, v, p)
        members = _flatten_batch(res.pop("members"), nb)
        return members, _pack_values(res, nb, spec)

    compiled = jax.jit(start, compiler_options=START_COMPILER_OPTIONS)  # on disk too: exported.compiler_options
    compiled.spec = spec  # type: ignore[attr-defined]  # filled at the first trace
    return compiled


def _pack_values(tree: dict, nb: int, spec: list) -> jax.Array:
    """The leaves of ``tree`` (leading batch axes ``nb``) raveled into one float64 array ``(*B, F)`` (traced).

    ``spec`` receives ``(treedef, [(shape, dtype), ...])`` (the shapes past
    the batch axes) at the first trace.
    """
    leaves, treedef = jax.tree.flatten(tree)
    if not spec:
        spec.append((treedef, [(tuple(x.shape[nb:]), x.dtype) for x in leaves]))
    B = leaves[0].shape[:nb]
    return jnp.concatenate([jnp.reshape(x, (*B, -1)).astype(jnp.float64) for x in leaves], axis=-1)


def unpack_values(flat: np.ndarray, spec: list) -> dict:
    """Inverse of :func:`_pack_values` on the host: numpy views of ``flat`` ``(*B, F)``, in the traced dtypes."""
    treedef, shapes = spec[0]
    B, out, i = flat.shape[:-1], [], 0
    for shape, dtype in shapes:
        size = int(np.prod(shape, dtype=int))
        out.append(flat[..., i:i + size].reshape((*B, *shape)).astype(dtype, copy=False))
        i += size
    return jax.tree.unflatten(treedef, out)


def check_start(sm: StepMap, out: dict, q0: Point, vv: np.ndarray | None, pp: np.ndarray | None,
                B: tuple[int, ...]) -> Vector | None:
    """Refuse an ill-posed start (on the host); the Legendre velocity of ``p0`` where it is unique, else None.

    ``out`` holds the values of :func:`build_start` (on the host), ``vv`` and
    ``pp`` the given ``v0`` and ``p0`` (``(*B, n)``, or None), ``B`` the batch
    shape. Raises ``ValueError`` for initial data off the constraints or a
    non-finite or rank-deficient ``A(q0)``;
    :class:`~manifold_dirac._errors.IllPosedSystemError` for a system the
    steps cannot integrate from there; warns
    :class:`~manifold_dirac._errors.DegenerateLagrangianWarning` for a rule
    not known to be stable for a degenerate Lagrangian.
    """
    sysm, nb = sm.system, len(B)
    m = sysm.n_constraints
    if "g" in out:  # g(q0) = 0 (holonomic constraints), dg(q0) the last rows of [A; dg](q0)
        sysm._refuse_off_position(out["g"], out["A"][..., sysm.n_one_forms:, :], B)
    if m:
        A = out["A"]
        _check_finite_constraint(sysm, A, B)
        _check_constraint_rank(sysm, A)
    if "d2L_dv2" in out:
        Nt = _host_null_basis(out.get("A"), sysm.dim)
        out.update(host_degeneracy(out["d2L_dv2"], Nt, full=_galerkin_stages_unconstrained(sm),
                                   restricted=not sm.rule.degenerate_safe))
        M, g, scale = out.pop("secondary_terms", (None, None, None))
        if M is not None and not np.all(out.pop("kinetic_bound", 0.0) > _REGULAR_BOUND):
            out["secondary"], out["secondary_direction"] = host_secondary_residual(out["d2L_dv2"], M, g, scale, Nt)
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
            f"{sm.rule.name!r} is not known to be stable for such systems (rectangle rules: singular "
            "steps; trapezoid: parasitic modes). Use discrete_lagrangian='midpoint'.",
            DegenerateLagrangianWarning,
            stacklevel=3,
        )
    # undetermined or wrongly determined steps, refused before any step (after the warning above)
    if "degeneracy_full" in out:
        _check_galerkin_degeneracy(sysm, sm.rule, out["degeneracy_full"], out["degenerate_direction"], B)
    if "secondary" in out:
        _check_secondary_constraint(sysm, out["secondary"], out["secondary_direction"], B)
    cond, null = host_condition(out["step_matrix"])
    _check_step_matrix(sysm, sm.scheme, sm.rule, cond, null, B)
    return None if v_legendre is None else _flatten_batch(v_legendre, nb)


def _null_projector(A: Matrix) -> Matrix:
    """``I - Q^T Q``, the orthogonal projector onto ``ker A`` (``A (m, n)`` of full row rank; traceable, no LAPACK).

    ``Q`` holds an orthonormal basis of the rows of ``A`` by modified
    Gram--Schmidt, unrolled over the static ``m``: the start needs the
    projector only (the probe velocities of :func:`build_start`), and a
    singular value decomposition would be the program's only LAPACK call.
    Dependent rows give a meaningless projector (or NaN entries): the host
    refuses such an ``A(q0)`` before it reads the probe
    (:func:`_check_constraint_rank`).
    """
    rows: list[jax.Array] = []
    for i in range(A.shape[0]):
        r = A[i]
        for e in rows:
            r = r - jnp.sum(e * r) * e
        rows.append(r / jnp.sqrt(jnp.sum(r * r)))
    Q = jnp.stack(rows)
    return jnp.eye(A.shape[1], dtype=A.dtype) - jnp.sum(Q[:, :, None] * Q[:, None, :], axis=0)


def _host_null_basis(A: np.ndarray | None, n: int) -> np.ndarray | None:
    """The rows of ``N^T`` ``(*B, n - m, n)``: an orthonormal basis of ``ker A(q0)`` (right singular vectors of ``A``
    past its rank; ``A`` finite, of full row rank: checked before), or None without constraints (``N = I``)."""
    if A is None:
        return None
    return np.linalg.svd(A)[2][..., A.shape[-2]:, :]


def host_degeneracy(H: np.ndarray, Nt: np.ndarray | None, full: bool, restricted: bool) -> dict:
    """How close ``d2L/dv2`` is to singular, on the host: ``H (*B, n, n)`` at ``(q0, v0)``.

    ``Nt`` holds the rows of ``N^T`` ``(*B, k, n)``, an orthonormal basis of
    ``Delta(q0) = ker A(q0)`` (None: the whole frame space). Returns the
    entries :func:`check_start` checks: ``degeneracy`` (with ``restricted``,
    when ``Delta(q0)`` is not zero): the smallest singular value of ``N^T H
    N`` relative to the largest; ``degeneracy_full`` and
    ``degenerate_direction`` (with ``full``): the same on the whole frame
    space, and the right singular vector of the smallest one. NumPy's
    decompositions of a few small matrices: compiled into the start, they
    were its only LAPACK calls.
    """
    out = {}
    H = np.asarray(H, dtype=np.float64)
    if restricted:
        Hr = H if Nt is None else Nt @ H @ np.swapaxes(Nt, -1, -2)
        if Hr.shape[-1]:
            sv = _svd(Hr)[1]
            out["degeneracy"] = sv[..., -1] / np.maximum(sv[..., 0], 1e-300)
    if full:
        _, svf, Vf = _svd(H)
        out["degeneracy_full"] = svf[..., -1] / np.maximum(svf[..., 0], 1e-300)
        out["degenerate_direction"] = Vf[..., -1, :]
    return out


def _svd(X: np.ndarray, full_matrices: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.linalg.svd`` of a stack, NaN for a member with a non-finite entry (NumPy raises; the members' own checks
    report it, as the compiled decomposition's NaN did)."""
    ok = np.isfinite(X).all(axis=(-2, -1))
    if not ok.all():
        X = np.where(ok[..., None, None], X, 0.0)
    U, sv, Vt = np.linalg.svd(X, full_matrices=full_matrices)
    if not ok.all():
        for r in (U, sv, Vt):
            r[~ok] = np.nan
    return U, sv, Vt


def _legendre_solve(sysm: LagrangeDiracSystem, q: Point, p: Covector, A: Matrix | None, N: Matrix,
                    params: Params, v_start: Vector | None = None, iterations: int = _LEGENDRE_ITERATIONS) -> dict:
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


def equilibrated_condition(J: Matrix, direction: bool = True) -> tuple[jax.Array, Vector]:
    """The condition number of ``J`` scaled by rows then columns (traceable), and its null direction.

    Rows and columns are divided by their largest entry (so the units of the
    unknowns and of the equations drop out). The condition number is the
    1-norm one, ``||Je||_1 ||Je^{-1}||_1`` of the scaled matrix ``Je``
    (``inf`` when the elimination meets a zero pivot), with ``Je^{-1}`` from
    the unrolled Gaussian elimination of
    :func:`~manifold_dirac._mechanics.small.solve_small` (no LAPACK call up to
    its size limit: a singular value decomposition costs tens of microseconds
    per call, more than the rest of a short run's start). It is within a
    factor ``N`` of the 2-norm one, the ratio of the extreme singular values
    (``kappa_2 / N <= kappa_1 <= N kappa_2``).

    The direction (only with ``direction=True``, and computed only when the
    matrix is singular by the start's threshold, else zeros) is the right
    singular vector of the smallest singular value, in the unknowns' units.
    """

    Je = J / jnp.maximum(jnp.max(jnp.abs(J), axis=1, keepdims=True), 1e-300)
    col = jnp.maximum(jnp.max(jnp.abs(Je), axis=0, keepdims=True), 1e-300)
    Je = Je / col
    N = Je.shape[-1]
    eye = jnp.eye(N, dtype=Je.dtype)
    if N <= SMALL_SOLVE_MAX:
        inv_t = solve_small(Je, eye).T  # row j: Je^{-1} e_j (one elimination, every column at once)
    else:
        inv_t = jnp.linalg.solve(Je, eye).T
    inv_norm = jnp.max(jnp.sum(jnp.abs(inv_t), axis=1))  # ||Je^{-1}||_1: its largest column sum
    norm = jnp.max(jnp.sum(jnp.abs(Je), axis=0))
    cond = jnp.where(jnp.isfinite(inv_norm), norm * inv_norm, jnp.inf)  # a zero pivot: inf or NaN entries
    if not direction:
        return cond, jnp.zeros(N, Je.dtype)

    def null_direction(A):
        return jnp.linalg.svd(A)[2][-1] / col[0]

    d = jax.lax.cond(cond > _SINGULAR_STEP, null_direction, lambda A: jnp.zeros(N, A.dtype), Je)
    return cond, d


def step_matrix(sm: StepMap, q: Point, p: Covector, z: Vector, t: Scalar, h: Scalar, params: Params,
                basis_in_loop: bool = False) -> Matrix:
    """The step's Newton matrix ``dr/dz`` at ``z`` (one member; traceable), ``(N, N)``; the inputs not differentiated.

    The matrix Newton's first iteration solves with on the first step
    (``z`` its warm start): the discrete equations of the scheme (Parks &
    Leok 2017, (52)-(53) and their symmetric forms) differentiated in the
    unknowns. ``basis_in_loop``: as :meth:`StepMap.jacobian`'s.
    """
    q, p, z, t, h, params = jax.lax.stop_gradient((q, p, z, t, h, params))
    return sm.jacobian(z, q, p, t, h, params, basis_in_loop=basis_in_loop)


def host_condition(J: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(cond, direction)`` of Newton matrices ``J (*B, N, N)`` on the host, as :func:`equilibrated_condition`.

    The same quantities as the traced :func:`equilibrated_condition` (and
    :func:`step_conditioning`), computed with NumPy where a run's start
    checks them: the 1-norm condition number of ``J`` scaled by rows then
    columns, ``inf`` for a singular matrix, and ``1`` for a matrix with a
    non-finite entry (the step's own failure, diagnosed there); the
    direction ``(*B, N)``, the right singular vector of the smallest
    singular value in the unknowns' units, only for the members above the
    start's threshold (zeros elsewhere). The inverse is LAPACK's here and
    the unrolled elimination there: the two agree to rounding.
    """
    J = np.asarray(J, dtype=np.float64)
    B, N = J.shape[:-2], J.shape[-1]
    if N == 0:
        return np.ones(B), np.zeros((*B, 0))
    # np.linalg.cond(Je, 1) written out (one inverse, the norms by hand: it runs at every start, and its checks
    # and wrappers were most of its cost); the same operations, so the same bits
    finite = np.isfinite(J).all(axis=(-2, -1))
    if not finite.all():
        J = np.where(finite[..., None, None], J, 0.0)
    a = np.abs(J)
    row = a.max(axis=-1, keepdims=True)
    np.maximum(row, 1e-300, out=row)
    a /= row  # |J / row|: the division is exact in sign
    col = a.max(axis=-2, keepdims=True)
    np.maximum(col, 1e-300, out=col)
    a /= col  # |Je|
    Je = J / row
    Je /= col
    with np.errstate(all="ignore"):
        inv = _inverse(Je)  # NaN or inf entries for a singular matrix
        cond = a.sum(axis=-2).max(axis=-1) * np.abs(inv).sum(axis=-2).max(axis=-1)
    cond = np.where(finite, np.where(np.isnan(cond), np.inf, cond), 1.0)
    direction = np.zeros((*B, N))
    bad = cond > _SINGULAR_STEP
    if bad.any():
        direction[bad] = np.linalg.svd(Je[bad])[2][..., -1, :] / col[bad][..., 0, :]
    return cond, direction


def _inverse(J: np.ndarray) -> np.ndarray:
    """``J^{-1}`` of a stack of square matrices by NumPy's own inverse (``np.linalg.cond``'s), NaN or inf if singular.

    ``np.linalg.inv`` raises on a singular matrix; ``np.linalg.cond`` calls
    the underlying routine, which does not. Where NumPy's layout is not the
    one expected, the inverse is ``np.linalg.inv``'s, a singular matrix's NaN.
    """
    if _GUFUNC_INV is not None:
        return _GUFUNC_INV(J, signature="d->d")
    out = np.empty_like(J)  # pragma: no cover  (another NumPy layout: member by member)
    for i in np.ndindex(J.shape[:-2]):  # pragma: no cover
        try:
            out[i] = np.linalg.inv(J[i])
        except np.linalg.LinAlgError:
            out[i] = np.nan
    return out  # pragma: no cover


def step_conditioning(sm: StepMap, q: Point, p: Covector, z: Vector, t: Scalar, h: Scalar,
                      params: Params, direction: bool = True, basis_in_loop: bool = False) -> tuple[jax.Array, Vector]:
    """``(cond, direction)`` of the step's equilibrated Newton matrix ``dr/dz`` at ``z`` (one member; traceable).

    Used by :func:`~manifold_dirac._run.rollout.rollout` on the first
    step's warm start, inside its compiled loop (a run of ``integrate``
    computes the same on the host from :func:`step_matrix`:
    :func:`host_condition`); the inputs are not differentiated.
    :func:`equilibrated_condition` gives both; ``direction=False`` skips the
    direction (zeros), which only an error message uses; ``basis_in_loop`` as
    :meth:`StepMap.jacobian`'s.
    """
    J = step_matrix(sm, q, p, z, t, h, params, basis_in_loop)
    if J.size == 0:
        return jnp.ones(()), jnp.zeros(z.shape)
    finite = jnp.all(jnp.isfinite(J))
    cond, d = equilibrated_condition(jnp.where(finite, J, 0.0), direction)
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
    if isinstance(sysm.Q, Euclidean) and len(names) == n:
        label = [names[i] for i in big]
    else:
        label = [f"frame component {i}" for i in big]
    vec = np.array2string(np.round(d, 3), separator=", ", suppress_small=True)
    return f"{vec} ({', '.join(label)})"


def _galerkin_stages_unconstrained(sm: StepMap) -> bool:
    """Whether the rule has internal curve stages that the step does not hold in the distribution Delta."""
    return sm.system.n_one_forms > 0 and sm.rule.n_stages(sm.system.dim) > 0


def _check_galerkin_degeneracy(sysm: LagrangeDiracSystem, rule: DiscreteLagrangian, deg: np.ndarray, direction: np.ndarray,
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


def _check_step_matrix(sysm: LagrangeDiracSystem, scheme: Scheme, rule: DiscreteLagrangian, cond: np.ndarray,
                       null: np.ndarray, B: tuple[int, ...]) -> None:
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
        f"scheme {scheme.name!r} and discrete Lagrangian {rule.name!r}): they do not determine "
        f"{what}. Give that direction a kinetic term (d2L/dv2 regular on the constraint distribution) or "
        "constrain it; for a Lagrangian degenerate by design, use discrete_lagrangian='midpoint'."
    )


def _kinetic_bound(H: Matrix) -> jax.Array:
    """``1 / |(Hn^T Hn)^{-1}|_1``, ``Hn = H / max|H|`` (one member, ``H = d2L/dv2 (n, n)``; traceable, no LAPACK).

    A lower bound of the square of ``Hn``'s smallest singular value (the
    inverse is symmetric: its 2-norm is at most its 1-norm): above
    :data:`_REGULAR_BOUND` every direction has a kinetic term and the
    algebraic equations' check has nothing to check
    (:func:`host_secondary_residual`); 0 or NaN for a singular or
    non-finite ``H``. The inverse is the unrolled elimination of
    :func:`~manifold_dirac._mechanics.small.solve_small` (``n`` at most its
    size limit).
    """
    Hn = H / jnp.maximum(jnp.max(jnp.abs(H)), 1e-300)
    G = Hn.T @ Hn
    inv = solve_small(G, jnp.eye(H.shape[-1], dtype=H.dtype)).T  # one elimination, every column at once
    return 1.0 / jnp.max(jnp.sum(jnp.abs(inv), axis=-1))


def _secondary_terms(sysm: LagrangeDiracSystem, q: Point, v: Vector, t: Scalar,
                     params: Params) -> tuple[jax.Array, jax.Array, jax.Array]:
    """What :func:`host_secondary_residual` needs besides ``d2L/dv2`` (one member, a vector space; traceable).

    ``M = d(dL/dv)/dq (n, n)`` (``M[i, j] = dp_i/dq_j``), ``g = dL/dq + F
    (n,)`` and the size of the terms, ``max(|dL/dq|, |dL/dv|, |F|)``.
    """
    n = sysm.dim
    M = jax.jacfwd(lambda e: sysm.momentum(sysm.Q.first_order_curve(q, e), v, params))(jnp.zeros(n))  # dp_i/dq_j
    dq = sysm.partials(q, v, params)[0]
    F = sysm.force(t, q, v, params) if sysm.has_force else None
    g = dq if F is None else dq + F
    scale = jnp.maximum(jnp.max(jnp.abs(dq)), jnp.max(jnp.abs(sysm.momentum(q, v, params))))
    if F is not None:
        scale = jnp.maximum(scale, jnp.max(jnp.abs(F)))
    return M, g, scale


def host_secondary_residual(H: np.ndarray, M: np.ndarray, g: np.ndarray, scale: np.ndarray,
                            Nt: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The violation of the algebraic equations of motion at ``(q0, v0)`` (a vector space; on the host, batched).

    ``H = d2L/dv2 (*B, n, n)``, ``M = d(dL/dv)/dq (*B, n, n)``, ``g = dL/dq + F (*B, n)``
    and ``scale`` ``(*B,)`` from :func:`_secondary_terms`; ``Nt`` the rows of
    ``N^T`` (:func:`_host_null_basis`, None for ``N = I``).

    A direction ``e`` of the constraint distribution (``e = N c``) whose
    momentum ``dL/dv . e`` is locally constant -- ``d2L/dv2 e = 0``,
    ``d2L/dv dq`` annihilating ``e`` on both sides -- has the equation of
    motion ``d/dt (dL/dv . e) = 0 = (dL/dq + F) . e`` (the constraint forces
    vanish on ``Delta``): not a differential equation but a constraint on
    ``q`` alone (and on ``v`` through ``F`` only), which the initial data must
    satisfy. Returns the largest violation relative to the size of the terms
    ``(*B,)`` and its direction ``e`` ``(*B, n)`` (NumPy's decomposition:
    compiled into the start, it was the program's only LAPACK call).
    """
    H, M, g = (np.asarray(x, dtype=np.float64) for x in (H, M, g))
    scale = np.asarray(scale, dtype=np.float64)
    n = H.shape[-1]
    N = np.broadcast_to(np.eye(n), H.shape) if Nt is None else np.swapaxes(Nt, -1, -2)
    if N.shape[-1] == 0:
        return np.zeros(scale.shape), np.zeros(g.shape)

    def norm(X: np.ndarray) -> np.ndarray:
        return X / np.maximum(np.max(np.abs(X), axis=(-2, -1), keepdims=True), 1e-300)

    HN = norm(H) @ N
    # the usual case, cheaply: d2L/dv2 regular on Delta. K stacks HN over more rows, so its smallest singular
    # value is at least HN's, whose square is at least 1 / |(HN^T HN)^{-1}|_1 (the inverse is symmetric: its
    # 2-norm is at most its 1-norm); above 1e-12 (singular values above 1e-6, the null test's 1e-8 with a margin
    # for the inverse's rounding) no direction is null and nothing is violated
    with np.errstate(all="ignore"):
        low = 1.0 / np.abs(_inverse(np.swapaxes(HN, -1, -2) @ HN)).sum(axis=-2).max(axis=-1)
    if np.all(low > _REGULAR_BOUND):
        return np.zeros(scale.shape), np.zeros(g.shape)
    K = np.concatenate([HN, norm(M) @ N, norm(np.swapaxes(M, -1, -2)) @ N], axis=-2)
    _, sv, Vt = _svd(K, full_matrices=False)
    null = sv <= 1e-8
    E = Vt @ np.swapaxes(N, -1, -2)  # rows: candidate directions e in Delta, unit length
    with np.errstate(invalid="ignore"):
        res = np.where(null, np.abs(np.sum(E * g[..., None, :], axis=-1)), 0.0) / np.maximum(scale, 1e-300)[..., None]
    j = np.argmax(np.where(np.isnan(res), np.inf, res), axis=-1)[..., None]  # a NaN member: NaN, as the check expects
    return np.take_along_axis(res, j, axis=-1)[..., 0], np.take_along_axis(E, j[..., None], axis=-2)[..., 0, :]


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
    """Refuse linearly dependent constraint one-forms at q0 (a non-regular distribution).

    ``A`` is ``A(q0)`` ``(*B, m, n)`` (finite, from the compiled start); its singular values are NumPy's.
    """
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
