"""The public path of every documented object, for the API reference.

The package defines its objects in private modules (``manifold_dirac._mechanics.step.State``)
and users reach them under a public path (``manifold_dirac.State``, ``md.State``). The
reference shows only public paths:

* :class:`PublicNames` is a griffe extension (loaded by mkdocstrings): it makes every
  public name of the package an alias of the object the running package binds to it, so
  ``::: manifold_dirac.sweep`` renders the function under that heading. Static analysis
  alone gets two cases wrong: the names imported on first use (``md.sweep``, the
  ``plot_*`` functions: a module ``__getattr__``), and a function named like the module
  that defines it (``md.integrate``, which static analysis takes for the submodule).
* :func:`public_paths` maps the path where an object is defined to its public path;
  the ``api_refs`` hook rewrites cross-references with it, so links, anchors and tooltips
  name ``manifold_dirac.State``, never the private module.

Both read the running package (``__all__`` of ``manifold_dirac`` and of its public
submodules), the one place the public surface is written.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import griffe

PACKAGE = "manifold_dirac"
ROOT = Path(__file__).resolve().parents[2]


def _package() -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return importlib.import_module(PACKAGE)


def public_namespaces() -> dict[str, Any]:
    """``{public module path: module}``: the package and its public submodules."""
    md = _package()
    out = {PACKAGE: md}
    for name in md.__all__:
        value = getattr(md, name)
        if isinstance(value, type(md)):
            out[f"{PACKAGE}.{name}"] = value
    return out


def defined_at(value: Any) -> str | None:
    """The path where a class or function is defined (``module.qualname``), or None."""
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or "<" in qualname:
        return None
    return f"{module}.{qualname}"


def public_objects() -> dict[str, str]:
    """``{public path: defining path}`` for every class and function of the public surface."""
    out = {}
    for path, module in public_namespaces().items():
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type(module)):
                continue
            target = defined_at(value)
            if target is not None and target.startswith(PACKAGE + "."):
                out[f"{path}.{name}"] = target
    return out


def public_paths() -> dict[str, str]:
    """``{defining path: public path}``.

    An object public where it is defined (``manifold_dirac.plotting.plot_trajectory``) keeps
    that path; one defined in a private module takes its shortest public path.
    """
    objects = public_objects()
    out: dict[str, str] = {}
    for public, target in sorted(objects.items(), key=lambda kv: (kv[0].count("."), kv[0])):
        out.setdefault(target, target if target in objects else public)
    return out


class PublicNames(griffe.Extension):
    """Binds each public name to the object the running package binds it to."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        if pkg.path != PACKAGE:
            return
        for public, target in public_objects().items():
            parent_path, _, name = public.rpartition(".")
            parent = pkg if parent_path == PACKAGE else pkg.members.get(parent_path.removeprefix(PACKAGE + "."))
            if parent is None or target == public:
                continue
            member = parent.members.get(name)
            if member is not None and member.is_alias and member.target_path == target:
                continue
            parent.set_member(name, griffe.Alias(name, target, parent=parent))
