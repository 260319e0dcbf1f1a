"""Interconnection of Lagrange--Dirac systems on product manifolds (eqs. 25--34).

Subsystems ``(L_i, Delta_i)`` on ``Q_i`` are joined through an interaction
distribution ``Sigma_Q = ker S(q)`` on ``Q = Q_1 x ... x Q_k``. By (32)
``(D_{Delta_1} (+) ... (+) D_{Delta_k}) [x] D_int = D_{Delta_Q}`` with
``Delta_Q = (Delta_1 (+) ... (+) Delta_k) ∩ Sigma_Q`` (31), so the
interconnected system is the ordinary Lagrange--Dirac system (33) with
``L = sum_i L_i(q_i, v_i)`` and the constraint one-forms
``[blockdiag(A_i(q_i)); S(q)]``, and external forces pulled back factor by
factor (34). :func:`interconnect` returns exactly that, an
:class:`InterconnectedSystem` -- a
:class:`~manifold_dirac._mechanics.system.LagrangeDiracSystem` built
through its public constructor, which every scheme integrates and which can
be interconnected again.

Every function here that the engine calls is written for **one** point with
``jax.numpy`` (a product point is the tuple of the subsystems' points);
batches come from ``jax.vmap`` inside the engine.

Discretely, with the product retraction and a quadrature linear in ``L``,
discretizing the subsystems and then interconnecting the discrete Dirac
structures gives the same equations as discretizing the interconnected
system; :class:`SubsystemDiscreteLagrangian` is the first route (each
subsystem's ``L_d`` through its own rule and retraction).

The interaction-force view (Jacobs & Yoshimura 2014): the multipliers of the
interaction rows are the impulses of the constraint forces
``S(q_k)^T mu_S``; :meth:`InterconnectedSystem.parts` reports each
subsystem's share of them divided by ``h``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, TypeAlias

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

from ._manifolds.product import ProductManifold, block_diag
from ._types import ArrayLike, Constraint, Params, Point, PointBatch, Scalar, Vector
from ._mechanics.rules import DiscreteLagrangian, NodeGeometry, QuadratureRule, RuleValue, StepContext, get_rule
from ._mechanics.schemes import get_scheme
from ._mechanics.system import LagrangeDiracSystem, as_one_forms, over_batch

if TYPE_CHECKING:
    from . import Trajectory

__all__ = [
    "Interaction",
    "InterconnectedSystem",
    "Layout",
    "SubsystemDiscreteLagrangian",
    "SubsystemTrajectory",
    "equal_velocities",
    "interconnect",
    "pin_joint",
    "linear_interaction",
    "rolling_ball_on_plane",
    "rolling_without_slipping",
]


# --------------------------------------------------------------------- layout
@dataclass(frozen=True)
class Layout:
    """Where each named subsystem sits in the product's frame coordinates.

    Attributes
    ----------
    names : tuple of str
    offsets, dims : tuple of int
        Start and length of each subsystem's block in frame coordinates
        (tangent vectors and covectors of the product, shape ``(N,)``).
    systems : tuple of LagrangeDiracSystem
    """

    names: tuple[str, ...]
    offsets: tuple[int, ...]
    dims: tuple[int, ...]
    systems: tuple[LagrangeDiracSystem, ...]

    @property
    def dim(self) -> int:
        """``N``, the dimension of the product."""
        return int(sum(self.dims))

    def _walk(self, name: str) -> list[tuple[Layout, int]]:
        """The (layout, index) pairs along a dotted name, outermost first."""
        path, layout = [], self
        parts = name.split(".")
        for depth, head in enumerate(parts):
            if layout is None:
                outer = ".".join(parts[:depth])
                raise ValueError(
                    f"interaction: {outer!r} is not an interconnected system, so {name!r} does not exist"
                )
            if head not in layout.names:
                raise ValueError(
                    f"interaction: no subsystem named {head!r}"
                    + (f" in {'.'.join(parts[:depth])!r}" if depth else "")
                    + "; the subsystems are " + ", ".join(repr(n) for n in layout.names)
                )
            i = layout.names.index(head)
            path.append((layout, i))
            inner = layout.systems[i]
            layout = inner.layout if isinstance(inner, InterconnectedSystem) else None
        return path

    def locate(self, name: str) -> tuple[int, int]:
        """``(offset, dim)`` of a subsystem, dotted names reaching into nested ones
        (``"cart.left"``)."""
        path = self._walk(name)
        return sum(lay.offsets[i] for lay, i in path), path[-1][0].dims[path[-1][1]]

    def index(self, name: str, component: int) -> int:
        """Frame-coordinate index of ``component`` of subsystem ``name``."""
        off, dim = self.locate(name)
        integer = isinstance(component, (int, np.integer)) and not isinstance(component, bool)
        if not integer or not 0 <= component < dim:
            raise ValueError(
                f"interaction: {name!r} has {dim} frame components; component {component!r} does not exist"
            )
        return off + int(component)

    def system(self, name: str) -> LagrangeDiracSystem:
        """The subsystem called ``name`` (dotted for nested ones)."""
        lay, i = self._walk(name)[-1]
        return lay.systems[i]

    def point(self, q: Point, name: str) -> Point:
        """The point of subsystem ``name`` inside the product point ``q`` (a nested tuple)."""
        for _, i in self._walk(name):
            q = q[i]
        return q


# ---------------------------------------------------------------- interaction
_FormsOfQ: TypeAlias = Callable[..., ArrayLike]
"""``S(q) -> (r, N)``, or ``S(q, params) -> (r, N)`` for an interaction with parameters."""
_Forms: TypeAlias = ArrayLike | _FormsOfQ | Callable[[Layout], ArrayLike | _FormsOfQ] | None
_HolonomicOfQ: TypeAlias = Callable[..., ArrayLike]
"""``g(q) -> (c,)``, or ``g(q, params) -> (c,)`` for holonomic constraints with parameters."""
_Coefficient: TypeAlias = float | Callable[[Params], ArrayLike]


class Interaction:
    """One-forms ``S(q)`` on the product whose kernel is ``Sigma_Q`` (25).

    Build one with the helpers (:func:`equal_velocities`,
    :func:`rolling_without_slipping`, :func:`rolling_ball_on_plane`,
    :func:`linear_interaction`) or directly, and add interactions with ``+``
    (their rows are stacked).

    Parameters
    ----------
    forms : array ``(r, N)``, or callable ``S(q) -> (r, N)``, or callable ``layout -> (either)``
        ``q`` is ONE product point (a tuple of the subsystems' points); a
        callable is written with ``jax.numpy``. Rows are one-forms in the
        product's frame coordinates. With ``params``: a callable
        ``S(q, params)`` (or a factory ``layout -> S``).
    needs_layout : bool
        Whether ``forms`` is a factory taking the :class:`Layout` (what the
        helpers use to resolve subsystem names).
    label : str
        A name used in error messages.
    params : pytree, optional
        The interaction's numeric constants (a dict of float64 values, say),
        passed to ``S`` as its last argument. They become part of the
        interconnected system's ``params`` (see :class:`InterconnectedSystem`):
        traced arguments of the compiled programs, so another value does not
        compile again, and differentiable.

    Attributes
    ----------
    params : tuple or None
        One entry per part (``a + b`` has the parts of ``a`` and then of
        ``b``): its ``params``, or None for a part without; None when no part
        has any.

    Examples
    --------
    Two masses on a line whose velocities are equal (``v_a - v_b = 0``), given
    by its matrix; ``+`` stacks rows:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> link = md.Interaction(np.array([[1.0, -1.0]]), label="rigid link")
    >>> both = link + md.Interaction(np.array([[1.0, 1.0]]))
    >>> mass = md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v)
    >>> md.interconnect(mass, mass, names=("a", "b"), interaction=link).n_constraints
    1

    A lever whose ratio is a parameter (``v_a + k v_b = 0``):

    >>> import jax.numpy as jnp
    >>> lever = md.Interaction(lambda q, p: jnp.stack([1.0, p["k"]])[None, :], params={"k": 2.0})
    >>> md.interconnect(mass, mass, names=("a", "b"), interaction=lever).params
    (None, None, {'interaction': ({'k': 2.0},)})
    """

    def __init__(self, forms: _Forms, *, needs_layout: bool = False, label: str = "interaction",
                 params: Params = None):
        if params is not None and not callable(forms):
            raise TypeError(f"{label}: an interaction with params needs forms S(q, params) (a function, or a "
                            f"factory of one), got {type(forms).__name__}")
        self._parts: list[tuple[_Forms, bool, str]] = [(forms, needs_layout, label)]
        # the numbers live here only: the compiled-program cache ignores an attribute named params
        self.params: tuple[Params, ...] | None = None if params is None else (params,)

    def __add__(self, other: Interaction) -> Interaction:
        if not isinstance(other, Interaction):
            return NotImplemented
        out = Interaction(None)
        out._parts = self._parts + other._parts
        if self.params is not None or other.params is not None:
            out.params = self._part_params() + other._part_params()
        return out

    def __repr__(self) -> str:
        return "Interaction(" + " + ".join(self.labels) + ")"

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(p[2] for p in self._parts)

    def _part_params(self) -> tuple[Params, ...]:
        return self.params if self.params is not None else (None,) * len(self._parts)

    def _resolved(self, layout: Layout) -> list[tuple[np.ndarray | _FormsOfQ, str, bool]]:
        """Each part as a validated constant ``(r, N)`` numpy array or a function of ``q``
        (of ``q, params`` for a part with parameters: the third entry)."""
        N = layout.dim
        out = []
        for (forms, needs_layout, label), p in zip(self._parts, self._part_params()):
            f = forms(layout) if needs_layout else forms
            if p is not None and not callable(f):
                raise TypeError(f"{label}: an interaction with params needs forms S(q, params), got "
                                f"{type(f).__name__}")
            out.append((f if callable(f) else as_one_forms(f, N, label, rows="r"), label, p is not None))
        return out

    def constant_forms(self, layout: Layout) -> np.ndarray | None:
        """``S`` as a constant ``(r, N)`` array if no part depends on ``q`` or on params, else None."""
        parts = self._resolved(layout)
        if any(callable(f) for f, _, _ in parts):
            return None
        return np.concatenate([f for f, _, _ in parts], axis=0)

    def resolve(self, layout: Layout) -> Callable[[Point, Params], jax.Array]:
        """The function ``(q, params) -> S(q)``, shape ``(r, N)``, for one product point of this layout.

        ``params`` has the structure of :attr:`params` (None when that is None).
        """
        return functools.partial(_stacked_forms, tuple(self._resolved(layout)), layout.dim)


def _stacked_forms(parts: tuple[tuple[np.ndarray | _FormsOfQ, str, bool], ...], N: int, q: Point,
                   params: Params = None) -> jax.Array:
    """The rows of every part of an interaction at one point, stacked: ``S(q)``, ``(r, N)``."""
    blocks = []
    for i, (f, label, with_params) in enumerate(parts):
        if not callable(f):
            S = jnp.asarray(f)
        else:
            S = jnp.asarray(f(q, params[i]) if with_params else f(q), dtype=float)
        if S.ndim != 2 or S.shape[-1] != N:
            raise ValueError(
                f"{label}: the interaction one-forms of one point must have shape (r, N) "
                f"with N = {N}, got {S.shape}"
            )
        blocks.append(S)
    return jnp.concatenate(blocks, axis=0)


Coefficients = Mapping[tuple[str, int], _Coefficient]


def _sparse_rows(rows: Sequence[Sequence[tuple[str, int]]], values: Callable[[Params], jax.Array],
                 params: Params, label: str) -> Interaction:
    """Rows ``sum_j c_j v_{name_j}[comp_j] = 0`` whose coefficients ``values(params)`` (one per term,
    row by row; a component named twice in a row gets the sum) are computed from the interaction's
    params inside the compiled step."""
    keys = [(r, name, comp) for r, row in enumerate(rows) for (name, comp) in row]
    n_rows = len(rows)

    def build(layout: Layout) -> _FormsOfQ:
        # one 0/1 matrix per term: S = sum_j c_j E_j, as multiply-and-sum (no scatter in the step)
        E = np.zeros((len(keys), n_rows, layout.dim))
        for j, (r, name, comp) in enumerate(keys):
            E[j, r, layout.index(name, comp)] = 1.0  # one term per matrix: the sum adds repeated components

        def S(q: Point, p: Params) -> jax.Array:
            return jnp.sum(values(p)[:, None, None] * E, axis=0)

        return S

    return Interaction(build, needs_layout=True, label=label, params=params)


def _positive(x: float, what: str) -> np.float64:
    try:
        xf = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be a number, got {type(x).__name__}") from None
    if not (np.isfinite(xf) and xf > 0):
        raise ValueError(f"{what} must be positive, got {x!r}")
    return np.float64(xf)


def linear_interaction(coefficients: Coefficients | Sequence[Coefficients],
                       label: str = "linear interaction", params: Params = None) -> Interaction:
    """One-forms given by coefficients on named components.

    Parameters
    ----------
    coefficients : dict ``{(name, component): c}`` or a list of them (one per row)
        Each row is ``sum c v_name[component] = 0``; names may be dotted
        (``"left.body"``) to reach into nested interconnections. With
        ``params`` given, a coefficient may also be a function ``c(params)``
        (written with ``jax.numpy``).
    label : str
        A name used in error messages.
    params : pytree, optional
        The interaction's parameters, passed to the coefficient functions.
        Without it the coefficients must be numbers, and they are the
        parameters: ``params = {"coefficients": c}``, ``c`` of shape
        ``(n_terms,)`` in the order given (row by row).

    Returns
    -------
    Interaction
        Its parameters enter the compiled step as arguments: the same rows
        with other numbers run the program compiled for the first.

    Raises
    ------
    ValueError
        For a non-finite coefficient.
    TypeError
        For a coefficient that is neither a number nor (with ``params``) a function.

    Examples
    --------
    A lever: ``v_a[0] + 2 v_b[0] = 0``:

    >>> import manifold_dirac as md
    >>> lever = md.linear_interaction({("a", 0): 1.0, ("b", 0): 2.0}, label="lever")
    >>> lever.params
    ({'coefficients': array([1., 2.])},)
    >>> mass = md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v)
    >>> md.interconnect(mass, mass, names=("a", "b"), interaction=lever).n_constraints
    1

    The same lever with its arm as a named parameter:

    >>> lever = md.linear_interaction({("a", 0): 1.0, ("b", 0): lambda p: p["arm"]}, params={"arm": 2.0})
    """
    rows = [coefficients] if isinstance(coefficients, Mapping) else list(coefficients)
    terms = [c for row in rows for c in row.values()]
    for c in terms:
        if params is not None and callable(c):
            continue
        if isinstance(c, (bool, np.bool_)) or not isinstance(c, (int, float, np.integer, np.floating)):
            raise TypeError(f"{label}: a coefficient must be a number"
                            + (" or a function of params" if params is not None else "")
                            + f", got {type(c).__name__} {c!r:.40}")
        if not np.isfinite(c):
            raise ValueError(f"{label}: the coefficients must be finite, got {c!r}")
    where = [list(row) for row in rows]
    if params is None:
        return _sparse_rows(where, lambda p: p["coefficients"],
                            {"coefficients": np.array(terms, dtype=float)}, label)
    fns = [c if callable(c) else float(c) for c in terms]

    def values(p: Params) -> jax.Array:
        return jnp.stack([jnp.asarray(c(p) if callable(c) else c, dtype=float) for c in fns])

    return _sparse_rows(where, values, params, label)


def _one_and_minus(key: str) -> Callable[[Params], jax.Array]:
    """The coefficients ``(1, -params[key])`` of a row ``v_a - x v_b = 0``."""

    def values(p: Params) -> jax.Array:
        return jnp.stack([jnp.ones_like(p[key]), -p[key]])

    return values


def equal_velocities(a: tuple[str, int], b: tuple[str, int], ratio: float = 1.0) -> Interaction:
    """``v_a[i] = ratio * v_b[j]``: two velocity components tied together.

    Parameters
    ----------
    a, b : (name, component)
        Subsystem names (dotted for nested ones) and frame-coordinate indices.
    ratio : float
        The factor between the two components; the interaction's parameter
        ``{"ratio": ratio}``.

    Returns
    -------
    Interaction

    Examples
    --------
    >>> import manifold_dirac as md
    >>> gear = md.equal_velocities(("motor", 0), ("wheel", 0), ratio=3.0)   # v_motor = 3 v_wheel
    >>> gear.params
    ({'ratio': np.float64(3.0)},)
    """
    try:
        r = np.float64(float(ratio))
    except (TypeError, ValueError):
        raise TypeError(f"equal_velocities: ratio must be a number, got {type(ratio).__name__}") from None
    if not np.isfinite(r):
        raise ValueError(f"equal_velocities: ratio must be finite, got {ratio!r}")
    return _sparse_rows([[a, b]], _one_and_minus("ratio"), {"ratio": r},
                        f"equal_velocities{a}{b}")


def rolling_without_slipping(body: str, wheel: str, radius: float, body_component: int = 1,
                             wheel_component: int = 0) -> Interaction:
    """A wheel of radius ``r`` rolling on a body: ``v_body[body_component] = r * v_wheel[wheel_component]``.

    With a planar body on SE(2) (twist ``(omega, v_x, v_y)``) the default is
    ``v_x = r phi'``: the body frame's forward velocity equals the rim speed.

    Parameters
    ----------
    body, wheel : str
        The names of the two subsystems (dotted for nested ones).
    radius : float
        The wheel's radius ``r`` (> 0); the interaction's parameter
        ``{"radius": r}``.
    body_component, wheel_component : int
        The frame-coordinate indices of ``v_body`` and ``v_wheel`` that are tied.

    Returns
    -------
    Interaction

    Examples
    --------
    A cart on SE(2) driven by a wheel of radius 0.3 (``v_x = 0.3 phi'``):

    >>> import manifold_dirac as md
    >>> cart = md.LagrangeDiracSystem(md.SE2(), lambda q, v: 0.5 * v @ v)
    >>> wheel = md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v)
    >>> both = md.interconnect(cart, wheel, names=("cart", "wheel"),
    ...                        interaction=md.rolling_without_slipping("cart", "wheel", radius=0.3))
    >>> both.dim, both.n_constraints
    (4, 1)
    >>> both.params
    (None, None, {'interaction': ({'radius': np.float64(0.3)},)})
    """
    r = _positive(radius, "rolling_without_slipping: radius")
    return _sparse_rows([[(body, body_component), (wheel, wheel_component)]],
                        _one_and_minus("radius"), {"radius": r}, f"rolling_without_slipping({body}, {wheel})")


def _placed(n: int, dtype: DTypeLike, pieces: list[tuple[int, jax.Array]]) -> jax.Array:
    """A vector of ``n`` zeros with each 1-d piece at its static offset, shape ``(n,)``, built by concatenation.

    The rows of a constraint form whose few nonzero entries sit at a layout's offsets. Written with
    ``.at[...].set``, each entry is a scatter, and in the Newton matrix (forward mode batched over its
    columns) a batched scatter: the rolling ball's 36 of them made its loop compile in about a fifth more
    time than with these concatenations, for the same values bit for bit (``docs/performance.md``).
    The pieces must not overlap (distinct components of a layout).
    """
    out, at = [], 0
    for offset, piece in sorted(pieces, key=lambda x: x[0]):
        if offset < 0:
            raise ValueError(f"_placed: a piece at the negative offset {offset}")
        if offset < at:
            raise ValueError(f"_placed: the piece at {offset} overlaps the one ending at {at}")
        if offset > at:
            out.append(jnp.zeros(offset - at, dtype))
        out.append(jnp.asarray(piece, dtype))
        at = offset + piece.shape[0]
    if at > n:
        raise ValueError(f"_placed: the pieces end at {at}, past the length {n}")
    if at < n:
        out.append(jnp.zeros(n - at, dtype))
    return jnp.concatenate(out)


def rolling_ball_on_plane(ball: str, centre: str, radius: float) -> Interaction:
    """A ball (on SO(3), body angular velocity ``w``) rolling on a plane with
    its centre (on R^2): ``x' = r (R w) x e3``, i.e. ``x1' = r (R w)_2``,
    ``x2' = -r (R w)_1``.

    Configuration dependent: the rows are ``(-r R[1, :], 1, 0)`` and
    ``(r R[0, :], 0, 1)`` in the ``(w, x')`` columns. Both names may be dotted.

    Parameters
    ----------
    ball : str
        The name of the ball's subsystem (on SO(3), 3 velocity components).
    centre : str
        The name of the subsystem of the ball's centre (on R^2).
    radius : float
        The ball's radius ``r`` (> 0); the interaction's parameter ``{"radius": r}``.

    Returns
    -------
    Interaction

    Examples
    --------
    >>> import manifold_dirac as md
    >>> ball = md.LagrangeDiracSystem(md.SO3(), lambda q, v: 0.2 * v @ v)
    >>> centre = md.LagrangeDiracSystem(md.Euclidean(2), lambda q, v: 0.5 * v @ v)
    >>> rolling = md.interconnect(ball, centre, names=("ball", "centre"),
    ...                           interaction=md.rolling_ball_on_plane("ball", "centre", radius=1.0))
    >>> rolling.dim, rolling.n_constraints
    (5, 2)
    """
    r = _positive(radius, "rolling_ball_on_plane: radius")

    def build(layout: Layout) -> _FormsOfQ:
        ob, db = layout.locate(ball)
        oc, dc = layout.locate(centre)
        if db != 3 or dc != 2:
            raise ValueError(f"rolling_ball_on_plane: {ball!r} must be 3-dimensional (SO(3)) and {centre!r} "
                             "2-dimensional (R^2)")
        N = layout.dim

        def S(q: Point, p: Params) -> jax.Array:
            R = jnp.asarray(layout.point(q, ball))
            rad = p["radius"]
            one = jnp.ones(1, R.dtype)
            return jnp.stack([_placed(N, R.dtype, [(ob, -rad * R[1, :]), (oc, one)]),
                              _placed(N, R.dtype, [(ob, rad * R[0, :]), (oc + 1, one)])])

        return S

    return Interaction(build, needs_layout=True, label=f"rolling_ball_on_plane({ball}, {centre})",
                       params={"radius": r})


# ------------------------------------------------------- interconnected system
@dataclass(frozen=True)
class SubsystemTrajectory:
    """One subsystem's share of an interconnected trajectory.

    Attributes
    ----------
    name : str
    t : ndarray, shape=[K+1]
    q : point, shape=[K+1, *B, *point_shape]
    v, p : ndarray, shape=[K+1, *B, n_i]
    interaction_force : ndarray, shape=[K, *B, n_i]
        The force the subsystem receives through ``Sigma`` over each stored
        step: the reaction impulse of the interaction rows divided by ``h``,
        ``-S_i(q_k)^T mu_S / h`` (``+`` for the ``minus`` scheme, whose
        multiplier enters (53d) with the other sign). At step 0 of a run
        started from user data it is half the force, for every system: the
        given ``p(0) = dL/dv`` is the momentum at ``t0``, so ``mu_0`` is the
        impulse over ``[t0, t0 + h/2]`` only (later ``mu_k`` span a whole step,
        ``[t_k - h/2, t_k + h/2]``); the motion is unaffected.
    constraint_force : ndarray, shape=[K, *B, n_i]
        The reaction of the subsystem's own constraints, likewise from ``A_i``.
    """

    name: str
    t: np.ndarray
    q: PointBatch
    v: np.ndarray
    p: np.ndarray
    interaction_force: np.ndarray
    constraint_force: np.ndarray


class InterconnectedSystem(LagrangeDiracSystem):
    """The interconnection of named subsystems through an interaction (31)--(34).

    An ordinary :class:`LagrangeDiracSystem` on ``ProductManifold(Q_1, ...)``,
    built through its public constructor from, for one point
    ``q = (q_1, ..., q_k)``, ``v = (v_1, ..., v_k)``:

    * ``L(q, v) = sum_i L_i(q_i, v_i)`` (33);
    * the constraint one-forms ``[blockdiag(A_i(q_i)); S(q)]`` (31), a
      constant matrix when every ``A_i`` and ``S`` is constant;
    * the force ``(F_1(t, q_1, v_1), ..., F_k(t, q_k, v_k)) + F(t, q, v)``:
      the subsystems' forces pulled back factor by factor (34), plus an
      optional force ``F`` on the product;
    * analytic partials ``(dL_i/dq_i, dL_i/dv_i)`` concatenated when every
      subsystem has analytic partials (otherwise automatic ones of the sum,
      which are the same numbers);
    * ``params``: ``(p_1, ..., p_k)``, the subsystems' parameters (each
      subsystem receives its own; None for one without), followed by the
      interconnection's own when it has some -- ``(p_1, ..., p_k, own)``
      with ``own = {"interaction": interaction.params, "holonomic":
      holonomic.params}`` (only the keys that have parameters); None when
      nothing has parameters. The interaction's and the holonomic
      constraints' numbers (a radius, an axle's length) are thus arguments
      of the compiled programs like the subsystems' (another value compiles
      nothing, and ``rollout`` differentiates with respect to them).

    Built by :func:`interconnect` (which checks the arguments).

    Holonomic constraints: the subsystems' ``g_i(q_i)`` and an interaction's
    ``g_int(q)`` on the product (two bodies pinned at a point,
    :func:`pin_joint`) are stacked into the product's ``g(q) = (g_1, ...,
    g_k, g_int)``; the one-forms above are then ``[blockdiag(A_i); S]``
    only, and :meth:`LagrangeDiracSystem.constraint_matrix` appends ``dg``
    below them (:meth:`constraint_rows` says where).

    Parameters
    ----------
    subsystems : sequence of LagrangeDiracSystem
        The systems joined, ``k >= 1``.
    names : sequence of str
        One name per subsystem, used by the interactions (``("a", 0)``) and
        in messages.
    interaction : Interaction, optional
        The interaction one-forms ``S(q)``, ``(r, N)`` with ``N`` the sum of
        the subsystems' dimensions.
    name : str, optional
        For ``repr`` and messages.
    force : callable ``F(t, q, v) -> (N,)``, optional
        A force on the product added to the subsystems' own.
    holonomic : callable ``g(q) -> (c,)``, optional
        Holonomic constraints on the product (:func:`pin_joint`), or a
        factory of them taking the layout (marked by an attribute
        ``needs_layout = True``). A callable with a ``params`` attribute
        (not None) is called as ``g(q, params)`` with those parameters.

    Attributes
    ----------
    subsystems : tuple of LagrangeDiracSystem
        The systems joined, in order.
    names : tuple of str
        Their names.
    layout : Layout
        Where each subsystem's block lies in the product's coordinates.
    interaction : Interaction or None
        The interaction given.
    product_force : callable ``F(t, q, v) -> (N,)`` or None
        The force on the product given to :func:`interconnect`.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> spring = md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v - 0.5 * q @ q)
    >>> both = md.interconnect(spring, spring, names=("a", "b"),
    ...                        interaction=md.equal_velocities(("a", 0), ("b", 0)))
    >>> isinstance(both, md.InterconnectedSystem), both.names, both.dim
    (True, ('a', 'b'), 2)
    """

    def __init__(self, subsystems: Sequence[LagrangeDiracSystem], names: Sequence[str],
                 interaction: Interaction | None = None, name: str | None = None,
                 force: Callable[[Scalar, Point, jax.Array], ArrayLike] | None = None,
                 holonomic: _HolonomicOfQ | Callable[[Layout], _HolonomicOfQ] | None = None):
        self.subsystems = tuple(subsystems)
        self.names = tuple(str(n) for n in names)
        Q = ProductManifold(*(s.Q for s in self.subsystems))
        self.layout = Layout(self.names, Q.offsets, Q.dims, self.subsystems)
        self.interaction = interaction
        self.product_force = force
        self._S = interaction.resolve(self.layout) if interaction is not None else None
        g_params = getattr(holonomic, "params", None) if holonomic is not None else None
        if holonomic is not None and getattr(holonomic, "needs_layout", False):
            holonomic = holonomic(self.layout)
        self._g_int = holonomic
        has_g = holonomic is not None or any(s.n_holonomic for s in self.subsystems)
        k, N = len(self.subsystems), Q.dim
        own_params: dict[str, Params] = {}
        if interaction is not None and interaction.params is not None:
            own_params["interaction"] = interaction.params
        if g_params is not None:
            own_params["holonomic"] = g_params
        self._own_keys = tuple(own_params)
        params: Params = None
        if own_params:
            params = (*(s.params for s in self.subsystems), own_params)
        elif any(s.params is not None for s in self.subsystems):
            params = tuple(s.params for s in self.subsystems)
        self._no_params = (None,) * k

        # constant one-forms stay a constant matrix (the engine then skips A(q))
        constraint: Constraint | np.ndarray | None = self._constraint
        if all(s.has_constant_one_forms for s in self.subsystems):
            S_const = interaction.constant_forms(self.layout) if interaction is not None else np.zeros((0, N))
            if S_const is not None:
                own = [np.asarray(s.one_form_matrix(s.Q.default_point()), dtype=float)
                       for s in self.subsystems]
                rows = [self._widen(A, i, np) for i, A in enumerate(own)] + [S_const]
                constraint = np.concatenate(rows, axis=0)
                if constraint.shape[0] == 0:
                    constraint = None
        has_force = force is not None or any(s.has_force for s in self.subsystems)
        analytic = all(not s.uses_automatic_partials for s in self.subsystems)
        super().__init__(
            Q,
            self._lagrangian,
            constraint=constraint,
            force=self._force if has_force else None,
            partials=self._partials if analytic else None,
            name=name or "+".join(self.names),
            params=params,
            holonomic=self._holonomic if has_g else None,
        )

    # ---------------------------------------------------- the composed pieces
    def _sub_params(self, p: tuple) -> tuple:
        """The subsystems' parameters ``(p_1, ..., p_k)`` from the trailing argument of a composed function."""
        return p[0][:len(self.subsystems)] if p else self._no_params

    def _own(self, p: tuple, key: str) -> Params:
        """The interconnection's own parameters of ``key`` (``"interaction"``, ``"holonomic"``), or None."""
        if not p or key not in self._own_keys:
            return None
        return p[0][len(self.subsystems)][key]

    def _widen(self, A: jax.Array | np.ndarray, i: int, xp: ModuleType = jnp) -> jax.Array | np.ndarray:
        """Rows ``A_i`` ``(m_i, d_i)`` widened to the product's ``(m_i, N)``, in block ``i``
        (``xp``: ``numpy`` for constant forms, ``jax.numpy`` inside traced code)."""
        off, d, N = self.layout.offsets[i], self.layout.dims[i], self.layout.dim
        m = A.shape[0]
        return xp.concatenate([xp.zeros((m, off)), A, xp.zeros((m, N - off - d))], axis=1)

    def _lagrangian(self, q: Point, v: jax.Array, *p: Params) -> jax.Array:
        """``L(q, v) = sum_i L_i(q_i, v_i)`` (33), one point."""
        pars = self._sub_params(p)
        terms = [s.lagrangian(qi, vi, pi) for s, qi, vi, pi in zip(self.subsystems, q, self.Q.split(v), pars)]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    def _partials(self, q: Point, v: jax.Array, *p: Params) -> tuple[jax.Array, jax.Array]:
        """The subsystems' ``(dL_i/dq_i, dL_i/dv_i)`` concatenated, one point."""
        pars = self._sub_params(p)
        parts = [s.partials(qi, vi, pi) for s, qi, vi, pi in zip(self.subsystems, q, self.Q.split(v), pars)]
        return self.Q.join([a for a, _ in parts]), self.Q.join([b for _, b in parts])

    def _constraint(self, q: Point, *p: Params) -> jax.Array:
        """``[blockdiag(A_i(q_i)); S(q)]`` (31), shape ``(m, N)``, one point."""
        pars = self._sub_params(p)
        rows = [
            self._widen(s.one_form_matrix(qi, pi), i)
            for i, (s, qi, pi) in enumerate(zip(self.subsystems, q, pars))
            if s.n_one_forms
        ]
        if self._S is not None:
            rows.append(self._S(q, self._own(p, "interaction")))
        if not rows:
            return jnp.zeros((0, self.layout.dim))
        return jnp.concatenate(rows, axis=0)

    def _holonomic(self, q: Point, *p: Params) -> jax.Array:
        """``(g_1(q_1), ..., g_k(q_k), g_int(q))``, shape ``(r,)``, one point."""
        pars = self._sub_params(p)
        parts = [s.holonomic(qi, pi) for s, qi, pi in zip(self.subsystems, q, pars) if s.n_holonomic]
        if self._g_int is not None:
            args = (self._own(p, "holonomic"),) if "holonomic" in self._own_keys else ()
            parts.append(jnp.reshape(jnp.asarray(self._g_int(q, *args)), (-1,)))
        return jnp.concatenate(parts)

    def _force(self, t: Scalar, q: Point, v: jax.Array, *p: Params) -> jax.Array:
        """The subsystems' forces, factor by factor (34), plus the product-level force."""
        pars = self._sub_params(p)
        parts = []
        for s, qi, vi, pi in zip(self.subsystems, q, self.Q.split(v), pars):
            F = s.force(t, qi, vi, pi)
            parts.append(jnp.zeros_like(vi) if F is None else F)
        total = self.Q.join(parts)
        if self.product_force is not None:
            total = total + jnp.asarray(self.product_force(t, q, v), dtype=total.dtype)
        return total

    # ------------------------------------------------------------- structure
    def constraint_rows(self, q: Point | None = None) -> dict[str, slice]:
        """Which rows of ``A(q)`` belong to which subsystem (``"interaction"`` last).

        ``q`` is accepted for compatibility and ignored: row counts are static.
        With holonomic constraints, the rows of their differentials follow
        the one-forms: ``"<name>.holonomic"`` for a subsystem's and
        ``"interaction.holonomic"`` for the interaction's (present only when
        there are some).
        """
        rows, r = {}, 0
        for name, s in zip(self.names, self.subsystems):
            rows[name] = slice(r, r + s.n_one_forms)
            r += s.n_one_forms
        rows["interaction"] = slice(r, self.n_one_forms)
        r = self.n_one_forms
        for name, s in zip(self.names, self.subsystems):
            if s.n_holonomic:
                rows[f"{name}.holonomic"] = slice(r, r + s.n_holonomic)
                r += s.n_holonomic
        if r < self.n_constraints:
            rows["interaction.holonomic"] = slice(r, self.n_constraints)
        return rows

    def interaction_matrix(self, q: Point, params: Params = None) -> jax.Array:
        """``S(q)`` for one point, shape ``(r, N)`` (``r = 0`` without an interaction).

        ``params``: the system's parameters (default ``system.params``).
        For a batch use ``system.evaluate("interaction_matrix", q)``.
        """
        if self._S is None:
            return jnp.zeros((0, self.Q.dim))
        params = self.params if params is None else params
        return self._S(q, self._own((params,) if params is not None else (), "interaction"))

    @property
    def subsystem_slices(self) -> dict[str, list[int]]:
        """``{name: [start, stop]}`` of each subsystem's frame coordinates."""
        return {n: [o, o + d] for n, o, d in zip(self.names, self.layout.offsets, self.layout.dims)}

    def subsystem(self, name: str) -> LagrangeDiracSystem:
        """The subsystem called ``name``; dotted names reach into nested ones (``"left.body"``)."""
        return self.layout.system(name)

    # ------------------------------------------------------------ read back
    def parts(self, trajectory: Trajectory, params: Params = None) -> dict[str, SubsystemTrajectory]:
        """Split a trajectory of this system into its subsystems' trajectories.

        Parameters
        ----------
        trajectory : Trajectory
            A trajectory of this system (any scheme, stride or batch).
        params : pytree, optional
            The parameters the run used, when it was given other values than
            ``system.params`` (``integrate(..., params=)``): the forces are
            computed from ``A(q_k)`` with them (a trajectory does not record
            them). Default ``system.params``.

        Returns
        -------
        dict of str to SubsystemTrajectory
            Keyed by the top-level names, each with its share of the
            multipliers as forces: ``-G_i mu / h`` with the scheme's reaction
            ``G = reaction_sign A(q_k)^T`` -- ``-S_i(q_k)^T mu_S / h`` for the
            plus and symmetric schemes, ``+`` for minus (53d) (see
            :class:`SubsystemTrajectory`).

        Notes
        -----
        Over step ``k`` of the plus scheme,
        ``D2 L_d(q_{k-1}, q_k) + D1 L_d(q_k, q_{k+1}) + f^+ + f^- = A(q_k)^T mu_k``,
        while a force ``F`` enters as ``f^+ + f^- ~ h F``: so the constraints act
        as the force ``-A(q_k)^T mu_k / h``. The stored step ``k`` starts at the
        stored point ``k`` (with a stride, too).
        """
        from ._run.trajectory import Trajectory

        if not isinstance(trajectory, Trajectory):
            raise TypeError(f"parts: trajectory must be a Trajectory of this system, got {type(trajectory).__name__}")
        other = trajectory.meta.get("system")
        n_mu = np.shape(trajectory.mu)[-1] if np.ndim(trajectory.mu) else -1
        if (other not in (None, "unnamed", self.name) or np.shape(trajectory.p)[-1] != self.dim
                or n_mu != self.n_constraints):
            raise ValueError(
                f"parts: the trajectory is not one of {self.name or 'this system'} (dimension {self.dim}, "
                f"{self.n_constraints} multipliers): it is of {other!r} (dimension {np.shape(trajectory.p)[-1]}, "
                f"{n_mu} multipliers)")
        h = float(trajectory.meta["h"])
        mu = np.asarray(trajectory.mu)
        K = mu.shape[0]
        q_steps = jax.tree.map(lambda a: np.asarray(a)[:K], trajectory.q)
        B = tuple(mu.shape[1:-1])
        m, N = self.n_constraints, self.Q.dim
        if K and m:
            pars = self.params if params is None else params
            A = np.asarray(over_batch(lambda qq: self.constraint_matrix(qq, pars),
                                      len(self.Q.batch_shape(q_steps)))(q_steps))
        else:
            A = np.zeros((K, *B, m, N))
        try:
            reaction_sign = get_scheme(trajectory.meta.get("scheme")).reaction_sign
        except ValueError:
            reaction_sign = -1.0 if trajectory.meta.get("scheme") == "minus" else 1.0
        force_mu = -reaction_sign * mu / h
        rows = self.constraint_rows()
        out = {}
        for i, (name, off, d) in enumerate(zip(self.names, self.layout.offsets, self.layout.dims)):
            sl = slice(off, off + d)
            f_int = f_own = 0.0
            for key in ("interaction", "interaction.holonomic"):
                if key in rows:
                    r_ = rows[key]
                    f_int = f_int + np.einsum("...ri,...r->...i", A[..., r_, sl], force_mu[..., r_])
            for key in (name, f"{name}.holonomic"):
                if key in rows:
                    r_ = rows[key]
                    f_own = f_own + np.einsum("...ri,...r->...i", A[..., r_, sl], force_mu[..., r_])
            out[name] = SubsystemTrajectory(
                name=name, t=np.asarray(trajectory.t), q=trajectory.q[i], v=np.asarray(trajectory.v)[..., sl],
                p=np.asarray(trajectory.p)[..., sl], interaction_force=f_int, constraint_force=f_own,
            )
        return out

    def __repr__(self) -> str:
        return f"InterconnectedSystem({self.name}: {', '.join(self.names)})"


