"""The documentation runs: its Python examples execute and the site builds strictly.

* Every fenced ```python block of the pages in ``RUN`` is executed, the
  blocks of one page in order in one namespace (a page reads like a
  session). A block tagged ```python notest is shown but not run (long
  measurements whose output the page quotes).
* ``mkdocs build --strict`` into a temporary directory, when mkdocs is
  installed (the ``docs`` extra). Pages named in the nav that other work has
  not written yet get a placeholder in the temporary copy only.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RUN = (
    "getting-started.md", "schemes.md", "derivatives.md", "interconnection.md",
    "tutorials/rigid-body.md", "tutorials/vehicle.md", "tutorials/retraction-study.md", "sweeps.md", "differentiable.md",
)

_FENCE = re.compile(r"^```python([^\n]*)\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks(page: str) -> list[tuple[int, str, str]]:
    """``(line, tag, code)`` of each fenced python block of ``docs/page``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    return [(text[: m.start()].count("\n") + 1, m.group(1).strip(), m.group(2)) for m in _FENCE.finditer(text)]


def test_the_pages_have_examples():
    for page in RUN:
        assert [b for b in python_blocks(page) if b[1] != "notest"], f"{page} has no runnable python block"


@pytest.mark.parametrize("page", RUN)
def test_python_blocks_run(page, tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page}"}
    for line, tag, code in python_blocks(page):
        if tag == "notest":
            continue
        assert tag == "", f"docs/{page}:{line}: unknown tag {tag!r} (use ```python or ```python notest)"
        try:
            exec(compile(code, f"docs/{page}:{line}", "exec"), namespace)  # noqa: S102 - running the docs is the test
        except Exception as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"the python block at docs/{page}:{line} failed: {exc!r}") from exc
    try:
        import matplotlib.pyplot as plt

        plt.close("all")
    except ImportError:
        pass


def _nav_pages(config: str) -> list[str]:
    return re.findall(r":\s*([\w./-]+\.md)\s*$", config, re.MULTILINE)


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    site = tmp_path / "site"
    work = tmp_path / "src"
    work.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", work / "mkdocs.yml")
    shutil.copytree(DOCS, work / "docs")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    missing = [p for p in _nav_pages(config) if not (work / "docs" / p).exists()]
    for p in missing:  # placeholders in the temporary copy only
        (work / "docs" / p).parent.mkdir(parents=True, exist_ok=True)
        (work / "docs" / p).write_text(f"# {p}\n\n(not written yet)\n", encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(work / "mkdocs.yml"), "-d", str(site)],
        capture_output=True, text=True, check=False, env=env, cwd=work, timeout=120,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed (placeholders for {missing}):\n{proc.stderr}{proc.stdout}"
    assert (site / "index.html").exists()
    assert (site / "api" / "mechanics" / "index.html").exists()
