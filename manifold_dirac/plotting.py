"""Plots of trajectories and of convergence studies (matplotlib, optional).

Every function returns a :class:`matplotlib.figure.Figure` and, given
``path=``, also writes it (the format follows the file suffix). matplotlib is
imported on first use (``pip install manifold_dirac[plot]``); without a
display the non-interactive Agg backend is selected.

* :func:`plot_trajectory` -- a sensible default picture for any trajectory;
* :func:`plot_se2_path` -- planar paths with heading arrows (SE(2));
* :func:`plot_so3_body_axes`, :func:`plot_angular_momentum_sphere` -- SO(3)
  on the unit sphere;
* :func:`plot_energy_and_constraint` -- energy error and constraint residual;
* :func:`plot_convergence`, :func:`plot_work_precision` -- studies.

Inputs are validated: a wrong shape or a non-finite value is a
``ValueError`` that says which, never a silently blank or broken plot.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any  # Any: only **kwargs passed on to the specific plot function

import numpy as np

from ._types import ArrayLike, Point

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from mpl_toolkits.mplot3d import Axes3D

    from . import LagrangeDiracSystem, Manifold, Trajectory

__all__ = [
    "plot_trajectory",
    "plot_se2_path",
    "plot_so3_body_axes",
    "plot_angular_momentum_sphere",
    "plot_energy_and_constraint",
    "plot_convergence",
    "plot_work_precision",
    "LOG_FLOOR",
]

LOG_FLOOR = 1e-17
"""Values below this are drawn at this value on log axes (log of 0 is undefined)."""

_MAX_LEGEND = 8  # members drawn individually (and named in the legend) at most


# ------------------------------------------------------------------ helpers
def _pyplot() -> ModuleType:
    """Import ``matplotlib.pyplot``, choosing Agg when there is no display."""
    try:
        import matplotlib
    except ImportError as exc:  # pragma: no cover - exercised only without matplotlib
        raise ImportError(
            "manifold_dirac.plotting needs matplotlib: pip install manifold_dirac[plot]"
        ) from exc
    headless = (
        sys.platform.startswith("linux")
        and not os.environ.get("DISPLAY")
        and not os.environ.get("WAYLAND_DISPLAY")
    )
    if headless and "MPLBACKEND" not in os.environ and "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


_OWN_FIGURES: weakref.WeakSet[Figure] = weakref.WeakSet()  # made here: laid out here, once


def _finish(fig: Figure, path: str | Path | None) -> Figure:
    """Plain log-axis labels, the layout, and the file ``path`` if given.

    A figure made here and saved is laid out once (``tight_layout``) and
    saved as it is: a layout engine would lay it out again in every
    ``savefig`` (a draw without rendering before the real one), and
    ``bbox_inches="tight"`` costs another such draw. Not saved, it gets the
    tight layout engine (laid out when drawn). A figure of the caller's
    (``ax=``) keeps its layout and is saved with ``bbox_inches="tight"``.
    """
    for ax in fig.axes:
        _plain_log_labels(ax)
    own = fig in _OWN_FIGURES
    if own:
        for ax in fig.axes:  # a title wider than the figure wraps (bbox_inches="tight" used to widen the image)
            ax.title.set_wrap(True)
    if own and path is None:
        fig.set_layout_engine("tight")
    elif own:
        fig.tight_layout()
    if path is not None:
        fig.savefig(Path(path), dpi=110, bbox_inches=None if own else "tight")
    return fig


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _plain_log_labels(ax: Axes) -> None:
    """Log-axis tick labels as plain text (``10⁻⁶``, ``2×10⁻⁶``) instead of mathtext.

    The same ticks and the same numbers as matplotlib's default
    (``LogFormatterSciNotation``), written with Unicode superscripts:
    parsing the mathtext of every label was about a quarter of a figure's
    CPU time.
    """
    import re

    from matplotlib.ticker import LogFormatterSciNotation

    class PlainLogFormatter(LogFormatterSciNotation):
        def __call__(self, x: float, pos: int | None = None) -> str:
            text = super().__call__(x, pos)
            m = re.fullmatch(r"\$\\mathdefault\{(.*)\}\$", text)
            if m is None:
                return text
            body = m.group(1).replace("\\times", "×")
            return re.sub(r"\^\{(-?\d+)\}", lambda e: e.group(1).translate(_SUPERSCRIPT), body)

    for axis in (ax.xaxis, ax.yaxis):
        if axis.get_scale() == "log" and isinstance(axis.get_major_formatter(), LogFormatterSciNotation):
            axis.set_major_formatter(PlainLogFormatter())
            axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False))


def _new_axes(ax: Axes | None, projection: str | None = None, figsize: tuple[float, float] = (6.4, 4.8)
              ) -> tuple[Figure, Axes]:
    plt = _pyplot()
    if ax is not None:
        return ax.figure, ax
    fig = plt.figure(figsize=figsize)
    _OWN_FIGURES.add(fig)
    return fig, fig.add_subplot(111, projection=projection) if projection else fig.add_subplot(111)


def _get(trajectory: Trajectory, name: str) -> Point:
    if not hasattr(trajectory, name):
        raise ValueError(
            f"expected a Trajectory (an object with a {name!r} attribute), got {type(trajectory).__name__}"
        )
    return getattr(trajectory, name)


def _check_finite(name: str, a: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(a)):
        bad = np.argwhere(~np.isfinite(a))[0].tolist()
        raise ValueError(
            f"{name} contains non-finite values (first at index {bad}); a failed run should be plotted "
            "up to its last good point (StepError.trajectory)"
        )
    return a


def _title(trajectory: object, what: str) -> str:
    meta = getattr(trajectory, "meta", None) or {}
    parts = [str(meta["system"])] if meta.get("system") else []
    extra = ", ".join(
        f"{k}={meta[k]:g}" if isinstance(meta[k], float) else f"{meta[k]}"
        for k in ("scheme", "discrete_lagrangian", "h")
        if k in meta
    )
    head = f"{what}: {parts[0]}" if parts else what
    return f"{head} ({extra})" if extra else head


def _members(batch: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [tuple(int(i) for i in idx) for idx in np.ndindex(*batch)] if batch else [()]


def _member_label(idx: tuple[int, ...]) -> str:
    return "member " + ",".join(str(i) for i in idx) if idx else ""


def _sphere(ax: Axes3D) -> None:
    u, w = np.mgrid[0 : 2 * np.pi : 40j, 0 : np.pi : 20j]
    ax.plot_wireframe(np.cos(u) * np.sin(w), np.sin(u) * np.sin(w), np.cos(w), color="0.85", linewidth=0.4)
    ax.set_xlim(-1.05, 1.05)
    ax.set_ylim(-1.05, 1.05)
    ax.set_zlim(-1.05, 1.05)
    for axis in (ax.xaxis, ax.yaxis, ax.zaxis):
        axis.set_ticks([-1.0, 0.0, 1.0])
    try:
        ax.set_box_aspect((1, 1, 1))
    except AttributeError:  # pragma: no cover - old matplotlib
        pass


# -------------------------------------------------------------------- SE(2)
def _se2_points(q: ArrayLike) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.ndim not in (3, 4) or q.shape[-2:] != (3, 3):
        raise ValueError(
            "plot_se2_path: expected SE(2) poses of shape (K+1, 3, 3) or (K+1, B, 3, 3), "
            f"got {q.shape}"
        )
    if q.shape[0] < 2:
        raise ValueError(f"plot_se2_path: need at least 2 points to draw a path, got {q.shape[0]}")
    _check_finite("plot_se2_path: the poses", q)
    if not np.allclose(q[..., 2, :], [0.0, 0.0, 1.0], atol=1e-9):
        raise ValueError("plot_se2_path: the last row of an SE(2) pose must be (0, 0, 1)")
    return q if q.ndim == 4 else q[:, None]


def plot_se2_path(
    trajectory: Trajectory | ArrayLike,
    manifold: Manifold | None = None,
    ax: Axes | None = None,
    heading_every: int | None = None,
    *,
    length_unit: str = "m",
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    """The planar path ``(x, y)`` of SE(2) poses, with heading arrows.

    Parameters
    ----------
    trajectory : Trajectory or array-like
        A trajectory on SE(2) (``trajectory.q``) or the poses themselves,
        shape=[K+1, 3, 3], or shape=[K+1, B, 3, 3] for a batch (one path per
        member).
    manifold : SE2, optional
        Accepted for symmetry with :func:`plot_trajectory`; poses are read
        directly (translation ``q[..., :2, 2]``, heading ``q[..., :2, 0]``).
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    heading_every : int, optional
        An arrow along the body x-axis every this many points (default:
        about 15 arrows per path).
    length_unit : str
        Unit shown on the axes.
    title : str, optional
        The figure's title (default: what is drawn, the system, scheme, rule and ``h``).
    path : str or Path, optional
        Write the figure there.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For poses of the wrong shape, non-finite poses, or fewer than two points.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> skate = md.systems.inclined_knife_edge(incline=0.3)          # on SE(2)
    >>> tr = md.integrate(skate, skate.Q.identity(), v0=np.array([1.0, 0.0, 0.0]), h=0.02, n_steps=200)
    >>> fig = md.plot_se2_path(tr, path="path.png")
    """
    q = _se2_points(trajectory.q if hasattr(trajectory, "q") else trajectory)
    K1, B = q.shape[0], q.shape[1]
    if heading_every is None:
        heading_every = max(1, (K1 - 1) // 15)
    if not isinstance(heading_every, (int, np.integer)) or heading_every < 1:
        raise ValueError(f"plot_se2_path: heading_every must be a positive integer, got {heading_every!r}")
    fig, ax = _new_axes(ax)
    x, y = q[..., 0, 2], q[..., 1, 2]
    extent = max(float(np.ptp(x)), float(np.ptp(y)), 1e-12)
    arrow = 0.05 * extent
    plt = _pyplot()
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for b in range(B):
        c = colors[b % len(colors)]
        label = "path" if B == 1 else (f"member {b}" if b < _MAX_LEGEND else None)
        ax.plot(x[:, b], y[:, b], color=c, linewidth=1.5, label=label)
        sel = slice(0, K1, heading_every)
        ax.quiver(
            x[sel, b], y[sel, b], arrow * q[sel, b, 0, 0], arrow * q[sel, b, 1, 0],
            color=c, angles="xy", scale_units="xy", scale=1.0, width=0.004,
            label="heading (body x-axis)" if b == 0 else None,
        )
    ax.plot(x[0], y[0], "ko", markersize=5, label="start")
    ax.plot(x[-1], y[-1], "ks", markersize=5, markerfacecolor="none", label="end")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel(f"x [{length_unit}]")
    ax.set_ylabel(f"y [{length_unit}]")
    ax.set_title(title or _title(trajectory, "Planar path"))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return _finish(fig, path)


# -------------------------------------------------------------------- SO(3)
def _so3_points(q: ArrayLike, member: tuple[int, ...] | int | None, fname: str) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.ndim < 3 or q.shape[-2:] != (3, 3):
        raise ValueError(f"{fname}: expected rotations of shape (K+1, *B, 3, 3), got {q.shape}")
    if q.ndim > 3:
        idx = (0,) * (q.ndim - 3) if member is None else ((member,) if isinstance(member, int) else tuple(member))
        try:
            q = q[(slice(None), *idx)]
        except IndexError:
            raise ValueError(f"{fname}: member {idx} is not in the batch of shape {q.shape[1:-2]}") from None
        if q.shape[-2:] != (3, 3) or q.ndim != 3:
            raise ValueError(f"{fname}: member must index all batch axes {q.shape[1:-2]}")
    _check_finite(f"{fname}: the rotations", q)
    return q


def plot_so3_body_axes(
    trajectory: Trajectory | ArrayLike,
    ax: Axes | None = None,
    member: int | tuple[int, ...] | None = None,
    *,
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    """The body axes (columns of ``R``) over time, as three curves on the unit sphere.

    Parameters
    ----------
    trajectory : Trajectory or array-like
        Rotations ``R`` (body to space), shape=[K+1, *B, 3, 3].
    ax : matplotlib 3-D Axes, optional
        Draw into this 3-D axes instead of a new figure.
    member : int or tuple of int, optional
        Which batch member to draw (default: the first).
    title : str, optional
        The figure's title (default: what is drawn, the system, scheme, rule and ``h``).
    path : str or Path, optional
        Write the figure there (the format from the suffix, e.g. ``.png``).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For a wrong shape, non-finite rotations or a member outside the batch.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> top = md.systems.heavy_top()
    >>> tr = md.integrate(top, top.Q.identity(), v0=np.array([0.5, -0.2, 2.0]), h=0.01, n_steps=300)
    >>> fig = md.plot_so3_body_axes(tr, path="axes.png")
    """
    R = _so3_points(trajectory.q if hasattr(trajectory, "q") else trajectory, member, "plot_so3_body_axes")
    fig, ax = _new_axes(ax, projection="3d", figsize=(6.4, 6.0))
    _sphere(ax)
    for j, (name, c) in enumerate(zip(("e1", "e2", "e3"), ("tab:red", "tab:green", "tab:blue"))):
        ax.plot(R[:, 0, j], R[:, 1, j], R[:, 2, j], color=c, linewidth=1.5, label=f"body {name} = R[:, {j}]")
        ax.scatter([R[0, 0, j]], [R[0, 1, j]], [R[0, 2, j]], color=c, marker="o", s=20)
    ax.scatter([], [], [], color="k", marker="o", s=20, label="t = 0")
    ax.set_xlabel("x (space) [1]")
    ax.set_ylabel("y (space) [1]")
    ax.set_zlabel("z (space) [1]")
    ax.set_title(title or _title(trajectory, "Body axes on the unit sphere"))
    ax.legend(loc="upper left", fontsize="small")
    return _finish(fig, path)


def plot_angular_momentum_sphere(
    trajectory: Trajectory,
    ax: Axes | None = None,
    frame: str = "body",
    *,
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    """The direction ``p/|p|`` of the angular momentum on the unit sphere.

    For the free rigid body the body direction runs on closed orbits (the
    intersections of the momentum sphere with the energy ellipsoid) and the
    spatial direction ``R p / |p|`` stays at one point (Noether).

    Parameters
    ----------
    trajectory : Trajectory
        On SO(3): ``q`` shape=[K+1, *B, 3, 3], ``p`` shape=[K+1, *B, 3]
        (body angular momenta). Each batch member is one orbit.
    ax : matplotlib 3-D Axes, optional
        Draw into this 3-D axes instead of a new figure.
    frame : {"body", "spatial"}
        Draw the body direction ``p/|p|`` (closed orbits for a free body) or the spatial one ``R p/|p|``
        (a fixed point for a free body).
    title : str, optional
        The figure's title (default: what is drawn, the system, scheme, rule and ``h``).
    path : str or Path, optional
        Write the figure there (the format from the suffix, e.g. ``.png``).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For a wrong shape, non-finite values, a zero momentum or an unknown ``frame``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> body = md.systems.free_rigid_body()
    >>> w0 = np.array([[1.0, 0.1, 0.1], [0.1, 1.0, 0.1], [0.1, 0.1, 1.0]])       # three orbits
    >>> tr = md.integrate(body, np.broadcast_to(np.eye(3), (3, 3, 3)), v0=w0, h=0.05, n_steps=200)
    >>> fig = md.plot_angular_momentum_sphere(tr, path="orbits.png")
    """
    if frame not in ("body", "spatial"):
        raise ValueError(f"plot_angular_momentum_sphere: frame must be 'body' or 'spatial', got {frame!r}")
    p = np.asarray(_get(trajectory, "p"), dtype=float)
    if p.ndim < 2 or p.shape[-1] != 3:
        raise ValueError(f"plot_angular_momentum_sphere: expected body momenta (K+1, *B, 3), got {p.shape}")
    _check_finite("plot_angular_momentum_sphere: the momenta", p)
    if frame == "spatial":
        q = np.asarray(_get(trajectory, "q"), dtype=float)
        if q.shape != p.shape[:-1] + (3, 3):
            raise ValueError(
                f"plot_angular_momentum_sphere: rotations {q.shape} do not match momenta {p.shape}"
            )
        p = np.einsum("...ij,...j->...i", q, p)
    norm = np.linalg.norm(p, axis=-1, keepdims=True)
    if np.any(norm <= 1e-300):
        raise ValueError("plot_angular_momentum_sphere: the momentum is zero somewhere; its direction is undefined")
    u = (p / norm).reshape(p.shape[0], -1, 3)
    fig, ax = _new_axes(ax, projection="3d", figsize=(6.4, 6.0))
    _sphere(ax)
    for b in range(u.shape[1]):
        label = (f"member {b}" if u.shape[1] > 1 else "p/|p|") if b < _MAX_LEGEND else None
        ax.plot(u[:, b, 0], u[:, b, 1], u[:, b, 2], linewidth=1.5, label=label)
    ax.scatter(u[0, :, 0], u[0, :, 1], u[0, :, 2], color="k", s=12, label="t = 0")
    axis = "body" if frame == "body" else "space"
    ax.set_xlabel(f"p_1/|p| ({axis}) [1]")
    ax.set_ylabel(f"p_2/|p| ({axis}) [1]")
    ax.set_zlabel(f"p_3/|p| ({axis}) [1]")
    what = "Body angular momentum direction" if frame == "body" else "Spatial angular momentum direction"
    ax.set_title(title or _title(trajectory, what))
    ax.legend(loc="upper left", fontsize="small")
    return _finish(fig, path)


# ------------------------------------------------------- energy, constraint
def _per_member(a: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """``(T, *B)`` -> ``(T, C)`` curves with labels (the max over members when B is large)."""
    flat = a.reshape(a.shape[0], -1)
    if flat.shape[1] == 1:
        return flat, [""]
    if flat.shape[1] <= _MAX_LEGEND:
        return flat, [_member_label(i) for i in _members(a.shape[1:])]
    return np.max(flat, axis=1, keepdims=True), [f"max over {flat.shape[1]} members"]


def plot_energy_and_constraint(
    trajectory: Trajectory,
    relative: bool | None = None,
    floor: float = LOG_FLOOR,
    *,
    time_unit: str = "s",
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    """Energy error and constraint residual over time, on log scales.

    Top panel: ``|E_k - E_0|``, divided by ``|E_0|`` when ``E_0 != 0``
    (``relative=None``) or as asked. Bottom panel (only with constraints,
    ``m > 0``): the discrete constraint residual of each step,
    ``trajectory.constraint_residual``, drawn at the step's start time.
    Values below ``floor`` (zeros, in particular) are drawn at ``floor``;
    the axis labels say so.

    Parameters
    ----------
    trajectory : Trajectory
        ``t`` shape=[K+1], ``energy`` shape=[K+1, *B],
        ``constraint_residual`` shape=[K, *B], ``mu`` shape=[K, *B, m].
    relative : bool, optional
        Divide by ``|E_0|`` (default: when ``E_0 != 0`` for every member).
    floor : float
        Smallest value drawn on the log axes (> 0).
    time_unit : str
        Unit of time on the axis labels.
    title : str, optional
        The figure's title (default: what is drawn, the system, scheme, rule and ``h``).
    path : str or Path, optional
        Write the figure there (the format from the suffix, e.g. ``.png``).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For mismatched shapes, non-finite values or ``floor <= 0``.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> tr = md.integrate(md.systems.pendulum(), np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=200)
    >>> fig = md.plot_energy_and_constraint(tr, path="energy.png")
    """
    if not (floor > 0 and np.isfinite(floor)):
        raise ValueError(f"plot_energy_and_constraint: floor must be a positive number, got {floor!r}")
    t = np.asarray(_get(trajectory, "t"), dtype=float)
    E = np.asarray(_get(trajectory, "energy"), dtype=float)
    if t.ndim != 1 or E.shape[:1] != t.shape:
        raise ValueError(
            f"plot_energy_and_constraint: energy {E.shape} must have the K+1 = {t.shape[:1]} points of t first"
        )
    _check_finite("plot_energy_and_constraint: the times", t)
    _check_finite("plot_energy_and_constraint: the energy", E)
    mu = np.asarray(getattr(trajectory, "mu", np.zeros((0, 0))))
    m = mu.shape[-1] if mu.ndim >= 2 else 0
    cres = np.asarray(getattr(trajectory, "constraint_residual", np.zeros(0)), dtype=float)
    has_c = m > 0 and cres.size > 0
    if has_c:
        if cres.shape != (t.shape[0] - 1, *E.shape[1:]):
            raise ValueError(
                f"plot_energy_and_constraint: constraint_residual {cres.shape} should have shape "
                f"{(t.shape[0] - 1, *E.shape[1:])} (one value per step)"
            )
        _check_finite("plot_energy_and_constraint: the constraint residual", cres)
    E0 = E[:1]
    rel = bool(np.all(E0 != 0)) if relative is None else bool(relative)
    if rel and np.any(E0 == 0):
        raise ValueError("plot_energy_and_constraint: relative=True needs E_0 != 0 for every member")
    err = np.abs(E - E0) / (np.abs(E0) if rel else 1.0)
    plt = _pyplot()
    n_panels = 2 if has_c else 1
    fig, axes = plt.subplots(n_panels, 1, sharex=True, figsize=(6.4, 2.6 + 2.2 * n_panels), squeeze=False)
    _OWN_FIGURES.add(fig)
    axes = axes[:, 0]
    curves, labels = _per_member(err)
    for c, lab in zip(curves.T, labels):
        axes[0].semilogy(t, np.maximum(c, floor), linewidth=1.0, label=lab or "energy error")
    ylab = "|E − E₀| / |E₀|" if rel else "|E − E₀| [energy units]"
    axes[0].set_ylabel(f"{ylab}\n(values < {floor:.0e} drawn at {floor:.0e})", fontsize="small")
    axes[0].set_title(title or _title(trajectory, "Energy error and constraint residual" if has_c else "Energy error"))
    axes[0].grid(True, which="both", alpha=0.3)
    axes[0].legend(loc="best", fontsize="small")
    if has_c:
        curves, labels = _per_member(cres)
        for c, lab in zip(curves.T, labels):
            axes[1].semilogy(t[:-1], np.maximum(c, floor), linewidth=1.0, label=lab or "discrete constraint |c(ξ)|∞")
        axes[1].set_ylabel(f"|c(ξ)|∞ per step\n(values < {floor:.0e} drawn at {floor:.0e})", fontsize="small")
        axes[1].grid(True, which="both", alpha=0.3)
        axes[1].legend(loc="best", fontsize="small")
    axes[-1].set_xlabel(f"t [{time_unit}]")
    return _finish(fig, path)


# ------------------------------------------------------------------ studies
def _positive_1d(name: str, a: ArrayLike, n: int | None = None) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim != 1 or a.size < 1 or (n is not None and a.size != n):
        want = f"{n} values" if n is not None else "a 1-d array"
        raise ValueError(f"{name}: expected {want}, got shape {a.shape}")
    if not np.all(np.isfinite(a) & (a > 0)):
        raise ValueError(f"{name}: values must be positive and finite on a log scale, got {a.tolist()}")
    return a


def plot_convergence(
    hs: ArrayLike,
    errors_by_label: Mapping[str, ArrayLike],
    orders: Sequence[float] | None = None,
    ax: Axes | None = None,
    *,
    time_unit: str = "s",
    error_name: str = "error",
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    """Log-log error against step size, with reference slopes ``O(h^p)``.

    Parameters
    ----------
    hs : array-like, shape=[k]
        Step sizes (> 0).
    errors_by_label : mapping str -> array-like, shape=[k]
        One series per label (e.g. scheme names); the legend shows each
        series' observed order (least-squares slope) when ``k >= 2``.
    orders : sequence of float, optional
        Reference slopes to draw (default: the observed orders rounded to
        integers).
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    time_unit : str
        Unit of ``h``.
    error_name : str
        What the error measures (y-axis label).
    title : str, optional
        The figure's title (default: what is drawn, the system, scheme, rule and ``h``).
    path : str or Path, optional
        Write the figure there (the format from the suffix, e.g. ``.png``).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For an empty mapping, series of the wrong length or non-positive values.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> h = np.array([0.1, 0.05, 0.025])
    >>> fig = md.plot_convergence(h, {"midpoint": 0.3 * h**2, "plus": 0.5 * h}, path="convergence.png")
    """
    h = _positive_1d("plot_convergence: hs", hs)
    if not errors_by_label:
        raise ValueError("plot_convergence: errors_by_label is empty; give {label: errors}")
    series = {str(k): _positive_1d(f"plot_convergence: errors of {k!r}", v, h.size) for k, v in errors_by_label.items()}
    fig, ax = _new_axes(ax)
    slopes = {}
    for lab, e in series.items():
        if h.size >= 2 and np.ptp(h) > 0:
            slopes[lab] = float(np.polyfit(np.log(h), np.log(e), 1)[0])
            text = f"{lab} (observed order {slopes[lab]:.2f})"
        else:
            text = lab
        ax.loglog(h, e, "o-", label=text)
    if orders is None:
        orders = sorted({round(s) for s in slopes.values() if round(s) > 0})
    e_all = np.concatenate(list(series.values()))
    anchor_e = float(np.exp(np.mean(np.log(e_all))))
    anchor_h = float(np.exp(np.mean(np.log(h))))
    hh = np.array([h.min(), h.max()])
    for p in orders:
        ax.loglog(hh, anchor_e * (hh / anchor_h) ** p, "--", color="0.5", linewidth=1.0, label=f"reference O(h^{p:g})")
    ax.set_xlabel(f"step size h [{time_unit}]")
    ax.set_ylabel(error_name)
    ax.set_title(title or "Convergence")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return _finish(fig, path)


_WP_KEYS = ("label", "h", "error", "wall_time")


def plot_work_precision(
    rows: Sequence[Mapping[str, float | str]],
    per_step: bool = False,
    ax: Axes | None = None,
    *,
    error_name: str = "error",
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    """Error against wall time, log-log, one series per label.

    Parameters
    ----------
    rows : sequence of mappings
        Each with ``label`` (e.g. ``"exp / symmetric"`` for a retraction and
        a scheme), ``h``, ``error`` (> 0) and ``wall_time`` (seconds, > 0);
        with ``per_step=True`` also ``n_steps``. Points of one label are
        joined in order of ``h``.
    per_step : bool
        Plot the wall time per step instead of the total.
    ax : matplotlib Axes, optional
        Draw into this axes instead of a new figure.
    error_name : str
        What the error measures (axis label).
    title : str, optional
        The figure's title (default: what is drawn, the system, scheme, rule and ``h``).
    path : str or Path, optional
        Write the figure there (the format from the suffix, e.g. ``.png``).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        For no rows, a row without a required key, or non-positive values.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> rows = [{"label": "midpoint", "h": h, "error": 0.3 * h**2, "wall_time": 0.1 / h} for h in (0.1, 0.05)]
    >>> fig = md.plot_work_precision(rows, path="work_precision.png")
    """
    if not rows:
        raise ValueError("plot_work_precision: no rows; give dicts with keys " + ", ".join(_WP_KEYS))
    keys = _WP_KEYS + (("n_steps",) if per_step else ())
    groups: dict[str, list[tuple[float, float, float]]] = {}
    for i, r in enumerate(rows):
        missing = [k for k in keys if k not in r]
        if missing:
            raise ValueError(f"plot_work_precision: row {i} lacks the key(s) {missing} (needs {list(keys)})")
        vals = [float(r["h"]), float(r["error"]), float(r["wall_time"])]
        if per_step:
            n = float(r["n_steps"])
            if not n > 0:
                raise ValueError(f"plot_work_precision: row {i} has n_steps = {r['n_steps']!r}; need > 0")
            vals[2] /= n
        if not all(np.isfinite(v) and v > 0 for v in vals):
            raise ValueError(
                f"plot_work_precision: row {i} ({r['label']!r}) needs positive finite h, error and wall_time "
                f"on log axes, got h={r['h']!r}, error={r['error']!r}, wall_time={r['wall_time']!r}"
            )
        groups.setdefault(str(r["label"]), []).append(tuple(vals))  # type: ignore[arg-type]
    fig, ax = _new_axes(ax)
    markers = "osD^v<>ph*"
    for j, (lab, pts) in enumerate(groups.items()):
        pts.sort(reverse=True)
        _, err, wall = np.array(pts).T
        ax.loglog(wall, err, marker=markers[j % len(markers)], linestyle="-", label=lab)
    ax.set_xlabel("wall time per step [s]" if per_step else "total wall time [s]")
    ax.set_ylabel(error_name)
    ax.set_title(title or "Work-precision (lower left is better)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return _finish(fig, path)


# ----------------------------------------------------------------- dispatch
def _guess_kind(q: Point) -> str:
    if isinstance(q, tuple):
        return "coordinates"
    a = np.asarray(q)
    if a.ndim >= 3 and a.shape[-2:] == (3, 3):
        # a rotation about z also has the last row (0, 0, 1): SE(2) only if it translates
        if np.allclose(a[..., 2, :], [0.0, 0.0, 1.0]) and not np.allclose(a[..., :2, 2], 0.0):
            return "se2"
        return "so3"
    if a.ndim >= 2 and a.shape[-1] == 3 and np.allclose(np.linalg.norm(a, axis=-1), 1.0, atol=1e-8):
        return "sphere"
    return "coordinates"


def plot_trajectory(
    trajectory: Trajectory,
    system: LagrangeDiracSystem | None = None,
    *,
    manifold: Manifold | None = None,
    path: str | Path | None = None,
    **kwargs: Any,
) -> Figure:
    """A sensible default picture of a trajectory, chosen by its manifold.

    * SE(2): :func:`plot_se2_path`;
    * SO(3): :func:`plot_so3_body_axes`;
    * the sphere S^2 (unit vectors in R^3): the path on the sphere;
    * anything else (Euclidean, products): the manifold's coordinates
      (``Q.to_coordinates``, named by ``Q.coordinate_names``) against time.

    Parameters
    ----------
    trajectory : Trajectory
        The run to draw (its ``q`` and ``t``; a batch draws one curve per member).
    system : LagrangeDiracSystem, optional
        Its manifold ``system.Q`` decides; otherwise ``manifold``, otherwise
        the shape of ``trajectory.q``.
    manifold : Manifold, optional
        The manifold, when ``system`` is not given.
    path : str or Path, optional
        Write the figure there (the format from the suffix, e.g. ``.png``).
    **kwargs
        Passed on to the specific function.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> pendulums = md.systems.double_pendulum()
    >>> tr = md.integrate(pendulums, np.array([1.0, 0.5]), v0=np.zeros(2), h=0.01, n_steps=200)
    >>> fig = md.plot_trajectory(tr, path="double_pendulum.png")   # coordinates against time
    """
    from ._manifolds import SE2, SO3
    from ._manifolds.sphere import Sphere2

    Q = system.Q if system is not None else manifold
    q = _get(trajectory, "q")
    if Q is not None:
        kind = "se2" if isinstance(Q, SE2) else "so3" if isinstance(Q, SO3) else (
            "sphere" if isinstance(Q, Sphere2) else "coordinates"
        )
    else:
        kind = _guess_kind(q)
    if kind == "se2":
        return plot_se2_path(trajectory, Q, path=path, **kwargs)
    if kind == "so3":
        return plot_so3_body_axes(trajectory, path=path, **kwargs)
    if kind == "sphere":
        return _plot_sphere_path(trajectory, path=path, **kwargs)
    return _plot_coordinates(trajectory, Q, path=path, **kwargs)


def _plot_sphere_path(trajectory: Trajectory, *, title: str | None = None, path: str | Path | None = None
                      ) -> Figure:
    u = np.asarray(trajectory.q, dtype=float)
    if u.ndim < 2 or u.shape[-1] != 3:
        raise ValueError(f"plot_trajectory: expected unit vectors (K+1, *B, 3) on the sphere, got {u.shape}")
    _check_finite("plot_trajectory: the points", u)
    u = u.reshape(u.shape[0], -1, 3)
    fig, ax = _new_axes(None, projection="3d", figsize=(6.4, 6.0))
    _sphere(ax)
    for b in range(u.shape[1]):
        label = ("path" if u.shape[1] == 1 else f"member {b}") if b < _MAX_LEGEND else None
        ax.plot(u[:, b, 0], u[:, b, 1], u[:, b, 2], linewidth=1.5, label=label)
    ax.scatter(u[0, :, 0], u[0, :, 1], u[0, :, 2], color="k", s=12, label="t = 0")
    ax.set_xlabel("x [1]")
    ax.set_ylabel("y [1]")
    ax.set_zlabel("z [1]")
    ax.set_title(title or _title(trajectory, "Path on the sphere"))
    ax.legend(loc="upper left", fontsize="small")
    return _finish(fig, path)


def _host_coordinates(Q: Manifold, q: Point) -> np.ndarray:
    """``Q.to_coordinates(q)`` of a concrete trajectory as a NumPy array, compiling no XLA program.

    Eager ``jax.numpy`` on concrete arrays compiles a small program per
    operation and shape in every fresh process (``jnp.asarray`` of a NumPy
    array included); the factors of a product are therefore converted one by
    one and joined here, a Euclidean factor is its own coordinates, and the
    other manifolds convert concrete input in NumPy themselves.
    """
    from ._manifolds import Euclidean, ProductManifold

    if isinstance(Q, ProductManifold) and isinstance(q, tuple):
        parts = [_host_coordinates(f, x) for f, x in zip(Q.factors, q)]
        batch = np.broadcast_shapes(*(p.shape[:-1] for p in parts))
        return np.concatenate([np.broadcast_to(p, (*batch, p.shape[-1])) for p in parts], -1)
    if isinstance(Q, Euclidean):
        return np.asarray(q, dtype=float)
    return np.asarray(Q.to_coordinates(q), dtype=float)


def _plot_coordinates(
    trajectory: Trajectory,
    Q: Manifold | None,
    *,
    member: int | tuple[int, ...] | None = None,
    time_unit: str = "s",
    title: str | None = None,
    path: str | Path | None = None,
) -> Figure:
    t = np.asarray(_get(trajectory, "t"), dtype=float)
    q = trajectory.q
    if Q is not None:
        # the manifolds take leading (time, batch) axes
        c = _host_coordinates(Q, q)
        names = tuple(Q.coordinate_names) or tuple(f"q{i}" for i in range(c.shape[-1]))
    elif isinstance(q, tuple):
        raise ValueError("plot_trajectory: a product trajectory needs system= or manifold= to name its coordinates")
    else:
        c = np.asarray(q, dtype=float)
        c = c.reshape(c.shape[0], *c.shape[1:]) if c.ndim >= 2 else c[:, None]
        names = tuple(f"q{i}" for i in range(c.shape[-1]))
    if c.ndim < 2 or c.shape[0] != t.shape[0]:
        raise ValueError(f"plot_trajectory: coordinates {c.shape} do not match the {t.shape[0]} times")
    if c.ndim > 2:
        idx = (0,) * (c.ndim - 2) if member is None else ((member,) if isinstance(member, int) else tuple(member))
        c = c[(slice(None), *idx)]  # type: ignore[arg-type]
    _check_finite("plot_trajectory: the coordinates", c)
    if len(names) != c.shape[-1]:
        names = tuple(f"q{i}" for i in range(c.shape[-1]))
    fig, ax = _new_axes(None)
    for i, name in enumerate(names):
        ax.plot(t, c[:, i], label=name)
    ax.set_xlabel(f"t [{time_unit}]")
    ax.set_ylabel("coordinate value [coordinate units]")
    ax.set_title(title or _title(trajectory, "Coordinates"))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    return _finish(fig, path)
