"""Interconnection of Lagrange--Dirac systems on product manifolds (eqs. 25--34).

Subsystems ``(L_i, Delta_i)`` on ``Q_i`` are joined through an interaction
distribution ``Sigma_Q = ker S(q)`` on ``Q = Q_1 x ... x Q_k``. By (32)
``(D_{Delta_1} (+) ... (+) D_{Delta_k}) [x] D_int = D_{Delta_Q}`` with
``Delta_Q = (Delta_1 (+) ... (+) Delta_k) ∩ Sigma_Q`` (31), so the
interconnected system is the ordinary Lagrange--Dirac system with
``L = sum_i L_i`` and the constraint one-forms ``[blockdiag(A_i); S]``, and
external forces pulled back factor by factor (34). :func:`interconnect`
returns exactly that, an :class:`InterconnectedSystem` -- a
:class:`~manifold_dirac.mechanics.system.LagrangeDiracSystem` that can be
integrated by every scheme and interconnected again.

Discretely, with the product retraction and a quadrature linear in ``L``,
discretizing the subsystems and then interconnecting the discrete Dirac
structures gives the same equations as discretizing the interconnected
system; :class:`SubsystemDiscreteLagrangian` is the first route (each
subsystem's ``L_d`` through its own retraction), used by the tests to show
the equality.

The interaction-force view (Jacobs & Yoshimura 2014): the multipliers of the
interaction rows are the impulses of the constraint forces
``S(q_k)^T mu_S``; :meth:`InterconnectedSystem.parts` reports each
subsystem's share of them divided by ``h``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .manifolds.product import ProductManifold
from .manifolds.product import _block_diag
from .mechanics.discrete_lagrangians import (
    DiscreteLagrangian,
    DiscreteLagrangianValue,
    NodeGeometry,
    _pullback,
    get_discrete_lagrangian,
)
from .mechanics.system import LagrangeDiracSystem, as_one_forms

__all__ = [
    "Interaction",
    "InterconnectedSystem",
    "SubsystemDiscreteLagrangian",
    "SubsystemTrajectory",
    "equal_velocities",
    "interconnect",
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
    systems : tuple of LagrangeDiracSystem
    """

    names: tuple[str, ...]
    offsets: tuple[int, ...]
    dims: tuple[int, ...]
    systems: tuple[LagrangeDiracSystem, ...]

    @property
    def dim(self) -> int:
        return int(sum(self.dims))

    def locate(self, name: str) -> tuple[int, int]:
        """``(offset, dim)`` of a subsystem, dotted names reaching into nested ones
        (``"cart.left"``)."""
        head, _, rest = name.partition(".")
        if head not in self.names:
            raise ValueError(
                f"interaction: no subsystem named {head!r}; the subsystems are "
                + ", ".join(repr(n) for n in self.names)
            )
        i = self.names.index(head)
        off, dim = self.offsets[i], self.dims[i]
        if rest:
            inner = self.systems[i]
            if not isinstance(inner, InterconnectedSystem):
                raise ValueError(f"interaction: {head!r} is not an interconnected system, so {name!r} does not exist")
            o2, d2 = inner.layout.locate(rest)
            return off + o2, d2
        return off, dim

    def index(self, name: str, component: int) -> int:
        """Frame-coordinate index of ``component`` of subsystem ``name``."""
        off, dim = self.locate(name)
        if not isinstance(component, (int, np.integer)) or not 0 <= component < dim:
            raise ValueError(f"interaction: {name!r} has {dim} frame components; component {component!r} does not exist")
        return off + int(component)


