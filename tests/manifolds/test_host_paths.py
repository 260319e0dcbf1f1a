"""Points built from concrete values are computed on the host, in NumPy, with the compiled path's formulas.

``exp`` of SO(3), SE(3) and SE(2), ``from_coordinates`` of SO(3), SE(3), SE(2) and S^2, and the default
points of R^n and S^2, are what a user calls to build initial data (and what the catalog's examples call). Evaluated
eagerly with ``jax.numpy`` they compiled one small XLA program per operation and shape: about forty at
the first ``get_example`` of a process (1.2 s on two cores), up to 15 more for some examples' initial
data. On concrete input they now run in NumPy and put the result on the device. Checked here:

* the values are the compiled (``jax.jit``) path's, to a few ulps for rotation angles below 2 pi (the
  sines and cosines of NumPy and XLA differ by more at large arguments: 66 ulps at 100 rad), on both
  sides of every small-angle branch and in batches; float64 JAX arrays of the compiled path's shape;
* a host call compiles no XLA program (and neither does building any catalog example: a fresh process,
  with a positive control that the counter sees a compile);
* the comparison fails when the host formula is off by 1e-12 (so it can fail);
* non-finite input, and an overflow, are refused by the checked methods with their own errors (no
  NumPy warning first);
* a wrong shape is refused with the same message as before; traced input (a list of tracers under
  ``jit``, ``grad``, ``vmap``) and complex input keep the ``jax.numpy`` path;
* the frame of S^2 is *not* computed on the host by itself: an eager frame equals the compiled one bit
  for bit even within ulps of its chart switch, where NumPy's rounding could pick the other chart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest

from manifold_dirac._manifolds import SE2, SE3, SO3, Euclidean, ProductManifold, Sphere2
from manifold_dirac._manifolds import so3 as so3_module
from manifold_dirac._manifolds.sphere import sphere_frame

ROOT = Path(__file__).resolve().parents[2]
EPS = float(np.finfo(float).eps)


def _rotation_vectors(rng, n):
    """Rotation vectors on both sides of the Taylor branch (|w|^2 < 1e-3), up to nearly pi, and zero."""
    d = rng.standard_normal((n, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    scale = np.concatenate([[0.0, 1e-9, 1e-4, 0.0316, 0.0317], rng.uniform(0.04, np.pi - 1e-6, n - 5)])
    return d * scale[:, None]


def _inputs(name, rng, n=24):
    if name in ("SO3.exp", "SO3.from_coordinates"):
        return _rotation_vectors(rng, n)
    if name == "SE3.from_coordinates":
        return np.concatenate([rng.standard_normal((n, 3)), _rotation_vectors(rng, n)], -1)
    if name == "SE2.from_coordinates":
        return np.concatenate([rng.standard_normal((n, 2)), rng.uniform(-np.pi, np.pi, (n, 1))], -1)
    if name == "SE3.exp":
        return np.concatenate([_rotation_vectors(rng, n), rng.standard_normal((n, 3))], -1)
    if name == "SE2.exp":  # angles on both sides of the Taylor branch (w^2 < 1e-3), and up to pi
        w = np.concatenate([[0.0, 1e-9, -1e-4, 0.0316, -0.0317], rng.uniform(-np.pi, np.pi, n - 5)])
        return np.concatenate([w[:, None], rng.standard_normal((n, 2))], -1)
    if name == "Sphere2.from_coordinates":
        return np.stack([rng.uniform(0, np.pi, n), rng.uniform(-np.pi, np.pi, n)], -1)
    raise KeyError(name)


ROUTES = {
    "SO3.exp": SO3().exp,
    "SE3.exp": SE3().exp,
    "SE2.exp": SE2().exp,
    "SO3.from_coordinates": SO3().from_coordinates,
    "SE3.from_coordinates": SE3().from_coordinates,
    "SE2.from_coordinates": SE2().from_coordinates,
    "Sphere2.from_coordinates": Sphere2().from_coordinates,
}


def _agree(host, traced, what):
    """The host's values are the compiled path's to a few ulps of the entries' size (here <= 1 or so)."""
    host, traced = np.asarray(host), np.asarray(traced)
    assert host.shape == traced.shape, what
    err = np.max(np.abs(host - traced) / np.maximum(1.0, np.abs(traced)))
    assert err <= 8 * EPS, f"{what}: host and compiled values differ by {err:.3g}"


