"""Every bundled system (but the interconnected ones) on the compiled engine.

Two checks per system:

* **same equations, two implementations**: a short run of the compiled
  engine's system equals the numpy engine's run of the system of the same
  name and parameters to ~1e-10, field by field -- and the comparison does
  see a parameter off by 1 %. The numpy engine (the library's first engine)
  is gone: its runs, constants and function values are recorded in
  ``tests/data/numpy_engine_systems.npz`` (``tests/data/README.md``);
* **analytic partials = automatic partials**: the fast path each system
  ships (``partials=``) equals reverse-mode autodiff of its Lagrangian along
  the first-order retraction curve, at random states and batch shapes.

The systems are built once per session (``bundled.new``) and run with
the default scheme and rule, so the ported mechanics tests reuse their
compiled steps. Every factory runs in CI; the other retractions of the
rigid bodies and vehicles (each one more compiled program, ~5-9 s) only
where the mechanics tests use them in CI too, else under ``slow``.
"""

import zlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac import systems as NEW
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems.catalog import EXAMPLES, get_example

from .bundled import CASES, FIELDS, assert_same_trajectory, new, numpy_engine_reference, run_against_reference

# ------------------------------------------------------------ two engines
# (the spherical pendulum, ~10 s cold: its retraction Jacobians are compared with automatic differentiation in
# tests/manifolds/test_sphere_jacobians.py, the sphere's laws in the manifold laws, its example runs in the default tier)
SLOW_VARIANTS = {"free_rigid_body_cayley", "heavy_top_cayley", "inclined_knife_edge_cayley",
                 "inclined_knife_edge_so2xr2", "chaplygin_sled_cayley", "spherical_pendulum"}


@pytest.mark.parametrize("key", [k if k not in SLOW_VARIANTS else pytest.param(k, marks=pytest.mark.slow)
                                 for k in sorted(CASES)])
def test_same_trajectory_as_the_numpy_engine(key):
    tn, to = run_against_reference(key)
    assert tn.ok and tn.meta["system"] == to.meta["system"]
    if key == "lotka_volterra":
        # L is linear in v: p0 does not determine v0. The numpy engine records the
        # v = 0 its Legendre inversion starts from; the compiled engine refuses the
        # degenerate inversion and records the forward difference. Later points agree.
        assert_same_trajectory(tn, to, fields=tuple(f for f in FIELDS if f != "v"))
        np.testing.assert_allclose(tn.v[1:], to.v[1:], rtol=0, atol=1e-10 * (1 + np.abs(to.v).max()))
        np.testing.assert_allclose(tn.v[0], tn.xi[0] / CASES[key]["h"], rtol=0, atol=1e-12)
    else:
        assert_same_trajectory(tn, to)


def test_the_comparison_sees_a_parameter_off_by_one_percent():
    """The same check must fail for a system that differs from the numpy one by 1 % in a mass."""
    wrong = NEW.harmonic_oscillator(2, mass=1.01)
    tn, to = run_against_reference("harmonic_oscillator", new_system=wrong)
    with pytest.raises(AssertionError, match="the engines differ"):
        assert_same_trajectory(tn, to)
    assert np.abs(tn.q - to.q).max() > 1e-5  # far above the 1e-10 tolerance, not a round-off effect


# ------------------------------------------------------ partials by autodiff
def automatic_twin(sysm: LagrangeDiracSystem) -> LagrangeDiracSystem:
    """The same Lagrangian, constraint, force and parameters without the analytic partials."""
    if sysm.n_constraints == 0:
        A = None
    elif sysm.has_constant_constraint:
        A = np.asarray(sysm.constraint_matrix(None))
    else:
        A = lambda q, *p: sysm.constraint_matrix(q, *p)  # noqa: E731
    F = (lambda t, q, v, *p: sysm.force(t, q, v, *p)) if sysm.has_force else None
    return LagrangeDiracSystem(sysm.Q, lambda q, v, *p: sysm.lagrangian(q, v, *p), A, F,
                               name=f"{sysm.name}_autodiff", params=sysm.params)


WITH_PARTIALS = sorted(k for k in CASES if not new(k).uses_automatic_partials)


def test_every_bundled_system_but_lotka_volterra_ships_analytic_partials():
    assert set(CASES) - set(WITH_PARTIALS) == {"lotka_volterra"}


