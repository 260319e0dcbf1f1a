"""Shared law checks for the JAX manifolds, a registry of manifolds, regimes, tolerances.

Users test their own manifolds with the same laws the library's manifolds
pass, from the command line (every registered retraction of a class, or a
factory; ``--help`` for options)::

    python -m manifold_dirac.testing my_package.my_module:MyGroup
    python -m manifold_dirac.testing path/to/heisenberg.py:Heisenberg

or in Python::

    from manifold_dirac.testing import check_manifold_laws, register_manifold

    register_manifold("my-group", MyGroup)     # picked up by tests/next/manifolds
    check_manifold_laws(MyGroup())             # or run every law directly

or draws samples with hypothesis (:func:`points`, :func:`tangents`,
:func:`samples`; hypothesis is imported only by these)::

    @given(samples(MyGroup(), (2,), "near_singular"))
    def test_my_law(sample):
        q, xi = sample

Every law is a function ``law(manifold, q, xi)`` of a point ``q``
``(*batch, *point_shape)`` and a tangent vector ``xi`` ``(*batch, dim)`` in
frame coordinates at ``q``, drawn by :func:`draw_sample` in one of
:data:`REGIMES`. A law returns ``None`` or raises :class:`AssertionError`
naming the law, the batch index and the size of the violation.

How the laws evaluate: JAX compiles per program and per shape, and
compiling is what checking a manifold costs. So the numerics run in a few
``jax.jit`` programs per manifold (values, ambient tangents, batch, group,
autodiff, derivatives), which every sample enters flattened and padded to a
batch of 8 -- all batch shapes and regimes reuse one compilation, cached per
class and :meth:`Manifold._key` (so a manifold with parameters must put them
in its ``_key``, as the base class asks). Shapes and dtypes at the caller's own batch
shape are checked with ``jax.eval_shape`` (tracing, no compiling), the
batched values against the unbatched calls with ``jax.lax.map``. A manifold
whose methods cannot be traced (numpy inside: ``Sphere2(values="geomstats")``)
is evaluated eagerly instead.

Every Jacobian is checked three independent ways, each against its
definition in :class:`manifold_dirac.Manifold` -- the derivative
of a composition of ``retract`` and ``inverse_retract`` along
``q -> R_q(e eta)``:

* **autodiff**: ``jax.jacfwd`` of the composition, compared at relative
  tolerance :data:`RTOL_AUTODIFF` (a fused closed form equals the generic
  composition to round-off);
* **central finite differences**: a fourth-order five-point stencil whose
  step is shrunk until it has converged (so that no step straddles a cut
  locus such as a rotation by pi), compared at relative tolerance ``1e-6``;
* **perturbation**: ``f(q (+) s w) = f(q) + s J w + O(s^2)`` requires the
  remainder over ``s`` to keep falling as ``s`` shrinks (a wrong Jacobian
  leaves it constant) down to a round-off floor **measured** on ``f`` itself
  (a fourth difference of ``f`` at steps ``t = 1e-10 ... 1e-8``, which
  cancels every polynomial term that matters and in which no Jacobian
  enters): near a singularity ``f`` is ill-conditioned, its measured floor
  is high, and a correct Jacobian passes while a wrong one still fails
  above the floor.
"""

from __future__ import annotations

import inspect
import functools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

import jax
import jax.numpy as jnp
import numpy as np

from ._registry import Registry
from ._manifolds.base import Manifold
from ._manifolds.lie_group import MatrixLieGroup
from ._types import ArrayLike, ArrayTree, Point, PointBatch, VectorBatch

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

_Tree = TypeVar("_Tree", bound=ArrayTree)
_Values: TypeAlias = dict[str, Any]
"""A table of computed values (or of their shapes) by name: arrays, and on a product tuples of arrays
(a point), read by key. Any is the one deliberate use in this module: which entry is a point is known
by its key only."""
from ._manifolds.product import ProductManifold

