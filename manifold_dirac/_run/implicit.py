"""A function with a derivative rule of its own, as a JAX primitive: the rule holds at every order.

:func:`jax.custom_jvp` keeps its rule through one differentiation. A second
one (``jax.jacfwd(jax.grad(f))``, ``jax.hessian``) may meet the function
again where JAX's partial evaluation has inlined its primal implementation
and dropped the rule: ``lax.scan``'s reverse pass re-traces the loop's
forward part with the carried values unknown (to hoist its loop-invariant
residuals), and a ``custom_jvp`` call with an unknown input is then replaced
by its body. For a Newton solve that body is the iteration itself: the
second derivative goes through Newton's loop, and where a step's start is
accepted with no update (a warm start at the solution) that derivative is
zero instead of the implicit one (JAX 0.10; ``tests/mechanics/
test_implicit.py`` holds a small case).

A primitive is not inlined by partial evaluation. :func:`call` binds one
that holds the function traced once (its jaxpr, for evaluation and
lowering, which inline it into the compiled program as a ``custom_jvp``
call's lowering does) and the rule. The rule computes its primal outputs by
calling :func:`call` again, so that a further differentiation meets the
primitive and its rule again; its tangent outputs are ordinary (linear) JAX
operations, which reverse mode transposes.
"""
from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Callable, Hashable

import jax
from jax.extend.core import ClosedJaxpr, Primitive, jaxpr_as_fun
from jax.interpreters import ad, batching, mlir
from jax.tree_util import PyTreeDef

from .._types import PyTree

__all__ = ["Unsupported", "call"]


class Unsupported(Exception):
    """The function cannot be held by the primitive: it has side effects (``jax.debug.print``) or closes over a
    value traced outside it (a system built inside ``jax.jit``/``jax.vmap``); the caller falls back to a
    ``jax.custom_jvp`` (whose rule holds at the first order)."""


_implicit_p = Primitive("manifold_dirac_implicit")
_implicit_p.multiple_results = True


def call(fun: Callable, jvp: Callable, static: Hashable, *args: PyTree) -> PyTree:
    """``fun(static, *args)``, differentiated by ``jvp`` at every order.

    Parameters
    ----------
    fun : callable
        ``fun(static, *args) -> out`` (pytrees of arrays). Hashable (a
        module-level function): the traced jaxpr is cached on it, ``static``
        and the arguments' shapes.
    jvp : callable
        ``jvp(static, primals, tangents) -> (out, out_tangents)``, with
        ``primals`` and ``tangents`` the tuple ``args`` and its tangents
        (zeros where JAX has none). It computes ``out`` by calling
        :func:`call` again (so that the rule holds at the next order), and
        ``out_tangents`` with ordinary JAX operations, linear in
        ``tangents``.
    static : hashable
        Passed to ``fun`` and ``jvp`` as is (not traced).
    *args : pytrees of arrays

    Returns
    -------
    out : pytree
        ``fun(static, *args)``.
    """
    flat, in_tree = jax.tree.flatten(args)
    flat = [jax.numpy.asarray(x) for x in flat]
    avals = tuple((x.shape, x.dtype) for x in flat)
    jaxpr, out_tree = _trace(fun, static, in_tree, avals)
    outs = _implicit_p.bind(*flat, jaxpr=jaxpr, rule=_Rule(jvp, static, in_tree, out_tree, ()))
    return jax.tree.unflatten(out_tree, outs)


# traced functions, per ``static`` (a step map: dropped with it, so that a cache entry never keeps a system
# alive; a ``static`` that takes no weak reference, such as None, goes in a bounded cache of its own)
_TRACED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _trace(fun: Callable, static: Hashable, in_tree: PyTreeDef, avals: tuple) -> tuple[ClosedJaxpr, PyTreeDef]:
    try:
        per_static = _TRACED.setdefault(static, {})
    except TypeError:
        return _trace_unowned(fun, static, in_tree, avals)
    key = (fun, in_tree, avals)
    if key not in per_static:
        per_static[key] = _traced(fun, static, in_tree, avals)
    return per_static[key]


@functools.lru_cache(maxsize=64)
def _trace_unowned(fun: Callable, static: Hashable, in_tree: PyTreeDef, avals: tuple) -> tuple[ClosedJaxpr, PyTreeDef]:
    return _traced(fun, static, in_tree, avals)


