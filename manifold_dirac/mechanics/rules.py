"""Discrete Lagrangians: quadrature rules along the retraction curve.

A rule is a set of nodes ``(s_i, w_i)`` on the curve ``c(s) = R_{q0}(s xi)``,
``xi = R_{q0}^{-1}(q1)``::

    L_d(q0, q1) = h * sum_i w_i L(c(s_i), xi / h)

(on a Lie group with ``tau(-xi) = tau(xi)^{-1}`` the body velocity ``xi/h``
serves at every node). The built-in rules:

============  =================  =====  =========
rule          nodes (s, w)       order  symmetric
============  =================  =====  =========
rectangle+    (0, 1)             1      no
rectangle-    (1, 1)             1      no
midpoint      (1/2, 1)           2      yes
trapezoid     (0, 1/2), (1, 1/2) 2      yes
============  =================  =====  =========

The order and symmetry hold for a *symmetric* retraction
(``Retraction.symmetric``); with a non-symmetric one (SE(2)'s ``so2xr2``)
the symmetric rules drop to first order. A new rule is a
:class:`QuadratureRule` with other nodes plus :func:`register_rule`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..manifolds.base import Manifold
from .system import LagrangeDiracSystem

__all__ = ["RULES", "NodeGeometry", "QuadratureRule", "RuleValue", "get_rule", "node_geometry", "register_rule"]


class NodeGeometry(NamedTuple):
    """A point ``c = R_{q0}(s xi)`` of the retraction curve and its derivatives.

    Attributes
    ----------
    point : point
    P0, P1 : array, shape=[dim, dim]
        ``dc = P0 dq0 + P1 dq1`` in the frame at ``c``: ``P0 = J_q + s J_xi J0``,
        ``P1 = s J_xi J1`` (``I, 0`` at ``s = 0``; ``0, I`` at ``s = 1``).
    Jxi : array, shape=[dim, dim]
        ``J_xi`` of ``R_{q0}`` at ``s xi``: the curve's tangent at ``c`` is
        ``Jxi xi`` per unit ``s`` (frame at ``c``).
    """

    point: Any
    P0: jax.Array
    P1: jax.Array
    Jxi: jax.Array


def node_geometry(Q: Manifold, q0: Any, q1: Any, xi: jax.Array, J0: jax.Array, J1: jax.Array, s: float) -> NodeGeometry:
    """The node ``c = R_{q0}(s xi)`` with ``P0 = dc/dq0``, ``P1 = dc/dq1`` and ``J_xi``."""
    eye = jnp.eye(Q.dim)
    if s == 0.0:
        return NodeGeometry(q0, eye, jnp.zeros_like(eye), eye)
    if s == 1.0:
        _, _, Jx = Q.retract_with_jacobians(q0, xi)
        return NodeGeometry(q1, jnp.zeros_like(eye), eye, Jx)
    c, Jq, Jx = Q.retract_with_jacobians(q0, s * xi)
    return NodeGeometry(c, Jq + s * (Jx @ J0), s * (Jx @ J1), Jx)


class RuleValue(NamedTuple):
    """What a scheme needs from ``L_d`` at ``(q0, q1 = R_{q0}(xi))``.

    Attributes
    ----------
    q1 : point
    J0, J1 : array, shape=[dim, dim]
        Jacobians of ``xi = R_{q0}^{-1}(q1)``.
    D1, D2 : array, shape=[dim]
        ``D1 L_d`` (covector at ``q0``) and ``D2 L_d`` (at ``q1``).
    f_minus, f_plus : array, shape=[dim]
        Discrete forces (Lagrange--d'Alembert--Pontryagin, (24)).
    scale : array, shape=[]
        Size of the terms summed into ``D1`` (for relative tolerances).
    finite : bool array, shape=[]
        Whether every value of ``L`` at the nodes is finite (the step
        equations use only derivatives, which can be finite where ``L`` is not:
        ``d/dx log(x) = 1/x`` at ``x < 0``; such a step is a failure).
    nodes : dict of float to NodeGeometry
        The rule's nodes and any the scheme asked for.
    """

    q1: Any
    J0: jax.Array
    J1: jax.Array
    D1: jax.Array
    D2: jax.Array
    f_minus: jax.Array
    f_plus: jax.Array
    scale: jax.Array
    finite: jax.Array
    nodes: dict


@dataclass(frozen=True)
class QuadratureRule:
    """A discrete Lagrangian by quadrature along the retraction curve.

    Parameters
    ----------
    name : str
    nodes : tuple of (s, w)
        Node parameters ``s`` in [0, 1] and weights ``w`` summing to 1.
    order : int
        Order of the variational integrator with a symmetric retraction.
    symmetric : bool
        Whether ``L_d(q0, q1; h) = -L_d(q1, q0; -h)`` with a symmetric retraction.
    degenerate_safe : bool
        Whether the rule is known to be stable for Lagrangians linear in some
        velocities (the midpoint rule among the built-ins).

    Notes
    -----
    With ``v = xi/h`` and nodes ``c_i = R_{q0}(s_i xi)``::

        D1 L_d = sum_i w_i [h P0_i^T dL/dq(c_i, v) + J0^T dL/dv(c_i, v)]
        D2 L_d = sum_i w_i [h P1_i^T dL/dq(c_i, v) + J1^T dL/dv(c_i, v)]

    and the discrete forces of the Lagrange--d'Alembert--Pontryagin principle
    (24), ``int <F, dq> dt ~ h sum_i w_i <F_i, dc_i>``::

        f^- = h sum_i w_i P0_i^T (F(t0 + s_i h, c_i, v) + u),   f^+ = h sum_i w_i P1_i^T (F_i + u),

    entering ``p_k = -D1 L_d - f^- (+ A^T mu)``, ``p_{k+1} = D2 L_d + f^+``
    (``u`` a control covector held over the step). On a vector space with the
    midpoint rule ``f^+- = (h/2) F``.
    """

    name: str
    nodes: tuple[tuple[float, float], ...]
    order: int
    symmetric: bool
    degenerate_safe: bool = False

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError(f"QuadratureRule {self.name!r}: needs at least one node")
        for s, _ in self.nodes:
            if not 0.0 <= s <= 1.0:
                raise ValueError(f"QuadratureRule {self.name!r}: node parameter s={s} not in [0, 1]")
        wsum = sum(w for _, w in self.nodes)
        if abs(wsum - 1.0) > 1e-12:
            raise ValueError(f"QuadratureRule {self.name!r}: weights sum to {wsum}, not 1")

    def order_on(self, Q: Manifold) -> int:
        """The order this rule attains with ``Q``'s retraction."""
        return self.order if Q.retraction.symmetric else min(self.order, 1)

    def value(self, system: LagrangeDiracSystem, q0: Any, xi: jax.Array, h: Any, params: Any = None) -> jax.Array:
        """``L_d(q0, R_{q0}(xi))`` at one point (scalar)."""
        Q, v = system.Q, xi / h
        return h * sum(w * system.lagrangian(Q.retract(q0, s * xi), v, params) for s, w in self.nodes)

    def evaluate(
        self,
        system: LagrangeDiracSystem,
        q0: Any,
        xi: jax.Array,
        h: Any,
        t0: Any,
        params: Any = None,
        u: jax.Array | None = None,
        extra_nodes: tuple[float, ...] = (),
    ) -> RuleValue:
        """``D1 L_d``, ``D2 L_d`` and the discrete forces at ``(q0, R_{q0}(xi))`` (see Notes)."""
        Q = system.Q
        q1, J0, J1 = Q.retract_with_inverse_jacobians(q0, xi)
        v = xi / h
        nodes = {s: node_geometry(Q, q0, q1, xi, J0, J1, s) for s in dict.fromkeys(
            tuple(s for s, _ in self.nodes) + tuple(extra_nodes))}
        D1 = D2 = fm = fp = jnp.zeros(Q.dim)
        scale = jnp.zeros(())
        finite = jnp.bool_(True)
        for s, w in self.nodes:
            g = nodes[s]
            val, dq, dv = system.value_and_partials(g.point, v, params)
            finite = finite & jnp.isfinite(val)
            hdq = h * dq
            D1 = D1 + w * (hdq @ g.P0 + dv @ J0)
            D2 = D2 + w * (hdq @ g.P1 + dv @ J1)
            scale = jnp.maximum(scale, jnp.maximum(jnp.max(jnp.abs(hdq)), jnp.max(jnp.abs(dv))))
            F = system.force(t0 + s * h, g.point, v, params)
            if u is not None:
                F = u if F is None else F + u
            if F is not None:
                fm = fm + (w * h) * (F @ g.P0)
                fp = fp + (w * h) * (F @ g.P1)
                scale = jnp.maximum(scale, h * jnp.max(jnp.abs(F)))
        return RuleValue(q1, J0, J1, D1, D2, fm, fp, scale, finite, nodes)


RECTANGLE_PLUS = QuadratureRule("rectangle+", ((0.0, 1.0),), order=1, symmetric=False)
RECTANGLE_MINUS = QuadratureRule("rectangle-", ((1.0, 1.0),), order=1, symmetric=False)
MIDPOINT = QuadratureRule("midpoint", ((0.5, 1.0),), order=2, symmetric=True, degenerate_safe=True)
TRAPEZOID = QuadratureRule("trapezoid", ((0.0, 0.5), (1.0, 0.5)), order=2, symmetric=True)

RULES: dict[str, QuadratureRule] = {r.name: r for r in (RECTANGLE_PLUS, RECTANGLE_MINUS, MIDPOINT, TRAPEZOID)}


def register_rule(rule: QuadratureRule, *, overwrite: bool = False) -> QuadratureRule:
    """Make ``rule`` available by its name (``discrete_lagrangian=rule.name``)."""
    if not isinstance(rule, QuadratureRule):
        raise TypeError(f"register_rule: give a QuadratureRule instance, got {type(rule).__name__}")
    if rule.name in RULES and not overwrite:
        raise ValueError(f"a discrete Lagrangian named {rule.name!r} exists; pass overwrite=True")
    RULES[rule.name] = rule
    return rule


def get_rule(rule: str | QuadratureRule) -> QuadratureRule:
    """Look a rule up by name (or pass an instance through)."""
    if isinstance(rule, QuadratureRule):
        return rule
    try:
        return RULES[rule]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown discrete Lagrangian {rule!r}; valid: " + ", ".join(repr(k) for k in RULES)
            + " (add one with register_rule)"
        ) from None
