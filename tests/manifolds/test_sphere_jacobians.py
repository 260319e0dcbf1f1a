"""Sphere2's retraction Jacobians in closed form equal the forward-mode derivatives of its closed forms.

``Sphere2.retract_with_jacobians`` and ``retract_with_inverse_jacobians``
are written out (``_manifolds/sphere.py``) instead of taken by forward-mode
autodiff of ``exp``/``log`` along the frame (the generic
:class:`GeomstatsManifold` route, kept as the reference here): a Newton
Jacobian then differentiates them once instead of the closed forms twice,
and the spherical pendulum's step loop is about half the program it was.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._manifolds import sphere as SP
from manifold_dirac._manifolds.geomstats_adapter import GeomstatsManifold

S = md.Sphere2()
RADII = (0.0, 1e-9, 1e-5, 0.03, 0.5, 1.5, 2.2, 3.0)  # through the series' thresholds and the log's back branch


def _cases(n_per_radius: int = 12, seed: int = 0):
    rng = np.random.default_rng(seed)
    q = np.asarray(S.random_point(rng, (len(RADII) * n_per_radius,)))
    d = rng.standard_normal((len(q), 2))
    d /= np.linalg.norm(d, axis=-1, keepdims=True)
    r = np.repeat(RADII, n_per_radius)
    return q, r[:, None] * d


def _autodiff_eager(q, xi):
    a = GeomstatsManifold.retract_with_jacobians(S, q, xi)
    b = GeomstatsManifold.retract_with_inverse_jacobians(S, q, xi)
    return {"q1": a[0], "Jq": a[1], "Jxi": a[2], "J0": b[1], "J1": b[2]}


def _closed_eager(q, xi):
    a = S.retract_with_jacobians(q, xi)
    b = S.retract_with_inverse_jacobians(q, xi)
    return {"q1": a[0], "Jq": a[1], "Jxi": a[2], "J0": b[1], "J1": b[2]}


# compiled once per shape (eager JAX compiles a program per operation); a new lambda traces again, which the
# sensitivity test needs after it patches the module
_autodiff, _closed = jax.jit(_autodiff_eager), jax.jit(_closed_eager)


def _worst(x, y):
    return {k: float(np.max(np.abs(np.asarray(x[k]) - np.asarray(y[k])))) for k in x}


@pytest.fixture(scope="module")
def cases():
    q, xi = _cases()
    return q, xi, _autodiff(q, xi)


@pytest.mark.slow
def test_the_closed_forms_equal_the_forward_mode_derivatives(cases):
    q, xi, ref = cases
    got = _closed(q, xi)
    worst = _worst(got, ref)
    assert worst["q1"] == 0.0, worst  # the same value as the adapter's retraction, in the same program
    assert max(worst.values()) < 5e-14, worst
    np.testing.assert_allclose(np.asarray(got["q1"]), np.asarray(jax.jit(S.retract)(q, xi)), rtol=0, atol=2e-15)
    eager = _closed_eager(q[:3], xi[:3])  # the methods as called eagerly (with their checks): round-off apart
    assert max(_worst(eager, {k: np.asarray(v)[:3] for k, v in got.items()}).values()) < 1e-14
    # at xi = 0: J0 = -I, J1 = I, J_q = J_xi = I
    zero = np.abs(np.linalg.norm(xi, axis=-1)) == 0
    eye = np.broadcast_to(np.eye(2), (int(zero.sum()), 2, 2))
    np.testing.assert_allclose(np.asarray(got["J0"])[zero], -eye, atol=1e-15)
    for k in ("J1", "Jq", "Jxi"):
        np.testing.assert_allclose(np.asarray(got[k])[zero], eye, atol=1e-15)


@pytest.mark.slow
def test_both_charts_and_batch_shapes():
    rng = np.random.default_rng(3)
    polar, equator = np.array([0.1, 0.2, 0.97]), np.array([0.9, 0.3, 0.1])
    q = np.stack([polar / np.linalg.norm(polar), equator / np.linalg.norm(equator)])
    assert np.abs(q[0, 2]) > 1 / np.sqrt(2) > np.abs(q[1, 2])  # one point in each chart
    xi = rng.uniform(-1.5, 1.5, (4, 2, 2))  # a batch (4, 2) against q (2, 3): broadcast; |xi| < pi
    got, ref = _closed(q, xi), _autodiff(q, xi)
    assert np.asarray(got["Jq"]).shape == (4, 2, 2, 2) and np.asarray(got["q1"]).shape == (4, 2, 3)
    assert max(_worst(got, ref).values()) < 5e-14


@pytest.mark.slow
def test_derivatives_through_the_closed_forms_are_finite_and_agree(cases):
    """A Newton Jacobian differentiates the Jacobians: forward mode through both routes, small angles included."""
    q, xi, _ = cases

    def total(route):
        def f(x):
            out = route(q, x)
            return jnp.sum(out["J0"] + 2 * out["J1"]) + jnp.sum(out["Jq"] * out["Jxi"])
        return f

    d = jnp.asarray(np.random.default_rng(1).standard_normal(xi.shape))
    _, got = jax.jvp(total(_closed), (jnp.asarray(xi),), (d,))
    _, ref = jax.jvp(total(_autodiff), (jnp.asarray(xi),), (d,))
    assert np.isfinite(float(got)) and abs(float(got) - float(ref)) < 1e-11 * max(1.0, abs(float(ref)))


@pytest.mark.parametrize("bug", ["frame_derivative", "log_factor_h", "sinc_term"])
def test_the_comparison_sees_a_wrong_term(cases, bug, monkeypatch):
    """Sensitivity: each term of the closed forms, left out, breaks the equality above."""
    q, xi, ref = cases
    if bug == "frame_derivative":
        real = SP._frame_derivatives
        monkeypatch.setattr(SP, "_frame_derivatives", lambda q: (real(q)[0], 0 * real(q)[1]))
    elif bug == "log_factor_h":
        real_log = SP._log_factors
        monkeypatch.setattr(SP, "_log_factors", lambda a, b: (*real_log(a, b)[:3], 1.01 * real_log(a, b)[3]))
    else:
        real_cs = SP._cos_sinc_of_sq
        monkeypatch.setattr(SP, "_cos_sinc_of_sq", lambda t2: (real_cs(t2)[0], real_cs(t2)[1] * (1 + 1e-9)))
    assert max(_worst(jax.jit(lambda a, b: _closed_eager(a, b))(q, xi), ref).values()) > 1e-11


def _ops(f, *args) -> int:
    return len(re.findall(r'= "?stablehlo\.', jax.jit(f).lower(*args).as_text()))


def test_a_newton_jacobian_through_them_is_a_smaller_program():
    """Why they exist: the forward-mode Jacobian of a function of the Jacobians (as Newton takes it) is a
    program less than half the size of the one through the autodiff route."""
    q = jnp.asarray(np.array([0.3, 0.4, np.sqrt(1 - 0.25)]))

    def residual(route):
        def r(x):
            a, b = route(q, x), route(q, 0.5 * x)
            return a["J0"] @ x + a["J1"].T @ x + b["Jq"] @ x + b["Jxi"].T @ x
        return jax.jacfwd(r)

    x = jnp.array([0.2, -0.1])
    closed, auto = _ops(residual(_closed), x), _ops(residual(_autodiff), x)
    assert closed < 0.5 * auto, (closed, auto)


@pytest.mark.parametrize("offset", [-1e-12, 0.0, 1e-12])
def test_newton_derivatives_are_accurate_where_the_log_changes_formula(offset):
    """At a right angle (``c = q0 . q1 -> 0``) the log's front formula (through ``z = s / c``) loses its
    derivatives (terms of order ``1/c^2`` that cancel: an error ~ ``eps/c``, 5.7e-4 at ``pi/2 - 1e-12``); the
    front formula is used only for angles below ``pi/4``, so the forward-mode derivative of the inverse Jacobians
    agrees with central differences of their (accurate) values."""
    q = jnp.asarray(np.array([0.3, 0.4, np.sqrt(0.75)]))
    d = np.array([0.6, 0.8])
    xi = jnp.asarray((np.pi / 2 + offset) * d)

    def inverse_jacobians(x):
        _, J0, J1 = SP.sphere_retract_with_inverse_jacobians(q, x)
        return jnp.stack([J0, J1])

    f = jax.jit(inverse_jacobians)
    auto = np.asarray(jax.jit(jax.jacfwd(inverse_jacobians))(xi))
    e = 1e-6
    fd = np.stack([(np.asarray(f(xi + e * u)) - np.asarray(f(xi - e * u))) / (2 * e) for u in np.eye(2)], -1)
    assert np.all(np.isfinite(auto)) and np.max(np.abs(auto - fd)) < 1e-7, np.max(np.abs(auto - fd))
