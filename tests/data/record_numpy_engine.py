"""Record the numpy engine's outputs that the compiled engine's tests compare against.

Run from the repository root, with both engines present (before the engine
switch; see ``tests/data/README.md`` for the commit)::

    .venv/bin/python tests/data/record_numpy_engine.py

It writes, next to this file,

* ``numpy_engine_systems.npz``: for ``tests/next/systems`` -- the 20-step run of
  every ``CASES`` entry of ``tests/next/systems/bundled.py``, the module-level
  constants and the exact/reference/invariant functions at the tests' inputs,
  the public names of ``manifold_dirac.systems`` and the catalog's examples;
* ``numpy_engine_knife_heavy_top.npz``: for ``tests/next/test_engine.py`` -- the
  knife edge in coordinates (9 scheme x rule runs, 40 steps) and the heavy top
  (200 steps);
* ``numpy_engine_manifolds.npz``: for
  ``tests/next/manifolds/test_next_manifold_crosschecks.py`` -- every manifold's
  retract, inverse retract and their Jacobians at the fixed samples.

The inputs come from the compiled engine where the tests draw them from it
(``bundled.CASES``, ``draw_sample``, ``random_point``) and are stored with the
outputs, so the tests evaluate the compiled engine at exactly the recorded
inputs. Arrays are float64, stored exactly (``np.savez_compressed``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import manifold_dirac._next  # noqa: E402,F401  (float64)
import manifold_dirac.manifolds as OLD_M  # noqa: E402
from manifold_dirac import integrate as old_integrate  # noqa: E402
from manifold_dirac import systems as OLD  # noqa: E402
from manifold_dirac.manifolds.geomstats_adapter import Sphere2 as OldSphere2  # noqa: E402
from manifold_dirac.systems.catalog import EXAMPLES as OLD_EXAMPLES  # noqa: E402
from manifold_dirac._next import systems as NEW  # noqa: E402
from manifold_dirac._next.manifolds import SE2, SO3, Euclidean, ProductManifold, Sphere2  # noqa: E402
from manifold_dirac._next.testing import draw_sample  # noqa: E402
from tests.next.systems.bundled import BUNDLED, CASES, FIELDS, N_STEPS, new  # noqa: E402

TRAJ_FIELDS = ("t", *FIELDS)


def f64(x) -> np.ndarray:
    a = np.asarray(x)
    assert a.dtype == np.float64, a.dtype
    return a


def old_system(key: str):
    name, kw = BUNDLED[key]
    return getattr(OLD, name)(**kw)


# ------------------------------------------------------------------ systems
def record_systems() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    # the 20-step run of every CASES entry (tests/next/systems/test_bundled_systems.py)
    for key, case in CASES.items():
        case = dict(case)
        q0, h = case.pop("q0"), case.pop("h")
        tr = old_integrate(old_system(key), np.asarray(q0), h=h, n_steps=N_STEPS, **case)
        assert tr.ok, key
        for f in TRAJ_FIELDS:
            out[f"run/{key}/{f}"] = f64(getattr(tr, f))
        out[f"run/{key}/system"] = np.array(tr.meta["system"])
    # public names, constants
    out["all"] = np.array(sorted(OLD.__all__))
    out["KIRCHHOFF_LC"] = np.asarray(OLD.KIRCHHOFF_LC)
    out["KNIFE_EDGE_CONSTRAINT"] = np.asarray(OLD.KNIFE_EDGE_CONSTRAINT)
    out["LOTKA_VOLTERRA_INITIAL/q"] = f64(OLD.LOTKA_VOLTERRA_INITIAL[0])
    out["LOTKA_VOLTERRA_INITIAL/p"] = f64(OLD.LOTKA_VOLTERRA_INITIAL[1])
    # exact solutions and references at the tests' inputs
    t = np.linspace(0.0, 2.0, 7)
    R0 = np.asarray(CASES["heavy_top"]["q0"])
    out["exact/t"] = t
    out["exact/inclined_knife_edge"] = f64(OLD.inclined_knife_edge_exact(t))
    out["exact/damped_oscillator"] = f64(OLD.damped_oscillator_exact(t, 1.0, 0.5))
    out["exact/lc_circuit"] = f64(OLD.lc_circuit_exact(t, 1.0, 0.5))
    hq, hv = OLD.harmonic_oscillator_exact(t, np.ones(2), np.zeros(2))
    out["exact/harmonic_oscillator/q"], out["exact/harmonic_oscillator/v"] = f64(hq), f64(hv)
    out["exact/chaplygin_sled_reference"] = f64(OLD.chaplygin_sled_reference(t))
    out["exact/heavy_top_reference/R0"] = f64(R0)
    out["exact/heavy_top_reference"] = f64(OLD.heavy_top_reference(1.0, R0, np.ones(3)))
    # invariant helpers at the test's inputs (drawn as the test drew them)
    rng = np.random.default_rng(2)
    q = np.asarray(new("heavy_top").Q.random_point(rng, (4,)))
    p = rng.standard_normal((4, 3))
    x = np.abs(rng.standard_normal((4, 2))) + 0.1
    u = np.asarray(new("spherical_pendulum").Q.random_point(rng, (4,)))
    p2 = rng.standard_normal((4, 2))
    out.update({"invariants/q": f64(q), "invariants/p": f64(p), "invariants/x": f64(x),
                "invariants/u": f64(u), "invariants/p2": f64(p2)})
    out["invariants/spatial_angular_momentum"] = f64(OLD.spatial_angular_momentum(q, p))
    out["invariants/lotka_volterra_invariant"] = f64(OLD.lotka_volterra_invariant(x))
    out["invariants/spherical_pendulum_vertical_momentum"] = f64(
        OLD.spherical_pendulum_vertical_momentum(OLD.spherical_pendulum().Q, u, p2))
    # the catalog: defaults, retractions and initial data of each example built locally
    for name in sorted(set(OLD_EXAMPLES) - {"mass_spring_torn", "lc_from_elements", "rolling_disk",
                                             "rolling_ball", "two_wheel_cart"}):
        ex = OLD_EXAMPLES[name]
        out[f"catalog/{name}/h"] = np.float64(ex.h)
        out[f"catalog/{name}/T"] = np.float64(ex.T)
        out[f"catalog/{name}/plot"] = np.array(ex.plot)
        out[f"catalog/{name}/angles"] = np.array(ex.angles, dtype=np.int64)
        out[f"catalog/{name}/retractions"] = np.array(ex.retractions)
        for i, r in enumerate(ex.retractions):
            q0, v0 = ex.initial(ex.system(r))
            assert isinstance(q0, np.ndarray), (name, type(q0))
            out[f"catalog/{name}/{i}/q0"], out[f"catalog/{name}/{i}/v0"] = f64(q0), f64(v0)
    return out


# ------------------------------------------------------- knife edge, heavy top
def old_knife_edge_xy(m=1.0, J=0.5, g=9.81, alpha=0.3):
    """The inclined knife edge in coordinates (x, y, theta) for the numpy engine (as in test_engine.py)."""
    from manifold_dirac import Euclidean as OldEuclidean
    from manifold_dirac import LagrangeDiracSystem as OldSystem

    def L(q, v):
        kinetic = 0.5 * m * (v[..., 0] ** 2 + v[..., 1] ** 2) + 0.5 * J * v[..., 2] ** 2
        return kinetic + m * g * np.sin(alpha) * q[..., 0]

    def A(q):
        th = q[..., 2]
        return np.stack([np.sin(th), -np.cos(th), 0 * th], -1)[..., None, :]

    return OldSystem(OldEuclidean(3), L, constraint=A, name="knife_edge_xy")


def record_knife_heavy_top() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    q0, v0 = np.zeros(3), np.array([0.0, 0.0, 1.0])
    for scheme in ("plus", "minus", "symmetric"):
        for rule in ("midpoint", "trapezoid", "rectangle+"):
            tr = old_integrate(old_knife_edge_xy(), q0, v0=v0, h=0.05, n_steps=40, scheme=scheme,
                               discrete_lagrangian=rule)
            assert tr.ok
            for f in TRAJ_FIELDS:
                out[f"knife_edge_xy/{scheme}/{rule}/{f}"] = f64(getattr(tr, f))
    Q0 = np.asarray(SO3().exp(jnp.array([0.3, 0.1, 0.0])))  # test_engine.Q0
    tr = old_integrate(OLD.heavy_top(), Q0, v0=np.array([0.5, -0.2, 2.0]), h=0.01, n_steps=200)
    assert tr.ok
    for f in TRAJ_FIELDS:
        out[f"heavy_top/{f}"] = f64(getattr(tr, f))
    return out


# --------------------------------------------------------------- manifolds
RNG_SEED = 20240611  # test_next_manifold_crosschecks.RNG_SEED
PAIRS = {
    "so3-exp": (lambda: SO3("exp"), lambda: OLD_M.SO3("exp")),
    "so3-cayley": (lambda: SO3("cayley"), lambda: OLD_M.SO3("cayley")),
    "se2-exp": (lambda: SE2("exp"), lambda: OLD_M.SE2("exp")),
    "se2-cayley": (lambda: SE2("cayley"), lambda: OLD_M.SE2("cayley")),
    "se2-so2xr2": (lambda: SE2("so2xr2"), lambda: OLD_M.SE2("so2xr2")),
    "so3xr2": (lambda: ProductManifold(SO3(), Euclidean(2)),
               lambda: OLD_M.ProductManifold(OLD_M.SO3(), OLD_M.Euclidean(2))),
    "sphere2": (Sphere2, OldSphere2),
}


def record_manifolds() -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, (make_new, make_old) in PAIRS.items():
        for regime in ("near_zero", "generic"):
            k = f"{name}/{regime}"
            q, xi = draw_sample(make_new(), RNG_SEED, (3, 1, 2), regime)
            ref = make_old()
            qn, xn = jax.tree.map(np.asarray, q), np.asarray(xi)
            for i, leaf in enumerate(jax.tree.leaves(qn)):
                out[f"{k}/q/{i}"] = f64(leaf)
            out[f"{k}/xi"] = f64(xn)
            r1 = ref.retract(qn, xn)
            for i, leaf in enumerate(jax.tree.leaves(r1)):
                out[f"{k}/retract/{i}"] = f64(leaf)
            out[f"{k}/inverse_retract"] = f64(ref.inverse_retract(qn, r1))
            out[f"{k}/J0"], out[f"{k}/J1"] = map(f64, ref.inverse_retract_jacobians(qn, r1))
            out[f"{k}/J_q"], out[f"{k}/J_xi"] = map(f64, ref.retract_jacobians(qn, xn))
    return out


def main() -> None:
    for name, record in (("numpy_engine_systems", record_systems),
                         ("numpy_engine_knife_heavy_top", record_knife_heavy_top),
                         ("numpy_engine_manifolds", record_manifolds)):
        arrays = record()
        path = HERE / f"{name}.npz"
        np.savez_compressed(path, **arrays)
        with np.load(path, allow_pickle=False) as z:  # stored exactly
            assert sorted(z.files) == sorted(arrays)
            for key, a in arrays.items():
                assert z[key].dtype == a.dtype and np.array_equal(z[key], a), key
        print(f"{path.relative_to(ROOT)}: {len(arrays)} arrays, {path.stat().st_size / 1024:.1f} kB")


if __name__ == "__main__":
    main()