__all__ = [
    "BATCH_SHAPES",
    "EDGE_SCALES",
    "GROUP_LAWS",
    "LAWS",
    "REGIMES",
    "RTOL_AUTODIFF",
    "assert_close",
    "check_adjoint",
    "check_ambient_tangent",
    "check_batch_consistency",
    "check_derivatives_finite",
    "check_differential_at_zero",
    "check_domain_edges",
    "check_exp_log",
    "check_float64",
    "check_fused_equals_composition",
    "check_group_inverse",
    "check_hat_vee",
    "check_in_domain",
    "check_inverse_jacobians_autodiff",
    "check_inverse_jacobians_fd",
    "check_inverse_jacobians_perturbation",
    "check_inverse_retract_round_trip",
    "check_jacobians_autodiff",
    "check_jacobians_fd",
    "check_jacobians_perturbation",
    "check_manifold_laws",
    "check_points_on_manifold",
    "main",
    "check_retract_at_zero",
    "check_symmetry",
    "draw_sample",
    "law_values",
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

BATCH_SHAPES: tuple[tuple[int, ...], ...] = ((), (1,), (3, 1, 2))
"""Batch shapes of the shared tests: unbatched, a batch of one, three axes with a unit one."""

RTOL_AUTODIFF = 1e-10
"""Relative tolerance (of ``max(|J|_F, 1)``) of a Jacobian against ``jax.jacfwd`` of its definition."""

Law = Callable[[Manifold, PointBatch, ArrayLike], None]
_EPS = float(np.finfo(float).eps)

# ---------------------------------------------------------------- registry
def _check_factory(name: str, factory: object) -> None:
    if not callable(factory):
        raise TypeError(f"register_manifold({name!r}): factory must be callable, got {factory!r}")


_Factory: TypeAlias = Callable[[], Manifold]
_REGISTRY: Registry[_Factory] = Registry(
    "manifold", hint="add one with register_manifold", check=_check_factory)


def register_manifold(name: str, factory: Callable[[], Manifold] | None = None, *, overwrite: bool = False,
                      replace: bool = False) -> _Factory | Callable[[_Factory], _Factory]:
    """Register a manifold so that the shared law tests run over it.

    A call, ``register_manifold("my-group", MyGroup)``, or a decorator on a
    class with a default constructor or a factory function,
    ``@register_manifold("my-group")``; what is decorated is returned.

    Parameters
    ----------
    name : str
        Identifier used in test ids (``"so3-exp"``).
    factory : callable, optional
        ``factory() -> Manifold`` (a class with a default constructor works).
        Without it, a decorator.
    overwrite : bool
        Allow replacing an existing registration of ``name``.
    replace : bool
        The earlier name of ``overwrite`` (kept working).

    Raises
    ------
    ValueError
        If ``name`` is empty or taken (and ``overwrite`` is false).
    TypeError
        If ``factory`` is not callable, or ``name`` is not a string.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> factory = md.testing.register_manifold("so3-cayley-doc", lambda: md.SO3("cayley"))
    >>> md.testing.registered_manifolds()["so3-cayley-doc"]()
    SO3(retraction='cayley')
    >>> md.testing.unregister_manifold("so3-cayley-doc")
    """
    if factory is None:
        return lambda f: register_manifold(name, f, overwrite=overwrite, replace=replace)
    return _REGISTRY.register(name, factory, overwrite=overwrite or replace)


def unregister_manifold(name: str) -> None:
    """Remove a registration (a ``ValueError`` lists the registered names if absent).

    Parameters
    ----------
    name : str
        The name given to :func:`register_manifold`.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> _ = md.testing.register_manifold("euclidean2-doc", lambda: md.Euclidean(2))
    >>> md.testing.unregister_manifold("euclidean2-doc")
    >>> "euclidean2-doc" in md.testing.registered_manifolds()
    False
    """
    _REGISTRY.unregister(name)


def registered_manifolds() -> dict[str, Callable[[], Manifold]]:
    """A copy of the registry, ``{name: factory}``, in registration order.

    Returns
    -------
    dict
        ``{name: factory}``, each ``factory() -> Manifold``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> list(md.testing.registered_manifolds())[:4]
    ['euclidean1', 'euclidean3', 'so3-exp', 'so3-cayley']
    """
    return dict(_REGISTRY)


def _register_builtins() -> None:
    from ._manifolds import SE2, SE3, SO3, Euclidean, Sphere2

    register_manifold("euclidean1", lambda: Euclidean(1))
    register_manifold("euclidean3", lambda: Euclidean(3))
    for group in (SO3, SE2, SE3):  # every retraction registered on a built-in group: a new one needs no line here
        for retraction in group.retraction_names():
            register_manifold(f"{group.__name__.lower()}-{retraction}", functools.partial(group, retraction))
    register_manifold("so3xr2", lambda: ProductManifold(SO3(), Euclidean(2)))
    register_manifold(
        "nested-product", lambda: ProductManifold(SE2("so2xr2"), ProductManifold(SO3("cayley"), Euclidean(1)))
    )
    register_manifold("sphere2", Sphere2)  # closed forms: geomstats is not imported


# ------------------------------------------------------------- tolerances
def _index_str(idx: Sequence[int] | tuple) -> str:
    return "[" + ", ".join(str(int(i)) for i in idx) + "]"


def assert_close(
    a: ArrayLike,
    b: ArrayLike,
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
        Number of leading batch axes: the message then names the batch index
        of the worst violation instead of the flat element index.

    Raises
    ------
    AssertionError
        Naming ``what``, the index of the worst violation, the two values
        there, the error and the tolerance.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-14]), what="energy")
    >>> md.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.1]), what="energy")
    Traceback (most recent call last):
        ...
    AssertionError: energy: mismatch at index [1]: got np.float64(2.0), expected np.float64(2.1); ...
    """
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype == bool or b.dtype == bool:
        a, b = a.astype(float), b.astype(float)
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
    idx = np.unravel_index(int(np.argmax(np.where(finite, err - tol, np.inf))), a.shape)
    where = (
        f"batch index {_index_str(idx[:batch_ndim])}, entry {_index_str(idx[batch_ndim:])}"
        if batch_ndim is not None
        else f"index {_index_str(idx)}"
    )
    raise AssertionError(
        f"{what}: mismatch at {where}: got {a[idx]!r}, expected {b[idx]!r}; |error| = {err[idx]:.3e} > "
        f"atol + rtol*|expected| = {tol[idx]:.3e} (rtol={rtol:.1e}, atol={atol:.1e}; "
        f"{int(np.sum(bad))} of {a.size} entries fail)"
    )


def point_arrays(q: PointBatch) -> list[np.ndarray]:
    """The arrays of a point (a product's tuple flattened depth first), as numpy.

    Parameters
    ----------
    q : point
        An array, or a (nested) tuple of arrays on a product.

    Returns
    -------
    list of numpy.ndarray

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> [a.shape for a in md.testing.point_arrays((np.eye(3), np.zeros(3)))]
    [(3, 3), (3,)]
    """
    return [np.asarray(x) for x in jax.tree.leaves(q)]


def _scale(x: PointBatch) -> float:
    return 1.0 + max((float(np.max(np.abs(a))) for a in point_arrays(x) if a.size), default=0.0)


def _assert_points_close(a: PointBatch, b: PointBatch, what: str, atol: float) -> None:
    pa, pb = point_arrays(a), point_arrays(b)
    if len(pa) != len(pb):
        raise AssertionError(f"{what}: points have {len(pa)} vs {len(pb)} component arrays")
    for i, (x, y) in enumerate(zip(pa, pb)):
        assert_close(x, y, 0.0, atol * _scale(y), f"{what} (component {i})" if len(pa) > 1 else what)


def _frob(a: np.ndarray) -> np.ndarray:
    return np.sqrt(np.sum(np.abs(a) ** 2, axis=(-2, -1)))


def _assert_jacobian_close(J: ArrayLike, ref: ArrayLike, rtol: float, what: str, reference: str) -> None:
    """Batchwise ``|J - ref|_F <= rtol * max(|ref|_F, 1)`` (``J`` broadcast to ``ref``'s batch)."""
    J, ref = np.asarray(J), np.asarray(ref)
    try:
        J = np.broadcast_to(J, ref.shape)
    except ValueError:
        raise AssertionError(f"{what}: Jacobian has shape {J.shape}, expected {ref.shape}") from None
    err = _frob(J - ref)
    tol = rtol * np.maximum(_frob(ref), 1.0)
    bad = ~np.isfinite(err) | (err > tol)
    if np.any(bad):
        idx = np.unravel_index(int(np.argmax(np.where(np.isfinite(err), err / tol, np.inf))), err.shape)
        raise AssertionError(
            f"{what} disagrees with {reference} at batch index {_index_str(idx)}: |J - J_ref|_F = "
            f"{err[idx]:.3e} > {rtol:.1e} * max(|J_ref|_F, 1) = {tol[idx]:.3e}"
            f"\nJ =\n{J[idx]}\nJ_ref =\n{ref[idx]}"
        )


# ------------------------------------------------------------- evaluation
_PAD = 8


class _Flat:
    """A sample broadcast to its batch, flattened to ``n`` elements and padded (repeating element 0) to ``N``.

    ``N`` is a multiple of 8, so that every batch shape of the shared tests
    (at most 8 elements) reaches the manifold's methods as the same
    ``(8, ...)`` arrays: JAX compiles each law's numerics once per manifold,
    not once per batch shape. The methods act elementwise on the batch
    (:func:`check_batch_consistency` checks that, and the shapes, on the
    caller's own batch shape), so this changes no value.
    """

    def __init__(self, manifold: Manifold, q: PointBatch, xi: ArrayLike):
        self.batch = _batch(manifold, q, xi)
        self.n = int(np.prod(self.batch, dtype=int))
        self.index = np.concatenate([np.arange(self.n), np.zeros(_PAD * -(-self.n // _PAD) - self.n, int)])
        qb = jax.tree.map(np.asarray, manifold.broadcast_point(q, self.batch))
        xb = np.broadcast_to(np.asarray(xi, dtype=float), (*self.batch, manifold.dim))
        self.key = tuple((a.shape, a.tobytes()) for a in [*jax.tree.leaves(qb), xb])
        self.q, self.xi = self.flat(qb), self.flat(xb)

    def flat(self, x: _Tree) -> _Tree:
        """``(*batch, ...)`` leaves -> ``(N, ...)``."""
        nb = len(self.batch)
        return jax.tree.map(
            lambda a: jnp.asarray(np.asarray(a).reshape(self.n, *np.shape(a)[nb:])[self.index]), x
        )

    def unflat(self, x: _Tree, lead: int = 0) -> _Tree:
        """``(*lead, N, ...)`` leaves -> ``(*lead, *batch, ...)`` numpy arrays."""

        def one(a):
            a = np.asarray(a)
            return a[(slice(None),) * lead + (slice(0, self.n),)].reshape(
                (*a.shape[:lead], *self.batch, *a.shape[lead + 1 :])
            )

        return jax.tree.map(one, x)


_DEFINITIONS = ("J0 = dxi/dq0", "J1 = dxi/dq1", "J_q of R_q(xi)", "J_xi of R_q(xi)")


def _definitions(M: Manifold, q: PointBatch, xi: ArrayLike, q1_inv: PointBatch, q1_fwd: PointBatch
                 ) -> Callable[[jax.Array], _Values]:
    """The definitions of the four Jacobians (base.py) as one function of a perturbation ``d``.

    ``J0``, ``J1``: ``xi = R_{q0}^{-1}(q1)`` as ``q0`` resp. ``q1`` moves along
    its retraction; ``J_q``, ``J_xi``: ``R_q(xi)`` read in the frame at
    ``q1 = R_q(xi)`` as ``q`` resp. ``xi`` moves. All four are
    ``H = R_{R_A(a d)}^{-1}(R_{R_B(b d)}(W + c d))`` with::

        J0: A = q,  B = q1, W = 0,  (a, b, c) = (1, 0, 0)
        J1: A = q,  B = q1, W = 0,  (0, 1, 0)
        J_q: A = q1, B = q, W = xi, (0, 1, 0)
        J_xi: A = q1, B = q, W = xi, (0, 0, 1)

    (``R_p(0) = p`` exactly), evaluated with ``jax.vmap`` over the four
    cases: the manifold's code is traced once, not four times.
    """
    stack = lambda *ps: jax.tree.map(lambda *a: jnp.stack(jnp.broadcast_arrays(*a)), *ps)
    A, B = stack(q, q, q1_fwd, q1_fwd), stack(q1_inv, q1_inv, q, q)
    W = stack(jnp.zeros_like(xi), jnp.zeros_like(xi), xi, xi)
    C = jnp.asarray([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])

    def H(A, B, W, c, d):
        return M.inverse_retract(M.retract(A, c[0] * d), M.retract(M.retract(B, c[1] * d), W + c[2] * d))

    def f(d):
        out = jax.vmap(H, in_axes=(0, 0, 0, 0, None))(A, B, W, C, d)
        return dict(zip(_DEFINITIONS, out))

    return f


def _group_data(M: Manifold, xi: jax.Array) -> _Values | list | None:
    """The fused ``tau_with_*`` and the separate primitives of every group (factor), for the fused law."""
    if isinstance(M, ProductManifold):
        return [_group_data(f, x) for f, x in zip(M.factors, M.split(xi))]
    if not isinstance(M, MatrixLieGroup):
        return None
    R = M.retraction
    tau = R.tau(M, xi)
    return {
        "fused_inv": R.tau_with_inverse_jacobians(M, xi),
        "fused_fwd": R.tau_with_jacobians(M, xi),
        "tau": tau,
        "Jl_inv": R.left_jacobian_inv(M, xi),
        "Jr_inv": R.right_jacobian_inv(M, xi),
        "Ad_inv_tau": M.adjoint(M.inverse(tau)),
        "Jr": R.right_jacobian(M, xi),
    }


_BROADCASTABLE = ("J0", "J1", "J_q", "J_xi", "in_domain")
"""Outputs that may keep fewer batch axes than the arguments (they depend on ``xi`` only)."""


def _method_outputs(
    M: Manifold, q: PointBatch, xi: jax.Array, eta: jax.Array, batch: tuple[int, ...] | None = None
) -> _Values:
    """Every method's output at ``(q, xi)`` (``ambient_tangent`` at ``eta``); :data:`_BROADCASTABLE` ones
    broadcast to ``batch`` unless it is None."""
    p0, J0, J1 = M.retract_with_inverse_jacobians(q, xi)
    p1, Jq, Jxi = M.retract_with_jacobians(q, xi)
    out = {
        "retract": M.retract(q, xi),
        "inverse_retract": M.inverse_retract(q, M.retract(q, xi)),
        "retract_with_inverse_jacobians (point)": p0,
        "J0": J0,
        "J1": J1,
        "retract_with_jacobians (point)": p1,
        "J_q": Jq,
        "J_xi": Jxi,
        "ambient_tangent": M.ambient_tangent(q, eta),
        "in_domain": M.in_domain(xi),
    }
    if batch is not None:
        for k in _BROADCASTABLE:
            out[k] = jnp.broadcast_to(out[k], (*batch, *((M.dim, M.dim) if k != "in_domain" else ())))
    return out


_COMPILER_OPTIONS: dict[str, bool | int] | None = {
    "xla_backend_optimization_level": 0,
    "xla_cpu_use_fusion_emitters": False,
    "xla_llvm_disable_expensive_passes": True,
}
"""XLA options for the law programs: they run a few times each, so their compile time is what matters
(these options compile faster on CPU; values agree with the default to ~1e-15). None if unsupported."""


def _compile(fn: Callable, args: tuple) -> jax.stages.Compiled:
    global _COMPILER_OPTIONS
    lowered = jax.jit(fn).lower(*args)
    if _COMPILER_OPTIONS is not None:
        try:
            return lowered.compile(compiler_options=_COMPILER_OPTIONS)
        except (RuntimeError, ValueError, TypeError):  # an XLA without these options: use the defaults
            _COMPILER_OPTIONS = None
    return lowered.compile()


class _Evaluator:
    """The numerics of the laws for one manifold, in ``jax.jit`` programs (see :func:`_run`).

    ``values``, ``ambient``, ``batch``, ``group``, ``autodiff`` (``jax.jacfwd``
    of the Jacobians' definitions) and ``derivatives`` (``jax.grad`` and
    ``jax.jacfwd`` of the methods): each compiles once per manifold, when a
    law first needs it, since :class:`_Flat` gives every sample the same
    shapes. Falls back to eager evaluation for a
    manifold whose methods cannot be traced (``Sphere2(values="geomstats")``
    calls numpy).
    """

    _TRACE_ERRORS = (
        jax.errors.TracerArrayConversionError,
        jax.errors.ConcretizationTypeError,
        jax.errors.TracerBoolConversionError,
        jax.errors.TracerIntegerConversionError,
    )

    def __init__(self, manifold: Manifold):
        self.M = manifold
        self.jit = True
        self._compiled: dict[str, Callable] = {}
        self._cache: dict[tuple, _Values] = {}

    def __call__(self, what: str, s: _Flat, *extra: ArrayLike) -> _Values:
        key = (what, s.key)
        if key not in self._cache:
            args = (s.q, s.xi, *extra)
            fn = getattr(self, "_" + what)
            out = None
            if self.jit:
                shapes = (what, *(np.shape(a) for a in jax.tree.leaves(args)))
                try:
                    if shapes not in self._compiled:
                        self._compiled[shapes] = _compile(fn, args)
                    out = jax.device_get(self._compiled[shapes](*args))
                except self._TRACE_ERRORS:
                    self.jit = False
            self._cache[key] = out if out is not None else jax.device_get(fn(*args))
            if len(self._cache) > 64:
                self._cache.pop(next(iter(self._cache)))
        return self._cache[key]

    def _values(self, q, xi, d):
        M = self.M
        N = xi.shape[0]
        p0, J0, J1 = M.retract_with_inverse_jacobians(q, xi)
        p1, Jq, Jxi = M.retract_with_jacobians(q, xi)
        out = {
            "q1": M.retract(q, xi),
            "p0": p0,
            "p1": p1,
            "back": M.inverse_retract(q, p0),
            "reverse": M.inverse_retract(p0, q),
            "ok": M.in_domain(xi),
            "ok0": M.in_domain(jnp.zeros_like(xi)),
            "at_zero": M.retract(q, jnp.zeros_like(xi)),
            "groups": _group_data(M, xi),
            "stack": _definitions(M, q, xi, p0, p1)(d),
        }
        out.update(
            {
                k: jnp.broadcast_to(J, (N, M.dim, M.dim))
                for k, J in (("J0", J0), ("J1", J1), ("J_q", Jq), ("J_xi", Jxi))
            }
        )
        return out

    def _ambient(self, q, xi, eta, eta2, h):
        M = self.M
        return {
            "A": M.ambient_tangent(q, eta),
            "A2": M.ambient_tangent(q, eta2),
            "L": M.ambient_tangent(q, 2.0 * eta - 3.0 * eta2),
            "T": jax.jvp(lambda e: M.retract(q, e * eta), (jnp.asarray(0.0),), (jnp.asarray(1.0),))[1],
            "curves": M.retract(q, h[:, None, None] * eta),
        }

    def _batch(self, q, xi, eta):
        """The batched call, and the unbatched calls element by element (``lax.map``)."""
        M = self.M
        return {
            "batched": _method_outputs(M, q, xi, eta, (xi.shape[0],)),
            "elements": jax.lax.map(lambda a: _method_outputs(M, *a, ()), (q, xi, eta)),
        }

    def _group(self, q, xi, x, y):
        M = self.M
        q1 = M.retract(q, xi)
        return {
            "q1": q1,
            "vee_hat": M.vee(M.hat(xi)),
            "hat_xi": M.hat(xi),
            "hat_y": M.hat(y),
            "hat_lin": M.hat(2.0 * xi - 3.0 * y),
            "hat_ad": M.hat(jnp.sum(M.ad(xi) * y[..., None, :], -1)),
            "Ad": M.adjoint(q),
            "hat_x": M.hat(x),
            "hat_Ad_x": M.hat(jnp.sum(M.adjoint(q) * x[..., None, :], -1)),
            "Ad_qh": M.adjoint(q @ q1),
            "Ad_h": M.adjoint(q1),
            "exp_log_q": M.exp(M.log(q)),
            "exp_log_q1": M.exp(M.log(q1)),
            "log_exp_0": M.log(M.exp(jnp.zeros_like(xi))),
            "inv_q": M.inverse(q),
            "inv_q1": M.inverse(q1),
        }

    def _autodiff(self, q, xi):
        """``jax.jacfwd`` of each definition: one ``d`` ``(dim,)`` broadcast to every element."""
        M = self.M
        f = _definitions(
            M, q, xi, M.retract_with_inverse_jacobians(q, xi)[0], M.retract_with_jacobians(q, xi)[0]
        )
        return jax.jacfwd(lambda d: f(jnp.broadcast_to(d, xi.shape)))(jnp.zeros(M.dim))

    def _derivatives(self, q, xi):
        """Whether ``jax.grad`` (of the sum of the outputs) and ``jax.jacfwd`` (of the fused paths) w.r.t.
        ``xi`` are finite, at 0 and at the sample: ``name -> (2,)`` booleans."""
        M = self.M
        N = xi.shape[0]
        q2 = jax.tree.map(lambda a: jnp.concatenate([a, a]), q)
        x2 = jnp.concatenate([jnp.zeros_like(xi), xi])

        def full(out):  # Jacobians that do not depend on q may come back unbatched
            return out[0], *(jnp.broadcast_to(J, (2 * N, M.dim, M.dim)) for J in out[1:])

        fused = {
            "retract_with_inverse_jacobians": lambda x: full(M.retract_with_inverse_jacobians(q2, x)),
            "retract_with_jacobians": lambda x: full(M.retract_with_jacobians(q2, x)),
        }
        fns = {
            **fused,
            "inverse_retract(q, retract(q, .))": lambda x: M.inverse_retract(q2, M.retract(q2, x)),
            "inverse_retract(q, q + ambient_tangent(q, .)) at q": lambda x: M.inverse_retract(
                q2, M.first_order_curve(q2, x - x2)
            ),
        }
        if isinstance(M, MatrixLieGroup):  # the separate primitives (with exp: exp, log and the J_r of exp)
            R = M.retraction
            fns.update(
                {
                    "right_jacobian": lambda x: R.right_jacobian(M, x),
                    "right_jacobian_inv": lambda x: R.right_jacobian_inv(M, x),
                    "left_jacobian_inv": lambda x: R.left_jacobian_inv(M, x),
                }
            )

        def finite(tree, axis):  # -> (2,): at 0, at the sample
            return jnp.stack(
                [
                    jnp.all(jnp.isfinite(jnp.moveaxis(a, axis, 0).reshape(2, N, -1)), axis=(1, 2))
                    for a in jax.tree.leaves(tree)
                ]
            ).all(0)

        out = {}
        for what, f in fns.items():
            out[f"{what}: jax.grad"] = finite(
                jax.grad(lambda x, f=f: sum(jnp.sum(a) for a in jax.tree.leaves(f(x))))(x2), 0
            )
        jac = jax.jacfwd(
            lambda d: fused["retract_with_inverse_jacobians"](jnp.broadcast_to(d, x2.shape) + x2)
        )(jnp.zeros(M.dim))
        out["retract_with_inverse_jacobians: jax.jacfwd"] = finite(jac, 0)
        return out


_EVALUATORS: dict[tuple, _Evaluator] = {}


def _evaluator(manifold: Manifold) -> _Evaluator:
    """The evaluator of ``manifold``, shared by equal manifolds of the same class (one compile per program).

    Keyed by the class and :meth:`Manifold._key`, so that a product's factor
    reuses the programs of the same manifold standing alone, while a
    subclass (a deliberately broken one in the sensitivity tests) gets its own.
    """
    key = (type(manifold), manifold._key())
    if key not in _EVALUATORS:
        _EVALUATORS[key] = _Evaluator(manifold)
    return _EVALUATORS[key]


def _run(manifold: Manifold, what: str, q: PointBatch, xi: ArrayLike) -> tuple[_Flat, _Values]:
    """Program ``what`` of the manifold's evaluator at the sample ``(q, xi)``, unflattened to its batch shape.

    ``values``: points, inverses and Jacobians of both fused paths,
    ``in_domain``, the group primitives, and the four Jacobian definitions at
    the stack of finite-difference and perturbation steps (``"stack"``, and
    the perturbation direction ``"w"``); ``ambient``: ambient tangents;
    ``batch``: batched and unbatched outputs; ``group``: the group-law
    values; ``autodiff``, ``derivatives``: see :class:`_Evaluator`.
    """
    s = _Flat(manifold, q, xi)
    dim = manifold.dim
    extra: tuple = ()
    w = _direction(dim, s.batch)
    if what == "values":
        d = np.concatenate(
            [_fd_deltas(dim, (len(s.index),)), _PERTURBATION_T[:, None, None] * np.asarray(s.flat(w))[None]]
        )
        extra = (jnp.asarray(d),)
    elif what == "ambient":
        extra = (
            s.flat(_direction(dim, s.batch, 3)),
            s.flat(_direction(dim, s.batch, 4)),
            jnp.asarray(_AMBIENT_H * np.array([1.0, -1.0, 2.0, -2.0])),
        )
    elif what == "batch":
        extra = (s.flat(_direction(dim, s.batch, 3)),)
    elif what == "group":
        extra = (s.flat(_direction(dim, s.batch, 11)), s.flat(_direction(dim, s.batch, 5)))
    out = dict(_evaluator(manifold)(what, s, *extra))
    stacked = {k: out.pop(k) for k in ("stack", "curves") if k in out}
    v = s.unflat(out)
    v.update({k: s.unflat(a, lead=1) for k, a in stacked.items()})
    if what == "values":
        v["w"] = w
    return s, v


def _primal(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> tuple[_Flat, _Values]:
    return _run(manifold, "values", q, xi)


def law_values(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> _Values:
    """The values the laws check at ``(q, xi)``, from the compiled law programs (one compile per manifold).

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Returns
    -------
    dict
        ``"retract"`` (the point ``R_q(xi)`` of ``retract``),
        ``"inverse_retract"`` (``R_q^{-1}`` of it), ``"in_domain"``, and the
        fused paths' ``"J0"``, ``"J1"``, ``"J_q"``, ``"J_xi"``, each as numpy
        arrays of the sample's batch shape.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3()
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> values = md.testing.law_values(M, q, xi)
    >>> values["retract"].shape, values["in_domain"]
    ((2, 3, 3), array([ True,  True]))
    """
    v = _primal(manifold, q, xi)[1]
    keys = {
        "retract": "q1",
        "inverse_retract": "back",
        "in_domain": "ok",
        "J0": "J0",
        "J1": "J1",
        "J_q": "J_q",
        "J_xi": "J_xi",
    }
    return {k: v[src] for k, src in keys.items()}


# ------------------------------------------------------ derivative helpers
_FD_H0, _FD_LEVELS = 1e-5, 8  # steps 1e-5 / 4**k, k < 8: down to 6e-10
_FD_HS = _FD_H0 / 4.0 ** np.arange(_FD_LEVELS)


def _fd_deltas(dim: int, batch: tuple[int, ...]) -> np.ndarray:
    """Stencil perturbations ``(8 * 4 * dim, *batch, dim)``: levels x (+1, -1, +2, -2) x directions."""
    t = _FD_HS[:, None, None] * np.array([1.0, -1.0, 2.0, -2.0])[None, :, None] * np.ones(dim)
    delta = (t[..., None] * np.eye(dim)).reshape(-1, *(1,) * len(batch), dim)
    return np.broadcast_to(delta, (delta.shape[0], *batch, dim))


def _fd_estimate(out: np.ndarray, dim: int, batch: tuple[int, ...]) -> np.ndarray:
    """Central-difference Jacobian ``(*batch, m, dim)`` from ``f`` at :func:`_fd_deltas`.

    Five-point stencil (error ``O(h^4)``) at ``h = 1e-5 / 4^k``; per batch
    element the first estimate that agrees with the next finer one is kept,
    so that no stencil straddles a discontinuity such as the cut locus of a
    logarithm.
    """
    nb = len(batch)
    out = out.reshape(_FD_LEVELS, 4, dim, *out.shape[1:])
    fp1, fm1, fp2, fm2 = out[:, 0], out[:, 1], out[:, 2], out[:, 3]  # (L, dim_j, *batch, m)
    est = np.moveaxis(
        (8.0 * (fp1 - fm1) - (fp2 - fm2)) / (12.0 * _FD_HS.reshape(-1, *(1,) * (nb + 2))), 1, -1
    )
    fscale = np.max(np.abs(out), axis=(1, 2, -1))  # (L, *batch)
    diff = _frob(est[1:] - est[:-1])
    tol = 3e-7 * np.maximum(_frob(est[1:]), 1.0) + 8 * _EPS * (1 + fscale[1:]) / _FD_HS[1:].reshape(
        -1, *(1,) * nb
    )
    ok = diff <= tol
    first = np.where(np.any(ok, axis=0), np.argmax(ok, axis=0), _FD_LEVELS - 1)
    return np.take_along_axis(est, first[None, ..., None, None], axis=0)[0]


_SCALES = 10.0 ** -np.arange(2, 13)  # s = 1e-2 ... 1e-12
_NOISE_STEPS = np.array([1e-10, 1e-9, 1e-8])
_PERTURBATION_T = np.concatenate([_SCALES, *(k * _NOISE_STEPS for k in (2.0, 1.0, -1.0, -2.0)), [0.0]])


def _perturbation_assert(vals: np.ndarray, J: ArrayLike, w: np.ndarray, what: str) -> None:
    """``|f(s w) - f(0) - s J w| / s`` must fall as ``s`` shrinks, down to the measured round-off floor.

    ``vals`` is ``f(t w)`` at ``t`` in :data:`_PERTURBATION_T`. The floor is
    measured on ``f`` alone, from the fourth difference
    ``noise = max_t |f(2t w) - 4 f(t w) + 6 f(0) - 4 f(-t w) + f(-2t w)| / 8``
    at ``t = 1e-10, 1e-9, 1e-8`` (polynomial terms up to the cubic cancel, the
    quartic is far below round-off; no Jacobian enters), and is
    ``(10 noise + 4 eps (1 + |f(0)|)) / s``: it grows with the conditioning of
    ``f``. Over ``s = 1e-2 ... 1e-12``, take the last
    two consecutive steps above the floor: ``remainder/s`` must drop there by
    a factor of at least 3 -- or, if it jumped up by 5 or more (a large step
    crossed the cut locus of a logarithm), every smaller step must be at the
    floor.
    """
    Jw = np.einsum("...ij,...j->...i", np.asarray(J), w)
    f0, ns, nn = vals[-1], len(_SCALES), len(_NOISE_STEPS)
    p2, p1, m1, m2 = (vals[ns + k * nn : ns + (k + 1) * nn] for k in range(4))
    noise = np.max(np.linalg.norm(p2 - 4 * p1 + 6 * f0 - 4 * m1 + m2, axis=-1), axis=0) / 8
    floor = 10 * noise + 4 * _EPS * (1 + np.max(np.abs(f0), axis=-1))  # (*batch,)
    sc = _SCALES.reshape(-1, *(1,) * (vals.ndim - 1))
    R = np.moveaxis(np.linalg.norm(vals[:ns] - f0 - sc * Jw, axis=-1) / sc[..., 0], 0, -1)  # (*batch, S)
    F = floor[..., None] / _SCALES
    for idx in np.ndindex(*R.shape[:-1]):
        r, fl = R[idx], F[idx]
        if not np.all(np.isfinite(r)):
            raise AssertionError(f"{what}: non-finite remainder at batch index {_index_str(idx)}: {r}")
        above = r > fl
        pairs = np.nonzero(above[:-1] & above[1:])[0]
        if pairs.size == 0:
            continue  # at the floor throughout: the first-order model is exact
        k = pairs[-1]
        rho = r[k + 1] / r[k]
        if rho <= 1.0 / 3.0 or (rho >= 5.0 and not np.any(above[k + 2 :])):
            continue
        raise AssertionError(
            f"{what}: first-order model f(q (+) s w) = f(q) + s J w fails at batch index {_index_str(idx)}: "
            f"the remainder/s does not fall as s shrinks (s = {', '.join(f'{x:.0e}' for x in _SCALES)}: "
            f"remainder/s = {', '.join(f'{x:.2e}' for x in r)}; measured round-off floor at s = "
            f"{_SCALES[k + 1]:.0e}: {fl[k + 1]:.1e}); the Jacobian is wrong"
        )


def _batch(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(tuple(manifold.batch_shape(q)), tuple(np.shape(xi)[:-1])))


def _direction(dim: int, batch: tuple[int, ...], seed: int = 12345) -> np.ndarray:
    w = np.random.default_rng(seed).standard_normal((*batch, dim))
    return w / np.linalg.norm(w, axis=-1, keepdims=True)


def _index_point(q: PointBatch, idx: tuple) -> Point:
    return jax.tree.map(lambda a: a[idx], q)


_AMBIENT_H = 1e-4
_JACOBIAN_OF = {
    "J0 = dxi/dq0": "J0",
    "J1 = dxi/dq1": "J1",
    "J_q of R_q(xi)": "J_q",
    "J_xi of R_q(xi)": "J_xi",
}


def _check_jacobians(manifold: Manifold, q: PointBatch, xi: ArrayLike, names: tuple[str, ...], how: str) -> None:
    s, v = _primal(manifold, q, xi)
    if how == "autodiff":
        D = s.unflat(_evaluator(manifold)("autodiff", s))
        for what in names:
            _assert_jacobian_close(
                v[_JACOBIAN_OF[what]],
                D[what],
                RTOL_AUTODIFF,
                f"{manifold!r}: {what}",
                "jax.jacfwd of its definition",
            )
        return
    nfd = _fd_deltas(manifold.dim, ()).shape[0]
    for what in names:
        name, J, out = f"{manifold!r}: {what}", v[_JACOBIAN_OF[what]], v["stack"][what]
        if how == "fd":
            _assert_jacobian_close(
                J, _fd_estimate(out[:nfd], manifold.dim, s.batch), 1e-6, name, "central finite differences"
            )
        else:
            _perturbation_assert(out[nfd:], J, v["w"], name)


_SHAPES: dict[tuple, _Values] = {}


def _shapes(M: Manifold, q: PointBatch, xi: ArrayLike, eta: ArrayLike) -> _Values:
    """Shapes and dtypes of every method's output at the caller's shapes (``jax.eval_shape``: no compile)."""
    args = (q, jnp.asarray(xi), jnp.asarray(eta))
    key = (
        type(M),
        M._key(),
        jax.tree.structure(args),
        tuple((np.shape(a), a.dtype) for a in jax.tree.leaves(args)),
    )
    if key not in _SHAPES:
        try:
            out = jax.eval_shape(lambda q, xi, eta: _method_outputs(M, q, xi, eta), *args)
        except _Evaluator._TRACE_ERRORS:
            out = _method_outputs(M, *args)
        _SHAPES[key] = jax.tree.map(lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype), out)
    return _SHAPES[key]


# ------------------------------------------------------------------ laws
def check_retract_at_zero(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``R_q(0) = q``.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_retract_at_zero(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    s, v = _primal(manifold, q, xi)
    _assert_points_close(
        v["at_zero"], manifold.broadcast_point(q, s.batch), f"{manifold!r}: R_q(0) = q", 1e-15
    )


def check_points_on_manifold(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``random_point`` and ``R_q(xi)`` pass :meth:`Manifold.check_point`.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_points_on_manifold(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    >>> md.testing.check_points_on_manifold(M, 2 * q, xi)   # not rotations: the law fails
    Traceback (most recent call last):
        ...
    AssertionError: SO3(retraction='cayley'): q is not on the manifold: q: not a rotation matrix (SO3) at batch index [0]: ...
    """
    for what, p in (("q", q), ("R_q(xi)", _primal(manifold, q, xi)[1]["q1"])):
        try:
            manifold.check_point(p, atol=1e-9, name=what)
        except ValueError as exc:
            raise AssertionError(f"{manifold!r}: {what} is not on the manifold: {exc}") from exc


def check_inverse_retract_round_trip(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``R_q^{-1}(R_q(xi)) = xi`` in the domain, to ``1e-12 |xi|`` plus round-off amplified by ``|J1|``.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_inverse_retract_round_trip(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    s, v = _primal(manifold, q, xi)
    xi = np.broadcast_to(np.asarray(xi), (*s.batch, manifold.dim))
    n = np.linalg.norm(xi, axis=-1)
    err = np.linalg.norm(v["back"] - xi, axis=-1)
    tol = 1e-12 * n + 16 * _EPS * _scale(v["p0"]) * (1.0 + _frob(v["J1"]))
    bad = v["ok"] & ~(err <= tol)
    if np.any(bad):
        idx = tuple(np.argwhere(bad)[0])
        raise AssertionError(
            f"{manifold!r}: R_q^-1(R_q(xi)) != xi at batch index {_index_str(idx)}: |error| = {err[idx]:.3e} "
            f"for |xi| = {n[idx]:.3e} (tolerance {tol[idx]:.1e})\nxi = {xi[idx]}\nback = {v['back'][idx]}"
        )


def check_differential_at_zero(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``dR_q(0) = id`` (``jax.jacfwd`` of ``R_q^{-1}(R_q(d))``); ``J_xi = J_q = J1 = -J0 = I`` at zero.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_differential_at_zero(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    zero = np.zeros((*_batch(manifold, q, xi), manifold.dim))
    s, v = _primal(manifold, q, zero)
    D = s.unflat(_evaluator(manifold)("autodiff", s))
    eye = np.broadcast_to(np.eye(manifold.dim), (*s.batch, manifold.dim, manifold.dim))
    _assert_jacobian_close(
        eye, D["J1 = dxi/dq1"], 1e-12, f"{manifold!r}: dR_q(0) = id", "jax.jacfwd of R_q^-1(R_q(d))"
    )
    for what, J, ref in (
        ("J_xi(q, 0) = I", "J_xi", eye),
        ("J_q(q, 0) = I", "J_q", eye),
        ("J1(q, q) = I", "J1", eye),
        ("J0(q, q) = -I", "J0", -eye),
    ):
        _assert_jacobian_close(v[J], ref, 1e-13, f"{manifold!r}: {what}", "the identity")


def check_inverse_jacobians_autodiff(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``J0``, ``J1`` of ``retract_with_inverse_jacobians`` against ``jax.jacfwd`` of their definitions.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_inverse_jacobians_autodiff(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _check_jacobians(manifold, q, xi, ("J0 = dxi/dq0", "J1 = dxi/dq1"), "autodiff")


def check_inverse_jacobians_fd(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``J0``, ``J1`` against converged central differences.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_inverse_jacobians_fd(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _check_jacobians(manifold, q, xi, ("J0 = dxi/dq0", "J1 = dxi/dq1"), "fd")


def check_inverse_jacobians_perturbation(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``R_{q0 (+) s w}^{-1}(q1) = xi + s J0 w + O(s^2)``, likewise ``J1``.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_inverse_jacobians_perturbation(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _check_jacobians(manifold, q, xi, ("J0 = dxi/dq0", "J1 = dxi/dq1"), "perturbation")


def check_jacobians_autodiff(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``J_q``, ``J_xi`` of ``retract_with_jacobians`` against ``jax.jacfwd`` of their definitions.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_jacobians_autodiff(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _check_jacobians(manifold, q, xi, ("J_q of R_q(xi)", "J_xi of R_q(xi)"), "autodiff")


def check_jacobians_fd(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``J_q``, ``J_xi`` against converged central differences.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_jacobians_fd(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _check_jacobians(manifold, q, xi, ("J_q of R_q(xi)", "J_xi of R_q(xi)"), "fd")


def check_jacobians_perturbation(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``R_{q'}^{-1}(R_{q (+) s w}(xi)) = s J_q w + O(s^2)``, likewise ``J_xi``.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_jacobians_perturbation(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _check_jacobians(manifold, q, xi, ("J_q of R_q(xi)", "J_xi of R_q(xi)"), "perturbation")


def _check_group_data(name: str, g: _Values | list | None, nb: int) -> None:
    if isinstance(g, list):
        for i, gi in enumerate(g):
            _check_group_data(f"{name} factor {i}", gi, nb)
        return
    if g is None:
        return
    t, J0, J1 = g["fused_inv"]
    t2, Jq, Jxi = g["fused_fwd"]
    for what, got, ref in (
        ("tau_with_inverse_jacobians: tau", t, g["tau"]),
        ("tau_with_jacobians: tau", t2, g["tau"]),
        ("tau_with_inverse_jacobians: J0 vs -left_jacobian_inv", J0, -g["Jl_inv"]),
        ("tau_with_inverse_jacobians: J1 vs right_jacobian_inv", J1, g["Jr_inv"]),
        ("tau_with_jacobians: J_q vs adjoint(inverse(tau))", Jq, g["Ad_inv_tau"]),
        ("tau_with_jacobians: J_xi vs right_jacobian", Jxi, g["Jr"]),
    ):
        assert_close(got, ref, 1e-13, 1e-14 * _scale(ref), f"{name}: {what}", nb)
    cond = (1 + _frob(g["Jr"])) * (1 + _frob(g["Jr_inv"]))
    err = _frob(g["Jr"] @ g["Jr_inv"] - np.eye(g["Jr"].shape[-1]))
    if np.any(~(err <= 64 * _EPS * cond)):
        raise AssertionError(
            f"{name}: right_jacobian @ right_jacobian_inv != I: |error|_F = {np.max(err):.3e}"
        )


def check_fused_equals_composition(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """Every fused path equals the generic composition.

    The points of ``retract_with_inverse_jacobians`` and
    ``retract_with_jacobians`` equal ``retract``; on a Lie group (and on
    every group factor of a product) the fused ``tau_with_*`` equal the
    separate primitives (``tau``, ``-left_jacobian_inv``,
    ``right_jacobian_inv``, ``adjoint(inverse(tau))``, ``right_jacobian``) to
    round-off, and ``J_r J_r^{-1} = I``. (The fused Jacobians against
    ``jax.jacfwd`` of their compositions: :func:`check_inverse_jacobians_autodiff`,
    :func:`check_jacobians_autodiff`.)

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_fused_equals_composition(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    s, v = _primal(manifold, q, xi)
    for what, p in (("retract_with_inverse_jacobians", v["p0"]), ("retract_with_jacobians", v["p1"])):
        _assert_points_close(p, v["q1"], f"{manifold!r}: {what}: the point vs retract", 1e-14)
    _check_group_data(f"{manifold!r}: {type(manifold.retraction).__name__}", v["groups"], len(s.batch))


def check_ambient_tangent(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``ambient_tangent(q, eta) = d/de R_q(e eta)`` at 0 (``jax.jvp`` and central differences); linear.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_ambient_tangent(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _s, v = _run(manifold, "ambient", q, xi)
    A, A2, L, T, C = (point_arrays(v[k]) for k in ("A", "A2", "L", "T", "curves"))
    h = _AMBIENT_H
    for k, (a, t) in enumerate(zip(A, T)):
        name = f"{manifold!r}: ambient_tangent (component {k})"
        assert_close(a, t, 1e-12, 1e-13 * _scale(t), f"{name} vs d/de R_q(e eta) by jax.jvp")
        fd = (8 * (C[k][0] - C[k][1]) - (C[k][2] - C[k][3])) / (12 * h)
        assert_close(a, fd, 1e-6, 1e-6 * _scale(fd), f"{name} vs d/de R_q(e eta) by central differences")
        assert_close(L[k], 2 * a - 3 * A2[k], 1e-13, 1e-13 * _scale(a), f"{name} is linear in eta")


def check_derivatives_finite(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """First derivatives w.r.t. ``xi`` are finite at ``xi = 0`` and at the sample.

    ``jax.grad`` (of the sum of the outputs) of the fused paths (whose
    Jacobians a Newton matrix differentiates again), of
    ``R_q^{-1}(R_q(xi))`` (with ``exp``: ``log(exp(xi))``), of ``R_q^{-1}`` at
    ``q`` along the first-order curve (``log`` at the identity) and, on a Lie
    group, of the retraction's ``J_r``, ``J_r^{-1}``, ``J_l^{-1}`` (with
    ``exp``: the group's); ``jax.jacfwd`` of ``retract_with_inverse_jacobians``.
    ``jax.grad`` is the strict test: a NaN in the unselected branch of a
    ``where`` reaches it as ``0 * inf`` (forward mode selects the tangent).
    On a product the law runs on every factor (the product's own code --
    split, concatenation, block diagonal -- is linear).

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_derivatives_finite(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    if isinstance(manifold, ProductManifold):
        batch = _batch(manifold, q, xi)
        xi = np.broadcast_to(np.asarray(xi), (*batch, manifold.dim))
        for f, qi, x in zip(manifold.factors, manifold.broadcast_point(q, batch), manifold.split(xi)):
            check_derivatives_finite(f, qi, x)
        return
    s = _Flat(manifold, q, xi)
    bad = [
        f"{k} at {where}"
        for k, ok in _evaluator(manifold)("derivatives", s).items()
        for where, o in zip(("0", "the sample"), ok)
        if not o
    ]
    if bad:
        raise AssertionError(f"{manifold!r}: non-finite first derivatives: " + "; ".join(bad))


def check_in_domain(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """``in_domain`` is a boolean of ``xi``'s batch shape, true at 0 and at every sample.

    The samplers of every regime stay inside the domain, ``near_singular``
    close to its edge.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_in_domain(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    shape = _shapes(manifold, q, xi, np.zeros(np.shape(xi)))["in_domain"]
    if shape.shape != tuple(np.shape(xi)[:-1]) or shape.dtype != bool:
        raise AssertionError(
            f"{manifold!r}: in_domain returns {shape.dtype} {shape.shape}, expected bool {np.shape(xi)[:-1]}"
        )
    s, v = _primal(manifold, q, xi)
    for label, ok in (("0", v["ok0"]), ("the sample", v["ok"])):
        if not np.all(ok):
            idx = tuple(np.argwhere(~ok)[0])
            raise AssertionError(
                f"{manifold!r}: in_domain is false at {label}, batch index {_index_str(idx)}: "
                f"xi = {np.broadcast_to(np.asarray(xi), (*s.batch, manifold.dim))[idx]}"
            )


def check_batch_consistency(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """Batch axes: shapes at the caller's own shapes, and values element by element.

    Shapes (by ``jax.eval_shape``, at the sample's batch shape, with a
    single ``q`` and batched ``xi``, the reverse, and unbatched): points are
    ``(*batch, *point_shape)``, tangent vectors ``(*batch, dim)``; a Jacobian
    and ``in_domain`` depend on ``xi`` only and may keep only its batch axes.
    Values: the batched call equals the unbatched calls element by element
    (``jax.lax.map``).

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_batch_consistency(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    M = manifold
    batch = _batch(M, q, xi)
    xi = np.broadcast_to(np.asarray(xi), (*batch, M.dim))
    first = (0,) * len(batch)
    eta = _direction(M.dim, batch, seed=3)
    ref = _shapes(M, M.broadcast_point(q, batch), xi, eta)
    q_first = _index_point(M.broadcast_point(q, batch), first)
    variants = [("batched call", q, xi, eta, batch), ("unbatched call", q_first, xi[first], eta[first], ())]
    if np.prod(batch) > 1:
        variants += [
            ("single q, batched xi", q_first, xi, eta, batch),
            ("batched q, single xi", q, xi[first], eta, batch),
        ]
    for label, qq, xx, ee, bshape in variants:
        got = _shapes(M, qq, xx, ee)
        for name, r in ref.items():
            for k, (g, rr) in enumerate(zip(jax.tree.leaves(got[name]), jax.tree.leaves(r))):
                if name in _BROADCASTABLE:
                    want = (*bshape, *((M.dim, M.dim) if name != "in_domain" else ()))
                    ok = len(g.shape) <= len(want) and np.broadcast_shapes(g.shape, want) == want
                else:
                    want = (*bshape, *rr.shape[len(batch) :])
                    ok = g.shape == want
                if not ok:
                    raise AssertionError(
                        f"{M!r}: {name} output {k} ({label}) has shape {g.shape}, expected {want}"
                    )
    s, v = _run(M, "batch", q, xi)
    got, want = v["batched"], v["elements"]
    for name in want:
        for k, (g, r) in enumerate(zip(point_arrays(got[name]), point_arrays(want[name]))):
            assert_close(
                g,
                r,
                1e-13,
                1e-14 * _scale(r),
                f"{M!r}: {name} output {k}: batched vs unbatched calls",
                len(s.batch),
            )


def check_float64(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """Every array the methods return is float64 (``in_domain``: bool), at the caller's own shapes.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_float64(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    out = _shapes(manifold, q, xi, _direction(manifold.dim, _batch(manifold, q, xi), seed=3))
    for name, a in out.items():
        for k, leaf in enumerate(jax.tree.leaves(a)):
            want = np.bool_ if name == "in_domain" else np.float64
            if leaf.dtype != want:
                raise AssertionError(
                    f"{manifold!r}: {name} output {k} has dtype {leaf.dtype}, expected {np.dtype(want)}"
                )


def check_symmetry(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """The declared ``retraction.symmetric`` is honoured: ``R_{q1}^{-1}(q0) = -R_{q0}^{-1}(q1)``.

    Declared symmetric: the identity holds in the domain to round-off
    amplified by ``|J1|``. Declared not symmetric: where ``|xi| >= 0.1``
    somewhere in the batch, it fails there by more than ``1e-6`` (the
    declaration is not needlessly pessimistic).

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_symmetry(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _s, v = _primal(manifold, q, xi)
    defect = np.linalg.norm(v["back"] + v["reverse"], axis=-1)
    n = np.linalg.norm(v["back"], axis=-1)
    if manifold.retraction.symmetric:
        tol = 1e-12 * n + 64 * _EPS * _scale(v["p0"]) * (1 + _frob(v["J1"]))
        bad = v["ok"] & ~(defect <= tol)
        if np.any(bad):
            idx = tuple(np.argwhere(bad)[0])
            raise AssertionError(
                f"{manifold!r}: declared symmetric, but R_q1^-1(q0) + R_q0^-1(q1) = "
                f"{(v['back'] + v['reverse'])[idx]} "
                f"at batch index {_index_str(idx)} (|defect| = {defect[idx]:.3e} > {tol[idx]:.1e})"
            )
        return
    big = v["ok"] & (n >= 0.1)
    if np.any(big) and not np.any(defect[big] > 1e-6):
        raise AssertionError(
            f"{manifold!r}: declared not symmetric, but R_q1^-1(q0) = -R_q0^-1(q1) holds to "
            f"{np.max(defect[big]):.1e} for every |xi| >= 0.1"
        )


# -------------------------------------------------------------- group laws
def _group_values(group: MatrixLieGroup, q: PointBatch, xi: ArrayLike) -> tuple[_Flat, dict[str, np.ndarray]]:
    s, g = _run(group, "group", q, xi)
    g.update(
        q=np.asarray(group.broadcast_point(q, s.batch)),
        xi=np.broadcast_to(np.asarray(xi), g["vee_hat"].shape),
    )
    return s, g


def check_hat_vee(group: MatrixLieGroup, q: PointBatch, xi: ArrayLike) -> None:
    """``vee(hat(x)) = x``; ``hat`` is linear; ``hat(ad_x y) = [hat x, hat y]``.

    Parameters
    ----------
    group, q, xi : MatrixLieGroup, point, array
        A sample (:func:`draw_sample`): the group, points ``[*B, N, N]`` and
        frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_hat_vee(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    s, v = _group_values(group, q, xi)
    assert_close(v["vee_hat"], v["xi"], 1e-15, 1e-300, f"{group!r}: vee(hat(x)) = x", len(s.batch))
    assert_close(
        v["hat_lin"], 2.0 * v["hat_xi"] - 3.0 * v["hat_y"], 1e-14, 1e-14, f"{group!r}: hat is linear"
    )
    X, Y = v["hat_xi"], v["hat_y"]
    assert_close(
        v["hat_ad"], X @ Y - Y @ X, 1e-12, 1e-13 * _scale(v["xi"]), f"{group!r}: hat(ad_x y) = [hat x, hat y]"
    )


def check_adjoint(group: MatrixLieGroup, q: PointBatch, xi: ArrayLike) -> None:
    """``hat(Ad_g x) = g hat(x) g^{-1}`` and ``Ad_(g h) = Ad_g Ad_h``.

    Parameters
    ----------
    group, q, xi : MatrixLieGroup, point, array
        A sample (:func:`draw_sample`): the group, points ``[*B, N, N]`` and
        frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_adjoint(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _s, v = _group_values(group, q, xi)
    g = v["q"]
    sc = _scale(g) ** 2
    assert_close(
        v["hat_Ad_x"],
        g @ v["hat_x"] @ np.linalg.inv(g),
        1e-12,
        1e-12 * sc,
        f"{group!r}: hat(Ad_g x) = g hat(x) g^-1",
    )
    assert_close(
        v["Ad_qh"],
        v["Ad"] @ v["Ad_h"],
        1e-11,
        1e-11 * _scale(v["q1"]) * sc,
        f"{group!r}: Ad_(g h) = Ad_g Ad_h",
    )


def check_exp_log(group: MatrixLieGroup, q: PointBatch, xi: ArrayLike) -> None:
    """``exp(log(g)) = g`` for ``g = q`` and ``g = R_q(xi)``; ``log(exp(0)) = 0``.

    Parameters
    ----------
    group, q, xi : MatrixLieGroup, point, array
        A sample (:func:`draw_sample`): the group, points ``[*B, N, N]`` and
        frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_exp_log(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _s, v = _group_values(group, q, xi)
    for name, got, g in (("g", v["exp_log_q"], v["q"]), ("R_q(xi)", v["exp_log_q1"], v["q1"])):
        assert_close(got, g, 0, 1e-12 * _scale(g), f"{group!r}: exp(log({name})) = {name}")
    assert_close(v["log_exp_0"], 0.0, 0, 1e-300, f"{group!r}: log(exp(0)) = 0")


def check_group_inverse(group: MatrixLieGroup, q: PointBatch, xi: ArrayLike) -> None:
    """``g g^{-1} = g^{-1} g = e`` and ``inverse`` equals the matrix inverse.

    Parameters
    ----------
    group, q, xi : MatrixLieGroup, point, array
        A sample (:func:`draw_sample`): the group, points ``[*B, N, N]`` and
        frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_group_inverse(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    _s, v = _group_values(group, q, xi)
    for name, g, gi in (("g", v["q"], v["inv_q"]), ("R_q(xi)", v["q1"], v["inv_q1"])):
        e = np.broadcast_to(np.eye(group.matrix_size), g.shape)
        sc = _scale(g) ** 2
        assert_close(g @ gi, e, 0, 1e-13 * sc, f"{group!r}: {name} {name}^-1 = e")
        assert_close(gi @ g, e, 0, 1e-13 * sc, f"{group!r}: {name}^-1 {name} = e")
        assert_close(gi, np.linalg.inv(g), 1e-11, 1e-13 * sc, f"{group!r}: inverse({name}) vs numpy inv")


# ------------------------------------------------- domain edges (eager calls)
EDGE_SCALES: tuple[float, ...] = (0.0, 1e-300, 1e-8, np.pi - 1e-6, np.pi, np.pi + 1e-6, 2 * np.pi, 1e17, 1e160)
"""Norms of the tangent vectors (and of the rotations ``exp`` builds) of :func:`check_domain_edges`."""

_EDGE_RELATIVE = (1.0 - 1e-9, 1.0, 1.0 + 1e-9, 2.0)  # multiples of the step domain's edge along a direction


def _edge_along(manifold: Manifold, d: np.ndarray) -> float | None:
    """Where :meth:`Manifold.in_domain` ends along the unit vector ``d`` (bisection), None if not below 1e6."""
    if bool(np.asarray(manifold.in_domain(jnp.asarray(1e6 * d)))):
        return None
    lo, hi = 0.0, 1e6
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if bool(np.asarray(manifold.in_domain(jnp.asarray(mid * d)))) else (lo, mid)
    return hi


def _eager_outcome(manifold: Manifold, method: str, args: tuple) -> str | None:
    """Call ``manifold.method(*args)`` eagerly: None if it returned finite values or raised a
    :class:`RetractionDomainError` naming the primitive; otherwise what went wrong."""
    from ._errors import RetractionDomainError

    def names(M: Manifold) -> list[str]:
        return [f"{M!r}."] + [n for f in getattr(M, "factors", ()) for n in names(f)]

    try:
        out = getattr(manifold, method)(*args)
    except RetractionDomainError as exc:
        if not any(n in str(exc) for n in names(manifold)):
            return f"raised a RetractionDomainError that does not name the primitive: {exc}"
        return None
    except Exception as exc:  # noqa: BLE001 - any other exception is the finding
        return f"raised {type(exc).__name__}: {exc}"
    leaves = [np.asarray(x) for x in jax.tree.leaves(out)]
    if not all(x.dtype == bool or np.all(np.isfinite(x)) for x in leaves):
        return "returned non-finite values without an error"
    return None


def check_domain_edges(manifold: Manifold, q: PointBatch, xi: ArrayLike) -> None:
    """Eager primitives at and around the edges of their domains: finite values or a clear error.

    Along the direction ``d`` of ``xi`` (its first member; a fixed random
    direction if that is zero) the tangent vectors ``s d`` for every ``s``
    in :data:`EDGE_SCALES`, ``s`` at the step domain's edge ``e`` along
    ``d`` (from :meth:`Manifold.in_domain`) times ``1 - 1e-9, 1, 1 + 1e-9,
    2``, and ``d`` with a NaN or an infinite entry go to ``retract``, both
    fused Jacobian methods, ``in_domain`` and ``ambient_tangent`` (on a
    group also ``exp``, ``exp_right_jacobian`` and its inverse);
    ``inverse_retract(q, q1)`` gets the points ``q1 = R_q(s d)`` and, on a
    group, ``q exp(s d)`` (every rotation angle: pi, just below and above
    it, 2 pi), and a ``q1`` with a NaN entry; ``to_coordinates`` gets the
    same points and ``from_coordinates`` coordinates with a NaN or an
    infinite entry. Every call must return finite
    values or raise a :class:`~manifold_dirac._errors.RetractionDomainError`
    naming the primitive; ``in_domain`` must hold at 0 and fail at 1.5 times
    its edge. Eager calls only: inside ``jit`` the integrator's step status
    reports a step outside the domain.

    Parameters
    ----------
    manifold, q, xi : Manifold, point, array
        A sample (:func:`draw_sample`): the manifold, points ``[*B, *point_shape]``
        and frame vectors ``[*B, dim]``, float64.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> M = md.SO3("cayley")
    >>> q, xi = md.testing.draw_sample(M, seed=0, batch_shape=(2,), regime="generic")
    >>> md.testing.check_domain_edges(M, q, xi) is None  # it raises AssertionError when the law fails
    True
    """
    M = manifold
    batch = _batch(M, q, xi)
    first = (0,) * len(batch)
    q0 = _index_point(M.broadcast_point(q, batch), first)
    d = np.array(np.broadcast_to(np.asarray(xi, dtype=float), (*batch, M.dim))[first])
    if not np.linalg.norm(d) > 0:
        d = _direction(M.dim, ())
    d = d / np.linalg.norm(d)
    edge = _edge_along(M, d)
    scales = list(EDGE_SCALES) + ([edge * r for r in _EDGE_RELATIVE] if edge is not None else [])
    tangents = [(s, jnp.asarray(s * d)) for s in scales]
    for bad in (np.nan, np.inf):
        e = d.copy()
        e[0] = bad
        tangents.append((bad, jnp.asarray(e)))
    findings = []
    if not bool(np.asarray(M.in_domain(jnp.zeros(M.dim)))):
        findings.append("in_domain(0) is false")
    if edge is not None and bool(np.asarray(M.in_domain(jnp.asarray(1.5 * edge * d)))):
        findings.append(f"in_domain holds at 1.5 times its edge {edge:.6g} along xi")
    group = isinstance(M, MatrixLieGroup)
    builders = [M.retract] + ([lambda a, b: M.compose(a, M.exp(b))] if group else [])
    targets = []
    for s, x in tangents:
        calls = [("retract", (q0, x)), ("retract_with_inverse_jacobians", (q0, x)),
                 ("retract_with_jacobians", (q0, x)), ("in_domain", (x,)), ("ambient_tangent", (q0, x))]
        if group:
            calls += [("exp", (x,)), ("exp_right_jacobian", (x,)), ("exp_right_jacobian_inv", (x,))]
        for method, args in calls:
            why = _eager_outcome(M, method, args)
            if why:
                findings.append(f"{method} at xi = {np.asarray(x)}: {why}")
        if not np.all(np.isfinite(np.asarray(x))):
            continue
        for build in builders:
            try:
                q1 = build(q0, x)
            except ValueError:
                continue  # refused (the calls above judge that)
            if all(np.all(np.isfinite(np.asarray(leaf))) for leaf in jax.tree.leaves(q1)):
                targets.append((q1, s))
    targets.append((jax.tree.map(lambda a: jnp.asarray(a).at[(0,) * jnp.ndim(a)].set(jnp.nan), q0), float("nan")))
    for q1, s in targets:
        for method, args in (("inverse_retract", (q0, q1)), ("to_coordinates", (q1,))):
            why = _eager_outcome(M, method, args)
            if why:
                findings.append(f"{method} at q1 built from |xi| = {s:.10g}: {why}")
    c = np.array(M.to_coordinates(q0))
    for bad in (np.nan, np.inf):
        c[..., 0] = bad
        why = _eager_outcome(M, "from_coordinates", (c,))
        if why:
            findings.append(f"from_coordinates at {c}: {why}")
    if findings:
        raise AssertionError(f"{M!r}: primitives at the edges of their domains:\n  " + "\n  ".join(findings))


LAWS: dict[str, Law] = {
    "retract_at_zero": check_retract_at_zero,
    "points_on_manifold": check_points_on_manifold,
    "inverse_retract_round_trip": check_inverse_retract_round_trip,
    "differential_at_zero": check_differential_at_zero,
    "inverse_jacobians_autodiff": check_inverse_jacobians_autodiff,
    "inverse_jacobians_fd": check_inverse_jacobians_fd,
    "inverse_jacobians_perturbation": check_inverse_jacobians_perturbation,
    "jacobians_autodiff": check_jacobians_autodiff,
    "jacobians_fd": check_jacobians_fd,
    "jacobians_perturbation": check_jacobians_perturbation,
    "fused_equals_composition": check_fused_equals_composition,
    "ambient_tangent": check_ambient_tangent,
    "derivatives_finite": check_derivatives_finite,
    "in_domain": check_in_domain,
    "batch_consistency": check_batch_consistency,
    "float64": check_float64,
    "symmetry": check_symmetry,
}
"""Laws every manifold satisfies, ``name -> law(manifold, q, xi)``."""

GROUP_LAWS: dict[str, Law] = {
    "hat_vee": check_hat_vee,
    "adjoint": check_adjoint,
    "exp_log": check_exp_log,
    "group_inverse": check_group_inverse,
}
"""Additional laws of a :class:`MatrixLieGroup`."""


def laws_for(manifold: Manifold) -> dict[str, Law]:
    """The laws that apply to ``manifold`` (group laws for a :class:`MatrixLieGroup`).

    Parameters
    ----------
    manifold : Manifold
        The manifold the laws would run on.

    Returns
    -------
    dict
        ``{name: law}``, each law a function ``law(manifold, q, xi)``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> "exp_log" in md.testing.laws_for(md.SO3()), "exp_log" in md.testing.laws_for(md.Sphere2())
    (True, False)
    """
    return {**LAWS, **(GROUP_LAWS if isinstance(manifold, MatrixLieGroup) else {})}


def draw_sample(
    manifold: Manifold, seed: int, batch_shape: tuple[int, ...], regime: str
) -> tuple[PointBatch, VectorBatch]:
    """A point and a tangent vector ``(q, xi)`` from one seed (``random_point``, then ``sample_tangent``).

    Parameters
    ----------
    manifold : Manifold
        Where the sample is drawn.
    seed : int
        The seed of the numpy generator (the same seed gives the same sample).
    batch_shape : tuple of int
        Leading batch axes ``B``.
    regime : str
        One of :data:`REGIMES`: tangent vectors near zero, generic, or near the
        edge of the retraction's domain.

    Returns
    -------
    q : point, shape=[*B, *point_shape]
        Float64 (a tuple of them on a product).
    xi : jax.Array, shape=[*B, dim]
        Float64 frame coordinates.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> q, xi = md.testing.draw_sample(md.SO3(), seed=0, batch_shape=(4,), regime="generic")
    >>> q.shape, xi.shape, xi.dtype
    ((4, 3, 3), (4, 3), dtype('float64'))
    """
    rng = np.random.default_rng(seed)
    q = manifold.random_point(rng, tuple(batch_shape))
    return q, jnp.asarray(manifold.sample_tangent(rng, tuple(batch_shape), regime), dtype=float)


def check_manifold_laws(
    manifold: Manifold,
    *,
    seeds: Iterable[int] = range(2),
    batch_shapes: Iterable[tuple[int, ...]] = BATCH_SHAPES,
    regimes: Iterable[str] = REGIMES,
    laws: Iterable[str] | None = None,
) -> int:
    """Run every applicable law over seeds x batch shapes x regimes.

    Parameters
    ----------
    manifold : Manifold
        The manifold (with its retraction) under test.
    seeds : iterable of int
        Seeds of :func:`draw_sample`; each gives other points and vectors.
    batch_shapes : iterable of tuple of int
        Leading batch shapes of the samples (``()`` for one point).
    regimes : iterable of str
        Where the tangent vectors lie (:data:`REGIMES`): near zero, generic,
        near the edge of the retraction's domain.
    laws : iterable of str, optional
        Names of the laws to run (default: all that apply, :func:`laws_for`).

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

    Examples
    --------
    >>> import manifold_dirac as md
    >>> n = md.testing.check_manifold_laws(md.SO3("cayley"), seeds=range(1), batch_shapes=((),),
    ...                                    regimes=("generic",))
    >>> n > 10                                   # every law held once
    True
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
                            f"law {name!r} failed for {manifold!r} (seed={seed}, batch_shape="
                            f"{tuple(batch_shape)}, regime={regime!r}):\n{exc}"
                        ) from exc
                    count += 1
    return count


# -------------------------------------------------- hypothesis strategies
def seeds() -> SearchStrategy[int]:
    """hypothesis strategy of seeds for :func:`numpy.random.default_rng` (``0 ... 2**32 - 1``).

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of ``int``.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> import manifold_dirac as md
    >>> @settings(max_examples=3, deadline=None)
    ... @given(md.testing.seeds())
    ... def test_shapes(seed):
    ...     assert 0 <= seed < 2**32
    >>> test_shapes()
    """
    from hypothesis import strategies as st

    return st.integers(min_value=0, max_value=2**32 - 1)


def points(manifold: Manifold, batch_shape: tuple[int, ...] = ()) -> SearchStrategy[PointBatch]:
    """hypothesis strategy of points ``(*batch_shape, *point_shape)`` drawn by ``random_point``.

    Product manifolds give tuples of component points (pytrees).

    Parameters
    ----------
    manifold : Manifold
        Where the points are drawn.
    batch_shape : tuple of int
        Leading batch axes of each drawn point.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of points, float64.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> import manifold_dirac as md
    >>> @settings(max_examples=3, deadline=None)
    ... @given(md.testing.points(md.SO3(), batch_shape=(2,)))
    ... def test_shapes(q):
    ...     assert q.shape == (2, 3, 3)
    >>> test_shapes()
    """
    return seeds().map(lambda s: manifold.random_point(np.random.default_rng(s), tuple(batch_shape)))


def tangents(manifold: Manifold, batch_shape: tuple[int, ...] = (), regime: str = "generic"
             ) -> SearchStrategy[VectorBatch]:
    """hypothesis strategy of tangent vectors ``(*batch_shape, dim)`` drawn by ``sample_tangent`` in ``regime``.

    Parameters
    ----------
    manifold : Manifold
        Where the samples are drawn.
    batch_shape : tuple of int
        Leading batch axes of each sample.
    regime : str
        One of :data:`REGIMES`.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of ``jax.Array``, shape ``(*batch_shape, dim)``, float64.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> import manifold_dirac as md
    >>> @settings(max_examples=3, deadline=None)
    ... @given(md.testing.tangents(md.SE2(), batch_shape=(4,), regime="near_zero"))
    ... def test_shapes(xi):
    ...     assert xi.shape == (4, 3)
    >>> test_shapes()
    """
    if regime not in REGIMES:
        raise ValueError(f"tangents: unknown regime {regime!r}; regimes: {', '.join(REGIMES)}")
    return seeds().map(
        lambda s: jnp.asarray(manifold.sample_tangent(np.random.default_rng(s), tuple(batch_shape), regime),
                              dtype=float)
    )


def samples(manifold: Manifold, batch_shape: tuple[int, ...] = (), regime: str = "generic"
            ) -> SearchStrategy[tuple[PointBatch, VectorBatch]]:
    """hypothesis strategy of ``(q, xi)`` pairs drawn by :func:`draw_sample` (the laws' own samples).

    Parameters
    ----------
    manifold : Manifold
        The manifold of the pairs.
    batch_shape, regime : tuple of int, str
        As for :func:`tangents`: the leading axes of ``q`` and ``xi``, and the
        regime of ``xi``.

    Returns
    -------
    hypothesis.strategies.SearchStrategy
        Of ``(q, xi)`` tuples, as :func:`draw_sample` returns them.

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> import manifold_dirac as md
    >>> @settings(max_examples=3, deadline=None)
    ... @given(md.testing.samples(md.SO3(), batch_shape=(2,)))
    ... def test_shapes(sample):
    ...     assert sample[0].shape == (2, 3, 3) and sample[1].shape == (2, 3)
    >>> test_shapes()
    """
    if regime not in REGIMES:
        raise ValueError(f"samples: unknown regime {regime!r}; regimes: {', '.join(REGIMES)}")
    return seeds().map(lambda s: draw_sample(manifold, s, tuple(batch_shape), regime))


def _load_target(target: str) -> object:
    """``"module:attr"`` or ``"path/to/file.py:attr"`` -> the object named."""
    import importlib
    import importlib.util
    import sys
    from pathlib import Path

    where, sep, attr = target.rpartition(":")
    if not sep or not where or not attr:
        raise ValueError(f"{target!r}: give MODULE:NAME or FILE.py:NAME (e.g. my_pkg.groups:MyGroup)")
    if where.endswith(".py"):
        path = Path(where).resolve()
        if not path.is_file():
            raise ValueError(f"{target!r}: no file {path}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(where)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"{target!r}: module {module.__name__!r} has no attribute {attr!r}") from None


def _manifolds_of(obj: object, retractions: Sequence[str] | None) -> list[Manifold]:
    """A manifold class -> one instance per registered retraction (or those asked); a factory or an
    instance -> itself."""
    if isinstance(obj, Manifold):
        return [obj]
    if isinstance(obj, type) and issubclass(obj, Manifold):
        names = list(retractions) if retractions else list(obj.retraction_names())
        # by keyword: a constructor's first argument need not be the retraction (Sphere2(values, retraction))
        if names and "retraction" in inspect.signature(obj).parameters:
            return [obj(retraction=r) for r in names]
        return [obj()]  # a constructor without a retraction argument: its one retraction
    if callable(obj):
        M = obj()
        if not isinstance(M, Manifold):
            raise ValueError(f"the factory returned {type(M).__name__}, not a Manifold")
        return [M]
    raise ValueError(f"expected a Manifold subclass, instance or factory, got {type(obj).__name__}")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m manifold_dirac.testing TARGET...``: run every shared law on your manifolds.

    Each ``TARGET`` is ``module:Name`` or ``file.py:Name``, where ``Name`` is
    a :class:`~manifold_dirac.Manifold` subclass (checked
    once per registered retraction), an instance, or a factory returning
    one. Prints one line per manifold with the number of law checks passed.

    Parameters
    ----------
    argv : sequence of str, optional
        The targets (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        0 if every law passed, 1 on the first violated law (its message is
        printed: law, seed, batch shape, regime, batch index, size), 2 for a
        target that cannot be loaded.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> md.testing.main(["manifold_dirac:SO3", "--retraction", "cayley", "--seeds", "1",
    ...                  "--law", "retract_at_zero"])
    SO3(retraction='cayley'): 9 law checks passed (... s)
    0
    """
    import argparse
    import sys
    import time

    parser = argparse.ArgumentParser(
        prog="python -m manifold_dirac.testing",
        description="Run manifold_dirac's shared manifold laws on your own manifold.",
    )
    parser.add_argument("targets", nargs="+", metavar="TARGET",
                        help="module:Name or file.py:Name (a Manifold subclass, instance or factory)")
    parser.add_argument("--retraction", action="append", default=None,
                        help="only this retraction of a class (repeatable; default: every registered one)")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per batch shape and regime (default: 2)")
    parser.add_argument("--law", action="append", default=None, help="only this law (repeatable)")
    args = parser.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    for target in args.targets:
        try:
            manifolds = _manifolds_of(_load_target(target), args.retraction)
        except (ValueError, ImportError, TypeError) as exc:
            print(f"error: {target}: {exc}", file=sys.stderr)
            return 2
        for M in manifolds:
            start = time.perf_counter()
            try:
                n = check_manifold_laws(M, seeds=range(args.seeds), laws=args.law)
            except AssertionError as exc:
                print(f"FAILED {M!r}:\n{exc}", file=sys.stderr)
                return 1
            print(f"{M!r}: {n} law checks passed ({time.perf_counter() - start:.1f} s)")
    return 0


_register_builtins()

if __name__ == "__main__":
    import sys as _sys

    from manifold_dirac.testing import main as _main  # the package's module, whose registry the laws use

    _sys.exit(_main())
