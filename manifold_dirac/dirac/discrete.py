"""Discrete (+)/(−) induced and interaction Dirac structures, (36)--(53).

Everything is written in the chart centred at a point, ``phi_q = R_q^{-1}``,
which is how the integrator works.  A step ``k`` of the discrete flow
``X_d^k = ((q_k, p_k), (q_{k+1}, p_{k+1}))`` (49) is described by

* (+), chart centred at ``q_k``: ``z = (q_k -> 0, p_k)``,
  ``z+ = (xi = R_{q_k}^{-1}(q_{k+1}), p_{k+1})``; covectors at
  ``z^ = (q_k, p_{k+1})``;
* (−), chart centred at ``q_{k+1}``: ``z- = (q_k -> eta = R_{q_{k+1}}^{-1}(q_k), p_k)``,
  ``z = (0, p_{k+1})``; covectors at ``z~ = (p_k, q_{k+1})``.

A discrete structure is a :class:`~.linear.LinearRelation` in the variables

    x = (p_k, chi, p_{k+1}) in R^{3n},   y = (alpha_q, alpha_p) in R^{2n},

with ``chi = xi`` for (+) and ``chi = eta`` for (−); ``alpha_q`` is a covector
at the chart centre and ``alpha_p`` the chart coordinates of a point of ``Q``.
(For (−) the paper orders the covector at ``z~`` as ``(alpha_p, alpha_q)``; we
store both signs in the same order so that direct sum and tensor product are
literally the same linear algebra as in the continuous case.)

Derivation from (37)/(38) and (45)--(47) (the printed (46)/(47) have
``Delta_{Q x Q*}``, ``Delta_{Q* x Q}`` where the annihilators (45) are meant):

* (+): ``Omega^flat_{d+}(z, z+) = (q0, p1, p0, q1)`` (37), basepoint
  ``z^ = (q0, p1)``, covector ``(p0, q1) -> (p_k, xi)``.  Membership:
  ``A(q_k) xi = 0`` (``omega_{d+}``, (42)--(44)), ``alpha_q - p_k in row A(q_k)``,
  ``alpha_p = xi``.
* (−): ``Omega^flat_{d-}(z-, z) = (p0, q1, -q0, -p1)`` (38), basepoint
  ``z~ = (p0, q1)``, covector ``(alpha_p, alpha_q) = (-q0, -p1) -> (-eta, -p_{k+1})``.
  Membership: ``-A(q_{k+1}) eta = 0`` (``omega_{d-}``), ``alpha_p = -eta``,
  ``alpha_q + p_{k+1} in row A(q_{k+1})``.

The discrete Dirac differentials (48), from ``kappa^d_Q`` (36):
``𝔇+L_d = (q_k, D2 L_d, -D1 L_d, q_k^+)`` and
``𝔇-L_d = (-D1 L_d, q_{k+1}, -q_{k+1}^-, -D2 L_d)``; matching basepoints and
membership (50)/(51) give exactly (52)/(53).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from .linear import (
    RANK_RTOL,
    RANK_TOL,
    FloatArray,
    LinearRelation,
    LinearSubspace,
    _as_matrix,
    _as_vector,
    _check_tol,
    _kernel,
    _range,
)

__all__ = [
    "DiscreteDiracDifferential",
    "DiscreteDiracStructure",
    "DiscreteStepResidual",
    "Sign",
    "discrete_dirac_differential",
    "interconnect_discrete_structures",
    "in_discrete_structure",
]

Sign = Literal["+", "-"]


def _check_sign(sign: object) -> Sign:
    if sign == "+" or sign == "-":
        return sign  # type: ignore[return-value]
    raise ValueError(f"sign must be '+' or '-' (the (+) or (−) discrete structure); got {sign!r}.")


@dataclass(frozen=True, eq=False)
class DiscreteDiracStructure:
    """A (+) or (−) discrete Dirac structure at one step, as a linear relation.

    Attributes
    ----------
    relation : LinearRelation
        Subspace of ``R^{3n} (+) R^{2n}``, ``x = (p_k, chi, p_{k+1})``,
        ``y = (alpha_q, alpha_p)`` (module docstring).
    n : int
        Dimension of ``Q``.
    sign : {'+', '-'}
        Which discrete structure (which chart: centred at ``q_k`` or ``q_{k+1}``).

    Notes
    -----
    Built by :meth:`induced` (46)/(47) and :meth:`interaction` (the discrete
    analogue of (26) through the same chart); combined by :meth:`direct_sum`
    (27) and :meth:`tensor` exactly as the continuous :class:`~.linear.LinearDirac`.
    A discrete induced structure has dimension ``3n``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> D = md.dirac.DiscreteDiracStructure.induced(np.array([[0.0, 0.0, 1.0]]), "+")
    >>> D.n, D.sign, D.dim
    (3, '+', 9)
    >>> D.relation.primal_dim, D.relation.dual_dim
    (9, 6)
    """

    relation: LinearRelation
    n: int
    sign: Sign

    def __post_init__(self) -> None:
        _check_sign(self.sign)
        if not isinstance(self.relation, LinearRelation):
            raise ValueError(f"relation must be a LinearRelation; got {type(self.relation).__name__}.")
        if (self.relation.primal_dim, self.relation.dual_dim) != (3 * self.n, 2 * self.n):
            raise ValueError(
                f"a discrete structure on an n = {self.n} manifold is a relation on R^{3 * self.n} (+) "
                f"R^{2 * self.n}; got ({self.relation.primal_dim}, {self.relation.dual_dim})."
            )

    # ---- constructors
    @classmethod
    def from_equations(
        cls, matrix: ArrayLike, sign: Sign, *, rtol: float = RANK_RTOL
    ) -> DiscreteDiracStructure:
        """Kernel of ``matrix`` acting on ``(p_k, chi, p_{k+1}, alpha_q, alpha_p)``.

        Parameters
        ----------
        matrix : array-like, shape=[rows, 5n]
            One equation per row.
        sign : {'+', '-'}
        rtol : float
            Relative rank tolerance.
        """
        m = _as_matrix(matrix, "matrix")
        if m.shape[1] % 5:
            raise ValueError(
                f"matrix must have 5n columns (p_k, chi, p_k1, alpha_q, alpha_p); got {m.shape[1]}."
            )
        n = m.shape[1] // 5
        return cls(LinearRelation.from_equations(m, 3 * n, 2 * n, rtol=rtol), n, _check_sign(sign))

    @classmethod
    def induced(cls, A: ArrayLike, sign: Sign, *, constraint: ArrayLike | None = None,
                rtol: float = RANK_RTOL) -> DiscreteDiracStructure:
        """Discrete induced Dirac structure ``D^{d±}_{Delta_Q}``, (46)/(47).

        Parameters
        ----------
        A : array-like, shape=[m, n]
            Constraint forms at the chart centre: ``A(q_k)`` for (+),
            ``A(q_{k+1})`` for (−).  ``(0, n)`` for none.
        sign : {'+', '-'}
        constraint : array-like, shape=[m, n], optional
            Forms ``B`` that act on ``chi`` in place of ``A`` (the reaction
            stays in ``row A``): the structure of the symmetric scheme, whose
            discrete constraint is ``A(c) J_xi(xi/2) xi = 0`` at the midpoint
            ``c`` of the retraction curve (``B = A(c) J_xi(xi/2)``). Such a
            relation is not a Dirac structure unless ``B = A``.
        rtol : float
            Relative rank tolerance for ``ker A``.

        Returns
        -------
        DiscreteDiracStructure
            Dimension ``3n``.

        Notes
        -----
        (+), (46) with (37), (42)--(45): ``A xi = 0``, ``alpha_p = xi``,
        ``alpha_q - p_k in row A``.
        (−), (47) with (38): ``-A eta = 0``, ``alpha_p = -eta``,
        ``alpha_q + p_{k+1} in row A``.
        """
        s = _check_sign(sign)
        a = _as_matrix(A, "A")
        m, n = a.shape
        b = a if constraint is None else _as_matrix(constraint, "constraint", rows=m, cols=n)
        e = _kernel(a, _check_tol(rtol, "rtol"), relative=True).T  # (n - rank) x n, rows span ker A
        k = e.shape[0]
        z = np.zeros
        eye = np.eye(n)
        if s == "+":
            rows = [
                np.hstack([z((m, n)), b, z((m, n)), z((m, n)), z((m, n))]),  # A xi = 0
                np.hstack([z((n, n)), -eye, z((n, n)), z((n, n)), eye]),  # alpha_p - xi = 0
                np.hstack([-e, z((k, n)), z((k, n)), e, z((k, n))]),  # alpha_q - p_k in row A
            ]
        else:
            rows = [
                np.hstack([z((m, n)), -b, z((m, n)), z((m, n)), z((m, n))]),  # -A eta = 0
                np.hstack([z((n, n)), eye, z((n, n)), z((n, n)), eye]),  # alpha_p + eta = 0
                np.hstack([z((k, n)), z((k, n)), e, e, z((k, n))]),  # alpha_q + p_k1 in row A
            ]
        return cls(LinearRelation.from_equations(np.vstack(rows), 3 * n, 2 * n), n, s)

    @classmethod
    def interaction(cls, S: ArrayLike, sign: Sign, *, constraint: ArrayLike | None = None,
                    rtol: float = RANK_RTOL) -> DiscreteDiracStructure:
        """Discrete standard interaction structure ``D^{d±}_int``.

        Parameters
        ----------
        S : array-like, shape=[r, n]
            Interaction forms at the chart centre (``S(q_k)`` for (+),
            ``S(q_{k+1})`` for (−)); ``(0, n)`` for none.
        sign : {'+', '-'}
        constraint : array-like, shape=[r, n], optional
            Forms acting on ``chi`` in place of ``S`` (symmetric scheme, as in
            :meth:`induced`).
        rtol : float
            Relative rank tolerance.

        Returns
        -------
        DiscreteDiracStructure
            Dimension ``3n``: ``S chi = 0``, ``alpha_p = 0``,
            ``alpha_q in row S``; ``p_k``, ``p_{k+1}`` free.

        Notes
        -----
        (25)--(26) through the chart: ``Sigma^{d±} = (pi x pi)^{-1}`` of the
        discrete distribution of ``S`` (as (43)--(44)) plus the annihilator
        (45) of ``ker S``; the two signs give the same subspace.
        """
        s = _check_sign(sign)
        sm = _as_matrix(S, "S")
        r, n = sm.shape
        b = sm if constraint is None else _as_matrix(constraint, "constraint", rows=r, cols=n)
        e = _kernel(sm, _check_tol(rtol, "rtol"), relative=True).T
        k = e.shape[0]
        z = np.zeros
        rows = [
            np.hstack([z((r, n)), b, z((r, n)), z((r, n)), z((r, n))]),
            np.hstack([z((n, 4 * n)), np.eye(n)]),
            np.hstack([z((k, 3 * n)), e, z((k, n))]),
        ]
        return cls(LinearRelation.from_equations(np.vstack(rows), 3 * n, 2 * n), n, s)

    # ---- data and tests
    @property
    def dim(self) -> int:
        """Dimension of the subspace."""
        return self.relation.dim

    def basis(self) -> FloatArray:
        """Orthonormal basis, shape ``(5n, dim)``, rows ``(p_k, chi, p_k1, alpha_q, alpha_p)``."""
        return self.relation.basis()

    def _xy(
        self, p_k: ArrayLike, chi: ArrayLike, p_k1: ArrayLike, alpha_q: ArrayLike, alpha_p: ArrayLike
    ) -> tuple[FloatArray, FloatArray]:
        n = self.n
        x = np.concatenate(
            [_as_vector(p_k, "p_k", n), _as_vector(chi, "chi", n), _as_vector(p_k1, "p_k1", n)]
        )
        y = np.concatenate([_as_vector(alpha_q, "alpha_q", n), _as_vector(alpha_p, "alpha_p", n)])
        return x, y

    def distance(
        self, p_k: ArrayLike, chi: ArrayLike, p_k1: ArrayLike, alpha_q: ArrayLike, alpha_p: ArrayLike
    ) -> float:
        """Distance of ``((p_k, chi, p_{k+1}), (alpha_q, alpha_p))`` from the subspace."""
        return self.relation.distance(*self._xy(p_k, chi, p_k1, alpha_q, alpha_p))

    def contains(
        self,
        p_k: ArrayLike,
        chi: ArrayLike,
        p_k1: ArrayLike,
        alpha_q: ArrayLike,
        alpha_p: ArrayLike,
        tol: float = 1e-8,
    ) -> bool:
        """Membership, relative tolerance ``tol * max(1, |(x, y)|)``."""
        return self.relation.contains(*self._xy(p_k, chi, p_k1, alpha_q, alpha_p), tol)

    def _compatible(self, other: DiscreteDiracStructure, op: str) -> None:
        if not isinstance(other, DiscreteDiracStructure):
            raise ValueError(f"{op} needs a DiscreteDiracStructure; got {type(other).__name__}.")
        if other.sign != self.sign:
            raise ValueError(
                f"{op}: a ({self.sign}) and a ({other.sign}) discrete structure use different charts "
                "and cannot be combined."
            )

    def equals(self, other: DiscreteDiracStructure, tol: float = 1e-8) -> bool:
        """Same sign, same ``n`` and the same subspace (mutual inclusion)."""
        if not isinstance(other, DiscreteDiracStructure):
            raise ValueError(f"equals needs a DiscreteDiracStructure; got {type(other).__name__}.")
        return other.sign == self.sign and other.n == self.n and self.relation.equals(other.relation, tol)

    def direct_sum(self, other: DiscreteDiracStructure) -> DiscreteDiracStructure:
        """Discrete direct sum on ``Q1 x Q2`` with a product retraction.

        Layout of the result: ``p_k = (p_k1, p_k2)``, ``chi = (chi1, chi2)``,
        ``p_{k+1} = (...)``, ``alpha_q = (alpha_q1, alpha_q2)``,
        ``alpha_p = (...)`` -- the product's frame coordinates.

        Notes
        -----
        (27) through the chart of a product retraction
        ``R_{(q1,q2)}(xi1, xi2) = (R_{q1}(xi1), R_{q2}(xi2))``.
        """
        self._compatible(other, "direct_sum")
        rel = self.relation.direct_sum(other.relation, blocks=(3, 2))
        return DiscreteDiracStructure(rel, self.n + other.n, self.sign)

    def tensor(self, other: DiscreteDiracStructure) -> DiscreteDiracStructure:
        """Discrete Dirac tensor product, the same rule as the continuous one.

        ``{(x, y) : exists b with (x, y + b) in self and (x, -b) in other}``.
        """
        self._compatible(other, "tensor")
        if other.n != self.n:
            raise ValueError(f"tensor: the structures live on n = {self.n} and n = {other.n} manifolds.")
        return DiscreteDiracStructure(self.relation.tensor(other.relation), self.n, self.sign)

    def intersect(self, other: DiscreteDiracStructure) -> DiscreteDiracStructure:
        """Intersection of the subspaces."""
        self._compatible(other, "intersect")
        return DiscreteDiracStructure(self.relation.intersect(other.relation), self.n, self.sign)

    def velocity_constraint(self) -> LinearSubspace:
        """``{chi : (x, y) in D for some (x, y) with that chi}``: ``ker A`` (43) in the chart."""
        b = self.relation.basis()
        n = self.n
        return LinearSubspace(_range(b[n : 2 * n], RANK_TOL, relative=False))


def interconnect_discrete_structures(
    D1: DiscreteDiracStructure, D2: DiscreteDiracStructure, S: ArrayLike, *, rtol: float = RANK_RTOL
) -> DiscreteDiracStructure:
    """Discrete interconnection ``(D1 (+) D2) ⊠ D^{d±}_int``, the discrete (29).

    Parameters
    ----------
    D1, D2 : DiscreteDiracStructure
        Structures of the same sign on ``Q1`` and ``Q2``.
    S : array-like, shape=[r, n1 + n2]
        Interaction forms at the chart centre.
    rtol : float
        Relative rank tolerance.

    Returns
    -------
    DiscreteDiracStructure
        For induced ``D_i`` it equals ``DiscreteDiracStructure.induced`` of the
        forms of (31) -- the discrete (32).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> free = md.dirac.DiscreteDiracStructure.induced(np.zeros((0, 1)), "+")
    >>> D = md.dirac.interconnect_discrete_structures(free, free, np.array([[1.0, -1.0]]))
    >>> D.n, D.dim
    (2, 6)
    >>> D.equals(md.dirac.DiscreteDiracStructure.induced(np.array([[1.0, -1.0]]), "+"))
    True
    >>> D.equals(md.dirac.DiscreteDiracStructure.induced(np.zeros((0, 2)), "+"))
    False
    """
    if not isinstance(D1, DiscreteDiracStructure) or not isinstance(D2, DiscreteDiracStructure):
        raise ValueError("interconnect_discrete_structures needs two DiscreteDiracStructure objects.")
    s = _as_matrix(S, "S", cols=D1.n + D2.n)
    return D1.direct_sum(D2).tensor(DiscreteDiracStructure.interaction(s, D1.sign, rtol=rtol))


@dataclass(frozen=True)
class DiscreteDiracDifferential:
    """The discrete Dirac differential (48) in the chart of the step.

    Attributes
    ----------
    sign : {'+', '-'}
        Which discrete structure: ``'+'`` (the (+) structure (46)/(48)) or ``'-'`` ((47)/(49)).
    basepoint_momentum : ndarray, shape=[n]
        The momentum of the basepoint: ``D2 L_d`` (the ``p_{k+1}`` of
        ``z^ = (q_k, p_{k+1})``) for (+); ``-D1 L_d`` (the ``p_k`` of
        ``z~ = (p_k, q_{k+1})``) for (−).
    alpha_q, alpha_p : ndarray, shape=[n]
        The covector: (+) ``(-D1 L_d, xi^+)``; (−) ``(-D2 L_d, -eta^-)``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> d = md.dirac.discrete_dirac_differential("-", np.array([-2.0]), np.array([2.0]), np.array([-0.2]))
    >>> d.sign, d.basepoint_momentum, d.alpha_q, d.alpha_p
    ('-', array([2.]), array([-2.]), array([0.2]))
    """

    sign: Sign
    basepoint_momentum: FloatArray
    alpha_q: FloatArray
    alpha_p: FloatArray


def discrete_dirac_differential(
    sign: Sign, D1Ld: ArrayLike, D2Ld: ArrayLike, chi: ArrayLike
) -> DiscreteDiracDifferential:
    """``𝔇^± L_d`` of (48) at ``(q_k, q_k^+)`` (+) or ``(q_{k+1}^-, q_{k+1})`` (−).

    Parameters
    ----------
    sign : {'+', '-'}
        Which discrete structure: ``'+'`` (the (+) structure (46)/(48)) or ``'-'`` ((47)/(49)).
    D1Ld, D2Ld : array-like, shape=[n]
        Partials of ``L_d`` in frame coordinates.
    chi : array-like, shape=[n]
        Chart coordinates of the discrete velocity variable: ``xi^+ =
        R_{q_k}^{-1}(q_k^+)`` (+) or ``eta^- = R_{q_{k+1}}^{-1}(q_{k+1}^-)`` (−).

    Returns
    -------
    DiscreteDiracDifferential

    Notes
    -----
    ``gamma^{d±}_Q = Omega^flat_{d±} ∘ (kappa^d_Q)^{-1}`` with (36)--(38):
    ``(kappa^d)^{-1}(q0, q1, D1, D2) = ((q0, -D1), (q1, D2))``, so
    ``𝔇+L_d = (q0, D2, -D1, q1)`` and ``𝔇-L_d = (-D1, q1, -q0, -D2)``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> d = md.dirac.discrete_dirac_differential("+", np.array([-2.0]), np.array([2.0]), np.array([0.2]))
    >>> d.basepoint_momentum, d.alpha_q, d.alpha_p
    (array([2.]), array([2.]), array([0.2]))
    """
    s = _check_sign(sign)
    c = np.asarray(chi, dtype=float)
    if c.ndim != 1:
        raise ValueError(f"chi must be a vector of shape (n,); got shape {c.shape}.")
    n = c.shape[0]
    d1, d2, c = _as_vector(D1Ld, "D1Ld", n), _as_vector(D2Ld, "D2Ld", n), _as_vector(c, "chi", n)
    if s == "+":
        return DiscreteDiracDifferential(s, d2.copy(), -d1, c.copy())
    return DiscreteDiracDifferential(s, -d1, -d2, -c)


@dataclass(frozen=True)
class DiscreteStepResidual:
    """Residuals of ``(X_d^k, 𝔇^±L_d) in D^{d±}_{Delta_Q}`` for one step, (50)/(51).

    Attributes
    ----------
    sign : {'+', '-'}
        Which discrete structure: ``'+'`` (the (+) structure (46)/(48)) or ``'-'`` ((47)/(49)).
    constraint : float
        ``|A chi|``: the discrete constraint (52a)/(53a).
    basepoint : float
        ``|p_{k+1} - D2 L_d|`` (52c) for (+); ``|p_k + D1 L_d|`` (53c) for (−).
    annihilator : float
        Distance from ``row A`` of ``p_k + D1 L_d`` (52d) for (+) or of
        ``p_{k+1} - D2 L_d`` (53d) for (−).
    membership : float
        Distance of ``(X_d^k, 𝔇^±L_d)`` from the subspace ``D^{d±}`` (covers
        the constraint, the annihilator and (52b)/(53b)).
    multiplier : ndarray, shape=[m]
        Least-squares ``mu`` of (52d)/(53d).
    scale : float
        ``max(1, |inputs|)``; :attr:`ok` compares :attr:`max` with ``tol * scale``.
    tol : float
        The largest distance from the structure accepted as membership.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> r = md.dirac.in_discrete_structure("+", np.zeros((0, 1)), [2.0], [0.2], [2.0], [-2.0], [2.0])
    >>> r.sign, r.constraint, bool(r.membership < 1e-12), r.ok
    ('+', 0.0, True, True)
    """

    sign: Sign
    constraint: float
    basepoint: float
    annihilator: float
    membership: float
    multiplier: FloatArray
    scale: float
    tol: float

    @property
    def max(self) -> float:
        """Largest residual."""
        return max(self.constraint, self.basepoint, self.annihilator, self.membership)

    @property
    def ok(self) -> bool:
        """Whether every residual is below ``tol * scale``."""
        return self.max <= self.tol * self.scale


def in_discrete_structure(
    sign: Sign,
    A_k: ArrayLike,
    p_k: ArrayLike,
    xi: ArrayLike,
    p_k1: ArrayLike,
    D1Ld: ArrayLike,
    D2Ld: ArrayLike,
    tol: float = 1e-8,
) -> DiscreteStepResidual:
    """Check one computed step against (50) (+) or (51) (−).

    Parameters
    ----------
    sign : {'+', '-'}
        Which discrete structure: ``'+'`` (the (+) structure (46)/(48)) or ``'-'`` ((47)/(49)).
    A_k : array-like, shape=[m, n]
        Constraint forms at the chart centre: ``A(q_k)`` for (+),
        ``A(q_{k+1})`` for (−).
    p_k, p_k1 : array-like, shape=[n]
        Momenta ``p_k`` and ``p_{k+1}`` (frame coordinates).
    xi : array-like, shape=[n]
        Chart coordinates of the other point: ``R_{q_k}^{-1}(q_{k+1})`` for
        (+), ``R_{q_{k+1}}^{-1}(q_k)`` for (−) (on ``Euclidean`` this is
        ``q_k - q_{k+1}``).
    D1Ld, D2Ld : array-like, shape=[n]
        ``D_1 L_d(q_k, q_{k+1})`` and ``D_2 L_d(q_k, q_{k+1})``.
    tol : float
        Relative tolerance for :attr:`DiscreteStepResidual.ok`.

    Returns
    -------
    DiscreteStepResidual

    Notes
    -----
    (+): ``X_d^k`` in the chart is ``(p_k, xi, p_{k+1})`` and
    ``𝔇+L_d(q_k, q_k^+)`` with ``q_k^+ = q_{k+1}`` is ``alpha = (-D1 L_d, xi)``
    at basepoint ``(q_k, D2 L_d)``; (50) is (52).
    (−): ``X_d^k = (p_k, eta, p_{k+1})`` and ``𝔇-L_d(q_{k+1}^-, q_{k+1})``
    with ``q_{k+1}^- = q_k`` is ``alpha = (-D2 L_d, -eta)`` at basepoint
    ``(-D1 L_d, q_{k+1})``; (51) is (53).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> free = np.zeros((0, 1))
    >>> r = md.dirac.in_discrete_structure("+", free, [2.0], [0.2], [2.0], [-2.0], [2.0])
    >>> r.ok, bool(r.max < 1e-12)
    (True, True)
    >>> bad = md.dirac.in_discrete_structure("+", free, [2.0], [0.2], [2.5], [-2.0], [2.0])
    >>> bad.ok, bad.basepoint
    (False, 0.5)
    """
    s = _check_sign(sign)
    a = _as_matrix(A_k, "A_k")
    n = a.shape[1]
    pk, c, pk1 = _as_vector(p_k, "p_k", n), _as_vector(xi, "xi", n), _as_vector(p_k1, "p_k1", n)
    d1, d2 = _as_vector(D1Ld, "D1Ld", n), _as_vector(D2Ld, "D2Ld", n)
    t = _check_tol(tol)
    dd = discrete_dirac_differential(s, d1, d2, c)
    if s == "+":
        basepoint = float(np.linalg.norm(pk1 - dd.basepoint_momentum))
        resid = pk + d1  # = A^T mu by (52d)
    else:
        basepoint = float(np.linalg.norm(pk - dd.basepoint_momentum))
        resid = pk1 - d2  # = A^T mu by (53d)
    e = _kernel(a, RANK_RTOL, relative=True)
    mu: FloatArray = np.asarray(
        np.linalg.lstsq(a.T, resid, rcond=None)[0] if a.shape[0] else np.zeros(0), dtype=float
    )
    structure = DiscreteDiracStructure.induced(a, s)
    membership = structure.distance(pk, c, pk1, dd.alpha_q, dd.alpha_p)
    scale = max(1.0, *(float(np.linalg.norm(w)) for w in (pk, pk1, c, d1, d2)))
    return DiscreteStepResidual(
        sign=s,
        constraint=float(np.linalg.norm(a @ c)),
        basepoint=basepoint,
        annihilator=float(np.linalg.norm(e.T @ resid)),
        membership=membership,
        multiplier=mu,
        scale=scale,
        tol=t,
    )
