"""The step computed from the discrete Dirac structures, and a verifier of computed trajectories.

This module is the library's *second route* to a discrete Lagrange--Dirac
flow. It does not use the integrator's step equations, stacked constraint
matrix, quadrature code or product retraction. For one step
``k -> k+1`` of a (possibly interconnected) system it

1. evaluates each elementary subsystem's own discrete Lagrangian
   ``L_d^i(q_k, q_{k+1}) = h sum_j w_j L_i(R_{q_k}(s_j xi), xi/h)`` with its
   own retraction, and takes ``D1 L_d``, ``D2 L_d`` and the discrete forces
   of (24) by automatic differentiation in the charts ``R_q``;
2. builds the discrete Dirac structure of the whole system with the linear
   algebra of :mod:`.discrete`: each subsystem's (±) discrete induced
   structure (46)/(47) from its own one-forms, their direct sum, and the
   discrete tensor product with the discrete interaction structure of every
   interconnection level -- the discrete (29)/(32);
3. solves the membership ``(X_d^k, 𝔇^±L_d) in D^{d±}`` (50)/(51) for the
   step by a Gauss--Newton iteration on the distance of that point from the
   subspace.

The symmetric scheme has its own discrete structure: the (+) structure at
``q_k`` whose velocity condition is taken on the tangent of the retraction
curve at its midpoint ``c = R_{q_k}(xi/2)``: ``A(c) J_xi(xi/2) xi = 0``,
reaction in ``row A(q_k)`` (McLachlan & Perlmutter, J. Nonlinear Sci. 2006).

:func:`dirac_route` runs the route; :func:`verify` measures, step by step,
how far a computed trajectory is from its scheme's discrete structure.
Which structure is read from the scheme object
(:attr:`~manifold_dirac._mechanics.schemes.Scheme.dirac_sign`,
``dirac_midpoint``), never from its name; a registered scheme that declares
none is verified against its own step equations (its discrete constraint,
reaction and reported momentum) with this module's ``L_d`` partials.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from .._interconnection import InterconnectedSystem, SubsystemDiscreteLagrangian
from .._mechanics.rules import DiscreteLagrangian, QuadratureRule, RuleValue, get_rule, node_geometry
from .._mechanics.schemes import Scheme, get_scheme
from .._mechanics.system import LagrangeDiracSystem
from .._types import Covector, Matrix, Point, Scalar, Vector
from .discrete import DiscreteDiracStructure, discrete_dirac_differential
from .linear import block_diag_forms

if TYPE_CHECKING:
    from .. import Trajectory

__all__ = ["DiracRouteResult", "StepVerification", "constraint_along_retraction", "dirac_route",
           "discrete_structure_of", "verify"]

# ------------------------------------------------------------- the system tree
def _is_product(system: LagrangeDiracSystem) -> bool:
    return isinstance(system, InterconnectedSystem)


def _blocks(system: InterconnectedSystem, x: Vector) -> list[Vector]:
    return [x[o:o + d] for o, d in zip(system.layout.offsets, system.layout.dims)]


def _retract(system: LagrangeDiracSystem, q: Point, xi: Vector) -> Point:
    """``R_q(xi)`` subsystem by subsystem (each its own retraction)."""
    if _is_product(system):
        return tuple(_retract(s, a, x) for s, a, x in zip(system.subsystems, q, _blocks(system, xi)))
    return system.Q.retract(q, xi)


def _inverse_retract(system: LagrangeDiracSystem, q0: Point, q1: Point) -> Vector:
    """``R_{q0}^{-1}(q1)`` subsystem by subsystem, shape ``(n,)``."""
    if _is_product(system):
        return jnp.concatenate([_inverse_retract(s, a, b) for s, a, b in zip(system.subsystems, q0, q1)])
    return jnp.asarray(system.Q.inverse_retract(q0, q1))


def _lagrangian(system: LagrangeDiracSystem, q: Point, v: Vector) -> jax.Array:
    """``sum_i L_i(q_i, v_i)`` over the elementary subsystems (never the product's ``L``)."""
    if _is_product(system):
        return sum(_lagrangian(s, a, x) for s, a, x in zip(system.subsystems, q, _blocks(system, v)))
    return system.lagrangian(q, v)


def _discrete_lagrangian(system: LagrangeDiracSystem, nodes: tuple, q0: Point, q1: Point, h: Scalar) -> jax.Array:
    """``sum_i h sum_j w_j L_i(R_{q0_i}(s_j xi_i), xi_i/h)``, ``xi_i = R_{q0_i}^{-1}(q1_i)``."""
    if _is_product(system):
        return sum(_discrete_lagrangian(s, nodes, a, b, h) for s, a, b in zip(system.subsystems, q0, q1))
    xi = system.Q.inverse_retract(q0, q1)
    return h * sum(w * system.lagrangian(system.Q.retract(q0, s * xi), xi / h) for s, w in nodes)


def _force(system: LagrangeDiracSystem, t: Scalar, q: Point, v: Vector) -> Covector:
    """Every force of the tree at one point: each subsystem's own and each level's product force (34)."""
    if _is_product(system):
        F = jnp.concatenate([_force(s, t, a, x) for s, a, x in zip(system.subsystems, q, _blocks(system, v))])
        if system.product_force is not None:
            F = F + jnp.asarray(system.product_force(t, q, v), dtype=F.dtype)
        return F
    F = system.force(t, q, v)
    return jnp.zeros(system.dim) if F is None else jnp.asarray(F, dtype=float)


def _forms(system: LagrangeDiracSystem, q: Point) -> list[Matrix]:
    """One-forms of the tree in post-order: each subsystem's ``A_i(q_i)``, then each level's ``S(q)``."""
    if _is_product(system):
        out = [f for s, a in zip(system.subsystems, q) for f in _forms(s, a)]
        return out + [jnp.asarray(system.interaction_matrix(q), dtype=float)]
    return [jnp.asarray(system.constraint_matrix(q), dtype=float).reshape(system.n_constraints, system.dim)]


def _midpoint_frames(system: LagrangeDiracSystem, q: Point, xi: Vector) -> list[Matrix]:
    """``J_xi(xi_i/2)`` of each elementary subsystem: the retraction curve's tangent at its midpoint
    is ``J_xi(xi/2) xi`` in the frame at ``c = R_q(xi/2)``."""
    if _is_product(system):
        return [m for s, a, x in zip(system.subsystems, q, _blocks(system, xi)) for m in _midpoint_frames(s, a, x)]
    c = system.Q.retract(q, 0.5 * xi)
    return [jax.jacfwd(lambda x: jnp.asarray(system.Q.inverse_retract(c, system.Q.retract(q, x))))(0.5 * xi)]


def _nodes_of(rule: str | DiscreteLagrangian) -> tuple[tuple[float, float], ...]:
    """The quadrature nodes ``((s, w), ...)`` of a rule (a name, a rule, or a per-subsystem rule
    that uses one rule everywhere)."""
    if isinstance(rule, SubsystemDiscreteLagrangian):
        if len({r.nodes for r in rule.rules}) != 1:
            raise ValueError("dirac_route/verify: per-subsystem rules with different nodes are not supported")
        rule = rule.rules[0]
    r = get_rule(rule)
    if not isinstance(r, QuadratureRule):
        raise ValueError(f"dirac_route/verify: {rule!r} is not a quadrature rule")
    return tuple((float(s), float(w)) for s, w in r.nodes)


# ------------------------------------------------------- compiled evaluations
@functools.lru_cache(maxsize=64)
def _compiled(system: LagrangeDiracSystem, nodes: tuple) -> dict[str, Callable]:
    """Jitted pieces of the route for one system and rule (cached per system object)."""
    n = system.dim

    def pieces(q0, xi, h, t0):
        q1 = _retract(system, q0, xi)
        zero = jnp.zeros(n)
        D1 = jax.grad(lambda e: _discrete_lagrangian(system, nodes, _retract(system, q0, e), q1, h))(zero)
        D2 = jax.grad(lambda e: _discrete_lagrangian(system, nodes, q0, _retract(system, q1, e), h))(zero)
        # discrete forces of (24): the virtual work h sum_j w_j <F_j, delta c_j> with F_j held
        v = xi / h
        cs = [_retract(system, q0, s * xi) for s, _ in nodes]
        Fs = [_force(system, t0 + s * h, c, v) for (s, _), c in zip(nodes, cs)]

        def work(a, b):
            x = _inverse_retract(system, a, b)
            return sum(h * w * (F @ _inverse_retract(system, c, _retract(system, a, s * x)))
                       for (s, w), F, c in zip(nodes, Fs, cs))

        fm = jax.grad(lambda e: work(_retract(system, q0, e), q1))(zero)
        fp = jax.grad(lambda e: work(q0, _retract(system, q1, e)))(zero)
        eta = _inverse_retract(system, q1, q0)
        return jnp.concatenate([-(D1 + fm), D2 + fp, eta]), q1

    def with_jacobian(q0, xi, h, t0):
        val, q1 = pieces(q0, xi, h, t0)
        jac = jax.jacfwd(lambda x: pieces(q0, x, h, t0)[0])(xi)
        return val, jac, q1

    def forms_at(q):
        return _forms(system, q)

    def midpoint(q0, xi):
        return _forms(system, _retract(system, q0, 0.5 * xi)), _midpoint_frames(system, q0, xi)

    def momentum(q, v):
        return jax.grad(lambda w: _lagrangian(system, q, w))(v)

    return {"step": jax.jit(with_jacobian), "pieces": jax.jit(pieces), "forms": jax.jit(forms_at),
            "midpoint": jax.jit(midpoint),
            "momentum": jax.jit(momentum), "inverse_retract": jax.jit(lambda a, b: _inverse_retract(system, a, b)),
            # the recorded fields' references, one compiled call per point (eager, each operation compiled apart)
            "energy": jax.jit(lambda q, v, p: system.energy(q, v, p)),
            "legendre": jax.jit(lambda q, v: (system.momentum(q, v), system.constraint_matrix(q))),
            # RATTLE's projection of a batch of recorded velocities and momenta (holonomic systems)
            "projection": jax.jit(jax.vmap(system.holonomic_projection, in_axes=(0, 0, 0, None)))}


@functools.lru_cache(maxsize=64)
def _scheme_equations(system: LagrangeDiracSystem, nodes: tuple, scheme: Scheme) -> tuple[Callable, Callable]:
    """Jitted: a scheme's own step equations at one step, with the route's ``L_d`` partials and forces.

    ``at(q0, xi, h, t0) -> (P0, P1, c, G)`` with ``P0 = -(D1 L_d + f^-)``,
    ``P1 = D2 L_d + f^+`` (the route's own automatic differentiation),
    ``c`` the scheme's constraint equations and ``G`` its reaction;
    ``reported(q0, p_in, mu)`` the momentum it reports.
    """
    n, m = system.dim, system.n_constraints
    pieces = _compiled(system, nodes)["pieces"]
    Q, params = system.Q, system.params
    wanted = tuple(dict.fromkeys(float(x) for x in scheme.extra_nodes))

    def at(q0, xi, h, t0):
        val, q1 = pieces(q0, xi, h, t0)
        P0, P1 = val[:n], val[n:2 * n]
        _, J0, J1 = Q.retract_with_inverse_jacobians(q0, xi)
        geometry = {x: node_geometry(Q, q0, q1, xi, J0, J1, x) for x in wanted}
        zero = jnp.zeros(n)
        ld = RuleValue(q1, J0, J1, -P0, P1, zero, zero, jnp.ones(()), jnp.bool_(True), geometry)
        c = scheme.constraint_residual(system, q0, xi, ld, params) if m else jnp.zeros(0)
        G = scheme.reaction(system, q0, params) if m else jnp.zeros((n, 0))
        return P0, P1, c, G

    def reported(q0, p_in, mu):
        return scheme.reported_momentum(system, q0, p_in, mu, params)

    return jax.jit(at), jax.jit(reported)


def constraint_along_retraction(system: LagrangeDiracSystem, q: Point, xi: ArrayLike, s: ArrayLike) -> np.ndarray:
    """``a(s) = A(c(s)) c'(s)``: the one-forms on the retraction curve's own velocity.

    Parameters
    ----------
    system : LagrangeDiracSystem
        Elementary (its ``A``) or interconnected (the subsystems' forms and the
        interactions', each subsystem on its own retraction).
    q : point
        The base point (float64; a tuple of the subsystems' points on a product).
    xi : array-like, shape=[n]
        The step in the retraction's chart at ``q`` (frame coordinates, float64).
    s : float or array-like, shape=[k]
        Curve parameters; ``c(s) = R_q(s xi)``, ``c'(s) = J_xi(s xi) xi`` in the frame at ``c(s)``.

    Returns
    -------
    ndarray, shape=[k, m]

    Notes
    -----
    The three schemes impose the discrete constraint at different points of
    the same curve: (+) ``a(0) = A(q_k) xi = 0`` (52a), (−) ``a(1) = 0`` (53a)
    up to the sign of ``R_{q_{k+1}}^{-1}(q_k) = -J_xi(xi) xi + O(|xi|^2)``
    (exactly ``-xi`` on a Lie group with ``exp`` and on a vector space),
    symmetric ``a(1/2) = 0``. When ``a`` does not depend on ``s`` for ``xi``
    in the constraint set, the three equations coincide and so do the flows;
    then (+) and (−) have the symmetric scheme's order 2. When
    ``d a / d s (0) = (dA(q) . xi) xi + ...`` is nonzero on ``Delta(q)``,
    ``a(0)`` and ``a(1/2)`` differ by ``O(h^2)`` per step and (±) are first order.
    So the criterion is not whether ``A`` varies in frame coordinates: on
    SO(3) with ``exp`` the Veselova form ``A(R) = (R^T e3)^T`` varies with ``R``,
    yet ``A(R exp(s xi)) xi = e3^T R exp(s xi) xi = e3^T R xi`` is constant.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> knife = md.systems.knife_edge()
    >>> xi = np.array([0.4, 1.0, 0.1])  # with a sideways component: a(s) = v_y, constant along the exp curve
    >>> a = md.dirac.constraint_along_retraction(knife, np.eye(3), xi, np.array([0.0, 0.5, 1.0]))
    >>> a.shape
    (3, 1)
    >>> a[:, 0].round(6)
    array([0.1, 0.1, 0.1])
    """
    ss = jnp.atleast_1d(jnp.asarray(s, dtype=float))
    x = jnp.asarray(xi, dtype=float)
    eye = jnp.eye(system.dim)

    def at(si):
        c = _retract(system, q, si * x)
        # c'(s) in the frame at c: d/de R_c^{-1}(R_q((s + e) xi)) at e = 0
        vel = jax.jacfwd(lambda e: _inverse_retract(system, c, _retract(system, q, (si + e) * x)))(0.0)
        A = jnp.concatenate([f @ eye[sl] for f, sl in _placed(system, _forms(system, c))], axis=0)
        return A @ vel

    return np.asarray(jax.jit(jax.vmap(at))(ss))


# ------------------------------------------------------------- the structures
def _assemble(system: LagrangeDiracSystem, sign: str, forms: list, constraint: list | None,
              frames: list | None, pos: list[int], leaf: list[int]) -> DiscreteDiracStructure:
    """``D^{d±}`` of the tree from its forms (post-order), by direct sums and tensor products."""
    if _is_product(system):
        first = leaf[0]
        subs = [_assemble(s, sign, forms, constraint, frames, pos, leaf) for s in system.subsystems]
        D = functools.reduce(lambda a, b: a.direct_sum(b), subs)
        S = np.asarray(forms[pos[0]])
        Sc = None
        if constraint is not None:
            Sc = np.asarray(constraint[pos[0]]) @ block_diag_forms(*frames[first:leaf[0]])
        pos[0] += 1
        if S.shape[0]:
            D = D.tensor(DiscreteDiracStructure.interaction(S, sign, constraint=Sc))
        return D
    A = np.asarray(forms[pos[0]])
    Ac = None if constraint is None else np.asarray(constraint[pos[0]]) @ np.asarray(frames[leaf[0]])
    pos[0] += 1
    leaf[0] += 1
    return DiscreteDiracStructure.induced(A, sign, constraint=Ac)


def discrete_structure_of(system: LagrangeDiracSystem, sign: str, q: Point, *, midpoint: bool | None = None,
                          xi: ArrayLike | None = None) -> DiscreteDiracStructure:
    """The discrete Dirac structure of a (possibly interconnected) system at one point.

    Parameters
    ----------
    system : LagrangeDiracSystem
        An elementary or an :class:`~manifold_dirac._interconnection.InterconnectedSystem`.
    sign : {'+', '-'}
        Which discrete structure: ``'+'`` (the (+) structure (46)/(48)) or ``'-'`` ((47)/(49)).
    q : point
        The chart centre: ``q_k`` for (+), ``q_{k+1}`` for (−).
    midpoint, xi : optional
        For the symmetric scheme's structure: pass ``xi = R_{q_k}^{-1}(q_{k+1})``
        (subsystem by subsystem) and ``midpoint=True``; the velocity condition
        is then ``A(c) J_xi(xi/2) xi = 0`` with ``c = R_{q_k}(xi/2)``.

    Returns
    -------
    DiscreteDiracStructure
        ``((D^{d±}_1 (+) ... (+) D^{d±}_k) ⊠ D^{d±}_int)`` level by level, on
        ``R^{3n} (+) R^{2n}``.

    Notes
    -----
    The discrete (32): for induced structures the result equals the induced
    structure of ``[blockdiag(A_i); S]``, but it is computed here by the direct
    sum (27) and the tensor product of the subspaces, never from the stacked forms.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> D = md.dirac.discrete_structure_of(md.systems.knife_edge(), "+", np.eye(3))
    >>> D.n, D.sign, D.dim
    (3, '+', 9)
    """
    fns = _compiled(system, ((0.5, 1.0),))
    forms = fns["forms"](q)
    constraint = frames = None
    if midpoint:
        if xi is None:
            raise ValueError("discrete_structure_of: the symmetric structure needs xi")
        constraint, frames = fns["midpoint"](q, jnp.asarray(xi, dtype=float))
    return _assemble(system, sign, forms, constraint, frames, [0], [0])


def _equations(D: DiscreteDiracStructure) -> np.ndarray:
    """Orthonormal rows ``E`` with ``D = ker E`` on ``(p_k, chi, p_k1, alpha_q, alpha_p)``."""
    return D.relation.space.equations()


# ------------------------------------------------------------------- the route
@dataclass(frozen=True)
class DiracRouteResult:
    """A trajectory computed by :func:`dirac_route`.

    Attributes
    ----------
    q : list of points, length K+1
        The computed points ``q_0, ..., q_K``.
    p : ndarray, shape=[K+1, n]
        Momenta ``p_k`` (for ``minus`` the momentum of (53d)).
    residual : ndarray, shape=[K]
        The final distance of each step from its structure (relative).
    iterations : ndarray of int, shape=[K]
        Newton iterations of each step's membership solve.
    meta : dict
        ``h``, ``scheme``, ``discrete_lagrangian``, ``stride`` (1), ``t0``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> knife = md.systems.knife_edge()
    >>> route = md.dirac.dirac_route(knife, np.eye(3), np.array([0.5, 1.0, 0.0]), h=0.05, n_steps=5, scheme="plus")
    >>> len(route.q), route.p.shape, route.iterations.shape
    (6, (6, 3), (5,))
    >>> bool(route.residual.max() < 1e-10)
    True
    """

    q: list
    p: np.ndarray
    residual: np.ndarray
    iterations: np.ndarray
    meta: dict

    def stacked_q(self) -> Point:
        """``q`` stacked along a leading axis (a tuple tree on a product)."""
        return jax.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *self.q)


