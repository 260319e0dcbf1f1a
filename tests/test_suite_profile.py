"""``benchmarks/suite_profile.py``: the plugin records a test's JAX work, the report sums it per file."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import suite_profile as SP

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_plugin_records_a_tests_compile_and_the_report_sums_it(tmp_path):
    test = tmp_path / "test_one.py"
    test.write_text("import jax, jax.numpy as jnp\n\n"
                    "def test_compiles():\n    assert float(jax.jit(lambda x: jnp.sin(x) * 2)(1.0)) != 0\n\n"
                    "def test_nothing():\n    pass\n")
    out = tmp_path / "prof"
    env = {**os.environ, "SUITE_PROFILE_OUT": str(out), "PYTHONPATH": str(ROOT), "MANIFOLD_DIRAC_JAX_CACHE": "0"}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-m", "",
                           "-p", "benchmarks.suite_profile", str(test)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rows, programs = SP.load(out)
    one = rows[next(k for k in rows if k.endswith("test_compiles"))]
    assert one["backend_compile_duration_n"] >= 1 and one["jaxpr_trace_duration"] > 0 and one["wall"] > 0
    assert "backend_compile_duration" not in rows[next(k for k in rows if k.endswith("test_nothing"))]
    assert any(name.startswith("jit(") for _, name, _ in programs)
    s = SP.summary(rows, programs)
    assert s["total"]["wall"] >= one["wall"] and sum(n for n, _ in s["classes"].values()) == len(programs)
    SP.main([str(out), "--json", str(tmp_path / "s.json")])
    assert json.loads((tmp_path / "s.json").read_text())["total"]["backend_compile_duration_n"] == len(programs)


def test_the_summary_sums_per_file_and_per_class():
    rows = {"tests/a.py::t1": {"wall": 2.0, "backend_compile_duration": 1.5, "backend_compile_duration_n": 2},
            "tests/a.py::t2": {"wall": 1.0}, "tests/b.py::t": {"wall": 4.0, "jaxpr_trace_duration": 0.5}}
    programs = [("tests/a.py::t1", "jit(chunk)", 1.4), ("tests/a.py::t1", "jit(add)", 0.1)]
    s = SP.summary(rows, programs)
    assert s["files"]["tests/a.py"]["wall"] == 3.0 and s["files"]["tests/b.py"]["jaxpr_trace_duration"] == 0.5
    assert s["classes"]["<= 0.2 s"] == [1, 0.1] and s["classes"]["<= 5 s"] == [1, 1.4]
    assert s["total"]["backend_compile_duration_n"] == 2 and list(s["names"]) == ["jit(chunk)", "jit(add)"]


def test_rows_of_two_workers_with_the_same_key_are_summed(tmp_path):
    """Sensitivity of the merge: two workers' work outside tests under one key adds up (it was overwritten)."""
    for w, n in (("gw0", 2), ("gw1", 3)):
        (tmp_path / f"{w}.json").write_text(json.dumps({"rows": {"<collection>": {"backend_compile_duration_n": n}},
                                                        "programs": [["<collection>", "jit(f)", 0.1]] * n}))
    rows, programs = SP.load(tmp_path)
    assert rows["<collection>"]["backend_compile_duration_n"] == 5 == len(programs)