@pytest.mark.parametrize("key", WITH_PARTIALS)
@pytest.mark.parametrize("batch", [(5,)])  # the mechanics port checks (), (4,), (2, 3) too
def test_analytic_partials_equal_autodiff(key, batch):
    sysm = new(key)
    twin = automatic_twin(sysm)
    rng = np.random.default_rng(zlib.crc32(f"{key}{batch}".encode()))
    q = sysm.Q.random_point(rng, batch)
    v = rng.standard_normal((*batch, sysm.dim))
    both = jax.jit(lambda q, v: (sysm.evaluate("partials", q, v), twin.evaluate("partials", q, v)))
    (aq, av), (cq, cv) = both(q, v)
    for a, c in ((aq, cq), (av, cv)):
        a, c = np.asarray(a), np.asarray(c)
        assert a.shape == c.shape == (*batch, sysm.dim)
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-12 * (1 + np.max(np.abs(c))))


def test_a_wrong_analytic_partial_is_seen_by_the_autodiff_check():
    good = new("heavy_top")
    bad = LagrangeDiracSystem(good.Q, good.lagrangian,
                              partials=lambda q, v: (jnp.cross(jnp.array([0.0, 0.0, 1.0]), q[2, :]), v))
    rng = np.random.default_rng(1)
    q, v = good.Q.random_point(rng), rng.standard_normal(3)
    dq_bad, _ = bad.partials(q, v)
    dq_ad, _ = automatic_twin(bad).partials(q, v)
    assert np.abs(np.asarray(dq_bad) - np.asarray(dq_ad)).max() > 1e-3


# --------------------------------------------------------------- the port
def test_the_port_has_every_public_name_of_the_numpy_systems():
    added = {"cartesian_spherical_pendulum", "four_bar", "four_bar_initial", "rigid_double_pendulum",
             "rigid_double_pendulum_initial", "rolling_disk_3d", "rolling_disk_3d_initial"}  # holonomic (issue 11)
    added |= {n for n in NEW.__all__ if "brick" in n or n == "se3_spatial_momentum"}  # SE(3) (issue 11)
    added |= {"snakeboard", "snakeboard_initial", "snakeboard_reference"}  # composition's benchmark (issue 25)
    assert sorted(NEW.__all__) == sorted(numpy_engine_reference()["all"].tolist() + sorted(added))
    for name in NEW.__all__:
        assert hasattr(NEW, name), name