def _solve(step, residual_and_jacobian, xi0, n, tol, max_iter, where):
    xi = np.array(xi0, dtype=float)
    for it in range(1, max_iter + 1):
        r, J, scale = residual_and_jacobian(xi)
        dx = np.linalg.lstsq(J, -r, rcond=None)[0]
        xi = xi + dx
        if np.linalg.norm(dx) <= 1e-15 * max(1.0, np.linalg.norm(xi)):
            break
    r, _, scale = residual_and_jacobian(xi)
    rel = float(np.linalg.norm(r)) / scale
    if not np.isfinite(rel) or rel > tol:
        raise RuntimeError(f"dirac_route: the membership solve of step {step} did not converge ({where}): "
                           f"relative distance {rel:.3e} from the structure after {it} iterations (tol {tol:.1e})")
    return xi, rel, it


def dirac_route(system: LagrangeDiracSystem, q0: Point, v0: ArrayLike | None = None, p0: ArrayLike | None = None, *,
                h: float, n_steps: int, scheme: str | Scheme = "symmetric",
                discrete_lagrangian: str | DiscreteLagrangian = "midpoint", t0: float = 0.0,
                tol: float = 1e-12, max_iter: int = 60) -> DiracRouteResult:
    """Integrate by solving, step by step, the membership in the discrete Dirac structure.

    Parameters
    ----------
    system : LagrangeDiracSystem
        Elementary or interconnected (nested interconnections too).
    q0 : point
        The initial point (float64; a tuple of the subsystems' points for an
        interconnected system). One trajectory: the route does not batch.
    v0, p0 : array-like, shape=[n]
        Initial velocity (``p0 = dL/dv(q0, v0)``, the sum of the subsystems')
        or momentum. One of them.
    h : float
        The time step (> 0).
    n_steps : int
        The number of steps.
    scheme : str or Scheme
        A scheme that declares its discrete Dirac structure
        (``Scheme.dirac_sign``): the built-in "plus", "minus" and "symmetric".
    discrete_lagrangian : str or QuadratureRule
        Its nodes define each subsystem's ``L_d^i``.
    t0 : float
        The time of ``q0`` (the forces' ``t``).
    tol : float
        Largest relative distance from the structure accepted at a solution.
    max_iter : int
        Newton iterations allowed per step.

    Returns
    -------
    DiracRouteResult

    Raises
    ------
    ValueError
        For an unknown scheme, one without a declared discrete Dirac structure, or bad initial data.
    RuntimeError
        When a step's membership solve does not reach ``tol`` (step and distance in the message).

    Notes
    -----
    (+), (50)/(52): ``D = D^{d+}(q_k)``; unknown ``xi``; the point
    ``((p_k, xi, D2 L_d + f^+), (-D1 L_d - f^-, xi))`` must lie in ``D``.

    (−), (51)/(53): the state carries ``p~_k = D2 L_d(q_{k-1}, q_k) + f^+``
    (``p0`` at the start); unknown ``xi``, with ``p_k = -D1 L_d - f^-`` (the
    basepoint of ``𝔇^-L_d``): ``((0, 0, p_k), (-p~_k, 0)) in D^{d-}(q_k)``
    (the annihilator condition of the step before) and
    ``((p_k, eta, p~_{k+1}), (-p~_{k+1}, -eta)) in D^{d-}(q_{k+1})`` with
    ``eta = R_{q_{k+1}}^{-1}(q_k)``.

    symmetric: ``D^{d+}`` at ``q_k`` with the velocity forms ``A(c) J_xi(xi/2)``
    (module docstring), otherwise as (+).

    The Jacobian of the iteration differentiates the point (automatic
    differentiation) and holds the subspace fixed; where the subspace moves
    with ``xi`` ((−), symmetric) the iteration converges linearly at a rate
    ``O(|xi|)``, to the same solution.

    Examples
    --------
    The knife edge by membership in ``D^{d+}``, against the integrator's own step:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> knife = md.systems.knife_edge()
    >>> v0 = np.array([0.5, 1.0, 0.0])                 # (omega, v_x, v_y): no sideways slip
    >>> route = md.dirac.dirac_route(knife, np.eye(3), v0, h=0.05, n_steps=20, scheme="plus")
    >>> tr = md.integrate(knife, np.eye(3), v0=v0, h=0.05, n_steps=20, scheme="plus")
    >>> bool(np.max(np.abs(np.asarray(route.p) - tr.p)) < 1e-10)
    True
    """
    sch = get_scheme(scheme)
    sign, mid = sch.dirac_sign, sch.dirac_midpoint
    if sign is None:
        raise ValueError(f"dirac_route: scheme {sch.name!r} declares no discrete Dirac structure (Scheme.dirac_sign); "
                         "the route solves only the membership in one. verify() checks such a scheme's own step "
                         "equations")
    scheme = sch.name
    if (v0 is None) == (p0 is None):
        raise ValueError("dirac_route: give exactly one of v0 and p0")
    n = system.dim
    nodes = _nodes_of(discrete_lagrangian)
    fns = _compiled(system, nodes)
    q = jax.tree.map(lambda a: jnp.asarray(a, dtype=float), q0)
    h = float(h)
    given = np.asarray(v0 if v0 is not None else p0, dtype=float)
    if given.shape != (n,):
        raise ValueError(f"dirac_route: {'v0' if v0 is not None else 'p0'} must have shape ({n},) (one trajectory; "
                         f"the route does not batch); got {given.shape}")
    if v0 is not None:
        v = np.asarray(v0, dtype=float).reshape(n)
        p_in = np.asarray(fns["momentum"](q, jnp.asarray(v)))
        xi = h * v
    else:
        p_in = np.asarray(p0, dtype=float).reshape(n)
        xi = np.zeros(n)
    qs, ps, res, its = [q], [], [], []
    E_prev = _equations(discrete_structure_of(system, "-", q)) if sign == "-" else None
    steps = n_steps + (1 if sign == "-" else 0)  # (-): one more solve reports p_K
    for k in range(steps):
        tk = t0 + k * h
        E_here = _equations(discrete_structure_of(system, "+", q)) if sign == "+" and not mid else None
        q_now, p_now = q, p_in

        def resid(x, q_now=q_now, p_now=p_now, E_here=E_here, tk=tk):
            val, jac, q1 = fns["step"](q_now, jnp.asarray(x), h, tk)
            val, jac = np.asarray(val), np.asarray(jac)
            P0, P1, eta = val[:n], val[n:2 * n], val[2 * n:]
            dP0, dP1, deta = jac[:n], jac[n:2 * n], jac[2 * n:]
            I, Z = np.eye(n), np.zeros((n, n))
            if sign == "-":
                E1 = _equations(discrete_structure_of(system, "-", q1))
                wa = np.concatenate([np.zeros(2 * n), P0, -p_now, np.zeros(n)])
                Ja = np.vstack([Z, Z, dP0, Z, Z])
                wb = np.concatenate([P0, eta, P1, -P1, -eta])
                Jb = np.vstack([dP0, deta, dP1, -dP1, -deta])
                r = np.concatenate([E_prev @ wa, E1 @ wb])
                J = np.vstack([E_prev @ Ja, E1 @ Jb])
                scale = max(1.0, np.linalg.norm(wa), np.linalg.norm(wb))
            else:
                E = E_here
                if mid:
                    E = _equations(discrete_structure_of(system, "+", q_now, midpoint=True, xi=x))
                w = np.concatenate([p_now, x, P1, P0, x])
                Jw = np.vstack([Z, I, dP1, dP0, I])
                r, J = E @ w, E @ Jw
                scale = max(1.0, np.linalg.norm(w))
            return r, J, scale

        xi, rel, it = _solve(k, resid, xi, n, tol, max_iter, f"scheme {scheme}")
        val, _, q1 = fns["step"](q, jnp.asarray(xi), h, tk)
        val = np.asarray(val)
        P0, P1 = val[:n], val[n:2 * n]
        if sign == "-":
            ps.append(P0)  # p_k of (53c)
            E_prev = _equations(discrete_structure_of(system, "-", q1))
        else:
            ps.append(p_in)
        res.append(rel)
        its.append(it)
        if k < n_steps:
            qs.append(q1)
        p_in, q = P1, q1
    if sign != "-":
        ps.append(p_in)
    meta = {"h": h, "scheme": scheme, "discrete_lagrangian": discrete_lagrangian, "stride": 1, "t0": t0}
    return DiracRouteResult(qs, np.array(ps), np.array(res[:n_steps]), np.array(its[:n_steps]), meta)


