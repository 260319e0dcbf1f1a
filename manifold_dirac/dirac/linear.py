"""Linear subspaces, linear relations and linear Dirac structures.

Everything here is pointwise linear algebra on ``R^d`` with orthonormal bases
(columns), computed with the SVD and a rank tolerance:

* :class:`LinearSubspace` -- a subspace of ``R^d`` (a distribution at a
  point, an annihilator, ...);
* :class:`LinearRelation` -- a subspace of ``R^P (+) R^K`` split into
  "primal" variables ``x`` and "dual" variables ``y``, with the direct sum (27)
  and the Dirac tensor product of Jacobs--Yoshimura, which share ``x`` and add
  ``y``.  The discrete structures of :mod:`.discrete` are such relations;
* :class:`LinearDirac` -- a relation on ``V (+) V*`` (``P = K = N``) with the
  symmetric pairing (1): orthogonal complement, isotropy, the Dirac property
  ``D = D^perp``, the associated distribution (2) and two-form (3), and the
  constructors ``Delta (+) Delta°``, (4), the induced structure (9) and the
  standard interaction structure (26).

Tolerances.  Ranks of *user* matrices (constraint forms, bases) are decided
relative to their largest singular value (``rtol``); ranks of matrices built
from orthonormal bases inside an operation use the absolute threshold
``RANK_TOL`` (their scale is one).  Membership tests are relative to the size
of the tested vector, ``distance <= tol * max(1, |w|)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "RANK_RTOL",
    "RANK_TOL",
    "LinearDirac",
    "LinearRelation",
    "LinearSubspace",
    "TwoFormOnDistribution",
    "block_diag_forms",
    "canonical_two_form",
]

FloatArray = NDArray[np.float64]

RANK_RTOL: float = 1e-10
"""Default relative rank tolerance for user-supplied matrices."""

RANK_TOL: float = 1e-8
"""Absolute rank tolerance for matrices built from orthonormal bases."""


# --------------------------------------------------------------------------- helpers
def _as_matrix(a: ArrayLike, name: str, *, rows: int | None = None, cols: int | None = None) -> FloatArray:
    """Validate a finite real 2-D array (optionally of given rows/cols)."""
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name} must be a real 2-D array; got an object numpy cannot convert ({exc})."
        ) from exc
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array (rows x columns); got an array with shape {arr.shape}. "
            "Pass an empty (0, n) array for 'no forms'."
        )
    if rows is not None and arr.shape[0] != rows:
        raise ValueError(f"{name} must have {rows} rows; got shape {arr.shape}.")
    if cols is not None and arr.shape[1] != cols:
        raise ValueError(f"{name} must have {cols} columns; got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains a non-finite value (nan or inf).")
    return arr


def _as_vector(a: ArrayLike, name: str, size: int) -> FloatArray:
    """Validate a finite real 1-D array of length ``size``."""
    try:
        arr = np.asarray(a, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real vector of length {size} ({exc}).") from exc
    if arr.shape != (size,):
        raise ValueError(f"{name} must be a vector of shape ({size},); got shape {arr.shape}.")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains a non-finite value (nan or inf).")
    return arr


def _threshold(s: FloatArray, tol: float, relative: bool) -> float:
    if not relative:
        return tol
    top = float(s[0]) if s.size else 0.0
    return tol * top if top > 0.0 else np.inf


def _range(m: FloatArray, tol: float, relative: bool) -> FloatArray:
    """Orthonormal basis (columns) of the column space of ``m``."""
    d, k = m.shape
    if k == 0 or d == 0:
        return np.zeros((d, 0))
    u, s, _ = np.linalg.svd(m, full_matrices=False)
    r = int(np.sum(s > _threshold(s, tol, relative)))
    return np.ascontiguousarray(u[:, :r])


def _kernel(m: FloatArray, tol: float, relative: bool) -> FloatArray:
    """Orthonormal basis (columns) of the kernel of ``m``."""
    rows, d = m.shape
    if rows == 0:
        return np.eye(d)
    if d == 0:
        return np.zeros((0, 0))
    _, s, vt = np.linalg.svd(m, full_matrices=True)
    r = int(np.sum(s > _threshold(s, tol, relative)))
    return np.ascontiguousarray(vt[r:].T)


def _check_tol(tol: float, name: str = "tol") -> float:
    if not (isinstance(tol, (int, float, np.floating)) and np.isfinite(tol) and tol >= 0):
        raise ValueError(f"{name} must be a finite non-negative number; got {tol!r}.")
    return float(tol)


def canonical_two_form(n: int) -> FloatArray:
    """Matrix of the canonical symplectic form on ``T*Q`` in coordinates ``(q, p)``.

    Parameters
    ----------
    n : int
        Dimension of ``Q``.

    Returns
    -------
    ndarray, shape=[2n, 2n]
        ``[[0, I], [-I, 0]]``, so that ``Omega(v, u) = v @ Omega @ u = v_q . u_p - v_p . u_q``.

    Notes
    -----
    The coordinate expression of ``Omega`` stated before (9); its flat map is
    (11), ``Omega^flat(v) = (-v_p, v_q)``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> Omega = md.dirac.canonical_two_form(1)
    >>> Omega + 0.0
    array([[ 0.,  1.],
           [-1.,  0.]])
    >>> v, u = np.array([1.0, 0.0]), np.array([0.0, 1.0])      # (q, p) components
    >>> float(v @ Omega @ u)                                    # v_q u_p - v_p u_q
    1.0
    """
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer; got {n!r}.")
    n = int(n)
    eye = np.eye(n)
    z = np.zeros((n, n))
    return np.block([[z, eye], [-eye, z]])


def block_diag_forms(*forms: ArrayLike) -> FloatArray:
    """Block-diagonal matrix of the constraint forms of subsystems.

    Parameters
    ----------
    *forms : array-like, shape=[m_i, n_i]
        The forms ``A_i`` of each subsystem (``(0, n_i)`` for none).

    Returns
    -------
    ndarray, shape=[sum m_i, sum n_i]
        The forms of ``Delta_1 (+) Delta_2 (+) ...`` on the product.

    Notes
    -----
    ``ker blockdiag(A_1, A_2) = ker A_1 (+) ker A_2``: the distribution of the
    direct sum (27) and of (31).

    Examples
    --------
    A knife edge's constraint next to an unconstrained subsystem on ``R^2``:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.dirac.block_diag_forms(np.array([[0.0, 0.0, 1.0]]), np.zeros((0, 2)))
    array([[0., 0., 1., 0., 0.]])
    """
    mats = [_as_matrix(f, f"forms[{i}]") for i, f in enumerate(forms)]
    m = sum(a.shape[0] for a in mats)
    n = sum(a.shape[1] for a in mats)
    out = np.zeros((m, n))
    i = j = 0
    for a in mats:
        out[i : i + a.shape[0], j : j + a.shape[1]] = a
        i += a.shape[0]
        j += a.shape[1]
    return out


# --------------------------------------------------------------------------- subspace
class LinearSubspace:
    """A linear subspace of ``R^d`` stored by an orthonormal basis.

    Construct with :meth:`from_basis` (span of columns) or
    :meth:`from_equations` (kernel of a matrix).

    Parameters
    ----------
    orthonormal_basis : array-like of float, shape=[d, k]
        Orthonormal columns spanning the subspace, taken as they are (the
        constructors above orthonormalize any basis or equations).

    Attributes
    ----------
    ambient_dim : int
        ``d``.
    dim : int
        Dimension ``k`` of the subspace.
    basis : ndarray, shape=[d, k]
        Orthonormal columns spanning the subspace (a copy).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> plane = md.dirac.LinearSubspace.from_equations(np.array([[0.0, 0.0, 1.0]]))   # z = 0 in R^3
    >>> plane.dim, plane.ambient_dim
    (2, 3)
    >>> plane.contains(np.array([1.0, 2.0, 0.0])), plane.contains(np.array([0.0, 0.0, 1.0]))
    (True, False)
    """

    __slots__ = ("_basis",)

    def __init__(self, orthonormal_basis: FloatArray) -> None:
        b = _as_matrix(orthonormal_basis, "orthonormal_basis")
        if b.shape[1] and not np.allclose(b.T @ b, np.eye(b.shape[1]), atol=1e-9):
            raise ValueError(
                "LinearSubspace(...) needs orthonormal columns; use LinearSubspace.from_basis "
                "for an arbitrary spanning set."
            )
        b = b.copy()
        b.setflags(write=False)
        self._basis = b

    # ---- constructors
    @classmethod
    def from_basis(cls, vectors: ArrayLike, *, rtol: float = RANK_RTOL) -> Self:
        """Span of the columns of ``vectors``.

        Parameters
        ----------
        vectors : array-like, shape=[d, k]
            Spanning vectors as columns (``(d, 0)`` for the zero subspace).
            Linearly dependent columns are allowed.
        rtol : float
            Relative rank tolerance on the singular values.

        Returns
        -------
        LinearSubspace
        """
        m = _as_matrix(vectors, "vectors")
        return cls(_range(m, _check_tol(rtol, "rtol"), relative=True))

    @classmethod
    def from_equations(cls, matrix: ArrayLike, *, rtol: float = RANK_RTOL) -> Self:
        """Kernel ``{x : M x = 0}``.

        Parameters
        ----------
        matrix : array-like, shape=[m, d]
            One equation per row (``(0, d)`` for the whole space).
        rtol : float
            Relative rank tolerance on the singular values.

        Returns
        -------
        LinearSubspace
        """
        m = _as_matrix(matrix, "matrix")
        return cls(_kernel(m, _check_tol(rtol, "rtol"), relative=True))

    @classmethod
    def full(cls, d: int) -> Self:
        """The whole space ``R^d``."""
        return cls(np.eye(d))

    @classmethod
    def zero(cls, d: int) -> Self:
        """The zero subspace of ``R^d``."""
        return cls(np.zeros((d, 0)))

    # ---- data
    @property
    def ambient_dim(self) -> int:
        """Dimension ``d`` of the ambient space."""
        return int(self._basis.shape[0])

    @property
    def dim(self) -> int:
        """Dimension of the subspace."""
        return int(self._basis.shape[1])

    @property
    def basis(self) -> FloatArray:
        """Orthonormal basis, shape ``(d, k)`` (a writable copy)."""
        return self._basis.copy()

    def projector(self) -> FloatArray:
        """Orthogonal projector onto the subspace, shape ``(d, d)``."""
        return self._basis @ self._basis.T

    def complement(self) -> LinearSubspace:
        """Euclidean orthogonal complement; with ``V* = R^d`` it is the annihilator.

        Returns
        -------
        LinearSubspace
            ``{y : y . x = 0 for all x in self}``.
        """
        return LinearSubspace(_kernel(self._basis.T, RANK_TOL, relative=False))

    annihilator = complement

    def equations(self) -> FloatArray:
        """Orthonormal rows ``C`` with ``self = ker C``, shape ``(d - k, d)``."""
        return self.complement()._basis.T.copy()

    # ---- tests
    def distance(self, x: ArrayLike) -> float:
        """Euclidean distance from ``x`` (shape ``(d,)``) to the subspace."""
        v = _as_vector(x, "x", self.ambient_dim)
        return float(np.linalg.norm(v - self._basis @ (self._basis.T @ v)))

    def contains(self, x: ArrayLike, tol: float = 1e-8) -> bool:
        """Whether ``distance(x) <= tol * max(1, |x|)``."""
        v = _as_vector(x, "x", self.ambient_dim)
        return self.distance(v) <= _check_tol(tol) * max(1.0, float(np.linalg.norm(v)))

    def _check_same_ambient(self, other: LinearSubspace, op: str) -> None:
        if not isinstance(other, LinearSubspace):
            raise ValueError(f"{op} needs a LinearSubspace; got {type(other).__name__}.")
        if other.ambient_dim != self.ambient_dim:
            raise ValueError(
                f"{op}: the subspaces live in spaces of different dimension "
                f"({self.ambient_dim} and {other.ambient_dim})."
            )

    def includes(self, other: LinearSubspace, tol: float = 1e-8) -> bool:
        """Whether ``other`` is contained in ``self`` (up to ``tol``, 2-norm of the defect)."""
        self._check_same_ambient(other, "includes")
        if other.dim == 0:
            return True
        defect = other._basis - self._basis @ (self._basis.T @ other._basis)
        return float(np.linalg.norm(defect, 2)) <= _check_tol(tol)

    def equals(self, other: LinearSubspace, tol: float = 1e-8) -> bool:
        """Same subspace: same dimension and mutual inclusion (up to ``tol``)."""
        self._check_same_ambient(other, "equals")
        return self.dim == other.dim and self.includes(other, tol) and other.includes(self, tol)

    # ---- operations
    def intersect(self, other: LinearSubspace) -> LinearSubspace:
        """Intersection ``self ∩ other``."""
        self._check_same_ambient(other, "intersect")
        eqs = np.vstack([self.equations(), other.equations()])
        return LinearSubspace(_kernel(eqs, RANK_TOL, relative=False))

    def sum(self, other: LinearSubspace) -> LinearSubspace:
        """Sum ``self + other`` (span of the union)."""
        self._check_same_ambient(other, "sum")
        return LinearSubspace(_range(np.hstack([self._basis, other._basis]), RANK_TOL, relative=False))

    def __repr__(self) -> str:
        return f"LinearSubspace(dim={self.dim}, ambient_dim={self.ambient_dim})"


# --------------------------------------------------------------------------- relation
def _interleave(sizes_a: tuple[int, ...], sizes_b: tuple[int, ...]) -> tuple[FloatArray, FloatArray]:
    """Index arrays placing blocks of ``a`` and ``b`` alternately: a1 b1 a2 b2 ..."""
    ia: list[int] = []
    ib: list[int] = []
    pos = 0
    for sa, sb in zip(sizes_a, sizes_b, strict=True):
        ia.extend(range(pos, pos + sa))
        pos += sa
        ib.extend(range(pos, pos + sb))
        pos += sb
    return np.asarray(ia, dtype=int), np.asarray(ib, dtype=int)


def _split_blocks(total: int, nblocks: int, what: str) -> tuple[int, ...]:
    if nblocks < 1:
        raise ValueError(f"the number of blocks must be at least 1; got {nblocks}.")
    if total % nblocks:
        raise ValueError(f"{what} of dimension {total} cannot be split into {nblocks} equal blocks.")
    return (total // nblocks,) * nblocks


class LinearRelation:
    """A linear subspace of ``R^P (+) R^K``: primal variables ``x``, dual ``y``.

    The split matters for the two operations of interconnection: the direct
    sum (27), which pairs relations on different spaces, and the Dirac tensor
    product, which shares ``x`` and adds ``y``.  A continuous structure on
    ``V (+) V*`` (:class:`LinearDirac`) has ``x = v`` and ``y = alpha``; a
    discrete one (:mod:`.discrete`) has ``x = (p_k, xi, p_{k+1})`` and
    ``y = (alpha_q, alpha_p)``.

    Parameters
    ----------
    space : LinearSubspace
        The subspace, of ambient dimension ``P + K``.
    primal_dim, dual_dim : int
        ``P`` and ``K``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> graph = md.dirac.LinearSubspace.from_equations(np.array([[2.0, -1.0]]))
    >>> R = md.dirac.LinearRelation(graph, primal_dim=1, dual_dim=1)
    >>> R.dim, R.contains([1.0], [2.0]), R.contains([1.0], [3.0])
    (1, True, False)
    """

    __slots__ = ("_dual_dim", "_primal_dim", "_space")

    def __init__(self, space: LinearSubspace, primal_dim: int, dual_dim: int) -> None:
        if not isinstance(space, LinearSubspace):
            raise ValueError(f"space must be a LinearSubspace; got {type(space).__name__}.")
        if primal_dim < 0 or dual_dim < 0 or primal_dim + dual_dim != space.ambient_dim:
            raise ValueError(
                f"primal_dim + dual_dim ({primal_dim} + {dual_dim}) must equal the ambient "
                f"dimension of the subspace ({space.ambient_dim})."
            )
        self._space = space
        self._primal_dim = int(primal_dim)
        self._dual_dim = int(dual_dim)

    # ---- constructors
    @classmethod
    def _dims(cls, total: int, primal_dim: int | None, dual_dim: int | None) -> tuple[int, int]:
        if primal_dim is None and dual_dim is None:
            if total % 2:
                raise ValueError(
                    f"cannot split {total} rows into v and alpha of equal size; give primal_dim."
                )
            return total // 2, total // 2
        if primal_dim is None:
            return total - int(dual_dim or 0), int(dual_dim or 0)
        if dual_dim is None:
            return int(primal_dim), total - int(primal_dim)
        return int(primal_dim), int(dual_dim)

    @classmethod
    def from_basis(
        cls,
        basis: ArrayLike,
        primal_dim: int | None = None,
        dual_dim: int | None = None,
        *,
        rtol: float = RANK_RTOL,
    ) -> Self:
        """Span of the columns of ``basis`` (rows: ``x`` first, then ``y``).

        Parameters
        ----------
        basis : array-like, shape=[P + K, k]
            Spanning columns (dependent columns allowed).
        primal_dim, dual_dim : int, optional
            ``P`` and ``K``; by default both are half the number of rows.
        rtol : float
            Relative rank tolerance.
        """
        space = LinearSubspace.from_basis(basis, rtol=rtol)
        p, k = cls._dims(space.ambient_dim, primal_dim, dual_dim)
        return cls(space, p, k)

    @classmethod
    def from_equations(
        cls,
        matrix: ArrayLike,
        primal_dim: int | None = None,
        dual_dim: int | None = None,
        *,
        rtol: float = RANK_RTOL,
    ) -> Self:
        """Kernel of ``matrix`` acting on ``(x, y)``.

        Parameters
        ----------
        matrix : array-like, shape=[m, P + K]
            One linear equation per row, columns ``x`` first, then ``y``.
        primal_dim, dual_dim : int, optional
            ``P`` and ``K``; by default both are half the number of columns.
        rtol : float
            Relative rank tolerance.
        """
        space = LinearSubspace.from_equations(matrix, rtol=rtol)
        p, k = cls._dims(space.ambient_dim, primal_dim, dual_dim)
        return cls(space, p, k)

    # ---- data
    @property
    def space(self) -> LinearSubspace:
        """The subspace of ``R^{P+K}``."""
        return self._space

    @property
    def primal_dim(self) -> int:
        """``P``, the number of primal variables."""
        return self._primal_dim

    @property
    def dual_dim(self) -> int:
        """``K``, the number of dual variables."""
        return self._dual_dim

    @property
    def dim(self) -> int:
        """Dimension of the subspace."""
        return self._space.dim

    def basis(self) -> FloatArray:
        """Orthonormal basis, shape ``(P + K, dim)``, primal rows first."""
        return self._space.basis

    def _join(self, x: ArrayLike, y: ArrayLike) -> FloatArray:
        return np.concatenate(
            [
                _as_vector(x, "the primal part", self._primal_dim),
                _as_vector(y, "the dual part", self._dual_dim),
            ]
        )

    def distance(self, x: ArrayLike, y: ArrayLike) -> float:
        """Distance from ``(x, y)`` to the subspace (shapes ``(P,)``, ``(K,)``)."""
        return self._space.distance(self._join(x, y))

    def contains(self, x: ArrayLike, y: ArrayLike, tol: float = 1e-8) -> bool:
        """Whether ``(x, y)`` lies in the subspace: ``distance <= tol * max(1, |(x, y)|)``."""
        return self._space.contains(self._join(x, y), tol)

    def _compatible(self, other: LinearRelation, op: str) -> None:
        if not isinstance(other, LinearRelation):
            raise ValueError(f"{op} needs a {LinearRelation.__name__}; got {type(other).__name__}.")
        if (other._primal_dim, other._dual_dim) != (self._primal_dim, self._dual_dim):
            raise ValueError(
                f"{op}: the relations live on different spaces (P, K) = "
                f"({self._primal_dim}, {self._dual_dim}) and ({other._primal_dim}, {other._dual_dim})."
            )

    def _like(self, space: LinearSubspace, primal_dim: int, dual_dim: int) -> Self:
        return type(self)(space, primal_dim, dual_dim)

    def includes(self, other: LinearRelation, tol: float = 1e-8) -> bool:
        """Whether ``other`` is a subspace of ``self``."""
        self._compatible(other, "includes")
        return self._space.includes(other._space, tol)

    def equals(self, other: LinearRelation, tol: float = 1e-8) -> bool:
        """Same subspace: same dimension and mutual inclusion (up to ``tol``)."""
        self._compatible(other, "equals")
        return self._space.equals(other._space, tol)

    def intersect(self, other: LinearRelation) -> Self:
        """Intersection of the two subspaces."""
        self._compatible(other, "intersect")
        return self._like(self._space.intersect(other._space), self._primal_dim, self._dual_dim)

    def sum(self, other: LinearRelation) -> Self:
        """Sum of the two subspaces."""
        self._compatible(other, "sum")
        return self._like(self._space.sum(other._space), self._primal_dim, self._dual_dim)

    def primal_projection(self) -> LinearSubspace:
        """``{x : (x, y) in self for some y}`` (for a Dirac structure: (2))."""
        b = self._space._basis
        return LinearSubspace(_range(b[: self._primal_dim], RANK_TOL, relative=False))

    # ---- interconnection
    def direct_sum(self, other: LinearRelation, *, blocks: int | tuple[int, int] = 1) -> Self:
        """Direct sum (27) on the product space.

        Parameters
        ----------
        other : LinearRelation
            A relation on another space ``(P2, K2)``.
        blocks : int or (int, int)
            How the primal and dual variables are laid out on the product.
            With ``1`` (the default) the order is (27) literally,
            ``((x1, x2), (y1, y2))``.  With ``b`` (or ``(b_x, b_y)``) each
            ``x_i`` is read as ``b`` equal consecutive blocks and the product is
            ordered block by block, ``(x1^1, x2^1, x1^2, x2^2, ...)``; this is
            how a product of cotangent bundles is laid out in this library:
            ``blocks=2`` turns ``(v_q1, v_p1) (+) (v_q2, v_p2)`` into
            ``((v_q1, v_q2), (v_p1, v_p2))``, the coordinates of
            ``T_{(q,p)} T*(Q1 x Q2)``.

        Returns
        -------
        same type as self
            Dimension ``self.dim + other.dim``.

        Notes
        -----
        (27): ``D1 (+) D2 = {((v1, v2), (a1, a2)) : (v1, a1) in D1, (v2, a2) in D2}``.
        """
        if not isinstance(other, LinearRelation):
            raise ValueError(f"direct_sum needs a LinearRelation; got {type(other).__name__}.")
        bx, by = (blocks, blocks) if isinstance(blocks, (int, np.integer)) else blocks
        p1, k1, p2, k2 = self._primal_dim, self._dual_dim, other._primal_dim, other._dual_dim
        ixa, ixb = _interleave(
            _split_blocks(p1, bx, "the primal space"), _split_blocks(p2, bx, "the primal space")
        )
        iya, iyb = _interleave(
            _split_blocks(k1, by, "the dual space"), _split_blocks(k2, by, "the dual space")
        )
        ba, bb = self._space._basis, other._space._basis
        out = np.zeros((p1 + p2 + k1 + k2, ba.shape[1] + bb.shape[1]))
        out[ixa, : ba.shape[1]] = ba[:p1]
        out[ixb, ba.shape[1] :] = bb[:p2]
        out[p1 + p2 + iya, : ba.shape[1]] = ba[p1:]
        out[p1 + p2 + iyb, ba.shape[1] :] = bb[p2:]
        return self._like(LinearSubspace(out), p1 + p2, k1 + k2)

    def tensor(self, other: LinearRelation) -> Self:
        """Dirac tensor product ``self ⊠ other`` (Jacobs--Yoshimura).

        Returns
        -------
        same type as self
            ``{(x, y) : exists b with (x, y + b) in self and (x, -b) in other}``.

        Notes
        -----
        Computed exactly: with bases ``self = {B_a s}``, ``other = {B_b t}``
        split into ``x`` and ``y`` rows, the conditions are
        ``B_a^x s = B_b^x t`` and ``y = B_a^y s + B_b^y t`` (put
        ``y_a = y + b``, ``y_b = -b``, eliminate ``b``).  So the product is the
        image of ``ker [B_a^x, -B_b^x]`` under
        ``(s, t) -> (B_a^x s, B_a^y s + B_b^y t)``.  It is symmetric in its
        arguments.  With ``D_int`` of (26) it realises the interconnection
        (29)--(32).
        """
        self._compatible(other, "tensor")
        p = self._primal_dim
        ba, bb = self._space._basis, other._space._basis
        ka = ba.shape[1]
        coeff = _kernel(np.hstack([ba[:p], -bb[:p]]), RANK_TOL, relative=False)
        x = ba[:p] @ coeff[:ka]
        y = ba[p:] @ coeff[:ka] + bb[p:] @ coeff[ka:]
        return self._like(
            LinearSubspace(_range(np.vstack([x, y]), RANK_TOL, relative=False)), p, self._dual_dim
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(dim={self.dim}, primal_dim={self._primal_dim}, dual_dim={self._dual_dim})"
        )


# --------------------------------------------------------------------------- Dirac
@dataclass(frozen=True, eq=False)
class TwoFormOnDistribution:
    """A bilinear form on a subspace ``Delta ⊂ V``, in an orthonormal basis of ``Delta``.

    Attributes
    ----------
    basis : ndarray, shape=[N, d]
        Orthonormal basis ``E`` of ``Delta``.
    matrix : ndarray, shape=[d, d]
        ``W[i, j] = omega(e_i, e_j)``.

    Notes
    -----
    The two-form (3) of a Dirac structure on its distribution (2).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> omega = md.dirac.LinearDirac.induced(np.zeros((0, 1))).two_form()
    >>> omega.matrix.shape, omega.is_skew()
    ((2, 2), True)
    >>> round(abs(omega([1.0, 0.0], [0.0, 1.0])), 6)
    1.0
    """

    basis: FloatArray
    matrix: FloatArray

    @property
    def distribution(self) -> LinearSubspace:
        """The subspace ``Delta`` the form is defined on."""
        return LinearSubspace(self.basis)

    def __call__(self, v: ArrayLike, u: ArrayLike, tol: float = 1e-8) -> float:
        """``omega(v, u)`` for ``v, u`` in ``Delta`` (shape ``(N,)``); ``ValueError`` otherwise."""
        n = self.basis.shape[0]
        dist = self.distribution
        for name, w in (("v", v), ("u", u)):
            if not dist.contains(w, tol):
                raise ValueError(f"{name} is not in the distribution the two-form is defined on.")
        cv = self.basis.T @ _as_vector(v, "v", n)
        cu = self.basis.T @ _as_vector(u, "u", n)
        return float(cv @ self.matrix @ cu)

    def is_skew(self, tol: float = 1e-8) -> bool:
        """Whether ``W = -W^T`` up to ``tol`` (a genuine two-form)."""
        return float(np.linalg.norm(self.matrix + self.matrix.T)) <= tol


def _distribution_arg(
    distribution: LinearSubspace | None,
    basis: ArrayLike | None,
    forms: ArrayLike | None,
    rtol: float,
    where: str,
) -> LinearSubspace:
    given = [x is not None for x in (distribution, basis, forms)]
    if sum(given) != 1:
        raise ValueError(
            f"{where}: give exactly one of a LinearSubspace, basis= (columns spanning Delta) "
            "or forms= (rows whose common kernel is Delta)."
        )
    if distribution is not None:
        if not isinstance(distribution, LinearSubspace):
            raise ValueError(
                f"{where}: the positional argument must be a LinearSubspace; pass an array as "
                "basis= (columns spanning Delta) or forms= (one-forms, Delta = their kernel)."
            )
        return distribution
    if basis is not None:
        return LinearSubspace.from_basis(basis, rtol=rtol)
    return LinearSubspace.from_equations(forms, rtol=rtol)  # type: ignore[arg-type]


class LinearDirac(LinearRelation):
    """A linear subspace ``D ⊂ V (+) V*``, ``dim V = N``, with the pairing (1).

    Elements are pairs ``(v, alpha)`` of ``R^N`` vectors; the basis stacks
    ``v`` rows over ``alpha`` rows (shape ``(2N, dim)``).  Any subspace can be
    represented; :meth:`is_dirac` says whether it is a Dirac structure.

    Construct with :meth:`from_basis`, :meth:`from_equations`,
    :meth:`from_distribution` (``Delta (+) Delta°``), :meth:`from_two_form`
    (4), :meth:`induced` (9) or :meth:`interaction` (26).

    Parameters
    ----------
    space : LinearSubspace
        The subspace of ``R^{2N}`` (``v`` coordinates first, then ``alpha``).
    primal_dim, dual_dim : int
        Both ``N`` (a structure on ``V (+) V*``).

    Notes
    -----
    ``<<(v1, a1), (v2, a2)>> = <a1, v2> + <a2, v1>`` (1); ``D`` is Dirac iff
    ``D = D^perp``, equivalently ``D`` is isotropic and ``dim D = N``.

    Examples
    --------
    The induced structure (9) of the knife edge's constraint ``v_y = 0`` on
    ``R^3``: ``v_q`` in ``ker A``, ``alpha_p = v_q``, ``alpha_q + v_p`` in the
    row space of ``A``:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> D = md.dirac.LinearDirac.induced(np.array([[0.0, 0.0, 1.0]]))
    >>> D.is_dirac(), D.primal_dim
    (True, 6)
    >>> v = np.array([1.0, 2.0, 0.0, 0.0, 0.0, 0.0])          # (v_q, v_p)
    >>> alpha = np.array([0.0, 0.0, 5.0, 1.0, 2.0, 0.0])      # (alpha_q, alpha_p)
    >>> D.contains(v, alpha)
    True
    >>> v[2] = 1.0                                          # v_q leaves ker A
    >>> D.contains(v, alpha)
    False
    """

    __slots__ = ()

    def __init__(
        self, space: LinearSubspace, primal_dim: int | None = None, dual_dim: int | None = None
    ) -> None:
        n = space.ambient_dim // 2 if primal_dim is None else primal_dim
        k = n if dual_dim is None else dual_dim
        if n != k:
            raise ValueError(
                f"a LinearDirac lives on V (+) V*, so v and alpha have the same size; got {n} and {k}."
            )
        super().__init__(space, n, k)

    # ---- constructors
    @classmethod
    def from_basis(
        cls,
        basis: ArrayLike,
        primal_dim: int | None = None,
        dual_dim: int | None = None,
        *,
        rtol: float = RANK_RTOL,
    ) -> Self:
        """Span of the columns of ``basis``, shape ``(2N, k)`` (``v`` rows, then ``alpha``)."""
        b = _as_matrix(basis, "basis")
        if b.shape[0] % 2:
            raise ValueError(f"basis must have 2N rows (v over alpha); got {b.shape[0]} rows.")
        return super().from_basis(b, primal_dim, dual_dim, rtol=rtol)

    @classmethod
    def from_equations(
        cls,
        matrix: ArrayLike,
        primal_dim: int | None = None,
        dual_dim: int | None = None,
        *,
        rtol: float = RANK_RTOL,
    ) -> Self:
        """Kernel of ``matrix`` (shape ``(m, 2N)``, columns ``v`` then ``alpha``)."""
        m = _as_matrix(matrix, "matrix")
        if m.shape[1] % 2:
            raise ValueError(f"matrix must have 2N columns (v then alpha); got {m.shape[1]} columns.")
        return super().from_equations(m, primal_dim, dual_dim, rtol=rtol)

    @classmethod
    def from_distribution(
        cls,
        distribution: LinearSubspace | None = None,
        *,
        basis: ArrayLike | None = None,
        forms: ArrayLike | None = None,
        rtol: float = RANK_RTOL,
    ) -> Self:
        """``D = Delta (+) Delta°``.

        Parameters
        ----------
        distribution : LinearSubspace, optional
            ``Delta ⊂ R^N``.
        basis : array-like, shape=[N, k], optional
            Columns spanning ``Delta``.
        forms : array-like, shape=[m, N], optional
            One-forms (rows) with ``Delta = ker forms``.
        rtol : float
            Relative rank tolerance.

        Returns
        -------
        LinearDirac
            Dimension ``N``.

        Notes
        -----
        The first example of a Dirac structure after (1); with zero two-form it
        is (4), and it is how (26) is built.
        """
        delta = _distribution_arg(distribution, basis, forms, rtol, "from_distribution")
        e = delta._basis
        f = delta.complement()._basis
        n = delta.ambient_dim
        b = np.block([[e, np.zeros((n, f.shape[1]))], [np.zeros((n, e.shape[1])), f]])
        return cls(LinearSubspace(b))

    @classmethod
    def from_two_form(
        cls,
        omega: ArrayLike,
        forms: ArrayLike | None = None,
        *,
        basis: ArrayLike | None = None,
        distribution: LinearSubspace | None = None,
        rtol: float = RANK_RTOL,
    ) -> Self:
        """Dirac structure (4) of a two-form restricted to a distribution.

        Parameters
        ----------
        omega : array-like, shape=[N, N]
            Skew matrix, ``omega(v, u) = v @ omega @ u``.
        forms : array-like, shape=[m, N], optional
            ``Delta = ker forms``; give exactly one of ``forms``, ``basis``,
            ``distribution``.
        basis : array-like, shape=[N, k], optional
            Columns spanning ``Delta``.
        distribution : LinearSubspace, optional
            ``Delta`` itself.
        rtol : float
            Relative rank tolerance.

        Returns
        -------
        LinearDirac
            ``{(v, alpha) : v in Delta, <alpha, u> = omega(v, u) for all u in Delta}``.

        Notes
        -----
        (4).  ``<alpha, u> = (omega^T v) . u`` for ``u in Delta`` means
        ``alpha - omega^T v in Delta°``, so a basis is ``(E c, omega^T E c + F d)``
        with ``E`` a basis of ``Delta`` and ``F`` of ``Delta°``.  With the
        canonical form and ``Delta_{T*Q}`` of (7) this is (6) = (9).
        """
        w = _as_matrix(omega, "omega")
        if w.shape[0] != w.shape[1]:
            raise ValueError(f"omega must be a square (N, N) matrix; got shape {w.shape}.")
        if np.linalg.norm(w + w.T) > 1e-12 * max(1.0, float(np.linalg.norm(w))):
            raise ValueError("omega must be skew-symmetric (a two-form); omega + omega.T is not zero.")
        delta = _distribution_arg(distribution, basis, forms, rtol, "from_two_form")
        n = w.shape[0]
        if delta.ambient_dim != n:
            raise ValueError(f"the distribution lives in R^{delta.ambient_dim} but omega is {n} x {n}.")
        e = delta._basis
        f = delta.complement()._basis
        b = np.block([[e, np.zeros((n, f.shape[1]))], [w.T @ e, f]])
        return cls(LinearSubspace(_range(b, RANK_TOL, relative=False)))

    @classmethod
    def induced(cls, A: ArrayLike, *, rtol: float = RANK_RTOL) -> Self:
        """Induced Dirac structure ``D_{Delta_Q}(q, p)`` of ``Delta_Q = ker A``, (9).

        Parameters
        ----------
        A : array-like, shape=[m, n]
            Constraint one-forms at ``q`` (rows; ``(0, n)`` for none).
        rtol : float
            Relative rank tolerance for ``ker A``.

        Returns
        -------
        LinearDirac
            On ``V = T_{(q,p)} T*Q = R^{2n}`` with ``v = (v_q, v_p)`` and
            ``alpha = (alpha_q, alpha_p)``; dimension ``2n``.

        Notes
        -----
        (9): ``v_q in ker A``, ``alpha_p = v_q``, ``alpha_q + v_p in row A``.
        Equal to :meth:`from_two_form` with :func:`canonical_two_form` and
        ``Delta_{T*Q} = ker [A, 0]`` (5)--(8).  The Lagrange--Dirac equations
        (16) are membership of ``((qdot, pdot), (-dL/dq, v))`` (18).

        Examples
        --------
        The knife edge's ``v_y = 0`` (columns ``(omega, v_x, v_y)``):

        >>> import numpy as np
        >>> import manifold_dirac as md
        >>> D = md.dirac.induced(np.array([[0.0, 0.0, 1.0]]))
        >>> D.is_dirac(), D.primal_dim
        (True, 6)
        >>> v = np.array([0.5, 1.0, 0.0, 0.0, 0.0, 0.0])      # (v_q, v_p): v_q in ker A
        >>> D.contains(v, np.concatenate([-v[3:], v[:3]])), D.contains(v, np.zeros(6))
        (True, False)
        """
        a = _as_matrix(A, "A")
        n = a.shape[1]
        e = _kernel(a, _check_tol(rtol, "rtol"), relative=True)  # n x (n - rank)
        f = LinearSubspace(e).complement()._basis  # row space of A, n x rank
        z = np.zeros
        k, r = e.shape[1], f.shape[1]
        eye = np.eye(n)
        #           c (v_q in ker A)   y (v_p free)   d (row A part of alpha_q)
        b = np.block(
            [
                [e, z((n, n)), z((n, r))],  # v_q
                [z((n, k)), eye, z((n, r))],  # v_p
                [z((n, k)), -eye, f],  # alpha_q = -v_p + A^T mu
                [e, z((n, n)), z((n, r))],  # alpha_p = v_q
            ]
        )
        return cls(LinearSubspace(_range(b, RANK_TOL, relative=False)))

    @classmethod
    def interaction(cls, S: ArrayLike, *, rtol: float = RANK_RTOL) -> Self:
        """Standard interaction Dirac structure (26) ``D_int = Sigma_int (+) Sigma_int°``.

        Parameters
        ----------
        S : array-like, shape=[r, n]
            One-forms on the product ``Q = Q1 x Q2`` with ``Sigma_Q = ker S``
            (``(0, n)`` for no interaction).
        rtol : float
            Relative rank tolerance.

        Returns
        -------
        LinearDirac
            On ``R^{2n}``: ``Sigma_int = {(v_q, v_p) : S v_q = 0}`` (25) and
            ``Sigma_int° = {(alpha_q, alpha_p) : alpha_p = 0, alpha_q in row S}``.

        Notes
        -----
        (25)--(26).  With ``S`` empty it is ``V (+) 0``, the unit of the tensor
        product.

        Examples
        --------
        >>> import numpy as np
        >>> import manifold_dirac as md
        >>> D_int = md.dirac.interaction(np.array([[1.0, -1.0]]))     # v_1 = v_2 on R x R
        >>> D_int.is_dirac(), D_int.primal_dim
        (True, 4)
        """
        s = _as_matrix(S, "S")
        return cls.from_distribution(forms=np.hstack([s, np.zeros_like(s)]), rtol=rtol)

    # ---- Dirac-specific
    @property
    def space_dim(self) -> int:
        """``N = dim V``."""
        return self._primal_dim

    def contains(self, v: ArrayLike, alpha: ArrayLike, tol: float = 1e-8) -> bool:
        """Whether ``(v, alpha)`` (shapes ``(N,)``) is in ``D`` (relative ``tol``)."""
        return super().contains(v, alpha, tol)

    def distance(self, v: ArrayLike, alpha: ArrayLike) -> float:
        """Distance from ``(v, alpha)`` to ``D``."""
        return super().distance(v, alpha)

    def pairing_matrix(self) -> FloatArray:
        """``J = [[0, I], [I, 0]]`` with ``<<w1, w2>> = w1 @ J @ w2``, (1)."""
        n = self._primal_dim
        eye, z = np.eye(n), np.zeros((n, n))
        return np.block([[z, eye], [eye, z]])

    def pairing(self, w1: ArrayLike, w2: ArrayLike) -> float:
        """``<<w1, w2>> = <a1, v2> + <a2, v1>`` for stacked ``w = (v, alpha)`` of shape ``(2N,)``."""
        d = 2 * self._primal_dim
        return float(_as_vector(w1, "w1", d) @ self.pairing_matrix() @ _as_vector(w2, "w2", d))

    def orthogonal(self) -> Self:
        """``D^perp`` with respect to the symmetric pairing (1)."""
        eqs = self._space._basis.T @ self.pairing_matrix()
        return self._like(
            LinearSubspace(_kernel(eqs, RANK_TOL, relative=False)), self._primal_dim, self._dual_dim
        )

    def isotropy_defect(self) -> float:
        """``|B^T J B|_2`` for the orthonormal basis ``B``: zero iff ``D ⊂ D^perp``."""
        b = self._space._basis
        if b.shape[1] == 0:
            return 0.0
        return float(np.linalg.norm(b.T @ self.pairing_matrix() @ b, 2))

    def is_isotropic(self, tol: float = 1e-8) -> bool:
        """Whether ``D ⊂ D^perp`` (the pairing vanishes on ``D``)."""
        return self.isotropy_defect() <= _check_tol(tol)

    def is_dirac(self, tol: float = 1e-8) -> bool:
        """Whether ``D = D^perp``: isotropic and ``dim D = N`` (1)."""
        return self.dim == self._primal_dim and self.is_isotropic(tol)

    def associated_distribution(self) -> LinearSubspace:
        """``Delta_D = {v : (v, alpha) in D for some alpha}``, (2)."""
        return self.primal_projection()

    def two_form(self) -> TwoFormOnDistribution:
        """The two-form (3) ``omega(v, u) = <alpha_v, u>`` on ``Delta_D``.

        Returns
        -------
        TwoFormOnDistribution
            Basis ``E`` of ``Delta_D`` and ``W[i, j] = <alpha(e_i), e_j>`` with
            ``alpha(e_i)`` the minimum-norm covector paired with ``e_i``.

        Notes
        -----
        Well defined (independent of the choice of ``alpha_v``) and skew when
        ``D`` is Dirac, (3); for a non-isotropic ``D`` the result depends on the
        choice and need not be skew.
        """
        n = self._primal_dim
        b = self._space._basis
        e = self.associated_distribution()._basis
        coeff = np.linalg.lstsq(b[:n], e, rcond=None)[0]
        alpha = b[n:] @ coeff
        return TwoFormOnDistribution(basis=e, matrix=alpha.T @ e)
