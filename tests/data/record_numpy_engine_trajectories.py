"""Record three trajectory files with the numpy engine (format version 1), for ``Trajectory.load``.

Not runnable on the current tree: the numpy engine was removed at the engine
switch. It ran at commit ``53f96e6`` (both engines are there), from a
worktree of that commit::

    git worktree add /tmp/old_engine 53f96e6
    cd tests/data && PYTHONPATH=/tmp/old_engine ../../.venv/bin/python record_numpy_engine_trajectories.py
    git worktree remove --force /tmp/old_engine

(Python 3.11.7, numpy 2.4.6.) Each file is what the numpy engine's
``Trajectory.save`` wrote: the same arrays as today's files and a JSON header
without ``format``/``version`` (format version 1). Read by
``tests/mechanics/test_trajectory.py``:

* ``numpy_engine_trajectory_heavy_top.npz``: the heavy top from the identity,
  ``v0 = (0.1, 0.2, 1)``, ``h = 0.05``, 20 steps;
* ``numpy_engine_trajectory_product.npz``: a free body on SO(3) x R^2 with a
  spring on R^2 (a product point: ``q`` is a tuple), ``h = 0.1``, 5 steps;
* ``numpy_engine_trajectory_batch_failed.npz``: a batch of two on R with a
  Lagrangian that is NaN past ``x = 1``; member 1 fails at step 1 (status 3,
  non-finite) and its velocity and energy are NaN from there.
"""

import numpy as np

from manifold_dirac import integrate
from manifold_dirac._manifolds import SO3, Euclidean, ProductManifold
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import heavy_top

top = heavy_top()
integrate(top, top.Q.identity(), v0=np.array([0.1, 0.2, 1.0]), h=0.05, n_steps=20).save(
    "numpy_engine_trajectory_heavy_top.npz")

Q = ProductManifold(SO3(), Euclidean(2))


def product_L(q, v):
    return 0.5 * np.sum(v * v, axis=-1) - 0.5 * np.sum(q[1] ** 2, axis=-1)


prod = LagrangeDiracSystem(Q, product_L, name="prod")
integrate(prod, (SO3().identity(), np.array([1.0, 0.0])), v0=np.array([0, 0, 1.0, 0, 0.5]), h=0.1,
          n_steps=5).save("numpy_engine_trajectory_product.npz")


def wall_L(q, v):
    x = q[..., 0]
    return 0.5 * v[..., 0] ** 2 - np.where(x > 1.0, np.nan, 0.5 * x**2)


def wall_partials(q, v):
    return np.where(q[..., :1] > 1.0, np.nan, -q), v


wall = LagrangeDiracSystem(Euclidean(1), wall_L, partials=wall_partials, name="wall")
integrate(wall, np.array([[0.0], [0.9]]), v0=np.array([[0.1], [1.0]]), h=0.1, n_steps=6, on_failure="mark").save(
    "numpy_engine_trajectory_batch_failed.npz")