# ---------------------------------------------------------------- interaction
class Interaction:
    """One-forms ``S(q)`` on the product whose kernel is ``Sigma_Q``.

    Build one with the helpers (:func:`equal_velocities`,
    :func:`rolling_without_slipping`, :func:`rolling_ball_on_plane`,
    :func:`linear_interaction`) or directly, and add interactions with ``+``.

    Parameters
    ----------
    forms : array ``(r, N)`` or callable ``S(q) -> (*batch, r, N)`` or callable ``layout -> (that)``
        ``q`` is the product point (a tuple of the subsystems' points);
        rows are one-forms in the product's frame coordinates.
    needs_layout : bool
        Whether ``forms`` is a factory taking the :class:`Layout` (what the
        helpers use to resolve subsystem names).
    label : str
        A name used in error messages.
    """

    def __init__(self, forms: Any, *, needs_layout: bool = False, label: str = "interaction"):
        self._parts: list[tuple[Any, bool, str]] = [(forms, needs_layout, label)]

    def __add__(self, other: Interaction) -> Interaction:
        if not isinstance(other, Interaction):
            return NotImplemented
        out = Interaction(None)
        out._parts = self._parts + other._parts
        return out

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(p[2] for p in self._parts)

    def resolve(self, layout: Layout) -> Callable[[Any], np.ndarray]:
        """The function ``q -> S(q)``, shape ``(*batch, r, N)``, for this layout."""
        N = layout.dim
        fns = []
        for forms, needs_layout, label in self._parts:
            f = forms(layout) if needs_layout else forms
            if callable(f):
                fns.append((f, label))
            else:
                fns.append((as_one_forms(f, N, label, rows="r"), label))

        def S_of_q(q: Any) -> np.ndarray:
            blocks = []
            for f, label in fns:
                S = np.asarray(f(q)) if callable(f) else f
                if S.ndim < 2 or S.shape[-1] != N:
                    raise ValueError(
                        f"{label}: the interaction one-forms must have shape (..., r, N) with N = {N}, got {S.shape}"
                    )
                blocks.append(S)
            batch = np.broadcast_shapes(*(b.shape[:-2] for b in blocks))
            return np.concatenate([np.broadcast_to(b, (*batch, *b.shape[-2:])) for b in blocks], axis=-2)

        return S_of_q


def linear_interaction(coefficients: Mapping[tuple[str, int], float] | Sequence[Mapping[tuple[str, int], float]],
                       label: str = "linear interaction") -> Interaction:
    """Constant one-forms given by coefficients on named components.

    Parameters
    ----------
    coefficients : dict ``{(name, component): c}`` or a list of them (one per row)
        Each row is ``sum c v_name[component] = 0``.
    """
    rows = [coefficients] if isinstance(coefficients, Mapping) else list(coefficients)

    def build(layout: Layout) -> np.ndarray:
        S = np.zeros((len(rows), layout.dim))
        for r, row in enumerate(rows):
            for (name, comp), c in row.items():
                S[r, layout.index(name, comp)] += float(c)
        return S

    return Interaction(build, needs_layout=True, label=label)


def equal_velocities(a: tuple[str, int], b: tuple[str, int], ratio: float = 1.0) -> Interaction:
    """``v_a[i] = ratio * v_b[j]``: two velocity components tied together.

    Parameters
    ----------
    a, b : (name, component)
        Subsystem names (dotted for nested ones) and frame-coordinate indices.
    ratio : float
    """
    return linear_interaction({a: 1.0, b: -float(ratio)}, label=f"equal_velocities{a}{b}")


def rolling_without_slipping(body: str, wheel: str, radius: float, body_component: int = 1,
                             wheel_component: int = 0) -> Interaction:
    """A wheel of radius ``r`` rolling on a body: ``v_body[body_component] = r * v_wheel[wheel_component]``.

    With a planar body on SE(2) (twist ``(omega, v_x, v_y)``) the default is
    ``v_x = r phi'``: the body frame's forward velocity equals the rim speed.
    """
    if not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"rolling_without_slipping: radius must be positive, got {radius!r}")
    return linear_interaction({(body, body_component): 1.0, (wheel, wheel_component): -float(radius)},
                              label=f"rolling_without_slipping({body}, {wheel})")


