"""The covering subsets of ``tests/_tiers.py``: every value of every axis in the default tier."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests._tiers import covering, covering_indices, slow_cases


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


def test_slow_cases_marks_the_named_cases_and_keeps_the_others():
    params = slow_cases(["a", "b", "c"], {"b"})
    assert [p.values for p in params] == [("a",), ("b",), ("c",)]
    assert [[m.name for m in p.marks] for p in params] == [[], ["slow"], []]
    tuples = slow_cases([("x", 1), ("y", 2)], {"y-2"})
    assert [p.values for p in tuples] == [("x", 1), ("y", 2)] and [bool(p.marks) for p in tuples] == [False, True]
    named = slow_cases([1.5, 2.5], {"big"}, ids=lambda v: "big" if v > 2 else "small")
    assert [p.id for p in named] == ["small", "big"] and [bool(p.marks) for p in named] == [False, True]


def test_slow_cases_refuses_a_name_that_is_no_case_two_cases_of_one_name_and_params():
    """Sensitivity: a renamed case cannot leave its old name in the slow set unnoticed."""
    with pytest.raises(ValueError, match=r"\['d'\] name no case"):
        slow_cases(["a", "b"], {"a", "d"})
    with pytest.raises(ValueError, match=r"\['a'\] name more than one case"):
        slow_cases(["a", "a", "b"], {"b"})
    with pytest.raises(TypeError, match="not pytest.param"):
        slow_cases(["a", pytest.param("b")], set())


def test_slow_cases_names_are_the_ids_pytest_shows():
    """The ids are the names, also for values pytest itself would name by position (a Path, an object)."""
    from pathlib import Path
    params = slow_cases([Path("x/a.py"), Path("x/b.py")], {"b"}, ids=lambda p: p.stem)
    assert [p.id for p in params] == ["a", "b"]
    assert [p.id for p in slow_cases([("x", 1), ("y", 2)], set())] == ["x-1", "y-2"]
