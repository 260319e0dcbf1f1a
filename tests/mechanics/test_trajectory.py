"""The Trajectory result, the step-by-step interface, strides, callbacks, batches (compiled engine).

Ported from the numpy engine's ``tests/mechanics/test_trajectory.py`` with
every assertion. What changed with the engine, and how each test keeps its
intent:

* the **callback** of a run is called on the host after each compiled chunk
  (``CHUNK`` steps, not every step: a per-step Python call would defeat the
  compiled loop) with the current :class:`RunState`, and returning ``False``
  stops the run there;
* ``Integrator.step(state, force=F)`` replaced the system's force by ``F``;
  ``Integrator.step(state, u)`` **adds** the control covector ``u`` to it
  (held over the step). The control test compares a step with ``u`` against
  the same step with ``u = 0``;
* a rule's ``evaluate`` takes ``(system, q0, xi, h, t0)`` with the chart
  coordinate ``xi = R_{q0}^{-1}(q1)``, not ``q1``;
* ``meta["stride"]`` is checked on the stride-7 run the subsample test makes
  (stride is part of the compiled program: another stride compiles again).

The batch test compiles the batched heavy top (a program of its own) and is
marked ``slow``; ``tests/mechanics/test_batch_layout.py`` checks batches in CI.
"""

import dataclasses
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac._errors import StepError
from manifold_dirac._manifolds import SO3, Euclidean, ProductManifold
from manifold_dirac._run.loop import CHUNK
from manifold_dirac._run.integrator import Integrator
from manifold_dirac._run.integrate import integrate
from manifold_dirac._mechanics.rules import StepContext
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac._run.trajectory import FORMAT, FORMAT_VERSION, Trajectory

from ..systems.bundled import new


def test_save_load_round_trip(tmp_path):
    top = new("heavy_top")
    tr = integrate(top, top.Q.identity(), v0=np.array([0.1, 0.2, 1.0]), h=0.05, n_steps=20)
    path = tr.save(tmp_path / "top.npz")
    back = Trajectory.load(path)
    assert back.equals(tr) and back.meta["scheme"] == "symmetric" and back.meta["h"] == 0.05
    with np.load(path, allow_pickle=False) as data:  # no pickle anywhere
        assert "header" in data.files


PRODUCT = LagrangeDiracSystem(ProductManifold(SO3(), Euclidean(2)),
                              lambda q, v: 0.5 * jnp.sum(v * v) - 0.5 * jnp.sum(q[1] ** 2), name="prod")
"""A free body on SO(3) x R^2 with a spring on R^2 (one system: its step compiles once for the module)."""


@pytest.mark.slow
def test_save_load_product_points(tmp_path):
    sysm = PRODUCT
    tr = integrate(sysm, (SO3().identity(), np.array([1.0, 0.0])), v0=np.array([0, 0, 1.0, 0, 0.5]), h=0.1,
                   n_steps=5)
    back = Trajectory.load(tr.save(tmp_path / "p.npz"))
    assert isinstance(back.q, tuple) and back.q[0].shape == (6, 3, 3) and back.equals(tr)


