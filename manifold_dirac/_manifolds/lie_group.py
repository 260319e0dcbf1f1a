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
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._types import ArrayLike
from .base import (
    VALUE_ATOL,
    Manifold,
    Retraction,
    concrete_array,
    first_index,
    first_member,
    register_retraction,
    resolve_retraction,
)

__all__ = ["CAYLEY_MAX_ROTATION", "Cayley", "Exp", "GroupRetraction", "MatrixLieGroup", "register_retraction"]


CAYLEY_MAX_ROTATION = float(np.real(next(r for r in np.roots([0.25, 0.0, 1.0, -np.pi]) if abs(r.imag) < 1e-12)))
"""The Cayley retraction's step domain, ``|w| < CAYLEY_MAX_ROTATION``: the root of ``m (1 + m^2/4) = pi`` (1.7656...)."""

_CAYLEY_INVERSE_MAX_ANGLE = float(np.pi - 1e-4)
_EXP_JACOBIAN_INV_MAX = float(2.0 * np.pi - 1e-6)


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

    Attributes
    ----------
    max_rotation : float
        The step domain: ``in_domain(xi)`` is ``|rotation part of xi| <
        max_rotation`` (pi by default: where ``exp`` stops being injective).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> G = md.SO3()                                  # exp: tau(xi) = expm(hat(xi))
    >>> r = G.retraction
    >>> isinstance(r, md.GroupRetraction), r.max_rotation == np.pi
    (True, True)
    >>> g = r.tau(G, np.array([0.0, 0.0, 0.3]))      # a rotation by 0.3 about z
    >>> np.round(np.asarray(r.tau_inv(G, g)), 12)
    array([0. , 0. , 0.3])
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

    max_rotation: ClassVar[float] = float(np.pi)
    """The step domain: the rotation part of ``xi`` (:meth:`MatrixLieGroup.rotation_norm2`) below this norm.

    ``pi`` for ``exp`` and the split retractions: beyond it the chart
    coordinate of a step aliases a rotation by more than half a turn. See
    :class:`Cayley` for its smaller bound and why.
    """

    def in_domain(self, G: MatrixLieGroup, xi: jax.Array) -> jax.Array:
        """Boolean ``(*batch,)``: ``xi`` inside the step domain, ``|rotation part of xi| < max_rotation``.

        What the integrator tests at every step (a step outside is refused
        with the status ``DOMAIN``, :class:`~manifold_dirac._errors.StepDomainError`).
        """
        return G.rotation_norm2(xi) < self.max_rotation**2

    def inverse_domain(self, G: MatrixLieGroup, g: np.ndarray) -> list[tuple[np.ndarray, str]]:
        """Eager check of ``tau^{-1}``'s argument ``g`` ``(*batch, N, N)`` (numpy): ``[(bad (*batch,), why)]``.

        Empty by default: ``tau^{-1}`` defined on the whole group (``log``).
        """
        return []

    def inverse_jacobian_domain(self, G: MatrixLieGroup, xi: np.ndarray) -> list[tuple[np.ndarray, str]]:
        """Eager check of the argument of ``J_r^{-1}``, ``J_l^{-1}`` (numpy): ``[(bad (*batch,), why)]``.

        Empty by default (inverse Jacobians defined for every ``xi``).
        """
        return []

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

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> G = md.SE2()                                   # a matrix Lie group
    >>> isinstance(G, md.MatrixLieGroup), G.dim, G.matrix_size
    (True, 3, 3)
    >>> g = G.retract(np.eye(3), np.array([np.pi / 2, 1.0, 0.0]))   # body twist (omega, v_x, v_y)
    >>> np.allclose(G.inverse_retract(np.eye(3), g), [np.pi / 2, 1.0, 0.0])
    True
    """

    matrix_size: ClassVar[int]
    """Size ``N`` of the ``N x N`` matrices representing group elements."""

    rotation_axes: ClassVar[tuple[int, int] | None] = None
    """The frame coordinates ``xi[..., a:b]`` of the rotation part (``(0, 3)`` on SO(3) and SE(3),
    ``(0, 1)`` on SE(2)); ``None``: all of ``xi``. The step domains of the retractions bound its norm."""

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
        the group defines :meth:`_defects`: SO(3), SE(2), SE(3); tolerance
        ``1e-6``) or has a non-finite entry (:class:`RetractionDomainError`);
        traced calls check shapes only. See :class:`Manifold`.
        """

    @abc.abstractmethod
    def exp_right_jacobian(self, xi: jax.Array) -> jax.Array:
        """``J_r(xi)`` of ``exp``, ``(*batch, dim, dim)``."""

    @abc.abstractmethod
    def exp_right_jacobian_inv(self, xi: jax.Array) -> jax.Array:
        """``J_r(xi)^{-1}`` of ``exp``, ``(*batch, dim, dim)``."""

    def exp_in_domain(self, xi: jax.Array) -> jax.Array:
        """Boolean ``(*batch,)``: ``xi`` inside the injectivity domain of ``exp``, a rotation part below ``pi``."""
        return self.rotation_norm2(xi) < np.pi**2

    def rotation_norm2(self, xi: jax.Array) -> jax.Array:
        """``|rotation part of xi|^2`` ``(*batch,)`` (:attr:`rotation_axes`); ``|xi|^2`` for a group without one."""
        xi = jnp.asarray(xi)
        a, b = self.rotation_axes or (0, self.dim)
        return jnp.sum(xi[..., a:b] ** 2, axis=-1)

    def rotation_angle(self, g: ArrayLike) -> np.ndarray:
        """The rotation angle in ``[0, pi]`` of elements ``g`` ``(*batch, N, N)`` (eager, numpy).

        From the rotation block ``R`` (:meth:`_rotation_block`, ``n x n``,
        ``n = 2, 3``): ``atan2(|R - R^T|_F / (2 sqrt 2), (tr R - n + 2)/2)``,
        accurate to round-off up to pi; ``|rotation part of log g|`` for a
        group without a rotation block.
        """
        a = np.asarray(g, dtype=float)
        R = self._rotation_block(a)
        if R is None:
            return np.sqrt(np.asarray(self.rotation_norm2(self.log(g))))
        n = R.shape[-1]
        s = np.linalg.norm(R - np.swapaxes(R, -1, -2), axis=(-2, -1)) / (2.0 * np.sqrt(2.0))
        return np.arctan2(s, 0.5 * (np.trace(R, axis1=-2, axis2=-1) - n + 2))

    # ---------------------------------------------------------- group layer
    def identity(self, batch_shape: tuple[int, ...] = ()) -> jax.Array:
        """The identity element, ``(*batch_shape, N, N)``."""
        # built on the host and put on the device: eager jnp.eye/broadcast_to compile small programs at first use
        return jax.device_put(np.broadcast_to(np.eye(self.matrix_size), (*batch_shape, *self.point_shape)))

    def default_point(self) -> jax.Array:
        return self.identity()

    def compose(self, a: jax.Array, b: jax.Array) -> jax.Array:
        """The product ``a b``."""
        return a @ b

    def between(self, g0: jax.Array, g1: jax.Array) -> jax.Array:
        """``g0^{-1} g1`` (subclasses override where a closed form avoids cancellation)."""
        return self.compose(self.inverse(g0), g1)

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
        error exceeds :data:`~manifold_dirac._manifolds.base.VALUE_ATOL`. Empty
        by default (no value check); SO(3) and SE(2) define it.
        """
        return ()

    _noun: ClassVar[str] = "an element"
    """How :meth:`check_point`'s messages call a point (``"a rotation matrix"``, ``"a pose"``)."""

    def _point_defects(self, a: np.ndarray) -> tuple[tuple[str, np.ndarray], ...]:
        """What :meth:`check_point` measures of ``a`` ``(*batch, N, N)``: ``(label, error (*batch,))`` pairs
        (empty by default). The label precedes the number in the message."""
        return ()

    def _rotation_block(self, a: np.ndarray) -> np.ndarray | None:
        """The rotation block of ``a`` whose determinant must be +1 (None: no such check)."""
        return None

    _reflection: ClassVar[str] = "the rotation block has det = -1 (a reflection)"

    def check_point(self, q: object, atol: float = 1e-9, name: str = "q") -> jax.Array:
        """Validate a point: shape ``(..., N, N)``, finite, each :meth:`_point_defects` below ``atol``,
        and a rotation block of determinant +1; returns it as a float64 array."""
        # a float64 numpy array: jnp.asarray would compile a program at first use
        return jax.device_put(self._check_point_host(q, atol, name))

    def _check_point_host(self, q: object, atol: float = 1e-9, name: str = "q") -> np.ndarray:
        group = type(self).__name__
        a = self._as_matrix_array(q, self.matrix_size, name, group)
        for what, err in self._point_defects(a):
            if err.size and np.max(err) > atol:
                idx = np.unravel_index(np.argmax(err), err.shape) if err.ndim else ()
                raise ValueError(
                    f"{name}: not {self._noun} ({group}) at batch index {[int(i) for i in idx]}: "
                    f"{what} {np.max(err):.3e} > atol = {atol:.1e}"
                )
        R = self._rotation_block(a)
        if R is not None:
            det = np.linalg.det(R)
            if np.any(det < 0):
                idx = np.argwhere(det < 0)[0].tolist() if np.ndim(det) else []
                raise ValueError(f"{name}: not {self._noun} ({group}) at batch index {idx}: {self._reflection}")
        return a

    def _check_values(self, where: str, name: str, q: object) -> None:
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

    # ------------------------------------------------------------- sampling
    def sample_tangent(self, rng, batch_shape, regime):
        """As :meth:`Manifold.sample_tangent`; ``near_singular``: the rotation part just inside the step domain.

        Its norm is ``max_rotation (1 - 10^u)``, ``u`` uniform in ``[-6, -2]``
        (:attr:`GroupRetraction.max_rotation`), in a random direction; the
        other coordinates standard normal.
        """
        if regime != "near_singular":
            return super().sample_tangent(rng, batch_shape, regime)
        xi = rng.standard_normal((*batch_shape, self.dim))
        a, b = self.rotation_axes or (0, self.dim)
        d = xi[..., a:b] / np.linalg.norm(xi[..., a:b], axis=-1, keepdims=True)
        r = self.retraction.max_rotation * (1.0 - 10.0 ** rng.uniform(-6, -2, batch_shape))
        xi[..., a:b] = r[..., None] * d
        return jnp.asarray(xi)

    # ------------------------------------------------------ domain checks
    def _domain_violations(self, method, given):
        if method == "inverse_retract":
            return self.retraction.inverse_domain(self, np.asarray(self.between(given["q0"], given["q1"])))
        if method == "retract_with_inverse_jacobians":
            return self.retraction.inverse_jacobian_domain(self, given["xi"])
        if method == "exp_right_jacobian_inv":
            return self.exp_jacobian_inv_domain(given["xi"])
        return []

    def exp_jacobian_inv_domain(self, xi: np.ndarray) -> list[tuple[np.ndarray, str]]:
        """Eager check of ``J_r(xi)^{-1}`` of ``exp``: singular where the rotation part has norm ``2 pi k``, ``k >= 1``.

        Refused for a rotation part of norm ``>= 2 pi - 1e-6`` (the inverse
        Jacobians of ``exp`` hold ``(t/2) cot(t/2)``, which has its first pole
        at ``t = 2 pi``; a step never needs more than ``pi``).
        """
        t = np.sqrt(np.asarray(self.rotation_norm2(xi)))
        bad = t >= _EXP_JACOBIAN_INV_MAX
        if not np.any(bad):
            return []
        return [(bad, f"xi = {first_member(xi, bad, 1)} has a rotation part of norm {first_member(t, bad)}; "
                      "the inverse Jacobian of exp is singular at 2 pi, and computed for a rotation part of norm below "
                      f"2 pi - 1e-6 = {_EXP_JACOBIAN_INV_MAX:.10g}")]

    # ------------------------------------------------- Manifold implementation
    def retract(self, q, xi):
        return self.compose(q, self.retraction.tau(self, jnp.asarray(xi)))

    def inverse_retract(self, q0, q1):
        return self.retraction.tau_inv(self, self.between(q0, q1))

    def retract_with_inverse_jacobians(self, q0, xi):
        t, J0, J1 = self.retraction.tau_with_inverse_jacobians(self, jnp.asarray(xi))
        return self.compose(q0, t), J0, J1

    def retract_with_jacobians(self, q, xi):
        t, Jq, Jx = self.retraction.tau_with_jacobians(self, jnp.asarray(xi))
        return self.compose(q, t), Jq, Jx

    def in_domain(self, xi):
        return self.retraction.in_domain(self, jnp.asarray(xi))

    def ambient_tangent(self, q, eta):
        return q @ self.hat(eta)

    def _key(self) -> tuple:
        return (type(self).__name__, type(self.retraction))

    @staticmethod
    def _as_matrix_array(q: object, n: int, name: str, group: str) -> np.ndarray:
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

    def inverse_jacobian_domain(self, G, xi):
        return G.exp_jacobian_inv_domain(xi)