def rolling_ball_on_plane(ball: str, centre: str, radius: float) -> Interaction:
    """A ball (on SO(3), body angular velocity ``w``) rolling on a plane with
    its centre (on R^2): ``x' = r (R w) x e3``, i.e. ``x1' = r (R w)_2``,
    ``x2' = -r (R w)_1``.
    """
    if not (np.isfinite(radius) and radius > 0):
        raise ValueError(f"rolling_ball_on_plane: radius must be positive, got {radius!r}")

    def build(layout: Layout):
        ob, db = layout.locate(ball)
        oc, dc = layout.locate(centre)
        if db != 3 or dc != 2:
            raise ValueError(f"rolling_ball_on_plane: {ball!r} must be 3-dimensional (SO(3)) and {centre!r} 2-dimensional (R^2)")
        ib = layout.names.index(ball.partition(".")[0])
        if "." in ball:
            raise ValueError("rolling_ball_on_plane: the ball must be a top-level subsystem")
        N = layout.dim

        def S(q):
            R = np.asarray(q[ib])
            batch = R.shape[:-2]
            out = np.zeros((*batch, 2, N), dtype=R.dtype)
            out[..., 0, ob:ob + 3] = -radius * R[..., 1, :]
            out[..., 0, oc] = 1.0
            out[..., 1, ob:ob + 3] = radius * R[..., 0, :]
            out[..., 1, oc + 1] = 1.0
            return out

        return S

    return Interaction(build, needs_layout=True, label=f"rolling_ball_on_plane({ball}, {centre})")


# ------------------------------------------------------- interconnected system
@dataclass(frozen=True)
class SubsystemTrajectory:
    """One subsystem's share of an interconnected trajectory.

    Attributes
    ----------
    name : str
    t : ndarray, shape=[K+1]
    q : point, shape=[K+1, *B, ...]
    v, p : ndarray, shape=[K+1, *B, n_i]
    interaction_force : ndarray, shape=[K, *B, n_i]
        The force the subsystem receives through ``Sigma`` over each stored
        step: the reaction impulse of the interaction rows divided by ``h``,
        ``-S_i(q_k)^T mu_S / h`` (``+`` for the ``minus`` scheme, whose
        multiplier enters (53d) with the other sign). At the first step of a
        degenerate subsystem (a massless port) it is half the force: the given
        ``p(0) = dL/dv`` differs from the discrete Legendre transform by ``O(h)``,
        so ``mu_0`` carries half an impulse; the motion is unaffected.
    constraint_force : ndarray, shape=[K, *B, n_i]
        The reaction of the subsystem's own constraints, likewise from ``A_i``.
    """

    name: str
    t: np.ndarray
    q: Any
    v: np.ndarray
    p: np.ndarray
    interaction_force: np.ndarray
    constraint_force: np.ndarray


