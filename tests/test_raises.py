"""What the reference says a public function raises, it raises.

Every exception listed under ``Raises`` in the docstring of a public name
(``md.*``, the public submodules' names, and the public methods of public
classes) has an entry in ``RAISES``: a call that raises it. The list of
documented pairs and the table must agree both ways, so a new ``Raises``
entry needs a demonstration, and an entry that is no longer true fails here.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md

ROOT = Path(__file__).resolve().parents[1]


def _public_paths() -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "docs" / "_hooks"))
    try:
        import public_names
    finally:
        sys.path.pop(0)
    return public_names.public_paths()


def documented_raises(obj, path: str) -> set[tuple[str, str]]:
    """``{(path, exception name)}`` of the Raises sections of ``obj`` (griffe) and its public methods."""
    out = set()
    for section in obj.docstring.parsed if obj.docstring else []:
        if section.kind.value == "raises":
            for entry in section.value:
                for name in str(entry.annotation).strip("()").split(","):
                    out.add((path, name.strip()))
    if obj.is_class:
        for name, member in obj.members.items():
            if name.startswith("_") or member.is_alias:
                continue
            if member.is_function or member.is_class:
                out |= documented_raises(member, f"{path}.{name}")
    return out


@pytest.fixture(scope="module")
def documented() -> set[tuple[str, str]]:
    griffe = pytest.importorskip("griffe")
    package = griffe.load("manifold_dirac", search_paths=[str(ROOT)], docstring_parser="numpy",
                          resolve_aliases=True, resolve_external=False)
    pairs = set()
    for defined, public in _public_paths().items():
        pairs |= documented_raises(package[defined.removeprefix("manifold_dirac.")], public)
    return pairs


# ------------------------------------------------------------------ the calls that raise
def _pendulum_state(q=0.5):
    integ = md.Integrator(md.systems.pendulum(), 0.1)
    return integ, integ.initial_state(np.array([q]), np.array([0.0]))


def _nan_system():
    """log(1 + q) is NaN for q < -1: the first step from q = -3 fails."""
    return md.LagrangeDiracSystem(md.Euclidean(1), lambda q, v: 0.5 * v @ v + jnp.log(1.0 + q[0]))


def _nan_integrator():
    integ = md.Integrator(_nan_system(), 0.1)
    return integ, integ.initial_state(np.array([-3.0]), np.array([0.0]))


def _run_with_callback(exc):
    integ, st = _pendulum_state()

    def callback(state):
        raise exc

    integ.run(st, 300, callback=callback)  # more than one compiled chunk: the callback runs


def _trajectory(n=3):
    return md.integrate(md.systems.pendulum(), np.array([0.5]), v0=np.array([0.0]), h=0.1, n_steps=n)


def _write(path: str, text: str) -> str:
    Path(path).write_text(text)
    return path


def _other_class_named(base, name):
    return type("Other", (base,), {"name": name})


def _bad_euclidean():
    class Doubling(md.Euclidean):  # R_q(xi) = q + 2 xi, but its Jacobians are still the identity
        def retract(self, q, xi):
            return super().retract(q, 2.0 * xi)

    return Doubling(2)


def _sweep_without_xarray():
    saved = sys.modules.get("xarray")
    sys.modules["xarray"] = None  # type: ignore[assignment]
    try:
        md.sweep(lambda h: {"x": h}, {"h": [0.1]}, workers=0, progress=False)
    finally:
        if saved is None:
            del sys.modules["xarray"]
        else:
            sys.modules["xarray"] = saved


SO3_CAYLEY = type(md.SO3("cayley").retraction)
CARTESIAN = "cartesian_spherical_pendulum"

RAISES = {
    ("manifold_dirac.Integrator.initial_state", "ValueError"):
        lambda: _pendulum_state()[0].initial_state(np.array([0.5, 1.0]), np.array([0.0])),
    ("manifold_dirac.Integrator.initial_state", "TypeError"):
        lambda: _pendulum_state()[0].initial_state(np.array([0.5]), np.array([0.0]), t0="later"),
    ("manifold_dirac.Integrator.step", "StepError"): lambda: _nan_integrator()[0].step(_nan_integrator()[1]),
    ("manifold_dirac.Integrator.run", "StepError"): lambda: _nan_integrator()[0].run(_nan_integrator()[1], 3),
    ("manifold_dirac.Integrator.run", "RunInterrupted"): lambda: _run_with_callback(KeyboardInterrupt),
    ("manifold_dirac.Integrator.run", "Exception"): lambda: _run_with_callback(LookupError("stop here")),
    ("manifold_dirac.LagrangeDiracSystem", "ValueError"):
        lambda: md.LagrangeDiracSystem(md.Euclidean(2), lambda q, v: v),
    ("manifold_dirac.LagrangeDiracSystem", "TypeError"):
        lambda: md.LagrangeDiracSystem(md.Euclidean(2), lambda q, v: None),
    ("manifold_dirac.LagrangeDiracSystem.check_position", "ValueError"):
        lambda: getattr(md.systems, CARTESIAN)().check_position(np.array([0.0, 0.0, 0.3])),
    ("manifold_dirac.LagrangeDiracSystem.project_position", "ValueError"):
        lambda: getattr(md.systems, CARTESIAN)().project_position(np.zeros(3)),
    ("manifold_dirac.Manifold.check_point", "ValueError"): lambda: md.SO3().check_point(np.ones((3, 3))),
    ("manifold_dirac.SO3.from_euler", "ValueError"): lambda: md.SO3().from_euler("xyz", np.array([1.0, 2.0])),
    ("manifold_dirac.Trajectory.load", "ValueError"): lambda: md.Trajectory.load(_write("foreign.npz", "not a file")),
    ("manifold_dirac.Trajectory.load", "OSError"): lambda: md.Trajectory.load("no_such_file.npz"),
    ("manifold_dirac.dirac.constraint_forms_of_intersection", "ValueError"):
        lambda: md.dirac.constraint_forms_of_intersection(np.ones((1, 3)), np.ones((1, 2))),
    ("manifold_dirac.dirac.dirac_route", "ValueError"):
        lambda: md.dirac.dirac_route(md.systems.pendulum(), np.array([0.5]), np.array([0.0]), h=0.1, n_steps=2,
                                     scheme="no_such_scheme"),
    ("manifold_dirac.dirac.dirac_route", "RuntimeError"):
        lambda: md.dirac.dirac_route(md.systems.pendulum(), np.array([0.5]), np.array([0.0]), h=0.1, n_steps=2,
                                     tol=0.0, max_iter=1),
    ("manifold_dirac.dirac.verify", "ValueError"):
        lambda: md.dirac.verify(md.systems.pendulum(), md.integrate(md.systems.pendulum(), np.array([[0.5], [0.6]]),
                                                                    v0=np.zeros((2, 1)), h=0.1, n_steps=2)),
    ("manifold_dirac.study.example_system", "ValueError"):
        lambda: md.example_system(md.get_example("pendulum"), "no_such_retraction"),
    ("manifold_dirac.get_example", "ValueError"): lambda: md.get_example("no_such_example"),
    ("manifold_dirac.get_rule", "ValueError"): lambda: md.get_rule("no_such_rule"),
    ("manifold_dirac.get_scheme", "ValueError"): lambda: md.get_scheme("no_such_scheme"),
    ("manifold_dirac.interconnect", "ValueError"): lambda: md.interconnect(),
    ("manifold_dirac.linear_interaction", "ValueError"):
        lambda: md.linear_interaction({("a", 0): float("nan")}),
    ("manifold_dirac.linear_interaction", "TypeError"):
        lambda: md.linear_interaction({("a", 0): "one"}),
    ("manifold_dirac.plotting.plot_se2_path", "ValueError"): lambda: md.plot_se2_path(np.zeros((1, 3, 3))),
    ("manifold_dirac.plotting.plot_so3_body_axes", "ValueError"): lambda: md.plot_so3_body_axes(np.zeros((4, 2, 2))),
    ("manifold_dirac.plotting.plot_angular_momentum_sphere", "ValueError"):
        lambda: md.plot_angular_momentum_sphere(np.zeros((4, 2))),
    ("manifold_dirac.plotting.plot_energy_and_constraint", "ValueError"):
        lambda: md.plot_energy_and_constraint(_trajectory(), floor=0.0),
    ("manifold_dirac.plotting.plot_convergence", "ValueError"): lambda: md.plot_convergence([0.1, 0.05], {}),
    ("manifold_dirac.plotting.plot_work_precision", "ValueError"): lambda: md.plot_work_precision([]),
    ("manifold_dirac.register_retraction", "TypeError"): lambda: md.register_retraction(md.SO3)(int),
    ("manifold_dirac.register_retraction", "ValueError"):
        lambda: md.register_retraction(md.SO3)(_other_class_named(SO3_CAYLEY, "cayley")),
    ("manifold_dirac.register_rule", "TypeError"): lambda: md.register_rule(42),
    ("manifold_dirac.register_rule", "ValueError"):
        lambda: md.register_rule(md.QuadratureRule("midpoint", ((0.0, 0.5), (1.0, 0.5)), order=2, symmetric=True)),
    ("manifold_dirac.register_scheme", "TypeError"): lambda: md.register_scheme(int),
    ("manifold_dirac.register_scheme", "ValueError"):
        lambda: md.register_scheme(_other_class_named(type(md.get_scheme("plus")), "split")),
    ("manifold_dirac.resolve_retraction", "ValueError"): lambda: md.resolve_retraction(md.SE2, "no_such_retraction"),
    ("manifold_dirac.study.retraction_study", "ValueError"): lambda: md.retraction_study("pendulum", hs=[0.1]),
    ("manifold_dirac.rollout", "ValueError"):
        lambda: md.rollout(md.systems.pendulum(), np.array([0.5, 1.0]), np.array([0.0]), h=0.1, n_steps=2),
    ("manifold_dirac.rollout", "TypeError"):
        lambda: md.rollout(md.systems.pendulum(), np.array([0.5]), np.array([0.0]), h=0.1, n_steps=2,
                           solver="tight"),
    ("manifold_dirac.study.study_cell", "StepError"):
        lambda: md.study.study_cell(md.get_example("free_rigid_body"), "exp", "symmetric", "midpoint", 4.0,
                                    T=8.0, long_steps=2),  # a step far beyond exp's domain
    ("manifold_dirac.sweep", "TypeError"): lambda: md.sweep(lambda h: {"x": h}, {"h": [object()]}, workers=0),
    ("manifold_dirac.sweep", "ValueError"): lambda: md.sweep(lambda h: {"x": h}, {"h": []}, workers=0),
    ("manifold_dirac.sweep", "ImportError"): _sweep_without_xarray,
    ("manifold_dirac.systems.four_bar_initial", "ValueError"): lambda: md.systems.four_bar_initial(coupler=0.1),
    ("manifold_dirac.systems.free_rigid_body", "ValueError"): lambda: md.systems.free_rigid_body(inertia=(1.0, -1.0, 2.0)),
    ("manifold_dirac.systems.heavy_top", "ValueError"): lambda: md.systems.heavy_top(chi=(1.0, 2.0)),
    ("manifold_dirac.systems.snakeboard", "ValueError"): lambda: md.systems.snakeboard(mass=-1.0),
    ("manifold_dirac.systems.snakeboard_reference", "RuntimeError"):
        lambda: md.systems.snakeboard_reference([1.0], rotor_torque=lambda t: float("nan") if t > 0.3 else 0.0),
    ("manifold_dirac.systems.snakeboard_initial", "ValueError"): lambda: md.systems.snakeboard_initial(phi=2.0),
    ("manifold_dirac.systems.snakeboard_reference", "ValueError"):
        lambda: md.systems.snakeboard_reference([1.0], md.systems.snakeboard_initial()[0],
                                                np.array([1.0, 0.0, 0.0, 0.0, 0.0])),  # omega != u tan(phi) / r
    ("manifold_dirac.testing.assert_close", "AssertionError"): lambda: md.testing.assert_close(1.0, 2.0),
    ("manifold_dirac.testing.check_manifold_laws", "AssertionError"):
        lambda: md.testing.check_manifold_laws(_bad_euclidean(), seeds=range(1), batch_shapes=((),),
                                               regimes=("generic",)),
    ("manifold_dirac.testing.check_manifold_laws", "ValueError"):
        lambda: md.testing.check_manifold_laws(md.Euclidean(2), laws=["no_such_law"]),
    ("manifold_dirac.testing.register_manifold", "ValueError"): lambda: md.testing.register_manifold("", md.Euclidean),
    ("manifold_dirac.testing.register_manifold", "TypeError"): lambda: md.testing.register_manifold("mine", 42),
}


def _exception(name: str) -> type[BaseException]:
    import builtins

    return getattr(md, name, None) or getattr(builtins, name)


def test_every_documented_exception_has_a_call_that_raises_it(documented):
    missing = sorted(documented - set(RAISES))
    stale = sorted(set(RAISES) - documented)
    assert not missing, f"documented under Raises, with no call in RAISES that raises it: {missing}"
    assert not stale, f"in RAISES but no longer documented (remove the entry): {stale}"


@pytest.mark.parametrize("path, exception", sorted(RAISES), ids=lambda x: x.removeprefix("manifold_dirac."))
def test_the_documented_exception_is_raised(path, exception, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    if path.startswith("manifold_dirac.plotting"):
        pytest.importorskip("matplotlib")
    if path.startswith(("manifold_dirac.sweep", "manifold_dirac.study")):
        pytest.importorskip("xarray")
    with pytest.raises(_exception(exception)):
        RAISES[(path, exception)]()
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def test_the_collector_reads_raises_sections():
    """A Raises entry the table lacks is seen (so the agreement test can fail)."""
    griffe = pytest.importorskip("griffe")
    mod = griffe.visit("m", filepath=Path("m.py"), code=textwrap.dedent('''
        def f(a):
            """Do.

            Raises
            ------
            ValueError, TypeError
                For a bad ``a``.
            KeyError
                Never, in truth.
            """
    '''), docstring_parser=griffe.Parser.numpy)
    assert documented_raises(mod["f"], "m.f") == {("m.f", "ValueError"), ("m.f", "TypeError"), ("m.f", "KeyError")}