def interconnect(*systems: LagrangeDiracSystem, interaction: Interaction | None = None,
                 names: Sequence[str] | None = None, name: str | None = None,
                 force: Callable[[Scalar, Point, jax.Array], ArrayLike] | None = None,
                 holonomic: _HolonomicOfQ | Callable[[Layout], _HolonomicOfQ] | None = None
                 ) -> InterconnectedSystem:
    """Interconnect subsystems through an interaction distribution (29)--(34).

    Parameters
    ----------
    *systems : LagrangeDiracSystem
        One or more subsystems (interconnected systems included: the
        operation is closed).
    interaction : Interaction, optional
        The one-forms of ``Sigma_Q``; ``None`` gives the direct sum (27).
    names : sequence of str, optional
        Names of the subsystems (default: their ``name``); must be unique and
        free of ``'.'`` (which reaches into nested systems).
    name : str, optional
        Name of the result.
    force : callable ``F(t, q, v) -> (N,)``, optional
        An external force on the product for one point (``q`` the tuple of
        the subsystems' points, ``v`` ``(N,)``), written with ``jax.numpy``;
        added to the subsystems' own.
    holonomic : callable ``g(q) -> (r,)``, or :func:`pin_joint`, optional
        Holonomic interaction constraints ``g(q) = 0`` on the product point
        (two bodies joined at a point), held on positions by the schemes like
        a system's own (``docs/schemes.md``, "Holonomic constraints");
        the subsystems' own holonomic constraints are kept as well. A
        callable with a ``params`` attribute (as :func:`pin_joint` returns)
        is called as ``g(q, params)``.

    Returns
    -------
    InterconnectedSystem
        Its ``params`` are ``(p_1, ..., p_k)``, the subsystems' (None for
        one without), and, when the interaction or the holonomic constraints
        carry parameters (every helper's do: a radius, a ratio, the anchors
        of a joint), ``(p_1, ..., p_k, {"interaction": ..., "holonomic":
        ...})``; None when nothing has parameters. Pass values of the same
        structure to ``integrate(..., params=)`` or ``rollout(..., params=)``.

    Raises
    ------
    ValueError
        For no subsystems, a name collision, or an interaction whose
        one-forms have the wrong shape (checked here, by tracing ``S`` once).

    Notes
    -----
    ``Delta_Q = (Delta_1 (+) ... (+) Delta_k) ∩ Sigma_Q`` (31) is regular
    when ``[blockdiag(A_i); S]`` has full row rank; the integrator checks
    this at the initial state and refuses a rank drop.

    Examples
    --------
    Two unit masses on springs whose velocities are tied (a rigid link):

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> spring = lambda k: md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v - 0.5 * k * q @ q)
    >>> both = md.interconnect(spring(1.0), spring(4.0), names=("a", "b"),
    ...                        interaction=md.equal_velocities(("a", 0), ("b", 0)))
    >>> both.dim, both.n_constraints
    (2, 1)
    >>> q0 = (np.array([0.1]), np.array([0.1]))          # a point of the product: one per subsystem
    >>> tr = md.integrate(both, q0, v0=np.zeros(2), h=0.05, n_steps=20)
    >>> qa, qb = tr.q
    >>> bool(np.allclose(qa, qb))                        # they move together
    True
    """
    if not systems:
        raise ValueError("interconnect: give at least one subsystem")
    for s in systems:
        if not isinstance(s, LagrangeDiracSystem):
            raise ValueError(  # noqa: TRY004  (ValueError, as with the numpy engine)
                f"interconnect: subsystems must be LagrangeDiracSystem instances, got {type(s).__name__}"
            )
    if names is None:
        names = [s.name or f"system{i}" for i, s in enumerate(systems)]
    names = [str(n) for n in names]
    if len(names) != len(systems):
        raise ValueError(f"interconnect: {len(names)} names for {len(systems)} subsystems")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(
            f"interconnect: subsystem name collision: {', '.join(repr(d) for d in dup)} appear more than "
            "once; pass names=(...) to tell them apart"
        )
    if any("." in n for n in names):
        raise ValueError("interconnect: subsystem names may not contain '.' (it reaches into nested systems)")
    if interaction is not None and not isinstance(interaction, Interaction):
        raise ValueError(
            "interconnect: interaction must be an Interaction (see equal_velocities, linear_interaction)"
        )
    if force is not None and not callable(force):
        raise ValueError(f"interconnect: force must be a callable F(t, q, v), got {type(force).__name__}")
    if holonomic is not None and not callable(holonomic):
        raise ValueError(f"interconnect: holonomic must be a callable g(q) on the product point (or pin_joint(...)), "
                         f"got {type(holonomic).__name__}")
    # the constructor traces L, the stacked one-forms (S included) and the
    # force once at an abstract point, so a wrong shape fails here
    return InterconnectedSystem(systems, names, interaction, name, force, holonomic)


