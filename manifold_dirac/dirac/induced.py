"""Induced and interaction Dirac structures, interconnection, Dirac differential.

Continuous, pointwise objects on ``V = T_{(q,p)} T*Q = R^{2n}`` with
components ``v = (v_q, v_p)`` and ``alpha = (alpha_q, alpha_p)``:

* :func:`induced` -- ``D_{Delta_Q}`` of (9);
* :func:`interaction` -- ``D_int`` of (25)--(26);
* :func:`interconnect_structures` -- ``(D_1 (+) D_2) ⊠ D_int`` of (29);
* :func:`constraint_forms_of_intersection` -- the forms of
  ``Delta_Q = (Delta_1 (+) Delta_2) ∩ Sigma_Q`` (31) with a regularity report;
* :func:`dirac_differential` and :func:`lagrange_dirac_residual` -- (18) and
  the membership (16)/(33) that gives (19).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike

from .linear import (
    RANK_RTOL,
    FloatArray,
    LinearDirac,
    LinearSubspace,
    _as_matrix,
    _as_vector,
    _check_tol,
    _kernel,
)

__all__ = [
    "IntersectionForms",
    "LagrangeDiracResidual",
    "constraint_forms_of_intersection",
    "dirac_differential",
    "induced",
    "interaction",
    "interconnect_structures",
    "lagrange_dirac_residual",
]


induced = LinearDirac.induced
"""Induced Dirac structure (9) of ``Delta_Q = ker A``: :meth:`LinearDirac.induced` under a short name."""

interaction = LinearDirac.interaction
"""Standard interaction structure (26) of ``Sigma_Q = ker S``: :meth:`LinearDirac.interaction` under a short name."""


def interconnect_structures(D1: LinearDirac, D2: LinearDirac, S: ArrayLike, *, rtol: float = RANK_RTOL) -> LinearDirac:
    """Interconnection (29) ``(D1 (+) D2) ⊠ D_int`` of two structures on cotangent bundles.

    Parameters
    ----------
    D1, D2 : LinearDirac
        Structures on ``T_{(q_i,p_i)} T*Q_i = R^{2 n_i}`` (``(v_q, v_p)`` layout).
    S : array-like, shape=[r, n1 + n2]
        Interaction forms on ``Q1 x Q2`` (frame of the product: ``(q1, q2)``).
    rtol : float
        Relative rank tolerance for ``S``.

    Returns
    -------
    LinearDirac
        On ``R^{2(n1+n2)}`` in the layout ``((v_q1, v_q2), (v_p1, v_p2))``.

    Notes
    -----
    The direct sum is taken with ``blocks=2`` so that it lives on
    ``T_{(q,p)} T*(Q1 x Q2)``; for induced structures the result is
    ``D_{Delta_Q}`` with ``Delta_Q`` of (31), which is (32).

    Examples
    --------
    Two free particles on a line joined by ``v_1 = v_2``: the interconnection
    is the structure induced by the joined constraint (and not the free one):

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> free = md.dirac.LinearDirac.induced(np.zeros((0, 1)))
    >>> D = md.dirac.interconnect_structures(free, free, np.array([[1.0, -1.0]]))
    >>> D.is_dirac(), D.primal_dim
    (True, 4)
    >>> D.equals(md.dirac.LinearDirac.induced(np.array([[1.0, -1.0]])))
    True
    >>> D.equals(md.dirac.LinearDirac.induced(np.zeros((0, 2))))
    False
    """
    for name, d in (("D1", D1), ("D2", D2)):
        if not isinstance(d, LinearDirac):
            raise ValueError(f"{name} must be a LinearDirac; got {type(d).__name__}.")
        if d.space_dim % 2:
            raise ValueError(
                f"{name} must live on a cotangent bundle (even dim V); got dim V = {d.space_dim}."
            )
    n = (D1.space_dim + D2.space_dim) // 2
    s = _as_matrix(S, "S", cols=n)
    return D1.direct_sum(D2, blocks=2).tensor(LinearDirac.interaction(s, rtol=rtol))


@dataclass(frozen=True)
class IntersectionForms:
    """Forms of ``Delta_Q = ker A ∩ ker S`` (31) and a regularity report.

    Attributes
    ----------
    forms : ndarray, shape=[rank, n]
        A full-row-rank selection of the declared rows of ``[A; S]``: all
        independent rows of ``A`` first, then the rows of ``S`` that are
        independent of them; ``ker forms = Delta_Q``.
    selected : tuple of int
        Indices of the chosen rows in ``[A; S]`` (``S`` row ``j`` is ``m + j``).
    n : int
        Dimension of ``Q``.
    declared_A, declared_S : int
        Numbers of declared rows ``m`` and ``r``.
    rank_A, rank_S, rank : int
        Ranks of ``A``, ``S`` and ``[A; S]``.
    dim : int
        ``dim Delta_Q = n - rank``.
    expected_dim : int
        ``n - m - r``, what independent declared forms imply.
    regular : bool
        ``rank == m + r``: the declared forms are independent, the multipliers
        of the interconnected system are unique.
    message : str
        A sentence describing any rank drop (empty when regular).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> A = np.array([[1.0, 0.0, 0.0]])
    >>> forms = md.dirac.constraint_forms_of_intersection(A, np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]]))
    >>> forms.selected, forms.rank, forms.expected_dim, forms.regular
    ((0, 2), 2, 0, False)
    >>> forms.distribution.dim
    1
    """

    forms: FloatArray
    selected: tuple[int, ...]
    n: int
    declared_A: int
    declared_S: int
    rank_A: int
    rank_S: int
    rank: int
    dim: int
    expected_dim: int
    regular: bool
    message: str

    @property
    def distribution(self) -> LinearSubspace:
        """``Delta_Q`` as a subspace of ``R^n``."""
        return (
            LinearSubspace.from_equations(self.forms) if self.forms.shape[0] else LinearSubspace.full(self.n)
        )


def _pivot_rows(m: FloatArray, count: int) -> list[int]:
    """Indices of ``count`` well-conditioned rows of ``m`` (pivoted QR of ``m^T``)."""
    if count == 0 or m.shape[0] == 0:
        return []
    _, _, piv = scipy.linalg.qr(m.T, mode="economic", pivoting=True)
    return sorted(int(i) for i in piv[:count])


def constraint_forms_of_intersection(
    A_blockdiag: ArrayLike,
    S: ArrayLike,
    *,
    strict: bool = False,
    rtol: float = RANK_RTOL,
) -> IntersectionForms:
    """Full-row-rank forms of ``Delta_Q = (Delta_1 (+) Delta_2) ∩ Sigma_Q``, (31).

    Parameters
    ----------
    A_blockdiag : array-like, shape=[m, n]
        Forms of ``Delta_1 (+) Delta_2`` (``block_diag_forms(A1, A2)``).
    S : array-like, shape=[r, n]
        Interaction forms, ``Sigma_Q = ker S``.
    strict : bool
        If true, any rank drop raises ``ValueError``.
    rtol : float
        Relative rank tolerance (relative to the largest singular value of
        ``[A; S]``, so a row's independence does not depend on its scale).

    Returns
    -------
    IntersectionForms

    Raises
    ------
    ValueError
        On bad shapes; with ``strict=True`` also when the declared forms of
        ``A`` or of ``S`` are linearly dependent, or when ``dim Delta_Q``
        differs from ``n - m - r`` (some interaction forms are combinations of
        the subsystem constraints).

    Notes
    -----
    ``Delta_Q° = row A + row S``; ``D_{Delta_Q}`` built from the returned forms
    is the interconnected structure (32).  The intersection of regular
    distributions need not be regular as ``q`` varies; at a point the best we
    can do is report rank drops against the declared forms.

    Examples
    --------
    A knife edge (``v_y = 0``, columns ``(omega, v_x, v_y)``) and a wheel
    (one column) whose rim speed equals ``v_x``:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> A = md.dirac.block_diag_forms(np.array([[0.0, 0.0, 1.0]]), np.zeros((0, 1)))
    >>> forms = md.dirac.constraint_forms_of_intersection(A, np.array([[0.0, 1.0, 0.0, -1.0]]))
    >>> forms.rank, forms.dim, forms.regular                 # Delta_Q: 4 - 2 dimensions
    (2, 2, True)
    """
    a = _as_matrix(A_blockdiag, "A_blockdiag")
    s = _as_matrix(S, "S")
    if a.shape[1] != s.shape[1]:
        raise ValueError(
            f"A_blockdiag and S must act on the same tangent space; they have {a.shape[1]} and "
            f"{s.shape[1]} columns."
        )
    tol = _check_tol(rtol, "rtol")
    n, m, r = a.shape[1], a.shape[0], s.shape[0]
    stacked = np.vstack([a, s])

    def rank(mat: FloatArray) -> int:
        if mat.shape[0] == 0 or mat.shape[1] == 0:
            return 0
        sv = np.linalg.svd(mat, compute_uv=False)
        scale = max(float(np.linalg.svd(stacked, compute_uv=False)[0]), np.finfo(float).tiny)
        return int(np.sum(sv > tol * scale))

    rank_a, rank_s, rank_all = rank(a), rank(s), rank(stacked)
    sel_a = _pivot_rows(a, rank_a)
    # rows of S independent of the chosen rows of A: pivot on S projected off row A
    if sel_a:
        qa = np.linalg.qr(a[sel_a].T)[0]
        s_off = s - (s @ qa) @ qa.T
    else:
        s_off = s
    sel_s = _pivot_rows(s_off, rank_all - rank_a)
    selected = tuple(sel_a) + tuple(m + j for j in sel_s)
    forms = stacked[list(selected)] if selected else np.zeros((0, n))

    problems = []
    if rank_a < m:
        problems.append(
            f"the {m} declared forms of Delta_1 (+) Delta_2 are linearly dependent (rank {rank_a})"
        )
    if rank_s < r:
        problems.append(f"the {r} declared interaction forms S are linearly dependent (rank {rank_s})")
    if rank_all < rank_a + rank_s:
        problems.append(
            f"{rank_a + rank_s - rank_all} interaction form(s) are combinations of the subsystem constraints"
        )
    regular = rank_all == m + r
    message = ""
    if not regular:
        message = (
            f"Delta_Q = (Delta_1 (+) Delta_2) ∩ Sigma_Q has dimension {n - rank_all}, but the declared "
            f"forms ({m} + {r} on R^{n}) imply {n - m - r}: "
            + "; ".join(problems)
            + ". The constraint set is not regular as declared: the multipliers are not unique."
        )
        if strict:
            raise ValueError(message)
    return IntersectionForms(
        forms=forms,
        selected=selected,
        n=n,
        declared_A=m,
        declared_S=r,
        rank_A=rank_a,
        rank_S=rank_s,
        rank=rank_all,
        dim=n - rank_all,
        expected_dim=n - m - r,
        regular=regular,
        message=message,
    )


def dirac_differential(dL_dq: ArrayLike, dL_dv: ArrayLike, v: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Dirac differential (18) ``𝔇L(q, v) = (q, dL/dv, -dL/dq, v)``.

    Parameters
    ----------
    dL_dq, dL_dv, v : array-like, shape=[n]
        Partials of ``L`` at ``(q, v)`` in frame coordinates, and ``v``.

    Returns
    -------
    p : ndarray, shape=[n]
        The fibre part of the basepoint, ``dL/dv`` (the Legendre transform).
    alpha : ndarray, shape=[2n]
        The covector ``(alpha_q, alpha_p) = (-dL/dq, v)``.

    Notes
    -----
    (14)--(18): ``𝔇L = gamma_Q ∘ dL`` with ``gamma_Q`` of (17).

    Examples
    --------
    A particle on a line, ``L = v^2 / 2 - q^2 / 2`` at ``q = 1``, ``v = 2``:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> p, alpha = md.dirac.dirac_differential(np.array([-1.0]), np.array([2.0]), np.array([2.0]))
    >>> p, alpha                                         # p = dL/dv; alpha = (-dL/dq, v)
    (array([2.]), array([1., 2.]))
    """
    v_arr = np.asarray(v, dtype=float)
    n = v_arr.shape[0] if v_arr.ndim == 1 else -1
    if n < 0:
        raise ValueError(f"v must be a vector of shape (n,); got shape {v_arr.shape}.")
    dq = _as_vector(dL_dq, "dL_dq", n)
    dv = _as_vector(dL_dv, "dL_dv", n)
    return dv.copy(), np.concatenate([-dq, _as_vector(v_arr, "v", n)])


@dataclass(frozen=True)
class LagrangeDiracResidual:
    """Residuals of the Lagrange--Dirac equations (19) at one instant.

    Attributes
    ----------
    constraint : float
        ``|A qdot|``.
    second_order : float
        ``|qdot - v|``.
    legendre : float
        ``|p - dL/dv|`` (basepoint matching of (16)).
    annihilator : float
        Distance of ``pdot - dL/dq`` (``- F``) from ``row A``.
    membership : float
        Distance of ``((qdot, pdot), 𝔇L - F~)`` from ``D_{Delta_Q}`` (9).
    multiplier : ndarray, shape=[m]
        Least-squares ``mu`` with ``pdot - dL/dq - F = A^T mu``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> A = np.array([[0.0, 1.0]])
    >>> r = md.dirac.lagrange_dirac_residual(A, [1.0, 0.0], [0.0, 3.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0], [1.0, 0.0])
    >>> bool(r.max < 1e-12), r.multiplier.round(6)
    (True, array([3.]))
    """

    constraint: float
    second_order: float
    legendre: float
    annihilator: float
    membership: float
    multiplier: FloatArray

    @property
    def max(self) -> float:
        """Largest residual."""
        return max(self.constraint, self.second_order, self.legendre, self.annihilator, self.membership)


def lagrange_dirac_residual(
    A: ArrayLike,
    qdot: ArrayLike,
    pdot: ArrayLike,
    p: ArrayLike,
    v: ArrayLike,
    dL_dq: ArrayLike,
    dL_dv: ArrayLike,
    force: ArrayLike | None = None,
) -> LagrangeDiracResidual:
    """Check ``(X_D, 𝔇L - F~) in D_{Delta_Q}(q, p)``, (16)/(22)/(33)/(34).

    Parameters
    ----------
    A : array-like, shape=[m, n]
        Constraint forms at ``q``.
    qdot, pdot, p, v, dL_dq, dL_dv : array-like, shape=[n]
        The partial vector field (15), the momentum, the velocity and the
        partials of ``L`` at ``(q, v)``.
    force : array-like, shape=[n], optional
        External force ``F(q, v)``; its horizontal lift is ``(F, 0)`` (21).

    Returns
    -------
    LagrangeDiracResidual

    Notes
    -----
    (19)/(23): ``qdot = v in Delta_Q``, ``pdot - dL/dq - F in Delta_Q°``,
    ``p = dL/dv``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> free = np.zeros((0, 1))
    >>> q, v = 1.0, 0.5
    >>> r = md.dirac.lagrange_dirac_residual(free, qdot=[v], pdot=[-q], p=[v], v=[v], dL_dq=[-q], dL_dv=[v])
    >>> bool(r.max < 1e-12)
    True
    >>> wrong = md.dirac.lagrange_dirac_residual(free, qdot=[v], pdot=[0.0], p=[v], v=[v], dL_dq=[-q], dL_dv=[v])
    >>> bool(wrong.membership > 0.1)  # pdot != dL/dq: off the structure
    True
    """
    a = _as_matrix(A, "A")
    n = a.shape[1]
    qd, pd = _as_vector(qdot, "qdot", n), _as_vector(pdot, "pdot", n)
    pp, vv = _as_vector(p, "p", n), _as_vector(v, "v", n)
    dq, dv = _as_vector(dL_dq, "dL_dq", n), _as_vector(dL_dv, "dL_dv", n)
    f = np.zeros(n) if force is None else _as_vector(force, "force", n)
    base_p, alpha = dirac_differential(dq, dv, vv)
    alpha = alpha - np.concatenate([f, np.zeros(n)])
    d = LinearDirac.induced(a)
    resid = pd - dq - f
    mu: FloatArray = np.asarray(
        np.linalg.lstsq(a.T, resid, rcond=None)[0] if a.shape[0] else np.zeros(0), dtype=float
    )
    e = _kernel(a, RANK_RTOL, relative=True)
    return LagrangeDiracResidual(
        constraint=float(np.linalg.norm(a @ qd)),
        second_order=float(np.linalg.norm(qd - vv)),
        legendre=float(np.linalg.norm(pp - base_p)),
        annihilator=float(np.linalg.norm(e.T @ resid)),
        membership=d.distance(np.concatenate([qd, pd]), alpha),
        multiplier=mu,
    )
