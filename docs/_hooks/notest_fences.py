"""MkDocs hook (``hooks:`` in ``mkdocs.yml``; ``exclude_docs`` keeps it out of the site).

``on_page_markdown``: a fence tagged ```` ```python notest ```` (shown but not run by
``tests/test_docs.py``) is not a fenced code block for Python-Markdown, whose info string allows
one word; the page from there on rendered as a mix of prose and code. The tag is dropped for the
site (the markdown sources keep it for the tests).
"""

from __future__ import annotations

import re

_NOTEST = re.compile(r"^(\s*```python)[ \t]+notest[ \t]*$", re.MULTILINE)


def on_page_markdown(markdown: str, **kwargs) -> str:
    return _NOTEST.sub(r"\1", markdown)