def pin_joint(a: str, b: str | None, anchor_a: ArrayLike, anchor_b: ArrayLike
              ) -> Callable[[Layout], _HolonomicOfQ]:
    """Two rigid bodies joined at a point (a spherical joint), as holonomic constraints for :func:`interconnect`.

    Each body is a subsystem on ``SO(3) x R^3`` (point ``(R, x)``: attitude
    and centre of mass); ``anchor_a``, ``anchor_b`` are the joint's position
    in each body's frame. Three constraints::

        g(q) = x_a + R_a anchor_a - x_b - R_b anchor_b = 0

    With ``b=None`` the body ``a`` is pinned to the fixed point ``anchor_b``
    (a spherical pendulum of a rigid body). Names may be dotted.

    Parameters
    ----------
    a : str
        The name of the first body's subsystem.
    b : str or None
        The name of the second body's subsystem, or None for a fixed pivot.
    anchor_a : array-like of float, shape=[3]
        The joint in body ``a``'s frame.
    anchor_b : array-like of float, shape=[3]
        The joint in body ``b``'s frame (with ``b=None``: the fixed pivot in space).

    Returns
    -------
    callable
        A factory ``layout -> g`` for :func:`interconnect`'s ``holonomic=``;
        ``g(q, params)`` with the anchors as parameters, ``params =
        {"anchor_a": (3,), "anchor_b": (3,)}`` (the factory's attribute
        ``params``), which enter the interconnected system's ``params``.

    Examples
    --------
    A rigid body hanging from a fixed pivot one unit above its centre:

    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> body = md.LagrangeDiracSystem(md.ProductManifold(md.SO3(), md.Euclidean(3)),
    ...                               lambda q, v: 0.5 * v @ v)
    >>> pendulum = md.interconnect(body, names=("body",),
    ...                            holonomic=md.pin_joint("body", None, [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]))
    >>> pendulum.n_holonomic
    3
    >>> pendulum.params[-1]["holonomic"]["anchor_a"]
    array([0., 0., 1.])
    """
    pa = np.asarray(anchor_a, dtype=float)
    pb = np.asarray(anchor_b, dtype=float)
    if pa.shape != (3,) or pb.shape != (3,):
        raise ValueError(f"pin_joint: anchors are points of R^3, got shapes {pa.shape} and {pb.shape}")
    if not (np.all(np.isfinite(pa)) and np.all(np.isfinite(pb))):
        raise ValueError("pin_joint: the anchors must be finite")

    def build(layout: Layout) -> _HolonomicOfQ:
        for nm in (a, b):
            if nm is not None and layout.locate(nm)[1] != 6:
                raise ValueError(f"pin_joint: {nm!r} must be a rigid body on SO(3) x R^3 (6 frame components)")

        def g(q: Point, p: Params) -> jax.Array:
            Ra, xa = layout.point(q, a)
            joint_a = xa + Ra @ p["anchor_a"]
            if b is None:
                return joint_a - p["anchor_b"]
            Rb, xb = layout.point(q, b)
            return joint_a - (xb + Rb @ p["anchor_b"])

        return g

    build.needs_layout = True  # type: ignore[attr-defined]
    build.params = {"anchor_a": pa, "anchor_b": pb}  # type: ignore[attr-defined]
    return build