# ------------------------------------------------------------------ verifier
@dataclass(frozen=True)
class StepVerification:
    """Step-by-step residuals of a computed trajectory against its scheme's discrete structure.

    Attributes
    ----------
    scheme : str
        The name of the scheme whose structure was checked.
    membership : ndarray, shape=[K]
        Distance of ``(X_d^k, 𝔇^±L_d)`` from ``D^{d±}`` (the symmetric
        scheme: from its own structure), relative to ``max(1, |point|)``. For
        a scheme without a declared structure: the distance of
        ``p_in + D1 L_d + f^-`` from the range of the scheme's reaction ``G``,
        relative to ``max(1, |p_in|, |D1 L_d + f^-|)``.
    basepoint : ndarray, shape=[K]
        ``|p_{k+1} - D2 L_d - f^+|`` ((+), symmetric, and a scheme that does
        not carry a pre-momentum) or ``|p_k + D1 L_d + f^-|`` ((−)), for
        another scheme carrying a pre-momentum ``|p_k - p_reported|``;
        relative to ``max(1, |p|)``.
    constraint : ndarray, shape=[K]
        The scheme's discrete constraint, ``|B chi|`` with the velocity forms of
        the structure (the interaction's included), relative to ``max(1, |chi|)``;
        for a scheme without a declared structure, its
        :meth:`~manifold_dirac._mechanics.schemes.Scheme.constraint_residual`
        relative to ``max(1, |xi|)``.
    velocity_constraint : ndarray, shape=[K+1]
        ``|A(q_k) v_k|`` with the stored velocities (the continuous constraint,
        satisfied to ``O(h^order)`` only).
    noether : ndarray, shape=[K+1] or None
        ``<p_k, xi_Q(q_k)>`` for the given symmetry generator.
    checked : str
        What was checked: ``"dirac(+)"``, ``"dirac(-)"``, ``"dirac(+, midpoint)"``
        (membership in the scheme's declared discrete Dirac structure) or
        ``"scheme equations"`` (the scheme's own step equations: a scheme
        without a declared structure, and every scheme on a system with
        holonomic constraints).
    records : dict of str to float
        The recorded fields re-derived from the points and momenta, each the
        largest relative deviation: ``t`` (``t_0 + k h``), ``xi``
        (``R_{q_k}^{-1}(q_{k+1})``), ``energy`` (``<p_k, v_k> - L(q_k, v_k)``)
        and ``v`` at the interior points (the central difference, projected
        onto ``dg(q_k) v = 0`` with holonomic constraints; for the rules of
        order above 2 the Legendre equation ``dL/dv(q_k, v_k) = p_k`` modulo
        the constraint forces). Round-off for a run as the library wrote it.
    tolerance : float
        The run's Newton tolerance ``rtol`` (``trajectory.meta["solver_rtol"]``,
        else the default of :class:`~manifold_dirac._mechanics.newton.SolverOptions`):
        each step's equations hold to it relative to their scale, so every
        residual here is below it for a run as computed; :attr:`ok` compares.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> knife = md.systems.knife_edge()
    >>> tr = md.integrate(knife, np.eye(3), v0=np.array([0.5, 1.0, 0.0]), h=0.05, n_steps=5)
    >>> report = md.dirac.verify(knife, tr)
    >>> report.checked, report.membership.shape, report.ok
    ('dirac(+, midpoint)', (5,), True)
    >>> bool(report.max <= report.tolerance)
    True
    """

    scheme: str
    membership: np.ndarray
    basepoint: np.ndarray
    constraint: np.ndarray
    velocity_constraint: np.ndarray
    noether: np.ndarray | None
    checked: str = "dirac(+)"
    records: dict = None  # type: ignore[assignment]
    tolerance: float = float("nan")

    @property
    def ok(self) -> bool:
        """Whether every residual (:attr:`max`) is within :attr:`tolerance`, the run's own Newton tolerance."""
        return bool(self.max <= self.tolerance)

    @property
    def max(self) -> float:
        """Largest membership, basepoint, discrete-constraint or recorded-field residual."""
        rec = max((float(v) for v in (self.records or {}).values()), default=0.0)
        return float(max(np.max(self.membership, initial=0.0), np.max(self.basepoint, initial=0.0),
                         np.max(self.constraint, initial=0.0), rec))

    @property
    def noether_drift(self) -> float:
        """``max_k |J_k - J_0|`` (NaN without a symmetry)."""
        if self.noether is None:
            return float("nan")
        return float(np.max(np.abs(self.noether - self.noether[0])))


