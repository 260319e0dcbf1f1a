"""The cost table of docs/galerkin.md, from the results of ``benchmarks/higher_order.py``.

Reads ``benchmarks/results/higher_order.json`` (the heavy top over T = 1000 with the library's
``midpoint``, ``gauss4``, ``gauss6`` and scipy's DOP853; written by ``benchmarks/higher_order.py``
on a 2-core x86_64 Linux machine shared with other jobs) and prints the Markdown table the page
quotes, with the compile times of ``benchmarks/results/rule_compile.json`` (written by
``benchmarks/rule_compile.py``: fresh processes, cold and warm persistent cache; the
``compile`` entry of the first file was measured with whatever cache the run found, so it is
not quoted). ``tests/test_docs.py`` checks that the page holds exactly this output, so the page's numbers
change only with the results file.

Usage (from the repository root)::

    python tools/galerkin_table.py
"""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "higher_order.json"
COMPILE = ROOT / "benchmarks" / "results" / "rule_compile.json"


def table(results: dict | None = None, compile_results: dict | None = None) -> str:
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
    per_step: dict[str, list[float]] = {}
    for r in d["runs"]:
        rule = r["setting"].split()[0]
        if rule != "DOP853":
            per_step.setdefault(rule, []).append(r["cpu"] / r["n_steps_or_nfev"] * 1e6)
    lines.append("")
    lines.append("CPU time per step over these runs (µs): "
                 + ", ".join(f"`{k}` {min(v):.0f}–{max(v):.0f}" for k, v in per_step.items()) + ".")
    c = json.loads(COMPILE.read_text()) if compile_results is None else compile_results
    load = "–".join(f"{x:.0f}" for x in c["load_average"])
    lines.append("")
    lines.append(f"Compile of the step, {c['system']} (CPU seconds, {c['machine']}, load average {load}): "
                 "empty persistent cache "
                 + ", ".join(f"`{k}` {v['cold']['cpu']:.1f}" for k, v in c["rules"].items())
                 + "; loaded from the cache by a later process "
                 + ", ".join(f"`{k}` {v['warm']['cpu']:.1f}" for k, v in c["rules"].items()) + ".")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
