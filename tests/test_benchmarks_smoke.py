"""The benchmark suite's quick mode runs end to end (so that it cannot rot), and its implementations agree.

``benchmarks/run.py --quick`` runs every section once with small sizes
(compile and memory in child processes, overlapping the others): the table,
the figure and one JSON file per section are written, the library's states
agree with the hand-specialized implementations of the same scheme (the
numpy baselines always; the Numba floor when the optional ``bench`` extra is
installed), and the run stays within its budget.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("step", "batch", "wp", "compile", "memory")
BUDGET_S = 60.0


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@pytest.mark.slow  # every section's cold compiles and the Numba floor's: 30-50 s, a tenth of the CI budget
def test_quick_benchmark_writes_table_and_figure_and_agrees_with_the_floor(tmp_path):
    cpu0, t = _children_cpu(), time.perf_counter()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    wall, cpu = time.perf_counter() - t, _children_cpu() - cpu0
    assert proc.returncode == 0, proc.stderr[-3000:]

    table = (tmp_path / "results.md").read_text()
    for heading in ("## Targets", "## 1. Per step", "## 2. Batched", "## 3. Work--precision", "## 4. Compile time",
                    "## 5. Peak memory"):
        assert heading in table, heading
    assert (tmp_path / "performance.png").stat().st_size > 10_000
    R = {s: json.loads((tmp_path / f"results-{s}.json").read_text()) for s in SECTIONS}

    # the same scheme and Newton rule: the library agrees with the baselines (and the floor)
    have_floor = importlib.util.find_spec("numba") is not None
    assert {r["name"] for r in R["step"]["rows"]} >= {"heavy_top", "knife_edge"}
    for row in R["step"]["rows"]:
        d = row["max_state_difference"]
        assert d["numpy_baseline"] < 1e-9, row["name"]
        if have_floor:
            assert d["floor"] < 1e-12, row["name"]
            assert row["ratio_wall"] > 0 and row["floor_newton_iterations_per_step"] is not None
    assert all(r["failed_members"] == 0 for r in R["batch"]["rows"])

    # work-precision: every run succeeded and the library's error falls with h
    for d in R["wp"]["systems"].values():
        assert all(r["ok"] for r in d["runs"])
        lib = sorted((float(r["setting"][2:]), r["error_at_T"]) for r in d["runs"] if r["method"] == "manifold_dirac")
        assert lib[0][1] < lib[-1][1]
    assert all(r["cold_compile_s"] > 0 for r in R["compile"]["rows"])
    n = R["memory"]["n_steps"]
    stored = {r["stride"]: r["stored"] for r in R["memory"]["rows"] if r["steps"] == n}
    assert stored == {1: n + 1, 1000: n // 1000 + 1}

    # the budget: CPU time of the whole process tree always; wall time in CI (a machine of its own)
    assert cpu < BUDGET_S, f"the quick benchmark used {cpu:.1f} s of CPU (wall {wall:.1f} s)"
    if os.environ.get("CI"):
        assert wall < BUDGET_S, f"the quick benchmark took {wall:.1f} s (CPU {cpu:.1f} s)"


# ------------------------------------------------------------------ the performance page and its scripts
def _tables():
    sys.path.insert(0, str(ROOT))
    try:
        from tools import performance_tables
    finally:
        sys.path.remove(str(ROOT))
    return performance_tables


def test_the_performance_page_tables_are_generated_from_the_results_files():
    pt = _tables()
    page = pt.PAGE.read_text(encoding="utf-8")
    blocks = pt.BLOCK.findall(page)
    assert {b[1] for b in blocks} == set(pt.BLOCKS), "every table block of the page is generated"
    assert pt.render(page) == page, "docs/performance.md differs from the results: run tools/performance_tables.py --write"
    # sensitivity: a number changed by hand inside a generated block is caught
    m = next(m for m in pt.BLOCK.finditer(page) if any(ch.isdigit() for ch in m.group("body")))
    body = m.group("body")
    digit = next(i for i, ch in enumerate(body) if ch.isdigit())
    edited = page[:m.start("body") + digit] + str((int(body[digit]) + 1) % 10) + page[m.start("body") + digit + 1:]
    assert pt.render(edited) != edited


def test_no_table_of_the_performance_page_is_broken_by_a_bar_in_a_cell():
    page = _tables().PAGE.read_text(encoding="utf-8")
    tables, current = [], []
    for line in page.splitlines() + [""]:
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    assert tables, "the page has tables"
    for t in tables:
        assert len({line.count("|") for line in t}) == 1, t
    assert len({ln.count("|") for ln in ["| a | b |", "| a | `x|y` |"]}) == 2  # the check sees a bar in a cell


def _run(script: str, out: Path, *extra: str, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--quick", "--out", str(out), *extra],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.mark.slow  # two fresh processes, a cold compile and a load (~11 s of CI); the page's tables are checked above
def test_all_systems_quick_measures_a_system_and_the_page_renders_it(tmp_path):
    proc = _run("all_systems.py", tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    d = json.loads((tmp_path / "all_systems_quick.json").read_text())
    assert d["meta"]["cores"] >= 1 and d["meta"]["load"] and d["meta"]["jax"]
    (row,) = d["rows"]
    s = row["this version"]
    assert s["ok"] and 0 < s["warm_run_s"] < s["cold_first_call_s"]
    assert row["raw"]["this version"]["cached"]["first_call_events_s"].get("cache_retrieval", 0) > 0, \
        "the second process loads the program from the persistent cache"
    # the first call's own counts: its two programs (the start and the loop), not the import's or q0's eager ones
    assert row["raw"]["this version"]["cold"]["first_call_event_counts"]["backend_compile"] == 2
    assert set(d["commits"]) == {"this version"}  # the checkout's commit (None outside git), recorded per version
    (tmp_path / "all_systems.json").write_text(json.dumps(d))
    block = _tables().all_systems(tmp_path)
    assert "`pendulum`" in block and d["meta"]["cpu"] in block
    assert all(line.count("|") == 5 for line in block.splitlines() if line.startswith("| `"))


@pytest.mark.slow
def test_tour_quick_times_a_cold_and_a_warm_tour(tmp_path):
    proc = _run("tour.py", tmp_path, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    d = json.loads((tmp_path / "tour_quick.json").read_text())
    runs = d["runs"]["this version"]
    assert runs["warm"]["wall_s"] < runs["cold"]["wall_s"], "the second tour finds its programs in the cache"
    assert runs["cold"]["figures"] > 0


@pytest.mark.slow
def test_sweep_benchmark_workers_keep_the_library_xla_flag_and_run_one_thread():
    code = ("import sys; sys.path.insert(0, '.'); from benchmarks.sweep_scaling import worker_env; "
            "e = worker_env(); print(e['XLA_FLAGS'], 'PJRT_NPROC=' + e['PJRT_NPROC'])")
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MANIFOLD_DIRAC_XLA_FLAGS")}
    flags = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                           env={**env, "PYTHONPATH": str(ROOT)}, timeout=300).stdout
    assert "xla_cpu_small_while_loop_byte_threshold" in flags and "PJRT_NPROC=1" in flags
    # and a user's own XLA_FLAGS are what the workers get (plus the one thread), not the library's
    flags = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                           env={**env, "PYTHONPATH": str(ROOT), "XLA_FLAGS": "--xla_dump_to=/dev/null"},
                           timeout=300).stdout
    assert "xla_dump_to" in flags and "small_while_loop" not in flags and "PJRT_NPROC=1" in flags


@pytest.mark.slow  # four cold compiles of the pendulum's programs (~10 s)
def test_first_call_layer_cost_times_both_paths_of_both_programs(tmp_path):
    out = tmp_path / "layer_cost.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "first_call.py"), "--layer-cost", "--rounds", "1",
                           "--out", str(out), "pendulum"], capture_output=True, text=True, timeout=900, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = json.loads(out.read_text())["cases"]["pendulum"]
    for program in ("start", "loop"):
        for phase in ("traced: trace", "traced: lower", "traced: compile", "layer: export", "layer: embed",
                      "layer: compile"):
            assert rows[f"{program} {phase}"]["min"] > 0, (program, phase)


@pytest.mark.slow  # four fresh processes, two cold compiles (~20 s); tests/test_compile_ahead.py tests the feature
def test_compile_ahead_benchmark_times_both_settings_and_the_page_renders_it(tmp_path):
    """One round on the pendulum: both settings, an empty cache and the cache again, equal final points (the
    script refuses unequal ones), and the page's block renders the results file."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "compile_ahead.py"), "--rounds", "1",
                           "--systems", "pendulum", "--steps", "100", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    d = json.loads((tmp_path / "compile_ahead.json").read_text())
    (row,) = d["rows"]
    assert all(row[k]["wall_s"] > 0 for k in ("cold_0", "cold_1", "cached_0", "cached_1"))
    block = _tables().compile_ahead(tmp_path)
    assert "`pendulum`" in block and all(line.count("|") == 6 for line in block.splitlines() if line.startswith("| `"))


