"""The law-check run quoted on the "Adding a manifold" page, with the machine named.

Runs ``python -m manifold_dirac.testing manifold_dirac:SE3`` (every
retraction of the library's SE(3)), prints the machine and load average, then
the command's output and its CPU time: one line per retraction with the number of law checks
and their time (mostly compiling the law programs).

Usage (from the repository root)::

    python tools/law_check_times.py
"""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
        f"load {os.getloadavg()[0]:.1f}, python {platform.python_version()}"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-m", "manifold_dirac.testing", "manifold_dirac:SE3"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    print(out.stdout, end="")
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"CPU time of the command: {cpu.ru_utime + cpu.ru_stime:.1f} s; "
        f"load {os.getloadavg()[0]:.1f} at the end"
    )
    sys.exit(out.returncode)


if __name__ == "__main__":
    main()
