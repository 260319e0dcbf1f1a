"""The process-wide table of compiled programs, keyed by what a system computes, not by the object.

A system built twice from the same functions (``systems.heavy_top()`` called
again, a copy with other ``params``) runs the programs compiled for the
first: :func:`structure_key` is a fingerprint of everything the compiled
step reads -- the manifold, the user's functions *by their code and the
values they close over* (closure cells, default arguments, and the module
globals their code names, recursively), constant one-forms, and whether the
system has ``params`` (their values are arguments of the programs, never
compiled in). Two systems with equal keys evaluate the same functions of the
same constants, so one program serves both. What the key cannot see -- an
object without a ``__dict__`` that is not a number, string, array, function,
type or module -- is keyed by identity (and kept alive by the table), which
at worst compiles again.

The table holds at most :data:`MAX_ENTRIES` programs (least recently used
dropped first): each program refers to the first system it was built for,
so a bounded table is what lets systems be freed.
"""

from __future__ import annotations

import functools
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["MAX_ENTRIES", "cached", "clear", "entries", "structure_key"]

MAX_ENTRIES = 64
"""Compiled programs kept (a run uses two: its start and its loop)."""

_TABLE: OrderedDict = OrderedDict()
_IGNORED_ATTRIBUTES = frozenset({"name", "params", "_compiled_functions", "_structure_key"})
"""System attributes that do not enter the compiled programs (``params`` are arguments)."""
_MAX_DEPTH = 40


class _Identity:
    """An object keyed by identity (kept alive while the key is)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any):
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


class _Fingerprint(tuple):
    """A fingerprint (a nested tuple) whose hash is computed once.

    It is hashed on every lookup of a system's programs (every ``integrate``
    call looks up two), and a nested tuple's hash is recomputed each time:
    tens of microseconds for a system with a few functions.
    """

    _hash: int

    def __new__(cls, parts: tuple) -> _Fingerprint:
        self = super().__new__(cls, parts)
        self._hash = tuple.__hash__(self)
        return self

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self) -> tuple:
        return (_Fingerprint, (tuple(self),))


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _global_names(c)
    return names


def structure_key(obj: Any) -> Any:
    """A hashable fingerprint of ``obj``: equal for objects that compute the same (see the module docstring).

    Kept on the object after the first call (an interconnected system's
    takes milliseconds to compute): a system's functions are fixed when it
    is built; only whether it has ``params`` is looked at again.
    """
    d = getattr(obj, "__dict__", None)
    flag = getattr(obj, "params", None) is None
    if d is not None:
        kept = d.get("_structure_key")
        if kept is not None and kept[0] == flag:
            return kept[1]
    key = _Fingerprint(_fp(obj, {}, 0))
    if d is not None:
        d["_structure_key"] = (flag, key)
    return key


def _fp(x: Any, active: dict, depth: int) -> Any:
    if x is None or isinstance(x, (bool, int, float, complex, str, bytes, np.generic)):
        return (type(x).__name__, x if not isinstance(x, float) or x == x else "nan")
    if depth > _MAX_DEPTH:
        return _Identity(x)
    if id(x) in active:  # a reference back to an object being fingerprinted (a bound method of a system)
        return ("cycle", active[id(x)])
    if isinstance(x, np.ndarray) or type(x).__module__.startswith(("jax", "jaxlib")) and hasattr(x, "__array__"):
        try:
            a = np.asarray(x)
        except Exception:  # noqa: BLE001  (a traced value: by identity)
            return _Identity(x)
        return ("array", a.shape, a.dtype.str, a.tobytes())
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, tuple(_fp(v, active, depth + 1) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple((_fp(k, active, depth + 1), _fp(v, active, depth + 1)) for k, v in x.items()))
    if isinstance(x, (type, types.ModuleType, types.BuiltinFunctionType)):
        return _Identity(x)
    active[id(x)] = len(active)
    try:
        if isinstance(x, types.FunctionType):
            code = x.__code__
            cells = tuple(_fp(c.cell_contents, active, depth + 1) if _filled(c) else ("empty",)
                          for c in (x.__closure__ or ()))
            g = x.__globals__
            glob = tuple((n, _fp(g[n], active, depth + 1)) for n in sorted(_global_names(code)) if n in g)
            return ("function", code, _fp(x.__defaults__, active, depth + 1),
                    _fp(x.__kwdefaults__, active, depth + 1), cells, glob)
        if isinstance(x, types.MethodType):
            return ("method", _fp(x.__func__, active, depth + 1), _fp(x.__self__, active, depth + 1))
        if isinstance(x, functools.partial):
            return ("partial", _fp(x.func, active, depth + 1), _fp(x.args, active, depth + 1),
                    _fp(x.keywords, active, depth + 1))
        try:
            hash(x)
            hashable_by_value = type(x).__eq__ is not object.__eq__
        except TypeError:
            hashable_by_value = False
        if hashable_by_value and not hasattr(x, "__dict__"):
            return ("value", type(x), x)
        d = getattr(x, "__dict__", None)
        if d is None:
            return ("value", type(x), x) if hashable_by_value else _Identity(x)
        attrs = tuple((k, _fp(v, active, depth + 1)) for k, v in sorted(d.items())
                      if k not in _IGNORED_ATTRIBUTES and not k.startswith("__"))
        return ("object", type(x), ("params is None", getattr(x, "params", None) is None), attrs)
    finally:
        del active[id(x)]


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018
    except ValueError:
        return False
    return True


def cached(key: tuple, build: Callable[[], Callable]) -> Callable:
    """The program of ``key`` from the table, built by ``build()`` on a miss."""
    fn = _TABLE.get(key)
    if fn is None:
        fn = _TABLE[key] = build()
        while len(_TABLE) > MAX_ENTRIES:
            _TABLE.popitem(last=False)
    else:
        _TABLE.move_to_end(key)
    return fn


def entries() -> list[tuple[tuple, Callable]]:
    """The ``(key, program)`` pairs in the table (least recently used first)."""
    return list(_TABLE.items())


def clear() -> None:
    """Drop every compiled program of the table."""
    _TABLE.clear()
