"""The covering subsets of ``tests/_tiers.py``: every value of every axis in the default tier."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._tiers import covering, covering_indices


def test_a_square_matrix_keeps_a_diagonal_and_marks_the_rest_slow():
    params = covering(["plus", "minus", "symmetric"], ["midpoint", "trapezoid", "rectangle+"])
    kept = [p.values for p in params if not p.marks]
    assert len(params) == 9 and len(kept) == 3
    assert {k[0] for k in kept} == {"plus", "minus", "symmetric"}
    assert {k[1] for k in kept} == {"midpoint", "trapezoid", "rectangle+"}
    assert all(m.name == "slow" for p in params if p.marks for m in p.marks)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_every_value_of_every_axis_is_kept(sizes):
    cases = list(itertools.product(*(range(n) for n in sizes)))
    kept = [cases[i] for i in covering_indices(cases)]
    for axis, n in enumerate(sizes):
        assert {k[axis] for k in kept} == set(range(n))
    assert len(kept) == max(sizes)  # a product's greedy cover is as small as its longest axis


def test_a_cover_that_drops_a_value_is_caught():
    """Sensitivity: the check above fails for a subset that misses one value."""
    cases = list(itertools.product(range(3), range(2)))
    kept = [cases[i] for i in covering_indices(cases)][:-1]
    with pytest.raises(AssertionError):
        assert {k[0] for k in kept} == {0, 1, 2} and {k[1] for k in kept} == {0, 1}


def test_given_cases_are_covered_as_listed():
    cases = [("a", 1), ("a", 2), ("b", 1)]
    kept = [p.values for p in covering(cases=cases) if not p.marks]
    assert {k[0] for k in kept} == {"a", "b"} and {k[1] for k in kept} == {1, 2}
