"""Composition methods: higher order from a self-adjoint step map of order 2.

A composition with coefficients ``gamma_1 .. gamma_s`` (``sum gamma_i = 1``)
turns the one-step map ``Phi_h`` of a scheme into::

    Psi_h = Phi_{gamma_s h} o ... o Phi_{gamma_2 h} o Phi_{gamma_1 h}

If ``Phi_h`` is **self-adjoint** (``Phi_{-h} o Phi_h = id``) and of order 2,
and the coefficients are symmetric (``gamma_i = gamma_{s+1-i}``) and solve
the order conditions, ``Psi_h`` has order 4, 6 or 8 and is self-adjoint
again (Hairer, Lubich & Wanner, *Geometric Numerical Integration*, 2nd ed.
2006, II.4 and V.3; Yoshida, Phys. Lett. A 1990; Suzuki, Phys. Lett. A 1990;
McLachlan, SIAM J. Sci. Comput. 1995; Kahan & Li, Math. Comp. 1997). Every
sub-step is a step of the base scheme, so what the base scheme keeps exactly
at its nodes -- the discrete constraint, holonomic constraints ``g(q) = 0``,
momentum maps of a symmetry of ``L_d`` -- holds at every sub-step node, and
so at the composed nodes. Some coefficients are negative: those sub-steps go
backwards in time (``t`` advances by ``gamma_i h`` through each sub-step).

Which base maps are self-adjoint (measured, ``tests/mechanics/test_composition.py``):

* without constraints, every scheme with a rule that is self-adjoint on the
  retraction (``rule.symmetric_on(Q)``: ``midpoint`` with ``exp`` or on a
  vector space -- not with SO(3)'s Cayley map --, ``trapezoid``; ``gauss4``
  and ``gauss6`` on a vector space);
* with constraints (one-forms ``A`` or holonomic ``g``), the ``symmetric``
  and ``split`` schemes with such a rule and, for one-forms, a retraction
  that is a flow (``exp``, vector spaces). The ``symmetric`` scheme keeps the
  reaction impulse at ``q_k``, so its reverse step returns ``(q_k, p_k -
  C(q_k)^T mu)``: it is self-adjoint on the reduced state ``(q, p`` on
  ``Delta(q))``, which is all the map reads (the part of ``p`` in the
  annihilator ``Delta°(q)`` is absorbed by ``mu``). So positions, velocities,
  energies and the momentum on ``Delta`` of a composed run are of the
  composition's order; the ``Delta°`` part of its reported momentum is the
  last sub-step's ``D2 L_d`` before its reaction, first order (measured). ``split`` is self-adjoint on
  ``(q, p)`` itself, with the same positions, but the ``Delta°`` part of its
  momentum is carried without the reaction (it is not ``dL/dv`` there); the
  default base is therefore ``symmetric``. ``plus`` and ``minus`` are
  refused with constraints, as is every base that is not self-adjoint
  (:func:`check_composable`).

A composition is a :class:`Composition` (name, coefficients, order) in
:data:`COMPOSITIONS`; :func:`register_composition` adds one, after checking
its order numerically (:func:`observed_order`). :class:`ComposedStepMap`
wraps a :class:`~manifold_dirac._mechanics.step.StepMap` with the same
``step`` interface, so the compiled loop of
:func:`~manifold_dirac._run.integrate.integrate` runs it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._manifolds.base import Manifold, tree_where
from .._types import ArrayLike, Params, Point, Scalar
from .rules import DiscreteLagrangian, is_flow
from .schemes import Scheme
from .status import Status
from .step import State, StepMap, StepRecord, conform_newton
from .system import LagrangeDiracSystem

__all__ = ["COMPOSITIONS", "ComposedStepMap", "Composition", "adjoint_defect", "check_composable", "composed_order",
           "composed_predictor", "get_composition", "observed_order", "predicted_solutions", "register_composition",
           "sub_step_inputs", "sub_step_start"]


def _triple_jump(p: int) -> tuple[float, ...]:
    """Yoshida's / Creutz--Gocksch's triple jump raising a symmetric order ``p`` to ``p + 2``."""
    r = 2.0 ** (1.0 / (p + 1))
    g1 = 1.0 / (2.0 - r)
    return (g1, -r * g1, g1)


def _suzuki(p: int) -> tuple[float, ...]:
    """Suzuki's five-stage fractal raising a symmetric order ``p`` to ``p + 2``."""
    g = 1.0 / (4.0 - 4.0 ** (1.0 / (p + 1)))
    return (g, g, 1.0 - 4.0 * g, g, g)


