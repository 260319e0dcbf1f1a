"""Count ``typing.Any`` and mypy's errors per file of the package; write or check the baseline.

The baseline ``tests/data/typing_baseline.json`` is a ratchet that
``tests/test_typing.py`` holds: per file, the number of uses of ``Any`` and
the number of mypy errors may only shrink, and when they do the baseline is
rewritten so that the slack cannot be spent again::

    python tools/typing_baseline.py            # rewrite both (mypy takes ~20 s of CPU cold)
    python tools/typing_baseline.py --no-mypy  # the counts of Any only

mypy's counts depend on the versions of mypy and of the packages whose type
information it reads (jax, numpy, ...): the baseline records them, and the
test checks mypy's counts with the same releases installed, to the minor
version (:func:`changed_releases`: a patch release counts as the same, so
that a fresh install, which takes the newest patch of everything, still
checks; mypy and JAX to the exact version, :data:`EXACT_VERSIONS`; it is
skipped, saying so, after another upgrade, until the baseline is
rewritten).

A use of ``Any`` is the name ``Any`` (or ``typing.Any``) in the code, read
from the syntax tree: docstrings, comments and imports do not count; a string
annotation is parsed and its uses count. mypy runs with the settings of
``[tool.mypy]`` in ``pyproject.toml`` on the whole package.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "manifold_dirac"
BASELINE = ROOT / "tests" / "data" / "typing_baseline.json"
MYPY_OUTPUT = ["--no-error-summary", "--hide-error-context", "--no-color-output", "--show-error-codes",
               "--no-pretty"]
"""Output options of the mypy run (one line per error); the checks themselves are in pyproject.toml."""
TYPED_PACKAGES = ("mypy", "jax", "numpy", "matplotlib", "xarray", "distributed", "hypothesis")
"""The packages whose versions decide mypy's counts (mypy itself and the type information it reads)."""


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
    n = sum(1 for node in ast.walk(tree)
            if (isinstance(node, ast.Name) and node.id == "Any")
            or (isinstance(node, ast.Attribute) and node.attr == "Any"))
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


_ERROR = re.compile(r"^(?P<path>[^:\n]+\.py):\d+(?::\d+)?: error: ")


def parse_mypy(stdout: str) -> Counter[str]:
    """``{path: number of errors}`` from mypy's one-line-per-error output (notes left out)."""
    return Counter(m.group("path") for line in stdout.splitlines() if (m := _ERROR.match(line)))


def run_mypy(targets: Sequence[str | Path], cwd: Path = ROOT) -> Counter[str]:
    """Run mypy on ``targets`` (from ``cwd``, with its pyproject.toml); the errors per file.

    Raises
    ------
    RuntimeError
        When mypy itself fails (a crash, a bad option): exit status 2 or anything on stderr.
    """
    proc = subprocess.run([sys.executable, "-m", "mypy", *MYPY_OUTPUT, *map(str, targets)],
                          cwd=cwd, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or proc.stderr.strip():
        raise RuntimeError(f"mypy failed to run (exit {proc.returncode}):\n{proc.stderr}{proc.stdout[-2000:]}")
    return parse_mypy(proc.stdout)


def mypy_counts(package: Path = PACKAGE) -> dict[str, int]:
    """``{path: mypy errors}`` for every module of ``package`` (zeros kept)."""
    found = run_mypy([package.name], cwd=package.parent)
    return {path: found.get(path, 0) for path in any_counts(package)} | dict(found)


def versions() -> dict[str, str]:
    """The installed versions of :data:`TYPED_PACKAGES` (``"absent"`` for one not installed)."""
    from importlib import metadata

    out = {}
    for name in TYPED_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


EXACT_VERSIONS = ("mypy", "jax")
"""Packages compared to the exact version: mypy's own patches change its counts, and JAX ships typing changes
in patch releases (a 0.x version)."""


def release(name: str, version: str) -> tuple:
    """What of ``version`` decides mypy's counts: all of it for :data:`EXACT_VERSIONS`, else the release to the
    minor version (``"6.170.27" -> (6, 170)``); ``"absent"`` (or an unparsable version) stays itself."""
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(version)
    except InvalidVersion:
        return (version,)
    return (str(v),) if name in EXACT_VERSIONS else v.release[:2]


def changed_releases(recorded: Mapping[str, str], installed: Mapping[str, str]) -> list[str]:
    """The packages whose installed :func:`release` is not the recorded one, as ``"name a -> b"``."""
    return [f"{k} {recorded.get(k, 'absent')} -> {v}" for k, v in installed.items()
            if release(k, recorded.get(k, "absent")) != release(k, v)]


def compare(what: str, baseline: Mapping[str, int], current: Mapping[str, int]) -> tuple[list[str], list[str]]:
    """The ratchet: ``(worse, stale)`` lines for the files whose count of ``what`` went up, resp. down.

    A file missing from the baseline is allowed none; a file of the baseline that is gone counts as
    stale. Both lists empty: the baseline is exact.
    """
    worse = [f"{path}: {n} {what} (the baseline allows {baseline.get(path, 0)})"
             for path, n in sorted(current.items()) if n > baseline.get(path, 0)]
    stale = [f"{path}: {current.get(path, 0)} {what}, the baseline still says {n}"
             for path, n in sorted(baseline.items()) if current.get(path, 0) < n]
    return worse, stale


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--no-mypy", action="store_true", help="keep the recorded mypy counts, rewrite those of Any")
    args = ap.parse_args(argv)
    old = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    new = {"any": any_counts(), "mypy": old.get("mypy", {}) if args.no_mypy else mypy_counts()}
    new = {k: {p: n for p, n in v.items() if n} for k, v in new.items()}
    new["versions"] = old.get("versions", {}) if args.no_mypy else versions()
    BASELINE.write_text(json.dumps(new, indent=1, sort_keys=True) + "\n")
    for key in ("any", "mypy"):
        print(f"{key}: {sum(new[key].values())} in total (was {sum(old.get(key, {}).values())})")


if __name__ == "__main__":
    main()
