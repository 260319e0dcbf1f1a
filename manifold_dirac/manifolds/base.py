"""The configuration-manifold abstraction every other part is built on.

Conventions (``docs/manifolds.md`` has the long form):

* a **point** is an array in the manifold's natural representation with
  shape ``(*batch, *point_shape)`` (a product manifold uses a tuple of its
  factors' points);
* a **tangent vector** or **covector** is an array ``(*batch, dim)`` of
  coordinates in a fixed local frame (the left trivialization on a Lie group,
  the identity on ``Euclidean``, the concatenation of the factors' frames on a
  product);
* a **retraction** ``R_q : R^dim -> Q`` with ``R_q(0) = q`` and
  ``dR_q(0) = id`` (frame coordinates) and its inverse ``R_q^{-1}``;
* the **Jacobians** of both maps in frame coordinates, where the derivative of
  a function of ``q`` along ``eta`` means ``d/de f(R_q(e eta))`` at ``e = 0``.

Every operation accepts leading batch axes, with numpy broadcasting between
its arguments.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import RetractionDomainError

__all__ = ["Manifold", "Chart", "RetractionDomainError", "check_retraction_name"]

Point = Any
"""A point: an ndarray ``(*batch, *point_shape)`` or, on a product, a tuple."""


_INHERITS_CACHE: dict[tuple, bool] = {}


def check_retraction_name(name: str, valid: tuple[str, ...], where: str) -> str:
    """Return ``name`` if it is one of ``valid``, else raise a ``ValueError``.

    Parameters
    ----------
    name : str
        The requested retraction.
    valid : tuple of str
        The retractions the manifold offers.
    where : str
        The manifold's name, for the message.
    """
    if not isinstance(name, str) or name not in valid:
        raise ValueError(
            f"{where}: unknown retraction {name!r}; valid retractions are "
            + ", ".join(repr(v) for v in valid)
        )
    return name


@dataclass(frozen=True)
class Chart:
    """Local coordinates centred at a point ``q``: ``phi_q = R_q^{-1}``.

    Attributes
    ----------
    manifold : Manifold
        The manifold the chart lives on.
    center : point
        The point ``q`` at which ``to_local(q) = 0``.
    """

    manifold: "Manifold"
    center: Point

    def to_local(self, q1: Point) -> np.ndarray:
        """Coordinates ``R_q^{-1}(q1)``, shape ``(*batch, dim)``."""
        return self.manifold.inverse_retract(self.center, q1)

    def from_local(self, xi: np.ndarray) -> Point:
        """The point ``R_q(xi)`` with coordinates ``xi`` ``(*batch, dim)``."""
        return self.manifold.retract(self.center, xi)


class Manifold(abc.ABC):
    """A configuration manifold with a retraction, its inverse and Jacobians.

    To add a manifold, subclass and implement the abstract primitives below
    (``docs/adding-a-manifold.md`` walks through one file); then register it
    with :func:`manifold_dirac.testing.register_manifold` so that the shared
    law tests check it.

    Attributes
    ----------
    dim : int
        Dimension of the manifold (length of frame coordinates).
    point_shape : tuple of int
        Trailing shape of one point's array (``(3, 3)`` for SO(3)).
    retraction : str
        The chosen retraction, one of ``retractions``.
    retractions : tuple of str
        The retractions this manifold offers (class variable).
    coordinate_names : tuple of str
        Names of the human coordinates of :meth:`to_coordinates`.
    """

    dim: int
    point_shape: tuple[int, ...]
    retraction: str
    retractions: ClassVar[tuple[str, ...]] = ()
    coordinate_names: tuple[str, ...] = ()
    symmetric_retraction: bool = True
    """Whether ``R_{q1}^{-1}(q0) = -R_{q0}^{-1}(q1)`` (up to the frames):
    true for Euclidean and for Lie groups with ``tau(-xi) = tau(xi)^{-1}``.
    The midpoint and trapezoid rules are symmetric (second order) only then.
    """

    # ------------------------------------------------------------------ core
    @abc.abstractmethod
    def retract(self, q: Point, xi: np.ndarray) -> Point:
        """The retraction ``R_q(xi)``.

        Parameters
        ----------
        q : point, shape=[..., *point_shape]
        xi : array-like, shape=[..., dim]
            Tangent vector in frame coordinates at ``q``.

        Returns
        -------
        point, shape=[..., *point_shape]
        """

    @abc.abstractmethod
    def inverse_retract(self, q0: Point, q1: Point) -> np.ndarray:
        """The inverse retraction ``xi = R_{q0}^{-1}(q1)``.

        Raises :class:`RetractionDomainError` where ``q1`` is outside the
        domain of ``R_{q0}^{-1}``.

        Returns
        -------
        xi : ndarray, shape=[..., dim]
        """

    @abc.abstractmethod
    def inverse_retract_jacobians(self, q0: Point, q1: Point) -> tuple[np.ndarray, np.ndarray]:
        """Jacobians ``(J0, J1)`` of ``xi = R_{q0}^{-1}(q1)``.

        ``J0 = dxi/dq0`` and ``J1 = dxi/dq1`` in frame coordinates: for a
        perturbation ``q0 -> R_{q0}(e eta)``, ``dxi = J0 @ eta``.

        Returns
        -------
        J0, J1 : ndarray, shape=[..., dim, dim]
        """

    @abc.abstractmethod
    def retract_jacobians(self, q: Point, xi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Jacobians ``(J_q, J_xi)`` of ``q' = R_q(xi)``, in the frame at ``q'``.

        For ``q -> R_q(e eta)``: ``R_{q'}^{-1}(R_{R_q(e eta)}(xi)) = e J_q eta + O(e^2)``;
        for ``xi -> xi + e delta``: ``R_{q'}^{-1}(R_q(xi + e delta)) = e J_xi delta + O(e^2)``.

        Returns
        -------
        J_q, J_xi : ndarray, shape=[..., dim, dim]
        """

    @abc.abstractmethod
    def ambient_tangent(self, q: Point, eta: np.ndarray) -> Point:
        """The tangent vector ``d/de R_q(e eta)|_{e=0}`` in the ambient representation.

        ``q + e * ambient_tangent(q, eta)`` agrees with ``R_q(e eta)`` to first
        order; with ``e = 1j * 1e-30`` it is how the complex-step derivatives
        of a Lagrangian along the retraction are taken. Must accept complex
        ``eta`` and return an array shaped like ``q`` (tuple on a product).
        """

    @abc.abstractmethod
    def random_point(self, rng: np.random.Generator, batch_shape: tuple[int, ...] = ()) -> Point:
        """A random point (seeded through ``rng``), shape ``(*batch_shape, *point_shape)``."""

    @abc.abstractmethod
    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> Point:
        """Validate a point and return it as an array.

        Raises
        ------
        ValueError
            If ``q`` has the wrong shape, contains a non-finite value, or is
            off the manifold by more than ``atol``; the message says which
            and by how much.
        """

    @abc.abstractmethod
    def to_coordinates(self, q: Point) -> np.ndarray:
        """Human coordinates of ``q`` (named by ``coordinate_names``), ``(*batch, k)``."""

    @abc.abstractmethod
    def from_coordinates(self, c: Any) -> Point:
        """The point with human coordinates ``c`` ``(*batch, k)``."""

    # --------------------------------------------------------------- shared
    def inverse_retract_with_jacobians(self, q0: Point, q1: Point):
        """``(xi, J0, J1)`` together; override where they share work (Lie groups do)."""
        J0, J1 = self.inverse_retract_jacobians(q0, q1)
        return self.inverse_retract(q0, q1), J0, J1

    def retract_with_inverse_jacobians(self, q0: Point, xi: np.ndarray):
        """``(q1, J0, J1)`` with ``q1 = R_{q0}(xi)`` and the Jacobians of
        ``R_{q0}^{-1}(q1)`` -- what a Newton iteration on ``xi`` needs. Lie
        groups compute ``J0, J1`` from ``xi`` directly (no logarithm)."""
        q1 = self.retract(q0, xi)
        J0, J1 = self.inverse_retract_jacobians(q0, q1)
        return q1, J0, J1

    def retract_with_jacobians(self, q: Point, xi: np.ndarray):
        """``(q1, J_q, J_xi)`` with ``q1 = R_q(xi)`` and the Jacobians of
        :meth:`retract_jacobians` -- what a quadrature node on the retraction
        curve needs. Override where they share work (Lie groups do)."""
        J_q, J_xi = self.retract_jacobians(q, xi)
        return self.retract(q, xi), J_q, J_xi

    def _inherits(self, owner: type, names: tuple[str, ...]) -> bool:
        """Whether ``type(self)`` uses ``owner``'s own definitions of all ``names``.

        A fused fast path written for ``owner`` (one evaluation of shared
        coefficients instead of several) is only valid while a subclass has
        not replaced one of the primitives it fuses; the answer is cached
        per class.
        """
        cls = type(self)
        key = (cls, owner, names)
        hit = _INHERITS_CACHE.get(key)
        if hit is None:
            hit = all(getattr(cls, n, None) is getattr(owner, n, None) for n in names)
            _INHERITS_CACHE[key] = hit
        return hit

    def broadcast_point(self, q: Point, batch_shape: tuple[int, ...]) -> Point:
        """Broadcast a point to the batch shape ``batch_shape`` (read-only view)."""
        return np.broadcast_to(q, (*batch_shape, *self.point_shape))

    def stack_points(self, points: list) -> Point:
        """Stack points along a new leading axis (a tuple per factor on a product)."""
        return np.stack([np.asarray(p) for p in points])

    def index_point(self, q: Point, index: Any) -> Point:
        """Index the leading (batch or time) axes of a point."""
        return np.asarray(q)[index]

    def chart(self, q: Point) -> Chart:
        """The chart centred at ``q`` (``phi_q = R_q^{-1}``, ``phi_q^{-1} = R_q``)."""
        return Chart(self, q)

    def random_tangent(
        self,
        rng: np.random.Generator,
        batch_shape: tuple[int, ...] = (),
        scale: float = 1.0,
    ) -> np.ndarray:
        """A random tangent vector ``scale * N(0, I)``, shape ``(*batch_shape, dim)``."""
        return scale * rng.standard_normal((*batch_shape, self.dim))

    def sample_tangent(
        self, rng: np.random.Generator, batch_shape: tuple[int, ...], regime: str
    ) -> np.ndarray:
        """Tangent vectors for law tests in a named regime.

        Parameters
        ----------
        regime : {"near_zero", "generic", "near_singular"}
            ``near_zero`` is of norm ~1e-8, ``generic`` of norm ~1 (inside
            the retraction's domain), ``near_singular`` close to the edge of
            the inverse retraction's domain (the manifold decides; by default
            the same as generic).
        """
        if regime == "near_zero":
            return self.random_tangent(rng, batch_shape, 1e-8)
        if regime in ("generic", "near_singular"):
            return self.random_tangent(rng, batch_shape, 0.5)
        raise ValueError(f"unknown regime {regime!r}; valid: 'near_zero', 'generic', 'near_singular'")

    def batch_shape(self, q: Point) -> tuple[int, ...]:
        """The leading batch shape of a point."""
        return np.shape(q)[: np.ndim(q) - len(self.point_shape)]

    def distance_proxy(self, q0: Point, q1: Point) -> np.ndarray:
        """``|R_{q0}^{-1}(q1)|``, a distance-like error measure, shape ``(*batch,)``."""
        return np.linalg.norm(self.inverse_retract(q0, q1), axis=-1)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(retraction={self.retraction!r})"

    def _key(self) -> tuple:
        """What makes two instances equal (override when there is more)."""
        return (type(self).__name__, self.dim, self.retraction)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Manifold) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())
