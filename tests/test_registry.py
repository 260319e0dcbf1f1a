"""One registry convention: manifolds, retractions, discrete Lagrangians and schemes behave alike.

Each is registered with a decorator that returns what it decorates, refuses a taken name without
``overwrite=True``, answers an unknown name with a ``ValueError`` listing the valid ones, and lists
its names in registration order.
"""

from __future__ import annotations

import itertools

import pytest

from manifold_dirac._registry import Registry
from manifold_dirac._manifolds import SE2, Euclidean
from manifold_dirac._manifolds.lie_group import GroupRetraction
from manifold_dirac._mechanics.rules import RULES, QuadratureRule, get_rule, register_rule
from manifold_dirac._mechanics.schemes import SCHEMES, Plus, get_scheme, register_scheme
from manifold_dirac._manifolds.base import register_retraction
from manifold_dirac.testing import _REGISTRY as MANIFOLDS
from manifold_dirac.testing import register_manifold


def _scheme(name: str) -> type:
    return type(f"S_{name.replace('-', '_')}", (Plus,), {"name": name})


def _retraction(name: str) -> type:
    return type(f"R_{name.replace('-', '_')}", (GroupRetraction,), {"name": name})


# (registry, decorate(name, overwrite) -> decorator, make(name) -> object, registered value of it, lookup)
KINDS = {
    "manifold": (MANIFOLDS, lambda name, ow: register_manifold(name, overwrite=ow),
                 lambda name: (lambda: Euclidean(2)), lambda obj: obj, lambda name: MANIFOLDS.get(name)),
    "retraction": (SE2.retraction_registry(), lambda name, ow: register_retraction(SE2, overwrite=ow),
                   _retraction, lambda obj: obj, lambda name: SE2.retraction_registry().get(name)),
    "rule": (RULES, lambda name, ow: register_rule(overwrite=ow),
             lambda name, _n=itertools.count(): QuadratureRule(name, ((0.5, 1.0),), order=2, symmetric=True,
                                                                degenerate_safe=bool(next(_n) % 2)), lambda obj: obj,
             get_rule),
    "scheme": (SCHEMES, lambda name, ow: register_scheme(overwrite=ow), _scheme, lambda obj: obj,
               lambda name: type(get_scheme(name))),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_one_convention_everywhere(kind):
    registry, decorate, make, stored, lookup = KINDS[kind]
    assert isinstance(registry, Registry)
    name = f"conv-test-{kind}"
    first, second = make(name), make(name)
    try:
        assert decorate(name, False)(first) is first  # a decorator returns what it decorates
        assert lookup(name) is stored(first)
        assert registry.names()[-1] == name and name in registry
        decorate(name, False)(first)  # the same object again: a no-op
        assert first is not second and first != second
        with pytest.raises(ValueError, match=f"named '{name}' is already registered; pass overwrite=True"):
            decorate(name, False)(second)
        decorate(name, True)(second)
        assert lookup(name) is stored(second)
    finally:
        registry.unregister(name)
    with pytest.raises(ValueError, match=f"unknown .*'{name}'; valid: '.*(add one|register)"):
        lookup(name)
    with pytest.raises(ValueError, match=f"unknown .*'{name}'; valid:"):
        registry.unregister(name)


@pytest.mark.parametrize("kind", list(KINDS))
def test_wrong_objects_are_type_errors(kind):
    registry, decorate, *_ = KINDS[kind]
    before = registry.names()
    with pytest.raises(TypeError):
        decorate("conv-test-bad", False)(3)
    assert registry.names() == before


def test_a_subclass_may_replace_an_inherited_retraction():
    """A child registry starts with its parent's entries; those are replaceable without overwrite."""
    parent = Registry("thing", hint="add one with register_thing")
    parent.register("a", 1)
    child = parent.child()
    child.register("a", 2)  # inherited: replaced
    assert (parent["a"], child["a"]) == (1, 2)
    with pytest.raises(ValueError, match="already registered"):
        child.register("a", 3)  # now the child's own
    with pytest.raises(ValueError, match=r"unknown thing 'b'; valid: 'a' \(add one with register_thing\)"):
        child.get("b")
    assert child.get("b", None) is None
    with pytest.raises(TypeError, match="string name"):
        parent.register(1, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-empty name"):
        parent.register("", 1)


def test_a_rule_class_with_a_default_constructor_registers_its_instance():
    @register_rule
    class Left(QuadratureRule):
        def __init__(self):
            super().__init__("conv-test-left", ((0.0, 1.0),), order=1, symmetric=False)

    try:
        assert isinstance(get_rule("conv-test-left"), Left)
    finally:
        RULES.unregister("conv-test-left")
