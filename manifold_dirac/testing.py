"""Shared law checks for manifolds, a registry, hypothesis strategies, tolerances.

Users test their own manifolds with the same laws the library's manifolds
pass (``docs/adding-a-manifold.md``)::

    from manifold_dirac.testing import check_manifold_laws, register_manifold

    register_manifold("my-group", MyGroup)     # picked up by tests/manifolds
    check_manifold_laws(MyGroup())             # or run every law directly

Every law is a function ``law(manifold, q, xi)`` taking a point ``q``
``(*batch, *point_shape)`` and a tangent vector ``xi`` ``(*batch, dim)`` in
frame coordinates at ``q`` (samples come from :meth:`Manifold.random_point`
and :meth:`Manifold.sample_tangent` in one of :data:`REGIMES`). A law returns
``None`` or raises :class:`AssertionError` whose message names the law, the
batch index and the size of the violation.

Derivative laws use two independent checks: central finite differences
(a fourth-order five-point stencil whose step is shrunk until it has
converged, so that a step never straddles a cut locus such as a rotation by
pi), compared at relative tolerance ``1e-6``; and the perturbation test
``f(q (+) s w) = f(q) + s J w + O(s^2)``, which requires the remainder over
``s`` to keep falling as ``s`` shrinks (a wrong Jacobian leaves it constant).

hypothesis is only needed for :func:`seeds`, :func:`points`,
:func:`tangents` and :func:`samples`; it is imported when they are called.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .manifolds.base import Manifold
from .manifolds.lie_group import MatrixLieGroup

__all__ = [
    "BATCH_SHAPES",
    "GROUP_LAWS",
    "LAWS",
    "REGIMES",
    "assert_close",
    "check_adjoint",
    "check_ambient_tangent",
    "check_batch_consistency",
    "check_exp_log",
    "check_group_associativity",
    "check_group_identity",
    "check_group_inverse",
    "check_hat_vee",
    "check_inverse_retract_jacobians_fd",
    "check_inverse_retract_jacobians_perturbation",
    "check_inverse_retract_round_trip",
    "check_inverse_retract_with_jacobians",
    "check_manifold_laws",
    "check_points_on_manifold",
    "check_retract_at_zero",
    "check_retract_jacobians_fd",
    "check_retract_jacobians_perturbation",
    "check_retraction_differential_at_zero",
    "draw_sample",
    "laws_for",
    "point_arrays",
    "points",
    "register_manifold",
    "registered_manifolds",
    "samples",
    "seeds",
    "tangents",
    "unregister_manifold",
]

REGIMES: tuple[str, ...] = ("near_zero", "generic", "near_singular")
"""Regimes of :meth:`Manifold.sample_tangent` every law is run in."""

BATCH_SHAPES: tuple[tuple[int, ...], ...] = ((), (1,), (3, 2))
"""Batch shapes the shared tests use: unbatched, a batch of one, two axes."""

Law = Callable[[Manifold, Any, np.ndarray], None]

# ---------------------------------------------------------------- registry
_REGISTRY: dict[str, Callable[[], Manifold]] = {}


def register_manifold(name: str, factory: Callable[[], Manifold], *, replace: bool = False) -> None:
    """Register a manifold so that the shared law tests run over it.

    Parameters
    ----------
    name : str
        Identifier used in test ids (``"so3-exp"``).
    factory : callable
        ``factory() -> Manifold``; called afresh by each test (a class with a
        default constructor works).
    replace : bool
        Allow replacing an existing registration of ``name``.

    Raises
    ------
    ValueError
        If ``name`` is taken (and ``replace`` is false) or ``factory`` is not
        callable.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"register_manifold: name must be a non-empty string, got {name!r}")
    if not callable(factory):
        raise ValueError(f"register_manifold({name!r}): factory must be callable, got {factory!r}")
    if name in _REGISTRY and not replace:
        raise ValueError(
            f"register_manifold: {name!r} is already registered; pass replace=True to replace it"
        )
    _REGISTRY[name] = factory


def unregister_manifold(name: str) -> None:
    """Remove a registration (a ``ValueError`` lists the registered names if absent)."""
    if name not in _REGISTRY:
        raise ValueError(
            f"unregister_manifold: {name!r} is not registered; registered: {', '.join(sorted(_REGISTRY))}"
        )
    del _REGISTRY[name]


def registered_manifolds() -> dict[str, Callable[[], Manifold]]:
    """A copy of the registry, ``{name: factory}``, in registration order."""
    return dict(_REGISTRY)