@pytest.mark.parametrize("name", list(ROUTES))
def test_host_values_are_the_compiled_values(name, compiles):
    fn = ROUTES[name]
    x = _inputs(name, np.random.default_rng(len(name)))
    traced = jax.jit(fn)(x)  # compiled: the path a step map takes
    before = compiles()
    host = fn(x)
    assert compiles() == before, f"{name} on concrete input compiled an XLA program"
    assert isinstance(host, jax.Array) and host.dtype == np.float64, name
    _agree(host, traced, name)
    # a batch of batches and a single point: the same values
    _agree(fn(x.reshape(4, 6, -1)), np.asarray(traced).reshape(4, 6, *np.shape(traced)[1:]), name + " batch")
    _agree(fn(x[7]), np.asarray(traced)[7], name + " one point")
    _agree(fn(jax.device_put(x)), traced, name + " of a concrete JAX array")


def test_the_comparison_catches_a_host_formula_off_by_1e_12(monkeypatch):
    """The sensitivity of the check above: SO(3)'s host sine made 1e-12 too large (NumPy's module swapped
    in ``so3`` only) and the host values no longer agree."""

    class _OffSine:
        def __getattr__(self, attr):
            return getattr(np, attr)

        @staticmethod
        def sin(x):
            return np.sin(x) * (1 + 1e-12)

    x = _rotation_vectors(np.random.default_rng(3), 24)
    traced = jax.jit(SO3().exp)(x)
    monkeypatch.setattr(so3_module, "np", _OffSine())
    with pytest.raises(AssertionError, match="host and compiled values differ"):
        _agree(SO3().exp(x), traced, "SO3.exp with a wrong sine")


@pytest.mark.parametrize("name", list(ROUTES))
def test_non_finite_values_are_refused_without_numpy_warnings(name):
    """The checked methods refuse non-finite input, and a non-finite result of finite input (an overflow of
    ``|w|^2``), with their own errors, never a NumPy warning first."""
    from manifold_dirac._errors import RetractionDomainError

    x = _inputs(name, np.random.default_rng(5), n=8)
    bad = x.copy()
    bad[1, -1] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RetractionDomainError, match=r"non-finite entries at batch index \[1\]"):
            ROUTES[name](bad)
        if name in ("SO3.exp", "SO3.from_coordinates", "SE3.from_coordinates", "SE3.exp"):
            huge = x.copy()
            huge[2] *= 1e200  # |w|^2 overflows
            with pytest.raises(RetractionDomainError, match=r"non-finite result from finite arguments at batch index \[2\]"):
                ROUTES[name](huge)


def test_large_rotation_angles_agree_to_the_sines_accuracy():
    """Beyond 2 pi NumPy's and XLA's sine and cosine round differently (NumPy's are glibc's): the host and
    compiled rotations agree to 8 ulps up to 10 rad and to 100 ulps up to 100 rad."""
    rng = np.random.default_rng(7)
    d = rng.standard_normal((400, 3))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    for top, ulps in ((10.0, 8), (100.0, 100)):
        w = d * rng.uniform(0, top, (400, 1))
        err = np.max(np.abs(np.asarray(SO3().exp(w)) - np.asarray(jax.jit(SO3().exp)(w))))
        assert err <= ulps * EPS, (top, err / EPS)


