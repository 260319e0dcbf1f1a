"""Typing ratchet: per file, the uses of ``Any`` and mypy's errors may only shrink.

The counts are in ``tests/data/typing_baseline.json``; ``python tools/typing_baseline.py`` rewrites
it after a change that lowers a count (the test fails until then, so that the slack cannot be spent
again). mypy's counts are checked with the versions of mypy, jax, numpy, ... that the baseline
records, to the minor version (a patch release counts as the same: a fresh install takes the newest patches;
the test says so when it skips after a minor or major upgrade). A file that is not in the baseline is allowed no ``Any`` and no mypy error. The counter and
the comparison are shown to catch a planted ``Any`` and a planted type error.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import typing_baseline as tb  # noqa: E402

HOW = "rewrite the baseline with `python tools/typing_baseline.py`"


USER_CODE = """
import jax.numpy as jnp
import numpy as np
import manifold_dirac as md

Q = md.Euclidean(3)
skate = md.LagrangeDiracSystem(
    Q, lambda q, v: 0.5 * (v @ v),
    constraint=lambda q, p: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]),
    force=lambda t, q, v: -v, params={"g": 2.0})
pendulum = md.LagrangeDiracSystem(Q, lambda q, v, p: p["g"] * q[0], params={"g": 1.0})
with_forms = md.LagrangeDiracSystem(Q, lambda q, v: v @ v, constraint=np.ones((1, 3)))
"""
"""User code against the public API: the documented forms of the user's functions."""


def _baseline() -> dict[str, dict[str, int]]:
    return json.loads(tb.BASELINE.read_text())


def _check(what: str, baseline: dict[str, int], current: dict[str, int], advice: str) -> None:
    worse, stale = tb.compare(what, baseline, current)
    if worse:
        pytest.fail(f"more {what} than the baseline allows:\n  " + "\n  ".join(worse) + f"\n{advice}")
    if stale:
        pytest.fail(f"fewer {what} than the baseline records (good): {HOW}\n  " + "\n  ".join(stale))


def test_count_any_reads_code_not_text():
    src = '''
from typing import Any
import typing
"""Any in a docstring does not count."""
x: Any = 1  # Any in a comment does not count
def f(a: "list[Any]", *args: typing.Any) -> dict[str, Any]:
    """Nor here: Any."""
'''
    assert tb.count_any(src) == 4
    assert tb.count_any(src.replace('a: "list[Any]"', "a: list[int]")) == 3


def test_compare_catches_an_increase_and_a_stale_baseline():
    base = {"a.py": 2, "b.py": 1}
    assert tb.compare("Any", base, {"a.py": 2, "b.py": 1, "c.py": 0}) == ([], [])
    worse, stale = tb.compare("Any", base, {"a.py": 3, "b.py": 1})
    assert worse == ["a.py: 3 Any (the baseline allows 2)"] and stale == []
    worse, _ = tb.compare("Any", base, {"a.py": 2, "b.py": 1, "new.py": 1})
    assert worse == ["new.py: 1 Any (the baseline allows 0)"]
    worse, stale = tb.compare("Any", base, {"a.py": 1})
    assert worse == [] and len(stale) == 2


def test_any_only_shrinks():
    _check("Any", _baseline()["any"], tb.any_counts(),
           "give a precise type (the aliases of manifold_dirac._types), or `object` for a value that is only "
           "inspected; Any only for values that really are arbitrary, said in a comment")


