"""MkDocs hook: facts written once in the repository, put into the pages at build time.

``{{ version }}`` in a page becomes the version in ``pyproject.toml`` (the one
the installed package reports as ``manifold_dirac.__version__``), and
``{{ license }}`` its licence, so the home page cannot disagree with them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

_FACTS: dict[str, str] = {}


def on_config(config: Any, **kwargs: Any) -> Any:
    root = Path(config["config_file_path"]).resolve().parent
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    _FACTS["version"] = project["version"]
    _FACTS["license"] = project["license"]["text"]
    return config


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    for key, value in _FACTS.items():
        markdown = markdown.replace("{{ " + key + " }}", value)
    return markdown
