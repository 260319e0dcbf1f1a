"""Random malformed input to the public entry points: a correct result or a documented error.

Property: every call of :func:`integrate` (random ``q0``, ``v0``, ``p0`` of
random shapes with NaN, inf and huge values; random ``h``, ``n_steps``,
``stride``, ``t0``, scheme and rule names, ``on_failure`` and solver
options), of :class:`SolverOptions` and of :meth:`Trajectory.load` (random
bytes, and damaged copies of a real file) ends in one of

* a correct result: an ``ok`` trajectory whose values are all finite, with
  the number of points the run asked for; or, with ``on_failure="mark"``
  (the default for a batch), a trajectory whose failed members carry a
  status and a message while the others stay finite;
* a documented exception -- ``ValueError``, ``TypeError`` or a
  :mod:`manifold_dirac._errors` class (the ``OSError`` of a missing file
  is not reachable here) -- with a message of one non-empty line;

never another exception type, never ``ok=True`` with a NaN.

Bounded: the project's hypothesis profile (``tests/conftest.py``) sets the
number of examples. One module-level system (the bundled pendulum, built
once per session) and a fixed set of valid shapes (one point, or a batch of
3) and options (``stride`` 1, the default scheme, rule and solver) keep every
run on the same few compiled programs; everything else drawn is invalid and
refused before compiling.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import event, given
from hypothesis import strategies as st

from manifold_dirac import _errors as errors
from manifold_dirac._mechanics import SolverOptions
from manifold_dirac._run.trajectory import Trajectory
from manifold_dirac._run.integrate import integrate
from manifold_dirac._mechanics.rules import RULES
from manifold_dirac._mechanics.schemes import SCHEMES

from .systems.bundled import new

PEND = new("pendulum")  # Euclidean(1): nonlinear, so large steps fail in Newton
DOCUMENTED = (ValueError, TypeError, errors.StepError, errors.RetractionDomainError)
OLD_TOP = Path(__file__).resolve().parent / "data" / "numpy_engine_trajectory_heavy_top.npz"


def check_message(exc: BaseException) -> None:
    """A documented exception with a message of one non-empty line."""
    assert isinstance(exc, DOCUMENTED), f"undocumented exception {type(exc).__name__}: {exc}"
    msg = str(exc)
    assert msg.strip() and msg == msg.strip(), f"{type(exc).__name__} with an empty or padded message: {msg!r}"
    assert "\n" not in msg, f"{type(exc).__name__}: a message of more than one line: {msg!r}"


def leaves(q):
    return [np.asarray(x) for x in q] if isinstance(q, tuple) else [np.asarray(q)]


def check_result(tr: Trajectory, *, n_steps: int, stride: int, batch: tuple, raises: bool) -> None:
    """A correct result: the points asked for, finite where ok, failures marked and explained."""
    assert isinstance(tr, Trajectory)
    status = np.asarray(tr.status)
    assert status.shape == batch
    if tr.ok:
        assert tr.n_points == -(-n_steps // stride) + 1
    else:
        assert not raises, "a failure must be raised, not returned (on_failure='raise', or a single run by default)"
        assert len(tr.messages) == int(np.count_nonzero(status)), (status, tr.messages)
        for m in tr.messages:
            assert m.strip() and "\n" not in m
    assert np.all(np.isfinite(tr.t))
    good = status == 0
    if not np.any(good):
        return
    for a in [tr.p, tr.v, tr.energy, tr.xi, tr.mu, *leaves(tr.q)]:
        a = np.asarray(a)
        # the member axes follow the point/step axis; a member that finished is finite everywhere
        sel = a[(slice(None), good)] if batch else a
        assert np.all(np.isfinite(sel)), "NaN or inf in a member whose status is ok"


# --------------------------------------------------------------- strategies
specials = st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300])
finite = st.floats(-10, 10, allow_nan=False)
velocities = st.one_of(finite, finite, finite, st.sampled_from([1e300, -1e200, 1e154]))  # huge ones overflow
# valid shapes: one point (1,) or a batch of 3 (3, 1) (compiled once each); the others are refused
GOOD_POINTS, BAD_POINTS = [(1,), (3, 1)], [(), (2,), (3, 2), (0,), (1, 1, 2)]
GOOD_VECTORS, BAD_VECTORS = [(1,), (3, 1)], [(2,), (4, 1), (3, 2), ()]


@st.composite
def arrays(draw, shapes, bad_values: bool):
    shape = draw(st.sampled_from(shapes))
    size = int(np.prod(shape))
    values = draw(st.lists(finite, min_size=size, max_size=size))
    if bad_values and size:
        i = draw(st.integers(0, size - 1))
        values[i] = draw(specials)
    return np.array(values, dtype=float).reshape(shape)


def names(valid: str, known):
    return st.one_of(st.text(max_size=8).filter(lambda s: s not in known), st.sampled_from([None, 3, b"x"]))


not_a_number = st.sampled_from([None, "x", 1j, [0.1, 0.2], {}])
GOOD = {
    "q0": arrays(GOOD_POINTS, False),
    "v0": None,  # drawn to match q0 (below)
    "p0": st.none(),
    "h": st.one_of(st.floats(1e-3, 0.5), st.sampled_from([3.0, 50.0])),  # large steps fail in Newton
    "n_steps": st.sampled_from([0, 1, 3, 5, np.int64(2)]),
    "stride": st.just(1),
    "scheme": st.just("symmetric"),
    "discrete_lagrangian": st.just("midpoint"),
    "solver": st.sampled_from([None, SolverOptions()]),
    "on_failure": st.sampled_from([None, "raise", "mark"]),
    "t0": finite,
}
BAD = {
    "q0": st.one_of(arrays(BAD_POINTS, False), arrays(GOOD_POINTS, True), st.sampled_from([None, "q", [[1.0], 2]])),
    "v0": st.one_of(st.none(), arrays(BAD_VECTORS, False), arrays(GOOD_VECTORS, True)),
    "p0": st.one_of(arrays(GOOD_VECTORS, False), arrays(BAD_VECTORS, False), arrays(GOOD_VECTORS, True)),
    "h": st.one_of(st.floats(max_value=0.0), specials, not_a_number),
    "n_steps": st.sampled_from([-1, 2.5, 3.0, "3", None, True, np.nan]),
    "stride": st.sampled_from([0, -1, 1.5, True, "1", None]),
    "scheme": names("symmetric", SCHEMES),
    "discrete_lagrangian": names("midpoint", RULES),
    "solver": st.sampled_from([{}, 1e-8, "newton"]),
    "on_failure": st.one_of(st.text(max_size=6).filter(lambda s: s not in ("raise", "mark")), st.just(1)),
    "t0": st.one_of(st.sampled_from([np.nan, np.inf, -np.inf]), st.sampled_from([None, 1j, [0.0], {}])),
}


@st.composite
def calls(draw):
    """The keyword arguments of one integrate call: valid, but for at most two parameters.

    A valid call gives ``v0`` (or, one time in four for one point, only ``p0``) of the shape of
    ``q0`` or of one point (broadcast over the batch); some of its values are huge (finite, but
    their energy overflows: the member must fail, not finish with ``inf``).
    """
    bad = draw(st.sets(st.sampled_from(sorted(BAD)), max_size=2))
    kw = {k: draw(BAD[k] if k in bad else GOOD[k]) for k in GOOD if k != "v0"}
    if "v0" in bad:
        kw["v0"] = draw(BAD["v0"])
    else:
        shape = np.shape(kw["q0"]) if "q0" not in bad else (1,)
        shape = draw(st.sampled_from([(1,), shape]))
        v = np.array(draw(st.lists(velocities, min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))))
        if "p0" not in bad and "q0" not in bad and np.shape(kw["q0"]) == shape == (1,) and draw(st.integers(0, 3)) == 0:
            kw["p0"] = v.reshape(shape)  # only the momentum: the Legendre inverse gives v0
            kw["v0"] = None
        else:
            kw["v0"] = v.reshape(shape)
    return kw, bad


@given(call=calls())
def test_integrate_gives_a_correct_result_or_a_documented_error(call):
    kw, bad = call
    try:
        tr = integrate(PEND, **kw)
    except DOCUMENTED as exc:
        event(f"{type(exc).__name__}" if bad else f"{type(exc).__name__} (valid input)")
        check_message(exc)
        if isinstance(exc, errors.StepError) and exc.trajectory is not None:
            assert not exc.trajectory.ok and exc.trajectory.n_points >= 1
        return
    except Exception as exc:  # pragma: no cover - the failure message is the point
        raise AssertionError(f"undocumented exception {type(exc).__name__}: {exc}") from exc
    event("result" + ("" if tr.ok else " with failed members") + (f" (despite {sorted(bad)})" if bad else ""))
    batch = np.shape(kw["q0"])[:-1]
    check_result(tr, n_steps=int(kw["n_steps"]), stride=int(kw["stride"]), batch=batch,
                 raises=kw["on_failure"] == "raise" or (kw["on_failure"] is None and batch == ()))


@given(
    rtol=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0, 1, True, "1e-3", None])),
    max_iter=st.one_of(st.integers(-3, 100), st.sampled_from([0.5, 2.0, True, None, "5"])),
    extra=st.sampled_from([{}, {}, {"atol": 0.0}, {"tol": 1e-3}]),
)
def test_solver_options_are_valid_or_refused_in_one_sentence(rtol, max_iter, extra):
    try:
        opts = SolverOptions(rtol=rtol, max_iter=max_iter, **extra)
    except (ValueError, TypeError) as exc:
        check_message(exc)
        return
    assert 0 < opts.rtol < 1 and int(opts.max_iter) == opts.max_iter >= 1 and not extra


def _load_bytes(data: bytes):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzz.npz"
        path.write_bytes(data)
        try:
            tr = Trajectory.load(path)
        except ValueError as exc:
            check_message(exc)
            assert str(exc).startswith(f"Trajectory.load: {str(path)!r} ")
            return None
        except Exception as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"undocumented exception {type(exc).__name__}: {exc}") from exc
    assert tr.equals(tr)
    return tr


@given(data=st.one_of(st.binary(max_size=2000), st.binary(max_size=64).map(lambda b: b"PK\x03\x04" + b),
                      st.binary(max_size=64).map(lambda b: b"\x93NUMPY" + b)))
def test_load_of_random_bytes_is_refused_in_one_sentence(data):
    assert _load_bytes(data) is None


GOOD_FILE = OLD_TOP.read_bytes()


@given(cut=st.integers(0, len(GOOD_FILE)), flips=st.lists(st.integers(0, len(GOOD_FILE) - 1), max_size=4),
       junk=st.binary(max_size=16))
def test_load_of_a_damaged_copy_is_refused_or_loads_whole(cut, flips, junk):
    data = bytearray(GOOD_FILE[:cut] + junk)
    for i in flips:
        if i < len(data):
            data[i] ^= 0xFF
    tr = _load_bytes(bytes(data))
    if tr is not None:  # only an undamaged archive (e.g. junk past the end) loads, and whole
        assert tr.equals(Trajectory.load(OLD_TOP))
