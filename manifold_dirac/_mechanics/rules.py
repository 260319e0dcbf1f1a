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
the symmetric rules drop to first order. A rule with a node inside the
step (the midpoint rule) is moreover self-adjoint only when the retraction
is a flow, ``R_{R_q(a xi)}(b xi) = R_q((a + b) xi)`` (``exp`` on a group,
translation): with SO(3)'s Cayley map ``L_d(q0, q1; h) + L_d(q1, q0; -h)``
is ``9e-7`` at ``h = 0.1``, so :meth:`QuadratureRule.symmetric_on` does not
declare that combination symmetric (it stays second order). A new rule is a
:class:`QuadratureRule` with other nodes plus :func:`register_rule`.

Higher orders need more than nodes on the retraction curve: the velocity
``xi/h`` at every node caps a :class:`QuadratureRule` at order 2 (a rule
declaring more is downgraded with a :class:`RuleOrderWarning`). The
Galerkin rules ``"gauss4"`` and ``"gauss6"``
(:class:`~manifold_dirac._mechanics.galerkin.GalerkinRule`) reach orders 4
and 6 with internal stages solved with the step. Every rule is a
:class:`DiscreteLagrangian`, whose abstract members are the contract a new
kind of discrete Lagrangian fulfils (one subclass in one file, plus
:func:`register_rule`); the step passes it a :class:`StepContext`.
"""

from __future__ import annotations

import abc
import functools
import warnings
from dataclasses import dataclass
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeGuard, TypeVar, overload

import jax
import jax.numpy as jnp
import numpy as np

from .._registry import Registry
from .._manifolds.base import Manifold
from .._manifolds.product import ProductManifold, block_diag
from .._types import Covector, Matrix, Params, Point, Scalar, Vector
from .small import mm, vm
from .system import LagrangeDiracSystem

__all__ = ["RULES", "DiscreteLagrangian", "NodeGeometry", "QuadratureRule", "RuleOrderWarning", "RuleValue",
           "StepContext", "exactness_degree", "get_rule", "is_flow", "node_geometry", "register_rule"]


class RuleOrderWarning(UserWarning):
    """A rule declared an order (or symmetry) its construction cannot reach; it was downgraded."""


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

    point: Point
    P0: jax.Array
    P1: jax.Array
    Jxi: jax.Array


_PRODUCT_RETRACTION = ("retract", "retract_with_jacobians", "retract_with_inverse_jacobians")


def _blockwise(Q: Manifold) -> TypeGuard[ProductManifold]:
    """Whether ``Q`` is a product manifold with the product of its factors' retractions (block-diagonal Jacobians)."""
    return isinstance(Q, ProductManifold) and all(
        getattr(type(Q), m) is getattr(ProductManifold, m) for m in _PRODUCT_RETRACTION)