def test_parse_mypy_counts_errors_not_notes():
    out = ("manifold_dirac/a.py:3: error: Incompatible types  [assignment]\n"
           "manifold_dirac/a.py:3: note: See https://example\n"
           "manifold_dirac/b.py:10:5: error: Name \"x\" is not defined  [name-defined]\n"
           "manifold_dirac/a.py:7: error: Missing return  [return]\n")
    assert tb.parse_mypy(out) == {"manifold_dirac/a.py": 2, "manifold_dirac/b.py": 1}


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is in the test extra")
def test_mypy_errors_only_shrink(tmp_path):
    """One mypy run over the package and a planted file whose one type error it must report."""
    changed = tb.changed_releases(_baseline().get("versions", {}), tb.versions())
    if changed:
        pytest.skip(f"mypy's baseline was recorded with other releases ({', '.join(changed)}), and mypy counts "
                    f"differently with them; {HOW}")
    planted = tmp_path / "planted_type_error.py"
    planted.write_text("def f(x: int) -> str:\n    return x\n")
    good, bad = tmp_path / "user_code_good.py", tmp_path / "user_code_bad.py"
    good.write_text(USER_CODE)
    bad.write_text(USER_CODE.replace("lambda q, v: 0.5 * (v @ v)", "lambda q: 0.5")
                   .replace("force=lambda t, q, v: -v", "force=-1.0"))
    found = tb.run_mypy([tb.PACKAGE.name, planted, good, bad])
    errors = {name: sum(n for path, n in found.items() if path.endswith(name))
              for name in (planted.name, good.name, bad.name)}
    # the user's functions are typed by their signatures: a Lagrangian of one argument and a
    # constant force are refused, the documented forms pass
    assert errors == {planted.name: 1, good.name: 0, bad.name: 2}, found
    current = {path: n for path, n in found.items() if path.startswith(tb.PACKAGE.name + "/")}
    recorded, installed = _baseline().get("versions", {}), tb.versions()
    patches = ", ".join(f"{k} {recorded.get(k)} -> {v}" for k, v in installed.items() if recorded.get(k) != v)
    _check("mypy errors", _baseline()["mypy"], current,
           "fix the new type errors (run `python -m mypy manifold_dirac` to see them)"
           + (f"; or, if a patch release changed mypy's count ({patches}), {HOW}" if patches else ""))


def test_a_patch_release_checks_and_a_minor_one_skips():
    """CI installs the newest patch of every package: it must still check (it skipped at every new hypothesis
    patch, and 21 new mypy errors went unseen). A minor or major release, a package gone, or any new version of
    mypy or JAX is a change."""
    rec = {"hypothesis": "6.170.17", "numpy": "2.4.6", "jax": "0.10.2", "mypy": "2.4.1"}
    assert tb.changed_releases(rec, {**rec, "hypothesis": "6.170.27", "numpy": "2.4.7.post1"}) == []
    assert tb.changed_releases(rec, {**rec, "hypothesis": "6.171.0"}) == ["hypothesis 6.170.17 -> 6.171.0"]
    assert tb.changed_releases(rec, {**rec, "numpy": "2.5.0rc1"}) == ["numpy 2.4.6 -> 2.5.0rc1"]
    assert tb.changed_releases(rec, {**rec, "jax": "0.10.3"}) == ["jax 0.10.2 -> 0.10.3"]
    assert tb.changed_releases(rec, {**rec, "mypy": "2.4.3"}) == ["mypy 2.4.1 -> 2.4.3"]
    assert tb.changed_releases(rec, {**rec, "hypothesis": "absent"}) == ["hypothesis 6.170.17 -> absent"]


def _undocumented_aliases(source: str) -> list[str]:
    """Names of ``__all__`` in ``source`` whose assignment is not followed by a docstring."""
    import ast

    body = ast.parse(source).body
    public = next(ast.literal_eval(st.value) for st in body
                  if isinstance(st, ast.Assign) and getattr(st.targets[0], "id", "") == "__all__")
    documented = {
        st.target.id for st, nxt in zip(body, body[1:])
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)
        and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)
        and nxt.value.value.strip()
    }
    return sorted(set(public) - documented)


def test_every_alias_is_documented():
    assert _undocumented_aliases((ROOT / "manifold_dirac" / "_types.py").read_text()) == []
    planted = '__all__ = ["A", "B"]\nA: TypeAlias = int\n"""An int."""\nB: TypeAlias = str\n'
    assert _undocumented_aliases(planted) == ["B"]
