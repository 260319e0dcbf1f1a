"""The public surface: ``import manifold_dirac as md`` reaches every common task.

* the names and submodules users need are attributes of ``md`` (the heavy
  ones imported on first use), ``md.sweep`` is the function, one version;
* ``python -m manifold_dirac`` is the command line;
* ``params=`` overrides ``system.params`` for one call without recompiling;
* a sweep runs from a plain script without an ``if __name__ == "__main__":`` guard;
* the docs, the examples and the README use only the public surface.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tests._tiers import slow_cases

import manifold_dirac as md

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_SUBMODULES = ("analysis", "dirac", "plotting", "study", "systems", "testing")


def _python(code: str, timeout: int = 240, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), MPLBACKEND="Agg")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=timeout,
                          cwd=cwd or ROOT)


# ------------------------------------------------------------------ the namespace
def test_common_tasks_are_attributes_and_heavy_imports_wait():
    code = textwrap.dedent("""
        import sys
        import manifold_dirac as md
        heavy = ("matplotlib", "xarray", "dask", "distributed", "hypothesis", "manifold_dirac.study",
                 "manifold_dirac.dirac", "manifold_dirac.systems.catalog")
        print("after import:", sorted(m for m in heavy if m in sys.modules))
        for f in (md.integrate, md.rollout, md.sweep, md.plot_trajectory, md.observed_order, md.get_example,
                  md.systems.heavy_top, md.plotting.plot_se2_path, md.analysis.energy_drift,
                  md.study.example_system, md.dirac.verify, md.testing.check_manifold_laws):
            assert callable(f), f
        import manifold_dirac._sweep  # importing the implementation module does not shadow the function
        assert callable(md.sweep) and md.sweep.__module__ == "manifold_dirac._sweep"
        print("ok")
    """)
    out = _python(code)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.splitlines() == ["after import: []", "ok"]


def test_every_name_in_all_resolves():
    missing = [n for n in md.__all__ if not hasattr(md, n)]
    assert not missing
    assert set(md.__all__) <= set(dir(md))
    assert len(md.__all__) == len(set(md.__all__))
    for name in PUBLIC_SUBMODULES:
        assert name in md.__all__
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        md.no_such_name  # noqa: B018


def test_no_submodule_shadows_a_top_level_function():
    """A submodule ``manifold_dirac/x.py`` would replace the function ``md.x`` once imported."""
    package = Path(md.__file__).parent
    modules = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    functions = {n for n in md.__all__ if callable(getattr(md, n)) and not isinstance(getattr(md, n), type)}
    assert not modules & functions
    assert callable(md.sweep)


def test_sweep_without_the_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "xarray", None)
    with pytest.raises(ImportError, match=r'pip install "manifold_dirac\[sweep\]"'):
        md.sweep(lambda h: {"x": h}, {"h": [0.1]}, workers=0)


def test_one_version_from_the_package_metadata():
    from importlib.metadata import version

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert md.__version__ == version("manifold_dirac") == pyproject
    assert "__version__ = \"" not in (ROOT / "manifold_dirac" / "__init__.py").read_text()  # not written twice


@pytest.mark.slow
def test_python_dash_m_is_the_command_line():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-m", "manifold_dirac", "--help"], capture_output=True, text=True,
                         env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    for command in ("tour", "run", "study", "list"):
        assert command in out.stdout
    bad = subprocess.run([sys.executable, "-m", "manifold_dirac", "no-such-command"], capture_output=True,
                         text=True, env=env, timeout=120)
    assert bad.returncode == 2 and "manifold-dirac: error" in bad.stderr


# ------------------------------------------------------------------ params=
@pytest.fixture(scope="module")
def pendulum():
    return md.systems.pendulum()


def _compiled_count(system) -> int:
    from manifold_dirac._run.programs import compiled_functions

    return sum(f._cache_size() for f in compiled_functions(system).values())


def test_params_override_equals_a_system_built_with_them(pendulum):
    # m l^2 = 2 and m g l = 9.81: the pendulum of mass 2, length 1 under gravity 9.81 / 2
    heavier = {"ml2": 2.0, "mgl": 9.81}
    kw = dict(h=0.05, n_steps=40)
    before = {k: np.copy(v) for k, v in pendulum.params.items()}
    tr = md.integrate(pendulum, np.array([1.0]), v0=np.array([0.0]), params=heavier, **kw)
    direct = md.systems.pendulum(length=1.0, mass=2.0, gravity=9.81 / 2)
    ref = md.integrate(direct, np.array([1.0]), v0=np.array([0.0]), **kw)
    np.testing.assert_allclose(tr.q, ref.q, rtol=0, atol=1e-13)
    np.testing.assert_allclose(tr.energy, ref.energy, rtol=1e-13)
    # the system's own parameters are unchanged, and they give another motion (the override is not ignored)
    assert all(np.array_equal(pendulum.params[k], before[k]) for k in before)
    default = md.integrate(pendulum, np.array([1.0]), v0=np.array([0.0]), **kw)
    assert np.max(np.abs(default.q - tr.q)) > 1e-2


def test_params_do_not_recompile(pendulum):
    integ = md.Integrator(pendulum, 0.05)
    q0, v0 = np.array([0.8]), np.array([0.0])
    integ.run(integ.initial_state(q0, v0), 10)
    integ.run(integ.initial_state(q0, v0, params={"ml2": 1.5, "mgl": 3.0}), 10, params={"ml2": 1.5, "mgl": 3.0})
    n = _compiled_count(pendulum)
    ends = []
    for g in (5.0, 7.0, 11.0):
        p = {"ml2": 1.0, "mgl": g}
        ends.append(integ.run(integ.initial_state(q0, v0, params=p), 10, params=p).q[-1, 0])
    assert _compiled_count(pendulum) == n
    assert len(set(ends)) == 3  # the values reached the compiled loop
    # the count sees a recompilation: another discrete Lagrangian is another program
    other = md.Integrator(pendulum, 0.05, discrete_lagrangian="trapezoid")
    other.run(other.initial_state(q0, v0), 10)
    assert _compiled_count(pendulum) > n


def test_params_step_by_step_equals_run(pendulum):
    integ = md.Integrator(pendulum, 0.05)
    p = {"ml2": 1.0, "mgl": 4.0}
    st = integ.initial_state(np.array([0.5]), np.array([0.0]), params=p)
    tr = integ.run(st, 5, params=p)
    for _ in range(5):
        st, _rec = integ.step(st, params=p)
    np.testing.assert_allclose(np.asarray(st.q), tr.q[-1], rtol=0, atol=1e-14)
    st2 = integ.initial_state(np.array([0.5]), np.array([0.0]))
    for _ in range(5):
        st2, _rec = integ.step(st2)
    assert abs(float(np.asarray(st2.q)[0]) - float(tr.q[-1, 0])) > 1e-4


@pytest.mark.parametrize("bad, exc, match", [
    ({"ml2": 1.0}, ValueError, "structure of system.params"),
    ({"ml2": np.ones(2), "mgl": 1.0}, ValueError, r"params\['ml2'\] has shape \(2,\)"),
    ({"ml2": np.nan, "mgl": 1.0}, ValueError, r"params\['ml2'\] contains non-finite"),
    ({"ml2": "heavy", "mgl": 1.0}, TypeError, r"params\['ml2'\] must be real numbers"),
    ({"ml2": 1.0 + 1j, "mgl": 1.0}, TypeError, r"params\['ml2'\] must be real numbers, got dtype complex128"),
])
def test_bad_params_are_refused(pendulum, bad, exc, match):
    with pytest.raises(exc, match=match):
        md.integrate(pendulum, np.array([0.5]), v0=np.array([0.0]), h=0.05, n_steps=2, params=bad)


def test_params_on_a_system_without_params():
    sysm = md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v - 0.5 * q @ q)
    with pytest.raises(ValueError, match=r"has no parameters \(system.params is None\)"):
        md.integrate(sysm, np.array([0.5]), v0=np.array([0.0]), h=0.1, n_steps=2, params={"k": 1.0})


def test_params_agree_with_rollout(pendulum):
    p = {"ml2": 1.3, "mgl": 6.0}
    tr = md.integrate(pendulum, np.array([0.7]), v0=np.array([0.1]), h=0.05, n_steps=30, params=p)
    r = md.rollout(pendulum, np.array([0.7]), np.array([0.1]), h=0.05, n_steps=30, params=p)
    np.testing.assert_allclose(np.asarray(r.q)[-1], tr.q[-1], rtol=0, atol=1e-12)


# ------------------------------------------------------------------ sweeps from a plain script
_SCRIPT = """
import manifold_dirac as md
{prelude}
print("top level of the script")


