"""Matrix Lie groups, left-trivialized, with retractions ``R_q(xi) = q tau(xi)``.

A concrete group supplies its primitives -- ``hat``/``vee``, ``exp``/``log``
and the right Jacobian of ``exp`` and its inverse -- and inherits the
retraction layer, the Cayley map (generic matrix formulas), the adjoint and
every Jacobian the integrators need.

Jacobian conventions (Sola et al., arXiv 1812.01537, Sec. 4):

* right Jacobian ``J_r``: ``tau(xi + d) ~ tau(xi) exp(J_r(xi) d)``,
* left Jacobian ``J_l``:  ``tau(xi + d) ~ exp(J_l(xi) d) tau(xi)``;

then for ``xi = tau^{-1}(q0^{-1} q1)``: ``J1 = J_r(xi)^{-1}`` and
``J0 = -J_l(xi)^{-1}``; for ``q' = q tau(xi)``: ``J_q = Ad_{tau(xi)^{-1}}`` and
``J_xi = J_r(xi)``.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import numpy as np

from ..errors import RetractionDomainError
from .base import Manifold, check_retraction_name

__all__ = ["MatrixLieGroup"]


class MatrixLieGroup(Manifold):
    """Base class of a matrix Lie group ``G`` with left-trivialized frames.

    Points are ``(*batch, N, N)`` matrices; tangent vectors ``xi`` stand for
    ``q hat(xi)`` (body velocities). Subclasses set ``dim``, ``matrix_size``
    and implement the primitives marked abstract; they may add retractions
    by extending ``retractions`` and overriding :meth:`_tau_parts`.

    Parameters
    ----------
    retraction : str
        One of ``retractions`` (``"exp"`` and ``"cayley"`` always exist).
    """

    matrix_size: ClassVar[int]
    """Size ``N`` of the ``N x N`` matrices representing group elements."""
    retractions: ClassVar[tuple[str, ...]] = ("exp", "cayley")

    def __init__(self, retraction: str = "exp"):
        self.retraction = check_retraction_name(retraction, self.retractions, type(self).__name__)
        self.point_shape = (self.matrix_size, self.matrix_size)
        self.symmetric_retraction = self.retraction in ("exp", "cayley")
        basis = self.hat(np.eye(self.dim))  # (dim, N, N): generators E_j
        self._basis = basis

    # ------------------------------------------------------------ primitives
    @abc.abstractmethod
    def hat(self, xi: np.ndarray) -> np.ndarray:
        """Lie algebra element from coordinates, ``(*batch, dim) -> (*batch, N, N)``."""

    @abc.abstractmethod
    def vee(self, X: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`hat`, ``(*batch, N, N) -> (*batch, dim)``."""

    @abc.abstractmethod
    def exp(self, xi: np.ndarray) -> np.ndarray:
        """The exponential map ``(*batch, dim) -> (*batch, N, N)``."""

    @abc.abstractmethod
    def log(self, g: np.ndarray) -> np.ndarray:
        """The principal logarithm ``(*batch, N, N) -> (*batch, dim)``."""

    @abc.abstractmethod
    def exp_right_jacobian(self, xi: np.ndarray) -> np.ndarray:
        """``J_r(xi)`` of ``exp``, ``(*batch, dim, dim)``."""

    @abc.abstractmethod
    def exp_right_jacobian_inv(self, xi: np.ndarray) -> np.ndarray:
        """``J_r(xi)^{-1}`` of ``exp``, ``(*batch, dim, dim)``."""

    # ---------------------------------------------------------- group layer
    def identity(self, batch_shape: tuple[int, ...] = ()) -> np.ndarray:
        """The identity element, ``(*batch_shape, N, N)``."""
        return np.broadcast_to(np.eye(self.matrix_size), (*batch_shape, *self.point_shape)).copy()

    def compose(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """The product ``a b``."""
        return a @ b

    def inverse(self, g: np.ndarray) -> np.ndarray:
        """The inverse ``g^{-1}`` (subclasses override with closed forms)."""
        return np.linalg.inv(g)

    def adjoint(self, g: np.ndarray) -> np.ndarray:
        """``Ad_g`` as a ``(*batch, dim, dim)`` matrix: ``Ad_g xi = vee(g hat(xi) g^{-1})``."""
        gi = self.inverse(g)
        cols = self.vee(np.einsum("...ab,jbc,...cd->...jad", g, self._basis, gi))
        return np.swapaxes(cols, -1, -2)

    def ad(self, xi: np.ndarray) -> np.ndarray:
        """``ad_xi`` as a ``(*batch, dim, dim)`` matrix: ``ad_xi eta = vee([hat xi, hat eta])``."""
        X = self.hat(xi)
        comm = np.einsum("...ab,jbc->...jac", X, self._basis) - np.einsum("jab,...bc->...jac", self._basis, X)
        return np.swapaxes(self.vee(comm), -1, -2)

    # ------------------------------------------------------------ Cayley map
    def cayley(self, xi: np.ndarray) -> np.ndarray:
        """``cay(xi) = (I - X/2)^{-1} (I + X/2)`` with ``X = hat(xi)``."""
        X = self.hat(xi)
        eye = np.eye(self.matrix_size)
        return np.linalg.solve(eye - 0.5 * X, eye + 0.5 * X)

    def cayley_inv(self, g: np.ndarray) -> np.ndarray:
        """``cay^{-1}(g) = vee(2 (g - I)(g + I)^{-1})``.

        Raises
        ------
        RetractionDomainError
            Where ``g + I`` is singular (``g`` has eigenvalue -1: a rotation
            by pi); Cayley coordinates do not exist there.
        """
        eye = np.eye(self.matrix_size)
        gp = g + eye
        det = np.linalg.det(gp)
        self._check_cayley_domain(np.abs(det), 1e-12 * 2.0**self.matrix_size, g)
        # X (g + I) = 2 (g - I)  <=>  (g + I)^T X^T = 2 (g - I)^T
        Xt = np.linalg.solve(np.swapaxes(gp, -1, -2), 2.0 * np.swapaxes(g - eye, -1, -2))
        return self.vee(np.swapaxes(Xt, -1, -2))

    def _check_cayley_domain(self, margin: np.ndarray, tol: float, g: np.ndarray) -> None:
        bad = ~(margin > tol)
        if np.any(bad):
            idx = np.argwhere(bad)[0].tolist() if np.ndim(bad) else []
            raise RetractionDomainError(
                f"{type(self).__name__}: inverse Cayley map is singular at batch index {idx}: "
                f"the element has eigenvalue -1 (a rotation by pi; margin {np.min(margin):.3e}). "
                "Cayley coordinates do not exist there; use retraction='exp' or a smaller step."
            )

    def _cayley_jac_inv(self, xi: np.ndarray, sign: float) -> np.ndarray:
        # sign=+1: J_r^{-1} eta = vee((I + X/2) hat(eta) (I - X/2));
        # sign=-1: J_l^{-1} eta = vee((I - X/2) hat(eta) (I + X/2)).
        X = 0.5 * sign * self.hat(xi)
        eye = np.eye(self.matrix_size)
        M = np.einsum("...ab,jbc,...cd->...jad", eye + X, self._basis, eye - X)
        return np.swapaxes(self.vee(M), -1, -2)

    # ------------------------------------------------------ retraction layer
    def _tau(self, xi: np.ndarray) -> np.ndarray:
        if self.retraction == "exp":
            return self.exp(xi)
        if self.retraction == "cayley":
            return self.cayley(xi)
        raise NotImplementedError(self.retraction)  # pragma: no cover - subclasses extend

    def _tau_inv(self, g: np.ndarray) -> np.ndarray:
        if self.retraction == "exp":
            return self.log(g)
        if self.retraction == "cayley":
            return self.cayley_inv(g)
        raise NotImplementedError(self.retraction)  # pragma: no cover

    def tau_right_jacobian(self, xi: np.ndarray) -> np.ndarray:
        """``J_r(xi)`` of the chosen ``tau``."""
        if self.retraction == "exp":
            return self.exp_right_jacobian(xi)
        if self.retraction == "cayley":
            return np.linalg.inv(self._cayley_jac_inv(xi, +1.0))
        raise NotImplementedError(self.retraction)  # pragma: no cover

    def tau_right_jacobian_inv(self, xi: np.ndarray) -> np.ndarray:
        """``J_r(xi)^{-1}`` of the chosen ``tau``."""
        if self.retraction == "exp":
            return self.exp_right_jacobian_inv(xi)
        if self.retraction == "cayley":
            return self._cayley_jac_inv(xi, +1.0)
        raise NotImplementedError(self.retraction)  # pragma: no cover

    def tau_left_jacobian_inv(self, xi: np.ndarray) -> np.ndarray:
        """``J_l(xi)^{-1}`` of the chosen ``tau``.

        For ``tau(-xi) = tau(xi)^{-1}`` (exp, Cayley) ``J_l(xi) = J_r(-xi)``.
        """
        if self.retraction == "exp":
            return self.exp_right_jacobian_inv(-xi)
        if self.retraction == "cayley":
            return self._cayley_jac_inv(xi, -1.0)
        raise NotImplementedError(self.retraction)  # pragma: no cover

    # ------------------------------------------------- Manifold implementation
    def retract(self, q, xi):
        return q @ self._tau(np.asarray(xi))

    def inverse_retract(self, q0, q1):
        return self._tau_inv(self.inverse(q0) @ q1)

    def inverse_retract_jacobians(self, q0, q1):
        xi = self.inverse_retract(q0, q1)
        return -self.tau_left_jacobian_inv(xi), self.tau_right_jacobian_inv(xi)

    def inverse_retract_with_jacobians(self, q0, q1):
        """``(xi, J0, J1)`` computed together (shares ``xi``)."""
        xi = self.inverse_retract(q0, q1)
        return xi, -self.tau_left_jacobian_inv(xi), self.tau_right_jacobian_inv(xi)

    def retract_with_inverse_jacobians(self, q0, xi):
        xi = np.asarray(xi)
        return q0 @ self._tau(xi), -self.tau_left_jacobian_inv(xi), self.tau_right_jacobian_inv(xi)

    def retract_jacobians(self, q, xi):
        xi = np.asarray(xi)
        J_q = self.adjoint(self.inverse(self._tau(xi)))
        J_xi = self.tau_right_jacobian(xi)
        batch = np.broadcast_shapes(self.batch_shape(q), xi.shape[:-1])
        shape = (*batch, self.dim, self.dim)
        return np.broadcast_to(J_q, shape), np.broadcast_to(J_xi, shape)

    def retract_with_jacobians(self, q, xi):
        """``(q tau(xi), Ad_{tau(xi)^{-1}}, J_r(xi))`` with ``tau`` evaluated once."""
        if not self._inherits(MatrixLieGroup, ("retract", "retract_jacobians")):
            return super().retract_with_jacobians(q, xi)
        xi = np.asarray(xi)
        tau = self._tau(xi)
        q1 = q @ tau
        shape = (*q1.shape[:-2], self.dim, self.dim)
        J_q = self.adjoint(self.inverse(tau))
        return q1, np.broadcast_to(J_q, shape), np.broadcast_to(self.tau_right_jacobian(xi), shape)

    def ambient_tangent(self, q, eta):
        return q @ self.hat(eta)

    def from_tangent_at_identity(self, xi: np.ndarray) -> np.ndarray:
        """The point ``tau(xi)`` (the retraction at the identity)."""
        return self._tau(np.asarray(xi))

    def _key(self) -> tuple:
        return (type(self).__name__, self.retraction)

    @staticmethod
    def _as_matrix_array(q: Any, n: int, name: str, group: str) -> np.ndarray:
        a = np.asarray(q, dtype=float)
        if a.ndim < 2 or a.shape[-2:] != (n, n):
            raise ValueError(f"{name}: a point of {group} is an array of shape (..., {n}, {n}), got {a.shape}")
        bad = ~np.isfinite(a)
        if np.any(bad):
            raise ValueError(
                f"{name}: non-finite entries in a point of {group} at batch index "
                f"{np.argwhere(bad.any(axis=(-1, -2)))[0].tolist() if a.ndim > 2 else []}"
            )
        return a
