"""The README's two commands are the ones CI and the docs use, and its code runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def readme_commands():
    cmds = [line.strip() for line in README.splitlines() if line.startswith("    python3 -m venv")]
    assert len(cmds) == 2, cmds
    return cmds


def test_readme_starts_with_the_two_commands():
    tour, tests = readme_commands()
    assert tour.endswith("manifold-dirac tour") and "[tour]" in tour
    assert tests.endswith("-m pytest") and "[test]" in tests
    head = README.split("## ")[0]
    assert tour in head and tests in head


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text()
    assert readme_commands()[1] in ci.splitlines()


def test_docs_quote_the_same_commands():
    for page in ("index.md", "getting-started.md"):
        text = (ROOT / "docs" / page).read_text()
        for cmd in readme_commands():
            assert cmd in text, (page, cmd)


def test_readme_code_runs():
    ns: dict = {}
    for block in re.findall(r"```python\n(.*?)```", README, re.DOTALL):
        exec(compile(block, "README.md", "exec"), ns)  # noqa: S102
    assert ns["tr"].ok
    # the constrained example shows the physical slip (quoted 1.3e-3), not only the round-off residual
    assert 1.2e-3 < ns["tr"].slip.max() < 1.4e-3
    assert ns["tr"].constraint_residual.max() < 1e-15