class InterconnectedSystem(LagrangeDiracSystem):
    """The interconnection of named subsystems through an interaction (31)--(34).

    An ordinary :class:`LagrangeDiracSystem` on ``ProductManifold(Q_1, ...)``:
    ``L = sum L_i``, constraint one-forms ``[blockdiag(A_i(q_i)); S(q)]``,
    force ``(F_1, ..., F_k)``; partials are the subsystems' own (analytic
    where they have them). Built by :func:`interconnect`.

    Attributes
    ----------
    subsystems : tuple of LagrangeDiracSystem
    names : tuple of str
    layout : Layout
    interaction : Interaction or None
    """

    def __init__(self, subsystems: Sequence[LagrangeDiracSystem], names: Sequence[str],
                 interaction: Interaction | None, name: str | None = None,
                 force: Callable[[float, Any, np.ndarray], np.ndarray] | None = None):
        self.subsystems = tuple(subsystems)
        self.names = tuple(names)
        Q = ProductManifold(*(s.Q for s in self.subsystems))
        self.layout = Layout(self.names, Q.offsets, Q.dims, self.subsystems)
        self.interaction = interaction
        self._S = interaction.resolve(self.layout) if interaction is not None else None
        self._extra_force = force
        has_force = force is not None or any(s.force is not None for s in self.subsystems)
        super().__init__(
            Q,
            self._lagrangian,
            constraint=self._constraint,
            force=self._force if has_force else None,
            partials=self._partials,
            name=name or "+".join(self.names),
        )

    # the pieces of the combined system
    def _split(self, v: np.ndarray) -> tuple[np.ndarray, ...]:
        return self.Q.split(v)  # type: ignore[attr-defined]

    def _lagrangian(self, q: Any, v: np.ndarray) -> np.ndarray:
        total = 0.0
        for s, qi, vi in zip(self.subsystems, q, self._split(v)):
            total = total + s.lagrangian(qi, vi)
        return total  # type: ignore[return-value]

    def _partials(self, q: Any, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        parts = [s.partials(qi, vi) for s, qi, vi in zip(self.subsystems, q, self._split(v))]
        join = self.Q.join  # type: ignore[attr-defined]
        return join([np.real(p[0]) for p in parts]), join([np.real(p[1]) for p in parts])

    @property
    def uses_automatic_partials(self) -> bool:
        """Whether some subsystem relies on complex-step partials."""
        return any(s.uses_automatic_partials for s in self.subsystems)

    def _own_blocks(self, q: Any) -> np.ndarray:
        blocks = [np.asarray(s.constraint_matrix(qi)) for s, qi in zip(self.subsystems, q)]
        batch = np.broadcast_shapes(*(b.shape[:-2] for b in blocks))
        m = sum(b.shape[-2] for b in blocks)
        out = np.zeros((*batch, m, self.Q.dim), dtype=np.result_type(*blocks))
        r = 0
        for b, off, d in zip(blocks, self.layout.offsets, self.layout.dims):
            out[..., r:r + b.shape[-2], off:off + d] = b
            r += b.shape[-2]
        return out

    def _constraint(self, q: Any) -> np.ndarray:
        own = self._own_blocks(q)
        if self._S is None:
            return own
        S = self._S(q)
        batch = np.broadcast_shapes(own.shape[:-2], S.shape[:-2])
        return np.concatenate([np.broadcast_to(own, (*batch, *own.shape[-2:])),
                               np.broadcast_to(S, (*batch, *S.shape[-2:]))], axis=-2)

    def _force(self, t: Any, q: Any, v: np.ndarray) -> np.ndarray:
        parts = []
        for s, qi, vi in zip(self.subsystems, q, self._split(v)):
            F = s.force_at(t, qi, vi)
            parts.append(np.zeros_like(vi) if F is None else F + 0 * vi)
        total = self.Q.join(parts)  # type: ignore[attr-defined]
        if self._extra_force is not None:
            total = total + self._extra_force(t, q, v)
        return total

    def constraint_rows(self, q: Any) -> dict[str, slice]:
        """Which rows of ``A(q)`` belong to which subsystem (``"interaction"`` last)."""
        rows, r = {}, 0
        for name, s, qi in zip(self.names, self.subsystems, q):
            m = s.n_constraints(qi)
            rows[name] = slice(r, r + m)
            r += m
        rows["interaction"] = slice(r, self.n_constraints(q))
        return rows

    def interaction_matrix(self, q: Any) -> np.ndarray:
        """``S(q)``, shape ``(*batch, r, N)`` (``r = 0`` without an interaction)."""
        if self._S is None:
            return np.zeros((0, self.Q.dim))
        return self._S(q)

    @property
    def subsystem_slices(self) -> dict[str, list[int]]:
        """``{name: [start, stop]}`` of each subsystem's frame coordinates."""
        return {n: [o, o + d] for n, o, d in zip(self.names, self.layout.offsets, self.layout.dims)}

    # ------------------------------------------------------------ read back
    def parts(self, trajectory: Any) -> dict[str, SubsystemTrajectory]:
        """Split a trajectory of this system into its subsystems' trajectories.

        Returns
        -------
        dict of str to SubsystemTrajectory
            Including each subsystem's interaction force (``-S_i^T mu_S / h`` for
            the plus and symmetric schemes, ``+`` for minus; see
            :class:`SubsystemTrajectory`).
        """
        Q, h = self.Q, float(trajectory.meta["h"])
        K = trajectory.xi.shape[0]
        q_steps = Q.index_point(trajectory.q, slice(0, K))
        A = self.constraint_matrix(q_steps) if K else np.zeros((0, self.n_constraints(Q.index_point(trajectory.q, 0)), Q.dim))
        q_first = Q.index_point(trajectory.q, 0)
        rows = self.constraint_rows(q_first)
        # the reaction impulse over step k is -A^T mu for plus/symmetric
        # (D2 L_d(k-1) + D1 L_d(k) = A^T mu) and +A^T mu for minus (53d)
        sign = 1.0 if trajectory.meta.get("scheme") == "minus" else -1.0
        mu = sign * trajectory.mu
        out = {}
        for i, (name, off, d) in enumerate(zip(self.names, self.layout.offsets, self.layout.dims)):
            sl = slice(off, off + d)
            r_int, r_own = rows["interaction"], rows[name]
            f_int = np.einsum("...ri,...r->...i", A[..., r_int, sl], mu[..., r_int]) / h
            f_own = np.einsum("...ri,...r->...i", A[..., r_own, sl], mu[..., r_own]) / h
            out[name] = SubsystemTrajectory(
                name=name, t=trajectory.t, q=trajectory.q[i], v=trajectory.v[..., sl], p=trajectory.p[..., sl],
                interaction_force=f_int, constraint_force=f_own,
            )
        return out

    def __repr__(self) -> str:
        return f"InterconnectedSystem({self.name}: {', '.join(self.names)})"


def interconnect(*systems: LagrangeDiracSystem, interaction: Interaction | None = None,
                 names: Sequence[str] | None = None, name: str | None = None,
                 force: Callable[[float, Any, np.ndarray], np.ndarray] | None = None) -> InterconnectedSystem:
    """Interconnect subsystems through an interaction distribution (29)--(34).

    Parameters
    ----------
    *systems : LagrangeDiracSystem
        One or more subsystems (interconnected systems included: the
        operation is closed).
    interaction : Interaction, optional
        The one-forms of ``Sigma_Q``; ``None`` gives the direct sum (27).
    names : sequence of str, optional
        Names of the subsystems (default: their ``name``); must be unique.
    name : str, optional
        Name of the result.
    force : callable ``F(t, q, v)``, optional
        An external force on the product, added to the subsystems' own.

    Returns
    -------
    InterconnectedSystem

    Raises
    ------
    ValueError
        For no subsystems, a name collision, or an interaction whose
        one-forms have the wrong shape.

    Notes
    -----
    ``Delta_Q = (Delta_1 (+) ... (+) Delta_k) ∩ Sigma_Q`` (31) is regular
    when ``[blockdiag(A_i); S]`` has full row rank; the integrator checks
    this at the initial state and refuses a rank drop.
    """
    if not systems:
        raise ValueError("interconnect: give at least one subsystem")
    for s in systems:
        if not isinstance(s, LagrangeDiracSystem):
            raise ValueError(f"interconnect: subsystems must be LagrangeDiracSystem instances, got {type(s).__name__}")
    if names is None:
        names = [s.name or f"system{i}" for i, s in enumerate(systems)]
    names = [str(n) for n in names]
    if len(names) != len(systems):
        raise ValueError(f"interconnect: {len(names)} names for {len(systems)} subsystems")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(
            f"interconnect: subsystem name collision: {', '.join(repr(d) for d in dup)} appear more than once; "
            "pass names=(...) to tell them apart"
        )
    if any("." in n for n in names):
        raise ValueError("interconnect: subsystem names may not contain '.' (it reaches into nested systems)")
    if interaction is not None and not isinstance(interaction, Interaction):
        raise ValueError("interconnect: interaction must be an Interaction (see equal_velocities, linear_interaction)")
    out = InterconnectedSystem(systems, names, interaction, name, force)
    if interaction is not None:
        # resolve now so a wrong shape fails here, not at the first step
        probe = out.Q.random_point(np.random.default_rng(0))
        out.interaction_matrix(probe)
    return out


# ---------------------------------------------- discretize, then interconnect
class SubsystemDiscreteLagrangian(DiscreteLagrangian):
    """``L_d = sum_i L_d^i``, each subsystem discretized with its own rule and retraction.

    The "discretize the subsystems, then interconnect" route of Parks & Leok:
    D1, D2, the discrete forces and the node geometry are assembled block by
    block from the subsystems' :meth:`DiscreteLagrangian.evaluate`, not from
    ``L = sum L_i`` on the product.

    Parameters
    ----------
    system : InterconnectedSystem
    rules : str or DiscreteLagrangian, or a sequence of them (one per subsystem)
    """

    def __init__(self, system: InterconnectedSystem, rules: Any = "midpoint"):
        if not isinstance(system, InterconnectedSystem):
            raise ValueError("SubsystemDiscreteLagrangian: needs an InterconnectedSystem")
        if isinstance(rules, (str, DiscreteLagrangian)):
            rules = [rules] * len(system.subsystems)
        rules = [get_discrete_lagrangian(r) for r in rules]
        if len(rules) != len(system.subsystems):
            raise ValueError(f"SubsystemDiscreteLagrangian: {len(rules)} rules for {len(system.subsystems)} subsystems")
        params = {r.node_parameters() for r in rules}
        first = rules[0]
        object.__setattr__(self, "_system", system)
        object.__setattr__(self, "_rules", tuple(rules))
        super().__init__(
            name="subsystems(" + ",".join(r.name for r in rules) + ")",
            nodes=first.nodes if len(params) == 1 else ((0.5, 1.0),),
            order=min(r.order for r in rules),
            symmetric=all(r.symmetric for r in rules),
            degenerate_safe=all(r.degenerate_safe for r in rules),
        )

    def order_on(self, Q: Any) -> int:
        return min(r.order_on(s.Q) for r, s in zip(self._rules, self._system.subsystems))

    def evaluate(self, system, q0, q1, h, t0=0.0, force_override=None, extra_nodes=(), jacobians=None):
        sysm: InterconnectedSystem = self._system
        Q = sysm.Q
        k = len(sysm.subsystems)
        # forces: an array override splits by subsystem; a callable override (on the
        # product) replaces every subsystem's force, and so is applied at the product's
        # nodes below, like the product-level force of interconnect(..., force=...)
        product_force: Any = None
        fo_parts: list[Any]
        if force_override is None:
            fo_parts = [None] * k
            product_force = sysm._extra_force
        elif callable(force_override):
            fo_parts = [_zero_force] * k
            product_force = force_override
        else:
            fo_parts = list(Q.split(np.asarray(force_override)))
        jac_parts: Iterable[Any]
        if jacobians is not None:
            xi, J0, J1 = jacobians
            jac_parts = [
                (x, J0[..., sl, sl], J1[..., sl, sl])
                for x, sl in zip(Q.split(xi), (Q.slice(i) for i in range(len(sysm.subsystems))))
            ]
        else:
            jac_parts = [None] * len(sysm.subsystems)
        vals = []
        for s, r, a, b, fo, jp in zip(sysm.subsystems, self._rules, q0, q1, fo_parts, jac_parts):
            extra = tuple(e for e in extra_nodes if e not in r.node_parameters())
            vals.append(r.evaluate(s, a, b, h, t0, fo, extra_nodes=extra, jacobians=jp))
        join = Q.join

        def bd(mats):
            return _block_diag(mats, Q.dims)

        f_minus = join([v.f_minus for v in vals])
        f_plus = join([v.f_plus for v in vals])
        if product_force is not None:
            if len({r.nodes for r in self._rules}) != 1:
                raise NotImplementedError(
                    "SubsystemDiscreteLagrangian: a force on the product needs the same rule for every subsystem"
                )
            v_all = join([v.xi for v in vals]) / h
            for s_, w in self._rules[0].nodes:
                per = [next(g for g in v.nodes if g.s == s_) for v in vals]
                point = tuple(g.point for g in per)
                P0 = None if s_ in (0.0, 1.0) else bd([g.P0 for g in per])
                P1 = None if s_ in (0.0, 1.0) else bd([g.P1 for g in per])
                F = np.asarray(product_force(t0 + s_ * h, point, v_all))
                f_minus = f_minus + (w * h) * _pullback(P0, 0, s_, F)
                f_plus = f_plus + (w * h) * _pullback(P1, 1, s_, F)
        # node geometry: one node per requested extra parameter (the symmetric scheme's midpoint)
        nodes = []
        for s_ in tuple(extra_nodes):
            per = [next(g for g in v.nodes if g.s == s_) for v in vals]
            point = tuple(g.point for g in per)
            nodes.append(NodeGeometry(s_, point, bd([g.P0 for g in per]), bd([g.P1 for g in per]),
                                      bd([g.Jxi for g in per])))
        return DiscreteLagrangianValue(
            join([v.xi for v in vals]), bd([v.J0 for v in vals]), bd([v.J1 for v in vals]),
            join([v.D1 for v in vals]), join([v.D2 for v in vals]), f_minus, f_plus, tuple(nodes),
        )

    def value(self, system, q0, q1, h):
        return sum(r.value(s, a, b, h) for s, r, a, b in zip(self._system.subsystems, self._rules, q0, q1))


def _zero_force(t: Any, q: Any, v: np.ndarray) -> np.ndarray:
    """No force (a subsystem whose force a product-level override replaces)."""
    return np.zeros_like(v)
