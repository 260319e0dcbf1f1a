"""The tables and figures of docs/performance.md, generated from the benchmark results files.

Each table of the page sits between ``<!-- table: NAME -->`` and ``<!-- end table -->``; this
script renders every such block from ``benchmarks/results/`` (machine, load and date come from
the results file itself) and, with ``--write``, puts them into the page; ``--check`` fails if the
page differs from what the results files say; ``--figures`` redraws the page's figures.
``tests/test_benchmarks_smoke.py`` runs the check, so the page's numbers change only with the
results files. Re-measure, then regenerate:

    python benchmarks/all_systems.py --before DIR   # DIR: a checkout of the previous version
    python benchmarks/tour.py
    python benchmarks/sweep_scaling.py --only scaling
    python tools/performance_tables.py --write --figures
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
PAGE = ROOT / "docs" / "performance.md"
FIGURES = ROOT / "docs" / "figures"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BLOCK = re.compile(r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>(?:(?!<!-- table:).)*?)\n?(<!-- end table -->)", re.S)
COLD_TARGET_S, CACHE_TARGET_S = 3.0, 0.5


def _load(name: str, results: Path) -> dict | None:
    p = results / name
    return json.loads(p.read_text()) if p.exists() else None


def _missing(command: str) -> str:
    return f"*Not measured yet: run `{command}`.*"


def _machine(meta: dict, load_end: list | None = None) -> str:
    lo = meta.get("load") or []
    span = f"{lo[0]:.1f}" if lo else "not recorded"
    if load_end:
        span += f" at the start, {load_end[0]:.1f} at the end"
    return (f"{meta['cpu']}, {meta['cores']} cores, {meta['os']}, Python {meta['python']}, jax {meta['jax']}; "
            f"load average (1 min) {span}; {meta['date']}")


def _loaded(meta: dict, loads: list) -> str:
    """A warning when other jobs loaded the machine during a run (empty otherwise).

    A benchmark's own processes load every core (the tour and the sweep run a
    parent and two workers: a load average of 2-3 on 2 cores), so the warning
    is for a load above the core count plus one.
    """
    top = max([x for x in loads if x is not None] or [0.0])
    if top <= meta["cores"] + 1:
        return ""
    return (f" The load average reached {top:.0f} on {meta['cores']} cores: other jobs took most of the machine, so "
            "the times are inflated several-fold and noisy; rerun on a quiet machine for absolute numbers.")


def _s(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.1f}"


def _us(x: float) -> str:
    return f"{x:.2f}" if x < 10 else f"{x:.1f}" if x < 100 else f"{x:.0f}"


# ------------------------------------------------------------------ every bundled system
def all_systems(results: Path) -> str:
    d = _load("all_systems.json", results)
    if d is None:
        return _missing("python benchmarks/all_systems.py --before DIR")
    labels = d["versions"]
    new = labels[-1]
    old = labels[0] if len(labels) == 2 else None
    rounds = int(d.get("rounds") or 1)
    fastest = f", the fastest of {rounds} rounds (each version's processes alternating)" if rounds > 1 else ""
    lines = [f"*{_machine(d['meta'], d.get('load_end'))}. `{d['command']}`: runs of {d['steps']} steps with each "
             f"system's own step h; first calls: wall time (and CPU time of the process where recorded: on a "
             f"loaded machine the steadier number){fastest}; warm time: the fastest of {d['repeats']} runs in each "
             "of the processes."
             + _loaded(d["meta"], [_top_load(d)]) + "*", ""]
    pair = (lambda r, k, f: f"{f(r[old][k])} → **{f(r[new][k])}**") if old else (lambda r, k, f: f(r[new][k]))
    head = "| system | first call, empty cache [s] | first call, from the cache [s] | warm, µs per step |"
    rule = "|---|---|---|---|"
    if old:
        head += " per step: speed-up |"
        rule += "---|"
    lines += [head, rule]
    for r in d["rows"]:
        bad = [lab for lab in labels if "error" in r[lab]]
        if bad:
            lines.append(f"| `{r['name']}` | failed ({', '.join(bad)}): {r[bad[0]]['error'].replace('|', '/')} |"
                         + " |" * (2 + bool(old)))
            continue
        cells = [f"`{r['name']}`", pair(r, "cold_first_call_s", _s) + _cpu(r, "cold", labels),
                 pair(r, "cached_first_call_s", _s) + _cpu(r, "cached", labels), pair(r, "us_per_step", _us)]
        if old:
            cells.append(f"{r['ratios']['warm_run_s']:.2f}×")
        lines.append("| " + " | ".join(cells) + " |")
    ok = [r for r in d["rows"] if "error" not in r[new]]
    lines.append("")
    missing = [n for n in d.get("systems") or _catalog() if n not in {r["name"] for r in d["rows"]}]
    if missing:
        lines += [f"Not in this run (it was stopped before them): {', '.join(f'`{n}`' for n in missing)}.", ""]
    if old:
        lines += [f"Columns: {old} → **{new}**. " + _verdict(d, ok, old, new), ""]
    lines.append(_targets(ok, new))
    return "\n".join(lines)


def _cpu(row: dict, stage: str, labels: list) -> str:
    """`` (CPU a → b)``: the first call's CPU time in each version, where the run recorded it."""
    per_round = [[rnd[lab][stage].get("first_call_cpu_s") for rnd in _rounds(row)] for lab in labels]
    if any(c is None for cs in per_round for c in cs):
        return ""
    cpu = [min(cs) for cs in per_round]  # the fastest round, as the wall times
    return " (CPU " + " → ".join(_s(c) for c in cpu) + ")"