class Cayley(GroupRetraction):
    """``tau = cay(xi) = (I - X/2)^{-1} (I + X/2)``, ``X = hat(xi)`` (symmetric).

    Generic matrix formulas, valid for any quadratic matrix group (SO(n),
    SE(n)); groups register faster closed forms under the same name. The
    inverse ``cay^{-1}(g) = vee(2 (g - I)(g + I)^{-1})`` is singular where ``g``
    has eigenvalue -1 (a rotation by pi): there ``|xi| -> inf``.

    Jacobians: ``J_r^{-1} eta = vee((I + X/2) hat(eta) (I - X/2))`` and
    ``J_l^{-1} eta = vee((I - X/2) hat(eta) (I + X/2))``.

    Notes
    -----
    **Step domain** (:meth:`in_domain`): a rotation part ``w`` of ``xi`` with
    ``|w| (1 + |w|^2/4) < pi``, i.e. ``|w| < 1.7656`` (:data:`CAYLEY_MAX_ROTATION`),
    a rotation by ``2 atan(|w|/2) < 1.4465`` rad per step. ``cay`` maps all
    of ``R^3`` onto the rotations by less than pi, so a step never leaves its
    image; what goes wrong on a large step is the velocity. On SO(3),
    ``J_r^{-1}(w) w = J_l^{-1}(w) w = w (1 + |w|^2/4)``, so the discrete
    Legendre transforms of a body spinning about a principal axis at the
    rate ``Omega`` (momentum ``I Omega``) give ``|w| (1 + |w|^2/4) = Omega h``,
    where ``exp`` gives ``|w| = Omega h``. Bounding ``|w| (1 + |w|^2/4)`` by
    pi refuses exactly the steps that ``exp`` refuses (``Omega h >= pi``, a
    rotation by half a turn or more per step, which the step cannot
    resolve); without the bound, Cayley returned a step rotating
    ``2 atan(|w|/2) < pi`` with ``ok=True`` and an aliased recorded
    velocity (3.03 rad/s for a body spinning at 10 rad/s with ``h = 1``).

    **Inverse** (eager calls, :meth:`inverse_domain`): ``cay^{-1}`` is
    refused for a rotation by more than ``pi - 1e-4`` rad, where
    ``|xi| = 2 tan(theta/2) > 4e4`` and the closed form
    ``2 vee(R - R^T)/(1 + tr R)`` keeps fewer than 7 significant digits
    (its denominator is ``4 cos^2(theta/2)``).
    """

    name = "cayley"
    symmetric = True
    max_rotation = CAYLEY_MAX_ROTATION

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

    def inverse_domain(self, G, g):
        if G.rotation_axes is None:  # a group without a rotation part: g + I singular to working precision
            eye = np.eye(G.matrix_size)
            c = np.linalg.cond(g + eye)
            bad = ~(c < 1e8)
            if not np.any(bad):
                return []
            return [(bad, f"g + I is singular (condition number {first_member(c, bad)} >= 1e8): g is outside the "
                          "image of the Cayley map")]
        theta = G.rotation_angle(g)
        bad = theta > _CAYLEY_INVERSE_MAX_ANGLE
        if not np.any(bad):
            return []
        return [(bad, f"q0^-1 q1 is a rotation by {first_member(theta, bad)} rad; the inverse of the Cayley "
                      "retraction is defined for rotations by less than pi, and computed for rotations by at "
                      f"most pi - 1e-4 = {_CAYLEY_INVERSE_MAX_ANGLE:.10g} rad (|xi| = 2 tan(theta/2) <= 4e4)")]


register_retraction(MatrixLieGroup)(Exp)
register_retraction(MatrixLieGroup)(Cayley)
