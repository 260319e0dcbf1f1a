"""Make the home page's figure by running the home page's example (``docs/index.md``).

The first ```python block of ``docs/index.md`` writes ``heavy_top.png``; this script runs it in a
temporary directory and copies the picture to ``docs/figures/home_heavy_top.png``, so the figure
is exactly what the code on the page draws.

Usage (from the repository root)::

    PYTHONPATH=$PWD python tools/home_figure.py
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def home_code() -> str:
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    return re.search(r"^```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE).group(1)


def main() -> None:
    os.environ.setdefault("MPLBACKEND", "Agg")
    out = ROOT / "docs" / "figures" / "home_heavy_top.png"
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            exec(compile(home_code(), "docs/index.md", "exec"), {"__name__": "home"})  # noqa: S102
        finally:
            os.chdir(cwd)
        shutil.copy(Path(tmp) / "heavy_top.png", out)
    print(out)


if __name__ == "__main__":
    main()
