"""A Ctrl-C swallowed by a garbage-collector callback during the import is raised afterwards."""

from __future__ import annotations

import sys

import pytest

from manifold_dirac._interrupts import kept_during_import


def _unraisable(exc: BaseException) -> None:
    """Report ``exc`` as Python does for an exception raised in a gc callback."""
    sys.unraisablehook(type("U", (), {"exc_type": type(exc), "exc_value": exc, "exc_traceback": None,
                                      "err_msg": "Exception ignored in", "object": None})())


def test_a_swallowed_ctrl_c_is_raised_after_the_block():
    with pytest.raises(KeyboardInterrupt, match="while importing"):
        with kept_during_import():
            _unraisable(KeyboardInterrupt())


def test_other_unraisable_exceptions_go_to_the_previous_hook_and_the_hook_is_restored(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    before = sys.unraisablehook
    with kept_during_import():
        _unraisable(ValueError("x"))
    assert [type(e) for e in seen] == [ValueError]
    assert sys.unraisablehook is before


def test_without_the_block_the_ctrl_c_is_only_reported(monkeypatch):
    """What the block guards against: Python's handling reports the KeyboardInterrupt and goes on."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))
    _unraisable(KeyboardInterrupt())  # nothing raised
    assert len(seen) == 1
