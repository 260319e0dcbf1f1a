"""SO(3) and SE(2) exp/log against scipy (and SE(2) against geomstats), the sphere
against geomstats' metric, and every manifold against the numpy engine (the
library's first engine, removed at the engine switch: its values at the fixed
samples are recorded in ``tests/data/numpy_engine_manifolds.npz``, see
``tests/data/README.md``).

Tolerance 1e-12 throughout. geomstats itself loses digits in two places,
measured with its 2.8.0 release: the SE(2) vector-form log for ``|omega|``
in about [5e-4, 0.15] (cancellation just above its Taylor cutoff: errors up
to 2e-11), and the sphere's ``metric.log`` near 0 and near the antipode (it
goes through ``arccos``). The comparisons with geomstats skip exactly those
ranges; scipy and an independent quadrature cover them. Functions are
``jax.jit``-compiled once for the fixed sample shapes used here.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy.integrate import quad_vec
from scipy.spatial.transform import Rotation

from manifold_dirac._manifolds import SE2, SO3, Euclidean, ProductManifold, Sphere2
from manifold_dirac.testing import assert_close, law_values

RNG_SEED = 20240611
N = 200

so3, se2 = SO3(), SE2()
so3_exp, so3_log, so3_quat = jax.jit(so3.exp), jax.jit(so3.log), jax.jit(SO3.as_quaternion)
se2_exp, se2_log = jax.jit(se2.exp), jax.jit(se2.log)


def _rotvecs(rng, lo, hi):
    d = rng.standard_normal((N, 3))
    return d / np.linalg.norm(d, axis=-1, keepdims=True) * rng.uniform(lo, hi, N)[:, None]


ANGLE_RANGES = {
    "tiny": (1e-12, 1e-8),
    "small": (1e-8, 1e-3),
    "generic": (1e-3, 3.0),
    "near-pi": (np.pi - 1e-2, np.pi - 1e-9),
}


@pytest.mark.parametrize("rng_range", list(ANGLE_RANGES))
def test_so3_exp_log_match_scipy(rng_range):
    x = _rotvecs(np.random.default_rng(RNG_SEED), *ANGLE_RANGES[rng_range])
    R = np.asarray(so3_exp(x))
    assert_close(R, Rotation.from_rotvec(x).as_matrix(), 0, 1e-12, "SO3.exp vs scipy from_rotvec")
    assert_close(so3_log(R), Rotation.from_matrix(R).as_rotvec(), 0, 1e-12, "SO3.log vs scipy as_rotvec")
    assert_close(so3_log(R), x, 0, 1e-12, "SO3.log(exp(x)) = x")


def test_so3_log_at_exactly_pi_is_one_of_the_two_logarithms():
    axes = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1 / np.sqrt(2), 1 / np.sqrt(2), 0.0]])
    axes = np.resize(axes, (N, 3))  # the compiled shape
    R = Rotation.from_rotvec(np.pi * axes).as_matrix()
    w = np.asarray(so3_log(R))
    assert np.all(np.abs(np.linalg.norm(w, axis=-1) - np.pi) < 1e-12)
    assert np.all(np.minimum(np.abs(w - np.pi * axes).max(-1), np.abs(w + np.pi * axes).max(-1)) < 1e-12)
    assert_close(so3_exp(w), R, 0, 1e-12, "exp(log(R)) at a rotation by pi")


@pytest.mark.parametrize("rng_range", list(ANGLE_RANGES))
def test_so3_quaternions_match_scipy(rng_range):
    rng = np.random.default_rng(RNG_SEED + 1)
    x = _rotvecs(rng, *ANGLE_RANGES[rng_range])
    R = Rotation.from_rotvec(x).as_matrix()
    ref = Rotation.from_rotvec(x).as_quat(canonical=True)  # (x, y, z, w), w >= 0
    assert_close(so3_quat(R), ref, 0, 1e-12, "SO3.as_quaternion vs scipy as_quat")
    quat = rng.standard_normal((N, 4))
    assert_close(
        SO3.from_quaternion(quat),
        Rotation.from_quat(quat).as_matrix(),
        0,
        1e-12,
        "SO3.from_quaternion vs scipy from_quat",
    )


def _se2_samples(rng, lo, hi):
    x = rng.standard_normal((N, 3))
    x[:, 0] = rng.uniform(lo, hi, N) * rng.choice([-1.0, 1.0], N)
    return x


SE2_RANGES = {
    "tiny": (0.0, 1e-8),
    "small": (1e-8, 5e-4),
    "geomstats-band": (5e-4, 0.15),
    "moderate": (0.15, 2.0),
    "near-pi": (2.0, np.pi - 1e-9),
}


@pytest.mark.parametrize("rng_range", list(SE2_RANGES))
def test_se2_exp_log_match_scipy_and_quadrature(rng_range):
    # exp(w, v) = (rot(w), int_0^1 rot(s w) v ds): scipy's rotation and an independent quadrature
    x = _se2_samples(np.random.default_rng(RNG_SEED + 4), *SE2_RANGES[rng_range])
    g = np.asarray(se2_exp(x))
    rot = Rotation.from_rotvec(np.pad(x[:, :1], ((0, 0), (2, 0)))).as_matrix()[:, :2, :2]
    assert_close(g[:, :2, :2], rot, 0, 1e-12, "SE2.exp rotation vs scipy")

    def integrand(s):
        c, sn = np.cos(s * x[:, 0]), np.sin(s * x[:, 0])
        return np.stack([c * x[:, 1] - sn * x[:, 2], sn * x[:, 1] + c * x[:, 2]], -1)

    t, _ = quad_vec(integrand, 0.0, 1.0, epsabs=1e-15, epsrel=1e-14)
    assert_close(g[:, :2, 2], t, 0, 1e-12, "SE2.exp translation vs quadrature")
    assert_close(g[:, 2], np.broadcast_to([0.0, 0.0, 1.0], (N, 3)), 0, 0, "SE2.exp last row")
    assert_close(se2_log(g), x, 0, 1e-12, "SE2.log(exp(x)) = x")


@pytest.fixture(scope="module")
def gs_se2():
    from manifold_dirac._compat import import_geomstats

    try:
        import_geomstats("geometry.special_euclidean")
    except ImportError:
        pytest.skip("geomstats not installed")
    from geomstats.geometry.special_euclidean import SpecialEuclidean

    return SpecialEuclidean(2, point_type="vector")


@pytest.mark.parametrize("rng_range", list(SE2_RANGES))
def test_se2_exp_log_match_geomstats(gs_se2, rng_range):
    x = _se2_samples(np.random.default_rng(RNG_SEED + 5), *SE2_RANGES[rng_range])
    g = np.asarray(se2_exp(x))
    v = gs_se2.exp_from_identity(x)  # geomstats' vector form (theta, x, y): our twist order
    assert_close(
        np.asarray(se2.to_coordinates(g))[:, [2, 0, 1]], v, 0, 1e-12, "SE2.exp vs geomstats exp_from_identity"
    )
    if rng_range != "geomstats-band":  # geomstats' own log loses digits there (module docstring)
        assert_close(
            se2_log(g), gs_se2.log_from_identity(v), 0, 1e-12, "SE2.log vs geomstats log_from_identity"
        )


@pytest.fixture(scope="module")
def spheres():
    from manifold_dirac._compat import geomstats_available

    if not geomstats_available():
        pytest.skip("geomstats not installed")
    return Sphere2(), Sphere2(values="geomstats")


@pytest.mark.parametrize("norm", [1e-2, 0.3, 1.0, 2.0, 3.0])
def test_sphere_closed_forms_equal_geomstats_metric(spheres, norm):
    # geomstats' log goes through arccos: accurate to 1e-12 only away from 0 and the antipode
    sphere, sphere_gs = spheres
    rng = np.random.default_rng(3)
    q0 = sphere.random_point(rng, (N,))
    d = rng.standard_normal((N, 2))
    xi = norm * d / np.linalg.norm(d, axis=-1, keepdims=True)
    v = np.asarray(sphere.ambient_tangent(q0, xi))
    q1 = sphere.retract(q0, xi)
    assert_close(q1, sphere.space.metric.exp(v, np.asarray(q0)), 0, 1e-14, "retract vs geomstats metric.exp")
    assert_close(sphere_gs.retract(q0, xi), q1, 0, 1e-14, "values='geomstats' vs closed form: retract")
    ref = np.einsum(
        "...ai,...a->...i",
        np.asarray(sphere.frame(q0)),
        sphere.space.metric.log(np.asarray(q1), np.asarray(q0)),
    )
    assert_close(sphere.inverse_retract(q0, q1), ref, 0, 1e-12, "inverse_retract vs E^T metric.log")
    assert_close(sphere_gs.inverse_retract(q0, q1), ref, 0, 1e-15, "values='geomstats' is E^T metric.log")


MANIFOLDS = {
    "so3-exp": lambda: SO3("exp"),
    "so3-cayley": lambda: SO3("cayley"),
    "se2-exp": lambda: SE2("exp"),
    "se2-cayley": lambda: SE2("cayley"),
    "se2-so2xr2": lambda: SE2("so2xr2"),
    "so3xr2": lambda: ProductManifold(SO3(), Euclidean(2)),
    "sphere2": Sphere2,  # twin: the numpy engine's Sphere2 (manifolds.sphere)
}
"""Each compiled manifold, by the name of its numpy-engine twin's record."""