@pytest.mark.slow
def test_traced_and_complex_input_keep_the_jax_path():
    """A list of tracers (the documented ``from_coordinates([x, y, theta])`` under ``jit``/``grad``/``vmap``)
    and complex input are not converted by NumPy."""
    R = jax.jit(lambda a: SO3().from_coordinates([a, 0.0, 0.0]))(0.3)
    _agree(R, SO3().exp(np.array([0.3, 0.0, 0.0])), "SO3.from_coordinates of a list of tracers")
    dg = jax.grad(lambda th: SE2().from_coordinates([0.0, 0.0, th])[0, 0])(0.3)
    assert dg == pytest.approx(-np.sin(0.3), rel=1e-15)
    assert jax.vmap(lambda th: SO3().from_coordinates((th, 0.0, 0.0)))(np.array([0.1, 0.2])).shape == (2, 3, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning: the imaginary part is not dropped on the host
        assert SO3().exp(np.array([0.1 + 0.0j, 0.2, 0.3])).dtype == np.complex128


def test_the_frame_of_s2_stays_on_xla_at_its_chart_switch():
    """Eager ``Sphere2().frame`` equals the compiled ``sphere_frame`` bit for bit on points within a few ulps
    of ``|z| = 1/sqrt(2)``; NumPy's frame (``xp=np``, used for the catalog's fixed data, far from the switch)
    equals it to round-off away from the switch."""
    rng = np.random.default_rng(11)
    phi = rng.uniform(-np.pi, np.pi, 2000)
    z = np.sqrt(0.5) + rng.integers(-4, 5, 2000) * EPS * np.sqrt(0.5)
    z *= rng.choice([-1.0, 1.0], 2000)
    r = np.sqrt(1.0 - z * z)
    q = np.stack([r * np.cos(phi), r * np.sin(phi), z], -1)
    np.testing.assert_array_equal(np.asarray(Sphere2().frame(q)), np.asarray(jax.jit(sphere_frame)(q)))
    q = rng.standard_normal((50, 3))
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    q = q[np.abs(np.abs(q[:, 2]) - np.sqrt(0.5)) > 1e-3]
    _agree(sphere_frame(q, xp=np), jax.jit(sphere_frame)(q), "sphere_frame(xp=np)")


@pytest.mark.parametrize("name, bad, message", [
    ("SO3.from_coordinates", [1.0, 2.0], r"a rotation vector has shape \(\.\.\., 3\), got \(2,\)"),
    ("SE3.from_coordinates", [1.0, 2.0, 3.0], r"coordinates are \(\.\.\., 6\) = \(x, y, z, rx, ry, rz\), got shape \(3,\)"),
    ("SE2.from_coordinates", [1.0, 2.0], r"coordinates are \(\.\.\., 3\) = \(x, y, theta\), got shape \(2,\)"),
    ("Sphere2.from_coordinates", [1.0], r"coordinates are \(\.\.\., 2\) = \(polar, azimuth\), got shape \(1,\)"),
])
def test_wrong_shapes_are_refused_as_before(name, bad, message):
    with pytest.raises(ValueError, match=message):
        ROUTES[name](np.asarray(bad))
    with pytest.raises(ValueError, match=message):  # traced: the same check
        jax.jit(ROUTES[name])(np.asarray(bad))


def test_default_points_compile_nothing(compiles):
    before = compiles()
    points = [M.default_point() for M in (Euclidean(3), Sphere2(), SO3(), SE2(), ProductManifold(SE2(), Euclidean(2)))]
    assert compiles() == before
    np.testing.assert_array_equal(points[0], np.zeros(3))
    np.testing.assert_array_equal(points[1], [0.0, 0.0, 1.0])
    np.testing.assert_array_equal(points[4][1], np.zeros(2))
    assert all(isinstance(leaf, jax.Array) for leaf in jax.tree.leaves(points))


@pytest.mark.slow
def test_building_every_catalog_example_compiles_nothing():
    """A fresh process: ``get_example``, ``system()`` and ``initial()`` of every example and retraction
    compile no XLA program (before: about forty for the catalog's import, up to 53 for one example)."""
    code = """
import json, jax
import manifold_dirac as md
count = [0]
jax.monitoring.register_event_duration_secs_listener(
    lambda e, d, **k: count.__setitem__(0, count[0] + (e == "/jax/core/compile/backend_compile_duration")))
from manifold_dirac.systems.catalog import EXAMPLES
out = {}
for name, ex in EXAMPLES.items():
    before = count[0]
    for r in ex.retractions:
        s = ex.system(r)
        ex.initial(s)
    out[name] = count[0] - before
before = count[0]
jax.numpy.zeros(7) + 1.0  # the positive control: eager jax.numpy compiles, and the counter sees it
out["control"] = count[0] - before
print(json.dumps(out))
"""
    env = dict(os.environ, MANIFOLD_DIRAC_JAX_CACHE="0")  # a cache hit would fire no compile event
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = json.loads(proc.stdout.strip().splitlines()[-1])
    assert counts.pop("control") >= 1
    assert len(counts) >= 21
    assert {k: v for k, v in counts.items() if v} == {}, "examples whose building compiled XLA programs"


def test_product_coordinates_and_euclidean_points_compile_nothing(compiles):
    """``ProductManifold.from_coordinates`` slices concrete coordinates in NumPy and hands each factor its
    part (SE(2)'s on the host, R^2's checked and put on the device); the values are the compiled SE(2)'s."""
    c = np.random.default_rng(13).standard_normal((4, 5))
    Q = ProductManifold(SE2(), Euclidean(2))
    expected = jax.jit(SE2().from_coordinates)(c[..., :3])
    before = compiles()
    pose, x = Q.from_coordinates(c)
    Euclidean(3).check_point(np.zeros(3))
    assert compiles() == before
    _agree(pose, expected, "the product's SE(2) factor")
    np.testing.assert_array_equal(np.asarray(x), c[..., 3:])
    assert isinstance(x, jax.Array) and x.dtype == np.float64