def test_trajectory_is_frozen():
    tr = integrate(new("pendulum"), np.array([0.1]), v0=np.array([0.0]), h=0.1, n_steps=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        tr.t = None  # type: ignore[misc]


def test_fields_and_shapes():
    ke = new("inclined_knife_edge")
    tr = integrate(ke, ke.Q.identity(), v0=np.array([1.0, 0.0, 0.0]), h=0.1, n_steps=10)
    assert tr.t.shape == (11,) and tr.q.shape == (11, 3, 3) and tr.p.shape == (11, 3)
    assert tr.v.shape == (11, 3) and tr.energy.shape == (11,)
    assert tr.xi.shape == (10, 3) and tr.mu.shape == (10, 1) and tr.iterations.shape == (10,)
    assert tr.constraint_residual.shape == (10,) and np.all(tr.constraint_residual < 1e-12)
    assert tr.meta["n_steps"] == 10 and tr.meta["total_iterations"] == tr.iterations.sum()
    np.testing.assert_allclose(tr.t, 0.1 * np.arange(11))


def test_a_stride_stores_the_stride_1_points_over_several_chunks():
    """Inclined knife edge (Newton work at every step, a slip, a non-constant energy), stride 3 over more than
    one compiled chunk of stored points: every stored field is the stride-1 run's at the shared points, bit for
    bit (the same program from the same states), across the chunk boundary too; the points one step off differ
    (sensitivity)."""
    sysm = new("inclined_knife_edge")
    n, stride = 3 * CHUNK + 10, 3  # CHUNK + 5 stored points: two chunks
    kw = dict(v0=np.array([1.0, 0.0, 0.0]), h=0.05, n_steps=n)
    full = integrate(sysm, np.eye(3), **kw)
    sub = integrate(sysm, np.eye(3), stride=stride, **kw)
    idx = np.r_[np.arange(0, n, stride), n]
    assert sub.n_points == len(idx) > CHUNK
    for f in ("t", "q", "p", "v", "energy", "slip", "holonomic_violation"):
        np.testing.assert_array_equal(getattr(sub, f), getattr(full, f)[idx], err_msg=f)
    for f in ("xi", "mu", "residual", "constraint_residual", "iterations"):
        np.testing.assert_array_equal(getattr(sub, f), getattr(full, f)[idx[:-1]], err_msg=f)
    assert sub.meta["total_iterations"] == full.meta["total_iterations"]
    for f in ("q", "v", "energy", "slip"):
        assert not np.array_equal(getattr(sub, f)[1:], getattr(full, f)[idx[1:] - 1]), f


def test_stride_stores_a_subsample():
    pend = new("pendulum")
    full = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=100)
    sub = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=100, stride=7)
    idx = list(range(0, 100, 7)) + [100]
    np.testing.assert_array_equal(sub.q, full.q[idx])
    np.testing.assert_array_equal(sub.p, full.p[idx])
    np.testing.assert_allclose(sub.v, full.v[idx], rtol=0, atol=1e-15)
    assert sub.xi.shape[0] == len(idx) - 1
    assert sub.meta["stride"] == 7  # was test_meta_records_the_stride (stride 4)


def test_callback_can_stop_the_run():
    """Called after each compiled chunk with the RunState; ``False`` stops the run early."""
    seen = []

    def cb(state):
        seen.append(state.k)
        return state.k < 5

    n = CHUNK + 500
    tr = integrate(new("pendulum"), np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=n, callback=cb)
    assert seen == [CHUNK] and tr.n_points <= CHUNK + 1 < n + 1


def test_a_stopped_run_ends_at_the_state_the_callback_saw():
    """The numpy engine's ``seen == [1, ..., 5] and tr.n_points == 6``: the last
    point of a stopped run is the state the callback was shown, and the run
    records one step fewer than points, like any other trajectory."""
    seen = []

    def cb(state):
        seen.append(state.k)
        return state.k < 5

    tr = integrate(new("pendulum"), np.array([0.5]), v0=np.array([0.0]), h=0.01, n_steps=CHUNK + 500, callback=cb)
    assert seen == [CHUNK]
    assert tr.xi.shape[0] == tr.n_points - 1
    assert tr.n_points == seen[-1] + 1 and tr.meta["n_steps"] == seen[-1]


@pytest.mark.slow
def test_step_by_step_equals_integrate_and_takes_a_control_input():
    dd = new("differential_drive")
    integ = Integrator(dd, 0.05)
    zero = np.zeros(3)
    s = integ.initial_state(dd.Q.identity(), v0=np.zeros(3))
    qs = [s.q]
    for _ in range(20):
        s, _ = integ.step(s, zero)  # u = 0: the system's own force
        qs.append(s.q)
    tr = integrate(dd, dd.Q.identity(), v0=np.zeros(3), h=0.05, n_steps=20)
    np.testing.assert_allclose(np.stack(qs), tr.q, rtol=0, atol=1e-15)
    # a control loop: a constant input over the step is added to the system's force; a
    # forward push moves the vehicle further forward and does not turn it. From t0 = -h/2
    # the midpoint rule samples the steering torque 0.5 sin(t) at t = 0, where it vanishes.
    s0 = integ.initial_state(dd.Q.identity(), v0=np.zeros(3), t0=-0.025)
    s_free, _ = integ.step(s0, zero)
    s_push, _ = integ.step(s0, np.array([0.0, 2.0, 0.0]))
    c_free, c_push = np.asarray(dd.Q.to_coordinates(s_free.q)), np.asarray(dd.Q.to_coordinates(s_push.q))
    assert c_push[0] > c_free[0] > 0 and abs(c_push[2]) < 1e-15 and abs(c_free[2]) < 1e-15


