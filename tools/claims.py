"""Where every measured number of the documentation comes from.

A measured number (a timing, a speed ratio, a compile time; an error size, a measured
order or slope) in ``docs/*.md``
or ``README.md`` stands in a section that names the script regenerating it
with a comment marker, invisible in the rendered site::

    <!-- from: benchmarks/higher_order.py, tools/galerkin_table.py -->

A marker covers the section it stands in (from the heading above it to the
next heading). This tool lists, page by page, the scripts each page quotes
and the lines with a claim that no marker covers; ``tests/test_claims.py``
checks that every named script exists and that no claim is left uncovered.
What is not a measurement is not a claim: a parameter of an example
(``h = 0.05``, ``rtol 1e-12``), a code literal (a tolerance or default written
`` `1e-9` ``), a bound stated as a requirement (``≤ 10^{-9}``, "within 1e-8"),
an equation number of the paper and a version number; see ``is_accuracy_claim``.
A script named by a marker lives in ``benchmarks/`` or ``tools/`` (or is a test
of ``tests/`` that recomputes and asserts the number, or an example of
``examples/`` that prints it); the machine a number was measured on is named
next to it on the page.

Usage (from the repository root)::

    python tools/claims.py            # the per-page list; exit status 1 if anything is uncovered
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"<!--\s*from:\s*(.*?)\s*-->")
SOURCES = ("benchmarks/", "tools/", "tests/", "examples/")
_HEADING = re.compile(r"^#{1,6} ")
_PY_FENCE = re.compile(r"^```python")
# a timing claim: a duration in (micro/milli)seconds, a ratio written "3×", or a duration in
# seconds or minutes on a line that speaks of cost (so that a horizon "T = 10 s" is not one)
_SMALL_UNITS = re.compile(r"\d\s?(?:µs|us|ms|ns)\b")
_RATIO = re.compile(r"\d×|\d(?:\.\d+)?x (?:faster|slower)\b")
_SECONDS = re.compile(r"\d\s?(?:s|seconds?)\b")
_ALWAYS = re.compile(r"\d\s?(?:minutes?|min|hours?)\b|\(\d+(?:\.\d+)?\s?s\)")  # a run's length; "(5.0 s)"
_COST_WORDS = re.compile(
    r"CPU|wall|compil|cost|faster|slower|\btook\b|\btakes\b|speed|timing|throughput", re.IGNORECASE
)


# an accuracy claim: an error size in scientific notation (1.6e-3, 1.6 × 10⁻³, $1.6 \cdot 10^{-3}$), a
# measured order or slope with decimals ("order 3.97", "slope 1.86"), or an error word followed by a
# decimal. A bare power of ten ($10^{-6}$) is an accuracy level or a scale (a target, a domain's edge),
# not a measurement: a measured error is written with its mantissa.
_SCIENTIFIC = re.compile(r"\d(?:\.\d+)?\s?e[-+]?\d+\b|(?:×|\\times|\\cdot)\s?10\s?(?:\^|⁻|⁺|\d)")
_ORDER = re.compile(r"\b(?:orders?|slopes?)\b[^|.;]{0,25}?\d\.\d+", re.IGNORECASE)
_ERROR_NUMBER = re.compile(r"\berrors?\b[^|;]{0,40}?\d\.\d+", re.IGNORECASE)
# what is not a measurement, removed before the test: a parameter of an example (``h = 0.05``,
# ``rtol 1e-12``), a code literal (a tolerance or a default such as `1e-9`), a bound stated as a
# requirement (``≤ 10^{-9}``, "at least 1.5e-154", "within 1e-8"), an offset from a singular
# value (``\pi - 10^{-4}``), an equation number of the
# paper ("(3.12)", "eq. 4.7", "§5.2") and a version number ("jax 0.10", "0.2.0")
_NOT_MEASURED = re.compile(
    r"`[^`]*`"
    r"|\b(?:[A-Za-z_]\w*|\\[a-z]+)\s*(?:=|<|>|≤|≥|\\le|\\ge)\s*[-+]?\d[\d.,]*(?:\s?e[-+]?\d+)?"
    r"|\b(?:rtol|atol|tol|tolerances?)\s*=?\s*\d(?:\.\d+)?e[-+]?\d+"
    r"|(?:≤|≥|<|>|\\le|\\ge|\bat least|\bwithin|\bmore than|\babove|\bbelow)\s*\$?\s*\d[\d.]*"
    r"(?:\s?e[-+]?\d+|\^\{?[-+]?\d+\}?|\s?(?:\\cdot|×)?\s?10\^\{?[-+]?\d+\}?)?"
    r"|(?:\\pi|π)\s*(?:-|\\pm|±)\s*\d[\d.]*(?:e[-+]?\d+)?(?:\s?10\^\{?[-+]?\d+\}?)?"
    r"|\((?:eq\.?\s*)?\d+\.\d+[a-z]?\)|\b(?:eqs?\.|equations?|§)\s*\(?\d+(?:\.\d+)?"
    r"|\bv?\d+\.\d+\.\d+|\b(?:jax|numpy|python|numba|scipy|version)\s+\d+\.\d+",
    re.IGNORECASE,
)


def is_accuracy_claim(line: str) -> bool:
    """Whether a line of prose or a table row states a measured error size, order or slope.

    Parameters of an example, code literals (tolerances, defaults), bounds stated as requirements,
    equation numbers and version numbers are not measurements and are ignored.
    """
    rest = _NOT_MEASURED.sub(" ", line)
    return bool(_SCIENTIFIC.search(rest) or _ORDER.search(rest) or _ERROR_NUMBER.search(rest))


def is_timing_claim(line: str) -> bool:
    """Whether a line of prose states a measured duration or speed ratio."""
    if _SMALL_UNITS.search(line) or _RATIO.search(line) or _ALWAYS.search(line):
        return True
    return bool(_SECONDS.search(line) and _COST_WORDS.search(line))


@dataclass
class Page:
    """The markers and timing claims of one page."""

    path: Path
    scripts: list[str] = field(default_factory=list)
    claims: list[tuple[int, str]] = field(default_factory=list)
    uncovered: list[tuple[int, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def pages() -> list[Path]:
    """``README.md`` and every page of ``docs/`` (sorted)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def script_exists(ref: str) -> bool:
    """Whether a marker's reference (``path`` or ``tests/file.py::test_name``) exists."""
    path, _, name = ref.partition("::")
    if not path.startswith(SOURCES) or not (ROOT / path).is_file():
        return False
    return (
        not name
        or re.search(rf"^def {re.escape(name)}\(", (ROOT / path).read_text(encoding="utf-8"), re.MULTILINE)
        is not None
    )


