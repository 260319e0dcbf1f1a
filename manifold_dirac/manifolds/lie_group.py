"""Matrix Lie groups, left-trivialized, with retractions ``R_q(xi) = q tau(xi)``.

A concrete group supplies its primitives -- ``hat``/``vee``, ``exp``/``log``,
the right Jacobian of ``exp`` and its inverse -- and registers its
retractions. A retraction of a group is a :class:`GroupRetraction`: a small
class with ``tau``, ``tau^{-1}`` and the Jacobians of ``tau``; the group
composes them into every Jacobian the integrators need.

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

import jax
import jax.numpy as jnp
import numpy as np

from .base import (
    VALUE_ATOL,
    Manifold,
    Retraction,
    concrete_array,
    first_index,
    register_retraction,
    resolve_retraction,
)

__all__ = ["Cayley", "Exp", "GroupRetraction", "MatrixLieGroup", "register_retraction"]


class GroupRetraction(Retraction):
    """A retraction ``R_q(xi) = q tau(xi)`` of a matrix Lie group.

    Implement ``tau``, ``tau_inv``, ``right_jacobian``,
    ``right_jacobian_inv`` and ``in_domain``; ``left_jacobian_inv`` defaults
    to ``J_r(-xi)^{-1}``, which is right when ``tau(-xi) = tau(xi)^{-1}``
    (``symmetric = True``) and must be overridden otherwise. The fused
    methods (``tau_with_*``) compose the primitives; override them where the
    pieces share work (the laws check that they equal the composition).
    Every method takes the group ``G`` first, so one retraction class serves
    every group whose primitives it uses.
    """

    @abc.abstractmethod
    def tau(self, G: MatrixLieGroup, xi: jax.Array) -> jax.Array:
        """``tau(xi)``, ``(*batch, dim) -> (*batch, N, N)``."""

    @abc.abstractmethod
    def tau_inv(self, G: MatrixLieGroup, g: jax.Array) -> jax.Array:
        """``tau^{-1}(g)``, ``(*batch, N, N) -> (*batch, dim)``."""

    @abc.abstractmethod
    def right_jacobian(self, G: MatrixLieGroup, xi: jax.Array) -> jax.Array:
        """``J_r(xi)``, ``(*batch, dim, dim)``."""

    @abc.abstractmethod
    def right_jacobian_inv(self, G: MatrixLieGroup, xi: jax.Array) -> jax.Array:
        """``J_r(xi)^{-1}``, ``(*batch, dim, dim)``."""

    @abc.abstractmethod
    def in_domain(self, G: MatrixLieGroup, xi: jax.Array) -> jax.Array:
        """Boolean ``(*batch,)``: ``xi`` inside the domain where ``tau`` is injective."""

    def left_jacobian_inv(self, G: MatrixLieGroup, xi: jax.Array) -> jax.Array:
        """``J_l(xi)^{-1}``; for ``tau(-xi) = tau(xi)^{-1}`` it is ``J_r(-xi)^{-1}``."""
        if not self.symmetric:
            raise NotImplementedError(
                f"{type(self).__name__}: a retraction with tau(-xi) != tau(xi)^-1 must implement left_jacobian_inv"
            )
        return self.right_jacobian_inv(G, -xi)

    def tau_with_inverse_jacobians(self, G: MatrixLieGroup, xi: jax.Array):
        """``(tau(xi), -J_l(xi)^{-1}, J_r(xi)^{-1})``."""
        return self.tau(G, xi), -self.left_jacobian_inv(G, xi), self.right_jacobian_inv(G, xi)

    def tau_with_jacobians(self, G: MatrixLieGroup, xi: jax.Array):
        """``(tau(xi), Ad_{tau(xi)^{-1}}, J_r(xi))``."""
        t = self.tau(G, xi)
        return t, G.adjoint(G.inverse(t)), self.right_jacobian(G, xi)


class MatrixLieGroup(Manifold):
    """Base class of a matrix Lie group ``G`` with left-trivialized frames.

    Points are ``(*batch, N, N)`` matrices; a tangent vector ``xi`` stands for
    ``q hat(xi)`` (a body velocity). Subclasses set ``dim``, ``matrix_size``,
    implement the abstract primitives and register retractions with
    :func:`register_retraction`; :class:`Exp` and the generic :class:`Cayley`
    serve every subclass unless it registers its own under those names.

    Parameters
    ----------
    retraction : str or GroupRetraction
        A name registered for the group (``type(G).retraction_names()``).
    """

    matrix_size: ClassVar[int]
    """Size ``N`` of the ``N x N`` matrices representing group elements."""

    _validated: ClassVar[dict[str, tuple[tuple[str, str], ...]]] = {
        **Manifold._validated,
        "exp": (("xi", "tangent"),),
        "log": (("g", "point"),),
        "exp_right_jacobian": (("xi", "tangent"),),
        "exp_right_jacobian_inv": (("xi", "tangent"),),
        "exp_in_domain": (("xi", "tangent"),),
    }

    def __init__(self, retraction: str | GroupRetraction = "exp"):
        self.retraction = resolve_retraction(type(self), retraction)
        self.point_shape = (self.matrix_size, self.matrix_size)

    # ------------------------------------------------------------ primitives
    @abc.abstractmethod
    def hat(self, xi: jax.Array) -> jax.Array:
        """Lie algebra element from coordinates, ``(*batch, dim) -> (*batch, N, N)``."""

    @abc.abstractmethod
    def vee(self, X: jax.Array) -> jax.Array:
        """Inverse of :meth:`hat`, ``(*batch, N, N) -> (*batch, dim)``."""

    @abc.abstractmethod
    def exp(self, xi: jax.Array) -> jax.Array:
        """The exponential map ``(*batch, dim) -> (*batch, N, N)``."""

    @abc.abstractmethod
    def log(self, g: jax.Array) -> jax.Array:
        """The principal logarithm ``(*batch, N, N) -> (*batch, dim)``.

        Raises ``ValueError`` for ``g`` of another shape (always) and, in
        eager calls, for a concrete ``g`` that is not in the group (where
        the group defines :meth:`_defects`: SO(3), SE(2)); see
        :mod:`manifold_dirac.manifolds.base`.
        """

    @abc.abstractmethod
    def exp_right_jacobian(self, xi: jax.Array) -> jax.Array:
        """``J_r(xi)`` of ``exp``, ``(*batch, dim, dim)``."""

    @abc.abstractmethod
    def exp_right_jacobian_inv(self, xi: jax.Array) -> jax.Array:
        """``J_r(xi)^{-1}`` of ``exp``, ``(*batch, dim, dim)``."""

    @abc.abstractmethod
    def exp_in_domain(self, xi: jax.Array) -> jax.Array:
        """Boolean ``(*batch,)``: ``xi`` inside the injectivity domain of ``exp``."""

    # ---------------------------------------------------------- group layer
    def identity(self, batch_shape: tuple[int, ...] = ()) -> jax.Array:
        """The identity element, ``(*batch_shape, N, N)``."""
        return jnp.broadcast_to(jnp.eye(self.matrix_size), (*batch_shape, *self.point_shape))

    def default_point(self) -> jax.Array:
        return self.identity()

    def compose(self, a: jax.Array, b: jax.Array) -> jax.Array:
        """The product ``a b``."""
        return a @ b

    def inverse(self, g: jax.Array) -> jax.Array:
        """The inverse ``g^{-1}`` (subclasses override with closed forms)."""
        return jnp.linalg.inv(g)

    def adjoint(self, g: jax.Array) -> jax.Array:
        """``Ad_g`` as a ``(*batch, dim, dim)`` matrix: ``Ad_g xi = vee(g hat(xi) g^{-1})``."""
        basis = self.hat(jnp.eye(self.dim))  # (dim, N, N)
        cols = self.vee(jnp.einsum("...ab,jbc,...cd->...jad", g, basis, self.inverse(g)))
        return jnp.swapaxes(cols, -1, -2)

    def ad(self, xi: jax.Array) -> jax.Array:
        """``ad_xi`` as a ``(*batch, dim, dim)`` matrix: ``ad_xi eta = vee([hat xi, hat eta])``."""
        X = self.hat(xi)
        basis = self.hat(jnp.eye(self.dim))
        comm = jnp.einsum("...ab,jbc->...jac", X, basis) - jnp.einsum("jab,...bc->...jac", basis, X)
        return jnp.swapaxes(self.vee(comm), -1, -2)

    # ------------------------------------------------------ value checks
    def _defects(self, a: np.ndarray) -> tuple[tuple[str, np.ndarray], ...]:
        """How far the matrices ``a`` ``(*batch, N, N)`` are from the group, per batch member (numpy).

        A tuple of ``(what, error (*batch,))``; a member is refused when an
        error exceeds :data:`~manifold_dirac.manifolds.base.VALUE_ATOL`. Empty
        by default (no value check); SO(3) and SE(2) define it.
        """
        return ()

    def _check_values(self, where: str, name: str, q: Any) -> None:
        a = concrete_array(q)
        if a is None or a.size == 0:
            return
        finite = np.all(np.isfinite(a), axis=(-2, -1))  # failed batch members (NaN) pass through
        for what, err in self._defects(np.where(finite[..., None, None], a, np.eye(self.matrix_size))):
            bad = finite & (err > VALUE_ATOL)
            if np.any(bad):
                worst = float(np.max(np.where(bad, err, 0.0)))
                raise ValueError(
                    f"{where}: {name} is not an element of {type(self).__name__} at batch index {first_index(bad)}: "
                    f"{what} = {worst:.3e} > {VALUE_ATOL:.0e}. Pass a point of the group "
                    f"({type(self).__name__}().check_point validates one); this check runs in eager calls only"
                )

    # ------------------------------------------------- Manifold implementation
    def retract(self, q, xi):
        return q @ self.retraction.tau(self, jnp.asarray(xi))

    def inverse_retract(self, q0, q1):
        return self.retraction.tau_inv(self, self.inverse(q0) @ q1)

    def retract_with_inverse_jacobians(self, q0, xi):
        t, J0, J1 = self.retraction.tau_with_inverse_jacobians(self, jnp.asarray(xi))
        return q0 @ t, J0, J1

    def retract_with_jacobians(self, q, xi):
        t, Jq, Jx = self.retraction.tau_with_jacobians(self, jnp.asarray(xi))
        return q @ t, Jq, Jx

    def in_domain(self, xi):
        return self.retraction.in_domain(self, jnp.asarray(xi))

    def ambient_tangent(self, q, eta):
        return q @ self.hat(eta)

    def _key(self) -> tuple:
        return (type(self).__name__, type(self.retraction))

    @staticmethod
    def _as_matrix_array(q: Any, n: int, name: str, group: str) -> np.ndarray:
        """``q`` as a float64 numpy array of shape ``(..., n, n)`` with finite entries (eager)."""
        try:
            a = np.asarray(q, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: a point of {group} is an array of shape (..., {n}, {n}), got {type(q).__name__}") from None
        if a.ndim < 2 or a.shape[-2:] != (n, n):
            raise ValueError(f"{name}: a point of {group} is an array of shape (..., {n}, {n}), got shape {a.shape}")
        bad = ~np.isfinite(a)
        if np.any(bad):
            idx = np.argwhere(bad.any(axis=(-1, -2)))[0].tolist() if a.ndim > 2 else []
            raise ValueError(f"{name}: non-finite entries in a point of {group} at batch index {idx}")
        return a


class Exp(GroupRetraction):
    """``tau = exp``: the group's own exponential, logarithm and Jacobians (symmetric)."""

    name = "exp"
    symmetric = True

    def tau(self, G, xi):
        return G.exp(xi)

    def tau_inv(self, G, g):
        return G.log(g)

    def right_jacobian(self, G, xi):
        return G.exp_right_jacobian(xi)

    def right_jacobian_inv(self, G, xi):
        return G.exp_right_jacobian_inv(xi)

    def in_domain(self, G, xi):
        return G.exp_in_domain(xi)