@pytest.mark.slow
def test_batch_equals_loop_of_single_trajectories():
    top = new("heavy_top")
    rng = np.random.default_rng(3)
    q0 = top.Q.random_point(rng, (4,))
    v0 = rng.standard_normal((4, 3))
    tb = integrate(top, q0, v0=v0, h=0.05, n_steps=30)
    for i in range(4):
        ti = integrate(top, q0[i], v0=v0[i], h=0.05, n_steps=30)
        np.testing.assert_allclose(tb.q[:, i], ti.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(tb.p[:, i], ti.p, rtol=0, atol=1e-12)


@pytest.mark.slow
def test_minus_scheme_reports_the_momentum_of_53d():
    ke = new("knife_edge")
    tr = integrate(ke, ke.Q.identity(), v0=np.array([1.0, 1.0, 0.0]), h=0.1, n_steps=5, scheme="minus")
    # p_k = -D1 L_d(q_k, q_{k+1}) exactly (53c); the last point has a closing solve
    rule = Integrator(ke, 0.1, "minus").rule
    D1 = jax.jit(lambda q0, q1, t: rule.evaluate(ke, q0, ke.Q.inverse_retract(q0, q1),
                                                 StepContext(0.1, t, ke.params)).D1)
    for k in range(5):
        np.testing.assert_allclose(tr.p[k], -np.asarray(D1(tr.q[k], tr.q[k + 1], tr.t[k])), atol=1e-12)


def test_p0_only_records_the_legendre_velocity():
    """Given only p0, v[0] and E[0] come from the Legendre inverse, not a one-sided difference."""
    pend = new("pendulum")
    a = integrate(pend, np.array([0.5]), v0=np.array([0.0]), h=0.1, n_steps=50)
    b = integrate(pend, np.array([0.5]), p0=np.array([0.0]), h=0.1, n_steps=50)
    np.testing.assert_allclose(b.v[0], a.v[0], atol=1e-12)
    assert b.energy_error == pytest.approx(a.energy_error, rel=1e-9)


# ------------------------------------------------------------ files (issue 10, point 8)
DATA = Path(__file__).resolve().parents[1] / "data"
OLD_TOP = DATA / "numpy_engine_trajectory_heavy_top.npz"
OLD_PRODUCT = DATA / "numpy_engine_trajectory_product.npz"
OLD_BATCH = DATA / "numpy_engine_trajectory_batch_failed.npz"
MOTION = ("t", "p", "v", "energy", "xi", "mu")
"""The fields both engines define alike (Newton's iteration counts and residual scaling differ)."""


def _same_motion(a, b, atol):
    qa, qb = (a.q, b.q) if isinstance(a.q, tuple) else ((a.q,), (b.q,))
    pairs = [(getattr(a, f), getattr(b, f)) for f in MOTION] + list(zip(qa, qb))
    return all(x.shape == y.shape and np.allclose(x, y, rtol=0, atol=atol) for x, y in pairs)


def test_save_records_the_format_and_its_version(tmp_path):
    tr = Trajectory.load(OLD_TOP)
    path = tr.save(tmp_path / "top")
    assert path.name == "top.npz"
    with np.load(path, allow_pickle=False) as data:
        header = json.loads(str(data["header"]))
    assert header["format"] == FORMAT == "manifold_dirac.trajectory" and header["version"] == FORMAT_VERSION == 2
    assert Trajectory.load(path).equals(tr)


def test_a_numpy_engine_file_loads_and_matches_the_compiled_engine():
    """A file written by the numpy engine (format version 1, ``tests/data``) loads as it was written, and
    its run is the compiled engine's run at the same inputs (to round-off); another v0 is not."""
    old = Trajectory.load(OLD_TOP)
    assert old.ok and old.n_points == 21 and old.q.shape == (21, 3, 3) and old.xi.shape == (20, 3)
    assert old.meta["system"] == "heavy_top" and old.meta["h"] == 0.05 and old.meta["interrupted"] is False
    top = new("heavy_top")
    tr = integrate(top, top.Q.identity(), v0=np.array([0.1, 0.2, 1.0]), h=0.05, n_steps=20)
    assert _same_motion(tr, old, atol=1e-13)
    other = integrate(top, top.Q.identity(), v0=np.array([0.1, 0.2, 1.001]), h=0.05, n_steps=20)
    assert not _same_motion(other, old, atol=1e-13)


@pytest.mark.slow
def test_a_numpy_engine_product_file_loads_with_its_point_structure():
    old = Trajectory.load(OLD_PRODUCT)
    assert isinstance(old.q, tuple) and [a.shape for a in old.q] == [(6, 3, 3), (6, 2)]
    tr = integrate(PRODUCT, (SO3().identity(), np.array([1.0, 0.0])), v0=np.array([0, 0, 1.0, 0, 0.5]), h=0.1,
                   n_steps=5)
    assert _same_motion(tr, old, atol=1e-14)
    moved = dataclasses.replace(old, q=(old.q[0], old.q[1] + 1e-9))
    assert not _same_motion(tr, moved, atol=1e-14)


def test_a_numpy_engine_batch_with_a_failed_member_loads_and_equals_itself():
    old = Trajectory.load(OLD_BATCH)
    assert old.status.tolist() == [0, 3] and not old.ok and len(old.messages) == 1
    assert np.all(np.isnan(old.v[1:, 1])) and np.all(np.isfinite(old.v[:, 0]))


def test_equals_treats_nan_as_equal_at_the_same_places():
    tr = Trajectory.load(OLD_BATCH)
    assert np.isnan(tr.energy).any() and tr.equals(tr) and tr.equals(Trajectory.load(OLD_BATCH))
    v = tr.v.copy()
    v[1, 0, 0] = np.nan  # a NaN where the other has a number
    assert not tr.equals(dataclasses.replace(tr, v=v)) and not dataclasses.replace(tr, v=v).equals(tr)
    v = tr.v.copy()
    v[0, 0, 0] += 1e-12
    assert not tr.equals(dataclasses.replace(tr, v=v)) and tr.equals(dataclasses.replace(tr, v=v), atol=1e-11)
    # shapes must agree (allclose alone broadcasts a single point against all of them)
    one = dataclasses.replace(tr, t=np.full_like(tr.t[:1], tr.t[0]))
    flat = dataclasses.replace(tr, t=np.full_like(tr.t, tr.t[0]))
    assert not one.equals(flat) and not flat.equals(one)


def test_a_failed_runs_partial_trajectory_survives_save_and_load(tmp_path):
    """The partial trajectory of a raised failure holds the failed step's record (as many step
    records as points): a valid file."""
    top = new("heavy_top")
    with pytest.raises(StepError) as ei:
        integrate(top, top.Q.identity(), v0=np.array([0.1, 0.2, 1.0]), h=5.0, n_steps=3)
    part = ei.value.trajectory
    back = Trajectory.load(part.save(tmp_path / "partial.npz"))
    assert back.equals(part) and back.status == part.status != 0 and back.messages == part.messages


def _arrays(path):
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _rewrite(tmp_path, change, source=OLD_TOP, header=None):
    """A copy of ``source`` with ``change(arrays)`` applied (and the header replaced, if given)."""
    arrays = _arrays(source)
    change(arrays)
    if header is not None:
        arrays["header"] = np.array(json.dumps(header))
    path = tmp_path / "bad.npz"
    np.savez(path, **arrays)
    return path


def _header(**kw):
    base = json.loads(str(_arrays(OLD_TOP)["header"]))
    return {**base, **kw}


def _drop(key):
    return lambda a: a.pop(key)


def _set(key, value):
    def f(a):
        a[key] = value(a) if callable(value) else value
    return f


BAD_FILES = {
    "truncated": (lambda p: p.write_bytes(OLD_TOP.read_bytes()[:3000]),
                  r"is damaged or truncated: the \.npz archive cannot be read \(BadZipFile"),
    "bit flip": (lambda p: p.write_bytes(_flip(OLD_TOP.read_bytes(), 300)), r"is damaged or truncated: .*CRC"),
    "empty": (lambda p: p.write_bytes(b""), r"is empty \(0 bytes\)"),
    "text": (lambda p: p.write_text("t,q\n0,1\n"), r"is not a trajectory: it is not an \.npz archive"),
    "npy": (lambda p: np.save(p.open("wb"), np.ones(3)), r"is a single \.npy array, not a trajectory"),
    "foreign npz": (lambda p: np.savez(p.open("wb"), x=np.ones(3), y=np.zeros(2)),
                    r"is not a manifold_dirac trajectory: the archive has no 'header' entry \(it holds 'x', 'y'\)"),
    "pickled": (lambda p: np.savez(p.open("wb"), header=np.array([{"a": 1}], dtype=object)),
                r"is not a trajectory: it holds pickled Python objects"),
}


def _flip(b, i):
    return b[:i] + bytes([b[i] ^ 0xFF]) + b[i + 1:]


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_load_refuses_a_damaged_or_foreign_file_in_one_sentence(case, tmp_path):
    make, match = BAD_FILES[case]
    path = tmp_path / "file.npz"
    make(path)
    with pytest.raises(ValueError, match=match) as ei:
        Trajectory.load(path)
    msg = str(ei.value)
    assert msg.startswith(f"Trajectory.load: {str(path)!r} ") and "\n" not in msg


BAD_CONTENTS = {
    "newer version": (None, _header(format=FORMAT, version=3),
                      (r"was written by a newer manifold_dirac \(trajectory format version 3; this version reads 1 "
                       r"to 2\): upgrade manifold_dirac to read it")),
    "version 0": (None, _header(format=FORMAT, version=0), r"has the unknown trajectory format version 0"),
    "version text": (None, _header(format=FORMAT, version="2"), r"is damaged: its format version is '2'"),
    "other format": (None, _header(format="someone.else", version=1),
                     r"is not a manifold_dirac trajectory: its header names the format 'someone.else'"),
    "header not json": (_set("header", np.array("{meta: oops")), None, r"is damaged: its header is not valid JSON"),
    "header a list": (_set("header", np.array("[1, 2]")), None, r"its header is a JSON list, not an object"),
    "header numbers": (_set("header", np.ones(2)), None, r"its 'header' is not a text entry"),
    "header lacks meta": (None, {"messages": [], "q_structure": None},
                          r"is damaged: its header lacks the entries 'meta'"),
    "messages not strings": (None, _header(messages=[1]), r"'messages' is not a list of strings"),
    "missing xi": (_drop("xi"), None, r"is damaged or incomplete: the arrays 'xi' are missing"),
    "missing q": (_drop("q_0"), None, r"the arrays 'q_0' are missing"),
    "short xi": (_set("xi", lambda a: a["xi"][:-3]), None,
                 (r"is damaged or truncated: it holds 21 points \(K\+1\) but 17 step records, expected K "
                  r"\(one fewer than the points\)")),
    "short energy": (_set("energy", lambda a: a["energy"][:-1]), None,
                     r"is damaged: 'energy' has shape \(20,\), expected \(21,\)"),
    "short p": (_set("p", lambda a: a["p"][:-1]), None, r"is damaged: 'p' has shape \(20, 3\), expected \(21, \*\(\), n\)"),
    "wrong dimension v": (_set("v", lambda a: a["v"][:, :2]), None, r"'v' has shape \(21, 2\), expected \(21, 3\)"),
    "short iterations": (_set("iterations", lambda a: a["iterations"][:-1]), None,
                         r"'iterations' has shape \(19,\), expected \(20,\)"),
    "short q": (_set("q_0", lambda a: a["q_0"][:-1]), None,
                r"the point array 'q_0' has shape \(20, 3, 3\), expected \(21, \*\(\), \.\.\.\)"),
    "t matrix": (_set("t", lambda a: a["t"][:, None]), None, r"'t' has shape \(21, 1\), expected one or more times"),
    "no points": (_set("t", np.zeros(0)), None, r"'t' has shape \(0,\), expected one or more times"),
    "float32 p": (_set("p", lambda a: a["p"].astype(np.float32)), None,
                  r"is damaged or foreign: the array 'p' has dtype float32, expected float64"),
    "complex q": (_set("q_0", lambda a: a["q_0"].astype(complex)), None,
                  r"the point array 'q_0' has dtype complex128, expected float64"),
    "float status": (_set("status", np.array(0.0)), None, r"the array 'status' has dtype float64, expected integers"),
    "unknown status": (_set("status", np.array(9)), None, r"its status holds the unknown codes \[9\]"),
    "batch status": (_set("status", np.zeros(2, dtype=int)), None,
                     r"'p' has shape \(21, 3\), expected \(21, \*\(2,\), n\) for 21 points and batch shape \(2,\)"),
    "structure of two": (None, _header(q_structure=[None, None]),
                         r"it holds 1 point arrays \(q_0, q_1, \.\.\.\) where its point structure needs 2"),
    "structure garbage": (None, _header(q_structure=[1]), r"its point structure \[1\] is not null or a nested list"),
}


@pytest.mark.parametrize("case", list(BAD_CONTENTS))
def test_load_refuses_an_inconsistent_or_newer_file_in_one_sentence(case, tmp_path):
    change, header, match = BAD_CONTENTS[case]
    path = _rewrite(tmp_path, change or (lambda a: None), header=header)
    with pytest.raises(ValueError, match=match) as ei:
        Trajectory.load(path)
    msg = str(ei.value)
    assert msg.startswith(f"Trajectory.load: {str(path)!r} ") and "\n" not in msg


def test_the_unchanged_rewrite_loads():
    """The control of the two tests above: the same rewrite without a change loads (so each refusal
    is due to its change)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        assert Trajectory.load(_rewrite(Path(d), lambda a: None)).equals(Trajectory.load(OLD_TOP))
        assert Trajectory.load(_rewrite(Path(d), lambda a: None, header=_header(format=FORMAT, version=2))).ok


def test_load_of_a_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nosuch.npz"):
        Trajectory.load(tmp_path / "nosuch.npz")
