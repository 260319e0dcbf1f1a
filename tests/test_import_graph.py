"""The package's modules import each other without a circle, and the rule registry needs none.

The graph is read from the source (module-level imports, ``TYPE_CHECKING`` blocks and imports inside
functions left out; package ``__init__`` files left out, as they only re-export). A circle is a
strongly connected component of more than one module. The checker is shown to find a planted circle.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _module_name(path: Path, top: Path) -> str:
    parts = list(path.relative_to(top.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(top: Path) -> dict[str, set[str]]:
    """``{module: modules it imports at module level}`` for the package directory ``top``."""
    modules = {_module_name(p, top): p for p in top.rglob("*.py")}
    name = top.name

    def imports(mod: str, path: Path) -> set[str]:
        package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        out: set[str] = set()

        def visit(body: list[ast.stmt]) -> None:
            for st in body:
                if isinstance(st, ast.If) and "TYPE_CHECKING" in ast.unparse(st.test):
                    continue
                if isinstance(st, ast.If):
                    visit(st.body)
                    visit(st.orelse)
                elif isinstance(st, ast.Try):
                    visit(st.body)
                    for handler in st.handlers:
                        visit(handler.body)
                elif isinstance(st, ast.ImportFrom):
                    base = st.module or ""
                    if st.level:
                        parts = package.split(".")
                        base = ".".join(parts[:len(parts) - st.level + 1] + ([st.module] if st.module else []))
                    for alias in st.names:
                        sub = f"{base}.{alias.name}"
                        out.add(sub if sub in modules else base)
                elif isinstance(st, ast.Import):
                    out.update(a.name for a in st.names)

        visit(ast.parse(path.read_text()).body)
        return {m for m in out if m in modules and m != mod and m.split(".")[0] == name}

    return {m: imports(m, p) for m, p in modules.items()}


def circles(graph: dict[str, set[str]], leave_out: set[str]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan), ``leave_out`` removed."""
    nodes = [m for m in graph if m not in leave_out]
    edges = {m: [x for x in graph[m] if x not in leave_out] for m in nodes}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for v in nodes:
        if v not in index:
            connect(v)
    return found


def _packages(graph: dict[str, set[str]], top: Path) -> set[str]:
    return {m for m in graph if (top.parent / m.replace(".", "/") / "__init__.py").exists()}


def test_no_module_imports_itself_through_others():
    top = ROOT / "manifold_dirac"
    graph = import_graph(top)
    assert "manifold_dirac._mechanics.rules" in graph and graph["manifold_dirac._mechanics.galerkin"]
    assert circles(graph, _packages(graph, top)) == []
    assert "manifold_dirac._mechanics.galerkin" not in graph["manifold_dirac._mechanics.rules"]


def test_the_checker_finds_a_planted_circle(tmp_path):
    pkg = tmp_path / "planted"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import x\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import y\n"
                              "from . import a\nx = 1\n")
    (pkg / "c.py").write_text("def f():\n    from .a import x\n")
    graph = import_graph(pkg)
    assert graph["planted.b"] == {"planted.a"} and graph["planted.c"] == set()
    assert circles(graph, _packages(graph, pkg)) == [{"planted.a", "planted.b"}]


@pytest.mark.parametrize("module", ["manifold_dirac._mechanics.rules", "manifold_dirac._mechanics.galerkin"])
def test_each_rule_module_imports_alone_and_finds_every_rule(module):
    """In a fresh interpreter, importing either module alone gives the whole rule registry."""
    code = (f"import {module}\nfrom manifold_dirac._mechanics.rules import RULES, get_rule\n"
            "print(','.join(RULES.names())); get_rule('gauss4'); get_rule('midpoint')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "rectangle+,rectangle-,midpoint,trapezoid,gauss4,gauss6"