# ---------------------------------------------- discretize, then interconnect
class SubsystemDiscreteLagrangian(QuadratureRule):
    """``L_d = sum_i L_d^i``, each subsystem discretized with its own rule and retraction.

    The "discretize the subsystems, then interconnect" route of Parks & Leok:
    ``D1 L_d``, ``D2 L_d``, the discrete forces and the node geometry are
    assembled block by block from each subsystem's own
    :meth:`QuadratureRule.evaluate` on ``Q_i`` (its ``L_i``, its retraction,
    its force), never from ``L = sum L_i`` on the product. Use it as the
    ``discrete_lagrangian`` of an integration of ``system`` itself.

    Parameters
    ----------
    system : InterconnectedSystem
    rules : str or QuadratureRule, or a sequence of them (one per subsystem)

    Attributes
    ----------
    system : InterconnectedSystem
    rules : tuple of QuadratureRule
    same_nodes : bool
        Whether every subsystem's rule has the same nodes (needed for a
        force on the product, which is evaluated at the product's nodes).

    Raises
    ------
    ValueError
        For a system that is not an :class:`InterconnectedSystem`, a wrong
        number of rules, or different rules with a product-level force.

    Notes
    -----
    With ``xi = (xi_1, ..., xi_k)`` and each ``L_d^i`` evaluated at
    ``(q0_i, R_{q0_i}(xi_i))``::

        D1 L_d = (D1 L_d^1, ..., D1 L_d^k),   D2 L_d = (D2 L_d^1, ..., D2 L_d^k),
        J0, J1, P0, P1, J_xi = blockdiag of the subsystems',
        f^- = (f^-_1, ..., f^-_k) + h sum_j w_j P0_j^T F(t0 + s_j h, c_j, xi/h)

    (``F`` the product-level force, ``c_j`` the product node). With the
    product retraction these are the numbers the same rule gives on the
    product for ``L = sum L_i``, so the equations of every scheme -- the
    discrete (+)/(-) structures (46)--(47) of the subsystems interconnected
    through ``Sigma^{d+-}``, (50)--(53) -- are those of the interconnected
    system discretized. ``nodes``
    holds the common nodes, or ``((0.5, 1.0),)`` as a placeholder when the
    rules differ; ``order`` is the smallest of the subsystems'.
    """

    def __init__(self, system: InterconnectedSystem,
                 rules: str | DiscreteLagrangian | Sequence[str | DiscreteLagrangian] = "midpoint"):
        if not isinstance(system, InterconnectedSystem):
            raise ValueError("SubsystemDiscreteLagrangian: needs an InterconnectedSystem")  # noqa: TRY004
        if isinstance(rules, (str, DiscreteLagrangian)):
            rules = [rules] * len(system.subsystems)
        rules = tuple(get_rule(r) for r in rules)
        staged = [r.name for r in rules if r.n_stages(1)]
        if staged:
            raise ValueError(
                f"SubsystemDiscreteLagrangian: {staged[0]!r} has internal stages (a Galerkin rule), which are "
                "solved with the step of the whole system, not per subsystem; integrate the interconnected "
                f"system itself with discrete_lagrangian={staged[0]!r}"
            )
        if len(rules) != len(system.subsystems):
            raise ValueError(
                f"SubsystemDiscreteLagrangian: {len(rules)} rules for {len(system.subsystems)} subsystems"
            )
        same = len({r.nodes for r in rules}) == 1
        if system.product_force is not None and not same:
            raise ValueError(
                "SubsystemDiscreteLagrangian: a force on the product needs the same rule nodes for every "
                "subsystem (it is evaluated at the product's nodes)"
            )
        object.__setattr__(self, "system", system)
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "same_nodes", same)
        super().__init__(
            name="subsystems(" + ",".join(r.name for r in rules) + ")",
            nodes=rules[0].nodes if same else ((0.5, 1.0),),
            order=min(r.order for r in rules),
            symmetric=all(r.symmetric for r in rules),
            degenerate_safe=all(r.degenerate_safe for r in rules),
        )

    # identity: the compiled-step cache is keyed by the rule, so two of these
    # are equal only for the same system object and the same rules
    def __eq__(self, other: object) -> bool:
        return (type(other) is type(self) and other.system is self.system  # type: ignore[attr-defined]
                and other.rules == self.rules)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), id(self.system), self.rules))

    def __repr__(self) -> str:
        return f"SubsystemDiscreteLagrangian({self.system.name!r}, rules={[r.name for r in self.rules]})"

    def order_on(self, Q: ProductManifold) -> int:
        """The smallest order of the subsystems' rules on their own retractions."""
        return min(r.order_on(s.Q) for r, s in zip(self.rules, self.system.subsystems))

    def _check(self, system: LagrangeDiracSystem, params: Params) -> Params:
        if system is not self.system:
            raise ValueError(
                f"SubsystemDiscreteLagrangian: built for {self.system!r}, used with {system!r}; build one "
                "for the system you integrate"
            )
        if params is None:
            params = system.params
        return params if params is not None else (None,) * len(self.system.subsystems)

    def value(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, h: Scalar,
              params: Params = None) -> jax.Array:
        """``sum_i L_d^i(q0_i, R_{q0_i}(xi_i))`` at one point (scalar)."""
        pars = self._check(system, params)
        sysm = self.system
        terms = [r.value(s, a, x, h, p)
                 for s, r, a, x, p in zip(sysm.subsystems, self.rules, q0, sysm.Q.split(xi), pars)]
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    def evaluate(self, system: LagrangeDiracSystem, q0: Point, xi: Vector, ctx: StepContext,
                 stages: jax.Array | None = None) -> RuleValue:
        """``D1 L_d``, ``D2 L_d``, discrete forces and nodes, block by block (see Notes; no stages)."""
        h, t0, params, u, extra_nodes = ctx
        pars = self._check(system, params)
        sysm = self.system
        Q = sysm.Q
        k = len(sysm.subsystems)
        xis = Q.split(xi)
        us = Q.split(u) if u is not None else (None,) * k
        wanted = tuple(dict.fromkeys(float(s) for s in extra_nodes))
        vals = [
            r.evaluate(s, a, x, StepContext(h, t0, p, ui, wanted))
            for s, r, a, x, p, ui in zip(sysm.subsystems, self.rules, q0, xis, pars, us)
        ]
        keys = tuple(dict.fromkeys(wanted + (tuple(s for s, _ in self.nodes) if self.same_nodes else ())))
        nodes = {}
        for s_ in keys:
            per = [v.nodes[s_] for v in vals]
            nodes[s_] = NodeGeometry(tuple(g.point for g in per), block_diag([g.P0 for g in per]),
                                     block_diag([g.P1 for g in per]), block_diag([g.Jxi for g in per]))
        fm = Q.join([v.f_minus for v in vals])
        fp = Q.join([v.f_plus for v in vals])
        scale = jnp.max(jnp.stack([v.scale for v in vals]))
        finite = jnp.all(jnp.stack([v.finite for v in vals]))
        if sysm.product_force is not None:
            vel = xi / h
            for s_, w in self.nodes:
                g = nodes[s_]
                F = jnp.asarray(sysm.product_force(t0 + s_ * h, g.point, vel), dtype=fm.dtype)
                fm = fm + (w * h) * (F @ g.P0)
                fp = fp + (w * h) * (F @ g.P1)
                scale = jnp.maximum(scale, h * jnp.max(jnp.abs(F)))
        return RuleValue(
            q1=tuple(v.q1 for v in vals),
            J0=block_diag([v.J0 for v in vals]),
            J1=block_diag([v.J1 for v in vals]),
            D1=Q.join([v.D1 for v in vals]),
            D2=Q.join([v.D2 for v in vals]),
            f_minus=fm,
            f_plus=fp,
            scale=scale,
            finite=finite,
            nodes=nodes,
        )