def _top_load(d: dict) -> float:
    """The highest 1-minute load average seen around the processes of an ``all_systems`` run."""
    return max([x[k][0] for r in d["rows"] for rnd in _rounds(r) for v in rnd.values() for x in v.values()
                for k in ("load_before", "load_after") if x.get(k)] or [0.0])


def _rounds(row: dict) -> list[dict]:
    """A row's raw measurements per round (``{version: {stage: ...}}``): a list with ``--rounds``, else one."""
    raw = row["raw"]
    return raw if isinstance(raw, list) else [raw]


def _catalog() -> list[str]:
    """The bundled systems' names in this checkout."""
    from manifold_dirac.systems.catalog import EXAMPLES

    return list(EXAMPLES)


def _verdict(d: dict, ok: list, old: str, new: str) -> str:
    both = [r for r in ok if "ratios" in r]
    slower = [r for r in both if r["ratios"]["warm_run_s"] < 1.0]
    cold_slower = [r for r in both if r["ratios"]["cold_first_call_s"] < 1.0]
    text = (f"Per step, {new} is faster on {len(both) - len(slower)} of {len(both)} systems"
            + (": slower on " + ", ".join(f"`{r['name']}` ({r['ratios']['warm_run_s']:.2f}×)" for r in slower)
               if slower else "") + "; ")
    text += (f"its first call with an empty cache is shorter on {len(both) - len(cold_slower)} of {len(both)}"
             + (" (longer on " + ", ".join(f"`{r['name']}`" for r in cold_slower) + ")" if cold_slower else "") + ". ")
    diffs = [(r["max_difference"], r["name"]) for r in d["rows"] if "max_difference" in r]
    if diffs:
        top, name = max(diffs)
        text += f"The two versions' final points differ by at most {top:.1e} (`{name}`)."
    return text


def _targets(ok: list, new: str) -> str:
    cold = [r for r in ok if r[new]["cold_first_call_s"] <= COLD_TARGET_S]
    cached = [r for r in ok if r[new]["cached_first_call_s"] <= CACHE_TARGET_S]
    return (f"First call within {COLD_TARGET_S:g} s with an empty cache: {len(cold)} of {len(ok)} systems; within "
            f"{CACHE_TARGET_S:g} s from the cache: {len(cached)} of {len(ok)}.")


