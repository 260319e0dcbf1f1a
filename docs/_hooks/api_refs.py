"""MkDocs hook: the docstrings' Sphinx roles become cross-references in the rendered pages.

The docstrings are numpydoc with Sphinx roles (``:class:`Trajectory```,
``:meth:`~Integrator.run```, ``:func:`manifold_dirac.dirac.verify```) and
double-backtick literals, which Markdown shows as they are. After each page
is converted to HTML (``on_page_content``) this hook

* turns ``:role:<code>target</code>`` into an autorefs cross-reference
  ``<autoref identifier="..." optional>``, the target resolved to the full
  path of the object it names (``~a.b.C`` shows ``C``), so mkdocs-autorefs
  links it to the object's entry in the API reference (or, for an object
  not rendered there, shows it as code without a link: optional references
  never fail the strict build);
* drops the roles and double backticks left inside code (parameter types
  such as ``callable ``q -> (n,)```` are shown as code already);
* names every object by its public path: each cross-reference on the page
  (the roles' and those mkdocstrings writes for parameter types and base
  classes) whose target is defined in a private module
  (``manifold_dirac._mechanics.step.State``) is pointed at the public path
  (``manifold_dirac.State``), where the reference shows the object; a
  reference to an object that is not public at all keeps its text and loses
  the link, so no link, anchor or tooltip names a private module.

The index of object paths comes from griffe (the static analysis
mkdocstrings uses), loaded once per build; the public paths from the running
package (``public_names.py``). Nothing in the sources changes.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:
    import public_names
finally:
    sys.path.pop(0)

ROLES = "class|meth|func|mod|attr|data|exc|obj|const|py:class|py:func|py:meth"
_ROLE_CODE = re.compile(rf":(?:{ROLES}):<code>(?P<target>[^<]+)</code>")
_CODE = re.compile(r"<code>(?P<body>.*?)</code>", re.DOTALL)
_ROLE_TEXT = re.compile(rf":(?:{ROLES}):`(?P<target>[^`]+)`")

_INDEX: dict[str, str] = {}  # object path (aliases included) -> canonical path
_BY_NAME: dict[str, list[str]] = {}  # last component -> canonical paths
_PUBLIC: dict[str, str] = {}  # defining path -> public path


def _collect(obj: Any, seen: set[int]) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    for member in list(obj.members.values()):
        try:
            if member.is_alias:
                try:
                    _INDEX[member.path] = member.final_target.path
                except Exception:  # noqa: BLE001 - an import from outside the package
                    continue
                continue
            _INDEX[member.path] = member.path
            _BY_NAME.setdefault(member.name, []).append(member.path)
            if member.is_module or member.is_class:
                _collect(member, seen)
        except Exception:  # noqa: BLE001 - a member griffe cannot analyse is skipped
            continue


def on_config(config: Any, **kwargs: Any) -> Any:
    import griffe

    root = Path(config["config_file_path"]).resolve().parent
    package = griffe.load("manifold_dirac", search_paths=[str(root)], resolve_aliases=True,
                          resolve_external=False, extensions=griffe.load_extensions(public_names.PublicNames()))
    _INDEX.clear()
    _BY_NAME.clear()
    _PUBLIC.clear()
    _PUBLIC.update(public_names.public_paths())
    _INDEX[package.path] = package.path
    _collect(package, set())
    return config


def resolve(target: str, context: str = "") -> str | None:
    """The canonical path of the object a Sphinx role names, or None.

    ``context`` is the path of the object whose docstring holds the role: among
    several objects of that name, the one nearest to it (longest common prefix) wins.
    """
    t = target.strip().lstrip("~!").strip("()")
    t = t.replace("manifold_dirac.sweep.", "manifold_dirac._sweep.")
    if t in _INDEX:
        return _INDEX[t]
    t = t.lstrip(".")
    if f"manifold_dirac.{t}" in _INDEX:
        return _INDEX[f"manifold_dirac.{t}"]
    head, _, rest = t.partition(".")
    candidates = [p for p in _BY_NAME.get(t.rsplit(".", 1)[-1], []) if p.endswith("." + t)]
    # an alias then a member: Integrator.run
    if not candidates and rest and f"manifold_dirac.{head}" in _INDEX:
        base = _INDEX[f"manifold_dirac.{head}"]
        if f"{base}.{rest}" in _INDEX:
            return _INDEX[f"{base}.{rest}"]
    if not candidates:
        return None

    def shared(p: str) -> int:
        a, b = p.split("."), context.split(".")
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        return n

    return min(candidates, key=lambda p: (-shared(p), p.count("."), p))


def public(path: str) -> str | None:
    """The public path of the object at ``path`` (or of a member of it), or None if it has none.

    ``manifold_dirac._mechanics.integrate.Integrator.run`` -> ``manifold_dirac.Integrator.run``;
    a path outside the package is returned as it is (``jax.Array``).
    """
    if not path.startswith("manifold_dirac"):
        return path
    parts = path.split(".")
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in _PUBLIC:
            path = ".".join([_PUBLIC[head], *parts[n:]])
            break
    return None if any(p.startswith("_") for p in path.split(".")) else path


def _title(target: str) -> str:
    t = html.unescape(target.strip())
    if t.startswith("~"):
        t = t[1:].rsplit(".", 1)[-1]
    return t.lstrip("!.")


_ANCHOR = re.compile(r'id="(manifold_dirac[\w.]*)"')


def _role(match: re.Match, context: str = "") -> str:
    target = html.unescape(match["target"])
    title = _title(target)
    path = resolve(target, context)
    if path is not None and title.startswith("manifold_dirac."):  # a full path shown: show the public one
        title = public(path) or title.rsplit(".", 1)[-1]
    title = html.escape(title)
    if path is None:
        return f"<code>{title}</code>"
    return f'<autoref identifier="{html.escape(path)}" optional><code>{title}</code></autoref>'


def _inside_code(match: re.Match) -> str:
    body = match["body"].replace("``", "")
    body = _ROLE_TEXT.sub(lambda m: _title(m["target"]), body)
    return f"<code>{body}</code>"


def rewrite(text: str) -> str:
    """The HTML of a page with its Sphinx roles as cross-references and no double backticks in code."""
    anchors = [(m.start(), m.group(1)) for m in _ANCHOR.finditer(text)]

    def role(match: re.Match) -> str:  # the object whose docstring this is: the last anchor before it
        context = ""
        for pos, path in anchors:
            if pos > match.start():
                break
            context = path
        return _role(match, context)

    text = _ROLE_CODE.sub(role, text)
    text = _AUTOREF.sub(_publish, text)
    return _CODE.sub(_inside_code, text)


_AUTOREF = re.compile(r'<autoref identifier="(?P<id>[^"]*)"(?P<rest>[^>]*)>(?P<body>.*?)</autoref>', re.DOTALL)


def _publish(match: re.Match) -> str:
    """A cross-reference pointed at the public path of its target, or its bare text if it has none."""
    path = public(html.unescape(match["id"]))
    if path is None:
        return match["body"]
    return f'<autoref identifier="{html.escape(path)}"{match["rest"]}>{match["body"]}</autoref>'


def on_page_content(html_text: str, **kwargs: Any) -> str:
    return rewrite(html_text)