def _nest(outer: tuple[float, ...], inner: tuple[float, ...]) -> tuple[float, ...]:
    """``outer`` applied to the composition ``inner`` (a fractal composition: ``len(outer) len(inner)`` stages)."""
    return tuple(a * b for a in outer for b in inner)


def _palindrome(half: tuple[float, ...]) -> tuple[float, ...]:
    """``gamma_1 .. gamma_k`` -> ``gamma_1 .. gamma_k .. gamma_1`` (the last one is the middle)."""
    return tuple(half) + tuple(reversed(half[:-1]))


@dataclass(frozen=True)
class Composition:
    """Symmetric composition coefficients and the order they give a self-adjoint base of order 2.

    Parameters
    ----------
    name : str
    coefficients : tuple of float
        ``gamma_1 .. gamma_s``: sub-step ``i`` is a step of ``gamma_i h``.
        They must sum to 1.
    order : int
        Order of ``Psi_h`` for a self-adjoint base of order 2. Checked at
        construction against what the coefficients can give: at most 2 when
        they are not symmetric or ``sum gamma_i^3 != 0`` (the order-4
        condition), and at most 4 when ``sum gamma_i^5 != 0``; higher orders
        also need conditions on nested sums, checked numerically by
        :func:`observed_order` (:func:`register_composition`, the tests).
    reference : str
        Where the coefficients come from.

    Notes
    -----
    For a symmetric composition of a self-adjoint method of order 2 the
    order-4 conditions are ``sum gamma_i = 1`` and ``sum gamma_i^3 = 0``; order 6
    adds ``sum gamma_i^5 = 0`` and one condition on nested sums, order 8 adds
    ``sum gamma_i^7 = 0`` and four more (Hairer, Lubich & Wanner, V.3.2).
    """

    name: str
    coefficients: tuple[float, ...]
    order: int
    reference: str = ""
    symmetric: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Composition: name must be a non-empty string, got {self.name!r}")
        try:
            g = np.asarray(self.coefficients, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"Composition {self.name!r}: coefficients must be real numbers, "
                            f"got {self.coefficients!r}") from None
        if g.ndim != 1 or g.size < 1:
            raise ValueError(f"Composition {self.name!r}: coefficients must be a non-empty sequence of numbers, "
                             f"got shape {g.shape}")
        if not np.all(np.isfinite(g)) or np.any(g == 0.0):
            raise ValueError(f"Composition {self.name!r}: every coefficient must be finite and nonzero, got {g.tolist()}")
        if abs(float(np.sum(g)) - 1.0) > 1e-12:
            raise ValueError(f"Composition {self.name!r}: the coefficients must sum to 1 (a step of h), "
                             f"they sum to {float(np.sum(g))!r}")
        if isinstance(self.order, bool) or not isinstance(self.order, (int, np.integer)) or self.order < 1:
            raise ValueError(f"Composition {self.name!r}: order must be a positive integer, got {self.order!r}")
        object.__setattr__(self, "coefficients", tuple(float(x) for x in g))
        sym = bool(np.allclose(g, g[::-1], rtol=0, atol=1e-15))
        object.__setattr__(self, "symmetric", sym)
        cap = self.order_bound()
        if self.order > cap:
            raise ValueError(
                f"Composition {self.name!r}: declared order {self.order} is more than its coefficients can give "
                f"({cap}: " + ("they are not symmetric, gamma_i != gamma_(s+1-i)" if not sym else
                               f"sum gamma_i^{cap + 1} = {float(np.sum(g ** (cap + 1))):.3e}, not 0") + ")")

    @property
    def stages(self) -> int:
        """Number of sub-steps ``s``."""
        return len(self.coefficients)

    def power_sums(self, up_to: int = 9) -> dict[int, float]:
        """``sum gamma_i^k`` for ``k = 1 .. up_to``."""
        g = np.asarray(self.coefficients)
        return {k: float(np.sum(g ** k)) for k in range(1, up_to + 1)}

    def order_bound(self) -> int:
        """The largest order the power sums allow (an upper bound; see the class Notes)."""
        if not self.symmetric:
            return 2 if self.stages == 1 else 1
        s = self.power_sums()
        o = 2
        for k in (3, 5, 7):
            if abs(s[k]) > 1e-12 * max(1.0, float(np.sum(np.abs(self.coefficients)) ** k)):
                break
            o = k + 1
        return o


COMPOSITIONS: dict[str, Composition] = {}
"""The registered compositions by name (:func:`register_composition`)."""