def _register_builtins() -> None:
    import importlib.util

    from .manifolds import SE2, SO3, Euclidean, ProductManifold

    register_manifold("euclidean1", lambda: Euclidean(1))
    register_manifold("euclidean3", lambda: Euclidean(3))
    register_manifold("so3-exp", lambda: SO3("exp"))
    register_manifold("so3-cayley", lambda: SO3("cayley"))
    register_manifold("se2-exp", lambda: SE2("exp"))
    register_manifold("se2-cayley", lambda: SE2("cayley"))
    register_manifold("se2-so2xr2", lambda: SE2("so2xr2"))
    register_manifold("so3xr2", lambda: ProductManifold(SO3(), Euclidean(2)))
    register_manifold(
        "nested-product",
        lambda: ProductManifold(SE2("cayley"), ProductManifold(SO3("exp"), Euclidean(1))),
    )
    if importlib.util.find_spec("geomstats") is not None:
        # registered lazily: geomstats is imported when the factory is called

        def sphere2() -> Manifold:
            from .manifolds.geomstats_adapter import Sphere2

            return Sphere2()

        register_manifold("sphere2", sphere2)


# ------------------------------------------------------------- tolerances
def _index_str(idx: Sequence[int] | tuple) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def assert_close(
    a: Any,
    b: Any,
    rtol: float = 1e-12,
    atol: float = 1e-12,
    what: str = "value",
    batch_ndim: int | None = None,
) -> None:
    """Assert ``|a - b| <= atol + rtol |b|`` elementwise, with a useful message.

    Parameters
    ----------
    a, b : array-like
        Actual and expected values (broadcast against each other).
    rtol, atol : float
        Relative and absolute tolerances.
    what : str
        What is compared, for the message.
    batch_ndim : int, optional
        Number of leading batch axes: the message then names the batch
        index of the worst violation instead of the flat element index.

    Raises
    ------
    AssertionError
        Naming ``what``, the index of the worst violation, the two values
        there, the error and the tolerance.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    try:
        a, b = np.broadcast_arrays(a, b)
    except ValueError:
        raise AssertionError(f"{what}: shapes differ, {a.shape} vs expected {b.shape}") from None
    if a.size == 0:
        return
    err = np.abs(a - b)
    tol = atol + rtol * np.abs(b)
    finite = np.isfinite(a) & np.isfinite(b)
    bad = ~finite | (err > tol)
    if not np.any(bad):
        return
    excess = np.where(finite, err - tol, np.inf)
    flat = int(np.argmax(excess))
    idx = np.unravel_index(flat, a.shape)
    where = (
        f"batch index {_index_str(idx[:batch_ndim])}, entry {_index_str(idx[batch_ndim:])}"
        if batch_ndim is not None
        else f"index {_index_str(idx)}"
    )
    raise AssertionError(
        f"{what}: mismatch at {where}: got {a[idx]!r}, expected {b[idx]!r}; "
        f"|error| = {err[idx]:.3e} > atol + rtol*|expected| = {tol[idx]:.3e} "
        f"(rtol={rtol:.1e}, atol={atol:.1e}; {int(np.sum(bad))} of {a.size} entries fail)"
    )


def point_arrays(q: Any) -> list[np.ndarray]:
    """The arrays of a point, a product's tuple flattened depth first."""
    if isinstance(q, (tuple, list)):
        out: list[np.ndarray] = []
        for qi in q:
            out.extend(point_arrays(qi))
        return out
    return [np.asarray(q)]


def _assert_points_close(manifold: Manifold, a: Any, b: Any, what: str, rtol: float, atol: float) -> None:
    pa, pb = point_arrays(a), point_arrays(b)
    if len(pa) != len(pb):
        raise AssertionError(f"{what}: points have {len(pa)} vs {len(pb)} component arrays")
    for i, (x, y) in enumerate(zip(pa, pb)):
        scale = 1.0 + np.max(np.abs(y)) if y.size else 1.0
        assert_close(x, y, rtol, atol * scale, f"{what} (component {i})" if len(pa) > 1 else what)


def _frob(a: np.ndarray) -> np.ndarray:
    return np.sqrt(np.sum(np.abs(a) ** 2, axis=(-2, -1)))


def _assert_jacobian_close(J: np.ndarray, ref: np.ndarray, rtol: float, what: str, reference: str) -> None:
    """Batchwise ``|J - ref|_F <= rtol * max(|ref|_F, 1)``."""
    J = np.asarray(J)
    ref = np.asarray(ref)
    if J.shape != ref.shape:
        raise AssertionError(f"{what}: Jacobian has shape {J.shape}, expected {ref.shape}")
    err = _frob(J - ref)
    tol = rtol * np.maximum(_frob(ref), 1.0)
    bad = ~np.isfinite(err) | (err > tol)
    if np.any(bad):
        excess = np.where(np.isfinite(err), err / tol, np.inf)
        idx = np.unravel_index(int(np.argmax(excess)), err.shape) if err.ndim else ()
        raise AssertionError(
            f"{what} disagrees with {reference} at batch index {_index_str(idx)}: "
            f"|J - J_ref|_F = {err[idx]:.3e} > {rtol:.1e} * max(|J_ref|_F, 1) = {tol[idx]:.3e}\n"
            f"J =\n{J[idx]}\nJ_ref =\n{ref[idx]}"
        )


