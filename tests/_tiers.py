"""Which cases of a parametrized matrix run in the default tier, and which only with ``-m slow``.

A test over a matrix of cases (scheme x rule, system x field, ...) compiles a program per case, and
compiling is what the default run spends its time on. :func:`covering` keeps, in the default tier, a
*covering subset*: every value of every axis appears in at least one kept case (the greedy cover:
repeatedly the case with the most values not yet covered, ties in the given order). The other cases
are marked ``slow``: ``pytest -m slow`` runs them (the default run, the kept ones). A 3 x 3 matrix keeps 3 cases (a
diagonal), 4 x 5 keeps 5. Interactions between values of two axes are then tested in the slow tier
only; a test where an interaction is the point lists its cases itself.
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