def observed_order(coefficients: Any, steps: tuple[float, ...] = (0.8, 0.4), size: int = 5,
                   seed: int = 1) -> float:
    """The order of the composition of a self-adjoint order-2 map, measured on a generic linear problem.

    The base map is Strang splitting of ``exp(h (A + B))``,
    ``e^{hA/2} e^{hB} e^{hA/2}`` (self-adjoint, order 2), with random
    ``size x size`` matrices ``A, B`` (norm about 1) that do not commute, so
    that every order condition is tested (not only the power sums). Returns
    the slope of ``log |Psi_h - e^{h(A+B)}|`` (local error) between the two
    ``steps``, minus 1 (a local error ``O(h^{p+1})`` is order ``p``). The
    default steps keep the local error of an order-8 method above round-off
    (``2e-11`` at ``h = 0.4``) and are small enough for the slopes of the
    built-in compositions to be within 0.3 of their orders.
    """
    from scipy.linalg import expm

    g = np.asarray(coefficients, dtype=float)
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((size, size)) / size
    B = rng.standard_normal((size, size)) / size
    if len(steps) != 2:
        raise ValueError(f"observed_order: give two step sizes, got {steps!r}")
    errs = []
    for h in steps:
        M = np.eye(size)
        for gi in g:
            hA = expm(0.5 * gi * h * A)
            M = hA @ expm(gi * h * B) @ hA @ M
        errs.append(np.max(np.abs(M - expm(h * (A + B)))))
    slope = np.log(errs[0] / errs[1]) / np.log(steps[0] / steps[1])
    return float(slope - 1.0)


def register_composition(comp: Composition, *, overwrite: bool = False, check: bool = True) -> Composition:
    """Make ``comp`` available by name (``composition=comp.name``), after checking its order.

    ``check``: measure the order with :func:`observed_order` and refuse a
    composition whose measured order is below its declaration.
    """
    if not isinstance(comp, Composition):
        raise TypeError(f"register_composition: give a Composition instance, got {type(comp).__name__}")
    if comp.name in COMPOSITIONS and not overwrite:
        raise ValueError(f"a composition named {comp.name!r} exists; pass overwrite=True")
    if check:
        o = observed_order(comp.coefficients)
        if o < comp.order - 0.3:
            raise ValueError(f"Composition {comp.name!r}: declared order {comp.order}, measured {o:.2f} on a generic "
                             "linear problem (observed_order): the coefficients do not solve the order conditions")
    COMPOSITIONS[comp.name] = comp
    return comp


_TJ4 = _triple_jump(2)
_SZ4 = _suzuki(2)
for _c in (
    Composition("triple_jump4", _TJ4, 4,
                "Yoshida, Phys. Lett. A 150 (1990); Creutz & Gocksch, Phys. Rev. Lett. 63 (1989); HLW (II.4.4)"),
    Composition("suzuki4", _SZ4, 4, "Suzuki, Phys. Lett. A 146 (1990); HLW (II.4.5)"),
    Composition("triple_jump6", _nest(_triple_jump(4), _TJ4), 6, "Yoshida 1990 (triple jump of the triple jump, 9 stages)"),
    Composition("suzuki6", _nest(_suzuki(4), _SZ4), 6, "Suzuki 1990 (fractal of the five-stage method, 25 stages)"),
    Composition("yoshida6", _palindrome((0.78451361047755726381949763, 0.23557321335935813368479318,
                                         -1.17767998417887100694641568, 1.31518632068391121888424973)), 6,
                "Yoshida 1990, solution A; HLW V.3.2 (3.11), p6 s7"),
    Composition("kahan_li6", _palindrome((0.39216144400731413927925056, 0.33259913678935943859974864,
                                          -0.70624617255763935980996482, 0.08221359629355080023149045,
                                          0.79854399093482996339895035)), 6,
                "Kahan & Li, Math. Comp. 66 (1997); HLW V.3.2 (3.12), p6 s9"),
    Composition("kahan_li8", _palindrome((0.13020248308889008087881763, 0.56116298177510838456196441,
                                          -0.38947496264484728640807860, 0.15884190655515560089621075,
                                          -0.39590389413323757733623154, 0.18453964097831570709183254,
                                          0.25837438768632204729397911, 0.29501172360931029887096624,
                                          -0.60550853383003451169892108)), 8,
                "Kahan & Li, Math. Comp. 66 (1997); HLW V.3.2 (3.13), p8 s17"),
):
    COMPOSITIONS[_c.name] = _c  # the built-ins are checked by the tests (observed_order), not at import


