"""Lagrange--Dirac systems: a manifold, a Lagrangian, constraints and forces.

The continuous equations (19)/(23) of the paper, in frame coordinates::

    qdot = v in Delta_Q(q),   pdot - dL/dq - F in Delta_Q°(q),   p = dL/dv,

with ``Delta_Q(q) = ker A(q)``. The user writes ``L(q, v)`` for **one** point
with ``jax.numpy``; the partials ``dL/dq`` (along the retraction, ``v`` held
fixed) and ``dL/dv`` are taken by automatic differentiation
(``docs/derivatives.md``), exact to round-off. Batches come from ``vmap``,
never from the user's indexing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, overload
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

from .._manifolds.base import Manifold
from .._types import (ArrayLike, Constraint, Force, Holonomic, Lagrangian, Params, Partials, Point,
                      PointBatch, Scalar)
from .small import SMALL_SOLVE_MAX, mv, solve_small, vm

__all__ = ["LagrangeDiracSystem", "as_one_forms", "over_batch"]

SMALL_PROJECTION_MAX = SMALL_SOLVE_MAX
"""Largest bordered system of :meth:`LagrangeDiracSystem.holonomic_projection` solved without LAPACK.

The projection runs at every recorded point, inside the compiled step loop. Solved by
:func:`~manifold_dirac._mechanics.small.solve_small` (the unrolled elimination, by whole rows from 6
unknowns), the loop stays one kernel; a LAPACK call splits it into several kernels and makes a
program loaded from the persistent cache import SciPy's LAPACK while it is lowered (about 0.2 s).
The limit is :data:`~manifold_dirac._mechanics.small.SMALL_SOLVE_MAX`: above it, LAPACK.
Measured on the three-dimensional rolling disk's ``7 x 7``, by rows against LAPACK (``python
benchmarks/all_systems.py --before DIR --rounds 3 --label projection_rows --systems rolling_disk_3d``,
``benchmarks/results/all_systems_projection_rows.json``, fastest of 3 rounds, 2 cores): 17.9 -> 11.1 µs
per step, its first call from the cache 0.65 -> 0.47 s, with an empty cache 9.2 -> 9.8 s. With the
elimination entry by entry it had been 24.9 -> 16.3 µs for a first call 11.6 -> 14.6 s (``--label
holonomic_solve``), and by the rolled elimination (:func:`~manifold_dirac._mechanics.small.solve_rolled`)
23.7 -> 15.2 µs for 10.2 -> 11.9 s (``--label rolled_projection``). The Cartesian pendulum's ``4 x 4``
and the four-bar's ``5 x 5`` are eliminated entry by entry: 7.2 -> 1.5 and 15.8 -> 8.7 µs per step
against LAPACK (``--label holonomic_solve``)."""

_TRACE_HINT = (
    "Write it with jax.numpy (`import jax.numpy as jnp`; jnp.sin, jnp.sum, x[i] indexing, ...) for ONE "
    "point: plain numpy, math, float() or Python `if` on values cannot be traced by JAX, which the "
    "library uses for exact derivatives and compiled steps. Use jnp.where instead of `if`."
)


def as_one_forms(forms: ArrayLike, n: int, label: str, rows: str = "m") -> np.ndarray:
    """A constant matrix of one-forms in frame coordinates, validated.

    Parameters
    ----------
    forms : array-like, shape=[rows, n] (a single row may be 1-d)
    n : int
        Dimension of the manifold.
    label, rows : str
        What the forms are and the name of their count, for messages.

    Raises
    ------
    ValueError
        For a wrong shape or non-finite entries.
    """
    try:
        if np.iscomplexobj(forms):
            raise TypeError(f"{label}: one-forms must be real, got complex values")
        A = np.asarray(forms, dtype=float)
    except (TypeError, ValueError) as exc:
        if "complex" in str(exc):
            raise
        raise TypeError(f"{label}: constant one-forms are a ({rows}, {n}) matrix of real numbers, got "
                        f"{type(forms).__name__} {forms!r:.60}") from None
    if A.ndim == 1:
        A = A[None, :]
    if A.ndim != 2 or A.shape[1] != n:
        raise ValueError(f"{label}: constant one-forms are a ({rows}, {n}) matrix in frame coordinates, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{label}: non-finite entries in the one-forms")
    return A


def over_batch(fn: Callable, n_batch: int) -> Callable:
    """``fn`` mapped over ``n_batch`` leading axes of every argument (nested ``vmap``)."""
    for _ in range(n_batch):
        fn = jax.vmap(fn)
    return fn


@overload
def _probe(what: str, fn: Callable, *args: object, pair: Literal[True], at: str = ""
           ) -> tuple[jax.ShapeDtypeStruct, jax.ShapeDtypeStruct] | str: ...
@overload
def _probe(what: str, fn: Callable, *args: object, pair: Literal[False] = False, at: str = ""
           ) -> jax.ShapeDtypeStruct | str: ...
def _probe(what: str, fn: Callable, *args: object, pair: bool = False, at: str = ""
           ) -> jax.ShapeDtypeStruct | tuple[jax.ShapeDtypeStruct, jax.ShapeDtypeStruct] | str:
    """``jax.eval_shape`` of ``fn(*args)``, its output converted as the library converts it.

    The output goes through ``jnp.asarray`` (lists and tuples of numbers are
    arrays, as when the library calls the function); with ``pair`` it must
    be a pair and each part is converted. Returns the abstract output
    (``jax.ShapeDtypeStruct``, or a pair of them), or a string naming what
    was returned when it is not an array (``"None"``, ``"dict"``,
    ``"tuple of length 3"``). Nothing is compiled or evaluated.

    Raises
    ------
    TypeError
        When ``fn`` cannot be traced by JAX (plain numpy, ``float()``,
        Python ``if`` on values): the message says what to change.
    Exception
        Any other exception of ``fn`` propagates, with a note naming the
        function and the probe's arguments.
    """
    returned: dict[str, str] = {}

    def as_array(x: object) -> jax.Array | None:
        if x is None:
            return None
        try:
            return jnp.asarray(x)
        except (TypeError, ValueError):
            return None

    def traced(*a: object) -> jax.Array | tuple[jax.Array | None, ...] | None:
        out = fn(*a)
        if pair:
            if not isinstance(out, (tuple, list)) or len(out) != 2:
                returned["what"] = _describe(out)
                return None
            parts = tuple(as_array(x) for x in out)
            if any(p is None for p in parts):
                returned["what"] = "a pair of " + " and ".join(_describe(x) for x in out)
                return None
            return parts
        arr = as_array(out)
        if arr is None:
            returned["what"] = _describe(out)
        return arr

    try:
        out = jax.eval_shape(traced, *args)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
            jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError) as exc:
        raise TypeError(f"{what} cannot be traced by JAX ({type(exc).__name__}). {_TRACE_HINT}") from None
    except (KeyError, IndexError, AttributeError) as exc:
        params = args[-1] if len(args) and isinstance(args[-1], Mapping) else None
        key = exc.args[0] if isinstance(exc, KeyError) and exc.args else None
        if params is not None and key is not None and key not in params:
            raise ValueError(
                f"params: {what} looks up the key {key!r}, which the system's params do not have (keys: "
                f"{', '.join(repr(k) for k in params) or 'none'}): add it to params=") from exc
        exc.add_note(
            f"(raised by {what}, traced once when the LagrangeDiracSystem was built, for one point{at})"
        )
        raise
    except Exception as exc:
        exc.add_note(
            f"(raised by {what}, traced once when the LagrangeDiracSystem was built, for one point{at})"
        )
        raise
    return returned.get("what", out)


def _check_arity(label: str, f: Callable, names: str, with_params: bool) -> None:
    """Refuse a user function that cannot be called as the library calls it (TypeError naming it and why).

    With ``params`` given to the system the library calls ``f(*args,
    params)``; without, ``f(*args)``. Functions whose signature cannot be
    read (builtins, some wrappers) are not checked here.
    """
    import inspect

    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return
    n = len(names.split(", "))
    call = f"{label}({names}{', params' if with_params else ''})"
    try:
        sig.bind(*range(n + int(with_params)))
    except TypeError:
        pass
    else:
        return
    if with_params:
        try:
            sig.bind(*range(n))
        except TypeError:
            pass
        else:
            raise TypeError(
                f"LagrangeDiracSystem: params= is given, so the {label} is called as {call}, but it takes "
                f"({names}) only: add a params argument to it, or do not pass params")
    else:
        try:
            sig.bind(*range(n + 1))
        except TypeError:
            pass
        else:
            raise TypeError(
                f"LagrangeDiracSystem: the {label} takes one argument more than ({names}), and no params= is "
                f"given, so it is called as {call}: if its last argument is params, pass params=... to "
                "LagrangeDiracSystem; else write it as a function of ({names})")
    raise TypeError(f"LagrangeDiracSystem: the {label} must be callable as {call}; its signature is "
                    f"{f.__name__ if hasattr(f, '__name__') else label}{sig}")


def _describe(x: object) -> str:
    """A returned object for messages: ``"shape (3,)"``, ``"None"``, ``"tuple of length 3"``, ``"dict"``."""
    if x is None:
        return "None"
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"shape {tuple(x.shape)}"
    if isinstance(x, (tuple, list)):
        return f"{type(x).__name__} of length {len(x)}"
    return type(x).__name__


def _require_real(what: str, dtype: DTypeLike, part: str = "") -> None:
    """Refuse complex, integer and boolean outputs of a user function (TypeError)."""
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(
            f"{what} must return real values, got dtype {dtype}{part}: the library needs real float64 values "
            "(take the real part, or write the function in real arithmetic)"
        )
    if not jnp.issubdtype(dtype, jnp.floating):
        raise TypeError(
            f"{what} must return real floating-point values, got dtype {dtype}{part} "
            "(write float literals such as 0.0 instead of 0, or cast with jnp.asarray(x, float))"
        )


class LagrangeDiracSystem:
    """A (possibly degenerate, constrained, forced) Lagrange--Dirac system.

    Parameters
    ----------
    Q : Manifold
        The configuration manifold.
    lagrangian : callable ``L(q, v) -> scalar``
        For one point: ``q`` in the manifold's representation (a tuple on a
        product), ``v`` frame coordinates ``(dim,)``; written with
        ``jax.numpy``. With ``params`` given, ``L(q, v, params)``.
    constraint : array ``(m, dim)`` or callable ``A(q) -> (m, dim)``, optional
        Constraint one-forms in frame coordinates, ``Delta_Q(q) = ker A(q)``
        (``A(q, params)`` with ``params``).
    force : callable ``F(t, q, v) -> (dim,)``, optional
        External force, a covector in frame coordinates (``F(t, q, v, params)``
        with ``params``).
    partials : callable ``(q, v) -> (dL/dq, dL/dv)``, optional
        Analytic partials in frame coordinates (``dL/dq`` along
        ``q -> R_q(e eta)`` with ``v`` fixed); by default automatic.
    name : str, optional
        A name for messages, figures and saved trajectories.
    params : pytree, optional
        Parameters passed to every user function as the last argument (a
        dict, tuple or array of float64 values); they are traced (changing
        them does not recompile) and differentiable. They are kept as the
        attribute ``system.params``; ``integrate(..., params=)``,
        ``Integrator.run(..., params=)`` and ``rollout(..., params=)`` use
        other values of the same structure and shapes for one call,
        leaving ``system.params`` as it is.
    holonomic : callable ``g(q) -> (r,)``, optional
        Holonomic constraints ``g(q) = 0`` on positions (``g(q, params)``
        with ``params``), written with ``jax.numpy`` for one point. Their
        differential ``dg(q)`` (``(r, dim)``, frame coordinates) is taken by
        automatic differentiation along the retraction. The schemes hold
        ``g(q_{k+1}) = 0`` at every step with the reaction ``dg(q_k)^T lam``
        and report velocities and momenta with ``dg(q_k) v_k = 0``
        (``docs/schemes.md``, "Holonomic constraints"). ``g`` must be
        defined (and smooth) on the manifold's ambient representation near
        the manifold: its derivative is taken along ``q + T_q(eta)``.

    Raises
    ------
    ValueError
        A user function returns the wrong shape (``L`` not a scalar, ``F``
        not ``(dim,)``, ``A`` not ``(m, dim)``, ``g`` not ``(r,)``, a partial
        not ``(dim,)``), a constant constraint has non-finite entries, or
        there are more constraints (one-forms and holonomic) than
        dimensions: the message names the function, the shape expected and
        the shape returned.
    TypeError
        A user function returns something that is not an array (None, a
        dict), complex values ("must return real values"), integer or
        boolean values, or cannot be traced by JAX.

    Notes
    -----
    Each user function is traced once here (``jax.eval_shape`` at the
    manifold's default point, ``v = 0``, ``t = 0``; nothing is compiled), so
    the errors above come before any work. Values -- NaN, inf, a rank-deficient
    ``A`` -- can only be seen where they are computed: at the initial state
    (``A(q0)``, ``dL/dv(q0, v0)``) and in each step.

    ``dL/dq_j`` is the derivative of ``e -> L(q + e T_q(e_j), v)`` at 0 with
    ``T_q(eta) = Q.ambient_tangent(q, eta)``: the straight line agrees with
    the retraction curve to first order, so autodiff never passes through
    ``exp`` or ``log``. The same holds for ``dg``.

    With holonomic constraints the velocity constraint is
    ``[A(q); dg(q)] v = 0``: :meth:`constraint_matrix` returns the stacked
    ``(m + r, dim)`` matrix (``Delta_Q(q)`` is its kernel, and every check of
    ``v0`` uses it), :meth:`one_form_matrix` the one-forms ``A(q)`` alone;
    :attr:`n_constraints` is ``m + r``, :attr:`n_one_forms` is ``m``,
    :attr:`n_holonomic` is ``r``.

    Examples
    --------
    A skate on a plane inclined along ``x``: ``(x, y, theta)`` on
    ``Euclidean(3)``, the knife-edge constraint ``sin(theta) x' - cos(theta) y' = 0``,
    and the slope as a parameter:

    >>> import jax.numpy as jnp
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> def L(q, v, p):
    ...     return 0.5 * (v[0] ** 2 + v[1] ** 2) + 0.25 * v[2] ** 2 + p["g"] * q[0]
    >>> skate = md.LagrangeDiracSystem(
    ...     md.Euclidean(3, names=("x", "y", "theta")), L,
    ...     constraint=lambda q, p: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]),
    ...     name="skate", params={"g": 2.0})
    >>> skate.dim, skate.n_constraints
    (3, 1)
    >>> tr = md.integrate(skate, np.zeros(3), v0=np.array([0.0, 0.0, 1.0]), h=0.05, n_steps=20)
    >>> bool(tr.constraint_residual.max() < 1e-12)
    True
    """

    def __init__(
        self,
        Q: Manifold,
        lagrangian: Lagrangian,
        constraint: Constraint | ArrayLike | None = None,
        force: Force | None = None,
        *,
        partials: Partials | None = None,
        name: str | None = None,
        params: Params = None,
        holonomic: Holonomic | None = None,
    ):
        if not isinstance(Q, Manifold):
            raise TypeError(f"LagrangeDiracSystem: Q must be a Manifold, got {type(Q).__name__}")
        for label, f in (("lagrangian", lagrangian), ("force", force), ("partials", partials),
                         ("holonomic", holonomic)):
            if f is not None and not callable(f):
                raise TypeError(f"LagrangeDiracSystem: {label} must be callable, got {type(f).__name__}")
        if lagrangian is None:
            raise TypeError("LagrangeDiracSystem: a lagrangian L(q, v) is required")
        if constraint is not None and not callable(constraint) and (
                isinstance(constraint, (str, bytes, Mapping)) or np.asarray(constraint).dtype == object):
            raise TypeError(
                "LagrangeDiracSystem: constraint must be None, a callable A(q) returning (m, n) one-forms, or a "
                f"constant (m, {Q.dim}) array of one-forms, got {type(constraint).__name__} {constraint!r:.60}")
        extra = " params" if params is not None else ""
        for label, f, names in (("lagrangian", lagrangian, "q, v"), ("force", force, "t, q, v"),
                                ("partials", partials, "q, v"), ("holonomic", holonomic, "q"),
                                ("constraint", constraint if callable(constraint) else None, "q")):
            if f is not None:
                _check_arity(label, f, names, params is not None)
        self.Q = Q
        self.name = name
        self.params = params
        self._user_L = lagrangian
        self._user_F = force
        self._user_partials = partials
        self._user_g = holonomic
        n = Q.dim
        if constraint is None:
            self._A_const: np.ndarray | None = np.zeros((0, n))
            self._A_fun = None
        elif callable(constraint):
            self._A_const, self._A_fun = None, constraint
        else:
            self._A_const, self._A_fun = as_one_forms(constraint, n, "constraint"), None
        self._probe_user_functions()

    # ------------------------------------------------------------ user calls
    def _args(self, params: Params) -> tuple[Params, ...]:
        """The trailing ``params`` argument of the user's functions (the system's own when None is given)."""
        if self.params is None:
            return ()
        return (self.params if params is None else params,)

    def lagrangian(self, q: Point, v: jax.Array, params: Params = None) -> jax.Array:
        """``L(q, v)`` at one point (scalar)."""
        return jnp.asarray(self._user_L(q, v, *self._args(params)))

    def one_form_matrix(self, q: Point, params: Params = None) -> jax.Array:
        """The constraint one-forms ``A(q)`` alone, ``(m, dim)`` (no holonomic rows)."""
        # device_put, not jnp.asarray/jnp.zeros: on a NumPy value those compile a small XLA program when eager
        if self._A_const is not None:
            return jax.device_put(np.asarray(self._A_const, dtype=float))
        if self._A_fun is None:
            return jax.device_put(np.zeros((0, self.dim)))
        return jnp.asarray(self._A_fun(q, *self._args(params)))

    def constraint_matrix(self, q: Point, params: Params = None) -> jax.Array:
        """The velocity constraint ``[A(q); dg(q)]``, ``(m + r, dim)``: ``Delta_Q(q)`` is its kernel.

        Without holonomic constraints this is ``A(q)``.
        """
        if not self._r:
            return self.one_form_matrix(q, params)
        A = self.one_form_matrix(q, params)
        dg = self.holonomic_differential(q, params)
        return jnp.concatenate([A.astype(dg.dtype), dg], axis=0) if self._m else dg

    def holonomic(self, q: Point, params: Params = None) -> jax.Array:
        """``g(q)``, ``(r,)`` (``(0,)`` without holonomic constraints)."""
        if self._user_g is None:
            return jnp.zeros(0)
        return jnp.reshape(jnp.asarray(self._user_g(q, *self._args(params))), (-1,))

    def holonomic_differential(self, q: Point, params: Params = None) -> jax.Array:
        """``dg(q)``, ``(r, dim)`` in frame coordinates: ``d/de g(R_q(e eta)) = dg(q) eta`` at ``e = 0``.

        Forward-mode autodiff of ``eta -> g(q + T_q(eta))`` at 0 (the straight
        line agrees with the retraction curve to first order; see the class Notes).
        """
        if self._user_g is None:
            return jnp.zeros((0, self.dim))
        zero = jnp.zeros(self.dim)
        return jax.jacfwd(lambda eta: self.holonomic(self.Q.first_order_curve(q, eta), params))(zero)

    def holonomic_projection(self, q: Point, v: jax.Array, p: jax.Array, params: Params = None
                             ) -> tuple[jax.Array, jax.Array]:
        """The reported ``(v, p)`` at ``q`` made tangent to ``g = 0``: the RATTLE projection.

        ``v`` is projected onto ``ker dg(q)`` orthogonally in the kinetic-energy
        metric ``M = d2L/dv2(q, v)``, and ``p`` by the dual projection, which
        changes it by a reaction ``dg(q)^T nu`` only::

            [M  dg^T] [v']   [M v]        [M  dg^T] [w ]   [p]
            [dg    0] [nu] = [ 0 ],       [dg    0] [nu'] = [0],   p' = p - dg^T nu'

        For ``L = v^T M v / 2 - V(q)`` the second is RATTLE's momentum
        projection (``dg M^{-1} p' = 0``, Andersen 1983; Leimkuhler & Skeel
        1994) and ``M^{-1} p' = `` the projection of ``M^{-1} p``. The bordered
        matrix is regular where ``M`` is positive definite on ``ker dg(q)``
        (a degenerate ``L`` need only be regular there). Identity without
        holonomic constraints. One point; ``v, p`` shape ``(dim,)``.
        """
        if not self._r:
            return v, p
        G = self.holonomic_differential(q, params)
        M = jax.jacfwd(lambda w: self.momentum(q, w, params))(v)
        r = self._r
        K = jnp.block([[M, G.T], [G, jnp.zeros((r, r))]])
        rhs = jnp.stack([jnp.concatenate([mv(M, v), jnp.zeros(r)]), jnp.concatenate([p, jnp.zeros(r)])], axis=1)
        if self.dim + r <= SMALL_PROJECTION_MAX:  # unrolled: no LAPACK call in the loop that records the points
            sol = solve_small(K, rhs)
        else:
            sol = jnp.linalg.solve(K, rhs)
        return sol[: self.dim, 0], p - vm(sol[self.dim:, 1], G)

    def force(self, t: Scalar, q: Point, v: jax.Array, params: Params = None) -> jax.Array | None:
        """``F(t, q, v)``, ``(dim,)``, or None without a force."""
        if self._user_F is None:
            return None
        return jnp.asarray(self._user_F(t, q, v, *self._args(params)))

    @property
    def has_force(self) -> bool:
        return self._user_F is not None

    @property
    def dim(self) -> int:
        """Dimension ``n`` of the configuration manifold."""
        return self.Q.dim

    @property
    def n_constraints(self) -> int:
        """Number of rows of :meth:`constraint_matrix`: ``m`` one-forms plus ``r`` holonomic constraints."""
        return self._m + self._r

    @property
    def n_one_forms(self) -> int:
        """Number ``m`` of constraint one-forms (nonholonomic, or holonomic given by their differential)."""
        return self._m

    @property
    def n_holonomic(self) -> int:
        """Number ``r`` of holonomic constraints ``g(q) = 0``."""
        return self._r

    @property
    def has_constant_one_forms(self) -> bool:
        """Whether the one-forms ``A`` (:meth:`one_form_matrix`) do not depend on ``q``."""
        return self._A_const is not None

    @property
    def has_constant_constraint(self) -> bool:
        """Whether :meth:`constraint_matrix` does not depend on ``q`` in frame coordinates."""
        return self._A_const is not None and not self._r

    # -------------------------------------------------- initial data helpers
    def project_velocity(self, q: PointBatch, v: ArrayLike) -> jax.Array:
        """The velocity of ``Delta_Q(q)`` closest to ``v`` in the kinetic-energy metric (batched, eager).

        For a nearly consistent initial velocity (``A(q0) v0`` small but above
        the tolerance of :meth:`~manifold_dirac._run.integrator.Integrator.initial_state`):
        ``v' = argmin (v' - v)^T M (v' - v)`` subject to ``[A; dg](q) v' = 0``,
        ``M = d2L/dv2(q, v)``, i.e.::

            [M  C^T] [v']   [M v]
            [C    0] [nu] = [ 0 ]      (C = constraint_matrix(q))

        The kinetic-energy metric is the one in which the constraint forces
        act (d'Alembert): ``p' - p = -C^T nu`` (for a quadratic ``L``), so the
        projection removes exactly what an impulsive constraint force would,
        and it does not depend on the frame's scaling (metres against
        radians), unlike the Euclidean projection in frame coordinates.

        Parameters
        ----------
        q : point, shape=[*B, *point_shape]
        v : array-like, shape=[*B, dim]

        Returns
        -------
        jax.Array, shape=[*B, dim]
        """
        n = self.dim
        v = jnp.asarray(v, dtype=float)
        if not self.n_constraints:
            return v

        def one(qq, vv, params):
            C = self.constraint_matrix(qq, params)
            M = jax.jacfwd(lambda w: self.momentum(qq, w, params))(vv)
            c = C.shape[0]
            K = jnp.block([[M, C.T], [C, jnp.zeros((c, c))]])
            return jnp.linalg.solve(K, jnp.concatenate([M @ vv, jnp.zeros(c)]))[:n]

        B = self.Q.batch_shape(q)
        v = jnp.broadcast_to(v, (*B, n))
        return over_batch(lambda qq, vv: one(qq, vv, self.params), len(B))(q, v)

    def check_position(self, q: PointBatch, name: str = "q0") -> None:
        """Refuse a point off ``g = 0`` (eager, batched): ``|g(q)|_inf > 1e-9 (1 + |dg(q)|_inf)``.

        The tolerance is relative to the size of ``dg`` (so a constraint
        written in other units, ``|x|^2 - l^2`` against ``|x| - l``, is held
        to the same distance); :meth:`project_position` moves a nearly
        consistent point onto ``g = 0``.

        Raises
        ------
        ValueError
            Naming the largest violation and the batch index.
        """
        if not self._r:
            return
        B = self.Q.batch_shape(q)
        g = np.asarray(over_batch(lambda qq: self.holonomic(qq, self.params), len(B))(q))
        G = np.asarray(over_batch(lambda qq: self.holonomic_differential(qq, self.params), len(B))(q))
        self._refuse_off_position(g, G, B, name)

    def _refuse_off_position(self, g: np.ndarray, G: np.ndarray, B: tuple[int, ...], name: str = "q0") -> None:
        """The checks of :meth:`check_position` on the values ``g(q)`` ``(*B, r)`` and ``dg(q)`` ``(*B, r, dim)``
        (evaluated by the caller: the start of a run computes them in its compiled program)."""
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(G))):
            raise ValueError(f"the holonomic constraint g(q) of {self.name or 'this system'} or its differential is "
                             f"not finite at {name}: g must be defined and smooth at the initial configuration")
        viol = np.max(np.abs(g), axis=-1)
        tol = 1e-9 * (1.0 + np.max(np.abs(G), axis=(-2, -1)))
        if np.any(viol > tol):
            i = [int(x) for x in np.unravel_index(int(np.argmax(viol - tol)), B)] if B else []
            where = f" (batch index {i})" if B else ""
            raise ValueError(
                f"{name} violates the holonomic constraint g(q) = 0 of {self.name or 'this system'}: |g({name})| = "
                f"{float(np.max(viol)):.3e}{where}, above the tolerance 1e-9 (1 + |dg|) = {float(np.max(tol)):.1e}; "
                f"system.project_position({name}) moves a nearly consistent configuration onto g = 0"
            )
        s = np.linalg.svd(G, compute_uv=False)
        if np.any(s[..., -1] <= 1e-10 * np.maximum(s[..., 0], 1e-300)):
            raise ValueError(
                f"the holonomic constraints of {self.name or 'this system'} are dependent at {name} (dg has rank "
                f"< {self._r}; smallest singular value {float(np.min(s[..., -1])):.2e}): drop a redundant "
                "constraint, or start away from a singular configuration of the mechanism"
            )

    def constraint_violation(self, q: Point, v: jax.Array, params: Params = None) -> tuple[jax.Array, jax.Array]:
        """``(|C(q) v|_inf, |g(q)|_inf)`` at one point: the slip and the position violation (scalars).

        ``C = constraint_matrix`` (one-forms and ``dg``): the *continuous*
        constraint evaluated at a reported ``(q_k, v_k)``, i.e. the physical
        slip of the discrete motion, distinct from the scheme's discrete
        constraint ``c(xi)``, which Newton holds to round-off. Zeros without
        constraints. For points with batch axes use ``evaluate``.
        """
        zero = jnp.zeros((), dtype=jnp.result_type(v))
        if not self.n_constraints:
            return zero, zero
        slip = jnp.max(jnp.abs(mv(self.constraint_matrix(q, params), v)))  # no library product in the loop
        gv = jnp.max(jnp.abs(self.holonomic(q, params))) if self._r else zero
        return slip, gv

    def project_position(self, q: PointBatch, tol: float = 1e-13, max_iter: int = 50) -> PointBatch:
        """A point with ``g = 0`` near ``q``: Gauss--Newton in the retraction chart (batched, eager).

        ``q <- R_q(-dg(q)^+ g(q))`` (the minimum-norm correction in frame
        coordinates) until ``|g|_inf <= tol (1 + |dg|_inf)``: for initial
        configurations of closed chains (a four-bar's angles) given to a few
        digits. Identity without holonomic constraints.

        Raises
        ------
        ValueError
            When the iteration does not reach the tolerance (no point of
            ``g = 0`` nearby, or ``dg`` rank deficient there).
        """
        if not self._r:
            return q
        B = self.Q.batch_shape(q)
        params = self.params

        def update(qq):
            g = self.holonomic(qq, params)
            G = self.holonomic_differential(qq, params)
            return self.Q.retract(qq, -jnp.linalg.pinv(G) @ g), jnp.max(jnp.abs(g)), jnp.max(jnp.abs(G))

        step = jax.jit(over_batch(update, len(B)))
        for _ in range(max_iter):
            q_new, err, size = step(q)
            if bool(np.all(np.asarray(err) <= tol * (1.0 + np.asarray(size)))):
                return q
            q = q_new
        raise ValueError(
            f"project_position: g(q) = 0 not reached after {max_iter} Gauss--Newton steps (|g| = "
            f"{float(np.max(np.asarray(err))):.3e}): no configuration of the holonomic constraints of "
            f"{self.name or 'this system'} near q, or dg(q) is rank deficient there"
        )

    @property
    def uses_automatic_partials(self) -> bool:
        return self._user_partials is None

    # ----------------------------------------------------------- derivatives
    def partials(self, q: Point, v: jax.Array, params: Params = None) -> tuple[jax.Array, jax.Array]:
        """Exact ``(dL/dq, dL/dv)`` at one point, each ``(dim,)`` (see the class Notes)."""
        if self._user_partials is not None:
            dq, dv = self._user_partials(q, v, *self._args(params))
            return jnp.asarray(dq), jnp.asarray(dv)

        def ell(eta, w):
            return self.lagrangian(self.Q.first_order_curve(q, eta), w, params)

        return jax.grad(ell, argnums=(0, 1))(jnp.zeros(self.dim, dtype=jnp.result_type(v)), v)

    def value_and_partials(self, q: Point, v: jax.Array, params: Params = None) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(L, dL/dq, dL/dv)`` at one point: the value comes free with reverse-mode autodiff."""
        if self._user_partials is not None:
            return (self.lagrangian(q, v, params), *self.partials(q, v, params))

        def ell(eta, w):
            return self.lagrangian(self.Q.first_order_curve(q, eta), w, params)

        val, (dq, dv) = jax.value_and_grad(ell, argnums=(0, 1))(jnp.zeros(self.dim, dtype=jnp.result_type(v)), v)
        return val, dq, dv

    def momentum(self, q: Point, v: jax.Array, params: Params = None) -> jax.Array:
        """``p = dL/dv(q, v)``, ``(dim,)``."""
        return self.partials(q, v, params)[1]

    def energy(self, q: Point, v: jax.Array, p: jax.Array, params: Params = None) -> jax.Array:
        """``E = <p, v> - L(q, v)`` at one point (scalar)."""
        return jnp.dot(p, v) - self.lagrangian(q, v, params)

    def check_partials(self, q: Point, v: ArrayLike, rtol: float = 1e-6) -> float:
        """Compare :meth:`partials` with central finite differences at one point (eager).

        Returns the largest relative deviation; raises ``ValueError`` above
        ``rtol`` (wrong analytic partials, or a Lagrangian that is not smooth here).
        """
        Q, n = self.Q, self.dim
        v = jnp.asarray(v, dtype=float)
        dq, dv = (np.asarray(a) for a in self.partials(q, v, self.params))
        eps = 1e-6
        L = lambda qq, vv: float(self.lagrangian(qq, vv, self.params))
        fd_q = np.array([(L(Q.retract(q, eps * e), v) - L(Q.retract(q, -eps * e), v)) / (2 * eps) for e in np.eye(n)])
        fd_v = np.array([(L(q, v + eps * e) - L(q, v - eps * e)) / (2 * eps) for e in np.eye(n)])
        scale = 1.0 + max(np.abs(fd_q).max(initial=0), np.abs(fd_v).max(initial=0))
        err = max(np.abs(fd_q - dq).max(initial=0), np.abs(fd_v - dv).max(initial=0)) / scale
        if not err <= rtol:
            raise ValueError(
                f"partials of {self.name or 'the Lagrangian'} disagree with finite differences (relative "
                f"{err:.2e} > {rtol:.0e}): check the analytic partials (dL/dq is along q -> R_q(e eta) with v fixed)"
            )
        return float(err)

    # ------------------------------------------------------- eager, batched
    def evaluate(self, method: str, q: PointBatch, *arrays: ArrayLike) -> jax.Array | tuple[jax.Array, ...]:
        """Call ``method`` (``"lagrangian"``, ``"energy"``, ``"partials"``, ``"momentum"``,
        ``"constraint_matrix"``) on points with leading batch axes, eagerly.

        Parameters
        ----------
        q : point, shape=[*B, *point_shape]
        *arrays : arrays with the same leading ``*B``
        """
        B = self.Q.batch_shape(q)
        fn = getattr(self, method)
        return over_batch(lambda qq, *aa: fn(qq, *aa, self.params), len(B))(q, *(jnp.asarray(a) for a in arrays))

    # ------------------------------------------------------------ validation
    def _probe_user_functions(self) -> None:
        """Trace each user function once at an abstract point: shapes, types, traceability.

        ``jax.eval_shape`` at the manifold's default point and ``v = 0``
        (``t = 0``): nothing is compiled or evaluated, so the values (NaN, a
        rank-deficient ``A``) are checked where they are known -- at the
        initial state and in every step.

        Raises
        ------
        ValueError
            A function returns the wrong shape; the message names the
            function, the shape expected and the shape returned.
        TypeError
            A function returns something that is not an array (None, a
            dict), complex, integer or boolean values, or cannot be traced.
        """
        Q, n = self.Q, self.dim
        q = Q.default_point()
        v = np.zeros(n)  # host values: eager jnp.zeros compiles small programs at first use
        args = self._args(self.params)
        at_q = f": q the default point of {Q!r}"
        at = at_q + f", v of shape ({n},)"
        what = "the Lagrangian L(q, v)"
        out = _probe(what, lambda qq, vv, *a: self._user_L(qq, vv, *a), q, v, *args, at=at)
        if isinstance(out, str):
            raise TypeError(f"{what} must return a scalar (shape ()) for one point (q, v), got {out}")
        if out.shape != ():
            raise ValueError(
                f"{what} must return a scalar (shape ()) for one point (q, v), got shape {tuple(out.shape)}; "
                "write L for a single point and let the library batch it"
            )
        _require_real(what, out.dtype)
        if self._A_fun is not None:
            what = "the constraint A(q)"
            A = _probe(what, lambda qq, *a: self._A_fun(qq, *a), q, *args, at=at_q)
            if isinstance(A, str):
                raise TypeError(f"{what} must return an (m, {n}) array of one-forms for one point, got {A}")
            if len(A.shape) != 2 or A.shape[1] != n:
                hint = (f"; for one constraint return shape (1, {n}), e.g. row[None, :]"
                        if A.shape == (n,) else "")
                raise ValueError(
                    f"{what} must return an (m, {n}) array of one-forms for one point (m constraints, "
                    f"{n} frame coordinates), got shape {tuple(A.shape)}{hint}"
                )
            _require_real(what, A.dtype)
            self._m = int(A.shape[0])
        else:
            self._m = int(self._A_const.shape[0])  # type: ignore[union-attr]
        self._r = 0
        if self._user_g is not None:
            what = "the holonomic constraint g(q)"
            G = _probe(what, lambda qq, *a: self._user_g(qq, *a), q, *args, at=at_q)
            if isinstance(G, str):
                raise TypeError(f"{what} must return an array of shape (r,) for one point (r constraints "
                                f"g(q) = 0), got {G}")
            if len(G.shape) > 1:
                raise ValueError(
                    f"{what} must return an array of shape (r,) for one point (r constraints g(q) = 0), got "
                    f"shape {tuple(G.shape)}: write g for a single point and let the library batch it"
                )
            _require_real(what, G.dtype)
            self._r = int(np.prod(G.shape, dtype=int))
            if self._r == 0:
                raise ValueError(f"{what} returned no constraints (shape {tuple(G.shape)}): pass holonomic=None")
            # the differential along the retraction is traced too (g must be differentiable there)
            _probe(what + " (its differential dg(q))", lambda qq, *a: self.holonomic_differential(qq, *a),
                   q, *args, at=at_q)
            if self._m + self._r > n:
                raise ValueError(
                    f"{self._m} constraint one-forms and {self._r} holonomic constraints on a {n}-dimensional "
                    f"manifold cannot be independent: at most {n} constraints in all"
                )
        if self._user_F is not None:
            what = "the force F(t, q, v)"
            F = _probe(what, lambda t, qq, vv, *a: self._user_F(t, qq, vv, *a), 0.0, q, v, *args,
                       at=at + ", t = 0.0")
            if isinstance(F, str):
                raise TypeError(f"{what} must return a covector of shape ({n},) for one point, got {F}")
            if F.shape != (n,):
                raise ValueError(
                    f"{what} must return a covector of shape ({n},) for one point (frame coordinates), "
                    f"got shape {tuple(F.shape)}"
                    + ("; build it with jnp.array([...]) or jnp.stack" if F.shape == () else "")
                )
            _require_real(what, F.dtype)
        if self._user_partials is not None:
            what = "the analytic partials(q, v)"
            P = _probe(what, lambda qq, vv, *a: self._user_partials(qq, vv, *a), q, v, *args, pair=True, at=at)
            expected = f"must return a pair (dL/dq, dL/dv) of arrays of shape ({n},) each"
            if isinstance(P, str):
                raise TypeError(f"{what} {expected}, got {P}")
            if any(x.shape != (n,) for x in P):
                raise ValueError(
                    f"{what} {expected}, got shapes {tuple(P[0].shape)} and {tuple(P[1].shape)}"
                )
            for label, x in zip(("dL/dq", "dL/dv"), P):
                _require_real(what, x.dtype, f" for {label}")

    def __repr__(self) -> str:
        hol = f", holonomic={self._r}" if self._r else ""
        return f"LagrangeDiracSystem({self.name or 'unnamed'}, Q={self.Q!r}, constraints={self._m}{hol})"
