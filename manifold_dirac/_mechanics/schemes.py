"""The discrete Lagrange--Dirac schemes: (+) (52), (-) (53) and symmetric.

Each scheme turns one step ``k -> k+1`` into ``n + m`` equations in the
unknowns ``xi`` (``q_{k+1} = R_{q_k}(xi)``, the chart centred at ``q_k``) and
the multipliers ``mu``::

    r1 = p_in + D1 L_d(q_k, q_{k+1}) + f^- - G mu = 0     (n)
    r2 = c(xi) = 0                                         (m)
    p_out = D2 L_d(q_k, q_{k+1}) + f^+

=========  ===============================================  ==============  =====
scheme     discrete constraint ``c(xi)``                    reaction ``G``  order
=========  ===============================================  ==============  =====
plus       ``A(q_k) xi``                              (42+)  ``A(q_k)^T``    1
minus      ``-A(q_{k+1}) R_{q_{k+1}}^{-1}(q_k)``      (42-)  ``-A(q_k)^T``   1
symmetric  ``A(c) J_xi(xi/2) xi``, ``c = R_{q_k}(xi/2)``      ``A(q_k)^T``    2
split      as symmetric                                     half at each    2
                                                            end
=========  ===============================================  ==============  =====

* **plus** is (52): ``p_k = -D1 L_d + A(q_k)^T mu``, ``p_{k+1} = D2 L_d``.
* **minus** is (53) as a one-step map: the state carries the pre-momentum
  ``p~_k = D2 L_d(q_{k-1}, q_k)``; the step finds ``mu_k`` and reports
  ``p_k = p~_k + A(q_k)^T mu_k``, the momentum of (53d).
* **symmetric** keeps the reaction of (52) at ``q_k`` and evaluates the
  discrete constraint on the tangent of the retraction curve at its midpoint
  (``J_xi(xi/2) xi`` in the frame at ``c``; equal to ``xi`` for ``exp`` on a
  Lie group and on a vector space): the discrete Lagrange--d'Alembert
  equations with a symmetric discrete constraint (McLachlan & Perlmutter,
  J. Nonlinear Sci. 2006), second order and time-reversible for a symmetric
  rule and retraction.
* **split** is symmetric with the reaction impulse split between the two
  ends: ``r1 = p_in + D1 L_d + f^- - (1/2) A(q_k)^T mu`` and
  ``p_out = D2 L_d + f^+ + (1/2) A(q_{k+1})^T mu``. Its positions, and its
  momenta modulo the annihilator ``Delta°(q)`` of the constraint
  distribution, are those of ``symmetric`` (both solve the discrete
  Lagrange--d'Alembert equation ``D2 L_d(q_{k-1}, q_k) + D1 L_d(q_k,
  q_{k+1}) = A(q_k)^T mu~_k`` with the same discrete constraint); it differs
  in the ``Delta°`` part of the momentum, and only it is **self-adjoint** on
  ``T*Q``. ``symmetric`` is not: with ``L_d(q0, q1; h) = -L_d(q1, q0; -h)``
  the reverse step from ``(q_{k+1}, p_{k+1})`` returns ``(q_k, p_k - A(q_k)^T
  mu)`` (the reaction moves from the first end to the last), so
  ``Phi_{-h} o Phi_h = id`` holds only modulo ``Delta°`` -- which the map
  does not read, so it is self-adjoint on ``(q, p`` on ``Delta)``. The
  ``Delta°`` part of ``split``'s momentum is carried without the reaction
  (not ``dL/dv``); ``symmetric``'s is ``D2 L_d``. Both can be composed
  (``docs/composition.md``; Hairer, Lubich & Wanner, *Geometric Numerical
  Integration*, 2nd ed., II.3 and V.3).

A scheme is one small class: its discrete constraint, the sign of its
reaction, and whether it carries the pre-momentum; :func:`register_scheme`
makes a new one available by name. Without constraints all three reduce to
the variational integrator of ``L_d``.

**Holonomic constraints** ``g(q) = 0`` (``LagrangeDiracSystem(...,
holonomic=g)``, ``r`` of them) are the same for every scheme: ``r`` more
multipliers ``lam`` in ``mu = (mu_A, lam)``, the reaction ``dg(q_k)^T lam``
(with the scheme's sign) and the equations on positions::

    g(R_{q_k}(xi)) / |dg_i(q_k)| = 0                        (r)

(each row scaled by the norm of its differential at ``q_k``, a constant of
the step, so that it is a length in frame coordinates like ``c(xi)``). With
the momentum eliminated this is the constrained discrete Euler--Lagrange
equation ``D2 L_d(q_{k-1}, q_k) + D1 L_d(q_k, q_{k+1}) = dg(q_k)^T lam_k``,
``g(q_{k+1}) = 0`` (Marsden & West, Acta Numerica 2001, §3.5), i.e. SHAKE in
the retraction chart; its positions are those of RATTLE (Andersen 1983;
Leimkuhler & Skeel 1994), whose momentum projection is applied to the
reported points (:meth:`~manifold_dirac._mechanics.system.LagrangeDiracSystem.holonomic_projection`).
See ``docs/schemes.md``, "Holonomic constraints".
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import ClassVar, TypeVar, overload

import jax
import jax.numpy as jnp

from .._registry import Registry
from .._manifolds.base import Manifold
from .._types import Covector, Params, Point, Vector
from .rules import DiscreteLagrangian, RuleValue
from .small import mv, vm
from .system import LagrangeDiracSystem

__all__ = ["SCHEMES", "Minus", "Plus", "Scheme", "Split", "Symmetric", "get_scheme", "register_scheme"]


class Scheme(abc.ABC):
    """A discrete Lagrange--Dirac scheme (see the module docstring).

    Attributes
    ----------
    name : str
        Registry name.
    order : int
        Order with constraints and a symmetric rule and retraction (a lower
        bound: some systems do better, see ``docs/schemes.md``).
    symmetric : bool
        Whether the scheme is time-reversible with a symmetric rule and retraction.
    self_adjoint : bool
        Whether its one-step map on ``(q, p)`` is self-adjoint,
        ``Phi_{-h} o Phi_h = id``, with constraints and a self-adjoint rule
        and retraction (what a composition method needs; without
        constraints every scheme is the variational integrator of ``L_d``).
    reaction_sign : float
        ``G = reaction_sign * A(q_k)^T`` in ``r1``.
    carries_pre_momentum : bool
        Whether the state's momentum is the pre-momentum ``p~_k`` (minus).
    extra_nodes : tuple of float
        Nodes of the retraction curve whose geometry :meth:`discrete_constraint` needs.
    dirac_sign : {'+', '-'} or None
        The discrete Dirac structure whose membership is this scheme's step,
        for the independent route (:func:`~manifold_dirac.dirac.route.dirac_route`,
        :func:`~manifold_dirac.dirac.route.verify`): ``'+'``, (50) in the
        chart at ``q_k``; ``'-'``, (51) in the chart at ``q_{k+1}``. None
        (the default for a new scheme): ``verify`` checks the scheme's own
        step equations (:meth:`discrete_constraint`, :meth:`reaction`,
        :meth:`reported_momentum`) with the route's independent ``L_d``.
    dirac_midpoint : bool
        With ``dirac_sign='+'``: the structure's velocity condition is taken
        on the tangent of the retraction curve at its midpoint (the symmetric scheme).

    Notes
    -----
    A new scheme is a subclass with ``name``, ``order``, ``symmetric`` and
    :meth:`discrete_constraint` (and, as needed, ``reaction_sign``,
    ``carries_pre_momentum``, ``extra_nodes``), decorated by
    :func:`register_scheme`; the integrator, ``rollout`` and ``verify`` then
    accept its name.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> s = md.get_scheme("symmetric")
    >>> isinstance(s, md.Scheme), s.name, s.order
    (True, 'symmetric', 2)
    """

    name: ClassVar[str]
    order: ClassVar[int]
    symmetric: ClassVar[bool]
    self_adjoint: ClassVar[bool] = False
    reaction_sign: ClassVar[float] = 1.0
    carries_pre_momentum: ClassVar[bool] = False
    extra_nodes: ClassVar[tuple[float, ...]] = ()
    dirac_sign: ClassVar[str | None] = None
    dirac_midpoint: ClassVar[bool] = False

    @abc.abstractmethod
    def discrete_constraint(
        self, system: LagrangeDiracSystem, q0: Point, xi: Vector, ld: RuleValue, params: Params
    ) -> jax.Array:
        """``c(xi)`` of the one-forms ``A`` (``system.one_form_matrix``), shape ``(m,)``, at one point."""

    def constraint_residual(
        self, system: LagrangeDiracSystem, q0: Point, xi: Vector, ld: RuleValue, params: Params
    ) -> jax.Array:
        """All ``m + r`` constraint equations of the step: ``c(xi)`` and the scaled ``g(q_{k+1})``.

        ``g(q_{k+1}) / |dg_i(q_k)|`` row by row (the module docstring); just
        :meth:`discrete_constraint` without holonomic constraints.
        """
        c = self.discrete_constraint(system, q0, xi, ld, params) if system.n_one_forms else jnp.zeros(0)
        if not system.n_holonomic:
            return c
        G = system.holonomic_differential(q0, params)
        norm = jnp.sqrt(jnp.sum(G * G, axis=1))
        g = system.holonomic(ld.q1, params) / jnp.where(norm > 0, norm, 1.0)
        return jnp.concatenate([c.astype(g.dtype), g]) if system.n_one_forms else g

    def reaction(self, system: LagrangeDiracSystem, q0: Point, params: Params) -> jax.Array:
        """``G``, shape ``(n, m)``: ``r1 = ... - G mu``."""
        return self.reaction_sign * system.constraint_matrix(q0, params).T

    def outgoing_momentum(self, system: LagrangeDiracSystem, q1: Point, p_out: Covector, mu: jax.Array,
                          params: Params) -> Covector:
        """``p_{k+1}`` from ``D2 L_d + f^+`` (``p_out``) and the step's multipliers: ``p_out`` itself."""
        return p_out

    def reported_momentum(self, system: LagrangeDiracSystem, q0: Point, p_in: Covector, mu: jax.Array,
                          params: Params) -> Covector:
        """The momentum ``p_k`` at the start of a solved step."""
        if self.carries_pre_momentum and system.n_constraints:
            return p_in + vm(mu, system.constraint_matrix(q0, params))
        return p_in

    def order_with(self, rule: DiscreteLagrangian, Q: Manifold, constrained: bool = True) -> int:
        """Declared order with ``rule`` on ``Q``'s retraction (constrained by one-forms or not).

        Holonomic constraints alone do not lower the order: every scheme is
        then the constrained variational integrator of ``L_d`` (SHAKE/RATTLE),
        of the rule's order.
        """
        o = rule.order_on(Q)
        if constrained and rule.constrained_order is not None:
            o = min(o, rule.constrained_order)  # measured with constraints (docs/schemes.md)
        return o if (not constrained or self.symmetric) else min(o, self.order)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class Plus(Scheme):
    """(52): ``c(xi) = A(q_k) xi``, reaction ``A(q_k)^T mu``."""

    name = "plus"
    order = 1
    symmetric = False
    dirac_sign = "+"

    def discrete_constraint(self, system, q0, xi, ld, params):
        return mv(system.one_form_matrix(q0, params), xi)


