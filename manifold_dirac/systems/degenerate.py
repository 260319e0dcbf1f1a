"""A Lagrangian linear in the velocities: the Lotka--Volterra model.

``L = theta(q) . v - H(q)`` with ``theta = (ln(q2)/q1, 0)`` and
``H = q1 - ln q1 + q2 - ln q2`` (Kraus, arXiv 1708.07356): the motion lives on
``Q`` while the discrete map lives on ``T*Q``. The midpoint rule is stable;
the rectangle rules give singular step equations and the trapezoid rule
excites parasitic modes (``docs/schemes.md``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .._manifolds import Euclidean
from .._mechanics.system import LagrangeDiracSystem

__all__ = ["LOTKA_VOLTERRA_INITIAL", "lotka_volterra", "lotka_volterra_invariant"]

LOTKA_VOLTERRA_INITIAL = (np.array([1.0, 2.0]), np.array([np.log(2.0), 0.0]))
"""``(q0, p0)`` with ``p0 = theta(q0)``, the primary constraint ``p = dL/dv``."""


def lotka_volterra_invariant(q):
    """``H(q) = q1 - ln q1 + q2 - ln q2``, conserved by the flow (numpy, over leading axes).

    Parameters
    ----------
    q : array-like, shape=[..., 2]
        Positive populations.

    Returns
    -------
    numpy.ndarray, shape=[...]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> float(md.systems.lotka_volterra_invariant(np.array([1.0, 1.0])))
    2.0
    """
    q = np.asarray(q)
    return q[..., 0] - np.log(q[..., 0]) + q[..., 1] - np.log(q[..., 1])


def lotka_volterra() -> LagrangeDiracSystem:
    """The Lotka--Volterra Lagrangian on ``R^2`` (automatic partials; integrate with ``p0``).

    Returns
    -------
    LagrangeDiracSystem
        On ``Euclidean(2)``, degenerate (linear in ``v``): start it from
        :data:`LOTKA_VOLTERRA_INITIAL` with the midpoint rule.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> lv = md.systems.lotka_volterra()
    >>> lv.Q
    Euclidean(2)
    """

    def L(q, v):
        H = q[0] - jnp.log(q[0]) + q[1] - jnp.log(q[1])
        return jnp.log(q[1]) / q[0] * v[0] - H

    return LagrangeDiracSystem(Euclidean(2), L, name="lotka_volterra")
