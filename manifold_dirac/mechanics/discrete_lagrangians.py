"""Discrete Lagrangians from a continuous one, by quadrature along the retraction.

A rule is a set of nodes ``(s_i, w_i)`` on the retraction curve
``c(s) = R_{q0}(s xi)``, ``xi = R_{q0}^{-1}(q1)``::

    L_d(q0, q1) = h * sum_i w_i L(c(s_i), xi / h)

(on a Lie group with ``tau(-xi) = tau(xi)^{-1}`` the body
velocity ``xi/h`` serves at every node). The built-in rules:

============  =================  =====  =========
rule          nodes (s, w)       order  symmetric
============  =================  =====  =========
rectangle+    (0, 1)             1      no
rectangle-    (1, 1)             1      no
midpoint      (1/2, 1)           2      yes
trapezoid     (0, 1/2), (1, 1/2) 2      yes
============  =================  =====  =========

The order and symmetry hold for a *symmetric* retraction
(``Manifold.symmetric_retraction``); with a non-symmetric one (SE(2)'s
``so2xr2``) the symmetric rules drop to first order, which the tests show.

Add a rule by constructing :class:`DiscreteLagrangian` with other nodes
(any ``s`` in [0, 1]) or by subclassing and overriding :meth:`~DiscreteLagrangian.evaluate`;
:func:`register_discrete_lagrangian` makes it available by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..manifolds.base import Manifold
from .system import LagrangeDiracSystem

__all__ = [
    "DISCRETE_LAGRANGIANS",
    "DiscreteLagrangian",
    "DiscreteLagrangianValue",
    "NodeGeometry",
    "get_discrete_lagrangian",
    "node_geometry",
    "register_discrete_lagrangian",
]


@dataclass(frozen=True)
class NodeGeometry:
    """A point on the retraction curve and its derivatives.

    Attributes
    ----------
    s : float
        Curve parameter: ``c = R_{q0}(s xi)``.
    point : point
        ``c``.
    P0, P1 : ndarray, shape=[..., dim, dim]
        ``dc = P0 dq0 + P1 dq1`` in the frame at ``c``:
        ``P0 = J_q + s J_xi J0``, ``P1 = s J_xi J1`` (exactly ``I, 0`` at
        ``s = 0`` and ``0, I`` at ``s = 1``).
    Jxi : ndarray, shape=[..., dim, dim] or None
        ``J_xi`` of ``R_{q0}`` at ``s xi`` (frame at ``c``): the tangent of
        the curve at ``c`` is ``Jxi @ xi`` per unit ``s``. None at the end nodes.
    """

    s: float
    point: Any
    P0: np.ndarray | None
    P1: np.ndarray | None
    Jxi: np.ndarray | None = None


def _eye_like(J: np.ndarray) -> np.ndarray:
    return np.broadcast_to(np.eye(J.shape[-1]), J.shape)


def node_geometry(
    Q: Manifold, q0: Any, q1: Any, xi: np.ndarray, J0: np.ndarray, J1: np.ndarray, s: float
) -> NodeGeometry:
    """The node ``c = R_{q0}(s xi)`` with ``P0 = dc/dq0`` and ``P1 = dc/dq1``.

    Parameters
    ----------
    Q : Manifold
    q0, q1 : point
    xi, J0, J1 : ndarray
        ``R_{q0}^{-1}(q1)`` and its Jacobians (shapes ``(..., dim)``, ``(..., dim, dim)``).
    s : float
        Node parameter in [0, 1].
    """
    if s == 0.0:
        return NodeGeometry(0.0, q0, None, None)  # P0 = I, P1 = 0
    if s == 1.0:
        return NodeGeometry(1.0, q1, None, None)  # P0 = 0, P1 = I
    c, Jq, Jx = Q.retract_with_jacobians(q0, s * xi)
    P0 = Jq + s * (Jx @ J0)
    P1 = s * (Jx @ J1)
    return NodeGeometry(s, c, P0, P1, Jx)


def _pullback(P: np.ndarray | None, which: int, s: float, cov: np.ndarray) -> np.ndarray:
    """``P^T cov`` for a covector at a node, handling the exact end nodes."""
    if P is None:
        if (s == 0.0 and which == 0) or (s == 1.0 and which == 1):
            return cov
        return np.zeros_like(cov)
    return (cov[..., None, :] @ P)[..., 0, :]


@dataclass(frozen=True)
class DiscreteLagrangianValue:
    """Everything a scheme needs from ``L_d`` at ``(q0, q1)``.

    Attributes
    ----------
    xi : ndarray, shape=[..., dim]
        ``R_{q0}^{-1}(q1)``.
    J0, J1 : ndarray, shape=[..., dim, dim]
        Jacobians of ``xi``.
    D1, D2 : ndarray, shape=[..., dim]
        ``D1 L_d`` (covector at ``q0``) and ``D2 L_d`` (at ``q1``).
    f_minus, f_plus : ndarray, shape=[..., dim]
        Discrete forces (Lagrange--d'Alembert--Pontryagin, (24)): zero
        without a force.
    nodes : tuple of NodeGeometry
    """

    xi: np.ndarray
    J0: np.ndarray
    J1: np.ndarray
    D1: np.ndarray
    D2: np.ndarray
    f_minus: np.ndarray
    f_plus: np.ndarray
    nodes: tuple[NodeGeometry, ...]


@dataclass(frozen=True)
class DiscreteLagrangian:
    """A quadrature rule along the retraction curve (see the module docstring).

    Parameters
    ----------
    name : str
    nodes : tuple of (s, w)
        Node parameters ``s`` in [0, 1] and weights ``w`` summing to 1.
    order : int
        Order of the resulting variational integrator for a symmetric
        retraction (1 or 2 for the built-ins).
    symmetric : bool
        Whether ``L_d(q0, q1; h) = -L_d(q1, q0; -h)`` for a symmetric retraction.
    degenerate_safe : bool
        Whether the rule is known to be stable for Lagrangians linear in
        some velocities (only the midpoint rule among the built-ins; see
        :class:`~manifold_dirac.errors.DegenerateLagrangianWarning`).

    Notes
    -----
    With ``v = xi/h`` and nodes ``c_i = R_{q0}(s_i xi)``::

        D1 L_d = sum_i w_i [h P0_i^T dL/dq(c_i, v) + J0^T dL/dv(c_i, v)]
        D2 L_d = sum_i w_i [h P1_i^T dL/dq(c_i, v) + J1^T dL/dv(c_i, v)]

    and the discrete forces of the Lagrange--d'Alembert--Pontryagin
    principle (24), ``int <F, dq> dt ~ h sum_i w_i <F_i, dc_i>``::

        f^- = h sum_i w_i P0_i^T F(t0 + s_i h, c_i, v),
        f^+ = h sum_i w_i P1_i^T F(t0 + s_i h, c_i, v),

    entering ``p_k = -D1 L_d - f^- (+ A^T mu)``, ``p_{k+1} = D2 L_d + f^+``.
    For the midpoint rule on a vector space ``f^+- = (h/2) F``.
    """

    name: str
    nodes: tuple[tuple[float, float], ...]
    order: int
    symmetric: bool
    degenerate_safe: bool = False

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError(f"DiscreteLagrangian {self.name!r}: needs at least one node")
        for s, _ in self.nodes:
            if not 0.0 <= s <= 1.0:
                raise ValueError(f"DiscreteLagrangian {self.name!r}: node parameter s={s} not in [0, 1]")
        wsum = sum(w for _, w in self.nodes)
        if abs(wsum - 1.0) > 1e-12:
            raise ValueError(f"DiscreteLagrangian {self.name!r}: weights sum to {wsum}, not 1")

    def order_on(self, Q: Manifold) -> int:
        """The order this rule attains with ``Q``'s retraction."""
        return self.order if Q.symmetric_retraction else min(self.order, 1)

    def node_parameters(self) -> tuple[float, ...]:
        return tuple(s for s, _ in self.nodes)

    def value(self, system: LagrangeDiracSystem, q0: Any, q1: Any, h: float) -> np.ndarray:
        """``L_d(q0, q1)`` itself, shape ``(*batch,)``."""
        Q = system.Q
        xi = Q.inverse_retract(q0, q1)
        v = xi / h
        total = 0.0
        for s, w in self.nodes:
            c = q0 if s == 0.0 else (q1 if s == 1.0 else Q.retract(q0, s * xi))
            total = total + w * np.real(system.L(c, v))
        return h * total

    def evaluate(
        self,
        system: LagrangeDiracSystem,
        q0: Any,
        q1: Any,
        h: float,
        t0: float | np.ndarray = 0.0,
        force_override: Any = None,
        extra_nodes: tuple[float, ...] = (),
        jacobians: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    ) -> DiscreteLagrangianValue:
        """``D1 L_d``, ``D2 L_d`` and the discrete forces at ``(q0, q1)``.

        Parameters
        ----------
        system : LagrangeDiracSystem
        q0, q1 : point, shape=[..., *point_shape]
        h : float
            Time step.
        t0 : float or ndarray
            Time at ``q0`` (for time-dependent forces).
        force_override : ndarray or callable, optional
            A force used instead of the system's for this step (a constant
            covector ``(..., dim)`` or ``F(t, q, v)``).
        extra_nodes : tuple of float
            Further node parameters whose geometry the caller needs (the
            symmetric scheme asks for ``1/2``); returned after the rule's own.
        jacobians : (xi, J0, J1), optional
            ``R_{q0}^{-1}(q1)`` and its Jacobians when the caller has them.
        """
        Q = system.Q
        if jacobians is None:
            xi, J0, J1 = Q.inverse_retract_with_jacobians(q0, q1)
        else:
            xi, J0, J1 = jacobians
        v = xi / h
        params = self.node_parameters()
        geo: dict[float, NodeGeometry] = {}
        for s in params + tuple(extra_nodes):
            if s not in geo:
                geo[s] = node_geometry(Q, q0, q1, xi, J0, J1, s)
        D1 = 0.0
        D2 = 0.0
        fm = 0.0
        fp = 0.0
        force = force_override if force_override is not None else system.force
        for s, w in self.nodes:
            g = geo[s]
            dq, dv = system.partials(g.point, v)
            # J^T dv as a row-vector product (one matmul instead of an einsum)
            dv_row = dv[..., None, :]
            D1 = D1 + w * (h * _pullback(g.P0, 0, s, dq) + (dv_row @ J0)[..., 0, :])
            D2 = D2 + w * (h * _pullback(g.P1, 1, s, dq) + (dv_row @ J1)[..., 0, :])
            if force is not None:
                F = force(t0 + s * h, g.point, v) if callable(force) else np.asarray(force)
                fm = fm + (w * h) * _pullback(g.P0, 0, s, F)
                fp = fp + (w * h) * _pullback(g.P1, 1, s, F)
        if force is None:
            fm = np.zeros_like(D1)
            fp = np.zeros_like(D1)
        else:
            zeros = np.zeros_like(D1)
            fm = zeros + fm
            fp = zeros + fp
        nodes = tuple(geo[s] for s in dict.fromkeys(params + tuple(extra_nodes)))
        return DiscreteLagrangianValue(xi, J0, J1, D1, D2, fm, fp, nodes)


RECTANGLE_PLUS = DiscreteLagrangian("rectangle+", ((0.0, 1.0),), order=1, symmetric=False)
RECTANGLE_MINUS = DiscreteLagrangian("rectangle-", ((1.0, 1.0),), order=1, symmetric=False)
MIDPOINT = DiscreteLagrangian("midpoint", ((0.5, 1.0),), order=2, symmetric=True, degenerate_safe=True)
TRAPEZOID = DiscreteLagrangian("trapezoid", ((0.0, 0.5), (1.0, 0.5)), order=2, symmetric=True)

DISCRETE_LAGRANGIANS: dict[str, DiscreteLagrangian] = {
    r.name: r for r in (RECTANGLE_PLUS, RECTANGLE_MINUS, MIDPOINT, TRAPEZOID)
}


def register_discrete_lagrangian(rule: DiscreteLagrangian, *, overwrite: bool = False) -> DiscreteLagrangian:
    """Make ``rule`` available by its name in :func:`integrate`."""
    if not isinstance(rule, DiscreteLagrangian):
        raise ValueError("register_discrete_lagrangian: give a DiscreteLagrangian instance")
    if rule.name in DISCRETE_LAGRANGIANS and not overwrite:
        raise ValueError(f"a discrete Lagrangian named {rule.name!r} exists; pass overwrite=True")
    DISCRETE_LAGRANGIANS[rule.name] = rule
    return rule


def get_discrete_lagrangian(rule: str | DiscreteLagrangian) -> DiscreteLagrangian:
    """Look a rule up by name (or pass an instance through)."""
    if isinstance(rule, DiscreteLagrangian):
        return rule
    try:
        return DISCRETE_LAGRANGIANS[rule]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown discrete Lagrangian {rule!r}; valid: " + ", ".join(repr(k) for k in DISCRETE_LAGRANGIANS)
        ) from None