def verify(system: LagrangeDiracSystem, trajectory: Trajectory, *, symmetry: Callable[[Point], ArrayLike] | None = None,
           scheme: str | Scheme | None = None, discrete_lagrangian: str | DiscreteLagrangian | None = None,
           rtol: float | None = None) -> StepVerification:
    """Check a computed trajectory step by step against the discrete Dirac structure of its scheme.

    Parameters
    ----------
    system : LagrangeDiracSystem
        The system (elementary or interconnected) the trajectory claims to solve.
    trajectory : Trajectory or DiracRouteResult
        Unbatched, every step stored (``stride = 1``).
    symmetry : callable ``q -> (n,)``, optional
        The infinitesimal generator ``xi_Q(q)`` of a symmetry in frame
        coordinates; the discrete Noether quantity ``J_k = <p_k, xi_Q(q_k)>`` is
        reported (conserved when ``L_d`` is invariant, ``xi_Q`` lies in the
        constraint distribution and no force acts).
    scheme : str or Scheme, optional
        Any registered scheme; taken from ``trajectory.meta`` when not given.
    discrete_lagrangian : optional
        Taken from ``trajectory.meta`` when not given.
    rtol : float, optional
        The tolerance of :attr:`StepVerification.ok`; by default the run's
        Newton tolerance (``meta["solver_rtol"]``, else ``SolverOptions().rtol``).

    Returns
    -------
    StepVerification

    Raises
    ------
    ValueError
        For a batched or strided trajectory, or an unknown scheme.

    Notes
    -----
    With ``D1 L_d``, ``D2 L_d`` and ``f^±`` computed by :func:`dirac_route`'s
    own code and the structure assembled by direct sums and tensor products
    (:func:`discrete_structure_of`): (+) checks (50) at ``q_k`` with
    ``((p_k, xi, p_{k+1}), (-D1 L_d - f^-, xi))``; (−) checks (51) at
    ``q_{k+1}`` with ``((p_k, eta, p_{k+1}), (-D2 L_d - f^+, -eta))`` and the
    basepoint ``p_k = -D1 L_d - f^-``; symmetric checks its structure at ``q_k``
    (the scheme's ``dirac_sign`` and ``dirac_midpoint`` say which).

    A scheme that declares no structure (``dirac_sign = None``: a scheme
    registered by a user) is checked against its own step equations, through
    its members, with the route's ``L_d`` partials and forces::

        p_in + D1 L_d + f^- = G(q_k) mu      (mu by least squares; membership: the rest)
        c(xi) = 0                           (Scheme.constraint_residual; constraint)
        p_{k+1} = D2 L_d + f^+              (basepoint), or, carrying a pre-momentum,
        p_k = reported_momentum(q_k, p_in, mu),   p_in = D2 L_d(q_{k-1}, q_k) + f^+

    (for the pre-momentum of step 0, which a trajectory does not store, the
    ``mu`` that makes the reported momentum ``p_0`` is found by least squares:
    the reported momentum is affine in ``(p_in, mu)``). The node geometry the
    scheme asks for (``extra_nodes``) comes from the manifold's retraction.

    A system with holonomic constraints ``g(q) = 0`` is checked this way for
    every scheme: its step enforces ``g(q_{k+1}) = 0`` with the reaction
    ``dg(q_k)^T lambda`` (SHAKE in the retraction chart), where (50)/(51)
    hold the linearized ``dg(q_k) xi = 0``, satisfied by such a step only to
    ``O(h^2)``. The reported momenta are RATTLE projections, so the basepoint
    is compared modulo ``dg^T nu``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> knife = md.systems.knife_edge()
    >>> tr = md.integrate(knife, np.eye(3), v0=np.array([0.5, 1.0, 0.0]), h=0.05, n_steps=20)
    >>> report = md.dirac.verify(knife, tr)
    >>> report.ok, report.scheme
    (True, 'symmetric')
    """
    meta = getattr(trajectory, "meta", {}) or {}
    sch = get_scheme(scheme or meta.get("scheme"))
    scheme = sch.name
    if int(meta.get("stride", 1)) != 1:
        raise ValueError("verify: needs every step (stride = 1)")
    rule = discrete_lagrangian if discrete_lagrangian is not None else meta.get("discrete_lagrangian", "midpoint")
    nodes = _nodes_of(rule)
    fns = _compiled(system, nodes)
    n = system.dim
    p = np.asarray(trajectory.p, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"verify: needs an unbatched trajectory; p has shape {p.shape}")
    if not bool(getattr(trajectory, "ok", True)):
        raise ValueError("verify: the trajectory did not finish (its status is not OK); verify the steps that "
                         "completed by slicing a finished run, not a failed or interrupted one")
    K = p.shape[0] - 1
    qtraj = trajectory.q
    if isinstance(qtraj, list):
        points = qtraj
    else:
        points = [jax.tree.map(lambda a, k=k: jnp.asarray(a[k], dtype=float), qtraj) for k in range(K + 1)]
    h = float(meta.get("h", getattr(trajectory, "h", np.nan)))
    if not np.isfinite(h):
        raise ValueError("verify: the trajectory's meta has no step size h")
    t = np.asarray(getattr(trajectory, "t", float(meta.get("t0", 0.0)) + t0_grid(K, h)))
    sign, mid = sch.dirac_sign, sch.dirac_midpoint
    if getattr(system, "n_holonomic", 0):
        # the step enforces g(q_{k+1}) = 0 with the reaction dg(q_k)^T lambda (SHAKE in the retraction
        # chart); the structure (50)/(51) holds dg(q_k) xi = 0, true only to O(h^2) for such a step
        sign = None
    if sign is None:
        mem, base, con = _verify_equations(system, sch, nodes, points, p, h, t)
        checked = "scheme equations"
    else:
        mem, base, con = np.zeros(K), np.zeros(K), np.zeros(K)
        checked = f"dirac({sign}{', midpoint' if mid else ''})"
    for k in range(K if sign is not None else 0):
        xi = np.asarray(fns["inverse_retract"](points[k], points[k + 1]))
        val, _ = fns["pieces"](points[k], jnp.asarray(xi), h, float(t[k]))  # no Jacobian: not compiled here
        val = np.asarray(val)
        P0, P1, eta = val[:n], val[n:2 * n], val[2 * n:]
        # (48) with the forced partials D1 L_d + f^- = -P0 and D2 L_d + f^+ = P1
        chi = eta if sign == "-" else xi
        dd = discrete_dirac_differential(sign, -P0, P1, chi)
        w = np.concatenate([p[k], chi, p[k + 1], dd.alpha_q, dd.alpha_p])
        if sign == "-":
            D = discrete_structure_of(system, "-", points[k + 1])
            base[k] = np.linalg.norm(_off_reactions(system, points[k], p[k] - dd.basepoint_momentum)) / max(
                1.0, np.linalg.norm(p[k]))
        else:
            D = discrete_structure_of(system, "+", points[k], midpoint=mid, xi=xi)
            base[k] = np.linalg.norm(_off_reactions(system, points[k + 1], p[k + 1] - dd.basepoint_momentum)) / max(
                1.0, np.linalg.norm(p[k + 1]))
        E = _equations(D)
        mem[k] = np.linalg.norm(E @ w) / max(1.0, np.linalg.norm(w))
        B = D.velocity_constraint().equations()
        con[k] = np.linalg.norm(B @ chi) / max(1.0, np.linalg.norm(chi))
    vel = np.full(K + 1, np.nan)
    v = getattr(trajectory, "v", None)
    if v is not None:
        v = np.asarray(v, dtype=float)
        for k in range(K + 1):
            A = np.concatenate([np.asarray(a) @ np.eye(n)[sl] for a, sl in _placed(system, fns["forms"](points[k]))])
            vel[k] = np.linalg.norm(A @ v[k]) if A.shape[0] else 0.0
    noether = None
    if symmetry is not None:
        noether = np.array([float(p[k] @ np.asarray(symmetry(points[k]), dtype=float).reshape(n))
                            for k in range(K + 1)])
    xis = np.array([np.asarray(fns["inverse_retract"](points[k], points[k + 1])) for k in range(K)]).reshape(K, n)
    records = _recorded_fields(system, trajectory, points, p, xis, t, h, rule, fns)
    if rtol is None:
        from .._mechanics.newton import SolverOptions

        rtol = float(meta.get("solver_rtol", SolverOptions().rtol))
    return StepVerification(scheme, mem, base, con, vel, noether, checked, records, float(rtol))


