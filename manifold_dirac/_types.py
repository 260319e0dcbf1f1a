"""Documented type aliases for the shapes and functions that recur in signatures.

Every array is ``float64``. ``n`` is the dimension of the configuration
manifold ``Q`` (``Manifold.dim``), ``m`` the number of constraint rows,
``r`` the number of holonomic constraints. Where an argument may carry
leading batch axes ``(*batch, ...)`` its alias says so (``PointBatch``,
``VectorBatch``); elsewhere arrays are for one point (a batch is
``jax.vmap`` outside).

Aliases, not new types: a type checker sees ``jax.Array`` (an array the
library returns), ``ArrayLike`` (an array the library accepts: numpy, JAX,
a Python number, nested lists), or the union a point is; the names say which space an
argument lives in and the docstrings give the shapes.

``Any`` appears here in ``Params`` (the system's parameters are an
arbitrary pytree chosen by the user, and the library only passes it on)
and in ``PyTree`` (the run machinery's states and records, of many shapes).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias, Union

import jax
import jax.typing
import numpy as np

__all__ = [
    "ArrayLike",
    "ArrayTree",
    "Constraint",
    "Covector",
    "Force",
    "Holonomic",
    "Lagrangian",
    "Matrix",
    "Params",
    "Partials",
    "Point",
    "PointBatch",
    "PyTree",
    "Scalar",
    "Vector",
    "VectorBatch",
]

ArrayLike: TypeAlias = Union[jax.typing.ArrayLike, Sequence["ArrayLike"]]
"""An array as a user gives it: a ``jax.Array``, a numpy array, a Python or
numpy number, or (nested) lists and tuples of them -- what ``np.asarray``
turns into a float array."""

Point: TypeAlias = Union[jax.Array, np.ndarray, tuple["Point", ...]]
"""A point of ``Q``: an array (a vector ``(n,)``, a matrix ``(d, d)`` on a
matrix group, a unit vector ``(d + 1,)`` on a sphere), or on a product a
tuple of points, one per factor (a pytree)."""

ArrayTree: TypeAlias = Union[jax.Array, np.ndarray, tuple["ArrayTree", ...], list["ArrayTree"],
                             dict[str, "ArrayTree"]]
"""A pytree of arrays: an array, or tuples, lists and string-keyed dicts of them
(a point with its Jacobians, a table of computed values)."""

PointBatch: TypeAlias = Point
"""A point with leading batch axes: arrays ``(*batch, *point_shape)`` (on a
product, a tuple of them with one common ``batch``); ``batch = ()`` is one point."""

Vector: TypeAlias = jax.Array
"""A tangent vector in frame coordinates, shape ``(n,)`` (``xi``, ``v``)."""

VectorBatch: TypeAlias = jax.Array
"""Tangent vectors in frame coordinates with leading batch axes, shape ``(*batch, n)``."""

Covector: TypeAlias = jax.Array
"""A covector in frame coordinates, shape ``(n,)`` (``p``, ``D1 L_d``, a force)."""

Matrix: TypeAlias = jax.Array
"""A matrix in frame coordinates, shape ``(rows, n)`` or ``(n, n)`` (a Jacobian, ``A(q)``)."""

Scalar: TypeAlias = Union[float, jax.Array]
"""A real scalar: a Python float (or int) or a 0-d array, possibly traced (``h``, ``t``)."""

Params: TypeAlias = Any
"""The system's parameters: any pytree of float64 leaves (``None`` for none).

``Any`` on purpose: the structure is the user's (a dict, a tuple, an array)
and the library passes it on to the user's functions unchanged."""

PyTree: TypeAlias = Any
"""A pytree of arrays whose leaves share their leading axes (a batch of
points, a :class:`~manifold_dirac._mechanics.step.State`, a step record).

``Any`` for now: the run machinery's states and records have many shapes."""

Lagrangian: TypeAlias = Union[Callable[[Point, Vector], ArrayLike],
                              Callable[[Point, Vector, Params], ArrayLike]]
"""``L(q, v) -> ()`` (``L(q, v, params)`` with parameters): a point, a velocity
``(n,)`` in frame coordinates, a scalar back; written with ``jax.numpy``."""

Constraint: TypeAlias = Union[Callable[[Point], ArrayLike], Callable[[Point, Params], ArrayLike]]
"""``A(q) -> (m, n)`` (``A(q, params)``): constraint one-forms in frame
coordinates; ``Delta_Q(q) = ker A(q)``."""

Force: TypeAlias = Union[Callable[[Scalar, Point, Vector], ArrayLike],
                         Callable[[Scalar, Point, Vector, Params], ArrayLike]]
"""``F(t, q, v) -> (n,)`` (``F(t, q, v, params)``): an external force, a
covector in frame coordinates."""

Holonomic: TypeAlias = Union[Callable[[Point], ArrayLike], Callable[[Point, Params], ArrayLike]]
"""``g(q) -> (r,)`` (``g(q, params)``): holonomic constraints ``g(q) = 0``."""

Partials: TypeAlias = Union[Callable[[Point, Vector], tuple[ArrayLike, ArrayLike]],
                            Callable[[Point, Vector, Params], tuple[ArrayLike, ArrayLike]]]
"""``(q, v) -> (dL/dq, dL/dv)``, both ``(n,)`` in frame coordinates (with
``params`` as the last argument when the system has parameters)."""
