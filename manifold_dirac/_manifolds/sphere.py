"""The unit sphere ``S^2`` with the great-circle retraction, in closed form on JAX.

:class:`Sphere2` is the embedded :class:`~manifold_dirac._manifolds.geomstats_adapter.GeomstatsManifold`
given by the closed forms of this module (geomstats' ``Hypersphere(2)``)::

    exp_q(v)     = cos|v| q + (sin|v| / |v|) v,
    log_{q0}(q1) = (theta / s) w,   w = q1 - c q0,  c = q0 . q1,  s = |w|,  theta = atan2(s, c),

the two-chart frame :func:`sphere_frame`, and the retraction's Jacobians
written out (:func:`sphere_retract_with_jacobians`,
:func:`sphere_retract_with_inverse_jacobians`: equal to the adapter's
forward-mode derivatives of ``exp`` and ``log`` to round-off, and cheaper to
differentiate again, as a Newton Jacobian does). geomstats is **not** imported
for these: only ``Sphere2(values="geomstats")`` uses it (the slower, eager
cross-check of the values through geomstats' ``metric.exp``/``metric.log``).
geomstats' ``HypersphereMetric.log`` goes through ``arccos`` of the inner
product and loses digits near ``0`` and near the antipode (measured with its
2.8.0 release: relative error 2e-7 at ``|xi| = 1e-9``, 4e-10 at ``1e-6``,
4e-4 at ``pi - 1e-6``), which would break the round trip
``R_q^{-1}(R_q(xi)) = xi`` the integrators rely on; hence the closed forms
are the default.
"""

from __future__ import annotations

from typing import Any  # only for the geomstats space: an untyped third-party object

import jax
import jax.numpy as jnp
import numpy as np

from .base import VALUE_ATOL, concrete_array, first_index, first_member
from .geomstats_adapter import GeomstatsManifold, _to_ambient, _to_frame, _to_frame_columns

__all__ = ["Sphere2", "sphere_exp", "sphere_frame", "sphere_log"]

_INV_SQRT2 = 1.0 / np.sqrt(2.0)
_CHART_BAND = 1e-3  # random points keep this distance (in |z|) from the chart switch
_SPHERE_MAX_ANGLE = float(np.pi - 1e-8)


def _dot(a: jax.Array, b: jax.Array) -> jax.Array:
    return jnp.sum(a * b, axis=-1)