def get_composition(composition: str | Composition | Any) -> Composition:
    """A :class:`Composition` from a name, an instance, or a sequence of coefficients.

    A sequence of coefficients declares the order its power sums allow
    (:meth:`Composition.order_bound`, at most 4 without a check of the
    nested conditions; register a :class:`Composition` for more).
    """
    if isinstance(composition, Composition):
        return composition
    if isinstance(composition, str):
        try:
            return COMPOSITIONS[composition]
        except KeyError:
            raise ValueError(f"unknown composition {composition!r}; valid: "
                             + ", ".join(repr(k) for k in COMPOSITIONS)
                             + " (or a sequence of coefficients, or add one with register_composition)") from None
    if isinstance(composition, (list, tuple, np.ndarray)):
        g = tuple(composition)
        probe = Composition("coefficients", g, 1)
        order = min(probe.order_bound(), 4)
        return Composition(f"coefficients{tuple(round(x, 6) for x in probe.coefficients)}", g, order)
    raise TypeError(f"composition must be a name, a Composition or a sequence of coefficients, "
                    f"got {type(composition).__name__}")


def check_composable(scheme: Scheme, rule: DiscreteLagrangian, system: LagrangeDiracSystem) -> None:
    """Refuse a base step map that is not self-adjoint, saying why (``ValueError``).

    Self-adjoint: a rule self-adjoint on the retraction
    (``rule.symmetric_on(Q)``), and with constraints a scheme whose map on
    ``(q, p)`` is self-adjoint (``scheme.self_adjoint``: ``split``) and, for
    one-forms evaluated inside the step, a retraction that is a flow.
    """
    Q: Manifold = system.Q
    who = system.name or "this system"
    if not rule.symmetric_on(Q):
        why = ("the retraction is not symmetric" if not Q.retraction.symmetric else
               "the rule's node inside the step is not the same point seen from q_(k+1) (the retraction "
               f"{Q.retraction.name!r} is not a flow: R_(R_q(a xi))(b xi) != R_q((a+b) xi))" if rule.symmetric
               else "the rule is not symmetric")
        raise ValueError(
            f"composition needs a self-adjoint step map, but the discrete Lagrangian {rule.name!r} is not self-adjoint "
            f"with the retraction {Q.retraction.name!r} of {Q!r} ({why}); use discrete_lagrangian='midpoint' with the "
            "'exp' retraction (or a vector space), or 'trapezoid'")
    if system.n_constraints and not scheme.symmetric:
        raise ValueError(
            f"composition needs a self-adjoint step map, but the scheme {scheme.name!r} is not symmetric: its discrete "
            f"constraint on the constrained system {who} is evaluated at one end of the step; use scheme='symmetric' "
            "(or 'split')")
    if system.n_one_forms and scheme.extra_nodes and not is_flow(Q):
        raise ValueError(
            f"composition needs a self-adjoint step map, but the scheme {scheme.name!r} evaluates the constraint "
            f"one-forms at the retraction midpoint R_(q_k)(xi/2), which is not the midpoint seen from q_(k+1) with "
            f"the retraction {Q.retraction.name!r} of {Q!r} (not a flow); use the 'exp' retraction")


def composed_order(comp: Composition, base_order: int) -> int:
    """The declared order of ``comp`` over a self-adjoint base of order ``base_order``.

    ``comp.order`` over a base of order 2 (what the coefficients are built
    for); over a base of higher order the base's order when it is at least
    ``comp.order`` (a composition with ``sum gamma_i = 1`` keeps it), else
    the base's order (a lower bound: coefficients for an order-2 base are not
    the optimal ones for another).
    """
    return comp.order if base_order == 2 else base_order


