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

Validation of the primitives' arguments (what is checked where):

* **shapes, always.** Every primitive listed in ``Manifold._validated``
  (``retract``, ``inverse_retract``, the two fused Jacobian methods,
  ``in_domain``, ``ambient_tangent``, ``to_coordinates``,
  ``from_coordinates`` (whose shapes it checks itself); on a Lie group also
  ``exp``, ``log``, ``exp_right_jacobian(_inv)``, ``exp_in_domain``) checks the trailing
  shape of each argument -- a point ``(..., *point_shape)`` (on a product a
  tuple with one point per factor), a tangent vector ``(..., dim)`` -- and
  that the batch shapes broadcast, raising a ``ValueError`` that names the
  manifold, the method, the argument, the shape expected and the shape
  given. Shapes are static in JAX, so the check runs in every call, eager or
  traced (``jit``, ``vmap``, ``grad``), and adds no operation to a compiled
  program. It is installed by :meth:`Manifold.__init_subclass__` around the
  methods a subclass defines, so a new manifold gets it too.
* **values, in eager calls only.** Where membership is cheap to test, a
  point argument with concrete values (not a JAX tracer) is checked too:
  on SO(3) and SE(2) (``log``, ``retract``, ``inverse_retract``, the fused
  Jacobian methods) and on ``Sphere2``, with the loose tolerance
  :data:`VALUE_ATOL` (a guard against passing the wrong thing, not a
  precision test: :meth:`Manifold.check_point` is that). Inside compiled
  code nothing is checked per call: the entry points validate once
  (``integrate`` and ``Integrator.initial_state`` call
  :meth:`Manifold.check_point` on ``q0``), and each step's chart coordinate
  is tested with :meth:`Manifold.in_domain`.
* **domains, in eager calls only.** Every validated primitive (but
  ``in_domain``) raises :class:`RetractionDomainError` -- naming the
  primitive, the batch index, the argument and the domain -- for an
  argument with a non-finite entry, for an argument outside the domain the
  manifold declares (:meth:`Manifold._domain_violations`: the Cayley
  inverse at rotations by more than ``pi - 1e-4``, the inverse Jacobians of
  ``exp`` at a rotation part of norm ``2 pi - 1e-6`` or more, the sphere's
  logarithm within ``1e-8`` of the antipode), and for a non-finite result
  from finite arguments (an overflow, ``|xi| > 1e154``). So an eager call
  returns finite values or raises; it never returns inf or NaN. Traced
  calls are not checked (no Python exception on a tracer): inside a run a
  step outside the domain is the step's status ``DOMAIN``
  (:class:`~manifold_dirac._errors.StepDomainError`).
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from .._registry import Registry
from .._errors import RetractionDomainError
from .._types import ArrayLike, Point

__all__ = [
    "VALUE_ATOL",
    "Manifold",
    "Point",
    "Retraction",
    "RetractionDomainError",
    "concrete_array",
    "first_member",
    "register_retraction",
    "resolve_retraction",
    "shape_of",
    "tree_where",
]

VALUE_ATOL = 1e-6
"""Tolerance of the eager membership checks of the primitives' point arguments (module docstring)."""


def shape_of(x: object) -> tuple[int, ...] | None:
    """The shape of an array-like (arrays, tracers, numbers, regular nested lists), None otherwise.

    Never converts ``x`` (so it is safe on tracers inside a list).
    """
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape)
    if isinstance(x, (bool, int, float, complex, np.number)):
        return ()
    if isinstance(x, (list, tuple)):
        inner = [shape_of(e) for e in x]
        if any(s is None for s in inner) or len(set(inner)) > 1:
            return None
        return (len(x),) + (inner[0] if inner else ())
    return None


def describe(x: object) -> str:
    """``"shape (3, 4)"`` for an array-like, else the type's name (for messages)."""
    s = shape_of(x)
    return f"shape {s}" if s is not None else type(x).__name__


def concrete_array(x: object) -> np.ndarray | None:
    """``x`` as a float64 numpy array when its values are known (an eager call), else None.

    None for a JAX tracer (inside ``jit``, ``vmap``, ``grad``: values are not
    known there) and for anything that is not a real array.
    """
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(x)):
        return None
    try:
        a = np.asarray(x)
        return None if a.dtype.kind == "c" else np.asarray(a, dtype=float)  # complex: not a real array
    except (TypeError, ValueError):
        return None


