"""Argument checks of a run: the step ``h``, counts, times, parameters, vectors, controls.

Every check raises at the call, before anything is compiled: a
``TypeError`` for a wrong type, a ``ValueError`` for a wrong value, saying
which argument and why.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .._mechanics.system import LagrangeDiracSystem


def _nonfinite_word(x: Any) -> str:
    """``"NaN"``, ``"inf"`` or ``"NaN and inf"``: which non-finite values ``x`` holds."""
    x = np.asarray(x)
    words = [w for w, hit in (("NaN", np.any(np.isnan(x))), ("inf", np.any(np.isinf(x)))) if hit]
    return " and ".join(words) or "a finite value"


def _positive_step(h: Any) -> float:
    if isinstance(h, (bool, np.bool_, str, bytes)):
        raise TypeError(f"the step h must be a positive number, got {h!r}")
    try:
        hf = float(h)
    except (TypeError, ValueError):
        raise TypeError(f"the step h must be a positive number, got {h!r}") from None
    if not (np.isfinite(hf) and hf > 0):
        raise ValueError(f"the step h must be a positive finite number, got {h!r}")
    if hf < _H_MIN:
        raise ValueError(
            f"the step h = {hf!r} is too small for float64: h^2 underflows (below {_H_MIN:.1e} it is less than the "
            "smallest normal number 2.2e-308), so a step's displacement h^2 F / M is lost and the step equations "
            "cannot be solved; rescale time (a unit of time of about h), or use h >= 1.5e-154")
    return hf


_H_MIN = float(np.sqrt(np.finfo(np.float64).tiny))
"""The smallest step ``h``: ``h^2`` is still a normal float64 (``1.49e-154``)."""


def _finite_float(x: Any, name: str) -> float:
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a finite number, got {x!r}")
    try:
        xf = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a finite number, got {x!r}") from None
    if not np.isfinite(xf):
        raise ValueError(f"{name} must be a finite number, got {x!r}")
    return xf


def run_params(system: LagrangeDiracSystem, params: Any, where: str) -> Any:
    """The parameters of one call: ``system.params`` when ``params`` is None, else ``params``, checked.

    Both are returned with every leaf as a numpy array, so that the default
    and an override enter the compiled functions with the same types (no
    recompilation between them). An override must have the structure and
    leaf shapes of ``system.params`` and real, finite values.
    """
    if params is None:
        return jax.tree.map(np.asarray, system.params)
    if system.params is None:
        raise ValueError(
            f"{where}: params given, but {system.name or 'this system'} has no parameters (system.params is "
            "None): build it with LagrangeDiracSystem(..., params=...) and functions that take params as "
            "their last argument")
    ref, _ = jax.tree_util.tree_flatten_with_path(system.params)
    try:
        leaves, treedef = jax.tree_util.tree_flatten_with_path(params)
    except Exception as exc:  # noqa: BLE001
        raise TypeError(f"{where}: params is not a pytree ({exc})") from None
    if treedef != jax.tree.structure(system.params):
        raise ValueError(f"{where}: params must have the structure of system.params, "
                         f"{jax.tree.structure(system.params)}; got {treedef}")
    out = []
    for (path, x), (_, r) in zip(leaves, ref):
        name = "params" + jax.tree_util.keystr(path)
        try:
            a = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where}: {name} must be an array of real numbers ({exc})") from None
        real = np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.integer)
        if a.dtype == object or not real:
            raise TypeError(f"{where}: {name} must be real numbers, got dtype {a.dtype}")
        if a.shape != np.shape(r):
            raise ValueError(f"{where}: {name} has shape {a.shape}, system.params has {np.shape(r)}: "
                             "the shapes must match (a parameter of another shape is another system)")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{where}: {name} contains non-finite values (NaN/inf)")
        rd = np.asarray(r).dtype
        if not np.can_cast(a.dtype, rd, "same_kind"):
            raise TypeError(f"{where}: {name} has dtype {a.dtype}, system.params has {rd}: it cannot be cast "
                            "without losing values")
        out.append(a.astype(rd, copy=False))
    return jax.tree.unflatten(treedef, out)


def _count(x: Any, name: str, minimum: int) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {x!r}")
    return int(x)


def _refuse_complex(x: Any, name: str) -> None:
    """A TypeError for complex initial data (they would be cast to real, dropping the imaginary part)."""
    if x is None or isinstance(x, (str, bytes)):
        return
    try:
        leaves = jax.tree.leaves(x)
    except Exception:  # noqa: BLE001 - not a pytree: the shape checks that follow say what it is
        return
    if any(np.iscomplexobj(a) for a in leaves):
        raise TypeError(f"{name}: expected real values, got complex ones (the imaginary part would be dropped): "
                        f"pass {name}.real if that is what you mean")


def _vector(x: Any, B: tuple[int, ...], n: int, name: str) -> np.ndarray:
    _refuse_complex(x, name)
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: expected real frame coordinates of shape (*batch, {n}), got {type(x).__name__}") from None
    if a.shape[-1:] != (n,):
        raise ValueError(f"{name}: expected frame coordinates of shape (*batch, {n}), got shape {a.shape}")
    if a.shape == (*B, n):
        a = a.copy()  # the caller's array is not kept (it may change after the call)
    else:
        try:
            a = np.broadcast_to(a, (*B, n)).copy()
        except ValueError:
            raise ValueError(f"{name}: shape {a.shape} does not match the batch shape {B} of q0") from None
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: contains non-finite values")
    return a


def _controls(controls: Any, n_steps: int, B: tuple[int, ...], n: int) -> jax.Array | None:
    """The control covectors of a run, checked, as one array: ``(n_steps, n)``, or ``(members, n_steps, n)``.

    ``controls`` has shape ``(n_steps, *B, n)`` (broadcast over the batch
    axes ``B``); real, finite values. ``None`` stays ``None`` (no control).
    """
    if controls is None:
        return None
    nb = len(B)
    try:
        c = np.asarray(controls)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"controls: expected an array of real numbers, shape ({n_steps}, *batch, {n}) "
                        f"({exc})") from None
    if c.dtype == object or not (np.issubdtype(c.dtype, np.floating) or np.issubdtype(c.dtype, np.integer)):
        raise TypeError(f"controls: expected real numbers, got dtype {c.dtype}")
    c = c.astype(float)
    if c.shape[:1] != (n_steps,) or c.shape[-1:] != (n,):
        raise ValueError(f"controls: expected shape ({n_steps}, *batch, {n}), got {c.shape}")
    if not np.all(np.isfinite(c)):
        k_bad = int(np.argwhere(~np.isfinite(c))[0][0])
        raise ValueError(f"controls: contains non-finite values (NaN/inf), first at step {k_bad}")
    try:
        c = np.broadcast_to(c, (n_steps, *B, n))
    except ValueError:
        raise ValueError(f"controls: shape {c.shape} does not match (n_steps, *batch, n) = "
                         f"{(n_steps, *B, n)}") from None
    c = c.reshape((n_steps, -1, n) if nb else (n_steps, n))
    if nb:
        c = np.moveaxis(c, 0, 1)  # (members, n_steps, n): vmapped over members
    return jnp.asarray(c)


_T_FINAL_RTOL = 1e-9
"""Relative tolerance of ``(t_final - t0) / h`` being a whole number of steps (:func:`integrate`)."""


def _steps_to(n_steps: Any, t_final: Any, t0: float, h: float) -> int:
    """``n_steps`` given directly or from ``t_final`` (a whole number of steps of ``h`` after ``t0``)."""
    if t_final is None:
        if n_steps is None:
            raise ValueError("integrate: give n_steps (a number of steps) or t_final (the final time)")
        return n_steps
    if n_steps is not None:
        raise ValueError(f"integrate: give n_steps or t_final, not both (n_steps={n_steps!r}, t_final={t_final!r})")
    T = _finite_float(t_final, "t_final")
    if T < t0:
        raise ValueError(f"integrate: t_final = {T!r} is before t0 = {t0!r}")
    x = (T - t0) / h
    n = int(round(x))
    if abs(x - n) > _T_FINAL_RTOL * max(1.0, x):
        lo, hi = int(np.floor(x)), int(np.ceil(x))
        raise ValueError(
            f"integrate: t_final - t0 = {T - t0!r} is not a whole number of steps h = {h!r} ({x:.6g} steps): "
            f"use t_final = {t0 + lo * h:.12g} or {t0 + hi * h:.12g}, n_steps, or h = {(T - t0) / max(hi, 1):.12g} "
            f"({max(hi, 1)} steps)"
        )
    return n
