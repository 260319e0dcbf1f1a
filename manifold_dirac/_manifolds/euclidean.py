"""Euclidean space ``R^n`` with the identity frame and ``R_q(xi) = q + xi``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .base import Manifold, Retraction, register_retraction, resolve_retraction

__all__ = ["Euclidean", "Translation"]


class Euclidean(Manifold):
    """The vector space ``R^n``.

    Points and tangent vectors are arrays ``(*batch, n)``; the frame is the
    identity and the retraction the translation ``R_q(xi) = q + xi``, so
    ``J0 = -I``, ``J1 = I``, ``J_q = J_xi = I``.

    Parameters
    ----------
    n : int
        Dimension, at least 1.
    retraction : {"identity"}
        The only retraction of a vector space.
    names : tuple of str, optional
        Names of the coordinates (defaults ``x0, x1, ...``).

    Notes
    -----
    Argument checks (the rules of every :class:`Manifold`): the primitives
    refuse points and tangent vectors whose last axis is not ``n`` in every
    call, eager or traced; there is no value to check (every finite vector
    is a point, and NaN passes through as the mark of a failed member).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> Q = md.Euclidean(3, names=("x", "y", "theta"))
    >>> Q.dim, Q.coordinate_names
    (3, ('x', 'y', 'theta'))
    >>> np.asarray(Q.retract(np.zeros(3), np.array([1.0, 2.0, 3.0])))
    array([1., 2., 3.])
    """

    def __init__(self, n: int, retraction: str | Retraction = "identity", names: tuple[str, ...] | None = None):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"Euclidean: the dimension must be a positive integer, got {n!r}")
        self.dim = int(n)
        self.point_shape = (self.dim,)
        self.retraction = resolve_retraction(type(self), retraction)
        names = tuple(names) if names is not None else tuple(f"x{i}" for i in range(self.dim))
        if len(names) != self.dim:
            raise ValueError(f"Euclidean({n}): got {len(names)} coordinate names for dimension {n}")
        self.coordinate_names = names

    def __repr__(self) -> str:
        return f"Euclidean({self.dim})"

    def _key(self) -> tuple:
        return ("Euclidean", self.dim)

    def retract(self, q, xi):
        return jnp.asarray(q) + jnp.asarray(xi)  # asarray: lists must add, not concatenate

    def inverse_retract(self, q0, q1):
        return jnp.asarray(q1) - jnp.asarray(q0)

    def retract_with_inverse_jacobians(self, q0, xi):
        eye = jnp.eye(self.dim)
        return jnp.asarray(q0) + jnp.asarray(xi), -eye, eye

    def retract_with_jacobians(self, q, xi):
        eye = jnp.eye(self.dim)
        return jnp.asarray(q) + jnp.asarray(xi), eye, eye

    def in_domain(self, xi):
        return jnp.ones(jnp.shape(xi)[:-1], dtype=bool)

    def ambient_tangent(self, q, eta):
        return jnp.broadcast_to(eta, jnp.broadcast_shapes(jnp.shape(q), jnp.shape(eta)))

    def default_point(self):
        return jax.device_put(np.zeros(self.dim))  # built on the host: eager jnp.zeros compiles a program

    def random_point(self, rng, batch_shape=()):
        return jax.device_put(rng.standard_normal((*batch_shape, self.dim)))

    def check_point(self, q: object, atol: float = 1e-9, name: str = "q"):
        return jax.device_put(self._check_point_host(q, atol, name))  # (jnp.asarray of NumPy compiles a program)

    def _check_point_host(self, q: object, atol: float = 1e-9, name: str = "q"):
        try:
            a = np.asarray(q, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"{name}: a point of Euclidean({self.dim}) is an array of shape (..., {self.dim}), "
                            f"got {type(q).__name__}") from None
        if a.ndim < 1 or a.shape[-1] != self.dim:
            raise ValueError(f"{name}: a point of Euclidean({self.dim}) has shape (..., {self.dim}), got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(
                f"{name}: non-finite entries in a point of Euclidean({self.dim}) at indices "
                f"{np.argwhere(~np.isfinite(a)).tolist()[:5]}"
            )
        return a

    def to_coordinates(self, q):
        return jnp.asarray(q)

    def from_coordinates(self, c):
        return self.check_point(c, name="coordinates")


@register_retraction(Euclidean)
class Translation(Retraction):
    """``R_q(xi) = q + xi`` (symmetric): the retraction of a vector space."""

    name = "identity"
    symmetric = True
