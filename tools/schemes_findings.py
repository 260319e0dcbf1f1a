"""The numbers of the "Measured findings" section of docs/schemes.md.

The page shows the script that measures them (tables (a)--(d): orders of the
schemes on the knife edge and the Chaplygin sled, the rules on a Lagrangian
linear in velocities); this tool runs that very block, so the page's code and
the tool cannot drift apart, after printing the machine and load.

Usage (from the repository root)::

    python tools/schemes_findings.py
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def findings_code() -> str:
    """The first ```python block of the section "## Measured findings" of docs/schemes.md."""
    page = (ROOT / "docs" / "schemes.md").read_text(encoding="utf-8")
    section = page[page.index("## Measured findings") :]
    return re.search(r"^```python[^\n]*\n(.*?)^```", section, re.DOTALL | re.MULTILINE).group(1)


def main() -> None:
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}"
    )
    exec(
        compile(findings_code(), "docs/schemes.md (Measured findings)", "exec"), {"__name__": "__findings__"}
    )


if __name__ == "__main__":
    main()
