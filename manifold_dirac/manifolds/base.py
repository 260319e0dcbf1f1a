"""The configuration-manifold abstraction, on JAX.

Conventions (``docs/manifolds.md`` has the long form):

* a **point** is an array in the manifold's natural representation,
  ``(*batch, *point_shape)``; a product manifold's point is a tuple of its
  factors' points (a pytree), so ``jax.tree`` utilities, ``vmap`` and ``scan``
  handle every manifold alike;
* a **tangent vector** or **covector** is an array ``(*batch, dim)`` of
  coordinates in a fixed local frame (the left trivialization on a Lie group,
  the identity on ``Euclidean``, the factors' frames concatenated on a
  product);
* a **retraction** ``R_q : R^dim -> Q`` with ``R_q(0) = q``, ``dR_q(0) = id``
  (frame coordinates) is an object (:class:`Retraction`) the manifold holds;
  its inverse ``R_q^{-1}`` is the chart centred at ``q``;
* the **Jacobians** of both maps in frame coordinates, where the derivative of
  a function of ``q`` along ``eta`` means ``d/de f(R_q(e eta))`` at ``e = 0``.

Every primitive is written with ``jax.numpy`` for leading batch axes
(``...``), so it runs eagerly on batches, under ``jit`` and under ``vmap``
alike, and is differentiable. Small-angle branches evaluate both sides at
safe arguments before selecting, so that neither value nor derivative is
ever NaN (the double-``where``).
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import RetractionDomainError

__all__ = [
    "Chart", "Manifold", "Point", "Retraction", "RetractionDomainError", "register_retraction", "resolve_retraction",
    "tree_where",
]

Point = Any
"""A point: an array ``(*batch, *point_shape)`` or, on a product, a tuple of points."""


def tree_where(cond: Any, a: Point, b: Point) -> Point:
    """``where(cond, a, b)`` leaf by leaf, ``cond`` broadcast over trailing axes."""

    def pick(x, y):
        c = jnp.reshape(cond, jnp.shape(cond) + (1,) * (jnp.ndim(x) - jnp.ndim(cond)))
        return jnp.where(c, x, y)

    return jax.tree.map(pick, a, b)


class Retraction(abc.ABC):
    """A retraction of one kind of manifold: ``R_q``, its inverse and their Jacobians.

    A retraction is a small stateless object; a manifold holds one (chosen by
    name from its class's registry) and delegates to it. A subclass for a Lie
    group implements ``tau``, ``tau_inv`` and three Jacobians
    (:class:`~manifold_dirac.manifolds.lie_group.GroupRetraction`); a
    retraction of another manifold implements the four methods below.

    Attributes
    ----------
    name : str
        The registry name (``"exp"``, ``"cayley"``, ...).
    symmetric : bool
        Whether ``R_{q1}^{-1}(q0) = -R_{q0}^{-1}(q1)`` in the frames (for a
        Lie group: ``tau(-xi) = tau(xi)^{-1}``). The midpoint and trapezoid
        rules are second order and self-adjoint only with a symmetric
        retraction; the declared order of an integrator honours this.
    """

    name: ClassVar[str] = ""
    symmetric: ClassVar[bool] = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


def register_retraction(*manifolds: type[Manifold]):
    """Class decorator: make a :class:`Retraction` available by name on ``manifolds``.

    Examples
    --------
    >>> @register_retraction(SE2)                      # doctest: +SKIP
    ... class So2xR2(GroupRetraction):
    ...     name = "so2xr2"
    ...     symmetric = False
    ...     ...
    >>> SE2(retraction="so2xr2")                       # doctest: +SKIP
    """

    def deco(cls: type[Retraction]) -> type[Retraction]:
        if not (isinstance(cls, type) and issubclass(cls, Retraction)) or not cls.name:
            raise TypeError("register_retraction: decorate a Retraction subclass with a non-empty `name`")
        for M in manifolds:
            M.retraction_registry()[cls.name] = cls
        return cls

    return deco


def resolve_retraction(M: type[Manifold], retraction: Any) -> Retraction:
    reg = M.retraction_registry()
    if isinstance(retraction, Retraction):
        if type(retraction) not in reg.values():
            raise ValueError(
                f"{M.__name__}: retraction {retraction!r} is not registered for {M.__name__}; "
                "decorate its class with @register_retraction(" + M.__name__ + ")"
            )
        return retraction
    if isinstance(retraction, str) and retraction in reg:
        return reg[retraction]()
    raise ValueError(
        f"{M.__name__}: unknown retraction {retraction!r}; valid retractions are "
        + ", ".join(repr(k) for k in reg)
        + ". Add one with a GroupRetraction subclass decorated by @register_retraction("
        + M.__name__
        + ") (docs/adding-a-manifold.md)."
    )


class Chart:
    """Local coordinates centred at ``q``: ``phi_q = R_q^{-1}``, ``phi_q^{-1} = R_q``.

    Parameters
    ----------
    manifold : Manifold
    center : point
    """

    def __init__(self, manifold: Manifold, center: Any):
        self.manifold, self.center = manifold, center

    def to_local(self, q1: Any) -> jax.Array:
        """Coordinates ``R_q^{-1}(q1)``, ``(*batch, dim)``."""
        return self.manifold.inverse_retract(self.center, q1)

    def from_local(self, xi: Any) -> Any:
        """The point ``R_q(xi)``."""
        return self.manifold.retract(self.center, jnp.asarray(xi))


class Manifold(abc.ABC):
    """A configuration manifold with a retraction, its inverse and Jacobians.

    To add a manifold, subclass and implement the abstract primitives
    (``docs/adding-a-manifold.md`` walks through one file); then register it
    with the shared law tests.

    Attributes
    ----------
    dim : int
        Dimension (length of frame coordinates).
    point_shape : tuple of int
        Trailing shape of one point's array (``(3, 3)`` for SO(3); ``()`` for
        a product, whose points are tuples).
    retraction : Retraction
        The retraction in use.
    coordinate_names : tuple of str
        Names of the human coordinates of :meth:`to_coordinates`.
    """

    dim: int
    point_shape: tuple[int, ...]
    retraction: Retraction
    coordinate_names: tuple[str, ...] = ()

    # --------------------------------------------------------------- registry
    _registry: ClassVar[dict[str, type[Retraction]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._registry = dict(cls._registry)  # inherit the parent's retractions, extend privately

    @classmethod
    def retraction_registry(cls) -> dict[str, type[Retraction]]:
        """The retractions registered for this manifold class (name -> class)."""
        return cls._registry

    @classmethod
    def retraction_names(cls) -> tuple[str, ...]:
        """Names accepted by ``retraction=``."""
        return tuple(cls._registry)

    # ------------------------------------------------------------ retraction
    @abc.abstractmethod
    def retract(self, q: Point, xi: jax.Array) -> Point:
        """``R_q(xi)``: ``q (*batch, *point_shape)``, ``xi (*batch, dim)`` -> point."""

    @abc.abstractmethod
    def inverse_retract(self, q0: Point, q1: Point) -> jax.Array:
        """``xi = R_{q0}^{-1}(q1)``, ``(*batch, dim)``.

        Outside the inverse's domain the value is unspecified (finite where
        possible); :meth:`in_domain` says where it is valid. Eager callers who
        want an error use :meth:`checked_inverse_retract`.
        """

    @abc.abstractmethod
    def retract_with_inverse_jacobians(self, q0: Point, xi: jax.Array) -> tuple[Point, jax.Array, jax.Array]:
        """``(q1, J0, J1)``: ``q1 = R_{q0}(xi)`` and the Jacobians of ``R_{q0}^{-1}(q1)``.

        ``J0 = dxi/dq0`` and ``J1 = dxi/dq1`` in frame coordinates (for a
        perturbation ``q0 -> R_{q0}(e eta)``, ``dxi = J0 eta``), each
        ``(*batch, dim, dim)``: what a Newton iteration on ``xi`` needs.
        """

    @abc.abstractmethod
    def retract_with_jacobians(self, q: Point, xi: jax.Array) -> tuple[Point, jax.Array, jax.Array]:
        """``(q1, J_q, J_xi)`` with ``q1 = R_q(xi)``, Jacobians in the frame at ``q1``.

        For ``q -> R_q(e eta)``: ``R_{q1}^{-1}(R_{R_q(e eta)}(xi)) = e J_q eta + O(e^2)``;
        for ``xi -> xi + e d``: ``R_{q1}^{-1}(R_q(xi + e d)) = e J_xi d + O(e^2)``.
        What a quadrature node on the retraction curve needs.
        """

    @abc.abstractmethod
    def in_domain(self, xi: jax.Array) -> jax.Array:
        """Whether ``xi (*batch, dim)`` lies in the retraction's domain of injectivity.

        Returns a boolean ``(*batch,)``: a step whose chart coordinate leaves
        it (``|xi| >= pi`` for ``exp`` on SO(3)) is refused by the integrator,
        because the recorded velocity would be aliased.
        """

    # ---------------------------------------------------------- derivatives
    @abc.abstractmethod
    def ambient_tangent(self, q: Point, eta: jax.Array) -> Point:
        """The tangent vector ``d/de R_q(e eta)|_{e=0}`` in the ambient representation.

        ``q + e * ambient_tangent(q, eta)`` agrees with ``R_q(e eta)`` to first
        order, which is all a first derivative along the retraction needs: the
        partial ``dL/dq`` of a Lagrangian is taken by autodiff along this
        straight line, never through ``exp``/``log``.
        """

    # ---------------------------------------------------- points and checks
    @abc.abstractmethod
    def default_point(self) -> Point:
        """A fixed point of the manifold (the identity, the origin, the north pole)."""

    @abc.abstractmethod
    def check_point(self, q: Any, atol: float = 1e-9, name: str = "q") -> Point:
        """Validate a point (eagerly, on concrete values) and return it as float64 arrays.

        Raises
        ------
        ValueError
            If ``q`` has the wrong shape, a non-finite entry, or is off the
            manifold by more than ``atol``; the message names the manifold,
            the argument, the batch index and by how much.
        """

    @abc.abstractmethod
    def random_point(self, rng: np.random.Generator, batch_shape: tuple[int, ...] = ()) -> Point:
        """A random point (seeded through ``rng``), shape ``(*batch_shape, *point_shape)``."""

    @abc.abstractmethod
    def to_coordinates(self, q: Point) -> jax.Array:
        """Human coordinates of ``q`` (named by ``coordinate_names``), ``(*batch, k)``."""

    @abc.abstractmethod
    def from_coordinates(self, c: Any) -> Point:
        """The point with human coordinates ``c`` ``(*batch, k)``."""

    # --------------------------------------------------------------- shared
    def first_order_curve(self, q: Point, eta: jax.Array) -> Point:
        """``q + ambient_tangent(q, eta)``: ``R_q(eta)`` to first order in ``eta``."""
        return jax.tree.map(jnp.add, q, self.ambient_tangent(q, eta))

    def checked_inverse_retract(self, q0: Point, q1: Point) -> jax.Array:
        """:meth:`inverse_retract`, raising :class:`RetractionDomainError` outside the domain (eager)."""
        xi = self.inverse_retract(q0, q1)
        ok = np.asarray(self.in_domain(xi)) & np.all(np.isfinite(np.asarray(xi)), axis=-1)
        if not np.all(ok):
            idx = np.argwhere(~ok)[0].tolist() if np.ndim(ok) else []
            raise RetractionDomainError(
                f"{self!r}: q1 is outside the domain of the inverse retraction "
                f"{self.retraction.name!r} at q0 (batch index {idx})"
            )
        return xi

    def chart(self, q: Point) -> Chart:
        """The chart centred at ``q``."""
        return Chart(self, q)

    def batch_shape(self, q: Point) -> tuple[int, ...]:
        """The leading batch shape of a point."""
        return tuple(jnp.shape(q)[: jnp.ndim(q) - len(self.point_shape)])

    def broadcast_point(self, q: Point, batch_shape: tuple[int, ...]) -> Point:
        """Broadcast a point to ``batch_shape``."""
        return jnp.broadcast_to(q, (*batch_shape, *self.point_shape))

    def distance_proxy(self, q0: Point, q1: Point) -> jax.Array:
        """``|R_{q0}^{-1}(q1)|``, a distance-like error measure, ``(*batch,)``."""
        return jnp.linalg.norm(self.inverse_retract(q0, q1), axis=-1)

    def random_tangent(
        self, rng: np.random.Generator, batch_shape: tuple[int, ...] = (), scale: float = 1.0
    ) -> jax.Array:
        """A random tangent vector ``scale * N(0, I)``, ``(*batch_shape, dim)``."""
        return jnp.asarray(scale * rng.standard_normal((*batch_shape, self.dim)))

    def sample_tangent(self, rng: np.random.Generator, batch_shape: tuple[int, ...], regime: str) -> jax.Array:
        """Tangent vectors for the law tests in a named regime.

        Parameters
        ----------
        regime : {"near_zero", "generic", "near_singular"}
            ``near_zero`` of norm ~1e-8, ``generic`` of norm ~1 inside the
            domain, ``near_singular`` close to the domain's edge (the manifold
            decides; by default the same as ``generic``).
        """
        if regime == "near_zero":
            return self.random_tangent(rng, batch_shape, 1e-8)
        if regime in ("generic", "near_singular"):
            return self.random_tangent(rng, batch_shape, 0.5)
        raise ValueError(f"unknown regime {regime!r}; valid: 'near_zero', 'generic', 'near_singular'")

    # ------------------------------------------------------------- identity
    def __repr__(self) -> str:
        return f"{type(self).__name__}(retraction={self.retraction.name!r})"

    def _key(self) -> tuple:
        """What makes two instances equal (override when there is more)."""
        return (type(self).__name__, self.dim, type(self.retraction))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Manifold) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())
