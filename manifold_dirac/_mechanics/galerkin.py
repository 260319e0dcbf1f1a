"""Galerkin discrete Lagrangians of order ``2s``: ``"gauss4"`` (s = 2) and ``"gauss6"`` (s = 3).

The curve of a step is ``c(t) = R_{q0}(xi(t))``, ``t = t0 + tau h``, with
``xi(tau)`` the polynomial of degree ``s`` in the chart centred at ``q0``
through the control points ``X_j`` at ``tau = j/s``::

    X_0 = 0,   X_1, ..., X_{s-1}  (internal stages: unknowns),   X_s = xi = R_{q0}^{-1}(q1),

and the action is the ``s``-point Gauss--Legendre quadrature of ``L`` along it,
with the **true velocity of the curve** in the frame at each node::

    L_d(q0, q1) = ext_{X_1..X_{s-1}} h sum_i b_i L(c_i, v_i),
    c_i = R_{q0}(xi(tau_i)),   v_i = J_xi(xi(tau_i)) xi'(tau_i) / h,

``J_xi`` the Jacobian of the retraction in the frame at ``c_i``
(``Manifold.retract_with_jacobians``). On a left-trivialized group
``R_q(xi) = q tau(xi)`` this is ``J_xi = J_r(xi)``, the right Jacobian of
``tau`` (``dexp`` for ``exp``, ``dcay`` for Cayley), and ``v_i`` is exactly
the body velocity ``c^{-1} dc/dt`` of the curve: not ``xi/h``, which the
quadrature rules use and which caps them at order 2 (for Cayley not even
the midpoint's velocity: ``J_r(xi/2) xi != xi``). This is the Galerkin
construction of Marsden & West (Acta Numerica 2001, Sec. 2.6) in the
retraction's chart, the Lie-group form of Leok & Shingel (Front. Math. China
2012), Bogfjellmo & Marthinsen (FoCM 2016) and Hall & Leok (FoCM 2017):
degree-``s`` polynomials with ``s``-point Gauss quadrature give a
variational integrator of order ``2s``, for any retraction (the chart
only parametrizes the curves; no symmetry of the retraction is needed).

The internal stages are extra unknowns of the step's Newton solve, next to
``xi`` and the multipliers: ``z = (xi, X_1..X_{s-1}, mu)``; with
holonomic constraints also the multipliers ``Lambda_j`` of ``g`` at the
interior Gauss--Lobatto points of the curve, ``z = (xi, X_1..X_{s-1},
Lambda_1..Lambda_{s-1}, mu)`` (:class:`GalerkinRule` Notes, (G1)-(G5)). Their
equations (stationarity of the action, with the forces of the
Lagrange--d'Alembert principle added by the same quadrature) are
``RuleValue.stage_residual``; at their solution ``D1 L_d`` and ``D2 L_d``
are the partials of the action with the stages held (the stationarity
makes their variation drop out).

Where it applies: manifolds whose frame velocity of a curve
``R_{q0}(xi(t))`` does not depend on ``q0`` beyond the curve itself -- vector
spaces, matrix Lie groups with left-trivialized frames (SO(3), SE(2), and
any other :class:`~manifold_dirac._manifolds.lie_group.MatrixLieGroup`) and
products of them. Other manifolds (the sphere, whose frame moves with the
point) are refused with a ``ValueError``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from .._manifolds.base import Manifold
from .._types import Params, Point, Scalar, Vector
from .rules import (
    DiscreteLagrangian,
    RuleOrderWarning,
    RuleValue,
    StepContext,
    exactness_degree,
    node_geometry,
    nodes_are_symmetric,
    register_rule,
)
from .small import mm, mv, solve_small, vm
from .system import LagrangeDiracSystem

__all__ = ["GAUSS4", "GAUSS6", "GalerkinRule", "gauss_legendre", "lobatto_interior", "supports_galerkin"]


def gauss_legendre(s: int) -> tuple[tuple[float, float], ...]:
    """The ``s``-point Gauss--Legendre nodes and weights on ``[0, 1]`` (exact to degree ``2s - 1``)."""
    x, w = np.polynomial.legendre.leggauss(int(s))
    return tuple((float(0.5 * (xi + 1.0)), float(0.5 * wi)) for xi, wi in zip(x, w))


def lobatto_interior(s: int) -> np.ndarray:
    """The ``s - 1`` interior Gauss--Lobatto points on ``[0, 1]`` (roots of ``P_s'``; empty for ``s = 1``)."""
    if s < 2:
        return np.zeros(0)
    roots = np.polynomial.legendre.Legendre.basis(int(s)).deriv().roots()
    return np.sort(0.5 * (np.real(roots) + 1.0))


def _lagrange_tables(points: np.ndarray, taus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L, D)`` with ``L[i, j] = l_j(tau_i)``, ``D[i, j] = l_j'(tau_i)`` for the Lagrange basis on ``points``."""
    k = len(points)
    L = np.zeros((len(taus), k))
    D = np.zeros((len(taus), k))
    for j in range(k):
        others = np.delete(points, j)
        denom = np.prod(points[j] - others)
        coeffs = np.poly(others) / denom  # l_j as a polynomial (highest power first)
        L[:, j] = np.polyval(coeffs, taus)
        D[:, j] = np.polyval(np.polyder(coeffs), taus)
    return L, D


def supports_galerkin(Q: Manifold) -> bool:
    """Whether the frame velocity of ``R_{q0}(xi(t))`` is ``J_xi(xi) xi'`` independently of ``q0``.

    True for vector spaces, matrix Lie groups (left-trivialized) and products of them.
    """
    from .._manifolds.euclidean import Euclidean
    from .._manifolds.lie_group import MatrixLieGroup
    from .._manifolds.product import ProductManifold

    if isinstance(Q, ProductManifold):
        return all(supports_galerkin(f) for f in Q.factors)
    return isinstance(Q, (Euclidean, MatrixLieGroup))


def _is_vector_space(Q: Manifold) -> bool:
    from .._manifolds.euclidean import Euclidean
    from .._manifolds.product import ProductManifold

    if isinstance(Q, ProductManifold):
        return all(_is_vector_space(f) for f in Q.factors)
    return isinstance(Q, Euclidean)


@dataclass(frozen=True, eq=False)
class GalerkinRule(DiscreteLagrangian):
    """A Galerkin discrete Lagrangian: degree-``s`` curves in the retraction's chart (module docstring).

    Parameters
    ----------
    name : str
        The registered name (``discrete_lagrangian=name``).
    degree : int
        ``s >= 1``, the degree of the polynomial ``xi(tau)``; ``s - 1``
        internal stages of ``dim`` unknowns each.
    quadrature : tuple of (tau, b), optional
        Nodes in ``[0, 1]`` and weights; by default the ``s``-point
        Gauss--Legendre rule (:func:`gauss_legendre`).
    order : int, optional
        Declared order; by default ``min(2 s, d + 1)`` with ``d`` the
        exactness degree of the quadrature. A larger declaration is
        downgraded with a :class:`~manifold_dirac._mechanics.rules.RuleOrderWarning`
        that says why (Marsden & West 2001, Thm 2.6.2: order
        ``min(2s, d + 1)``).
    degenerate_safe : bool
        Whether the rule is stable for Lagrangians linear in some velocities (degenerate ones).
    constrained_order : int, optional
        Order with nonholonomic constraints and the symmetric scheme (the
        scheme's discrete constraint is second order: measured 2, see
        ``docs/schemes.md``).

    Attributes
    ----------
    symmetric : bool
        Whether the quadrature is symmetric; the rule is self-adjoint on a
        vector space only (:meth:`symmetric_on`): on a group the chart
        centred at ``q0`` is not the one centred at ``q1``, and the adjoint
        defect is ``O(h^{2s+1})``, as small as the local error but not zero.

    Notes
    -----
    With ``l_j`` the Lagrange basis on ``tau = j/s``, ``xi_i = sum_j l_j(tau_i) X_j``,
    ``w_i = sum_j l_j'(tau_i) X_j / h``, ``v_i = J_xi(xi_i) w_i`` and
    ``(dL/dq, dL/dv)`` at ``(c_i, v_i)``, the partials of the action in the
    control points are (chart covectors)::

        E_j = sum_i b_i [h l_j(tau_i) a_i + l_j'(tau_i) beta_i],
        a_i = J_xi^T dL/dq + d/dxi <dL/dv, J_xi(xi) w_i>,   beta_i = J_xi^T dL/dv,

    and the forces of the Lagrange--d'Alembert principle
    ``int <F, dc> dt ~ h sum_i b_i <F_i, J_xi dxi_i + J_q dq0>``
    give ``Phi_j = h sum_i b_i l_j(tau_i) J_xi^T F_i``. The step solves
    ``E_j + Phi_j = 0`` for ``j = 1..s-1`` (the stages) with the scheme's
    equations, and::

        D1 L_d = h sum_i b_i J_q,i^T dL/dq_i + J0^T E_s,     D2 L_d = J1^T E_s,
        f^-    = h sum_i b_i J_q,i^T F_i     + J0^T Phi_s,   f^+    = J1^T Phi_s,

    entering ``p_k = -D1 L_d - f^-``, ``p_{k+1} = D2 L_d + f^+`` (Parks & Leok
    (52) with the forces of (24)). ``J_q, J_xi`` are the Jacobians of
    ``R_{q0}`` at ``xi_i`` (frame at ``c_i``), ``J0, J1`` those of
    ``xi = R_{q0}^{-1}(q1)``. With ``s = 1`` and the midpoint node this is
    the midpoint rule with the curve's true velocity.

    **Holonomic constraints** ``g(q) = 0`` (``r`` rows). The ends ``q_k``,
    ``q_{k+1}`` are on ``N = {g = 0}`` by the step's SHAKE equation; the
    curve is held on ``N`` also at the ``s - 1`` interior Gauss--Lobatto
    points ``sigma_j`` (roots of ``P_s'`` on ``[0, 1]``: ``1/2`` for
    ``s = 2``, ``(1 -+ 1/sqrt 5)/2`` for ``s = 3``; :func:`lobatto_interior`),
    with multipliers ``Lambda_j`` (``r`` each) as further stages,
    ``z = (xi, X_1..X_{s-1}, Lambda_1..Lambda_{s-1}, mu)``::

        (G1)  L_d^N(q0, q1) = ext_{X, Lambda} [ h sum_i b_i L(c_i, v_i) - sum_j <Lambda_j, g^(y_j)> ],
              y_j = R_{q0}(sum_l l_l(sigma_j) X_l),   g^ = g row by row / |dg|,   q0, q1 in N,
        (G2)  E_l + Phi_l - sum_j l_l(sigma_j) J_xi,j^T dg^(y_j)^T Lambda_j = 0,   l = 1..s-1,
        (G3)  g^(y_j) = 0,   j = 1..s-1,
        (G4)  D1 L_d^N = D1 L_d - sum_j J_q,j^T dg^(y_j)^T Lambda_j + J0^T e_s,   D2 L_d^N = D2 L_d + J1^T e_s,
              e_s = - sum_j l_s(sigma_j) J_xi,j^T dg^(y_j)^T Lambda_j,
        (G5)  p_k + D1 L_d^N + f^- = dg(q_k)^T mu,   g(q_{k+1}) = 0,   p_{k+1} = D2 L_d^N + f^+,

    (G5) the constrained discrete Euler--Lagrange equations of Marsden &
    West (Acta Numerica 2001, Sec. 3.5) for the discrete Lagrangian (G1) of
    curves on ``N`` at ``0, sigma_1..sigma_{s-1}, 1``; (G2)-(G4) are (G1)'s
    stationarity and partials, the point terms of the Notes above with the
    reaction ``-dg^T Lambda_j`` in place of ``h b_i dL/dq``. Why the Lobatto
    points: ``g(c(tau))`` then vanishes at the ``s + 1`` Lobatto points, so it
    is the Lobatto nodal polynomial (orthogonal to degree ``<= s - 2``) times
    a polynomial, the action's first-order defect ``int lambda g(c) dt`` is
    ``O(h^{2s+1})`` like the quadrature's, and the order stays ``2s`` (the
    Lobatto placement of the algebraic conditions in Jay's SPARK methods,
    SIAM J. Numer. Anal. 1996 and 2006). Measured on the Cartesian
    pendulum: 4.00 and 6.00; the ends alone give 2.0, equispaced interior
    points (``s = 3``) 3.99, and the ``s`` Gauss nodes plus the ends are
    ``s + 1`` conditions on ``s`` linear coefficients of ``dg (c - q0)``
    (singular step equations for short steps).

    Examples
    --------
    The registered Galerkin rules ``gauss4`` and ``gauss6``:

    >>> import manifold_dirac as md
    >>> r = md.get_rule("gauss4")
    >>> isinstance(r, md.GalerkinRule), r.degree, r.order
    (True, 2, 4)
    >>> md.get_rule("gauss6").order
    6
    """

    name: str
    degree: int
    quadrature: tuple[tuple[float, float], ...] | None = None
    order: int | None = None
    degenerate_safe: bool = False
    constrained_order: int | None = 2
    symmetric: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        s = self.degree
        if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1:
            raise ValueError(f"GalerkinRule {self.name!r}: degree must be a positive integer, got {s!r}")
        quad = gauss_legendre(s) if self.quadrature is None else tuple(
            (float(a), float(b)) for a, b in self.quadrature)
        if not quad:
            raise ValueError(f"GalerkinRule {self.name!r}: needs at least one quadrature node")
        for a, _ in quad:
            if not 0.0 <= a <= 1.0:
                raise ValueError(f"GalerkinRule {self.name!r}: quadrature node tau={a} not in [0, 1]")
        wsum = sum(b for _, b in quad)
        if abs(wsum - 1.0) > 1e-12:
            raise ValueError(f"GalerkinRule {self.name!r}: quadrature weights sum to {wsum}, not 1")
        object.__setattr__(self, "quadrature", quad)
        deg = exactness_degree(quad)
        reach = min(2 * s, deg + 1)
        if self.order is None:
            object.__setattr__(self, "order", reach)
        elif self.order > reach:
            import warnings

            why = (f"degree-{s} curves give at most order {2 * s}" if 2 * s <= deg + 1 else
                   f"its quadrature integrates polynomials exactly only up to degree {deg}, so L_d is "
                   f"only order-{deg + 1} accurate")
            warnings.warn(f"GalerkinRule {self.name!r}: declared order {self.order} is downgraded to {reach}: {why}",
                          RuleOrderWarning, stacklevel=3)
            object.__setattr__(self, "order", reach)
        object.__setattr__(self, "symmetric", nodes_are_symmetric(quad))
        points = np.arange(s + 1) / s
        taus = np.array([a for a, _ in quad])
        L, D = _lagrange_tables(points, taus)
        object.__setattr__(self, "_L", L)
        object.__setattr__(self, "_D", D)
        object.__setattr__(self, "_frac", points[1:s])
        object.__setattr__(self, "_Lc", _lagrange_tables(points, lobatto_interior(s))[0])

    # identity: the compiled-step cache is keyed by the rule
    def _key(self) -> tuple:
        return (type(self), self.name, self.degree, self.quadrature, self.order, self.degenerate_safe,
                self.constrained_order)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GalerkinRule) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def nodes(self) -> tuple[tuple[float, float], ...]:
        """The quadrature's ``(tau, b)`` (where ``L`` and ``F`` are evaluated; for diagnostics)."""
        return self.quadrature  # type: ignore[return-value]

    # ------------------------------------------------------------ traits
    def _require(self, Q: Manifold) -> None:
        if not supports_galerkin(Q):
            raise ValueError(
                f"discrete Lagrangian {self.name!r} needs a vector space, a matrix Lie group or a product of "
                f"them (the curve's frame velocity J_xi(xi) xi' must not depend on the chart's centre); "
                f"{Q!r} is not one: use 'midpoint'"
            )

    def order_on(self, Q: Manifold) -> int:
        """``min(2s, d + 1)`` on every supported manifold, whatever its retraction (ValueError elsewhere)."""
        self._require(Q)
        return int(self.order)  # type: ignore[arg-type]

    def symmetric_on(self, Q: Manifold) -> bool:
        """Self-adjoint on a vector space with a symmetric quadrature only (see the class docstring)."""
        self._require(Q)
        return self.symmetric and _is_vector_space(Q)

    def n_stages(self, n: int, r: int = 0) -> int:
        """``(s - 1) n`` internal control points, plus ``s r`` node multipliers with ``r`` holonomic constraints."""
        return (self.degree - 1) * (n + r)

    def n_curve_stages(self, n: int) -> int:
        """The control-point part of the stages (the rest are the node multipliers ``Lambda_i``)."""
        return (self.degree - 1) * n

    def warm_stages(self, xi: jax.Array, stored: jax.Array) -> jax.Array:
        """``X_j = (j/s) xi + delta_j``: the straight line plus the last step's deviation (and its multipliers)."""
        n = xi.shape[-1]
        m = self.n_curve_stages(n)
        line = (jnp.asarray(self._frac)[:, None] * xi[None, :]).reshape(-1)
        return jnp.concatenate([line + stored[:m], stored[m:]])

    def stored_stages(self, xi: jax.Array, stages: jax.Array) -> jax.Array:
        """``delta_j = X_j - (j/s) xi`` (O(h^2), slowly varying: the next step's warm start); multipliers kept."""
        m = self.n_curve_stages(xi.shape[-1])
        line = (jnp.asarray(self._frac)[:, None] * xi[None, :]).reshape(-1)
        return jnp.concatenate([stages[:m] - line, stages[m:]])

    # ---------------------------------------------------------- evaluation
    def _controls(self, xi: jax.Array, stages: jax.Array) -> jax.Array:
        n = xi.shape[-1]
        return jnp.concatenate([jnp.zeros((1, n), xi.dtype), jnp.reshape(stages, (self.degree - 1, n)), xi[None]])

    def action(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, stages: jax.Array, h: Scalar,
               params: Params = None) -> jax.Array:
        """``h sum_i b_i L(c_i, v_i)`` for given stages (scalar; not extremized)."""
        Q = system.Q
        X = self._controls(xi, stages)
        total = 0.0
        for i, (_, b) in enumerate(self.quadrature):  # type: ignore[union-attr]
            x = vm(jnp.asarray(self._L[i]), X)
            w = vm(jnp.asarray(self._D[i]), X) / h
            c, _, Jx = Q.retract_with_jacobians(q0, x)
            total = total + b * system.lagrangian(c, mv(Jx, w), params)
        return h * total

    def solve_stages(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, h: Scalar, params: Params = None,
                     iterations: int = 12) -> jax.Array:
        """The stationary stages for ``(q0, R_{q0}(xi))`` (unforced), by Newton from the straight line."""
        n = system.dim
        st = self.warm_stages(xi, jnp.zeros(self.n_stages(n)))
        if self.degree == 1:
            return st

        def res(z):
            return jax.grad(lambda y: self.action(system, q0, xi, y, h, params))(z)

        return jax.lax.fori_loop(0, iterations, lambda _, z: z - solve_small(jax.jacfwd(res)(z), res(z)), st)

    def value(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, h: Scalar, params: Params = None,
              stages: jax.Array | None = None) -> jax.Array:
        """``L_d(q0, R_{q0}(xi))`` (scalar): the action at the stationary stages (solved when not given)."""
        self._require(system.Q)
        if stages is None:
            stages = self.solve_stages(system, q0, xi, h, params)
        return self.action(system, q0, xi, stages, h, params)

    def evaluate(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, ctx: StepContext,
                 stages: jax.Array | None = None) -> RuleValue:
        """``D1 L_d``, ``D2 L_d``, the forces and the stage equations at ``(q0, R_{q0}(xi))`` (Notes)."""
        h, t0, params, u, extra_nodes = ctx
        Q, n, s = system.Q, system.dim, self.degree
        self._require(Q)
        if stages is None:
            raise ValueError(
                f"discrete Lagrangian {self.name!r} has internal stages: evaluate it with stages= (the step "
                "solves them); it cannot serve as a per-subsystem rule of an interconnection"
            )
        q1, J0, J1 = Q.retract_with_inverse_jacobians(q0, xi)
        r = system.n_holonomic
        mc = self.n_curve_stages(n)
        lam = jnp.reshape(stages[mc:], (s - 1, r))  # Lambda_j at the interior Lobatto points (empty without g)
        stages = stages[:mc]
        X = self._controls(xi, stages)
        Lm, Dm = jnp.asarray(self._L), jnp.asarray(self._D)
        taus = jnp.asarray([a for a, _ in self.quadrature])  # type: ignore[union-attr]
        bw = jnp.asarray([b for _, b in self.quadrature])[:, None]  # type: ignore[union-attr]
        forced = system.has_force or u is not None

        def node(x, w, tau):
            # one quadrature node, vmapped over the nodes (traced once: compile time independent of s)
            c, Jq, Jx = Q.retract_with_jacobians(q0, x)
            v = mv(Jx, w)
            val, dq, dv = system.value_and_partials(c, v, params)
            # d/dxi <dL/dv, J_xi(xi) w>: the frame velocity's dependence on the point of the chart
            _, vjp = jax.vjp(lambda y: mv(Q.retract_with_jacobians(q0, y)[2], w), x)
            a = vm(dq, Jx) + vjp(dv)[0]
            sc = jnp.maximum(jnp.max(jnp.abs(h * dq)), jnp.max(jnp.abs(dv)))
            out = (val, a, vm(dv, Jx), vm(dq, Jq))
            if forced:
                F = system.force(t0 + tau * h, c, v, params)
                F = u if F is None else (F if u is None else F + u)
                sc = jnp.maximum(sc, h * jnp.max(jnp.abs(F)))
                out = out + (vm(F, Jx), vm(F, Jq))
            return out + (sc,)

        outs = jax.vmap(node)(mm(Lm, X), mm(Dm, X) / h, taus)
        val, a, beta, dq0 = outs[:4]
        finite = jnp.all(jnp.isfinite(val))
        scale = jnp.max(outs[-1])
        E = mm(Lm.T, bw * h * a) + mm(Dm.T, bw * beta)  # (s + 1, n): partials in the control points
        D1 = h * jnp.sum(bw * dq0, axis=0) + vm(E[s], J0)
        D2 = vm(E[s], J1)
        if forced:
            Phi = mm(Lm.T, bw * h * outs[4])
            fm = h * jnp.sum(bw * outs[5], axis=0) + vm(Phi[s], J0)
            fp = vm(Phi[s], J1)
            E = E + Phi
        else:
            fm = fp = jnp.zeros(n)
        nodes = {sn: node_geometry(Q, q0, q1, xi, J0, J1, sn) for sn in dict.fromkeys(extra_nodes)}
        if r:
            # the constraint at the interior Gauss--Lobatto points sigma_j: - sum_j <Lambda_j, g(c(sigma_j))>
            # added to the action ((G4)-(G6) of the Notes), g scaled row by row by |dg|
            def point(x, lm):
                c, Jq, Jx = Q.retract_with_jacobians(q0, x)
                G = system.holonomic_differential(c, params)
                norm = jnp.sqrt(jnp.sum(G * G, axis=1))
                norm = jnp.where(norm > 0, norm, 1.0)
                react = -vm(lm / norm, G)
                return vm(react, Jx), vm(react, Jq), system.holonomic(c, params) / norm

            Lc = jnp.asarray(self._Lc)
            ax, aq, gres = jax.vmap(point)(mm(Lc, X), lam)
            Eg = mm(Lc.T, ax)
            E = E + Eg
            D1 = D1 + jnp.sum(aq, axis=0) + vm(Eg[s], J0)
            D2 = D2 + vm(Eg[s], J1)
        stage_residual = E[1:s].reshape(-1)
        if r:
            stage_residual = jnp.concatenate([stage_residual, gres.reshape(-1)])
        return RuleValue(q1, J0, J1, D1, D2, fm, fp, scale, finite, nodes, stage_residual)


GAUSS4 = GalerkinRule("gauss4", 2)
"""Quadratic curves, 2-point Gauss: order 4, ``dim`` extra unknowns per step."""
GAUSS6 = GalerkinRule("gauss6", 3)
"""Cubic curves, 3-point Gauss: order 6, ``2 dim`` extra unknowns per step."""

register_rule(GAUSS4)
register_rule(GAUSS6)
