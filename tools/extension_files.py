"""How many files a new rule, scheme, retraction or group touches: measured by doing it.

Each extension below is one file outside the package -- a test file of the repository, or the
worked example of ``docs/adding-a-manifold.md`` written to a temporary file -- run in a fresh
interpreter against the package as it is. The script checks that the run succeeds, counts the files
of ``manifold_dirac/`` that changed (none should), and prints the table quoted in
``docs/architecture.md``::

    python tools/extension_files.py

(minutes: each run compiles its integrator or laws afresh).
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "adding-a-manifold.md"

RUN_GROUP = """
import numpy as np
import jax.numpy as jnp
import manifold_dirac as md

H = Heisenberg("exp")
sysm = md.LagrangeDiracSystem(H, lambda q, v: 0.5 * v @ v, name="free-heisenberg")
tr = md.integrate(sysm, H.identity(), v0=np.array([0.3, -0.2, 0.1]), h=0.1, n_steps=5)
assert tr.ok
print("integrated 5 steps on", H)
"""


def _block(marker: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    m = re.search(rf"<!-- {marker} -->\n```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    if not m:
        raise SystemExit(f"extension_files: {GUIDE.name} has no block marked <!-- {marker} -->")
    return m.group(1)


def _package_state() -> dict[str, str]:
    """``{path: content}`` of every file of the package (to count the files a run changes)."""
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in (ROOT / "manifold_dirac").rglob("*.py")}


def _run(cmd: list[str]) -> tuple[bool, float, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t = time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    return out.returncode == 0, time.perf_counter() - t, (out.stdout + out.stderr).strip().splitlines()[-1:]


def main() -> None:
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-o", "addopts=", "-p", "no:cacheprovider"]
    with tempfile.TemporaryDirectory() as tmp:
        retraction = Path(tmp) / "my_retraction.py"
        retraction.write_text(_block("guide-retraction"))
        group = Path(tmp) / "heisenberg.py"
        group.write_text(_block("guide-code") + "\n" + RUN_GROUP)
        cases = [
            ("a discrete Lagrangian of a new kind", "tests/mechanics/test_rule_contract.py",
             pytest + ["tests/mechanics/test_rule_contract.py", "-k", "particle-symmetric"]),
            ("a scheme", "tests/interconnection/test_verify_any_scheme.py",
             pytest + ["tests/interconnection/test_verify_any_scheme.py", "-k", "verified_through_its_own_members"]),
            ("a retraction of a built-in group (SE(2))", "docs/adding-a-manifold.md, 'A new retraction'",
             [sys.executable, str(retraction)]),
            ("a new group (Heisenberg), with its registration for the law tests",
             "docs/adding-a-manifold.md, worked example", [sys.executable, str(group)]),
        ]
        before = _package_state()
        rows = []
        for what, source, cmd in cases:
            ok, seconds, last = _run(cmd)
            after = _package_state()
            changed = sum(after.get(k) != v for k, v in before.items()) + len(set(after) - set(before))
            rows.append((what, source, ok, changed, seconds, last))
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} (1 min)\n")
    print("| extension | files written | package files changed | the file | it runs | seconds |")
    print("|---|---|---|---|---|---|")
    for what, source, ok, changed, seconds, _ in rows:
        print(f"| {what} | 1 | {changed} | {source} | {'yes' if ok else 'NO'} | {seconds:.0f} |")
    failed = [(w, last) for w, _, ok, changed, _, last in rows if not ok or changed]
    if failed:
        raise SystemExit(f"extension_files: failed: {failed}")


if __name__ == "__main__":
    main()
