"""The cost table of docs/galerkin.md, from the results of ``benchmarks/higher_order.py``.

Reads ``benchmarks/results/higher_order.json`` (the heavy top over T = 1000 with the library's
``midpoint``, ``gauss4``, ``gauss6`` and scipy's DOP853; written by ``benchmarks/higher_order.py``
on a 2-core x86_64 Linux machine shared with other jobs) and prints the Markdown table the page
quotes. ``tests/test_docs.py`` checks that the page holds exactly this output, so the page's numbers
change only with the results file.

Usage (from the repository root)::

    python tools/galerkin_table.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "higher_order.json"


def table(results: dict | None = None) -> str:
    """The Markdown table: one row a run, energy and global errors at T, steps, CPU time, speed-up."""
    d = json.loads(RESULTS.read_text()) if results is None else results
    lines = [
        f"| method, step | steps (DOP853: evaluations) | energy error over T = {d['T']:g} | error at T | CPU time of the run (s) | speed-up over DOP853 at the same energy error (wall time) |",
        "|---|---|---|---|---|---|",
    ]
    for r in d["runs"]:
        ratio = r.get("speedup_vs_DOP853_energy_error")
        lines.append(
            f"| `{r['setting']}` | {r['n_steps_or_nfev']} | {r['energy_error']:.1e} | {r['global_error']:.1e} | "
            f"{r['cpu']:.2f} | {'—' if ratio is None else f'{ratio:.1f}×'} |")
    c = d["compile"]
    lines.append("")
    lines.append("Compile (CPU seconds, once per system and rule): "
                 + ", ".join(f"`{k}` {v['cpu']:.1f}" for k, v in c.items()) + ".")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
