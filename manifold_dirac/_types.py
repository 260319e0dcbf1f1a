"""Documented type aliases for the shapes that recur in signatures.

Every array is ``float64`` and unbatched where these appear (a batch is
``jax.vmap`` outside). ``n`` is the dimension of the configuration manifold
``Q`` (``Manifold.dim``), ``m`` the number of constraint rows.

Aliases, not new types: a type checker sees ``jax.Array`` (or ``Any`` for
a point); the names say which space an argument lives in.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import jax

__all__ = ["Covector", "Matrix", "Params", "Point", "PyTree", "Scalar", "Vector"]

Point: TypeAlias = Any
"""A point of ``Q``: an array (a vector ``(n,)``, a matrix ``(d, d)`` on a
matrix group), or a tuple of points on a product (a pytree)."""

Vector: TypeAlias = jax.Array
"""A tangent vector in frame coordinates, shape ``(n,)`` (``xi``, ``v``)."""

Covector: TypeAlias = jax.Array
"""A covector in frame coordinates, shape ``(n,)`` (``p``, ``D1 L_d``, a force)."""

Matrix: TypeAlias = jax.Array
"""A matrix in frame coordinates, shape ``(rows, n)`` or ``(n, n)`` (a Jacobian, ``A(q)``)."""

Scalar: TypeAlias = Any
"""A scalar: a Python float or a 0-d array, possibly traced (``h``, ``t``)."""

Params: TypeAlias = Any
"""The system's parameters: any pytree (``None`` for none)."""

PyTree: TypeAlias = Any
"""A pytree of arrays whose leaves share their leading axes (a batch of
points, a :class:`~manifold_dirac._mechanics.step.State`, a step record)."""