def cell(h):
    return {{"x": 2 * h}}


ds = md.sweep(cell, {{"h": [0.1, 0.2, 0.3]}}, workers=2, progress=False)
print("result", ds.x.values.tolist(), ds.status.values.tolist())
import sys
print("main restored", sys.modules["__main__"].__file__ == __file__)
"""


def _run_script(tmp_path: Path, prelude: str = "") -> subprocess.CompletedProcess:
    pytest.importorskip("distributed")
    pytest.importorskip("xarray")
    script = tmp_path / "plain.py"
    script.write_text(_SCRIPT.format(prelude=prelude))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300,
                          cwd=tmp_path)


@pytest.mark.slow
def test_a_sweep_runs_from_a_script_without_a_main_guard(tmp_path):
    out = _run_script(tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines.count("top level of the script") == 1  # the workers did not run the script again
    assert "result [0.2, 0.4, 0.6] ['ok', 'ok', 'ok']" in lines
    assert "main restored True" in lines  # the script's __file__ is back after the sweep


@pytest.mark.slow  # a cluster that fails to start: ~40 s on two loaded cores
def test_without_hiding_the_script_the_workers_rerun_it(tmp_path):
    """What the hiding prevents: with it switched off, each worker runs the script and starts a cluster."""
    prelude = "import manifold_dirac._sweep as s; s.hide_main_script = lambda: type('N', (), {'close': print})()"
    out = _run_script(tmp_path, prelude)
    assert out.returncode != 0
    assert "Nanny failed to start" in out.stderr
    # the worker that runs the script again is told exactly what to add
    assert 'if __name__ == "__main__":' in out.stderr


# ------------------------------------------------------------------ examples use the public surface
_DEEP = re.compile(
    r"(?:from|import)\s+manifold_dirac\.(?!(?:" + "|".join(PUBLIC_SUBMODULES) + r")\b(?!\.))[\w.]+"
    r"|(?:from|import)\s+manifold_dirac\.[\w]+\.[\w.]+"
    r"|\bmanifold_dirac\.(?:mechanics|manifolds|interconnection|errors|config|_\w+)\.\w"
    r"|\bmd\._\w+|\bmd\.(?:mechanics|manifolds|interconnection|errors|config)\."
)


def deep_imports(text: str) -> list[str]:
    """The uses of internal modules in ``text`` (Python code)."""
    return [m.group(0) for m in _DEEP.finditer(text)]


def _code_of_markdown(text: str) -> str:
    return "\n".join(m.group(1) for m in re.finditer(r"^```python[^\n]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE))


def _sources() -> list[tuple[str, str]]:
    out = [(str(p.relative_to(ROOT)), _code_of_markdown(p.read_text(encoding="utf-8")))
           for p in sorted((ROOT / "docs").rglob("*.md"))]
    out.append(("README.md", _code_of_markdown((ROOT / "README.md").read_text(encoding="utf-8"))))
    out += [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted((ROOT / "examples").glob("*.py"))]
    return out


def test_the_scan_finds_deep_imports():
    bad = [
        "from manifold_dirac._mechanics.integrate import integrate",
        "from manifold_dirac.systems.catalog import get_example",
        "from manifold_dirac._mechanics import Scheme",
        "from manifold_dirac._errors import StepError",
        "from manifold_dirac._sweep import sweep",
        "import manifold_dirac._mechanics.integrate",
        "x = manifold_dirac._mechanics.integrate.legendre_inverse",
        "md._mechanics.integrate(...)",
    ]
    for line in bad:
        assert deep_imports(line), line
    good = [
        "import manifold_dirac as md",
        "from manifold_dirac import integrate, sweep",
        "from manifold_dirac.systems import heavy_top",
        "from manifold_dirac.testing import check_manifold_laws",
        "from manifold_dirac.dirac import verify",
        "md.systems.heavy_top()",
    ]
    for line in good:
        assert not deep_imports(line), line


def test_docs_examples_and_readme_use_only_the_public_surface():
    found = {name: deep_imports(code) for name, code in _sources()}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"internal modules used (import the names from manifold_dirac instead): {found}"


def test_the_public_submodules_names_are_documented_attributes():
    for name in PUBLIC_SUBMODULES:
        mod = getattr(md, name)
        assert mod.__doc__, name
        for attr in getattr(mod, "__all__", ()):
            assert hasattr(mod, attr), (name, attr)


# ------------------------------------------------------------------ the reference of the core API
CORE = ("integrate", "Integrator", "rollout", "LagrangeDiracSystem", "interconnect", "sweep", "Trajectory")


_PACKAGE = []


def _griffe_object_at(path: str):
    """The griffe object defined at ``path`` (``module.qualname``)."""
    griffe = pytest.importorskip("griffe")
    if not _PACKAGE:
        _PACKAGE.append(griffe.load("manifold_dirac", search_paths=[str(ROOT)], docstring_parser="numpy",
                                    resolve_aliases=True, resolve_external=False))
    return _PACKAGE[0][path.removeprefix("manifold_dirac.")]


def _griffe_object(name: str):
    obj = getattr(md, name)
    return _griffe_object_at(f"{obj.__module__}.{obj.__qualname__}")


def documented(obj) -> tuple[list[str], bool]:
    """The parameters of ``obj`` (a griffe object) without a description, and whether it has Examples."""
    sections = obj.docstring.parsed if obj.docstring else []
    described = {}
    for s in sections:
        if s.kind.value in ("parameters", "attributes", "other parameters"):
            for p in s.value:
                for n in p.name.split(","):
                    described[n.strip().lstrip("*")] = bool(p.description.strip())
    if obj.is_class:
        init = obj.members.get("__init__")
        names = [p.name for p in init.parameters] if init is not None else [
            n for n, m in obj.members.items() if m.is_attribute and not n.startswith("_") and m.annotation is not None]
    else:
        names = [p.name for p in obj.parameters]
    missing = [n for n in names if n not in ("self", "cls", "kwargs", "args") and not described.get(n, False)]
    return missing, any(s.kind.value == "examples" for s in sections)


@pytest.mark.parametrize("name", CORE)
def test_the_core_api_is_documented(name):
    missing, examples = documented(_griffe_object(name))
    assert not missing, f"{name}: parameters without a description: {missing}"
    assert examples, f"{name}: no Examples section"


def test_the_documentation_check_sees_a_missing_description():
    griffe = pytest.importorskip("griffe")
    mod = griffe.visit("m", filepath=Path("m.py"), code=textwrap.dedent('''
        def f(a, b):
            """Do.

            Parameters
            ----------
            a : int
                The a.
            b : int
            """
    '''), docstring_parser=griffe.Parser.numpy)
    assert documented(mod["f"]) == (["b"], False)


# the rest of the public names with Examples (the reference shows them; each one runs here)
DOCUMENTED_EXAMPLES = (
    "Manifold", "Retraction", "GroupRetraction", "register_retraction", "resolve_retraction", "MatrixLieGroup",
    "GeomstatsManifold", "Sphere2", "QuadratureRule", "GalerkinRule", "register_rule", "get_rule", "Scheme",
    "register_scheme", "get_scheme", "StepMap", "State", "StepRecord", "Interaction", "InterconnectedSystem",
    "linear_interaction", "pin_joint", "rolling_without_slipping", "rolling_ball_on_plane",
    "RetractionDomainError", "StepError", "ConvergenceError", "IllPosedStepError", "IllPosedSystemError",
    "NonFiniteError", "StepDomainError", "RunInterrupted", "DegenerateLagrangianWarning",
    "save_dataset", "load_dataset", "clear_store", "Example", "retraction_study", "StudyResult",
    "RunState", "Rollout", "solve_step",
    "dirac.verify", "dirac.dirac_route", "study.point_at", "cli.build_parser", "cli.main", "dirac.LinearSubspace", "dirac.LinearDirac",
    "dirac.canonical_two_form", "dirac.block_diag_forms", "dirac.interconnect_structures", "dirac.interaction", "testing.check_manifold_laws", "testing.draw_sample", "testing.laws_for", "testing.point_arrays",
    "dirac.dirac_differential", "dirac.constraint_forms_of_intersection",
    "systems.lc_from_elements", "systems.mass_spring_monolithic", "systems.mass_spring_torn",
    "systems.rolling_ball", "systems.rolling_ball_exact", "systems.rolling_disk",
    "systems.rolling_disk_exact", "systems.two_wheel_cart", "systems.two_wheel_cart_flat", "systems.four_bar",
    "systems.four_bar_initial", "systems.rigid_double_pendulum", "systems.rigid_double_pendulum_initial",
    "systems.rolling_disk_3d", "systems.rolling_disk_3d_initial", "systems.harmonic_oscillator",
    "systems.harmonic_oscillator_exact", "systems.damped_oscillator", "systems.damped_oscillator_exact",
    "systems.pendulum", "systems.double_pendulum", "systems.spherical_pendulum",
    "systems.spherical_pendulum_vertical_momentum", "systems.cartesian_spherical_pendulum",
    "systems.lc_circuit", "systems.lc_circuit_exact", "systems.lotka_volterra_invariant",
    "systems.lotka_volterra", "systems.inclined_knife_edge", "systems.knife_edge",
    "systems.inclined_knife_edge_exact", "systems.chaplygin_sled", "systems.chaplygin_sled_reference",
    "systems.differential_drive", "systems.snakeboard", "systems.snakeboard_initial",
    "systems.snakeboard_reference", "systems.free_rigid_body", "systems.heavy_top",
    "systems.spatial_angular_momentum", "systems.heavy_top_reference", "systems.tumbling_brick",
    "systems.tumbling_brick_on_product", "systems.se3_spatial_momentum", "systems.tumbling_brick_reference",
    "testing.assert_close", "testing.check_adjoint", "testing.check_ambient_tangent",
    "testing.check_batch_consistency", "testing.check_derivatives_finite",
    "testing.check_differential_at_zero", "testing.check_domain_edges", "testing.check_exp_log",
    "testing.check_float64", "testing.check_fused_equals_composition", "testing.check_group_inverse",
    "testing.check_hat_vee", "testing.check_in_domain", "testing.check_inverse_jacobians_autodiff",
    "testing.check_inverse_jacobians_fd", "testing.check_inverse_jacobians_perturbation",
    "testing.check_inverse_retract_round_trip", "testing.check_jacobians_autodiff",
    "testing.check_jacobians_fd", "testing.check_jacobians_perturbation", "testing.check_points_on_manifold",
    "testing.main", "testing.check_retract_at_zero", "testing.check_symmetry", "testing.law_values",
    "testing.points", "testing.register_manifold", "testing.registered_manifolds", "testing.samples",
    "testing.seeds", "testing.tangents", "testing.unregister_manifold",
    "dirac.DiracRouteResult", "dirac.StepVerification", "dirac.constraint_along_retraction",
    "dirac.discrete_structure_of", "dirac.DiscreteDiracDifferential", "dirac.DiscreteDiracStructure",
    "dirac.DiscreteStepResidual", "dirac.IntersectionForms", "dirac.LagrangeDiracResidual",
    "dirac.LinearRelation", "dirac.TwoFormOnDistribution", "dirac.discrete_dirac_differential",
    "dirac.interconnect_discrete_structures", "dirac.in_discrete_structure", "dirac.induced",
    "dirac.lagrange_dirac_residual",
    "study.StudyRow", "study.study_cell",
)


@pytest.mark.parametrize("name", slow_cases(
    CORE + ("equal_velocities", "observed_order", "energy_drift", "SO3", "SE2", "SE3", "Euclidean", "ProductManifold",
            "get_example", "example_system", "SolverOptions", "Status", "cache_directory", "plot_se2_path",
            "plot_so3_body_axes", "plot_angular_momentum_sphere", "plot_energy_and_constraint", "plot_convergence",
            "plot_work_precision", "plot_trajectory") + DOCUMENTED_EXAMPLES,
    # the examples that compile the most (tests/_tiers.py)
    {"dirac.dirac_route", "dirac.DiracRouteResult", "dirac.verify", "dirac.StepVerification",
     "DegenerateLagrangianWarning", "plot_trajectory", "plot_se2_path", "plot_so3_body_axes",
     "plot_angular_momentum_sphere"}))
def test_the_core_api_examples_run(name, tmp_path, monkeypatch):
    import doctest

    pytest.importorskip("xarray")
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)
    obj = md
    for part in name.split("."):  # "dirac.verify": a public submodule's name
        obj = getattr(obj, part)
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, name, globs={}) if t.examples]
    assert tests, f"{name} has no examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for t in tests:
        runner.run(t)
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")
    assert runner.failures == 0, f"{name}: {runner.failures} of its examples failed (output above)"


# what the rest of the public namespace still lacks: it may only shrink
MAX_UNDESCRIBED_PARAMETERS = 0
MAX_WITHOUT_EXAMPLES = 0


def test_the_rest_of_the_reference_does_not_get_worse():
    undescribed, without_examples = [], []
    for name in md.__all__:
        obj = getattr(md, name)
        if name in PUBLIC_SUBMODULES or name == "cli" or not callable(obj):
            continue
        missing, examples = documented(_griffe_object(name))
        undescribed += [f"{name}({m})" for m in missing]
        if not examples:
            without_examples.append(name)
    assert len(undescribed) <= MAX_UNDESCRIBED_PARAMETERS, undescribed
    assert len(without_examples) <= MAX_WITHOUT_EXAMPLES, without_examples


# the same count over the public submodules' names (md.systems, md.dirac, md.testing, md.study, md.cli, ...)
MAX_SUBMODULE_UNDESCRIBED_PARAMETERS = 0
MAX_SUBMODULE_WITHOUT_EXAMPLES = 0


def test_the_submodules_reference_does_not_get_worse():
    undescribed, without_examples = [], []
    for module_name in (*PUBLIC_SUBMODULES, "cli"):
        module = getattr(md, module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or not getattr(obj, "__module__", "").startswith("manifold_dirac"):
                continue
            missing, examples = documented(_griffe_object_at(f"{obj.__module__}.{obj.__qualname__}"))
            undescribed += [f"{module_name}.{name}({m})" for m in missing]
            if not examples:
                without_examples.append(f"{module_name}.{name}")
    assert len(undescribed) <= MAX_SUBMODULE_UNDESCRIBED_PARAMETERS, undescribed
    assert len(without_examples) <= MAX_SUBMODULE_WITHOUT_EXAMPLES, without_examples