def node_geometry(Q: Manifold, q0: Point, q1: Point, xi: Vector, J0: Matrix, J1: Matrix, s: float) -> NodeGeometry:
    """The node ``c = R_{q0}(s xi)`` with ``P0 = dc/dq0``, ``P1 = dc/dq1`` and ``J_xi``.

    On a product manifold factor by factor: its retraction acts on each
    factor alone, so these matrices are block-diagonal, and the blocks'
    products are what the dense products would compute, without the
    products of the zero blocks (which XLA cannot drop: ``0 x`` is not 0
    for a non-finite ``x``). Only for a product whose retraction is the
    factors' own (a subclass that overrides one of its retraction methods
    may couple the factors: the dense formula then).
    """
    if _blockwise(Q):
        parts = [node_geometry(f, a, b, xi[Q.slice(i)], J0[Q.slice(i), Q.slice(i)], J1[Q.slice(i), Q.slice(i)], s)
                 for i, (f, a, b) in enumerate(zip(Q.factors, q0, q1))]
        return NodeGeometry(tuple(g.point for g in parts), block_diag([g.P0 for g in parts]),
                            block_diag([g.P1 for g in parts]), block_diag([g.Jxi for g in parts]))
    eye = jnp.eye(Q.dim)
    if s == 0.0:
        return NodeGeometry(q0, eye, jnp.zeros_like(eye), eye)
    if s == 1.0:
        _, _, Jx = Q.retract_with_jacobians(q0, xi)
        return NodeGeometry(q1, jnp.zeros_like(eye), eye, Jx)
    c, Jq, Jx = Q.retract_with_jacobians(q0, s * xi)
    return NodeGeometry(c, Jq + s * mm(Jx, J0), s * mm(Jx, J1), Jx)


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
    stage_residual : array, shape=[n_stages], optional
        The stationarity conditions of the action in the rule's internal
        stages (Galerkin rules); None for a rule without stages.
    """

    q1: Point
    J0: jax.Array
    J1: jax.Array
    D1: jax.Array
    D2: jax.Array
    f_minus: jax.Array
    f_plus: jax.Array
    scale: jax.Array
    finite: jax.Array
    nodes: dict
    stage_residual: jax.Array | None = None


def exactness_degree(nodes: Sequence[tuple[float, float]], max_degree: int = 40) -> int:
    """The largest ``d`` with ``sum_i w_i s_i^k = 1/(k+1)`` for ``k <= d`` (-1 if none)."""
    s = np.array([x for x, _ in nodes], float)
    w = np.array([y for _, y in nodes], float)
    d = -1
    for k in range(max_degree + 1):
        if abs(np.sum(w * s**k) - 1.0 / (k + 1)) > 1e-12:
            break
        d = k
    return d


def nodes_are_symmetric(nodes: Sequence[tuple[float, float]]) -> bool:
    """Whether the nodes are invariant under ``s -> 1 - s`` with equal weights."""
    a = sorted((round(float(s), 12), round(float(w), 12)) for s, w in nodes)
    b = sorted((round(1.0 - float(s), 12), round(float(w), 12)) for s, w in nodes)
    return a == b


@functools.lru_cache(maxsize=64)
def is_flow(Q: Manifold) -> bool:
    """Whether ``Q``'s retraction is a flow: ``R_{R_q(a xi)}(b xi) = R_q((a + b) xi)`` (checked numerically).

    True for ``exp`` on a Lie group and for translation; false for the
    Cayley map and for retractions whose frames move (the sphere). Checked
    once per manifold at a fixed point and ``xi``.
    """
    with jax.ensure_compile_time_eval():  # concrete values also when first asked inside jax.jit
        q = Q.default_point()
        xi = 0.4 * jnp.sin(1.0 + jnp.arange(Q.dim, dtype=jnp.float64))
        a = Q.retract(Q.retract(q, 0.3 * xi), 0.7 * xi)
        b = Q.retract(q, xi)
        d = max(float(jnp.max(jnp.abs(x - y))) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)))
    return d < 1e-12


class StepContext(NamedTuple):
    """What a step passes to a discrete Lagrangian besides the point ``(q0, xi)``.

    Attributes
    ----------
    h : scalar
        The step size (may be traced).
    t0 : scalar
        The time at the start of the step (forces are evaluated at ``t0 + s h``).
    params : pytree, optional
        The system's parameters (``None``: the system's own).
    u : array, shape=[n], optional
        A control covector held over the step (added to the force).
    extra_nodes : tuple of float
        Curve parameters ``s`` whose :class:`NodeGeometry` the scheme needs
        (``(0.5,)`` for the symmetric scheme); static Python floats.
    """

    h: Scalar
    t0: Scalar = 0.0
    params: Params = None
    u: Covector | None = None
    extra_nodes: tuple[float, ...] = ()


class DiscreteLagrangian(abc.ABC):
    """The contract of a discrete Lagrangian ``L_d(q0, q1) ~ int L dt`` (one step of size ``h``).

    A scheme (:class:`~manifold_dirac._mechanics.schemes.Scheme`) and the step
    (:class:`~manifold_dirac._mechanics.step.StepMap`) use a discrete
    Lagrangian only through the members below. A new kind of discrete
    Lagrangian is one subclass in one file, made available by name with
    :func:`register_rule` (an instance, or ``@register_rule`` on a class
    with a default constructor); nothing else in the library changes.

    **What an implementation provides** (abstract here):

    1. ``name`` (str), ``order`` (int >= 1), ``symmetric`` (bool) and
       ``nodes`` (tuple of ``(s, w)``: where ``L`` and the force are
       evaluated along the step, used to diagnose a failed step) -- class
       attributes, dataclass fields or properties.
    2. :meth:`order_on` and :meth:`symmetric_on`: the order and the
       self-adjointness reached with a manifold's retraction; a
       ``ValueError`` saying why for a manifold the rule cannot serve.
    3. :meth:`value`: ``L_d(q0, R_{q0}(xi))``, a scalar (laws and tests
       differentiate it to check :meth:`evaluate`).
    4. :meth:`evaluate`: everything the step equations need at
       ``(q0, q1 = R_{q0}(xi))`` as a :class:`RuleValue` -- ``q1``, the
       Jacobians of ``xi = R_{q0}^{-1}(q1)``, ``D1 L_d``, ``D2 L_d``, the
       discrete forces of (24), a scale, a finiteness flag, the node geometry
       of ``ctx.extra_nodes`` (:func:`node_geometry`) and, for a rule with
       stages, their equations. It is traced by JAX (no Python branches on
       array values) and runs for one trajectory member (a batch is
       ``vmap`` outside).

    **What an implementation may override** (declared here with defaults):

    5. ``degenerate_safe`` (False): known to be stable for Lagrangians
       linear in some velocities; ``constrained_order`` (None): a measured
       cap of the order with nonholonomic constraints.
    6. Internal stages (a Galerkin rule): :meth:`n_stages` (0),
       :meth:`n_curve_stages`, :meth:`warm_stages`, :meth:`stored_stages`.
       The stages are extra unknowns of the step's Newton solve; their
       equations are ``RuleValue.stage_residual``.

    Notes
    -----
    The step's equations (Parks & Leok (52)/(53) with the forces of (24))
    use ``p_k = -D1 L_d - f^-`` (plus the scheme's reaction) and
    ``p_{k+1} = D2 L_d + f^+``; the rule never sees the constraints of the
    scheme, only the node geometry the scheme asks for.
    """

    name: str
    """Registry name (``discrete_lagrangian=name``)."""
    order: int
    """Declared order of the variational integrator (verified where the rule is built)."""
    symmetric: bool
    """Whether ``L_d(q0, q1; h) = -L_d(q1, q0; -h)`` for a symmetric retraction (:meth:`symmetric_on` decides)."""
    nodes: tuple[tuple[float, float], ...]
    """``(s, w)``: the curve parameters where ``L`` and the force are evaluated, with their weights."""

    degenerate_safe: bool = False
    """Whether the rule is known to be stable for Lagrangians linear in some velocities."""
    constrained_order: int | None = None
    """The order measured with the symmetric nonholonomic scheme when lower than ``order`` (None: no cap)."""

    # ------------------------------------------------------------ the contract
    @abc.abstractmethod
    def order_on(self, Q: Manifold) -> int:
        """The order this rule attains with ``Q``'s retraction (``ValueError`` for a manifold it cannot serve)."""

    @abc.abstractmethod
    def symmetric_on(self, Q: Manifold) -> bool:
        """Whether the rule is self-adjoint with ``Q``'s retraction."""

    @abc.abstractmethod
    def value(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, h: Scalar, params: Params = None) -> jax.Array:
        """``L_d(q0, R_{q0}(xi))`` at one point, shape ``()``."""

    @abc.abstractmethod
    def evaluate(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, ctx: StepContext,
                 stages: jax.Array | None = None) -> RuleValue:
        """``D1 L_d``, ``D2 L_d``, the discrete forces (and the stage equations) at ``(q0, R_{q0}(xi))``.

        Parameters
        ----------
        system : LagrangeDiracSystem
        q0 : point
        xi : array, shape=[n]
            ``q1 = R_{q0}(xi)``.
        ctx : StepContext
            Step size, time, parameters, control and the nodes the scheme needs.
        stages : array, shape=[n_stages], optional
            The current values of the rule's internal stages (None or empty for a rule without stages).

        Returns
        -------
        RuleValue
        """

    # ------------------------------------------------------- internal stages
    def n_stages(self, n: int, r: int = 0) -> int:
        """Number of extra unknowns per step for a manifold of dimension ``n`` with ``r`` holonomic constraints."""
        return 0

    def n_curve_stages(self, n: int) -> int:
        """The part of the stages scaled like momenta (the rest are displacement-like multipliers)."""
        return self.n_stages(n)

    def warm_stages(self, xi: Vector, stored: jax.Array) -> jax.Array:
        """The stages' warm start from the step's warm start ``xi`` and the stored ``stored``."""
        return stored

    def stored_stages(self, xi: Vector, stages: jax.Array) -> jax.Array:
        """What the state keeps of a solved step's stages (for the next warm start)."""
        return stages


@dataclass(frozen=True)
class QuadratureRule(DiscreteLagrangian):
    """A discrete Lagrangian by quadrature along the retraction curve.

    Parameters
    ----------
    name : str
        The registered name (``discrete_lagrangian=name``, :func:`register_rule`).
    nodes : tuple of (s, w)
        Node parameters ``s`` in [0, 1] and weights ``w`` summing to 1.
    order : int
        Order of the variational integrator with a symmetric retraction.
        Verified: at most 2 (the velocity ``xi/h`` at every node is the mean
        velocity of the step, which caps the order at 2) and at most one more
        than the exactness degree of the nodes (:func:`exactness_degree`); a
        higher declaration is downgraded with a :class:`RuleOrderWarning`
        that says why.
    symmetric : bool
        Whether ``L_d(q0, q1; h) = -L_d(q1, q0; -h)`` with a symmetric
        retraction (verified: the nodes must be symmetric under
        ``s -> 1 - s``, else downgraded with a warning).
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

    Examples
    --------
    Simpson's nodes along the retraction curve (second order, like every
    quadrature rule: see ``order``):

    >>> import manifold_dirac as md
    >>> simpson = md.QuadratureRule("my_simpson", ((0.0, 1 / 6), (0.5, 2 / 3), (1.0, 1 / 6)),
    ...                             order=2, symmetric=True)
    >>> simpson.order, simpson.symmetric
    (2, True)
    >>> md.get_rule("midpoint").nodes
    ((0.5, 1.0),)
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
        if isinstance(self.order, bool) or not isinstance(self.order, (int, np.integer)) or self.order < 1:
            raise ValueError(f"QuadratureRule {self.name!r}: order must be a positive integer, got {self.order!r}")
        deg = exactness_degree(self.nodes)
        cap = min(2, deg + 1)
        if self.order > cap:
            why = ("the velocity xi/h at every node is the step's mean velocity, exact only to first order "
                   "along the curve, which caps a QuadratureRule at order 2 (use a GalerkinRule, "
                   "discrete_lagrangian='gauss4' or 'gauss6', for higher orders)") if deg + 1 >= 2 else (
                f"its nodes integrate polynomials exactly only up to degree {deg}, so L_d is only "
                f"order-{deg + 1} accurate")
            warnings.warn(f"QuadratureRule {self.name!r}: declared order {self.order} is downgraded to {cap}: "
                          f"{why}", RuleOrderWarning, stacklevel=3)
            object.__setattr__(self, "order", cap)
        if self.symmetric and not nodes_are_symmetric(self.nodes):
            warnings.warn(f"QuadratureRule {self.name!r}: declared symmetric, but its nodes are not symmetric "
                          "under s -> 1 - s with equal weights, so L_d(q0, q1; h) != -L_d(q1, q0; -h); "
                          "declared not symmetric", RuleOrderWarning, stacklevel=3)
            object.__setattr__(self, "symmetric", False)

    def order_on(self, Q: Manifold) -> int:
        """The order this rule attains with ``Q``'s retraction."""
        return self.order if Q.retraction.symmetric else min(self.order, 1)

    def symmetric_on(self, Q: Manifold) -> bool:
        """Whether ``L_d(q0, q1; h) = -L_d(q1, q0; -h)`` with ``Q``'s retraction.

        A symmetric rule and retraction, and, when a node lies inside the
        step, a retraction that is a flow (:func:`is_flow`): the node
        ``R_{q0}(s xi)`` seen from ``q1`` is ``R_{q1}(-(1 - s) xi)`` only then.
        """
        if not (self.symmetric and Q.retraction.symmetric):
            return False
        inner = any(0.0 < s < 1.0 for s, _ in self.nodes)
        return (not inner) or is_flow(Q)

    def value(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, h: Scalar, params: Params = None) -> jax.Array:
        """``L_d(q0, R_{q0}(xi))`` at one point (scalar)."""
        Q, v = system.Q, xi / h
        return jnp.asarray(h * sum(w * system.lagrangian(Q.retract(q0, s * xi), v, params) for s, w in self.nodes))

    def evaluate(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, ctx: StepContext,
                 stages: jax.Array | None = None) -> RuleValue:
        """``D1 L_d``, ``D2 L_d`` and the discrete forces at ``(q0, R_{q0}(xi))`` (see Notes; no stages)."""
        h, t0, params, u, extra_nodes = ctx
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
            D1 = D1 + w * (vm(hdq, g.P0) + vm(dv, J0))
            D2 = D2 + w * (vm(hdq, g.P1) + vm(dv, J1))
            scale = jnp.maximum(scale, jnp.maximum(jnp.max(jnp.abs(hdq)), jnp.max(jnp.abs(dv))))
            F = system.force(t0 + s * h, g.point, v, params)
            if u is not None:
                F = u if F is None else F + u
            if F is not None:
                fm = fm + (w * h) * vm(F, g.P0)
                fp = fp + (w * h) * vm(F, g.P1)
                scale = jnp.maximum(scale, h * jnp.max(jnp.abs(F)))
        return RuleValue(q1, J0, J1, D1, D2, fm, fp, scale, finite, nodes)


RECTANGLE_PLUS = QuadratureRule("rectangle+", ((0.0, 1.0),), order=1, symmetric=False)
RECTANGLE_MINUS = QuadratureRule("rectangle-", ((1.0, 1.0),), order=1, symmetric=False)
MIDPOINT = QuadratureRule("midpoint", ((0.5, 1.0),), order=2, symmetric=True, degenerate_safe=True)
TRAPEZOID = QuadratureRule("trapezoid", ((0.0, 0.5), (1.0, 0.5)), order=2, symmetric=True)

def _check_rule(name: str, rule: object) -> None:
    if not isinstance(rule, DiscreteLagrangian):
        raise TypeError(f"register_rule: give a DiscreteLagrangian instance (or a subclass with a default "
                        f"constructor), got {type(rule).__name__}")
    if getattr(rule, "name", None) != name:
        raise ValueError(f"register_rule: a discrete Lagrangian is registered under its own name "
                         f"{getattr(rule, 'name', None)!r}, not {name!r}")


RULES: Registry[DiscreteLagrangian] = Registry(
    "discrete Lagrangian", hint="add one with register_rule", check=_check_rule)
"""Every discrete Lagrangian available by name (``discrete_lagrangian="midpoint"``)."""


_R = TypeVar("_R", bound="DiscreteLagrangian | type[DiscreteLagrangian]")


@overload
def register_rule(rule: None = None, *, overwrite: bool = False) -> Callable[[_R], _R]: ...
@overload
def register_rule(rule: _R, *, overwrite: bool = False) -> _R: ...
def register_rule(rule: _R | None = None, *, overwrite: bool = False) -> _R | Callable[[_R], _R]:
    """Make a discrete Lagrangian available by its name (``discrete_lagrangian=rule.name``).

    Parameters
    ----------
    rule : DiscreteLagrangian or DiscreteLagrangian subclass, optional
        An instance; or a subclass with a default constructor, whose instance
        is registered (``@register_rule`` on the class; the class is returned).
        Without it, a decorator: ``@register_rule(overwrite=True)``.
    overwrite : bool
        Replace another rule of the same name.

    Returns
    -------
    What was given (so that it works as a decorator).

    Raises
    ------
    TypeError
        For something that is not a :class:`DiscreteLagrangian`.
    ValueError
        For a name taken by another rule (without ``overwrite``).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> md.register_rule(md.QuadratureRule("my_midpoint", ((0.5, 1.0),), order=2, symmetric=True))
    QuadratureRule(name='my_midpoint', nodes=((0.5, 1.0),), order=2, symmetric=True, degenerate_safe=False)
    >>> md.get_rule("my_midpoint").nodes                    # now usable as discrete_lagrangian="my_midpoint"
    ((0.5, 1.0),)
    >>> md.register_rule(md.QuadratureRule("my_midpoint", ((0.0, 0.5), (1.0, 0.5)), order=2, symmetric=True))
    Traceback (most recent call last):
        ...
    ValueError: ...
    """
    if rule is None:
        return lambda r: register_rule(r, overwrite=overwrite)
    inst = rule() if isinstance(rule, type) and issubclass(rule, DiscreteLagrangian) else rule
    if not isinstance(inst, DiscreteLagrangian):
        raise TypeError(f"register_rule: give a DiscreteLagrangian instance (or a subclass with a default "
                        f"constructor), got {type(rule).__name__}")
    RULES.register(inst.name, inst, overwrite=overwrite)
    return rule


def get_rule(rule: str | DiscreteLagrangian) -> DiscreteLagrangian:
    """Look a rule up by name (or pass an instance through).

    Parameters
    ----------
    rule : str or DiscreteLagrangian
        A registered name (``"midpoint"``, ``"trapezoid"``, ``"gauss4"``,
        ...), or a rule, returned as it is.

    Returns
    -------
    DiscreteLagrangian

    Raises
    ------
    ValueError
        For an unknown name; the message lists the registered ones.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> md.get_rule("trapezoid").nodes
    ((0.0, 0.5), (1.0, 0.5))
    >>> md.get_rule("no_such_rule")
    Traceback (most recent call last):
        ...
    ValueError: ...
    """
    if isinstance(rule, DiscreteLagrangian):
        return rule
    return RULES.get(rule)


for _rule in (RECTANGLE_PLUS, RECTANGLE_MINUS, MIDPOINT, TRAPEZOID):
    register_rule(_rule)
# the Galerkin rules register themselves where they are defined (galerkin.py, imported by the package)
