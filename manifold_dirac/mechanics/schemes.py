"""The discrete Lagrange--Dirac schemes: (+) (52), (-) (53) and symmetric.

Each scheme turns one step ``k -> k+1`` into ``n + m`` equations in the
unknowns ``xi`` (``q_{k+1} = R_{q_k}(xi)``, the chart centred at ``q_k``) and
the multipliers ``mu``::

    r1 = p_in + D1 L_d(q_k, q_{k+1}) + f^- - G^-(xi) mu = 0     (n)
    r2 = c(xi) = 0                                               (m)
    p_out = D2 L_d(q_k, q_{k+1}) + f^+ + G^+(xi) mu

=========  ==========================================  ==============  ====  =====
scheme     discrete constraint c(xi)                   G^-             G^+   order
=========  ==========================================  ==============  ====  =====
plus       ``A(q_k) xi``                        (42+)  ``A(q_k)^T``    0     1
minus      ``-A(q_{k+1}) R_{q_{k+1}}^{-1}(q_k)`` (42-)  ``-A(q_k)^T``   0     1
symmetric  ``A(c) J_xi(xi/2) xi``, ``c = R_{q_k}(xi/2)``  ``A(q_k)^T``   0     2
=========  ==========================================  ==============  ====  =====

* **plus** is (52) exactly: ``p_k = -D1 L_d + A(q_k)^T mu``, ``p_{k+1} = D2 L_d``.
* **minus** is (53) as a one-step map: the state carries the
  pre-momentum ``p~_k = D2 L_d(q_{k-1}, q_k)``; the step finds ``mu_k`` and
  reports ``p_k = p~_k + A(q_k)^T mu_k``, the momentum of (53d).
* **symmetric** keeps the reaction of (52) at ``q_k`` and evaluates the
  discrete constraint on the tangent of the retraction curve at its midpoint
  ``c = R_{q_k}(xi/2)`` (``J_xi(xi/2) xi`` in the frame at ``c``; equal to
  ``xi`` for ``exp`` on a Lie group and on a vector space). Eliminating the
  momenta gives the two-step recursion
  ``D2 L_d(q_{k-1}, q_k) + D1 L_d(q_k, q_{k+1}) = A(q_k)^T mu_k`` with one
  midpoint constraint per interval (McLachlan & Perlmutter 2006), which is
  invariant under ``h -> -h`` with the sequence reversed: for a symmetric
  rule and retraction the ``q``-sequence is time-reversible and the method
  second order. (Splitting the reaction half-and-half between ``q_k`` and
  ``q_{k+1}`` looks more symmetric but couples consecutive multipliers
  through a mode with eigenvalue ``-1``; measured on the knife edge its
  error does not decrease with h, so it is not offered.)

Without constraints (m = 0) all three reduce to the variational integrator
of ``L_d``: ``p_k = -D1 L_d - f^-``, ``p_{k+1} = D2 L_d + f^+``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .discrete_lagrangians import DiscreteLagrangian, DiscreteLagrangianValue
from .system import LagrangeDiracSystem

__all__ = ["SCHEMES", "Scheme", "StepEquations", "get_scheme"]


@dataclass(frozen=True)
class StepEquations:
    """The step equations evaluated at one ``(xi, mu)`` (leading axes allowed).

    Attributes
    ----------
    r1 : ndarray, shape=[..., n]
    r2 : ndarray, shape=[..., m]
    G_minus : ndarray, shape=[..., n, m]
        ``-dr1/dmu``.
    p_out : ndarray, shape=[..., n]
        Momentum (or, for ``minus``, pre-momentum) carried to ``q_{k+1}``.
    q1 : point
    ld : DiscreteLagrangianValue
    scale : ndarray, shape=[...]
        Magnitude of the terms of ``r1`` (for relative tolerances).
    """

    r1: np.ndarray
    r2: np.ndarray
    G_minus: np.ndarray
    p_out: np.ndarray
    q1: Any
    ld: DiscreteLagrangianValue
    scale: np.ndarray


def _matvec(M: np.ndarray, x: np.ndarray) -> np.ndarray:
    return (M @ x[..., None])[..., 0]


def _T(M: np.ndarray) -> np.ndarray:
    return np.swapaxes(M, -1, -2)


@dataclass(frozen=True)
class Scheme:
    """A discrete Lagrange--Dirac scheme (see the module docstring).

    Attributes
    ----------
    name : {"plus", "minus", "symmetric"}
    order : int
        Order for nonholonomic systems with a symmetric rule and retraction.
    symmetric : bool
    carries_pre_momentum : bool
        True for ``minus``: the state's momentum is ``p~_k`` and the reported
        ``p_k = p~_k + A(q_k)^T mu_k``.
    """

    name: str
    order: int
    symmetric: bool
    carries_pre_momentum: bool = False

    def order_with(self, rule: DiscreteLagrangian, Q: Any, constrained: bool = True) -> int:
        """Declared order with ``rule`` on ``Q``'s retraction.

        Without constraints every scheme is the variational integrator of
        ``L_d`` and has the rule's order; with constraints ``plus`` and
        ``minus`` are first order (a lower bound: a frame-constant ``A`` on a
        vector space does better) and ``symmetric`` has the rule's order.
        """
        o = rule.order_on(Q)
        return o if (not constrained or self.symmetric) else min(o, self.order)

    def equations(
        self,
        system: LagrangeDiracSystem,
        rule: DiscreteLagrangian,
        q0: Any,
        p_in: np.ndarray,
        xi: np.ndarray,
        mu: np.ndarray,
        h: float,
        t0: float,
        force_override: Any = None,
    ) -> StepEquations:
        """Evaluate the step equations at ``(xi, mu)``.

        Parameters
        ----------
        q0 : point, shape=[*B, ...]
        p_in : ndarray, shape=[*B, n]
            ``p_k`` (plus, symmetric) or ``p~_k`` (minus).
        xi : ndarray, shape=[*L, *B, n]
            Chart coordinates of ``q_{k+1}``; extra leading axes ``L`` (the
            solver's finite-difference directions) broadcast.
        mu : ndarray, shape=[*L, *B, m]

        Returns
        -------
        StepEquations

        Notes
        -----
        With ``q_{k+1} = R_{q_k}(xi)`` and ``D1, D2, f^-, f^+`` from the rule::

            plus       r1 = p_k + D1 + f^- - A(q_k)^T mu,   r2 = A(q_k) xi                    (52d), (52a)
            minus      r1 = p~_k + A(q_k)^T mu + D1 + f^-,  r2 = -A(q_{k+1}) R_{q_{k+1}}^{-1}(q_k)  (53c), (53a)
            symmetric  r1 = p_k + D1 + f^- - A(q_k)^T mu,   r2 = A(c) J_xi(xi/2) xi

        and ``p_out = D2 + f^+`` ((52c); for minus the pre-momentum of (53d)).
        """
        Q = system.Q
        q1, J0, J1 = Q.retract_with_inverse_jacobians(q0, xi)
        extra = (0.5,) if self.name == "symmetric" else ()
        ld = rule.evaluate(system, q0, q1, h, t0, force_override, extra_nodes=extra, jacobians=(xi, J0, J1))
        m = mu.shape[-1]
        n = xi.shape[-1]
        lead = ld.D1.shape[:-1]
        # the schemes differ only in the discrete constraint r2 and the reaction G^-
        if m == 0:
            G_minus = np.zeros((*lead, n, 0))
            r2 = np.zeros((*xi.shape[:-1], 0))
        else:
            A0 = system.constraint_matrix(q0)
            if self.name == "plus":
                r2 = _matvec(A0, xi)
            elif self.name == "minus":
                r2 = -_matvec(system.constraint_matrix(q1), Q.inverse_retract(q1, q0))
            else:  # symmetric: constraint on the tangent at the midpoint
                mid = next(g for g in ld.nodes if g.s == 0.5)
                r2 = _matvec(system.constraint_matrix(mid.point), _matvec(mid.Jxi, xi))  # type: ignore[arg-type]
            sign = -1.0 if self.carries_pre_momentum else 1.0  # (53c): p~_k + A^T mu, (52d): p_k - A^T mu
            G_minus = np.broadcast_to(sign * _T(A0), (*lead, n, m))
        r1 = p_in + ld.D1 + ld.f_minus
        if m:
            r1 = r1 - _matvec(G_minus, mu)
        p_out = ld.D2 + ld.f_plus
        scale = np.maximum(np.abs(p_in).max(axis=-1, initial=0.0), np.abs(ld.D1).max(axis=-1, initial=0.0))
        return StepEquations(r1, r2, G_minus, p_out, q1, ld, scale)

    def reported_momentum(self, system: LagrangeDiracSystem, q0: Any, p_in: np.ndarray, mu: np.ndarray) -> np.ndarray:
        """The momentum ``p_k`` at the start of a solved step."""
        if self.carries_pre_momentum and mu.shape[-1]:
            return p_in + _matvec(_T(system.constraint_matrix(q0)), mu)
        return p_in


PLUS = Scheme("plus", order=1, symmetric=False)
MINUS = Scheme("minus", order=1, symmetric=False, carries_pre_momentum=True)
SYMMETRIC = Scheme("symmetric", order=2, symmetric=True)

SCHEMES: dict[str, Scheme] = {s.name: s for s in (PLUS, MINUS, SYMMETRIC)}


def get_scheme(scheme: str | Scheme) -> Scheme:
    """Look a scheme up by name (or pass an instance through)."""
    if isinstance(scheme, Scheme):
        return scheme
    try:
        return SCHEMES[scheme]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown scheme {scheme!r}; valid: " + ", ".join(repr(k) for k in SCHEMES)
        ) from None