class Minus(Scheme):
    """(53): ``c(xi) = -A(q_{k+1}) R_{q_{k+1}}^{-1}(q_k)``, carrying ``p~_k``."""

    name = "minus"
    order = 1
    symmetric = False
    reaction_sign = -1.0
    carries_pre_momentum = True
    dirac_sign = "-"

    def discrete_constraint(self, system, q0, xi, ld, params):
        return -mv(system.one_form_matrix(ld.q1, params), system.Q.inverse_retract(ld.q1, q0))


class Symmetric(Scheme):
    """``c(xi) = A(c) J_xi(xi/2) xi`` at the retraction midpoint ``c = R_{q_k}(xi/2)``."""

    name = "symmetric"
    order = 2
    symmetric = True
    extra_nodes = (0.5,)
    dirac_sign = "+"
    dirac_midpoint = True

    def discrete_constraint(self, system, q0, xi, ld, params):
        mid = ld.nodes[0.5]
        return mv(system.one_form_matrix(mid.point, params), mv(mid.Jxi, xi))


class Split(Symmetric):
    """``symmetric`` with the reaction split: ``(1/2) A(q_k)^T mu`` in ``r1``, ``(1/2) A(q_{k+1})^T mu`` in ``p_{k+1}``.

    Notes
    -----
    The step ``(q_k, p_k) -> (q_{k+1}, p_{k+1})`` solves, with ``C = [A; dg]``
    the one-forms and the differentials of the holonomic constraints::

        p_k + D1 L_d(q_k, q_{k+1}) + f^- - (1/2) C(q_k)^T mu = 0
        c(xi) = 0                           (symmetric's discrete constraint; g(q_{k+1}) = 0)
        p_{k+1} = D2 L_d(q_k, q_{k+1}) + f^+ + (1/2) C(q_{k+1})^T mu

    With a symmetric discrete Lagrangian, ``L_d(q0, q1; h) = -L_d(q1, q0;
    -h)``, and a discrete constraint that is the same seen from either end
    (a retraction that is a flow), the step of ``-h`` from ``(q_{k+1},
    p_{k+1})`` is solved by ``(q_k, p_k)`` with the same ``mu``: the map is
    self-adjoint (Hairer, Lubich & Wanner, *Geometric Numerical
    Integration*, 2nd ed., Def. II.3.1), so of even order, here 2. Eliminating
    ``p`` gives the discrete Lagrange--d'Alembert equation of ``symmetric``
    with ``mu~_k = (mu_k - mu_{k-1})/2`` (McLachlan & Perlmutter, J. Nonlinear
    Sci. 2006): both schemes give the same positions, and momenta equal
    modulo ``C(q)^T``; the split places the reaction impulse symmetrically,
    as the discrete forces of (24) are placed at the two ends.
    """

    name = "split"
    self_adjoint = True
    reaction_sign = 0.5

    def outgoing_momentum(self, system, q1, p_out, mu, params):
        return p_out + 0.5 * (system.constraint_matrix(q1, params).T @ mu)