class Cayley(GroupRetraction):
    """``tau = cay(xi) = (I - X/2)^{-1} (I + X/2)``, ``X = hat(xi)`` (symmetric).

    Generic matrix formulas, valid for any quadratic matrix group (SO(n),
    SE(n)); groups register faster closed forms under the same name. The
    inverse ``cay^{-1}(g) = vee(2 (g - I)(g + I)^{-1})`` is singular where ``g``
    has eigenvalue -1 (a rotation by pi): there ``|xi| -> inf``.

    Jacobians: ``J_r^{-1} eta = vee((I + X/2) hat(eta) (I - X/2))`` and
    ``J_l^{-1} eta = vee((I - X/2) hat(eta) (I + X/2))``.
    """

    name = "cayley"
    symmetric = True

    def tau(self, G, xi):
        X = G.hat(xi)
        eye = jnp.eye(G.matrix_size)
        return jnp.linalg.solve(eye - 0.5 * X, eye + 0.5 * X)

    def tau_inv(self, G, g):
        eye = jnp.eye(G.matrix_size)
        # X (g + I) = 2 (g - I)  <=>  (g + I)^T X^T = 2 (g - I)^T
        Xt = jnp.linalg.solve(jnp.swapaxes(g + eye, -1, -2), 2.0 * jnp.swapaxes(g - eye, -1, -2))
        return G.vee(jnp.swapaxes(Xt, -1, -2))

    def _jac_inv(self, G, xi, sign):
        X = 0.5 * sign * G.hat(xi)
        eye = jnp.eye(G.matrix_size)
        basis = G.hat(jnp.eye(G.dim))
        M = jnp.einsum("...ab,jbc,...cd->...jad", eye + X, basis, eye - X)
        return jnp.swapaxes(G.vee(M), -1, -2)

    def right_jacobian(self, G, xi):
        return jnp.linalg.inv(self._jac_inv(G, xi, 1.0))

    def right_jacobian_inv(self, G, xi):
        return self._jac_inv(G, xi, 1.0)

    def left_jacobian_inv(self, G, xi):
        return self._jac_inv(G, xi, -1.0)

    def in_domain(self, G, xi):
        # tau is injective on all of R^dim; its image misses the rotations by
        # pi, approached as |xi| -> inf. Refuse chart coordinates of rotations
        # within ~0.1 rad of pi (|xi| = 2 tan(theta/2)), where the inverse loses digits.
        return jnp.sum(xi * xi, axis=-1) < _CAYLEY_MAX_NORM2


_CAYLEY_MAX_NORM2 = float((2.0 * np.tan(0.5 * (np.pi - 0.1))) ** 2)

register_retraction(MatrixLieGroup)(Exp)
register_retraction(MatrixLieGroup)(Cayley)