def audit(path: Path) -> Page:
    """The page's markers, its timing claims and which of them no marker covers."""
    page = Page(path)
    sections: list[list[tuple[int, str]]] = [[]]
    covered: list[bool] = [False]
    in_python = False
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_python = not in_python and bool(_PY_FENCE.match(line))
            continue
        if in_python:
            continue
        if _HEADING.match(line):
            sections.append([])
            covered.append(False)
        for m in MARKER.finditer(line):
            covered[-1] = True
            for ref in (r.strip() for r in m.group(1).split(",")):
                page.scripts.append(ref)
                if not script_exists(ref):
                    page.missing.append(ref)
        text = MARKER.sub("", line)
        if is_timing_claim(text) or is_accuracy_claim(text):
            page.claims.append((i, line.strip()))
            sections[-1].append((i, line.strip()))
    for lines, ok in zip(sections, covered):
        if not ok:
            page.uncovered.extend(lines)
    return page


def main() -> int:
    bad = 0
    for path in pages():
        page = audit(path)
        if not (page.scripts or page.claims):
            continue
        print(
            f"{path.relative_to(ROOT)}: {len(page.claims)} measured line(s); from: "
            + (", ".join(dict.fromkeys(page.scripts)) or "-")
        )
        for ref in page.missing:
            print(f"  missing script: {ref}")
        for i, text in page.uncovered:
            print(f"  line {i} not covered: {text[:100]}")
        bad += len(page.missing) + len(page.uncovered)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
