"""The result of an integration: a frozen record with ``save``/``load``.

The file format (``docs/errors.md``, "Files"): a ``.npz`` archive of the
arrays and a JSON header naming the format and its version
(:data:`FORMAT`, :data:`FORMAT_VERSION`); :meth:`Trajectory.load` checks the
structure and refuses a damaged, truncated, foreign or newer file in one
sentence that names the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from .._mechanics.status import Status

__all__ = ["FORMAT", "FORMAT_VERSION", "Trajectory"]

_ARRAY_FIELDS = (
    "t", "p", "v", "energy", "xi", "mu", "constraint_residual", "residual", "iterations", "status",
)


@dataclass(frozen=True)
class Trajectory:
    """A computed trajectory (points stored every ``stride`` steps).

    Per stored point (``K + 1`` of them, index 0 the initial state):

    Attributes
    ----------
    t : ndarray of float64, shape=[K+1]
        The times ``t0 + k h`` of the stored points.
    q : point, shape=[K+1, *B, *point_shape] (tuple on a product)
        The stored configurations (float64, the manifold's representation).
    p : ndarray of float64, shape=[K+1, *B, n]
        Momenta ``p_k`` in frame coordinates (for the ``minus`` scheme the
        momentum of (53d), ``p~_k + A(q_k)^T mu_k``).
    v : ndarray, shape=[K+1, *B, n]
        Velocities in the chart at ``q_k``. For the second-order rules the
        central difference ``(R_{q_k}^{-1}(q_{k+1}) - R_{q_k}^{-1}(q_{k-1}))/(2h)``
        (second order, like their momenta). At the last point ``q_{k+1}``
        comes from a closing solve (one step more, not recorded); at the first
        ``v0`` is used when given (or the Legendre inverse of ``p0``), else the
        forward difference. For a rule of order above 2 (``gauss4``,
        ``gauss6``) the Legendre inverse of the stored momentum,
        ``dL/dv(q_k, v_k) = p_k + C(q_k)^T lam``, ``C(q_k) v_k = 0``
        (``C = [A; dg]``), accurate to the rule's order; where ``d2L/dv2``
        is singular on ``ker C`` (a degenerate Lagrangian) the central
        difference. NaN for a batch member from the step at which it
        failed on (its ``status`` says why; its ``q`` and ``p`` stay frozen).
    energy : ndarray, shape=[K+1, *B]
        ``<p, v> - L(q, v)`` (NaN where ``v`` is); with the Legendre velocity
        of the higher-order rules this is ``H(q_k, p_k)``.
    slip : ndarray, shape=[K+1, *B]
        ``|C(q_k) v_k|_inf``, the *continuous* velocity constraint at the
        reported point (``C = [A; dg]``, the one-forms and the differentials
        of the holonomic constraints), with ``v_k`` the central difference
        (also for the rules of order above 2, whose reported Legendre
        velocity is in ``ker C`` by construction): the physical slip of the discrete
        motion, at most ``O(h^2)`` for the symmetric scheme (``O(h)`` for
        plus and minus) on a nonholonomic system. Not to be confused with
        ``constraint_residual``, the scheme's *discrete* constraint, which
        Newton holds to round-off. Zeros without constraints; None in a file
        written before this field existed.
    holonomic_violation : ndarray, shape=[K+1, *B]
        ``|g(q_k)|_inf`` for holonomic constraints ``g(q) = 0`` (zeros without).

    Per stored step (the step that starts at each stored point but the
    last; ``K`` of them -- ``K + 1`` in the partial trajectory of a failed
    or interrupted run, whose last record is the step that failed or was
    under way):

    Attributes
    ----------
    xi : ndarray, shape=[K, *B, n]
        ``R_{q_k}^{-1}(q_{k+1})``.
    mu : ndarray, shape=[K, *B, m]
        Multipliers of the step: ``m`` for the one-forms, then ``r`` for
        the holonomic constraints.
    constraint_residual : ndarray, shape=[K, *B]
        ``|c(xi)|_inf``, the scheme's discrete constraint at the solution.
    residual : ndarray, shape=[K, *B]
        Newton's scaled residual at the solution (relative to each equation's scale).
    iterations : ndarray of int, shape=[K, *B]
        Newton iterations of each step.

    Whole run:

    Attributes
    ----------
    status : ndarray of int, shape=[*B]
        0 where the member finished, else its failure code, or
        ``INTERRUPTED`` (5) for a member still running when the run was
        interrupted (:class:`~manifold_dirac._mechanics.status.Status`).
    messages : tuple of str
        Failure messages, one per failed member.
    meta : dict
        ``h``, ``scheme``, ``discrete_lagrangian``, ``system``, ``manifold``,
        ``stride``, ``n_steps`` (steps taken), ``total_iterations`` (the
        Newton iterations of every step up to the last point, stored or
        not: the same for every ``stride``), ``wall_time``, ``names`` (subsystem names and slices, if any).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> pendulum = md.systems.pendulum()
    >>> tr = md.integrate(pendulum, np.array([1.0]), v0=np.array([0.0]), h=0.1, n_steps=50, stride=10)
    >>> tr.t.shape, tr.q.shape, tr.energy.shape        # every 10th point and the last
    ((6,), (6, 1), (6,))
    >>> path = tr.save("pendulum.npz")
    >>> again = md.Trajectory.load("pendulum.npz")
    >>> bool(np.array_equal(again.q, tr.q))
    True
    """

    t: np.ndarray
    q: Any
    p: np.ndarray
    v: np.ndarray
    energy: np.ndarray
    xi: np.ndarray
    mu: np.ndarray
    constraint_residual: np.ndarray
    residual: np.ndarray
    iterations: np.ndarray
    status: np.ndarray
    messages: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)
    slip: Any = None
    holonomic_violation: Any = None

    @property
    def n_points(self) -> int:
        """Number of stored points."""
        return int(self.t.shape[0])

    @property
    def ok(self) -> bool:
        """Whether every member finished and no recorded value is NaN or inf (``ok`` means no NaN, anywhere)."""
        return bool(np.all(self.status == 0)) and _first_nonfinite(self) is None

    @property
    def energy_error(self) -> np.ndarray:
        """``max_k |E_k - E_0|`` per member, shape ``(*B,)``."""
        return np.max(np.abs(self.energy - self.energy[:1]), axis=0)

    def __repr__(self) -> str:
        return (
            f"Trajectory({self.meta.get('system', '?')}, scheme={self.meta.get('scheme')!r}, "
            f"rule={self.meta.get('discrete_lagrangian')!r}, h={self.meta.get('h')}, "
            f"points={self.n_points}, batch={self.status.shape}, ok={self.ok})"
        )

    # ------------------------------------------------------------------ I/O
    def save(self, path: str | Path) -> Path:
        """Write to a ``.npz`` file (no pickle: arrays plus a JSON header).

        The header records the file format (``"format":
        "manifold_dirac.trajectory"``, ``"version":`` :data:`FORMAT_VERSION`),
        the metadata, the messages and the structure of product points.

        Parameters
        ----------
        path : str or Path
            ``.npz`` is appended when the name does not end with it.

        Returns
        -------
        Path
            The file written.
        """
        path = Path(path)
        arrays = {k: np.asarray(getattr(self, k)) for k in _ARRAY_FIELDS + _OPTIONAL_FIELDS
                  if getattr(self, k) is not None}
        if isinstance(self.q, tuple):
            flat = _flatten(self.q)
            for i, a in enumerate(flat):
                arrays[f"q_{i}"] = a
            structure = _structure(self.q)
        else:
            arrays["q_0"] = np.asarray(self.q)
            structure = None
        header = {"format": FORMAT, "version": FORMAT_VERSION, "meta": _jsonable(self.meta),
                  "messages": list(self.messages), "q_structure": structure}
        arrays["header"] = np.array(json.dumps(header))
        np.savez(path, **arrays)
        return path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        """Read a file written by :meth:`save` (``allow_pickle=False``), validating its structure.

        Reads format versions 1 (files without a version: the numpy engine's
        and the compiled engine's before versions were recorded; the same
        layout) and 2 (the current one). Checked: that the file is an
        ``.npz`` archive that can be read whole, its header and format
        version, the required arrays, their dtypes (``float64``; integers for
        ``iterations`` and ``status``), and that their shapes agree: ``K + 1``
        points, ``K`` steps (``K + 1`` in a failed or interrupted run, whose
        last record is the failed step's), one batch shape, one dimension.

        Parameters
        ----------
        path : str or Path

        Returns
        -------
        Trajectory

        Raises
        ------
        ValueError
            For a damaged, truncated, foreign (any other ``.npz`` or a
            non-``.npz`` file), inconsistent or newer file, in one sentence
            naming the file and the problem.
        OSError
            When the file cannot be opened (missing, a folder, no permission).
        """
        path = Path(path)
        data, version = _read_archive(path)
        header = data.pop("header")
        try:
            kw = _validated_fields(data, header)
        except _Problem as exc:
            raise ValueError(f"Trajectory.load: {str(path)!r} {exc}") from None
        meta = dict(header["meta"])
        if version == 1:
            meta.setdefault("interrupted", False)  # version 1 did not record interruptions (none were kept)
        return cls(messages=tuple(header["messages"]), meta=meta, **kw)

    def equals(self, other: Trajectory, rtol: float = 0.0, atol: float = 0.0) -> bool:
        """Field-by-field comparison of the arrays (and points).

        Shapes must agree; NaN equals NaN at the same places (the fields of
        failed batch members), so ``tr.equals(tr)`` holds for every
        trajectory. ``meta`` and ``messages`` are not compared.

        Parameters
        ----------
        other : Trajectory
        rtol, atol : float
            Tolerances of :func:`numpy.allclose` (exact by default).

        Returns
        -------
        bool
        """
        for f in fields(self):
            if f.name in ("meta", "messages"):
                continue
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name in _OPTIONAL_FIELDS and (a is None or b is None):
                if (a is None) != (b is None):
                    return False
                continue
            if isinstance(a, tuple) != isinstance(b, tuple):
                return False
            fa, fb = _flatten(a), _flatten(b)
            if len(fa) != len(fb):
                return False
            for x, y in zip(fa, fb):
                if x.shape != y.shape or not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
                    return False
        return True


# ------------------------------------------------------------ file format
FORMAT = "manifold_dirac.trajectory"
"""The ``format`` entry of a trajectory file's header."""

FORMAT_VERSION = 2
"""The version :meth:`Trajectory.save` writes. Version 1 (no ``format`` or
``version`` in the header) is the same layout, written before versions were
recorded (by the numpy engine, and by the compiled engine before this field);
:meth:`Trajectory.load` reads both."""

_FLOAT_FIELDS = ("t", "p", "v", "energy", "xi", "mu", "constraint_residual", "residual")
_OPTIONAL_FIELDS = ("slip", "holonomic_violation")
"""Per-point diagnostics added in format version 2 without a version change (read when present)."""
_INT_FIELDS = ("iterations", "status")


class _Problem(Exception):
    """A structural problem of a trajectory file (the rest of the sentence after the file name)."""


def _read_archive(path: Path) -> tuple[dict[str, np.ndarray], int]:
    """All arrays of the ``.npz`` file ``path`` (read whole, no pickle) and its format version.

    Raises ValueError (one sentence naming the file) for anything that is not
    a readable trajectory archive of a known version; OSError when the file
    cannot be opened.
    """
    name = repr(str(path))
    with open(path, "rb") as fh:  # OSError (missing file, folder, permission) propagates as is
        magic = fh.read(6)
    if not magic:
        raise ValueError(f"Trajectory.load: {name} is empty (0 bytes): not a trajectory file, or its writing "
                         "was cut short")
    if magic.startswith(b"\x93NUMPY"):
        raise ValueError(f"Trajectory.load: {name} is a single .npy array, not a trajectory (.npz archive written "
                         "by Trajectory.save)")
    if not magic.startswith(b"PK"):
        raise ValueError(f"Trajectory.load: {name} is not a trajectory: it is not an .npz archive (trajectories "
                         "are written by Trajectory.save)")
    data: dict[str, np.ndarray] = {}
    try:
        with np.load(path, allow_pickle=False) as npz:
            for key in npz.files:
                data[key] = npz[key]
    except ValueError as exc:
        if "pickle" in str(exc).lower():
            raise ValueError(f"Trajectory.load: {name} is not a trajectory: it holds pickled Python objects, "
                             "which are not read (trajectory files hold arrays only)") from None
        raise ValueError(f"Trajectory.load: {name} is damaged or truncated: an array of the archive cannot be "
                         f"read ({_reason(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - zipfile.BadZipFile, zlib.error, EOFError, ...: any unreadable archive
        raise ValueError(f"Trajectory.load: {name} is damaged or truncated: the .npz archive cannot be read "
                         f"({_reason(exc)})") from None
    if "header" not in data:
        held = ", ".join(repr(k) for k in sorted(data)[:6]) + (", ..." if len(data) > 6 else "")
        raise ValueError(f"Trajectory.load: {name} is not a manifold_dirac trajectory: the archive has no "
                         f"'header' entry (it holds {held or 'no arrays'})")
    raw = data["header"]
    if raw.shape != () or raw.dtype.kind != "U":
        raise ValueError(f"Trajectory.load: {name} is not a manifold_dirac trajectory: its 'header' is not a "
                         f"text entry (dtype {raw.dtype}, shape {raw.shape})")
    try:
        header = json.loads(str(raw))
    except ValueError as exc:
        raise ValueError(f"Trajectory.load: {name} is damaged: its header is not valid JSON ({_reason(exc)})") from None
    if not isinstance(header, dict):  # a file's content, not an argument: a ValueError
        raise ValueError(  # noqa: TRY004
            f"Trajectory.load: {name} is not a manifold_dirac trajectory: its header is a JSON "
            f"{type(header).__name__}, not an object")
    fmt, version = header.get("format"), header.get("version", 1 if "format" not in header else None)
    if "format" in header and fmt != FORMAT:
        raise ValueError(f"Trajectory.load: {name} is not a manifold_dirac trajectory: its header names the "
                         f"format {fmt!r} (expected {FORMAT!r})")
    if isinstance(version, bool) or not isinstance(version, int):
        raise ValueError(  # noqa: TRY004 - a file's content, not an argument
            f"Trajectory.load: {name} is damaged: its format version is {version!r}, not an integer")
    if version > FORMAT_VERSION:
        raise ValueError(f"Trajectory.load: {name} was written by a newer manifold_dirac (trajectory format "
                         f"version {version}; this version reads 1 to {FORMAT_VERSION}): upgrade manifold_dirac "
                         "to read it")
    if version < 1:
        raise ValueError(f"Trajectory.load: {name} has the unknown trajectory format version {version} (this "
                         f"version reads 1 to {FORMAT_VERSION})")
    missing = [k for k in ("meta", "messages", "q_structure") if k not in header]
    if missing:
        raise ValueError(f"Trajectory.load: {name} is damaged: its header lacks the entries "
                         f"{', '.join(repr(k) for k in missing)}")
    if not isinstance(header["meta"], dict) or not isinstance(header["messages"], list) or not all(
            isinstance(m, str) for m in header["messages"]):
        raise ValueError(
            f"Trajectory.load: {name} is damaged: its header's 'meta' is not a JSON object or its "
            "'messages' is not a list of strings")
    data["header"] = header  # type: ignore[assignment]
    return data, version


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _validated_fields(data: dict[str, np.ndarray], header: dict) -> dict[str, Any]:
    """The array fields and the point of a trajectory archive, checked for consistency.

    Raises :class:`_Problem` with the rest of a sentence that starts with the file name.
    """
    missing = [k for k in _ARRAY_FIELDS if k not in data]
    if missing or "q_0" not in data:
        missing += [] if "q_0" in data else ["q_0"]
        raise _Problem(f"is damaged or incomplete: the arrays {', '.join(repr(k) for k in missing)} are missing")
    structure = header["q_structure"]
    if not _valid_structure(structure):
        raise _Problem(f"is damaged: its point structure {structure!r} is not null or a nested list of nulls")
    n_leaves = _count_leaves(structure)
    n_q = sum(1 for k in data if k.startswith("q_"))
    if any(f"q_{i}" not in data for i in range(n_q)) or n_q != n_leaves:
        raise _Problem(f"is damaged: it holds {n_q} point arrays (q_0, q_1, ...) where its point structure "
                       f"needs {n_leaves}")
    q_leaves = [data[f"q_{i}"] for i in range(n_q)]
    for k in _FLOAT_FIELDS:
        if data[k].dtype != np.float64:
            raise _Problem(f"is damaged or foreign: the array {k!r} has dtype {data[k].dtype}, expected float64")
    for i, a in enumerate(q_leaves):
        if a.dtype != np.float64:
            raise _Problem(f"is damaged or foreign: the point array 'q_{i}' has dtype {a.dtype}, expected float64")
    for k in _INT_FIELDS:
        if data[k].dtype.kind not in "iu":
            raise _Problem(f"is damaged or foreign: the array {k!r} has dtype {data[k].dtype}, expected integers")
    t, status = data["t"], data["status"]
    if t.ndim != 1 or t.shape[0] < 1:
        raise _Problem(f"is damaged: 't' has shape {t.shape}, expected one or more times (K+1,)")
    n_pts, B = t.shape[0], status.shape
    p = data["p"]
    if p.ndim != 2 + len(B) or p.shape[:-1] != (n_pts, *B):
        raise _Problem(f"is damaged: 'p' has shape {p.shape}, expected ({n_pts}, *{B}, n) for {n_pts} points and "
                       f"batch shape {B} (from 'status')")
    n = p.shape[-1]
    failed = bool(np.any(status != 0))
    n_steps = data["xi"].shape[0] if data["xi"].ndim else -1
    allowed = (n_pts - 1, n_pts) if failed else (n_pts - 1,)
    if n_steps not in allowed:
        what = "K or K+1 (a failed or interrupted run)" if failed else "K (one fewer than the points)"
        raise _Problem(f"is damaged or truncated: it holds {n_pts} points (K+1) but {n_steps} step records, "
                       f"expected {what}")
    mu = data["mu"]
    m = mu.shape[-1] if mu.ndim == 2 + len(B) else -1
    expected = {"v": (n_pts, *B, n), "energy": (n_pts, *B), "xi": (n_steps, *B, n), "mu": (n_steps, *B, m),
                "constraint_residual": (n_steps, *B), "residual": (n_steps, *B), "iterations": (n_steps, *B)}
    for k, shape in expected.items():
        if data[k].shape != shape:
            raise _Problem(f"is damaged: {k!r} has shape {data[k].shape}, expected {shape} ({n_pts} points, "
                           f"{n_steps} steps, batch {B}, dimension {n})")
    for i, a in enumerate(q_leaves):
        if a.shape[:1 + len(B)] != (n_pts, *B):
            raise _Problem(f"is damaged: the point array 'q_{i}' has shape {a.shape}, expected ({n_pts}, *{B}, ...) "
                           f"({n_pts} points, batch {B})")
    codes = {int(s) for s in Status}
    bad = sorted({int(s) for s in np.ravel(status)} - codes)
    if bad:
        raise _Problem(f"is damaged: its status holds the unknown codes {bad} (known: {sorted(codes)})")
    kw: dict[str, Any] = {k: data[k] for k in _ARRAY_FIELDS}
    for k in _OPTIONAL_FIELDS:
        if k in data:
            if data[k].dtype != np.float64 or data[k].shape != (n_pts, *B):
                raise _Problem(f"is damaged: {k!r} has dtype {data[k].dtype} and shape {data[k].shape}, expected "
                               f"float64 of shape {(n_pts, *B)}")
            kw[k] = data[k]
    kw["q"] = q_leaves[0] if structure is None else _unflatten(structure, iter(q_leaves))
    # the values agree with the status: a finished run holds no NaN/inf, and a finished member of a run
    # that failed elsewhere has finite times, points and momenta (its v and energy may end in NaN there)
    named = {**{k: kw[k] for k in _FLOAT_FIELDS}, **{f"q_{i}": a for i, a in enumerate(q_leaves)},
             **{k: kw[k] for k in _OPTIONAL_FIELDS if k in kw}}
    if not np.all(np.isfinite(t)):
        k = int(np.argmax(~np.isfinite(t)))
        raise _Problem(f"is damaged: its times 't' hold {_word(t)} at point {k}")
    fields = list(named) if not failed else ["p"] + [f"q_{i}" for i in range(n_q)]
    for name in fields:
        a = named[name]
        ok_members = (status == 0)
        lead = a.shape[:1 + len(B)]
        flat = a.reshape(lead + (int(np.prod(a.shape[len(lead):], dtype=int)),))
        bad = ~np.isfinite(flat).all(axis=-1)
        bad = bad & ok_members  # (points, *B)
        if np.any(bad):
            k, *i = (int(x) for x in np.argwhere(bad)[0])
            who = f", batch member {i}" if B else ""
            raise _Problem(f"is damaged or altered: {name!r} holds NaN/inf at {'step' if name in _STEP_FIELDS else 'point'}"
                           f" {k}{who}, whose status is 0 (finished): a finished run holds no NaN or inf")
    return kw


_STEP_FIELDS = ("xi", "mu", "constraint_residual", "residual")


def _word(x: np.ndarray) -> str:
    return "NaN" if np.any(np.isnan(x)) else "inf"


def _first_nonfinite(tr: Trajectory) -> str | None:
    """The name of the first recorded float field with a NaN or inf (None when every value is finite)."""
    for name in (*_FLOAT_FIELDS, *_OPTIONAL_FIELDS):
        a = getattr(tr, name, None)
        if a is not None and not np.all(np.isfinite(np.asarray(a, dtype=float))):
            return name
    for i, a in enumerate(_flatten(tr.q)):
        if not np.all(np.isfinite(np.asarray(a, dtype=float))):
            return f"q_{i}"
    return None


def _valid_structure(s: Any) -> bool:
    return s is None or (isinstance(s, list) and len(s) > 0 and all(_valid_structure(x) for x in s))


def _count_leaves(s: Any) -> int:
    return 1 if s is None else sum(_count_leaves(x) for x in s)


def _flatten(q: Any) -> list[np.ndarray]:
    if isinstance(q, tuple):
        return [a for x in q for a in _flatten(x)]
    return [np.asarray(q)]


def _structure(q: Any) -> Any:
    if isinstance(q, tuple):
        return [_structure(x) for x in q]
    return None


def _unflatten(structure: Any, it: Any) -> Any:
    if structure is None:
        return next(it)
    return tuple(_unflatten(s, it) for s in structure)


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, slice):
        return [x.start, x.stop]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return repr(x)
