"""Count ``typing.Any`` per file of the package and (optionally) mypy's errors; write the baseline.

The baseline ``tests/data/typing_baseline.json`` is a ratchet that
``tests/test_typing.py`` holds: per file, the number of uses of ``Any`` and
the number of mypy errors may only shrink. After a change that lowers a
count, rewrite it::

    python tools/typing_baseline.py            # counts of Any only (fast)
    python tools/typing_baseline.py --mypy     # and mypy's errors (~40 s cold)

A use of ``Any`` is a name ``Any`` (or ``typing.Any``) in the code, read from
the syntax tree: docstrings and comments do not count, an import does not
count, a string annotation is parsed and its uses count.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "manifold_dirac"
BASELINE = ROOT / "tests" / "data" / "typing_baseline.json"
MYPY_ARGS = ["--ignore-missing-imports", "--no-error-summary", "--hide-error-context",
             "--no-color-output", "--show-error-codes"]
"""The mypy invocation: third-party packages without type information are not followed."""


def _annotation_strings(tree: ast.AST) -> list[str]:
    """The string annotations of ``tree`` (``x: "Foo"``), to be parsed for their own uses."""
    out: list[str] = []
    for node in ast.walk(tree):
        anns: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            anns = [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x]
            anns.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            anns = [node.annotation]
        for ann in anns:
            if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                out.append(ann.value)
    return out


def count_any(source: str) -> int:
    """The number of uses of ``Any`` in a module's source (imports, docstrings and comments left out)."""
    tree = ast.parse(source)
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "Any":
            n += 1
        elif isinstance(node, ast.Attribute) and node.attr == "Any":
            n += 1
    for text in _annotation_strings(tree):
        try:
            n += count_any(text)
        except SyntaxError:
            pass
    return n


def any_counts(package: Path = PACKAGE) -> dict[str, int]:
    """``{path relative to the repository: uses of Any}`` for every module of ``package`` (zeros kept)."""
    return {p.relative_to(package.parent).as_posix(): count_any(p.read_text())
            for p in sorted(package.rglob("*.py"))}


_LINE = re.compile(r"^(?P<path>[^:]+\.py):\d+(?::\d+)?: error: .*\[(?P<code>[a-z-]+)\]$")


def mypy_counts(package: Path = PACKAGE) -> dict[str, int]:
    """``{path: mypy errors}`` for the package, zeros kept (mypy run in a subprocess)."""
    proc = subprocess.run([sys.executable, "-m", "mypy", *MYPY_ARGS, package.name],
                          cwd=package.parent, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or proc.stderr.strip():
        raise RuntimeError(f"mypy failed to run (exit {proc.returncode}):\n{proc.stderr}{proc.stdout}")
    found = Counter(m.group("path") for line in proc.stdout.splitlines() if (m := _LINE.match(line)))
    counts = {path: 0 for path in any_counts(package)}
    counts.update(found)
    return counts


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mypy", action="store_true", help="also run mypy and record its errors per file")
    args = ap.parse_args(argv)
    old = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    new = {"any": any_counts(), "mypy": mypy_counts() if args.mypy else old.get("mypy", {})}
    BASELINE.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n")
    for key in ("any", "mypy"):
        print(f"{key}: {sum(new[key].values())} in total (was {sum(old.get(key, {}).values())})")


if __name__ == "__main__":
    main()
