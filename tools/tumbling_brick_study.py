"""The rigid-body tutorial's order table of the tumbling brick: ``manifold-dirac study`` on it.

Runs ``manifold-dirac study tumbling_brick --schemes symmetric`` (every retraction
the system offers, the midpoint rule, the catalog's steps ``h = 0.02, 0.01, 0.005``
and ``T = 2``) into a temporary folder and prints the machine and the study's table
(observed order, error at the smallest step; errors do not depend on the machine).
About a minute of CPU (a few minutes on a loaded machine).

Usage (from the repository root)::

    python tools/tumbling_brick_study.py
"""

from __future__ import annotations

import datetime
import os
import platform
import tempfile
from pathlib import Path

import manifold_dirac as md


def main() -> int:
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}, "
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC"
    )
    with tempfile.TemporaryDirectory() as out:
        status = md.cli.main(
            ["study", "tumbling_brick", "--schemes", "symmetric", "--no-progress", "--out", out]
        )
        print((Path(out) / "table.md").read_text(encoding="utf-8"))
    return status


if __name__ == "__main__":
    raise SystemExit(main())