def composed_predictor(gammas: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The static tables of a composed step's Newton starts (:func:`sub_step_start`).

    Returns ``(ratio, mirror, mirror_before)``, each of shape ``(s,)``: ``ratio[i] = gamma_i /
    gamma_(i-1)`` (``gamma_1 / gamma_s`` for ``i = 0``); on the first step, ``mirror[i]`` is the sub-step of
    the first half with the same coefficient as sub-step ``i`` of the second half (``s - 1 - i``, or -1:
    none, or the coefficients are not a palindrome), ``mirror_before[i]`` the mirror of sub-step ``i - 1``
    when it is solved before sub-step ``i`` (else -1).
    """
    g = np.asarray(gammas, dtype=float)
    s = g.size
    ratio = g / np.roll(g, 1)
    idx = np.arange(s)
    palindrome = bool(np.allclose(g, g[::-1], rtol=0, atol=1e-15))
    mirror = np.where(palindrome & (s - 1 - idx < idx), s - 1 - idx, -1)
    mirror_before = np.where((mirror >= 0) & (s - idx <= idx - 1), s - idx, -1)
    return ratio, mirror.astype(np.int32), mirror_before.astype(np.int32)


def predicted_solutions(z1: jax.Array, z2: jax.Array, k: jax.Array | int) -> jax.Array:
    """Every sub-step's predicted solution on step ``k`` (traceable).

    From its solutions ``z1`` on step ``k - 1`` and ``z2`` on ``k - 2``
    (``(s, N_z)`` each): linear extrapolation from ``k = 2``, the last value
    on ``k = 1``.
    """
    return jnp.where(k >= 2, 2.0 * z1 - z2, z1)


def sub_step_start(first: jax.Array | bool, i: jax.Array | int, P_i: jax.Array, P_before: jax.Array,
                   last: jax.Array, zs: jax.Array, ratio_i: jax.Array | float, mirror_i: jax.Array | int,
                   mirror_before_i: jax.Array | int) -> jax.Array:
    """Newton's start of sub-step ``i`` of a composed step (one member; traceable).

    The rule of :meth:`ComposedStepMap.step` and of a composed
    :func:`~manifold_dirac._run.rollout.rollout` (one function, so that the
    two start alike). ``P_i`` is the sub-step's predicted solution
    (:func:`predicted_solutions`), ``P_before`` that of sub-step ``i - 1``
    (of sub-step ``s - 1`` for ``i = 0``), ``last`` the solution of the
    sub-step just solved (``P_before`` for ``i = 0``), ``zs (s, N_z)`` this
    step's solutions so far, and ``ratio_i``, ``mirror_i``,
    ``mirror_before_i`` the tables of :func:`composed_predictor`. After the
    first step: ``P_i + ratio_i (last - P_before)``, the prediction
    corrected by ``gamma_i / gamma_(i-1)`` times what the prediction of the
    sub-step before missed. On the first step (``first``, when the history
    is that of a state at step 0, whose ``P_i`` is the state's unknowns
    scaled by ``gamma_i``): ``P_0`` for ``i = 0``; for a sub-step with a
    mirror, the mirror's solution corrected likewise by the sub-step before
    and its mirror; else ``ratio_i last``.
    """
    later = P_i + ratio_i * (last - P_before)
    mirrored = zs[jnp.maximum(mirror_i, 0)] + jnp.where(
        mirror_before_i >= 0, ratio_i * (last - zs[jnp.maximum(mirror_before_i, 0)]), 0.0)
    start = jnp.where(mirror_i >= 0, mirrored, jnp.where(i == 0, P_i, ratio_i * last))
    return jnp.where(first, start, later)


def sub_step_matrix(kept_i: jax.Array | None, mats: jax.Array | None, mirror_i: jax.Array | int) -> jax.Array | None:
    """The inverse Newton matrix sub-step ``i`` of a composed step starts from (``SolverOptions(jacobian="keep")``;
    one member; traceable; ``None`` without kept matrices).

    Its own, kept from the last step (``kept_i``); when it has none (NaN: the first step, or a state
    without kept matrices) and it is a sub-step of the second half of a palindrome (``mirror_i >= 0``,
    :func:`composed_predictor`), the one its mirror in the first half used on this step (``mats (s, N, N)``,
    this step's matrices so far): the same step ``gamma_i h`` from a point a few sub-steps away, where
    Newton would otherwise evaluate a new matrix. Whether the start's matrix is good enough is Newton's
    rule as for any kept matrix (:func:`~manifold_dirac._mechanics.newton.newton`): the solution is that of
    the step's equations either way. Shared by :meth:`ComposedStepMap.step` and a composed
    :func:`~manifold_dirac._run.rollout.rollout`.
    """
    if kept_i is None or mats is None:
        return kept_i
    own = jnp.all(jnp.isfinite(kept_i))
    return jnp.where((mirror_i >= 0) & ~own, mats[jnp.maximum(mirror_i, 0)], kept_i)


def sub_step_inputs(gammas: ArrayLike, P: jax.Array) -> tuple[jax.Array, ...]:
    """What a composed step's loop over its sub-steps reads per sub-step ``i`` (the ``xs`` of its ``lax.scan``).

    ``(i, gamma_i, offset_i, ratio_i, P_i, P_(i-1), mirror_i, mirror_before_i)``, each with a leading axis of
    the ``s`` sub-steps: ``offset_i = gamma_1 + ... + gamma_(i-1)`` (the sub-step starts at ``t + offset_i
    h``), ``P (s, N_z)`` the predicted solutions (:func:`predicted_solutions`, ``P_(-1) = P_(s-1)``) and
    the tables of :func:`composed_predictor`; the arguments of :func:`sub_step_start` and of the sub-step.
    Shared by :meth:`ComposedStepMap.step` and a composed :func:`~manifold_dirac._run.rollout.rollout`.
    """
    g = np.asarray(gammas, dtype=float)
    ratio, mirror, mirror_before = composed_predictor(g)
    offset = np.concatenate([np.zeros(1), np.cumsum(g)[:-1]])
    return (jnp.arange(g.size), jnp.asarray(g), jnp.asarray(offset), jnp.asarray(ratio), P, jnp.roll(P, 1, axis=0),
            jnp.asarray(mirror), jnp.asarray(mirror_before))


class ComposedStepMap:
    """``Psi_h = Phi_{gamma_s h} o ... o Phi_{gamma_1 h}`` of a :class:`StepMap` ``Phi``, as one step map.

    Parameters
    ----------
    base : StepMap
        A self-adjoint step map (:func:`check_composable` is applied).
    composition : Composition

    Notes
    -----
    :meth:`step` has the interface of :meth:`StepMap.step` (without its
    ``z0``: the composed step computes its sub-steps' starts). Sub-step ``i``
    starts at ``t + (gamma_1 + ... + gamma_{i-1}) h`` and solves the base
    scheme's equations (``docs/schemes.md``) with the step ``gamma_i h``;
    Newton starts it from a prediction of its solution from the same
    sub-step on the last two steps, which the state carries
    (``State.history``; see :meth:`step`). The state after the step holds, as
    a base step would: ``q_{k+1}``, ``p_{k+1}``, ``xi = R_{q_k}^{-1}(q_{k+1})``
    (the whole step's chart displacement, which the recorded velocity uses)
    and ``mu`` the sum of the sub-steps' multipliers (the step's reaction
    impulse), and the sub-steps' solutions of this step and the last. The
    record's ``error`` and ``constraint_residual`` are the largest over the
    sub-steps, ``iterations`` their sum. A sub-step that fails fails the
    step: the member stays at ``(q_k, p_k)`` with the failure's status,
    error and unknowns (those of the failed sub-step).
    """

    def __init__(self, base: StepMap, composition: Composition):
        if not isinstance(base, StepMap):
            raise TypeError(f"ComposedStepMap: base must be a StepMap, got {type(base).__name__}")
        if not isinstance(composition, Composition):
            raise TypeError(f"ComposedStepMap: composition must be a Composition, got {type(composition).__name__}")
        check_composable(base.scheme, base.rule, base.system)
        self.base, self.composition = base, composition
        self.system, self.scheme, self.rule, self.options = base.system, base.scheme, base.rule, base.options
        self.n, self.m, self.ns = base.n, base.m, base.ns
        self.ns_curve = getattr(base, "ns_curve", base.ns)

    def _key(self) -> tuple:
        return (self.base._key(), self.composition)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposedStepMap) and self._key() == other._key() and self.system is other.system

    def __hash__(self) -> int:
        return hash(self._key())

    def first_gamma(self) -> float:
        return self.composition.coefficients[0]

    # what the integrator's diagnosis of a failure evaluates: the first sub-step's
    def equations(self, z: jax.Array, q0: Any, p_in: jax.Array, t0: Any, h: Any, params: Any, u: Any = None):
        """The first sub-step's residual (:meth:`StepMap.equations` with the step ``gamma_1 h``)."""
        return self.base.equations(z, q0, p_in, t0, self.first_gamma() * h, params, u)

    def jacobian(self, z: jax.Array, q0: Point, p_in: jax.Array, t0: Scalar, h: Scalar, params: Params,
                 u: jax.Array | None = None, basis_in_loop: bool = False) -> jax.Array:
        """The first sub-step's Newton matrix (:meth:`StepMap.jacobian` with the step ``gamma_1 h``)."""
        return self.base.jacobian(z, q0, p_in, t0, self.first_gamma() * h, params, u, basis_in_loop=basis_in_loop)

    def roundoff_floor(self, z, q0, p_in, t0, h, params, u=None, basis_in_loop: bool = False):
        """The first sub-step's round-off floor (:meth:`StepMap.roundoff_floor`)."""
        return self.base.roundoff_floor(z, q0, p_in, t0, self.first_gamma() * h, params, u,
                                        basis_in_loop=basis_in_loop)

    def warm_start(self, state: State) -> jax.Array:
        """The first sub-step's Newton start from ``state``."""
        return self.base.warm_start(self._scaled(state, self.first_gamma()))

    def initial(self, q0: Any, p0: jax.Array, xi0: jax.Array) -> State:
        """The state at step 0 (as :meth:`StepMap.initial`), without the sub-steps' history.

        A run's start program returns it as it is, and the host adds the
        history's place (:meth:`history_shape`, zeros: the first step does
        not read it). XLA:CPU runs a program whose buffers are all of 512
        bytes or less on one thread, without hand-offs: with the history
        among its outputs (576 bytes for ``kahan_li6`` on the rolling disk)
        the composed runs' start programs took about 0.04 ms more
        (``benchmarks/call_overhead.py --compare``).
        """
        return self.base.initial(q0, p0, xi0)

    @property
    def history_shape(self) -> tuple[int, int, int]:
        """The shape of one member's ``State.history``: ``(2, s, N_z)``, ``N_z = n + n_stages + m``."""
        return (2, len(self.composition.coefficients), self.n + self.ns + self.m)

    @property
    def newton_shape(self) -> tuple[int, ...] | None:
        """The shape of one member's ``State.newton``: ``(s, N, N)``, the base's kept matrix for each sub-step
        (with ``SolverOptions(jacobian="keep")``; else None)."""
        one = self.base.newton_shape
        return None if one is None else (len(self.composition.coefficients), *one)

    def conform(self, state: State) -> State:
        """``state`` with a history of this composition's shape (:meth:`StepMap.conform`; one member).

        A state without one (of a step map that is not composed, or built by
        hand) or with another composition's gets the history of a state at
        step 0 (:meth:`initial`): its unknowns scaled by ``gamma_i``, a start
        for every sub-step as a step's unknowns scaled to it. Its kept Newton
        matrices as :meth:`StepMap.conform`'s.
        """
        state = conform_newton(state, self.newton_shape)
        h = state.history
        if h is not None and tuple(h.shape) == self.history_shape:
            return state
        return state._replace(history=self._fresh_history(state._replace(history=None)))

    def _scaled_unknowns(self, state: State) -> jax.Array:
        """``(s, N_z)``: the unknowns of ``state`` (without a history) scaled by each ``gamma_i``."""
        g = jnp.asarray(self.composition.coefficients, jnp.float64)
        return g[:, None] * self.base.warm_start(state)[None, :]

    def _fresh_history(self, state: State) -> jax.Array:
        """The history of a state at step 0: :meth:`_scaled_unknowns` on both rows."""
        z = self._scaled_unknowns(state)
        return jnp.broadcast_to(z[None], (2, *z.shape))

    @staticmethod
    def _scaled(state: State, ratio: float) -> State:
        return state._replace(xi=state.xi * ratio, mu=state.mu * ratio, stages=state.stages * ratio)

    def step(self, state: State, k: Any, t: Any, h: Any, params: Any, u: Any = None,
             axis_name: str | None = None, defer_floor: bool = False) -> tuple[State, StepRecord]:
        """The composed step ``k -> k+1`` from ``state`` (see the class Notes); a failed member stays frozen.

        Newton's start of each sub-step is predicted as :func:`~manifold_dirac._run.rollout.rollout`
        predicts it (the same tables, :func:`composed_predictor`), from ``state.history``: the same
        sub-step's solution on the last step (at ``k = 1``), extrapolated linearly from the last two
        steps (from ``k = 2``), corrected by ``gamma_i / gamma_(i-1)`` times what the prediction of the
        sub-step before missed (:func:`sub_step_start`); on the first step (``k = 0``), or from a state
        without a history of this composition's shape (:meth:`conform`),
        the first sub-step starts from the state's warm start scaled by ``gamma_1``, a sub-step of the
        second half of a palindrome from its mirror in the first half, another from the sub-step
        before scaled by ``gamma_i / gamma_(i-1)``. ``k`` counts the steps since the state's history
        began (a run's step index). The start changes the iterations, not the solution (to Newton's
        tolerance). ``defer_floor`` as :meth:`StepMap.step`'s, for every sub-step.
        """
        gammas = self.composition.coefficients
        conformed = self.conform(state)
        # a state of another step map, or built by hand (conformed: a new history): the first step's starts
        first = True if conformed.history is not state.history else k == 0
        base_state = state._replace(history=None, newton=None)
        # every sub-step's solution on steps k - 1 and k - 2, (s, N_z) each; on the first step z1 is the state's
        # unknowns scaled by gamma_i (P_0 starts sub-step 0; what a run's state holds there is zeros, not read)
        history = conformed.history
        assert history is not None  # conform gives every state a history
        z1 = jnp.where(first, self._scaled_unknowns(base_state), history[0])
        z2 = history[1]
        P = predicted_solutions(z1, z2, k)

        def sub(carry, x):
            cur, err, res, its, mu_sum, p_start, zs, last, mats = carry
            i, gi, ti, ri, Pi, P_before, mi, mbi = x
            z0 = sub_step_start(first, i, Pi, P_before, last, zs, ri, mi, mbi)
            kept_i = None if mats is None else sub_step_matrix(mats[i], mats, mi)
            new, rec = self.base.step(cur._replace(newton=kept_i), k, t + ti * h, gi * h, params, u, axis_name,
                                      z0=z0, defer_floor=defer_floor)
            mats = None if mats is None else mats.at[i].set(new.newton)
            new = new._replace(newton=None)
            z_new = self.base.warm_start(new)
            p_start = jnp.where(i == 0, rec.p_start, p_start)
            carry = (new, jnp.maximum(err, rec.error), jnp.maximum(res, rec.constraint_residual),
                     its + rec.iterations, mu_sum + new.mu, p_start, zs.at[i].set(z_new), z_new, mats)
            return carry, None

        # mats: the kept matrices, each replaced by the one its sub-step used once that sub-step is solved
        carry0 = (base_state, jnp.zeros(()), jnp.zeros(()), jnp.zeros((), jnp.int32),
                  jnp.zeros_like(state.mu), state.p, z1, P[-1], conformed.newton)
        # one copy of the base step in the program (a scan), not one per sub-step: the compile stays that of one step
        (cur, err, res, its, mu_sum, p_start, zs, _, kept), _ = jax.lax.scan(
            sub, carry0, sub_step_inputs(gammas, P))
        ok = cur.status == Status.OK
        Q = self.system.Q
        xi_full = Q.inverse_retract(state.q, cur.q)
        xi_full = jnp.where(ok & jnp.all(jnp.isfinite(xi_full)), xi_full, state.xi)
        out = State(
            q=tree_where(ok, cur.q, state.q),
            p=jnp.where(ok, cur.p, state.p),
            xi=xi_full,
            mu=jnp.where(ok, mu_sum, state.mu),
            status=cur.status,
            fail_step=cur.fail_step,
            fail_error=cur.fail_error,
            fail_z=cur.fail_z,
            fail_kind=cur.fail_kind,
            stages=jnp.where(ok, cur.stages / gammas[-1], state.stages),
            history=jnp.where(ok, jnp.stack([zs, z1]), history),
            newton=kept,
        )
        record = StepRecord(
            p_start=p_start,
            xi=out.xi,
            mu=out.mu,
            error=err,
            iterations=its,
            constraint_residual=res,
            status=out.status,
        )
        return out, record


def adjoint_defect(system: LagrangeDiracSystem, q0: Any, v0: Any, h: float, scheme: Any = "split",
                   discrete_lagrangian: Any = "midpoint") -> dict[str, float | tuple[int, int]]:
    """How far one step map is from self-adjoint: ``Phi_{-h}(Phi_h(q0, p0)) - (q0, p0)``, measured.

    One step of ``h`` from ``(q0, p0 = dL/dv(q0, v0))`` and the step of
    ``-h`` back (Newton started from ``-xi``).

    Returns
    -------
    dict
        ``q``: ``|R_{q0}^{-1}(q0')|_inf``; ``p``: ``|p0' - p0|_inf``;
        ``p_delta``: the same on the constraint distribution ``Delta(q0)``
        (``|N^T (p0' - p0)|_inf``, ``N`` a basis of ``ker C(q0)``);
        ``impulse``: ``|C(q0)^T mu|_inf`` of the forward step; ``p_scale``:
        ``1 + |p0|_inf``; ``status``: the two steps' statuses (0: converged).
    """
    from .._run.integrator import Integrator  # (a run is one floor up: imported when called)

    integ = Integrator(system, h, scheme, discrete_lagrangian)
    st = integ.initial_state(q0, v0=v0).members
    f = jax.jit(integ.stepmap.step)
    s1, _ = f(st, np.int32(0), np.float64(0.0), np.float64(h), system.params)
    s2, _ = f(s1._replace(xi=-s1.xi), np.int32(1), np.float64(h), np.float64(-h), system.params)
    dp = np.asarray(s2.p - st.p)
    m = system.n_constraints
    if m:
        C = np.asarray(system.constraint_matrix(st.q, system.params))
        N = np.linalg.svd(C)[2][m:].T
        p_delta = float(np.max(np.abs(N.T @ dp), initial=0.0))
        impulse = float(np.max(np.abs(C.T @ np.asarray(s1.mu))))
    else:
        p_delta, impulse = float(np.max(np.abs(dp))), 0.0
    return {"q": float(jnp.max(jnp.abs(system.Q.inverse_retract(st.q, s2.q)))), "p": float(np.max(np.abs(dp))),
            "p_delta": p_delta, "impulse": impulse, "p_scale": 1.0 + float(np.max(np.abs(np.asarray(st.p)))),
            "status": (int(s1.status), int(s2.status))}
