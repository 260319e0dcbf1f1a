"""Which cases of a parametrized matrix run in the default tier, and which only with ``-m slow``.

A test over a matrix of cases (scheme x rule, system x field, ...) compiles a program per case, and
compiling is what the default run spends its time on. :func:`covering` keeps, in the default tier, a
*covering subset*: every value of every axis appears in at least one kept case (the greedy cover:
repeatedly the case with the most values not yet covered, ties in the given order). The other cases
are marked ``slow``: ``pytest -m slow`` runs them (the default run, the kept ones). A 3 x 3 matrix keeps 3 cases (a
diagonal), 4 x 5 keeps 5. Interactions between values of two axes are then tested in the slow tier
only; a test where an interaction is the point lists its cases itself.

The default tier has to fit CI's ten minutes on a fresh machine of two cores with an empty compilation cache.
There a test that compiles a program of its own costs seconds, so the tests and cases whose cold cost is 3 s
or more (measured with ``benchmarks/suite_profile.py``; ``docs/architecture.md``, "The test suite") are marked
``slow`` too: whole tests with ``@pytest.mark.slow``, cases with :func:`slow_cases`, a cheaper test or case of
the same file kept in the default tier. A test stays in the default tier whatever it costs where it is the
tier's only check of a promise (the typing ratchet, the docs' strict build, the tour, an ``integrate`` call's
two compilations, the library's XLA flag, an example run as a program, the heavy top against the NumPy engine
and its gradient against finite differences, the four-bar's closure, the rolling disk's composed order and
its steps in the discrete Dirac structure, discretizing and interconnecting commuting, the Cayley midpoint
refused as not self-adjoint, a step that does not converge, a sweep on processes, the fuzzing of
``integrate``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest


def covering_indices(cases: Sequence[tuple]) -> list[int]:
    """Indices of a greedy covering subset of ``cases`` (tuples of equal length), in the given order."""
    uncovered = {(axis, value) for case in cases for axis, value in enumerate(case)}
    kept: list[int] = []
    while uncovered:
        gain = [len({(a, v) for a, v in enumerate(case)} & uncovered) for case in cases]
        best = max(range(len(cases)), key=lambda i: (gain[i], -i))
        kept.append(best)
        uncovered -= {(a, v) for a, v in enumerate(cases[best])}
    return sorted(kept)


def covering(*axes: Sequence, cases: Sequence[tuple] | None = None) -> list:
    """``pytest.param`` for every case of the product of ``axes`` (or of the given ``cases``), those
    outside :func:`covering_indices` marked slow. Use with ``pytest.mark.parametrize("a,b", covering(A, B))``."""
    cases = [tuple(c) for c in (cases if cases is not None else itertools.product(*axes))]
    keep = set(covering_indices(cases))
    return [pytest.param(*c, marks=() if i in keep else pytest.mark.slow) for i, c in enumerate(cases)]


_PARAM = type(pytest.param(None))
"""The class of ``pytest.param``'s result (pytest does not export it)."""


def slow_cases(values: Sequence, slow: set | frozenset, ids=None) -> list:
    """``pytest.param`` for each of ``values``, marked slow where its name is in ``slow``: the cases of a test
    whose first compile costs the most, a cheaper case of the same test kept in the default tier.

    A tuple is one case of several arguments (``parametrize("a,b", ...)``). A case's name, which is also its
    pytest id, is ``ids(value)``, or its values joined by ``-``. A name in ``slow`` that names no case, two
    cases of one name, or a ``pytest.param`` among the values are errors, so that a renamed case cannot move
    silently."""
    if any(isinstance(v, _PARAM) for v in values):
        raise TypeError("slow_cases: pass plain values, not pytest.param (it makes the params itself)")

    def name(v) -> str:
        return ids(v) if ids else "-".join(map(str, v)) if isinstance(v, tuple) else str(v)

    names = [name(v) for v in values]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"slow_cases: {twice} name more than one case")
    unknown = set(slow) - set(names)
    if unknown:
        raise ValueError(f"slow_cases: {sorted(unknown)} name no case (the cases are {names})")
    return [pytest.param(*(v if isinstance(v, tuple) else (v,)), id=n, marks=pytest.mark.slow if n in slow else ())
            for v, n in zip(values, names)]