@pytest.mark.slow
def test_program_size_counts_the_operations_of_a_loop():
    """benchmarks/program_size.py lowers a bundled system's loop (no compile): a count, and a larger system's is
    larger (the harmonic oscillator against the spherical pendulum)."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "program_size.py"), "harmonic_oscillator",
                           "spherical_pendulum"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    small, large = (json.loads(line) for line in proc.stdout.splitlines())
    assert 0 < small["ops"] < large["ops"] and "compile_s" not in small


@pytest.mark.slow  # lowers the spherical pendulum's step and loop, compiles the harmonic oscillator's step (~6 s)
def test_program_size_step_is_one_step_of_the_loop():
    """``--step`` lowers one step of the loop alone: fewer operations than the loop that holds it, and with
    ``--compile`` a compile time of its own."""
    def run(*args):
        proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "program_size.py"), *args],
                              capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [json.loads(line) for line in proc.stdout.splitlines()]

    (step,), (loop,) = run("--step", "spherical_pendulum"), run("spherical_pendulum")
    assert step["program"] == "step" and loop["program"] == "loop"
    assert 0.5 * loop["ops"] < step["ops"] < loop["ops"]
    (compiled,) = run("--step", "--compile", "harmonic_oscillator")
    assert compiled["compile_s"] > 0 and compiled["compile_cpu_s"] > 0


@pytest.mark.slow  # two compiles of the heavy top's loop in fresh processes (~10 s)
def test_loop_passes_splits_the_loop_compile_and_finds_its_largest_kernel(tmp_path):
    """``benchmarks/loop_passes.py --against level2``: XLA's passes and code generation of the loop program, and
    LLVM's time on its kernels, read from XLA's timers: the largest kernel (the heavy top's steps, compiled on one
    thread) is most of the code generation and within it, and the final points agree."""
    out = tmp_path / "passes.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "loop_passes.py"), "--against", "level2",
                           "--rounds", "1", "--out", str(out), "heavy_top"], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    (row,) = json.loads(out.read_text())["rows"]
    assert row["same_final_point"]
    for variant in ("library", "level2"):
        r = row[variant]
        assert r["passes"] > 0 and r["kernels"] >= 1
        assert 0.5 * r["codegen"] < r["largest_kernel"] <= min(r["kernels_sum"], 1.05 * r["codegen"])


@pytest.mark.slow  # one cold first call of the pendulum in a fresh process (~4 s)
def test_first_call_timeline_shows_the_compiles_of_a_cold_call(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "first_call_timeline.py"), "pendulum"],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "MANIFOLD_DIRAC_JAX_CACHE": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("pendulum: first call")
    assert any("backend_compile" in line for line in lines[1:]) and any("trace" in line for line in lines[1:])


@pytest.mark.skipif(__import__("shutil").which("git") is None, reason="git is not installed")
def test_a_results_file_names_the_commit_of_each_version_and_marks_a_changed_tree(tmp_path, monkeypatch):
    """``machine.commit``: the short hash of a checkout, with ``+`` when a tracked file differs; ``None`` for a
    directory that is not the top of a checkout, also a plain copy inside another repository."""
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.machine import commit
    finally:
        sys.path.remove(str(ROOT))
    for k in [k for k in os.environ if k.startswith("GIT_")]:
        monkeypatch.delenv(k)
    assert commit(tmp_path) is None
    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    (tmp_path / "f.py").write_text("x = 1\n")
    git("add", "f.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    head = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert commit(tmp_path) == head
    (tmp_path / "f.py").write_text("x = 2\n")
    assert commit(tmp_path) == head + "+"
    (tmp_path / "copy").mkdir()  # not a checkout of its own: not the outer repository's commit
    assert commit(tmp_path / "copy") is None


@pytest.mark.slow
def test_rule_first_call_times_a_system_with_a_rule_in_both_checkouts():
    """``benchmarks/rule_first_call.py`` (the source of ``ROLLED_SOLVE_MAX``'s measurements) runs end to end: one
    line per checkout with the first call, the warm time per step and the final point, equal for the same code."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "rule_first_call.py"), "--before", str(ROOT), "1",
                           "pendulum:midpoint"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [line for line in proc.stdout.splitlines() if " pendulum midpoint " in line]
    assert [line.split()[3] for line in lines] == ["before", "this"], proc.stdout
    for line in lines:
        assert " cold " in line and " us/step " in line, line
    assert lines[0].split("final")[1] == lines[1].split("final")[1]


@pytest.mark.slow  # eight fresh processes, four cold compiles (~18 s of CI)
def test_first_result_times_import_building_and_first_run_in_fresh_processes(tmp_path):
    """``benchmarks/first_result.py`` runs end to end for one system and two checkouts (here the same one):
    its results file holds both versions' processes, empty cache then from the cache, and its table a row."""
    out = tmp_path / "first_result"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "first_result.py"), "--before", str(ROOT),
                           "--systems", "pendulum", "--rounds", "1", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.with_suffix(".json").read_text())
    runs = data["raw"]["pendulum"]
    assert set(runs) == {"previous version", "this version"}
    for version in runs.values():
        for state in ("empty cache", "from the cache"):
            (r,) = version[state]
            assert r["ok"] and r["build_compiles"] == 0 and 0 < r["build_s"] < r["total_s"], r
    assert "| `pendulum` |" in out.with_suffix(".md").read_text()