def _verify_equations(system: LagrangeDiracSystem, scheme: Scheme, nodes: tuple, points: list, p: np.ndarray,
                      h: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Membership, basepoint and constraint residuals of a scheme's own step equations (see :func:`verify`)."""
    at, reported = _scheme_equations(system, nodes, scheme)
    inverse_retract = _compiled(system, nodes)["inverse_retract"]
    K, m = p.shape[0] - 1, system.n_constraints
    mem, base, con = np.zeros(K), np.zeros(K), np.zeros(K)
    carried = None  # the pre-momentum D2 L_d + f^+ of the step before
    for k in range(K):
        xi = np.asarray(inverse_retract(points[k], points[k + 1]))
        P0, P1, c, G = (np.asarray(x) for x in at(points[k], jnp.asarray(xi), h, float(t[k])))
        if not scheme.carries_pre_momentum:
            p_in = p[k]
        elif carried is not None:
            p_in = carried
        else:
            # step 0: the mu whose reported momentum is p_0, with p_in = P0 + G mu (affine in mu)
            def miss(mu, q=points[k], P0=P0, G=G):
                return np.asarray(reported(q, jnp.asarray(P0 + G @ mu), jnp.asarray(mu))) - p[0]

            f0 = miss(np.zeros(m))
            J = np.stack([miss(e) - f0 for e in np.eye(m)], axis=1) if m else np.zeros((len(f0), 0))
            # a J of round-off only (the reported momentum does not depend on mu, as for (53)) is zero:
            # least squares on it would return a huge mu and p_in - P0 = G mu with cancellation error
            scale = 1e-12 * max(1.0, float(np.linalg.norm(G)))
            mu0 = np.linalg.lstsq(J, -f0, rcond=1e-10)[0] if m and np.linalg.norm(J) > scale else np.zeros(m)
            p_in = P0 + G @ mu0
        rhs = p_in - P0
        mu = np.linalg.lstsq(G, rhs, rcond=None)[0] if m else np.zeros(0)
        mem[k] = np.linalg.norm(rhs - G @ mu) / max(1.0, np.linalg.norm(p_in), np.linalg.norm(P0))
        if scheme.carries_pre_momentum:
            rep = np.asarray(reported(points[k], jnp.asarray(p_in), jnp.asarray(mu)))
            base[k] = np.linalg.norm(_off_reactions(system, points[k], p[k] - rep)) / max(1.0, np.linalg.norm(p[k]))
        else:
            base[k] = np.linalg.norm(_off_reactions(system, points[k + 1], p[k + 1] - P1)) / max(
                1.0, np.linalg.norm(p[k + 1]))
        con[k] = np.linalg.norm(c) / max(1.0, np.linalg.norm(xi))
        carried = P1
    return mem, base, con


def _off_reactions(system: LagrangeDiracSystem, q: Point, r: np.ndarray) -> np.ndarray:
    """``r`` without its component along the holonomic reactions ``dg(q)^T nu``.

    The reported momenta of a run with holonomic constraints are RATTLE
    projections (``p - dg(q)^T nu``): the basepoint of the structure is met
    modulo these reactions.
    """
    if not getattr(system, "n_holonomic", 0):
        return r
    G = np.asarray(system.holonomic_differential(q, system.params))
    if not G.size:
        return r
    return r - G.T @ np.linalg.lstsq(G @ G.T, G @ r, rcond=None)[0]


def _recorded_fields(system: LagrangeDiracSystem, trajectory: Trajectory, points: list, p: np.ndarray, xis: np.ndarray,
                     t: np.ndarray, h: float, rule: DiscreteLagrangian, fns: dict) -> dict:
    """The largest relative deviation of each recorded field from what the points and momenta imply."""
    out: dict[str, float] = {}
    K = len(points) - 1
    rel = lambda a, b: float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b)), initial=0.0))  # noqa: E731
    out["t"] = rel(np.asarray(t, dtype=float), float(t[0]) + h * np.arange(K + 1))
    rec_xi = getattr(trajectory, "xi", None)
    if rec_xi is not None and np.shape(rec_xi)[:1] == (K,):
        out["xi"] = rel(np.asarray(rec_xi, dtype=float), xis)
    v = getattr(trajectory, "v", None)
    energy = getattr(trajectory, "energy", None)
    if v is None or not isinstance(system, LagrangeDiracSystem):
        return out
    v = np.asarray(v, dtype=float)
    params = system.params
    if energy is not None:
        e_ref = np.array([float(fns["energy"](points[k], jnp.asarray(v[k]), jnp.asarray(p[k])))
                          for k in range(K + 1)])
        out["energy"] = rel(np.asarray(energy, dtype=float), e_ref)
    if K < 2:
        return out
    try:
        order = int(get_rule(rule).order_on(system.Q))
    except Exception:  # noqa: BLE001 - a rule without an order on this manifold: the central difference
        order = 2
    dev = 0.0
    if order > 2:
        for k in range(1, K):  # the Legendre velocity: dL/dv(q_k, v_k) - p_k in the constraint forces, C v_k = 0
            mom, C = fns["legendre"](points[k], jnp.asarray(v[k]))
            C = np.asarray(C) if system.n_constraints else np.zeros((0, len(p[k])))
            r = np.asarray(mom) - p[k]
            if C.size:
                r = r - C.T @ np.linalg.lstsq(C @ C.T, C @ r, rcond=None)[0]
                r = np.concatenate([r, C @ v[k]])
            dev = max(dev, float(np.max(np.abs(r))) / max(1.0, float(np.max(np.abs(p[k])))))
    else:
        # the central difference of the points, projected as the loop projects its records (holonomic rows)
        vc = np.stack([0.5 * (xis[k] - np.asarray(fns["inverse_retract"](points[k], points[k - 1]))) / h
                       for k in range(1, K)])
        if getattr(system, "n_holonomic", 0):
            inner = jax.tree.map(lambda *a: np.stack(a), *points[1:K])
            vc = np.asarray(fns["projection"](inner, jnp.asarray(vc), jnp.asarray(p[1:K]), params)[0])
        dev = float(np.max(np.abs(v[1:K] - vc) / np.maximum(1.0, np.max(np.abs(vc), axis=1, keepdims=True))))
    out["v"] = dev
    return out


def t0_grid(K: int, h: float) -> np.ndarray:
    """``k h`` for ``k = 0..K`` (times of a trajectory that does not store them)."""
    return h * np.arange(K + 1)


def _placed(system: LagrangeDiracSystem, forms: list[Matrix]) -> list[tuple[Matrix, slice]]:
    """Each form of the tree (post-order) with the frame columns it acts on."""
    out: list[tuple[Matrix, slice]] = []

    def walk(s, off):
        if _is_product(s):
            for sub, o in zip(s.subsystems, s.layout.offsets):
                walk(sub, off + o)
            out.append((forms[len(out)], slice(off, off + s.dim)))
        else:
            out.append((forms[len(out)], slice(off, off + s.dim)))

    walk(system, 0)
    return out