def first_index(mask: np.ndarray) -> list[int]:
    """The batch index of the first True of ``mask`` (``[]`` for a 0-d mask)."""
    return [int(i) for i in np.argwhere(mask)[0]] if np.ndim(mask) else []


def _validating(fn: Callable, method: str, roles: tuple[tuple[str, str], ...]) -> Callable:
    """Wrap a primitive so that its arguments are validated first (:meth:`Manifold._validate`)."""
    if getattr(fn, "_validates_arguments", False):
        return fn

    @functools.wraps(fn)
    def checked(self, *args, **kwargs):
        given = self._validate(method, roles, args, kwargs)
        arrays = self._check_domain(method, roles, given)
        out = fn(self, *args, **kwargs)
        if arrays is not None:
            self._check_result(method, arrays, out)
        return out

    checked._validates_arguments = True  # type: ignore[attr-defined]
    return checked


def first_member(a: ArrayLike, bad: np.ndarray, k: int = 0) -> str:
    """The member of ``a`` ``(*batch_a, *trailing)`` (``k`` trailing axes) at the first True of ``bad``, as text.

    ``bad`` ``(*batch)`` has the broadcast batch shape; ``a``'s batch axes
    broadcast to it (size-1 axes read index 0). For messages.
    """
    a = np.asarray(a)
    idx = first_index(bad)
    nb = a.ndim - k
    idx = [i if n > 1 else 0 for i, n in zip(idx[len(idx) - nb:] if nb else [], a.shape[:nb])]
    x = a[tuple(idx)]
    return np.array2string(x, precision=10, separator=", ").replace("\n", "") if np.ndim(x) else f"{float(x):.10g}"


def _member(a: np.ndarray, bad: np.ndarray, role: str, M: Manifold) -> str:
    return first_member(a, bad, 1 if role in ("tangent", "coordinates") else len(M.point_shape))