@pytest.mark.slow  # two fresh processes, each compiling the pendulum (~10 s)
def test_per_step_ab_times_both_checkouts_in_alternating_processes():
    """``benchmarks/per_step_ab.py`` (the per-step figures of the round-off-floor change in
    ``docs/performance.md``) runs end to end: one row per system with a time for each checkout."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "per_step_ab.py"), str(ROOT), str(ROOT),
                           "--systems", "pendulum", "--pairs", "1", "--steps", "50"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = [line for line in proc.stdout.splitlines() if line.startswith("| pendulum |")]
    assert len(row) == 1 and row[0].count("(") == 2, proc.stdout


@pytest.mark.slow  # three fresh processes, each compiling the disk's rollout (~15 s)
def test_call_buffers_counts_and_times_a_version(tmp_path):
    """``benchmarks/call_buffers.py`` (the buffers of a call in ``docs/performance.md``) runs end to end: the
    program's buffers counted from XLA's dump, and a time for each call."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "call_buffers.py"), "--quick", "--out",
                           str(tmp_path)], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    row = [line for line in (tmp_path / "call_buffers.md").read_text().splitlines() if line.startswith("| 1 |")]
    assert len(row) == 1, proc.stdout
    cells = [c.strip() for c in row[0].split("|")[1:-1]]
    assert int(cells[2].split()[0]) > 50 and int(cells[3]) > 0 and all(float(c) > 0 for c in cells[4:]), row