def _cos_sinc_of_sq(t2: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``cos t`` and ``sin t / t`` from ``t^2`` (Taylor below ``t^2 < 1e-6``, next term < 1e-27)."""
    small = t2 < 1e-6
    t = jnp.sqrt(jnp.where(small, 1.0, t2))
    cos = jnp.where(small, 1 - t2 / 2 * (1 - t2 / 12 * (1 - t2 / 30 * (1 - t2 / 56))), jnp.cos(t))
    sinc = jnp.where(small, 1 - t2 / 6 * (1 - t2 / 20 * (1 - t2 / 42 * (1 - t2 / 72))), jnp.sin(t) / t)
    return cos, sinc


def sphere_exp(q: jax.Array, v: jax.Array) -> jax.Array:
    """Exponential map of the unit sphere, ``cos|v| q + (sin|v|/|v|) v``.

    Parameters
    ----------
    q : array-like, shape=[..., n+1]
        Base points (unit vectors).
    v : array-like, shape=[..., n+1]
        Ambient tangent vectors at ``q``.

    Returns
    -------
    jax.Array, shape=[..., n+1]
    """
    q, v = jnp.asarray(q), jnp.asarray(v)
    cos, sinc = _cos_sinc_of_sq(_dot(v, v))
    return cos[..., None] * q + sinc[..., None] * v


def _arctan_over_z_of_sq(z2: jax.Array) -> jax.Array:
    """``arctan(z)/z`` as a function of ``z^2`` (series below 1e-6)."""
    small = z2 < 1e-6
    z = jnp.sqrt(jnp.where(small, 1.0, z2))
    return jnp.where(small, 1 - z2 / 3 * (1 - 3 * z2 / 5 * (1 - 5 * z2 / 7)), jnp.arctan(z) / z)


def sphere_log(q0: jax.Array, q1: jax.Array) -> jax.Array:
    """Logarithm of the unit sphere, ``log_{q0}(q1) = (theta / s) w``.

    With ``c = q0 . q1``, ``w = q1 - c q0``, ``s = |w|``,
    ``theta = atan2(s, c)``, written as ``theta/s = (arctan(z)/z)/c``,
    ``z = s/c``, for angles below ``pi/4`` (``c > s``; a function of ``s^2``: smooth at ``q1 = q0``)
    and ``(pi/2 - arctan(c/s))/s`` otherwise (``s^2 >= 1/2``) -- as accurate as ``atan2``. The front
    formula is not used up to ``pi/2``: its derivatives lose digits like ``eps/c`` as ``c -> 0``.
    Not defined at the antipode (``s = 0``, ``c < 0``; non-finite there).

    Parameters
    ----------
    q0, q1 : array-like, shape=[..., n+1]
        Unit vectors.

    Returns
    -------
    jax.Array, shape=[..., n+1]
        The tangent vector at ``q0``.
    """
    q0, q1 = jnp.asarray(q0), jnp.asarray(q1)
    c = _dot(q0, q1)
    w = q1 - c[..., None] * q0
    return _theta_over_s(c, _dot(w, w))[0][..., None] * w


def _theta_over_s(c: jax.Array, s2: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(theta / s, front, c')`` from ``c`` and ``s^2`` (:func:`sphere_log`): ``front`` marks angles below
    ``pi/4``, computed as ``(arctan(z)/z)/c``, ``z^2 = s^2 / c'^2`` (``c' = c`` there, 1 elsewhere); the back
    formula near ``pi/2`` (``s^2 >= 1/2`` there)."""
    front = (c > 0) & (c * c > s2)
    cs = jnp.where(front, c, 1.0)
    ratio_front = _arctan_over_z_of_sq(s2 / (cs * cs)) / cs
    sb = jnp.sqrt(jnp.where(front, 1.0, s2))
    ratio_back = (np.pi / 2 - jnp.arctan(jnp.where(front, 0.0, c) / sb)) / sb
    return jnp.where(front, ratio_front, ratio_back), front, cs


def sphere_frame(q: jax.Array, xp=jnp) -> jax.Array:
    """A smooth local orthonormal frame of ``S^2``, ``(*batch, 3, 2)``.

    Two charts, switched on ``|z|`` (the third coordinate of ``q``):

    * ``|z| <= 1/sqrt(2)`` (the band around the equator): ``e1 = z^ x q /
      |z^ x q|`` (east), ``e2 = q x e1`` (north); singular only at the poles
      ``+-z^``, at least 45 degrees away;
    * ``|z| > 1/sqrt(2)`` (the polar caps): the same with the axis ``y^``
      instead of ``z^``, singular only at ``+-y^``, again at least 45 degrees
      away.

    The chart is selected before normalizing, so neither value nor
    derivative is NaN. ``(e1, e2, q)`` is right-handed.

    ``xp``: the array module (``numpy`` for a frame computed on the host, as
    the catalog's initial data do; ``jax.numpy`` by default). The frame is not
    computed on the host by itself for concrete input, as ``from_coordinates``
    is: at ``|z| = 1/sqrt(2)`` an ulp of difference between NumPy's and XLA's
    arithmetic would pick the other chart, and an eager frame must be the one
    the compiled step uses; for the same reason :meth:`Sphere2.frame` of
    concrete points is this function compiled as one program.
    """
    q = xp.asarray(q)
    with np.errstate(all="ignore"):  # (NumPy) as the compiled path: a zero or non-finite q gives NaN, silently
        qn = q / xp.sqrt(xp.sum(q * q, axis=-1))[..., None]
        x, y, z = qn[..., 0], qn[..., 1], qn[..., 2]
        zero = xp.zeros_like(x)
        polar = xp.abs(z) > _INV_SQRT2
        a = xp.where(polar[..., None], xp.stack([z, zero, -x], -1), xp.stack([-y, x, zero], -1))
        e1 = a / xp.sqrt(xp.sum(a * a, axis=-1))[..., None]
        return xp.stack([e1, xp.cross(qn, e1)], -1)


def _series(x: jax.Array, coefficients: tuple[float, ...]) -> jax.Array:
    """``sum_k coefficients[k] x^k`` (Horner)."""
    out = jnp.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        out = out * x + c
    return out


# (cos t - sin t / t) / t^2 = sum_{k >= 1} (-1)^k 2k / (2k+1)! t^(2k-2): -1/3, 1/30, -1/840, ...
_G_SERIES = tuple((-1.0) ** k * 2 * k / float(np.prod(np.arange(1, 2 * k + 2))) for k in range(1, 8))
# (1 - arctan(z) / z) / z^2 = sum_{k >= 0} (-1)^k z^(2k) / (2k + 3): 1/3, -1/5, 1/7, ...
_U_SERIES = tuple((-1.0) ** k / (2 * k + 3) for k in range(8))
_SERIES_BELOW = 1e-3  # the series' next term < 1e-24 there; the closed forms' cancellation ~ eps / 1e-3 above


def _log_factors(q0: jax.Array, q1: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """``(c, w, f, h)`` of ``log_{q0}(q1) = f w``: ``c = q0 . q1``, ``w = q1 - c q0``, ``f = theta / s``, and
    ``h = (1 - c f) / s^2 = (s - theta c) / s^3``, with which ``df = -h dc`` along the sphere.

    ``f`` as in :func:`sphere_log`; ``h`` below ``pi/4`` as ``U(z^2) / c^2``, ``z = s / c``,
    ``U(z^2) = (1 - arctan(z)/z) / z^2`` (a series below ``z^2 = 1e-3``: smooth at ``q1 = q0``, where
    ``h = 1/3``), and directly otherwise (``1 - c f >= 1 - pi/4`` and ``s^2 >= 1/2`` there: no cancellation).
    """
    c = _dot(q0, q1)
    w = q1 - c[..., None] * q0
    s2 = _dot(w, w)
    f, front, cs = _theta_over_s(c, s2)
    z2 = s2 / (cs * cs)
    small = z2 < _SERIES_BELOW
    zf = jnp.where(small, 1.0, z2)
    u = jnp.where(small, _series(z2, _U_SERIES), (1 - _arctan_over_z_of_sq(zf)) / zf)
    h = jnp.where(front, u / (cs * cs), (1 - c * f) / jnp.where(front, 1.0, s2))
    return c, w, f, h


def _frame_derivatives(q: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``E(q)`` ``(*batch, 3, 2)`` and ``dE`` ``(*batch, 3, 2, 2)``: ``dE[..., :, i, j]`` is column ``i``'s
    derivative along ``E_j``.

    With ``a = axis x q`` (``axis = z^`` or ``y^``, the chart of :func:`sphere_frame`), ``e1 = a / |a|``,
    ``e2 = q x e1``, along a tangent ``d`` at a unit ``q``: ``da = axis x d``,
    ``de1 = (da - e1 (e1 . da)) / |a|``, ``de2 = d x e1 + q x de1``.
    """
    E = sphere_frame(q)
    qn = q / jnp.sqrt(_dot(q, q))[..., None]
    polar = jnp.abs(qn[..., 2]) > _INV_SQRT2
    axis = jnp.where(polar[..., None], jnp.array([0.0, 1.0, 0.0]), jnp.array([0.0, 0.0, 1.0]))
    e1 = E[..., 0]
    a = jnp.cross(axis, qn)  # sphere_frame's a (z^ x q or y^ x q)
    na = jnp.sqrt(_dot(a, a))
    d = jnp.moveaxis(E, -1, -2)  # (*batch, 2, 3): the directions E_j
    da = jnp.cross(axis[..., None, :], d)
    de1 = (da - e1[..., None, :] * _dot(e1[..., None, :], da)[..., None]) / na[..., None, None]
    de2 = jnp.cross(d, e1[..., None, :]) + jnp.cross(qn[..., None, :], de1)
    dE = jnp.stack([de1, de2], -2)  # (*batch, j, i, 3)
    return E, jnp.moveaxis(dE, -1, -3).swapaxes(-1, -2)


def sphere_retract_with_jacobians(q: jax.Array, xi: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(q1, J_q, J_xi)`` of ``R_q(xi) = exp_q(E(q) xi)`` in closed form (:meth:`Manifold.retract_with_jacobians`).

    With ``v = E(q) xi``, ``t = |v| = |xi|`` (the frame is orthonormal), ``E1 = E(q1)``::

        J_xi = E1^T (sinc t E(q) + (g(t) v - sinc t q) xi^T),     g = (cos t - sinc t) / t^2,
        J_q  = E1^T (cos t E(q) + sinc t [dE(q)[E_j] xi]_j),

    ``dE`` the frame's derivative (:func:`_frame_derivatives`). Equal to the forward-mode derivatives of the
    closed forms to round-off (``tests/manifolds/test_sphere_jacobians.py``), without differentiating them: a Newton
    Jacobian of a step then differentiates these once, not the closed forms twice.
    """
    E, dE = _frame_derivatives(q)
    v = _to_ambient(E, xi)
    t2 = _dot(v, v)
    cos, sinc = _cos_sinc_of_sq(t2)
    q1 = cos[..., None] * q + sinc[..., None] * v  # sphere_exp(q, v), the value of ``retract``
    E1 = sphere_frame(q1)
    small = t2 < _SERIES_BELOW
    g = jnp.where(small, _series(t2, _G_SERIES), (cos - sinc) / jnp.where(small, 1.0, t2))
    outer = (g[..., None] * v - sinc[..., None] * q)[..., :, None] * xi[..., None, :]
    Jxi = _to_frame_columns(E1, sinc[..., None, None] * E + outer)
    M = jnp.sum(dE * xi[..., None, :, None], -2)  # (*batch, 3, j): dE[E_j] xi
    Jq = _to_frame_columns(E1, cos[..., None, None] * E + sinc[..., None, None] * M)
    return q1, Jq, Jxi


def sphere_retract_with_inverse_jacobians(q0: jax.Array, xi: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(q1, J0, J1)``: ``q1 = R_{q0}(xi)`` and the Jacobians of ``xi = E(q0)^T log_{q0}(q1)`` in closed form.

    With ``log_{q0}(q1) = f w`` (:func:`_log_factors`; ``df = -h dc`` along the sphere), ``E0 = E(q0)``,
    ``E1 = E(q1)``::

        J1 = f E0^T E1 - h (E0^T w)(q0^T E1),
        J0 = [dE(q0)[E_j]^T log]_j - f c I - h (E0^T w)(q1^T E0),

    (:meth:`Manifold.retract_with_inverse_jacobians`): at ``xi = 0``, ``J0 = -I`` and ``J1 = I``.
    """
    E0, dE0 = _frame_derivatives(q0)
    q1 = sphere_exp(q0, _to_ambient(E0, xi))
    E1 = sphere_frame(q1)
    c, w, f, h = _log_factors(q0, q1)
    hE0w = (h[..., None] * _to_frame(E0, w))[..., :, None]  # (*batch, 2, 1): h E0^T w
    J1 = f[..., None, None] * _to_frame_columns(E0, E1) - hE0w * _to_frame(E1, q0)[..., None, :]
    log = f[..., None] * w
    N = jnp.sum(dE0 * log[..., :, None, None], -3)  # (*batch, i, j): dE(q0)[E_j][:, i] . log
    J0 = N - (f * c)[..., None, None] * jnp.eye(2) - hE0w * _to_frame(E0, q1)[..., None, :]
    return q1, J0, J1


def _frame_of(q: jax.Array) -> jax.Array:
    """:class:`Sphere2`'s frame: :func:`sphere_frame`; of concrete points, compiled as one program.

    Eager operations round differently from the same operations in a
    compiled program, and at the chart switch a last bit picks the other
    chart: an eager frame (in ``frame``, and in every eager map of the
    manifold that reads it) is the compiled one bit for bit only if it is
    compiled too (XLA rewrites ``q / sqrt(q . q)`` in a fused program; on a
    CPU with AVX-512 the two differ in the last bit of ``z``). Traced (in a
    step), the function itself, so that the step's program holds no nested
    call. (``jax.jit`` is called here, not kept in a global, so that the
    function's fingerprint, which a program kept on disk is keyed by, holds
    only code: JAX's cache of the compiled frame is keyed by the function.)
    """
    q = jnp.asarray(q)
    return sphere_frame(q) if isinstance(q, jax.core.Tracer) else jax.jit(sphere_frame)(q)


def _hypersphere2() -> Any:
    from .._compat import import_geomstats

    import_geomstats("geometry.hypersphere")
    from geomstats.geometry.hypersphere import Hypersphere  # type: ignore[import-untyped]

    return Hypersphere(2)


class Sphere2(GeomstatsManifold):
    """The unit sphere ``S^2`` with the great-circle retraction.

    Points are unit vectors ``(*batch, 3)``; frame coordinates ``xi``
    ``(*batch, 2)`` stand for ``E(q) xi`` with the two-chart frame of
    :func:`sphere_frame` (east/north away from the poles). ``R_q(xi)`` is the
    geodesic ``exp_q(E(q) xi)``; its inverse is defined except at the
    antipode ``-q`` (``|xi| = pi``), where it is not finite
    (:meth:`checked_inverse_retract` raises).

    Parameters
    ----------
    values : {"closed_form", "geomstats"}
        See :class:`GeomstatsManifold`.

    Notes
    -----
    Argument checks (the rules of every :class:`Manifold`): the primitives
    refuse points not of shape ``(..., 3)`` and tangent vectors not of shape
    ``(..., 2)`` in every call; in eager calls ``retract``,
    ``inverse_retract`` and the fused Jacobian methods also refuse a concrete
    point whose norm is not 1 (``| |q| - 1 | > 1e-6``; members with NaN
    entries pass). Traced calls check shapes only.

    Human coordinates are ``(polar, azimuth)``: the angle from ``+z`` in
    ``[0, pi]`` and the longitude in ``(-pi, pi]``.

    The frame switches charts on the circles ``|z| = 1/sqrt(2)``; it is
    discontinuous there (a continuous frame of ``S^2`` does not exist), so
    ``J0`` and ``J_q`` -- derivatives along the frame at the moving point --
    change abruptly across them. :meth:`random_point` keeps a distance of
    ``1e-3`` (in ``|z|``) from the switch, so that finite-difference checks
    never straddle it.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> S = md.Sphere2()
    >>> north = np.array([0.0, 0.0, 1.0])
    >>> q1 = S.retract(north, np.array([np.pi / 2, 0.0]))        # a quarter of a great circle
    >>> round(float(np.linalg.norm(q1)), 12), round(float(q1 @ north), 12)
    (1.0, 0.0)
    >>> np.allclose(S.inverse_retract(north, q1), [np.pi / 2, 0.0])
    True
    """

    def __init__(self, values: str = "closed_form") -> None:
        super().__init__(_frame_of, sphere_exp, sphere_log, dim=2, ambient_dim=3, space=_hypersphere2,
                         values=values, name="Sphere2")
        self.coordinate_names = ("polar", "azimuth")

    def __repr__(self) -> str:
        return "Sphere2()" if self.values == "closed_form" else f"Sphere2(values={self.values!r})"

    def retract_with_jacobians(self, q, xi):
        """``(q1, J_q, J_xi)`` in closed form: :func:`sphere_retract_with_jacobians`."""
        q, xi = jnp.asarray(q, dtype=float), jnp.asarray(xi, dtype=float)
        batch = jnp.broadcast_shapes(q.shape[:-1], xi.shape[:-1])
        q1, Jq, Jxi = sphere_retract_with_jacobians(jnp.broadcast_to(q, (*batch, 3)), jnp.broadcast_to(xi, (*batch, 2)))
        return (self.retract(q, xi) if self.values == "geomstats" else q1), Jq, Jxi

    def retract_with_inverse_jacobians(self, q0, xi):
        """``(q1, J0, J1)`` in closed form: :func:`sphere_retract_with_inverse_jacobians`."""
        q0, xi = jnp.asarray(q0, dtype=float), jnp.asarray(xi, dtype=float)
        batch = jnp.broadcast_shapes(q0.shape[:-1], xi.shape[:-1])
        q1, J0, J1 = sphere_retract_with_inverse_jacobians(jnp.broadcast_to(q0, (*batch, 3)),
                                                           jnp.broadcast_to(xi, (*batch, 2)))
        return (self.retract(q0, xi) if self.values == "geomstats" else q1), J0, J1

    def random_point(self, rng, batch_shape=()):
        def draw():
            x = rng.standard_normal((*batch_shape, 3))
            return x / np.linalg.norm(x, axis=-1, keepdims=True)

        x = draw()
        near = np.abs(np.abs(x[..., 2]) - _INV_SQRT2) < _CHART_BAND
        while np.any(near):  # resample the (rare) points next to the chart switch
            x = np.where(near[..., None], draw(), x)
            near = np.abs(np.abs(x[..., 2]) - _INV_SQRT2) < _CHART_BAND
        return jnp.asarray(x)

    def sample_tangent(self, rng, batch_shape, regime):
        if regime in ("near_singular", "generic"):
            d = rng.standard_normal((*batch_shape, 2))
            d /= np.linalg.norm(d, axis=-1, keepdims=True)
            if regime == "near_singular":  # near the antipode; conditioning ~ 1/(pi - |xi|)
                r = np.pi - 10.0 ** rng.uniform(-3, -1.5, batch_shape)
            else:  # well inside the injectivity radius pi
                r = rng.uniform(0.1, 2.5, batch_shape)
            return jnp.asarray(r[..., None] * d)
        return super().sample_tangent(rng, batch_shape, regime)

    def _domain_violations(self, method, given):
        """Eager: the inverse retraction and the inverse Jacobians refuse the antipode and its ``1e-8`` neighbourhood.

        ``log_{q0}(q1)`` is not defined at ``q1 = -q0`` and its direction is
        lost to round-off near it (relative error ``eps/(pi - angle)``); the
        inverse Jacobians, derivatives of that logarithm, blow up there.
        """
        if method == "inverse_retract":
            q0, q1 = np.broadcast_arrays(given["q0"], given["q1"])
            angle = np.arctan2(np.linalg.norm(np.cross(q0, q1), axis=-1), np.sum(q0 * q1, axis=-1))
            what = "q1 is {} rad from q0"
        elif method == "retract_with_inverse_jacobians":
            with np.errstate(over="ignore"):  # |xi| = inf is refused all the same
                angle = np.linalg.norm(given["xi"], axis=-1)
            what = "|xi| = {}: R_q0(xi) is that far from q0"
        else:
            return []
        bad = angle > _SPHERE_MAX_ANGLE
        if not np.any(bad):
            return []
        return [(bad, what.format(first_member(angle, bad)) + "; the inverse retraction of Sphere2 (the sphere's "
                 "logarithm) is not defined at the antipode, angle pi, and is computed for angles up to "
                 f"pi - 1e-8 = {_SPHERE_MAX_ANGLE:.10g}")]

    def _check_values(self, where: str, name: str, q: object) -> None:
        a = concrete_array(q)
        if a is None or a.size == 0:
            return
        err = np.abs(np.linalg.norm(a, axis=-1) - 1.0)
        bad = np.isfinite(err) & (err > VALUE_ATOL)  # failed batch members (NaN) pass through
        if np.any(bad):
            raise ValueError(
                f"{where}: {name} is not on the unit sphere (Sphere2) at batch index {first_index(bad)}: "
                f"| |q| - 1 | = {float(np.max(err[bad])):.3e} > {VALUE_ATOL:.0e}. Pass unit vectors "
                "(Sphere2().check_point validates one); this check runs in eager calls only"
            )

    def check_point(self, q: object, atol: float = 1e-9, name: str = "q") -> jax.Array:
        return jnp.asarray(self._check_point_host(q, atol, name))

    def _check_point_host(self, q: object, atol: float = 1e-9, name: str = "q") -> np.ndarray:
        a = np.asarray(q, dtype=float)
        if a.ndim < 1 or a.shape[-1] != 3:
            raise ValueError(f"{name}: a point of Sphere2 is a unit 3-vector, shape (..., 3), got {a.shape}")
        bad = ~np.all(np.isfinite(a), axis=-1)
        if np.any(bad):
            raise ValueError(
                f"{name}: non-finite entries in a point of Sphere2 at batch index {first_index(bad)}"
            )
        err = np.abs(np.linalg.norm(a, axis=-1) - 1.0)
        if np.any(err > atol):
            raise ValueError(
                f"{name}: not on the unit sphere (Sphere2) at batch index {first_index(err > atol)}: "
                f"| |q| - 1 | = {float(np.max(err)):.3e} > atol = {atol:.1e}"
            )
        return a

    def to_coordinates(self, q):
        """``(polar, azimuth)``, ``(*batch, 2)``: polar in ``[0, pi]``, azimuth in ``(-pi, pi]``.

        Concrete input is converted in NumPy (eager ``jax.numpy`` would compile
        a program per operation and shape), traced input in ``jax.numpy``.
        """
        a = concrete_array(q)
        xp, q = (jnp, jnp.asarray(q, dtype=float)) if a is None else (np, a)
        polar = xp.arctan2(xp.hypot(q[..., 0], q[..., 1]), q[..., 2])
        c = xp.stack([polar, xp.arctan2(q[..., 1], q[..., 0])], -1)
        return c if a is None else jax.device_put(c)

    def from_coordinates(self, c):
        """The unit vector with ``(polar, azimuth)`` ``(*batch, 2)``.

        Concrete input is converted in NumPy (eager ``jax.numpy`` would compile
        a program per operation and shape), traced input in ``jax.numpy``.
        """
        a = concrete_array(c)
        xp, c = (jnp, jnp.asarray(c, dtype=float)) if a is None else (np, a)
        if tuple(c.shape[-1:]) != (2,):
            raise ValueError(
                f"Sphere2.from_coordinates: coordinates are (..., 2) = (polar, azimuth), got shape {tuple(c.shape)}"
            )
        th, ph = c[..., 0], c[..., 1]
        with np.errstate(all="ignore"):  # (NumPy) as the compiled path: non-finite angles give NaN, silently
            q = xp.stack([xp.sin(th) * xp.cos(ph), xp.sin(th) * xp.sin(ph), xp.cos(th)], -1)
        return q if a is None else jax.device_put(q)
