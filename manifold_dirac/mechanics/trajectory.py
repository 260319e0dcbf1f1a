"""The result of an integration: a frozen record with ``save``/``load``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Trajectory"]

_ARRAY_FIELDS = (
    "t", "p", "v", "energy", "xi", "mu", "constraint_residual", "residual", "iterations", "status",
)


@dataclass(frozen=True)
class Trajectory:
    """A computed trajectory (points stored every ``stride`` steps).

    Per stored point (``K + 1`` of them, index 0 the initial state):

    Attributes
    ----------
    t : ndarray, shape=[K+1]
    q : point, shape=[K+1, *B, *point_shape] (tuple on a product)
    p : ndarray, shape=[K+1, *B, n]
        Momenta ``p_k`` in frame coordinates (for the ``minus`` scheme the
        momentum of (53d), ``p~_k + A(q_k)^T mu_k``).
    v : ndarray, shape=[K+1, *B, n]
        Velocities: the central difference ``(R_{q_k}^{-1}(q_{k+1}) - R_{q_k}^{-1}(q_{k-1}))/(2h)``
        in the chart at ``q_k`` (second order). At the last point ``q_{k+1}``
        comes from a closing solve (one step more, not recorded); at the first
        ``v0`` is used when given (or the Legendre inverse of ``p0``), else the
        forward difference. NaN for a batch member from the step at which it
        failed on (its ``status`` says why; its ``q`` and ``p`` stay frozen).
    energy : ndarray, shape=[K+1, *B]
        ``<p, v> - L(q, v)`` (NaN where ``v`` is).

    Per stored step (the step that starts at each stored point but the
    last; ``K`` of them):

    Attributes
    ----------
    xi : ndarray, shape=[K, *B, n]
        ``R_{q_k}^{-1}(q_{k+1})``.
    mu : ndarray, shape=[K, *B, m]
        Multipliers of the step.
    constraint_residual : ndarray, shape=[K, *B]
        ``|c(xi)|_inf``, the scheme's discrete constraint at the solution.
    residual : ndarray, shape=[K, *B]
        Newton's scaled residual at the solution (relative to each equation's scale).
    iterations : ndarray of int, shape=[K, *B]

    Whole run:

    Attributes
    ----------
    status : ndarray of int, shape=[*B]
        0 where the member finished, else its failure code
        (:class:`~manifold_dirac.mechanics.status.Status`).
    messages : tuple of str
        Failure messages, one per failed member.
    meta : dict
        ``h``, ``scheme``, ``discrete_lagrangian``, ``system``, ``manifold``,
        ``stride``, ``n_steps`` (steps taken), ``total_iterations``,
        ``wall_time``, ``names`` (subsystem names and slices, if any).
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

    @property
    def n_points(self) -> int:
        """Number of stored points."""
        return int(self.t.shape[0])

    @property
    def ok(self) -> bool:
        """Whether every member finished."""
        return bool(np.all(self.status == 0))

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
        """Write to a ``.npz`` file (no pickle: arrays plus JSON metadata)."""
        path = Path(path)
        arrays = {k: np.asarray(getattr(self, k)) for k in _ARRAY_FIELDS}
        if isinstance(self.q, tuple):
            flat = _flatten(self.q)
            for i, a in enumerate(flat):
                arrays[f"q_{i}"] = a
            structure = _structure(self.q)
        else:
            arrays["q_0"] = np.asarray(self.q)
            structure = None
        header = {"meta": _jsonable(self.meta), "messages": list(self.messages), "q_structure": structure}
        arrays["header"] = np.array(json.dumps(header))
        np.savez(path, **arrays)
        return path if path.suffix == ".npz" else path.with_suffix(path.suffix + ".npz")

    @classmethod
    def load(cls, path: str | Path) -> Trajectory:
        """Read a file written by :meth:`save` (``allow_pickle=False``)."""
        with np.load(Path(path), allow_pickle=False) as data:
            header = json.loads(str(data["header"]))
            kw = {k: data[k] for k in _ARRAY_FIELDS}
            nq = sum(1 for k in data.files if k.startswith("q_"))
            flat = [data[f"q_{i}"] for i in range(nq)]
        structure = header["q_structure"]
        q = flat[0] if structure is None else _unflatten(structure, iter(flat))
        return cls(q=q, messages=tuple(header["messages"]), meta=header["meta"], **kw)

    def equals(self, other: Trajectory, rtol: float = 0.0, atol: float = 0.0) -> bool:
        """Field-by-field comparison of the arrays (and points)."""
        for f in fields(self):
            if f.name in ("meta", "messages"):
                continue
            a, b = getattr(self, f.name), getattr(other, f.name)
            fa, fb = _flatten(a) if isinstance(a, tuple) else [a], _flatten(b) if isinstance(b, tuple) else [b]
            if len(fa) != len(fb) or not all(np.allclose(x, y, rtol=rtol, atol=atol) for x, y in zip(fa, fb)):
                return False
        return True


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
