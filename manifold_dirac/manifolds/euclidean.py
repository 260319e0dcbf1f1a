"""Euclidean space ``R^n`` with the identity frame and ``R_q(xi) = q + xi``."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from .base import Manifold, check_retraction_name

__all__ = ["Euclidean"]


class Euclidean(Manifold):
    """The vector space ``R^n``.

    Points and tangent vectors are arrays ``(*batch, n)``; the frame is the
    identity, the retraction ``R_q(xi) = q + xi``, so ``J0 = -I`` and
    ``J1 = I``.

    Parameters
    ----------
    n : int
        Dimension, at least 1.
    retraction : {"identity"}
        The only retraction of a vector space.
    names : tuple of str, optional
        Names of the coordinates (defaults ``x0, x1, ...``).
    """

    retractions: ClassVar[tuple[str, ...]] = ("identity",)

    def __init__(self, n: int, retraction: str = "identity", names: tuple[str, ...] | None = None):
        if not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"Euclidean: dimension must be a positive integer, got {n!r}")
        self.dim = int(n)
        self.point_shape = (self.dim,)
        self.retraction = check_retraction_name(retraction, self.retractions, "Euclidean")
        names = tuple(names) if names is not None else tuple(f"x{i}" for i in range(self.dim))
        if len(names) != self.dim:
            raise ValueError(f"Euclidean({n}): got {len(names)} coordinate names for dimension {n}")
        self.coordinate_names = names

    def __repr__(self) -> str:
        return f"Euclidean({self.dim})"

    def retract(self, q: np.ndarray, xi: np.ndarray) -> np.ndarray:
        return q + xi

    def inverse_retract(self, q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
        return q1 - q0

    def _eye(self, batch: tuple[int, ...]) -> np.ndarray:
        eye = self.__dict__.get("_eye_cache")
        if eye is None:  # one read-only identity per instance, broadcast (never copied)
            eye = np.eye(self.dim)
            eye.setflags(write=False)
            self.__dict__["_eye_cache"] = eye
        return np.broadcast_to(eye, (*batch, self.dim, self.dim))

    def inverse_retract_jacobians(self, q0, q1):
        batch = np.broadcast_shapes(np.shape(q0)[:-1], np.shape(q1)[:-1])
        eye = self._eye(batch)
        return -eye, eye

    def retract_jacobians(self, q, xi):
        batch = np.broadcast_shapes(np.shape(q)[:-1], np.shape(xi)[:-1])
        eye = self._eye(batch)
        return eye, eye

    # fused paths (one broadcast of the cached identity each); a subclass
    # with its own retraction or Jacobians gets the generic composition
    _FUSED = ("retract", "inverse_retract_jacobians", "retract_jacobians")

    def retract_with_inverse_jacobians(self, q0, xi):
        if not self._inherits(Euclidean, self._FUSED):
            return super().retract_with_inverse_jacobians(q0, xi)
        q1 = q0 + xi
        eye = self._eye(q1.shape[:-1])
        return q1, -eye, eye

    def retract_with_jacobians(self, q, xi):
        if not self._inherits(Euclidean, self._FUSED):
            return super().retract_with_jacobians(q, xi)
        q1 = q + xi
        eye = self._eye(q1.shape[:-1])
        return q1, eye, eye

    def ambient_tangent(self, q, eta):
        return np.broadcast_to(eta, np.broadcast_shapes(np.shape(q), np.shape(eta)))

    def random_point(self, rng, batch_shape=()):
        return rng.standard_normal((*batch_shape, self.dim))

    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> np.ndarray:
        a = np.asarray(q, dtype=float)
        if a.ndim < 1 or a.shape[-1] != self.dim:
            raise ValueError(
                f"{name}: a point of Euclidean({self.dim}) has shape (..., {self.dim}), got {a.shape}"
            )
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name}: non-finite entries at indices {np.argwhere(~np.isfinite(a)).tolist()[:5]}")
        return a

    def to_coordinates(self, q):
        return np.asarray(q)

    def from_coordinates(self, c):
        return self.check_point(c)

    def _key(self) -> tuple:
        return ("Euclidean", self.dim)