# ------------------------------------------------------------ FD helpers
_FD_H0 = 1e-5
_FD_LEVELS = 8  # steps 1e-5 / 4**k, k < 8: down to 6e-10


def _unit(dim: int, j: int, batch: tuple[int, ...]) -> np.ndarray:
    e = np.zeros((*batch, dim))
    e[..., j] = 1.0
    return e


def _fd_jacobian(f: Callable[[np.ndarray], np.ndarray], dim: int, batch: tuple[int, ...]) -> np.ndarray:
    """Central-difference Jacobian of ``f(delta) -> (*batch, m)`` at ``delta = 0``.

    ``delta`` is ``(*batch, dim)``. Five-point stencil (error ``O(h^4)``)
    at steps ``h = 1e-5 / 4^k``; per batch element the first estimate that
    agrees with the next finer one is kept, so that no stencil straddles a
    discontinuity such as the cut locus of a logarithm. All steps and
    directions are evaluated in one call, stacked on a new leading axis
    (manifold operations broadcast over leading axes). Returns
    ``(*batch, m, dim)``.
    """
    hs = _FD_H0 / 4.0 ** np.arange(_FD_LEVELS)
    stencil = np.array([1.0, -1.0, 2.0, -2.0])
    nb = len(batch)
    # delta[level, stencil, j] = stencil * h * e_j
    t = hs[:, None, None] * stencil[None, :, None] * np.ones(dim)  # (L, 4, dim)
    delta = t[..., None] * np.eye(dim)  # (L, 4, dim_j, dim)
    delta = np.broadcast_to(delta.reshape(-1, *(1,) * nb, dim), (delta.size // dim, *batch, dim))
    out = np.asarray(f(delta))  # (L*4*dim, *batch, m)
    out = out.reshape(_FD_LEVELS, 4, dim, *out.shape[1:])
    fp1, fm1, fp2, fm2 = out[:, 0], out[:, 1], out[:, 2], out[:, 3]  # (L, dim_j, *batch, m)
    est = (8.0 * (fp1 - fm1) - (fp2 - fm2)) / (12.0 * hs.reshape(-1, *(1,) * (nb + 2)))
    est = np.moveaxis(est, 1, -1)  # (L, *batch, m, dim_j)
    fscale = np.max(np.abs(out), axis=(1, 2, -1))  # (L, *batch)
    diff = _frob(est[1:] - est[:-1])  # (L-1, *batch)
    tol = 3e-7 * np.maximum(_frob(est[1:]), 1.0) + 8 * np.finfo(float).eps * (1 + fscale[1:]) / hs[
        1:
    ].reshape(-1, *(1,) * nb)
    ok = diff <= tol
    # first converged level per element; the finest estimate if none converged
    first = np.where(np.any(ok, axis=0), np.argmax(ok, axis=0), _FD_LEVELS - 1)
    return np.take_along_axis(est, first[None, ..., None, None], axis=0)[0]


def _perturbation_check(
    f: Callable[[np.ndarray], np.ndarray],
    f0: np.ndarray,
    J: np.ndarray,
    w: np.ndarray,
    what: str,
) -> None:
    """Check ``|f(s w) - f0 - s J w| / s`` falls as ``s`` shrinks (per batch element).

    With the true Jacobian the remainder is ``O(s^2)``: ``remainder/s``
    drops ~10x per decade of ``s`` until it reaches round-off; with a wrong
    one it stays at ``|(J - J_true) w|``. Over ``s = 1e-2 ... 1e-12``, take
    the last two consecutive steps whose remainder is above the round-off
    floor ``50 eps (1 + |f0|)(1 + |J|)``: ``remainder/s`` must drop there by
    a factor of at least 3 -- or, if the remainder did not shrink at all
    there (a large step crossed the cut locus of a logarithm, e.g. a rotation
    by nearly pi perturbed past pi), every smaller step must be at
    round-off.
    """
    Jw = np.einsum("...ij,...j->...i", J, w)
    scales = 10.0 ** -np.arange(2, 13)
    eps = np.finfo(float).eps
    floor_abs = 50 * eps * (1.0 + np.max(np.abs(f0), axis=-1)) * (1.0 + _frob(J))
    sc = scales.reshape(-1, *(1,) * w.ndim)
    vals = np.asarray(f(sc * w))  # one call, scales on a new leading axis
    rem = np.linalg.norm(vals - f0 - sc * Jw, axis=-1) / sc[..., 0]  # (n_scales, *batch)
    R = np.moveaxis(rem, 0, -1)  # (*batch, n_scales)
    F = floor_abs[..., None] / scales
    for idx in np.ndindex(*R.shape[:-1]):
        r, fl = R[idx], F[idx]
        if not np.all(np.isfinite(r)):
            raise AssertionError(f"{what}: non-finite remainder at batch index {_index_str(idx)}: {r}")
        above = r > fl
        pairs = np.nonzero(above[:-1] & above[1:])[0]
        if pairs.size == 0:
            continue  # the remainder is at round-off: the first-order model is exact
        k = pairs[-1]
        rho = r[k + 1] / r[k]
        if rho <= 1.0 / 3.0:
            continue
        if rho >= 5.0 and not np.any(above[k + 2 :]):
            continue  # a jump across a cut locus at large s; at round-off below it
        raise AssertionError(
            f"{what}: first-order model f(q (+) s w) = f(q) + s J w fails at batch index "
            f"{_index_str(idx)}: the remainder/s does not fall as s shrinks "
            f"(s = {', '.join(f'{x:.0e}' for x in scales)}: remainder/s = "
            f"{', '.join(f'{x:.2e}' for x in r)}; round-off floor at s = {scales[k + 1]:.0e}: "
            f"{fl[k + 1]:.1e}); the Jacobian is wrong"
        )


def _batch(manifold: Manifold, q: Any, xi: np.ndarray) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(manifold.batch_shape(q), np.shape(xi)[:-1]))


def _direction(dim: int, batch: tuple[int, ...], seed: int = 12345) -> np.ndarray:
    w = np.random.default_rng(seed).standard_normal((*batch, dim))
    return w / np.linalg.norm(w, axis=-1, keepdims=True)


# ------------------------------------------------------------------ laws
def check_retract_at_zero(
    manifold: Manifold, q: Any, xi: np.ndarray | None = None, atol: float = 1e-13
) -> None:
    """``R_q(0) = q``."""
    zero = np.zeros((*manifold.batch_shape(q), manifold.dim))
    _assert_points_close(manifold, manifold.retract(q, zero), q, f"{manifold!r}: R_q(0) = q", 0.0, atol)


def check_points_on_manifold(manifold: Manifold, q: Any, xi: np.ndarray, atol: float = 1e-9) -> None:
    """``random_point`` and ``R_q(xi)`` pass :meth:`Manifold.check_point`."""
    for what, p in (("q", q), ("R_q(xi)", manifold.retract(q, xi))):
        try:
            manifold.check_point(p, atol=atol, name=what)
        except ValueError as exc:
            raise AssertionError(f"{manifold!r}: {what} is not on the manifold: {exc}") from exc


def check_inverse_retract_round_trip(manifold: Manifold, q: Any, xi: np.ndarray, rtol: float = 1e-9) -> None:
    """``R_q^{-1}(R_q(xi)) = xi`` (to ``rtol * max(|xi|, 1e-300)`` plus round-off)."""
    back = manifold.inverse_retract(q, manifold.retract(q, xi))
    n = np.linalg.norm(xi, axis=-1, keepdims=True)
    err = np.linalg.norm(back - xi, axis=-1, keepdims=True)
    tol = rtol * n + 1e-15
    bad = ~(err <= tol)
    if np.any(bad):
        idx = np.argwhere(bad[..., 0])[0] if bad.ndim > 1 else ()
        raise AssertionError(
            f"{manifold!r}: R_q^-1(R_q(xi)) != xi at batch index {_index_str(idx)}: "
            f"|error| = {np.max(err):.3e} for |xi| = {float(n[tuple(idx)][0]):.3e} "
            f"(tolerance {rtol:.0e} relative)\nxi = {xi[tuple(idx)]}\nback = {back[tuple(idx)]}"
        )


def check_retraction_differential_at_zero(
    manifold: Manifold, q: Any, xi: np.ndarray | None = None, rtol: float = 1e-6
) -> None:
    """``dR_q(0) = id`` in frame coordinates, and the Jacobians agree at zero.

    The FD of ``t -> R_q^{-1}(R_q(t e_j))`` is the identity; the analytic
    Jacobians at zero are ``J_xi(q, 0) = J_q(q, 0) = I`` and
    ``J1(q, q) = -J0(q, q) = I``.
    """
    batch = tuple(manifold.batch_shape(q))
    D = _fd_jacobian(lambda d: manifold.inverse_retract(q, manifold.retract(q, d)), manifold.dim, batch)
    eye = np.broadcast_to(np.eye(manifold.dim), D.shape)
    _assert_jacobian_close(eye, D, rtol, f"{manifold!r}: dR_q(0) = id", "the FD of R_q^-1(R_q(t e_j))")
    zero = np.zeros((*batch, manifold.dim))
    Jq, Jxi = manifold.retract_jacobians(q, zero)
    J0, J1 = manifold.inverse_retract_jacobians(q, q)
    for what, J, ref in (
        ("J_xi(q, 0) = I", Jxi, eye),
        ("J_q(q, 0) = I", Jq, eye),
        ("J1(q, q) = I", J1, eye),
        ("J0(q, q) = -I", J0, -eye),
    ):
        _assert_jacobian_close(J, ref, 1e-12, f"{manifold!r}: {what}", "the identity")


def check_inverse_retract_jacobians_fd(
    manifold: Manifold, q: Any, xi: np.ndarray, rtol: float = 1e-6
) -> None:
    """``J0``, ``J1`` of ``xi = R_{q0}^{-1}(q1)`` against central differences (q0 = q, q1 = R_q(xi))."""
    q0, q1 = q, manifold.retract(q, xi)
    batch = _batch(manifold, q, xi)
    J0, J1 = manifold.inverse_retract_jacobians(q0, q1)
    D0 = _fd_jacobian(lambda d: manifold.inverse_retract(manifold.retract(q0, d), q1), manifold.dim, batch)
    D1 = _fd_jacobian(lambda d: manifold.inverse_retract(q0, manifold.retract(q1, d)), manifold.dim, batch)
    _assert_jacobian_close(J0, D0, rtol, f"{manifold!r}: J0 = dxi/dq0", "central finite differences")
    _assert_jacobian_close(J1, D1, rtol, f"{manifold!r}: J1 = dxi/dq1", "central finite differences")


def check_inverse_retract_jacobians_perturbation(manifold: Manifold, q: Any, xi: np.ndarray) -> None:
    """``R_{q0 (+) s w}^{-1}(q1) = xi + s J0 w + O(s^2)`` and likewise for ``J1``."""
    q0, q1 = q, manifold.retract(q, xi)
    batch = _batch(manifold, q, xi)
    xi0 = manifold.inverse_retract(q0, q1)
    J0, J1 = manifold.inverse_retract_jacobians(q0, q1)
    w = _direction(manifold.dim, batch)
    _perturbation_check(
        lambda d: manifold.inverse_retract(manifold.retract(q0, d), q1),
        xi0,
        J0,
        w,
        f"{manifold!r}: J0 = dxi/dq0",
    )
    _perturbation_check(
        lambda d: manifold.inverse_retract(q0, manifold.retract(q1, d)),
        xi0,
        J1,
        w,
        f"{manifold!r}: J1 = dxi/dq1",
    )


def check_retract_jacobians_fd(manifold: Manifold, q: Any, xi: np.ndarray, rtol: float = 1e-6) -> None:
    """``J_q``, ``J_xi`` of ``q' = R_q(xi)`` (frame at ``q'``) against central differences."""
    batch = _batch(manifold, q, xi)
    qp = manifold.retract(q, xi)
    Jq, Jxi = manifold.retract_jacobians(q, xi)
    Dq = _fd_jacobian(
        lambda d: manifold.inverse_retract(qp, manifold.retract(manifold.retract(q, d), xi)),
        manifold.dim,
        batch,
    )
    Dxi = _fd_jacobian(
        lambda d: manifold.inverse_retract(qp, manifold.retract(q, xi + d)), manifold.dim, batch
    )
    _assert_jacobian_close(Jq, Dq, rtol, f"{manifold!r}: J_q of R_q(xi)", "central finite differences")
    _assert_jacobian_close(Jxi, Dxi, rtol, f"{manifold!r}: J_xi of R_q(xi)", "central finite differences")


def check_retract_jacobians_perturbation(manifold: Manifold, q: Any, xi: np.ndarray) -> None:
    """``R_{q'}^{-1}(R_{q (+) s w}(xi)) = s J_q w + O(s^2)``; likewise ``J_xi``."""
    batch = _batch(manifold, q, xi)
    qp = manifold.retract(q, xi)
    Jq, Jxi = manifold.retract_jacobians(q, xi)
    w = _direction(manifold.dim, batch)
    zero = np.zeros((*batch, manifold.dim))
    _perturbation_check(
        lambda d: manifold.inverse_retract(qp, manifold.retract(manifold.retract(q, d), xi)),
        zero,
        Jq,
        w,
        f"{manifold!r}: J_q of R_q(xi)",
    )
    _perturbation_check(
        lambda d: manifold.inverse_retract(qp, manifold.retract(q, xi + d)),
        zero,
        Jxi,
        w,
        f"{manifold!r}: J_xi of R_q(xi)",
    )


def check_inverse_retract_with_jacobians(manifold: Manifold, q: Any, xi: np.ndarray) -> None:
    """``inverse_retract_with_jacobians`` equals the separate methods."""
    q1 = manifold.retract(q, xi)
    x, J0, J1 = manifold.inverse_retract_with_jacobians(q, q1)
    K0, K1 = manifold.inverse_retract_jacobians(q, q1)
    ref = manifold.inverse_retract(q, q1)
    nb = len(_batch(manifold, q, xi))
    name = f"{manifold!r}: inverse_retract_with_jacobians"
    assert_close(x, ref, 1e-13, 1e-15, f"{name}: xi vs inverse_retract", nb)
    assert_close(J0, K0, 1e-13, 1e-14, f"{name}: J0 vs inverse_retract_jacobians", nb)
    assert_close(J1, K1, 1e-13, 1e-14, f"{name}: J1 vs inverse_retract_jacobians", nb)


def check_batch_consistency(manifold: Manifold, q: Any, xi: np.ndarray) -> None:
    """A batched call equals the loop of unbatched calls, for every method."""
    batch = _batch(manifold, q, xi)
    if not batch:
        return
    q1 = manifold.retract(q, xi)
    eta = _direction(manifold.dim, batch, seed=7)
    batched = {
        "retract": point_arrays(q1),
        "inverse_retract": [manifold.inverse_retract(q, q1)],
        "inverse_retract_jacobians": list(manifold.inverse_retract_jacobians(q, q1)),
        "retract_jacobians": list(manifold.retract_jacobians(q, xi)),
        "ambient_tangent": point_arrays(manifold.ambient_tangent(q, eta)),
    }
    for idx in np.ndindex(*batch):
        qi = manifold.index_point(q, idx)
        q1i = manifold.index_point(q1, idx)
        xii, etai = xi[idx], eta[idx]
        single = {
            "retract": point_arrays(manifold.retract(qi, xii)),
            "inverse_retract": [manifold.inverse_retract(qi, q1i)],
            "inverse_retract_jacobians": list(manifold.inverse_retract_jacobians(qi, q1i)),
            "retract_jacobians": list(manifold.retract_jacobians(qi, xii)),
            "ambient_tangent": point_arrays(manifold.ambient_tangent(qi, etai)),
        }
        for name, parts in batched.items():
            for k, (b, s) in enumerate(zip(parts, single[name])):
                b_i = np.asarray(b)[idx]
                if b_i.shape != np.shape(s):
                    raise AssertionError(
                        f"{manifold!r}: {name} output {k} at batch index {_index_str(idx)} has shape "
                        f"{b_i.shape} in the batched call but {np.shape(s)} unbatched"
                    )
                scale = 1.0 + np.max(np.abs(s)) if np.size(s) else 1.0
                assert_close(
                    b_i,
                    s,
                    1e-12,
                    1e-13 * scale,
                    f"{manifold!r}: {name} output {k} at batch index {_index_str(idx)}, "
                    "batched vs unbatched call",
                )


def check_ambient_tangent(manifold: Manifold, q: Any, xi: np.ndarray, rtol: float = 1e-6) -> None:
    """``ambient_tangent(q, eta) = d/de R_q(e eta)`` (FD), linear, and complex-safe."""
    batch = tuple(manifold.batch_shape(q))
    eta = _direction(manifold.dim, batch, seed=3)
    A = point_arrays(manifold.ambient_tangent(q, eta))
    h = 1e-4
    curves = [point_arrays(manifold.retract(q, t * eta)) for t in (h, -h, 2 * h, -2 * h)]
    for k, a in enumerate(A):
        fd = (8 * (curves[0][k] - curves[1][k]) - (curves[2][k] - curves[3][k])) / (12 * h)
        scale = 1.0 + np.max(np.abs(fd))
        assert_close(
            a,
            fd,
            rtol,
            rtol * scale,
            f"{manifold!r}: ambient_tangent (component {k}) vs d/de R_q(e eta) by FD",
        )
    Ac = point_arrays(manifold.ambient_tangent(q, 1j * eta))
    for k, (a, c) in enumerate(zip(A, Ac)):
        c = np.asarray(c)
        if not np.iscomplexobj(c):
            raise AssertionError(f"{manifold!r}: ambient_tangent drops the imaginary part of a complex eta")
        assert_close(
            c,
            1j * np.asarray(a),
            1e-13,
            1e-13 * (1 + np.max(np.abs(a))),
            f"{manifold!r}: ambient_tangent(q, 1j eta) = 1j ambient_tangent(q, eta) (component {k})",
        )


# -------------------------------------------------------------- group laws
def _group_scale(*gs: np.ndarray) -> float:
    return 1.0 + max(float(np.max(np.abs(g))) for g in gs)


def check_group_identity(group: MatrixLieGroup, q: np.ndarray, xi: np.ndarray) -> None:
    """``e g = g e = g``; ``tau(0) = e``."""
    e = group.identity(group.batch_shape(q))
    s = _group_scale(q)
    assert_close(group.compose(e, q), q, 0, 1e-15 * s, f"{group!r}: e g = g")
    assert_close(group.compose(q, e), q, 0, 1e-15 * s, f"{group!r}: g e = g")
    assert_close(
        group.from_tangent_at_identity(np.zeros(group.dim)),
        np.eye(group.matrix_size),
        0,
        1e-15,
        f"{group!r}: tau(0) = e",
    )


def check_group_associativity(group: MatrixLieGroup, q: np.ndarray, xi: np.ndarray) -> None:
    """``(g h) k = g (h k)`` with ``h = R_q(xi)``, ``k = tau(xi)``."""
    h = group.retract(q, xi)
    k = group.from_tangent_at_identity(xi)
    lhs = group.compose(group.compose(q, h), k)
    rhs = group.compose(q, group.compose(h, k))
    assert_close(lhs, rhs, 0, 1e-13 * _group_scale(q, h, k) ** 3, f"{group!r}: (g h) k = g (h k)")


def check_group_inverse(group: MatrixLieGroup, q: np.ndarray, xi: np.ndarray) -> None:
    """``g g^{-1} = g^{-1} g = e`` and ``inverse`` equals the matrix inverse."""
    for name, g in (("g", q), ("R_q(xi)", group.retract(q, xi))):
        gi = group.inverse(g)
        e = group.identity(group.batch_shape(g))
        s = _group_scale(g) ** 2
        assert_close(group.compose(g, gi), e, 0, 1e-13 * s, f"{group!r}: {name} {name}^-1 = e")
        assert_close(group.compose(gi, g), e, 0, 1e-13 * s, f"{group!r}: {name}^-1 {name} = e")
        assert_close(gi, np.linalg.inv(g), 1e-11, 1e-13 * s, f"{group!r}: inverse({name}) vs numpy inv")


def check_hat_vee(group: MatrixLieGroup, q: np.ndarray, xi: np.ndarray) -> None:
    """``vee(hat(x)) = x``; ``hat`` is linear; ``ad`` matches the matrix commutator."""
    nb = xi.ndim - 1
    assert_close(group.vee(group.hat(xi)), xi, 1e-15, 1e-300, f"{group!r}: vee(hat(x)) = x", nb)
    y = _direction(group.dim, xi.shape[:-1], seed=5)
    assert_close(
        group.hat(2.0 * xi - 3.0 * y),
        2.0 * group.hat(xi) - 3.0 * group.hat(y),
        1e-14,
        1e-14,
        f"{group!r}: hat is linear",
    )
    X, Y = group.hat(xi), group.hat(y)
    ad_y = np.einsum("...ij,...j->...i", group.ad(xi), y)
    assert_close(
        group.hat(ad_y),
        X @ Y - Y @ X,
        1e-12,
        1e-13 * (1 + np.max(np.abs(xi))),
        f"{group!r}: hat(ad_x y) = [hat x, hat y]",
    )


def check_adjoint(group: MatrixLieGroup, q: np.ndarray, xi: np.ndarray) -> None:
    """``hat(Ad_g x) = g hat(x) g^{-1}`` and ``Ad`` is a homomorphism."""
    x = _direction(group.dim, np.broadcast_shapes(group.batch_shape(q), xi.shape[:-1]), seed=11)
    Ad = group.adjoint(q)
    lhs = group.hat(np.einsum("...ij,...j->...i", Ad, x))
    rhs = q @ group.hat(x) @ group.inverse(q)
    assert_close(lhs, rhs, 1e-12, 1e-12 * _group_scale(q) ** 2, f"{group!r}: hat(Ad_g x) = g hat(x) g^-1")
    h = group.retract(q, xi)
    assert_close(
        group.adjoint(q @ h),
        Ad @ group.adjoint(h),
        1e-11,
        1e-11 * _group_scale(q, h) ** 2,
        f"{group!r}: Ad_(g h) = Ad_g Ad_h",
    )


def check_exp_log(group: MatrixLieGroup, q: np.ndarray, xi: np.ndarray) -> None:
    """``exp(log(g)) = g`` for ``g = q`` and ``g = R_q(xi)``; ``log(exp(0)) = 0``."""
    for name, g in (("g", q), ("R_q(xi)", group.retract(q, xi))):
        assert_close(
            group.exp(group.log(g)), g, 0, 1e-12 * _group_scale(g), f"{group!r}: exp(log({name})) = {name}"
        )
    assert_close(
        group.log(group.exp(np.zeros(group.dim))),
        np.zeros(group.dim),
        0,
        1e-300,
        f"{group!r}: log(exp(0)) = 0",
    )


LAWS: dict[str, Law] = {
    "retract_at_zero": check_retract_at_zero,
    "points_on_manifold": check_points_on_manifold,
    "inverse_retract_round_trip": check_inverse_retract_round_trip,
    "retraction_differential_at_zero": check_retraction_differential_at_zero,
    "inverse_retract_jacobians_fd": check_inverse_retract_jacobians_fd,
    "inverse_retract_jacobians_perturbation": check_inverse_retract_jacobians_perturbation,
    "retract_jacobians_fd": check_retract_jacobians_fd,
    "retract_jacobians_perturbation": check_retract_jacobians_perturbation,
    "inverse_retract_with_jacobians": check_inverse_retract_with_jacobians,
    "batch_consistency": check_batch_consistency,
    "ambient_tangent": check_ambient_tangent,
}
"""Laws every manifold satisfies, ``name -> law(manifold, q, xi)``."""

GROUP_LAWS: dict[str, Callable[[MatrixLieGroup, Any, np.ndarray], None]] = {
    "group_identity": check_group_identity,
    "group_associativity": check_group_associativity,
    "group_inverse": check_group_inverse,
    "hat_vee": check_hat_vee,
    "adjoint": check_adjoint,
    "exp_log": check_exp_log,
}
"""Additional laws of a :class:`MatrixLieGroup`."""


def laws_for(manifold: Manifold) -> dict[str, Law]:
    """The laws that apply to ``manifold`` (group laws for a :class:`MatrixLieGroup`)."""
    out = dict(LAWS)
    if isinstance(manifold, MatrixLieGroup):
        out.update(GROUP_LAWS)  # type: ignore[arg-type]  # they apply: manifold is a group
    return out


def draw_sample(
    manifold: Manifold, seed: int, batch_shape: tuple[int, ...], regime: str
) -> tuple[Any, np.ndarray]:
    """A point and a tangent vector ``(q, xi)`` from one seed.

    ``q = manifold.random_point(rng, batch_shape)``,
    ``xi = manifold.sample_tangent(rng, batch_shape, regime)`` with
    ``rng = np.random.default_rng(seed)``.
    """
    rng = np.random.default_rng(seed)
    q = manifold.random_point(rng, tuple(batch_shape))
    xi = manifold.sample_tangent(rng, tuple(batch_shape), regime)
    return q, np.asarray(xi, dtype=float)


def check_manifold_laws(
    manifold: Manifold,
    *,
    seeds: Iterable[int] = range(5),
    batch_shapes: Iterable[tuple[int, ...]] = BATCH_SHAPES,
    regimes: Iterable[str] = REGIMES,
    laws: Iterable[str] | None = None,
) -> int:
    """Run every applicable law over seeds x batch shapes x regimes.

    Parameters
    ----------
    manifold : Manifold
    seeds : iterable of int
        Seeds for :func:`draw_sample`.
    batch_shapes : iterable of tuple of int
    regimes : iterable of str
        Subset of :data:`REGIMES`.
    laws : iterable of str, optional
        Names from :func:`laws_for` (default: all that apply).

    Returns
    -------
    int
        The number of law evaluations that passed.

    Raises
    ------
    AssertionError
        On the first violated law, prefixed with the law, seed, batch shape
        and regime so that the failure reproduces.
    ValueError
        If a requested law does not apply to ``manifold``.
    """
    available = laws_for(manifold)
    names = list(available) if laws is None else list(laws)
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ValueError(
            f"check_manifold_laws: laws {unknown} do not apply to {manifold!r}; "
            f"available: {', '.join(available)}"
        )
    count = 0
    for regime in regimes:
        for batch_shape in batch_shapes:
            for seed in seeds:
                q, xi = draw_sample(manifold, seed, batch_shape, regime)
                for name in names:
                    try:
                        available[name](manifold, q, xi)
                    except AssertionError as exc:
                        raise AssertionError(
                            f"law {name!r} failed for {manifold!r} (seed={seed}, "
                            f"batch_shape={tuple(batch_shape)}, regime={regime!r}):\n{exc}"
                        ) from exc
                    count += 1
    return count


# -------------------------------------------------- hypothesis strategies
def seeds() -> Any:
    """hypothesis strategy of seeds for :func:`numpy.random.default_rng`."""
    from hypothesis import strategies as st

    return st.integers(min_value=0, max_value=2**32 - 1)


def points(manifold: Manifold, batch_shape: tuple[int, ...] = ()) -> Any:
    """hypothesis strategy of points ``(*batch_shape, *point_shape)`` via ``random_point``."""
    return seeds().map(lambda s: manifold.random_point(np.random.default_rng(s), tuple(batch_shape)))


def tangents(manifold: Manifold, batch_shape: tuple[int, ...] = (), regime: str = "generic") -> Any:
    """hypothesis strategy of tangent vectors ``(*batch_shape, dim)`` via ``sample_tangent``."""
    return seeds().map(
        lambda s: np.asarray(manifold.sample_tangent(np.random.default_rng(s), tuple(batch_shape), regime))
    )


def samples(manifold: Manifold, batch_shape: tuple[int, ...] = (), regime: str = "generic") -> Any:
    """hypothesis strategy of ``(q, xi)`` pairs drawn by :func:`draw_sample`."""
    return seeds().map(lambda s: draw_sample(manifold, s, tuple(batch_shape), regime))


_register_builtins()