@pytest.mark.slow  # one compile of the composed sled's loop and 20 short runs (~6 s)
def test_matched_settings_pick_each_sides_cheapest_setting_that_reaches_the_target():
    """``benchmarks/composition.py --matched`` compares, at each target, the fewest composed steps whose error at
    ``T`` reaches it with DOP853's tolerance of fewest evaluations that does: checked against the errors computed
    here, one step fewer missing the target (so the choice is the cheapest of the grid, not any that reaches it)."""
    from scipy.integrate import solve_ivp

    from benchmarks import composition as C
    from manifold_dirac import StepError, integrate

    case = C.SYSTEMS["chaplygin_sled"]()
    targets, rtols = (1e-4, 1e-6), (1e-3, 10 ** -3.5, 1e-4, 10 ** -4.5, 1e-5, 1e-6, 1e-7)
    found = C.matched_settings(case, targets=targets, compositions=("kahan_li6",), max_steps=12, rtols=rtols)

    def err(n):  # a run that fails reaches no target
        try:
            tr = integrate(case["system"], case["q0"], case["v0"], h=C.T / n, n_steps=n, stride=n, scheme="split",
                           composition="kahan_li6")
        except StepError:
            return np.inf
        return case["err_lib"](tr)

    ivp = {}
    for rt in rtols:
        sol = solve_ivp(case["rhs"], (0.0, C.T), case["y0"], method="DOP853", rtol=rt, atol=rt)
        ivp[rt] = (int(sol.nfev), case["err_ivp"](sol.y[:, -1]))
    assert set(found) == set(targets)
    for tgt in targets:
        n, e = found[tgt]["composed"]["kahan_li6"]
        assert e == err(n) <= tgt
        assert all(err(k) > tgt for k in range(1, n)), (tgt, n)
        rt, nfev, e_ivp = found[tgt]["DOP853"]
        assert (nfev, e_ivp) == ivp[rt] and e_ivp <= tgt
        assert nfev == min(f for f, e in ivp.values() if e <= tgt)
    assert found[1e-6]["composed"]["kahan_li6"][0] > found[1e-4]["composed"]["kahan_li6"][0]