def tree_where(cond: ArrayLike, a: Point, b: Point) -> Point:
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
    (:class:`~manifold_dirac._manifolds.lie_group.GroupRetraction`); a
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

    Examples
    --------
    A manifold holds one, chosen by name:

    >>> import manifold_dirac as md
    >>> r = md.SO3("cayley").retraction
    >>> isinstance(r, md.Retraction), r.name, r.symmetric
    (True, 'cayley', True)
    >>> md.SO3.retraction_names()
    ('exp', 'cayley')
    """

    name: ClassVar[str] = ""
    symmetric: ClassVar[bool] = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


def _check_retraction(name: str, cls: object) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Retraction)) or not getattr(cls, "name", ""):
        raise TypeError("register_retraction: decorate a Retraction subclass with a non-empty `name`")


def register_retraction(*manifolds: type[Manifold], overwrite: bool = False):
    """Class decorator: make a :class:`Retraction` available by name on ``manifolds``.

    The library's registry convention (:class:`~manifold_dirac._registry.Registry`):
    another class under a name already registered on that manifold class is a
    ``ValueError`` unless ``overwrite=True``; a name inherited from a parent
    class (``"exp"`` of :class:`~manifold_dirac._manifolds.lie_group.MatrixLieGroup`)
    may be replaced by a subclass's own.

    Parameters
    ----------
    *manifolds : Manifold subclass
        The manifold classes (not instances) that accept the retraction's
        ``name`` (as ``retraction=name``); their subclasses inherit it.
    overwrite : bool
        Replace another class registered under the same name on one of them.

    Returns
    -------
    callable
        The decorator, which returns the class unchanged.

    Raises
    ------
    TypeError
        For a decorated object that is not a :class:`Retraction` subclass
        with a ``name``.
    ValueError
        For a name taken by another class on one of ``manifolds`` (without
        ``overwrite``).

    Examples
    --------
    A new name for a retraction on a group of your own (here a copy of the
    Cayley retraction of SO(3), registered on a subclass so that ``SO3`` itself
    is unchanged):

    >>> import manifold_dirac as md
    >>> class MySO3(md.SO3):
    ...     pass
    >>> @md.register_retraction(MySO3)
    ... class MyCayley(type(md.SO3("cayley").retraction)):
    ...     name = "my_cayley"
    >>> MySO3("my_cayley").retraction.name
    'my_cayley'
    >>> "my_cayley" in md.SO3.retraction_names()
    False
    """

    def deco(cls: type[Retraction]) -> type[Retraction]:
        _check_retraction("", cls)
        for M in manifolds:
            M.retraction_registry().register(cls.name, cls, overwrite=overwrite)
        return cls

    return deco


def resolve_retraction(M: type[Manifold], retraction: str | Retraction) -> Retraction:
    """The retraction object a manifold class accepts for ``retraction`` (a name or an instance).

    What a manifold's ``__init__`` calls (``self.retraction = resolve_retraction(type(self), retraction)``).

    Parameters
    ----------
    M : type
        The manifold class whose registry is searched.
    retraction : str or Retraction
        A registered name, or an instance of a class registered for ``M``.

    Returns
    -------
    Retraction

    Raises
    ------
    ValueError
        For an unknown name, listing the valid ones and how to add one; for
        an instance whose class is not registered for ``M``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> md.resolve_retraction(md.SE2, "cayley")
    SE2Cayley()
    >>> md.resolve_retraction(md.SE2, "no_such_retraction")
    Traceback (most recent call last):
        ...
    ValueError: ...
    """
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
    raise ValueError(f"{M.__name__}: {reg.unknown(retraction)}")


_RETIRED_ATTRIBUTES = {
    "symmetric_retraction": "symmetry is declared per retraction, `symmetric = True/False` on its "
    "Retraction class, and read as `manifold.retraction.symmetric`",
    "_tau_parts": "a retraction of a group is a GroupRetraction class (tau, tau_inv, right_jacobian, "
    "right_jacobian_inv, left_jacobian_inv, in_domain) registered with @register_retraction",
}
"""Attributes of earlier versions that a manifold subclass may no longer define: name -> what replaces it."""


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

    Examples
    --------
    Every manifold of the library is one; a step moves in its frame coordinates:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> Q = md.Euclidean(2)
    >>> isinstance(Q, md.Manifold), Q.dim
    (True, 2)
    >>> q1 = Q.retract(np.zeros(2), np.array([1.0, 2.0]))            # R_q(xi)
    >>> np.asarray(Q.inverse_retract(np.zeros(2), q1))                 # R_q^{-1}(q1) = xi
    array([1., 2.])
    """

    dim: int
    point_shape: tuple[int, ...]
    retraction: Retraction
    coordinate_names: tuple[str, ...] = ()

    # --------------------------------------------------------------- registry
    _registry: ClassVar[Registry[type[Retraction]]] = Registry(
        "retraction", hint="add one: a Retraction subclass decorated by @register_retraction(<the manifold class>), "
        "docs/adding-a-manifold.md", check=_check_retraction)

    _validated: ClassVar[dict[str, tuple[tuple[str, str], ...]]] = {
        "retract": (("q", "point"), ("xi", "tangent")),
        "inverse_retract": (("q0", "point"), ("q1", "point")),
        "retract_with_inverse_jacobians": (("q0", "point"), ("xi", "tangent")),
        "retract_with_jacobians": (("q", "point"), ("xi", "tangent")),
        "in_domain": (("xi", "tangent"),),
        "ambient_tangent": (("q", "point_shape"), ("eta", "tangent")),
        "to_coordinates": (("q", "point"),),
        "from_coordinates": (("c", "coordinates"),),
    }
    """The primitives whose arguments are validated: method -> ((argument, role), ...).

    Roles: ``"point"`` (shape always, values in eager calls: :meth:`_check_values`),
    ``"point_shape"`` (shape only), ``"tangent"`` (frame coordinates ``(..., dim)``),
    ``"coordinates"`` (human coordinates: no shape check here, the method's own; finite in eager calls).
    """

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        for old in _RETIRED_ATTRIBUTES:
            if old in cls.__dict__:
                raise TypeError(
                    f"{cls.__name__}.{old}: {_RETIRED_ATTRIBUTES[old]} (a class attribute of that name "
                    "would be ignored; docs/adding-a-manifold.md, 'A new retraction')"
                )
        cls._registry = cls._registry.child(  # inherit the parent's retractions, extend privately
            hint=f"add one: a Retraction subclass decorated by @register_retraction({cls.__name__}), "
            "docs/adding-a-manifold.md")
        for method, roles in cls._validated.items():  # the shape checks of the module docstring
            if method in cls.__dict__ and callable(cls.__dict__[method]):
                setattr(cls, method, _validating(cls.__dict__[method], method, roles))

    @classmethod
    def retraction_registry(cls) -> Registry[type[Retraction]]:
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

        Eager calls raise :class:`RetractionDomainError` outside the
        inverse's domain (module docstring); traced calls return an
        unspecified value there. :meth:`checked_inverse_retract` also refuses
        a result outside the step domain :meth:`in_domain`.
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
    def check_point(self, q: object, atol: float = 1e-9, name: str = "q") -> Point:
        """Validate a point (eagerly, on concrete values) and return it as float64 arrays.

        Raises
        ------
        ValueError
            If ``q`` has the wrong shape, a non-finite entry, or is off the
            manifold by more than ``atol``; the message names the manifold,
            the argument, the batch index and by how much.
        """

    def _check_point_host(self, q: object, atol: float = 1e-9, name: str = "q") -> Point:
        """:meth:`check_point`, returning numpy arrays where the manifold can (no transfer to the device:
        for a caller that passes the point straight to a compiled program, which takes numpy)."""
        return self.check_point(q, atol, name)

    @abc.abstractmethod
    def random_point(self, rng: np.random.Generator, batch_shape: tuple[int, ...] = ()) -> Point:
        """A random point (seeded through ``rng``), shape ``(*batch_shape, *point_shape)``."""

    @abc.abstractmethod
    def to_coordinates(self, q: Point) -> jax.Array:
        """Human coordinates of ``q`` (named by ``coordinate_names``), ``(*batch, k)``."""

    @abc.abstractmethod
    def from_coordinates(self, c: ArrayLike) -> Point:
        """The point with human coordinates ``c`` ``(*batch, k)``."""

    # ----------------------------------------------------- argument checks
    def _validate(self, method: str, roles: tuple[tuple[str, str], ...], args: tuple, kwargs: dict) -> dict:
        """Check the arguments of ``method`` (module docstring): shapes always, values when concrete."""
        given = {name: a for (name, _), a in zip(roles, args)}
        given.update((name, kwargs[name]) for name, _ in roles if name in kwargs)
        where = f"{self!r}.{method}"
        batches = []
        for name, role in roles:
            if name not in given:
                continue
            a = given[name]
            if role == "coordinates":
                continue
            if role == "tangent":
                batches.append((name, self._tangent_batch(where, name, a)))
            else:
                batches.append((name, self._point_batch(where, name, a)))
        if len(batches) > 1:
            try:
                np.broadcast_shapes(*(b for _, b in batches))
            except ValueError:
                raise ValueError(
                    f"{where}: the batch shapes of "
                    + " and ".join(f"{name} {b}" for name, b in batches)
                    + " do not broadcast; give the arguments the same leading axes (or size 1)"
                ) from None
        for name, role in roles:
            if role == "point" and name in given:
                self._check_values(where, name, given[name])
        return given

    def _tangent_batch(self, where: str, name: str, xi: object) -> tuple[int, ...]:
        """The batch shape of frame coordinates ``xi`` ``(..., dim)``; ValueError for another shape."""
        s = shape_of(xi)
        if s is None or len(s) < 1 or s[-1] != self.dim:
            raise ValueError(
                f"{where}: {name} must be a tangent vector in frame coordinates, shape (..., {self.dim})"
                f"{self._tangent_layout()}, got {describe(xi)}"
            )
        return s[:-1]

    def _tangent_layout(self) -> str:
        """What the frame coordinates are made of, for messages (a product lists its factors)."""
        return ""

    def _point_batch(self, where: str, name: str, q: object) -> tuple[int, ...]:
        """The batch shape of a point ``(..., *point_shape)``; ValueError for another shape."""
        s = shape_of(q)
        k = len(self.point_shape)
        if s is None or len(s) < k or tuple(s[len(s) - k:]) != tuple(self.point_shape):
            expected = ", ".join(["..."] + [str(d) for d in self.point_shape])
            raise ValueError(
                f"{where}: {name} must be a point, an array of shape ({expected}), got {describe(q)}"
            )
        return tuple(s[: len(s) - k])

    def _check_values(self, where: str, name: str, q: object) -> None:
        """Eager membership check of a point argument (a no-op here; the groups and ``Sphere2`` refine).

        Must do nothing when ``q`` is traced (:func:`concrete_array` is None)
        and skip batch members with non-finite entries.
        """

    # ------------------------------------------------------ domain checks
    def _member_finite(self, role: str, a: np.ndarray) -> np.ndarray:
        """Per batch member: every entry of the argument ``a`` (numpy leaves) is finite."""
        if role in ("tangent", "coordinates"):
            return np.all(np.isfinite(a), axis=-1) if np.ndim(a) else np.isfinite(a)
        k = len(self.point_shape)
        return np.all(np.isfinite(a), axis=tuple(range(-k, 0))) if k else np.isfinite(a)

    def _domain_violations(self, method: str, given: dict[str, np.ndarray]) -> list[tuple[np.ndarray, str]]:
        """Where concrete arguments of ``method`` lie outside its domain: ``[(bad (*batch,), why), ...]``.

        ``why`` completes "``<primitive>``: at batch index ``i``, ..." and names
        the domain. Empty by default (a primitive defined for every finite
        argument); the groups and the sphere refine it.
        """
        return []

    def _check_domain(self, method: str, roles: tuple[tuple[str, str], ...], given: dict) -> dict | None:
        """Eager calls: :class:`RetractionDomainError` for an argument outside ``method``'s domain.

        Two checks before the call, each naming the primitive, the batch
        index, the argument and the domain: a non-finite entry in an argument;
        an argument outside the domain the manifold declares
        (:meth:`_domain_violations`). After the call, :meth:`_check_result`
        refuses a non-finite result from finite arguments (an overflow).
        Nothing is checked when an argument is traced (inside ``jit``,
        ``vmap``, ``grad``): there the integrator's :meth:`in_domain` test and
        its step status report a step outside the domain. Returns the
        arguments as numpy arrays, ``{name: (role, array)}``, or None when
        nothing is checked.
        """
        if method == "in_domain" or given is None:
            return None
        arrays = {}
        for name, role in roles:
            if name in given:
                a = concrete_array(given[name]) if role in ("tangent", "coordinates") or self.point_shape else None
                if a is None:
                    return None
                arrays[name] = (role, a)
        where = f"{self!r}.{method}"
        for name, (role, a) in arrays.items():
            bad = ~self._member_finite(role, a)
            if np.any(bad):
                raise RetractionDomainError(
                    f"{where}: {name} has non-finite entries at batch index {first_index(bad)} ({name} = "
                    f"{_member(a, bad, role, self)}); the domain of {method} is finite "
                    f"{ {'tangent': 'tangent vectors', 'coordinates': 'coordinates'}.get(role, 'points') }"
                )
        for bad, why in self._domain_violations(method, {n: a for n, (_, a) in arrays.items()}):
            if np.any(bad):
                raise RetractionDomainError(f"{where}: at batch index {first_index(bad)}, {why}")
        return arrays

    def _check_result(self, method: str, arrays: dict[str, tuple[str, np.ndarray]], out: object) -> None:
        """Eager calls: :class:`RetractionDomainError` for a non-finite result from finite arguments."""
        leaves = jax.tree.leaves(out)
        if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
            return
        values = [np.asarray(leaf) for leaf in leaves]
        if all(x.dtype == bool or np.all(np.isfinite(x)) for x in values):
            return
        batch = np.broadcast_shapes(*(np.shape(self._member_finite(r, a)) for r, a in arrays.values())) \
            if arrays else ()
        bad = np.ones(batch, dtype=bool)
        for x in values:  # locate the member (for the message): try 2, 1, 0 trailing axes
            if x.dtype == bool or np.all(np.isfinite(x)):
                continue
            for k in (2, 1, 0):
                nb = x.ndim - k
                m = ~np.all(np.isfinite(x.reshape(x.shape[:nb] + (-1,))), axis=-1) if nb >= 0 else None
                try:
                    bad = np.broadcast_to(m, batch) if m is not None else bad
                    break
                except ValueError:
                    continue
            break
        args = ", ".join(f"{n} = {_member(a, bad, r, self)}" for n, (r, a) in arrays.items())
        raise RetractionDomainError(
            f"{self!r}.{method}: a non-finite result from finite arguments at batch index {first_index(bad)} "
            f"({args}): the arguments are outside the range where {method} is computed "
            "(an overflow, or a singular point of the map)"
        )

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

    def batch_shape(self, q: Point) -> tuple[int, ...]:
        """The leading batch shape of a point."""
        return tuple(jnp.shape(q)[: jnp.ndim(q) - len(self.point_shape)])

    def broadcast_point(self, q: Point, batch_shape: tuple[int, ...]) -> Point:
        """Broadcast a point to ``batch_shape``."""
        return jnp.broadcast_to(q, (*batch_shape, *self.point_shape))

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