def _traced(fun: Callable, static: Hashable, in_tree: PyTreeDef, avals: tuple) -> tuple[ClosedJaxpr, PyTreeDef]:
    out_tree = []

    def flat_fun(*flat):
        out = fun(static, *jax.tree.unflatten(in_tree, list(flat)))
        leaves, tree = jax.tree.flatten(out)
        out_tree.append(tree)
        return leaves

    jaxpr = jax.make_jaxpr(flat_fun)(*(jax.ShapeDtypeStruct(*a) for a in avals))
    if jaxpr.effects:
        raise Unsupported(f"{fun.__name__} has side effects ({jaxpr.effects})")
    if any(isinstance(c, jax.core.Tracer) for c in jaxpr.consts):
        raise Unsupported(f"{fun.__name__} closes over a value traced outside it")
    return jaxpr, out_tree[0]


@dataclasses.dataclass(frozen=True)
class _Rule:
    """The primitive's derivative rule (hashable: a parameter of the primitive), for the batch axes
    ``batched`` (one tuple of input axes per enclosing ``vmap``, outermost first; () unbatched)."""

    jvp: Callable
    static: Hashable
    in_tree: PyTreeDef
    out_tree: PyTreeDef
    batched: tuple

    def __call__(self, primals: list, tangents: list) -> tuple[list, list]:
        def unbatched(primals, tangents):
            args = jax.tree.unflatten(self.in_tree, list(primals))
            dargs = jax.tree.unflatten(self.in_tree, list(tangents))
            out, dout = self.jvp(self.static, args, dargs)
            return jax.tree.leaves(out), jax.tree.leaves(dout)

        f = unbatched
        for axes in reversed(self.batched):  # innermost first: each vmap maps the function built so far
            f = jax.vmap(f, in_axes=(list(axes), list(axes)))
        return f(list(primals), list(tangents))


def _abstract_eval(*avals, jaxpr: ClosedJaxpr, rule: _Rule):
    return jaxpr.out_avals


def _impl(*args, jaxpr: ClosedJaxpr, rule: _Rule):
    return jaxpr_as_fun(jaxpr)(*args)


def _eager(*args, jaxpr: ClosedJaxpr, rule: _Rule):
    """Outside ``jit``: the whole function compiled once (per jaxpr), not each of its operations dispatched."""
    return _compiled(jaxpr)(*args)


@functools.lru_cache(maxsize=32)  # eager calls only (outside jit); jax.clear_caches drops the executables
def _compiled(jaxpr: ClosedJaxpr) -> Callable:
    return jax.jit(jaxpr_as_fun(jaxpr))


def _jvp(primals, tangents, *, jaxpr: ClosedJaxpr, rule: _Rule):
    tangents = [ad.instantiate_zeros(t) for t in tangents]
    return rule(primals, tangents)


def _batch(args, dims, *, jaxpr: ClosedJaxpr, rule: _Rule):
    axes = tuple(d if isinstance(d, int) else None for d in dims)  # None: not mapped
    batched_jaxpr = _batched_jaxpr(jaxpr, axes, tuple((a.shape, a.dtype) for a in args))
    batched_rule = dataclasses.replace(rule, batched=(axes, *rule.batched))
    outs = _implicit_p.bind(*args, jaxpr=batched_jaxpr, rule=batched_rule)
    return outs, [0] * len(outs)


# vmapped jaxprs, per jaxpr (dropped with it)
_BATCHED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _batched_jaxpr(jaxpr: ClosedJaxpr, axes: tuple, avals: tuple) -> ClosedJaxpr:
    per_jaxpr = _BATCHED.setdefault(jaxpr, {})
    if (axes, avals) not in per_jaxpr:
        per_jaxpr[axes, avals] = jax.make_jaxpr(jax.vmap(jaxpr_as_fun(jaxpr), in_axes=axes))(
            *(jax.ShapeDtypeStruct(*a) for a in avals))
    return per_jaxpr[axes, avals]


_implicit_p.def_impl(_eager)
_implicit_p.def_abstract_eval(_abstract_eval)
ad.primitive_jvps[_implicit_p] = _jvp
batching.primitive_batchers[_implicit_p] = _batch
mlir.register_lowering(_implicit_p, mlir.lower_fun(_impl, multiple_results=True))