def _check_scheme(name: str, cls: object) -> None:
    if not (isinstance(cls, type) and issubclass(cls, Scheme)):
        raise TypeError(f"register_scheme: give a Scheme subclass, got {cls!r}")


SCHEMES: Registry[type[Scheme]] = Registry("scheme", hint="add one with register_scheme", check=_check_scheme)
"""Every scheme class available by name (``scheme="symmetric"``)."""


_S = TypeVar("_S", bound="type[Scheme]")


@overload
def register_scheme(cls: None = None, *, overwrite: bool = False) -> Callable[[_S], _S]: ...
@overload
def register_scheme(cls: _S, *, overwrite: bool = False) -> _S: ...
def register_scheme(cls: _S | None = None, *, overwrite: bool = False) -> _S | Callable[[_S], _S]:
    """Make a :class:`Scheme` subclass available by its ``name``; a class decorator.

    ``@register_scheme`` or ``@register_scheme(overwrite=True)`` on the
    class, or ``register_scheme(cls)``; the class is returned unchanged.

    Parameters
    ----------
    cls : Scheme subclass, optional
        The class to register under its ``name`` (``scheme=name``). Without
        it, a decorator: ``@register_scheme(overwrite=True)``.
    overwrite : bool
        Replace another scheme of the same name.

    Returns
    -------
    type or callable
        ``cls``; without ``cls``, the decorator.

    Raises
    ------
    TypeError
        For something that is not a :class:`Scheme` subclass.
    ValueError
        For a name taken by another scheme (without ``overwrite``).

    Examples
    --------
    A scheme under a new name (here the split scheme again):

    >>> import manifold_dirac as md
    >>> @md.register_scheme
    ... class MySplit(type(md.get_scheme("split"))):
    ...     name = "my_split"
    >>> md.get_scheme("my_split").name                       # now usable as scheme="my_split"
    'my_split'
    >>> md.register_scheme(int)
    Traceback (most recent call last):
        ...
    TypeError: ...
    """
    if cls is None:
        return lambda c: register_scheme(c, overwrite=overwrite)
    _check_scheme("", cls)
    return SCHEMES.register(cls.name, cls, overwrite=overwrite)


def get_scheme(scheme: str | Scheme | type[Scheme]) -> Scheme:
    """A scheme instance from a name, a class or an instance.

    Parameters
    ----------
    scheme : str, Scheme subclass or Scheme
        A registered name (``"plus"``, ``"minus"``, ``"symmetric"``,
        ``"split"``, ...), a class (instantiated) or an instance (returned as
        it is).

    Returns
    -------
    Scheme

    Raises
    ------
    ValueError
        For an unknown name; the message lists the registered ones.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> md.get_scheme("plus").name, md.get_scheme(md.get_scheme("minus")).name
    ('plus', 'minus')
    >>> md.get_scheme("no_such_scheme")
    Traceback (most recent call last):
        ...
    ValueError: ...
    """
    if isinstance(scheme, Scheme):
        return scheme
    if isinstance(scheme, type) and issubclass(scheme, Scheme):
        return scheme()
    return SCHEMES.get(scheme)()


for _cls in (Plus, Minus, Symmetric, Split):
    register_scheme(_cls)