def _same_numbers(a, b, what):
    """Equal up to round-off of the last bits: the recorded values of functions computed with numpy's
    sin/cos/exp/log (the engines shared these definitions; the recording ran on one machine, and
    numpy's float64 transcendental functions may differ by an ulp across CPUs and builds)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape, f"{what}: shapes {a.shape} != {b.shape}"
    atol = 4 * np.finfo(float).eps * (1 + np.max(np.abs(b)))
    np.testing.assert_allclose(a, b, rtol=0, atol=atol, err_msg=what)


def test_constants_and_exact_solutions_are_the_numpy_ones():
    ref = numpy_engine_reference()
    for name in ("KIRCHHOFF_LC", "KNIFE_EDGE_CONSTRAINT"):
        np.testing.assert_array_equal(getattr(NEW, name), ref[name])
    np.testing.assert_array_equal(NEW.LOTKA_VOLTERRA_INITIAL[0], ref["LOTKA_VOLTERRA_INITIAL/q"])
    np.testing.assert_array_equal(NEW.LOTKA_VOLTERRA_INITIAL[1], ref["LOTKA_VOLTERRA_INITIAL/p"])
    t = np.linspace(0.0, 2.0, 7)
    np.testing.assert_array_equal(t, ref["exact/t"])
    _same_numbers(NEW.inclined_knife_edge_exact(t), ref["exact/inclined_knife_edge"], "inclined_knife_edge")
    _same_numbers(NEW.damped_oscillator_exact(t, 1.0, 0.5), ref["exact/damped_oscillator"], "damped")
    _same_numbers(NEW.lc_circuit_exact(t, 1.0, 0.5), ref["exact/lc_circuit"], "lc_circuit_exact")
    q, v = NEW.harmonic_oscillator_exact(t, np.ones(2), np.zeros(2))
    _same_numbers(q, ref["exact/harmonic_oscillator/q"], "harmonic_oscillator_exact q")
    _same_numbers(v, ref["exact/harmonic_oscillator/v"], "harmonic_oscillator_exact v")
    np.testing.assert_allclose(NEW.chaplygin_sled_reference(t), ref["exact/chaplygin_sled_reference"],
                               atol=1e-12)
    R0 = np.asarray(CASES["heavy_top"]["q0"])
    np.testing.assert_allclose(R0, ref["exact/heavy_top_reference/R0"], rtol=0, atol=1e-15)
    np.testing.assert_allclose(NEW.heavy_top_reference(1.0, R0, np.ones(3)), ref["exact/heavy_top_reference"],
                               atol=1e-12)


def test_invariant_helpers_work_on_recorded_arrays():
    ref = numpy_engine_reference()
    q, p, x, u, p2 = (ref[f"invariants/{k}"] for k in ("q", "p", "x", "u", "p2"))
    np.testing.assert_allclose(NEW.spatial_angular_momentum(q, p), ref["invariants/spatial_angular_momentum"],
                               atol=1e-15)
    np.testing.assert_allclose(NEW.lotka_volterra_invariant(x), ref["invariants/lotka_volterra_invariant"],
                               atol=1e-15)
    np.testing.assert_allclose(NEW.spherical_pendulum_vertical_momentum(new("spherical_pendulum").Q, u, p2),
                               ref["invariants/spherical_pendulum_vertical_momentum"], atol=1e-14)


# ---------------------------------------------------------------- catalog
HOLONOMIC_EXAMPLES = {"cartesian_pendulum", "four_bar", "rolling_disk_3d", "rigid_double_pendulum"}
"""Added after the numpy engine (not in its recording); tested in tests/mechanics/test_holonomic.py."""
LOCAL_EXAMPLES = sorted(n for n, ex in EXAMPLES.items()
                        if n not in {"mass_spring_torn", "lc_from_elements", "rolling_disk", "rolling_ball",
                                     "two_wheel_cart", "tumbling_brick"} and n not in HOLONOMIC_EXAMPLES)
# tumbling_brick: new on the compiled engine, tested in tests/systems/test_tumbling_brick.py


@pytest.mark.parametrize("name", LOCAL_EXAMPLES)
def test_catalog_examples_build_with_every_retraction_and_start_on_their_reference(name):
    """Without integrating: each example builds, its initial data validate and equal the numpy
    engine's catalog's (recorded), and its reference (where it has one) equals the initial point's
    coordinates at t = 0."""
    ref = numpy_engine_reference()
    rec = f"catalog/{name}"
    assert f"{rec}/h" in ref, f"{name}: not in the numpy engine's catalog"
    ex = get_example(name)
    old_defaults = (float(ref[f"{rec}/h"]), float(ref[f"{rec}/T"]), str(ref[f"{rec}/plot"]),
                    tuple(int(i) for i in ref[f"{rec}/angles"]))
    assert (ex.h, ex.T, ex.plot, ex.angles) == old_defaults
    old_retractions = tuple(str(r) for r in ref[f"{rec}/retractions"])
    # the same retractions, but S^2's geodesic retraction is named "metric" on the compiled engine
    assert ex.retractions == (("metric",) if name == "spherical_pendulum" else old_retractions)
    for i, r in enumerate(ex.retractions):
        sysm = ex.system(r)
        assert isinstance(sysm, LagrangeDiracSystem)
        assert sysm.Q.retraction.name == r
        q0, v0 = ex.initial(sysm)
        sysm.Q.check_point(q0)
        assert np.shape(v0) == (sysm.dim,)
        np.testing.assert_allclose(np.asarray(q0), ref[f"{rec}/{i}/q0"], atol=1e-15)
        np.testing.assert_array_equal(v0, ref[f"{rec}/{i}/v0"])
        if ex.reference is not None:
            assert ex.error(sysm, q0, 0.0) < 1e-12
    with pytest.raises(ValueError, match="unknown retraction"):
        ex.system("no-such-retraction")


def test_get_example_lists_the_valid_names():
    with pytest.raises(ValueError, match="unknown system 'nope'; valid: .*heavy_top"):
        get_example("nope")
