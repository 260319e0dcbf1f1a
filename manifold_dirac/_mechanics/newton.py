"""Newton's method for one step's equations, compiled (``lax.while_loop``).

Generic: it knows nothing of schemes. ``fun(z) -> (r, scale, aux)`` gives
the residual ``r (N,)``, a per-equation scale ``(N,)`` (the size of the terms
each equation sums: momenta for the momentum equations, ``|xi|`` for the
constraints) and any auxiliary output; the Jacobian ``dr/dz`` is exact, by
forward-mode autodiff (``jax.jacfwd``).

Stopping rule (round-off by default, relative to the problem's own scale):
with the scaled error ``e = max_i |r_i| / scale_i`` (a zero residual counts
as 0 whatever its scale),

* stop, converged, when ``e <= 4 eps`` (round-off reached);
* stop, converged, when the error stagnates at an acceptable level:
  ``e >= e_prev / 2`` and ``e <= rtol`` (no further digits to gain);
* stop, converged, when the error stagnates at the round-off floor of the
  data (only with a ``floor`` function, evaluated only then):
  ``|r_i| <= 4 (eps scale_i + floor_i)`` for every ``i``, where ``floor_i``
  is the residual's sensitivity to the rounding of the points it is
  evaluated at (a system at a large offset, ``q ~ 1e9``, whose positions are
  only resolved to ``1e9 eps``);
* stop after ``max_iter`` updates: converged iff ``e <= rtol``;
* stop, failed, on a non-finite residual (the last finite iterate is returned).

No fixed absolute floor: a system in SI units at the micro scale converges
like the same system in unit scale, and the round-off floor scales with the
problem.

The iteration is one plain ``lax.while_loop`` (one copy of the Newton
update in the compiled program), and the Newton matrix is solved by
:func:`~manifold_dirac._mechanics.small.solve_small`, Gaussian elimination with partial pivoting written out
for the matrix's static size (no LAPACK call) up to
:data:`~manifold_dirac._mechanics.small.SMALL_SOLVE_MAX`
unknowns: with neither a LAPACK call nor a library matrix product inside
it, XLA:CPU compiles a whole trajectory loop, Newton included, into one
kernel (``docs/performance.md``). Under ``vmap`` the loop runs until every
member has stopped; members already stopped keep their iterate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .small import solve_small
from .status import Status

__all__ = ["NewtonResult", "SolverOptions", "newton", "scaled_error"]

_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class SolverOptions:
    """Options of the Newton solve of each step.

    Attributes
    ----------
    rtol : float
        Largest scaled residual accepted when the iteration stagnates or the
        budget is spent (relative to each equation's own scale). Iterations
        continue to round-off whenever they still gain digits.
    max_iter : int
        Newton updates per step before the step is reported as not converged.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> tight = md.SolverOptions(rtol=1e-12, max_iter=30)
    >>> tr = md.integrate(md.systems.pendulum(), np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=10,
    ...                   solver=tight)
    >>> bool(tr.residual.max() < 1e-12)
    True
    """

    rtol: float = 1e-10
    max_iter: int = 30

    def __post_init__(self) -> None:
        if isinstance(self.rtol, bool) or not isinstance(self.rtol, (int, float)) or not (0 < self.rtol < 1):
            raise ValueError(f"SolverOptions: rtol must be a number in (0, 1), got {self.rtol!r}")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, (int, np.integer)) or self.max_iter < 1:
            raise ValueError(f"SolverOptions: max_iter must be a positive integer, got {self.max_iter!r}")


class NewtonResult(NamedTuple):
    """Outcome of :func:`newton`.

    Attributes
    ----------
    z : array, shape=[N]
        The solution; on a non-finite failure the last finite iterate.
    aux : pytree
        ``fun``'s auxiliary output at ``z``.
    status : int32 array, shape=[]
        ``Status.OK``, ``NO_CONVERGENCE`` or ``NONFINITE``.
    iterations : int32 array, shape=[]
    error : array, shape=[]
        The scaled residual at ``z``.
    """

    z: jax.Array
    aux: Any
    status: jax.Array
    iterations: jax.Array
    error: jax.Array


def scaled_error(r: jax.Array, scale: jax.Array) -> jax.Array:
    """``max_i |r_i| / scale_i``, a zero ``r_i`` counting as 0 (NaN propagates)."""
    a = jnp.abs(r)
    ratio = jnp.where(a == 0, 0.0, a / jnp.where(scale > 0, scale, 1.0))
    ratio = jnp.where((a > 0) & ~(scale > 0), jnp.inf, ratio)  # a nonzero residual of a zero-scale equation
    ratio = jnp.where(jnp.isnan(r) | jnp.isnan(scale), jnp.nan, ratio)
    return jnp.max(ratio, initial=0.0)


def newton(
    fun: Callable[[jax.Array], tuple[jax.Array, jax.Array, Any]], z0: jax.Array, options: SolverOptions,
    active: Any = True, axis_name: str | None = None,
    floor: Callable[[jax.Array], jax.Array] | None = None,
) -> NewtonResult:
    """Solve ``fun(z)[0] = 0`` from ``z0`` (see the module docstring for the stopping rule).

    ``active = False`` (a failed, frozen batch member) evaluates ``fun`` once
    and iterates no further, so that it does not hold up the batch.
    ``axis_name``: when ``newton`` runs under ``jax.vmap(..., axis_name=...)``,
    the name of that batch axis; the round-off floor (below) is then
    evaluated, by one real branch, when any member needs it, instead of a
    per-member ``cond`` that ``vmap`` would turn into a select that every
    member pays at every iteration.
    ``floor(z) -> (N,)``, optional: the absolute round-off floor of each
    residual at ``z`` (what rounding the data it is evaluated at can change
    it by). It is evaluated only when the iteration stagnates above ``rtol``
    (a real branch, on the whole batch under ``axis_name``), so it costs
    nothing in the ordinary case.
    """
    rtol, max_iter = options.rtol, options.max_iter

    def value(z):
        r, scale, aux = fun(z)
        return r, scale, scaled_error(r, scale), aux

    def lin(z):
        r, _, _ = fun(z)
        return r

    jac = jax.jacfwd(lin)
    r0, _, e0, aux0 = value(z0)
    finite0 = jnp.isfinite(e0)
    done0 = (e0 <= 4 * _EPS) | ~finite0 | ~jnp.asarray(active)
    status0 = jnp.where(finite0, Status.OK, Status.NONFINITE).astype(jnp.int32)

    def cond(c):
        return ~c[4]

    def body(c):
        z, r, e, it, done_in, _, _ = c
        dz = solve_small(jac(z), -r)
        z1 = z + dz
        r1, s1, e1, aux1 = value(z1)
        it1 = it + 1
        finite = jnp.isfinite(e1) & jnp.all(jnp.isfinite(z1))
        stagnant = e1 >= 0.5 * e
        converged = (e1 <= 4 * _EPS) | (stagnant & (e1 <= rtol))
        if floor is not None:
            converged = converged | at_floor(z1, r1, s1, finite & stagnant & ~converged & ~done_in)
        out_of_budget = it1 >= max_iter
        done = ~finite | converged | out_of_budget
        status = jnp.where(
            ~finite, Status.NONFINITE, jnp.where(converged | (e1 <= rtol), Status.OK, Status.NO_CONVERGENCE)
        ).astype(jnp.int32)
        # a non-finite iterate: keep the last finite one (where the failure can be diagnosed)
        z1 = jnp.where(jnp.all(jnp.isfinite(z1)), z1, z)
        # (under vmap the loop runs while any member runs, and JAX keeps a stopped member's values)
        return z1, r1, e1, it1, done, status, aux1

    def at_floor(z1, r1, scale1, need):
        """Whether ``r1`` is at the round-off floor of the data (computed only where ``need``).

        ``scale1`` is the scale ``fun`` returned with ``r1``: the equations are not evaluated again here.
        """

        def check(_):
            return jnp.all(jnp.abs(r1) <= 4.0 * (_EPS * jnp.abs(scale1) + floor(z1)))

        if axis_name is None:
            return jax.lax.cond(need, check, lambda _: jnp.bool_(False), None)
        anyone = jax.lax.pmax(need.astype(jnp.int32), axis_name) == 1  # unbatched: a real branch
        return need & jax.lax.cond(anyone, check, lambda _: jnp.zeros_like(need), None)

    c = (z0, r0, e0, jnp.int32(0), done0, status0, aux0)
    z, _, e, it, _, status, aux = jax.lax.while_loop(cond, body, c)
    return NewtonResult(z, aux, status, it, e)