# ------------------------------------------------------------------ the tour
def tour(results: Path) -> str:
    d = _load("tour.json", results) or _load("tour_quick.json", results)
    if d is None:
        return _missing("python benchmarks/tour.py")
    labels = d["versions"]
    runs = [r for v in d["runs"].values() for r in v.values()]
    quick = " This run used the tour's shorter mode (`--quick`: shorter runs, no order measurements)." if d["quick"] else ""
    lines = [f"*{_machine(d['meta'], d.get('load_end'))}. `{d['command']}`.{quick}"
             + _loaded(d["meta"], [r["load_before"][0] for r in runs] + [r["load_after"][0] for r in runs]) + "*", "",
             "| run of `manifold-dirac tour` | " + " | ".join(labels) + " |", "|---" * (len(labels) + 1) + "|"]
    for stage, what in (("cold", "first run, empty cache"), ("warm", "second run, same cache")):
        cells = []
        for lab in labels:
            r = d["runs"][lab].get(stage)
            cells.append("—" if r is None else "failed" if "error" in r else
                         f"{r['wall_s']:.0f} s (CPU {r['cpu_s']:.0f} s; load {r['load_before'][0]:.1f})")
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------ sweeps
def sweep(results: Path) -> str:
    d = None
    for name in ("sweep_scaling.json", "sweep_scaling_scaling.json", "sweep_scaling_quick_scaling.json"):
        d = _load(name, results)
        if d is not None and "meta" in d and "scaling" in d and "serial" in d["scaling"]:
            break
        d = None
    if d is None:
        return _missing("python benchmarks/sweep_scaling.py --only scaling")
    s = d["scaling"]
    lines = [f"*{_machine(d['meta'], d.get('load_end'))}. `{d['command']}`: {d['cells']} cells of {d['steps']:,} "
             "heavy-top steps each, compilation done before the clock starts."
             + _loaded(d["meta"], [s[k]["load_before"][0] for k in ("serial", "1", "2")]
                       + [s[k]["load_after"][0] for k in ("serial", "1", "2")]) + "*", "",
             "| how | wall time [s] | median cell [ms] | load at the start |", "|---|---|---|---|"]
    for key, what in (("serial", "serial, in the calling process"), ("1", "1 worker process"),
                      ("2", "2 worker processes")):
        r = s[key]
        lines.append(f"| {what} | {r['wall_s']:.1f} | {r['cell_ms_median']:.0f} | {r['load_before'][0]:.1f} |")
    lines += ["", f"Two workers against the serial run: **{s['speedup_2_vs_serial']:.2f}×** "
              f"(against one worker: {s['speedup_2_vs_1']:.2f}×)."]
    return "\n".join(lines)


# ------------------------------------------------------------------ the step against a Numba step
def kernel(results: Path) -> str:
    d = _load("kernel-after.json", results)
    if d is None:
        return _missing("python benchmarks/kernel.py")
    try:
        lo, la = d.get("load_before") or [], d.get("load_after") or []
        lines = [f"*{d['machine']}, {d['cpus']} cores; load average (1 min) {lo[0]:.1f} at the start, "
                 f"{la[0]:.1f} at the end. `python benchmarks/kernel.py`: {d['n']:,} steps, the fastest of "
                 "interleaved rounds.*", "",
                 "| system | recorded | library, µs per step | Numba, µs per step | ratio |", "|---|---|---|---|---|"]
        for r in d["step"]:
            rec = "every step" if r["stride"] == 1 else f"every {r['stride']} steps"
            lines.append(f"| {r['name'].replace('_', ' ')} | {rec}"
                         f" | {_us(r['library_us'])} | {_us(r['floor_us'])} | {r['ratio']:.1f}× |")
        lines += ["", "| system | batch B | library, trajectory-steps/s | Numba (2 threads) |", "|---|---|---|---|"]
        for r in d["batch"]:
            lines.append(f"| {r['name'].replace('_', ' ')} | {r['B']} | {r['library_traj_steps_per_s']:.3g} | "
                         f"{r['floor_traj_steps_per_s']:.3g} |")
    except (KeyError, IndexError, TypeError) as exc:
        return f"*The results file `benchmarks/results/kernel-after.json` has another layout ({exc!r}).*"
    return "\n".join(lines)


# ------------------------------------------------------------------ higher-order rules, gradients
def higher_order(results: Path) -> str:
    if _load("higher_order.json", results) is None:
        return _missing("python benchmarks/higher_order.py")
    from tools.galerkin_table import table

    return table(_load("higher_order.json", results))


def gradients(results: Path) -> str:
    d = _load("gradient_cost.json", results)
    if d is None:
        return _missing("python benchmarks/gradient_cost.py --json benchmarks/results/gradient_cost.json")
    txt = (results / "gradient_cost.txt").read_text() if (results / "gradient_cost.txt").exists() else ""
    loads = [float(x) for x in re.findall(r"load average ([\d.]+)", txt)]
    where = (f"load average {loads[0]:.1f} at the start, {loads[-1]:.1f} at the end" if loads
             else "load not recorded")
    lines = [f"*2 cores, jax 0.10.2, {where} (`benchmarks/results/gradient_cost.txt`): medians of 7 interleaved "
             "runs, compile excluded.*", "",
             "| case | steps | parameters | forward run | reverse-mode gradient | central differences |",
             "|---|---|---|---|---|---|"]
    for name, r in d.items():
        m = r["median_s"]
        f = m["forward"]
        lines.append(f"| {name.replace('_', ' ')} | {r['n_steps']} | {r['parameters']} | {1e3 * f:.1f} ms | "
                     f"{1e3 * m['reverse']:.1f} ms (**{m['reverse'] / f:.1f}×**) | "
                     f"{m['central FD']:.2f} s ({m['central FD'] / f:.0f}×) |")
    return "\n".join(lines)