@functools.lru_cache(maxsize=None)
def numpy_engine_values() -> dict[str, np.ndarray]:
    """The numpy engine's samples and values, ``data/numpy_engine_manifolds.npz`` (found by walking up
    from this file: ``tests/data``)."""
    for parent in Path(__file__).resolve().parents:
        path = parent / "data" / "numpy_engine_manifolds.npz"
        if path.is_file():
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
    raise FileNotFoundError(f"numpy_engine_manifolds.npz: no data/ directory holding it above {__file__}")


def _leaves(rec: dict[str, np.ndarray], key: str) -> list[np.ndarray]:
    return [rec[f"{key}/{i}"] for i in range(sum(k.startswith(f"{key}/") for k in rec))]


@pytest.mark.parametrize("regime", ["near_zero", "generic"])
@pytest.mark.parametrize("name", list(MANIFOLDS))
def test_same_values_as_the_numpy_engine(name, regime):
    """At the recorded sample (drawn by ``draw_sample(manifold, RNG_SEED, (3, 1, 2), regime)``), the
    compiled law programs give the numpy engine's recorded values."""
    new, rec, k = MANIFOLDS[name](), numpy_engine_values(), f"{name}/{regime}"
    leaves = _leaves(rec, f"{k}/q")
    q = leaves[0] if len(leaves) == 1 else tuple(leaves)  # a product manifold's point: a tuple of factors
    xi = rec[f"{k}/xi"]
    v = law_values(new, q, xi)  # the compiled law programs: no extra compile
    r1 = _leaves(rec, f"{k}/retract")
    assert len(jax.tree.leaves(v["retract"])) == len(r1)
    for a, b in zip(jax.tree.leaves(v["retract"]), r1):
        assert_close(a, b, 0, 1e-14, f"{name}: retract vs the numpy engine")
    assert_close(v["inverse_retract"], rec[f"{k}/inverse_retract"], 1e-12, 1e-14, f"{name}: inverse_retract")
    for what in ("J0", "J1", "J_q", "J_xi"):
        assert_close(v[what], rec[f"{k}/{what}"], 1e-12, 1e-13, f"{name}: {what} vs the numpy engine")


def test_importing_geomstats_leaves_numpy_unpatched():
    """The trapz alias geomstats 2.8 needs with numpy >= 2.4 lives only during its import."""
    import numpy

    from manifold_dirac._compat import _numpy_trapz_alias, import_geomstats

    had = hasattr(numpy, "trapz")
    try:
        import_geomstats("geometry.hypersphere")
    except ImportError:
        pytest.skip("geomstats not installed")
    assert hasattr(numpy, "trapz") == had
    with _numpy_trapz_alias() as lent:  # sensitivity: inside the scope the alias is there
        assert hasattr(numpy, "trapz") and lent == (not had)
    assert hasattr(numpy, "trapz") == had
    assert np.allclose(Sphere2(values="geomstats").retract(np.array([0.0, 0.0, 1.0]), np.array([0.3, 0.1])),
                       Sphere2().retract(np.array([0.0, 0.0, 1.0]), np.array([0.3, 0.1])), atol=1e-12)
