"""Lagrange--Dirac systems: a manifold, a Lagrangian, constraints and forces.

The continuous equations (19)/(23) of the paper, in frame coordinates::

    qdot = v in Delta_Q(q),   pdot - dL/dq - F in Delta_Q°(q),   p = dL/dv,

with ``Delta_Q(q) = ker A(q)``. The partials ``dL/dq`` (along the retraction,
``v`` held fixed in frame coordinates) and ``dL/dv`` are exact: either the
user supplies them, or they are taken by complex-step differentiation
(``docs/derivatives.md``), which is exact to round-off for analytic numpy
code and needs no package.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..manifolds.base import Manifold

__all__ = ["LagrangeDiracSystem"]

_CS_STEP = 1e-30  # complex step; O(step^2) ~ 1e-60 never reaches a double's digits

Lagrangian = Callable[[Any, np.ndarray], np.ndarray]
Partials = Callable[[Any, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _add_complex_step(Q: Manifold, q: Any, dq: Any) -> Any:
    if isinstance(q, tuple):
        return tuple(_add_complex_step(f, a, b) for f, a, b in zip(Q.factors, q, dq))  # type: ignore[attr-defined]
    return q + (1j * _CS_STEP) * dq


def as_one_forms(forms: Any, n: int, label: str, rows: str = "m") -> np.ndarray:
    """A constant matrix of one-forms in frame coordinates, validated.

    Parameters
    ----------
    forms : array-like, shape=[rows, n] (a single row may be 1-d)
    n : int
        Dimension of the (product) manifold.
    label : str
        What the forms are, for the message.
    rows : str
        Name of the row count in the message.

    Raises
    ------
    ValueError
        For a wrong shape or non-finite entries.
    """
    A = np.asarray(forms, dtype=float)
    if A.ndim == 1:
        A = A[None, :]
    if A.ndim != 2 or A.shape[1] != n:
        raise ValueError(
            f"{label}: constant one-forms are a ({rows}, {n}) matrix in frame coordinates, got shape {A.shape}"
        )
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{label}: non-finite entries in the one-forms")
    return A


class LagrangeDiracSystem:
    """A (possibly degenerate, constrained, forced) Lagrange--Dirac system.

    Parameters
    ----------
    Q : Manifold
        The configuration manifold.
    lagrangian : callable ``L(q, v) -> (*batch,)``
        ``q`` a point ``(*batch, *point_shape)`` (a tuple on a product), ``v``
        frame coordinates ``(*batch, dim)``. It must broadcast over leading
        axes (index with ``v[..., i]``, not ``v[i]``) and, unless
        ``partials`` is given, be complex-safe: built from arithmetic and
        analytic numpy functions (no ``abs``, ``np.real``, ``float()``,
        comparisons on values); see ``docs/derivatives.md``.
    constraint : array ``(m, dim)`` or callable ``A(q) -> (*batch, m, dim)``, optional
        The constraint one-forms in frame coordinates: ``Delta_Q(q) = ker A(q)``.
        Holonomic constraints enter through their differentials.
    force : callable ``F(t, q, v) -> (*batch, dim)``, optional
        An external force (covector in frame coordinates): body torque,
        control input, damping. Time-dependent allowed.
    partials : callable ``(q, v) -> (dL/dq, dL/dv)``, optional
        Analytic partials in frame coordinates (the fast path). ``dL/dq`` is
        the derivative along ``q -> R_q(e eta)`` with ``v`` fixed.
    name : str, optional
        A name (used by interconnection and in messages).
    n_constraints : int, optional
        Needed only when ``constraint`` is a callable and you want to avoid
        one probe evaluation.

    Notes
    -----
    The Lagrangian is evaluated with points ``q`` and velocities ``v`` that
    may carry extra leading axes (the integrator batches finite-difference
    and complex-step evaluations); results must have the broadcast batch
    shape.
    """

    def __init__(
        self,
        Q: Manifold,
        lagrangian: Lagrangian,
        constraint: np.ndarray | Callable[[Any], np.ndarray] | None = None,
        force: Callable[[float, Any, np.ndarray], np.ndarray] | None = None,
        *,
        partials: Partials | None = None,
        name: str | None = None,
        n_constraints: int | None = None,
    ):
        if not isinstance(Q, Manifold):
            raise ValueError(f"LagrangeDiracSystem: Q must be a Manifold, got {type(Q).__name__}")
        if not callable(lagrangian):
            raise ValueError("LagrangeDiracSystem: lagrangian must be a callable L(q, v)")
        if force is not None and not callable(force):
            raise ValueError("LagrangeDiracSystem: force must be a callable F(t, q, v) or None")
        if partials is not None and not callable(partials):
            raise ValueError("LagrangeDiracSystem: partials must be a callable (q, v) -> (dL/dq, dL/dv)")
        self.Q = Q
        self.lagrangian = lagrangian
        self.force = force
        self.analytic_partials = partials
        self.name = name
        n = Q.dim
        if constraint is None:
            self._A_const: np.ndarray | None = np.zeros((0, n))
            self._A_fun = None
        elif callable(constraint):
            self._A_const = None
            self._A_fun = constraint
        else:
            self._A_const = as_one_forms(constraint, n, "constraint")
            self._A_fun = None
        self._m = n_constraints

    # ------------------------------------------------------------ structure
    @property
    def dim(self) -> int:
        """Dimension ``n`` of the configuration manifold."""
        return self.Q.dim

    @property
    def uses_automatic_partials(self) -> bool:
        """Whether the partials come from complex-step differentiation."""
        return self.analytic_partials is None

    @property
    def has_constant_constraint(self) -> bool:
        """Whether ``A`` does not depend on ``q`` (frame coordinates)."""
        return self._A_const is not None

    def n_constraints(self, q: Any | None = None) -> int:
        """Number ``m`` of constraint one-forms."""
        if self._A_const is not None:
            return self._A_const.shape[0]
        if self._m is None:
            if q is None:
                raise ValueError("n_constraints: give a point to probe a callable constraint")
            self._m = int(np.shape(self.constraint_matrix(q))[-2])
        return self._m

    def constraint_matrix(self, q: Any) -> np.ndarray:
        """``A(q)``, shape ``(*batch, m, dim)`` (broadcastable)."""
        if self._A_const is not None:
            return self._A_const
        A = np.asarray(self._A_fun(q))  # type: ignore[misc]
        if A.ndim < 2 or A.shape[-1] != self.dim:
            raise ValueError(
                f"constraint(q) must return an array (..., m, {self.dim}) of one-forms, got shape {A.shape}"
            )
        return A

    # ---------------------------------------------------------- derivatives
    def L(self, q: Any, v: np.ndarray) -> np.ndarray:
        """The Lagrangian ``L(q, v)``, shape ``(*batch,)``."""
        return np.asarray(self.lagrangian(q, v))

    def partials(self, q: Any, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact ``(dL/dq, dL/dv)`` at ``(q, v)``, each ``(*batch, dim)``.

        Uses the analytic ``partials`` when given, else complex-step
        differentiation along the retraction: for each frame direction
        ``e_j``, ``dL/dq_j = Im L(q + i s q e_j^, v) / s`` with
        ``q + i s ambient_tangent(q, e_j)`` the first-order retraction curve,
        and ``dL/dv_j = Im L(q, v + i s e_j) / s``, ``s = 1e-30``. All ``2 dim``
        evaluations are one batched call.
        """
        if self.analytic_partials is not None:
            dq, dv = self.analytic_partials(q, v)
            return np.asarray(dq), np.asarray(dv)
        return self._complex_step_partials(q, v)

    def _complex_step_partials(self, q: Any, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Q, n = self.Q, self.dim
        v = np.asarray(v)
        batch = np.broadcast_shapes(Q.batch_shape(q), v.shape[:-1])
        eye = np.eye(n).reshape((n,) + (1,) * len(batch) + (n,))
        # q-directions: (n, *batch, ...) complex points, v fixed
        qb = Q.broadcast_point(q, (n, *batch))
        dq = Q.ambient_tangent(qb, np.broadcast_to(eye, (n, *batch, n)))
        q_c = _add_complex_step(Q, qb, dq)
        v_b = np.broadcast_to(v, (n, *batch, n))
        # v-directions
        v_c = v_b + (1j * _CS_STEP) * eye
        # one call: stack along a leading axis of size 2n
        q_all = _concat_points(Q, q_c, _to_complex(Q, qb))
        v_all = np.concatenate([v_b.astype(complex), v_c], axis=0)
        out = np.asarray(self.lagrangian(q_all, v_all))
        if not np.iscomplexobj(out):
            raise ValueError(
                "lagrangian: complex-step differentiation needs a complex-safe Lagrangian, but L "
                "returned a real array for complex input (float(), np.real, abs() or a real-typed "
                "buffer drop the imaginary part). Rewrite L with analytic numpy operations or pass "
                "analytic partials=(q, v) -> (dL/dq, dL/dv)."
            )
        if out.shape != (2 * n, *batch):
            raise ValueError(
                f"lagrangian: expected an output of shape {(2 * n, *batch)} for inputs with leading "
                f"axes {(2 * n, *batch)}, got {out.shape}; L must broadcast over leading axes "
                "(index v[..., i], not v[i])"
            )
        g = out.imag / _CS_STEP
        dLdq = np.moveaxis(g[:n], 0, -1)
        dLdv = np.moveaxis(g[n:], 0, -1)
        return dLdq, dLdv

    def energy(self, q: Any, v: np.ndarray, p: np.ndarray) -> np.ndarray:
        """The energy ``E = <p, v> - L(q, v)``, shape ``(*batch,)``."""
        return np.sum(np.asarray(p) * np.asarray(v), axis=-1) - np.real(self.L(q, v))

    def force_at(self, t: float | np.ndarray, q: Any, v: np.ndarray) -> np.ndarray | None:
        """The external force ``F(t, q, v)`` or None."""
        if self.force is None:
            return None
        return np.asarray(self.force(t, q, v))

    def check_partials(self, q: Any, v: np.ndarray, rtol: float = 1e-6) -> float:
        """Compare :meth:`partials` with central finite differences at ``(q, v)``.

        Returns the largest relative deviation; raises ``ValueError`` if it
        exceeds ``rtol`` (a sign that ``L`` is not complex-safe, or that
        analytic partials are wrong).
        """
        Q, n = self.Q, self.dim
        v = np.asarray(v, dtype=float)
        dq, dv = self.partials(q, v)
        h = 1e-6
        fd_q = np.zeros(np.shape(dq))
        fd_v = np.zeros(np.shape(dv))
        for j in range(n):
            e = np.zeros(n)
            e[j] = h
            lp = np.real(self.L(Q.retract(q, e), v))
            lm = np.real(self.L(Q.retract(q, -e), v))
            fd_q[..., j] = (lp - lm) / (2 * h)
            fd_v[..., j] = (np.real(self.L(q, v + e)) - np.real(self.L(q, v - e))) / (2 * h)
        scale = 1.0 + max(np.max(np.abs(fd_q), initial=0), np.max(np.abs(fd_v), initial=0))
        err = max(np.max(np.abs(fd_q - dq), initial=0), np.max(np.abs(fd_v - dv), initial=0)) / scale
        if not err <= rtol:
            raise ValueError(
                f"partials of {self.name or 'the Lagrangian'} disagree with finite differences "
                f"(relative {err:.2e} > {rtol:.0e}): "
                + (
                    "check the analytic partials (dL/dq is along q -> R_q(e eta) with v fixed)"
                    if self.analytic_partials is not None
                    else "the Lagrangian is probably not complex-safe (abs, np.real, float(), "
                    "comparisons); see docs/derivatives.md"
                )
            )
        return float(err)

    def __repr__(self) -> str:
        m = self._A_const.shape[0] if self._A_const is not None else "A(q)"
        return f"LagrangeDiracSystem({self.name or 'unnamed'}, Q={self.Q!r}, constraints={m})"


def _to_complex(Q: Manifold, q: Any) -> Any:
    if isinstance(q, tuple):
        return tuple(_to_complex(f, a) for f, a in zip(Q.factors, q))  # type: ignore[attr-defined]
    return np.asarray(q).astype(complex)


def _concat_points(Q: Manifold, a: Any, b: Any) -> Any:
    if isinstance(a, tuple):
        return tuple(_concat_points(f, x, y) for f, x, y in zip(Q.factors, a, b))  # type: ignore[attr-defined]
    return np.concatenate([np.asarray(a), np.asarray(b)], axis=0)