# ------------------------------------------------------------------ the loop compiled ahead
def compile_ahead(results: Path) -> str:
    d = _load("compile_ahead.json", results)
    if d is None:
        return _missing("python benchmarks/compile_ahead.py")
    lines = [f"*{_machine(d['meta'], d.get('load_end'))}. `{d['command'].strip()}`: the first `integrate` call of a "
             f"fresh process ({d['steps']} steps), the fastest of {d['rounds']} rounds per setting, the settings "
             "alternating; wall time (CPU time of that process).*", "",
             "| system | empty cache: one after the other | empty cache: **loop ahead** | from the cache: one after "
             "the other | from the cache: **loop ahead** |", "|---|---|---|---|---|"]
    for r in d["rows"]:
        cells = [f"{_s(r[k]['wall_s'])} s (CPU {_s(r[k]['cpu_s'])} s)" for k in ("cold_0", "cold_1", "cached_0", "cached_1")]
        lines.append(f"| `{r['name']}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


BLOCKS = {"all-systems": all_systems, "tour": tour, "sweep": sweep, "kernel": kernel,
          "higher-order": higher_order, "gradients": gradients, "compile-ahead": compile_ahead}


def render(page: str, results: Path = RESULTS) -> str:
    """``page`` with every table block regenerated from the results files in ``results``."""
    def sub(m: re.Match) -> str:
        name = m.group("name")
        if name not in BLOCKS:
            raise ValueError(f"docs/performance.md: unknown table block {name!r}; known: {', '.join(BLOCKS)}")
        return m.group(1) + BLOCKS[name](results) + "\n" + m.group(4)

    return BLOCK.sub(sub, page)


# ------------------------------------------------------------------ figures
def figures(results: Path = RESULTS, out: Path = FIGURES) -> list[Path]:
    """The page's figures from ``all_systems.json``: first call per system; warm time per step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = _load("all_systems.json", results)
    if d is None:
        return []
    labels = d["versions"]
    new = labels[-1]
    rows = [r for r in d["rows"] if all("error" not in r[lab] for lab in labels)]
    names = [r["name"].replace("_", " ") for r in rows]
    y = range(len(rows))
    written = []
    plt.rcParams.update({"font.size": 11, "legend.fontsize": 11})

    def bars(path: Path, a: tuple, b: tuple, xlabel: str, title: str, log: bool = False, target=None) -> None:
        """Two bars per system: ``a`` and ``b`` are (values, label, colour)."""
        fig, ax = plt.subplots(figsize=(8, 0.32 * len(rows) + 1.6))
        for (vals, lab, col), dy in ((a, 0.2), (b, -0.2)):
            ax.barh([i + dy for i in y], vals, 0.4, label=lab, color=col)
        if target is not None:
            ax.axvline(target, color="k", ls="--", lw=1)
        if log:
            ax.set_xscale("log")
        ax.set_yticks(list(y), names)
        ax.invert_yaxis()
        ax.set_xlabel(xlabel)
        ax.set_title(title, fontsize=11)
        ax.legend(loc="best")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    bars(out / "performance-first-call.png", ([r[new]["cold_first_call_s"] for r in rows], "empty cache", "C1"),
         ([r[new]["cached_first_call_s"] for r in rows], "from the cache", "C0"),
         "first integrate call in a new process [s]",
         f"First call per system ({new}; load average up to {_top_load(d):.0f} on {d['meta']['cores']} cores)",
         target=COLD_TARGET_S)
    if len(labels) == 2:
        old = labels[0]
        bars(out / "performance-per-step.png", ([r[old]["us_per_step"] for r in rows], old, "0.65"),
             ([r[new]["us_per_step"] for r in rows], new, "C0"),
             f"warm run, µs per step ({d['steps']} steps, fastest of {d['repeats']})",
             "Time per step per system, two versions side by side", log=True)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--write", action="store_true", help="write the tables into docs/performance.md")
    p.add_argument("--check", action="store_true", help="fail if the page's tables differ from the results")
    p.add_argument("--figures", action="store_true", help="redraw the page's figures")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    new = render(page, args.results)
    if args.write and new != page:
        PAGE.write_text(new, encoding="utf-8")
        print(f"wrote {PAGE}")
    if args.figures:
        for f in figures(args.results):
            print(f"wrote {f}")
    if args.check and new != page:
        print("docs/performance.md differs from the results files: run tools/performance_tables.py --write",
              file=sys.stderr)
        return 1
    if not (args.write or args.check or args.figures):
        print(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
