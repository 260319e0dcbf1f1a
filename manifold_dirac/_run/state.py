"""The state of a run between steps, on the host: :class:`RunState`.

A batch is held with its batch axes flattened to one leading axis (the
compiled programs ``vmap`` over it); :attr:`RunState.q` and
:attr:`RunState.status` give them back in the run's batch shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from .._mechanics.step import State
from .._types import Point, PyTree, Vector


@dataclass
class RunState:
    """The state of a (batch of) trajectories between steps, on the host side.

    Attributes
    ----------
    k : int
        Step index.
    t0 : float
        Time at step 0 (``t_k = t0 + k h``).
    members : State
        The per-member state, batch axis flattened to one leading axis (or none).
    batch_shape : tuple of int
        The leading batch axes ``B`` of the run (``()`` for one trajectory).
    q_prev : point or None
        ``q_{k-1}`` (for the central velocity at ``q_k``).
    v_init : array or None
        The velocity recorded at step 0 (given ``v0``, or the Legendre inverse of ``p0``).
    v_legendre : array or None
        For a start from ``p0`` alone: the velocity ``v in Delta(q0)`` with
        ``dL/dv(q0, v) - p0 in Delta°(q0)`` (None where it is not unique).

    Examples
    --------
    The state at step 0 of a pendulum, then after two steps:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> integ = md.Integrator(md.systems.pendulum(), h=0.05)
    >>> state = integ.initial_state(np.array([0.5]), v0=np.array([0.0]))
    >>> state.k, state.batch_shape, state.status
    (0, (), array(0, dtype=int32))
    >>> state, _ = integ.step(state)
    >>> state, _ = integ.step(state)
    >>> state.k, bool(np.asarray(state.q)[0] < 0.5)
    (2, True)
    """

    k: int
    t0: float
    members: State
    batch_shape: tuple[int, ...]
    q_prev: Point | None = None
    v_init: Vector | None = None
    v_legendre: Vector | None = None

    @property
    def q(self) -> Point:
        """``q_k`` of every member, in the run's batch shape ``(*B, *point_shape)``."""
        return _unflatten_batch(self.members.q, self.batch_shape)

    @property
    def status(self) -> np.ndarray:
        """The :class:`~manifold_dirac._mechanics.status.Status` code of every member, shape ``B``."""
        return np.asarray(self.members.status).reshape(self.batch_shape)


def _unflatten_batch(x: PyTree, B: tuple[int, ...]) -> PyTree:
    """The leading (members) axis of every leaf of ``x`` back to the batch axes ``B``."""
    return jax.tree.map(lambda a: jnp.reshape(a, (*B, *jnp.shape(a)[1 if B else 0:])), x)


def _flatten_batch(x: PyTree, nb: int) -> PyTree:
    """The ``nb`` leading (batch) axes of every leaf of ``x`` flattened to one (numpy stays numpy)."""
    if nb == 0:
        return x
    # numpy stays numpy (an eager JAX reshape would compile a program of its own)
    return jax.tree.map(lambda a: a.reshape((int(np.prod(np.shape(a)[:nb])), *np.shape(a)[nb:])), x)
