"""Derivatives of every order through a solve inside a loop (``manifold_dirac._run.implicit``).

A Newton solve ``z(x)`` of ``z^2 = x`` from a guess carried by a ``lax.scan``
(the guess is the solution: no update is made, as a warm-started step that
accepts its start) must have the derivatives of ``sqrt`` at every order, in
forward, reverse and mixed modes, under ``vmap`` too. ``jax.custom_jvp``
loses its rule there at the second order (JAX inlines its primal, Newton's
loop, whose derivative from an accepted start is zero); the primitive keeps
it. Sensitivity: a rule that computes its primal outputs by the solve itself
(not by calling the primitive again) gives that zero.

Then the library's own solve: rollouts of a free rigid body turning about a
principal axis, whose every step accepts its (warm) start, plain and composed;
their Hessians against central differences of the gradient.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac import rollout
from manifold_dirac._run import implicit
from manifold_dirac.systems.catalog import EXAMPLES


def _newton(static, z0, x):
    """Newton's iteration for ``z^2 = x`` from ``z0`` (none from an exact start)."""
    return jax.lax.while_loop(lambda z: jnp.abs(z * z - x) > 1e-15 * x, lambda z: z - (z * z - x) / (2 * z), z0)


def _sqrt_jvp(static, primals, tangents):
    z0, x = primals
    z = implicit.call(_newton, _sqrt_jvp, static, z0, x)
    return z, tangents[1] / (2 * z)


def _sqrt_jvp_detached(static, primals, tangents):
    """The wrong rule: the primal by the solve itself, so that the next order differentiates Newton's loop."""
    z0, x = primals
    z = _newton(static, z0, x)
    return z, tangents[1] / (2 * z)


@jax.custom_jvp
def _sqrt_custom_jvp(z0, x):
    return _newton(None, z0, x)


@_sqrt_custom_jvp.defjvp
def _sqrt_custom_jvp_rule(primals, tangents):
    z0, x = primals
    z = _sqrt_custom_jvp(z0, x)  # the primal through the function itself, as JAX's docs ask
    return z, tangents[1] / (2 * z)


SOLVES = {
    "primitive": lambda z0, x: implicit.call(_newton, _sqrt_jvp, None, z0, x),
    "primitive, detached rule": lambda z0, x: implicit.call(_newton, _sqrt_jvp_detached, None, z0, x),
    "custom_jvp": _sqrt_custom_jvp,
}


def cube_of_sqrt(solve):
    """``x -> sqrt(x)^3`` on the second of two scan steps, each solve started from the carried last solution."""
    def f(x):
        def body(guess, _):
            z = solve(jax.lax.stop_gradient(guess), x)
            return jax.lax.stop_gradient(z), z ** 3
        return jax.lax.scan(body, jnp.sqrt(x), None, length=2)[1][-1]
    return f


X = jnp.array([2.0, 3.0, 5.0])
D1, D2, D3 = 1.5 * X ** 0.5, 0.75 * X ** -0.5, -0.375 * X ** -1.5  # derivatives of x^(3/2)


def test_the_primitive_gives_every_order_in_every_mode():
    f = cube_of_sqrt(SOLVES["primitive"])
    g = jax.grad(f)
    x = X[0]
    orders = jax.jit(lambda x: (f(x), g(x), jax.grad(g)(x), jax.jvp(g, (x,), (1.0,))[1], jax.hessian(f)(x),
                                jax.jacrev(jax.jacfwd(f))(x), jax.grad(jax.grad(g))(x),
                                jax.jacfwd(jax.jacrev(jax.jacfwd(f)))(x)))(x)
    np.testing.assert_allclose(orders[:2], (x ** 1.5, D1[0]), rtol=1e-14)
    np.testing.assert_allclose(orders[2:6], D2[0], rtol=1e-13)
    np.testing.assert_allclose(orders[6:], D3[0], rtol=1e-12)


def test_the_primitive_batches_at_every_order():
    f = cube_of_sqrt(SOLVES["primitive"])
    XX = X[:, None] * jnp.ones((1, 2))
    d1, d2, d2_jit, d2_of_sum, d2_nested = jax.jit(lambda X, XX: (
        jax.vmap(jax.grad(f))(X), jax.vmap(jax.hessian(f))(X), jax.vmap(jax.jacfwd(jax.grad(f)))(X),
        jnp.diag(jax.hessian(lambda x: jnp.sum(jax.vmap(f)(x)))(X)),  # the batch inside the derivative
        jax.vmap(jax.vmap(jax.hessian(f)))(XX)))(X, XX)  # a batch of batches
    np.testing.assert_allclose(d1, D1, rtol=1e-14)
    for d in (d2, d2_jit, d2_of_sum):
        np.testing.assert_allclose(d, D2, rtol=1e-13)
    np.testing.assert_allclose(d2_nested, D2[:, None] * jnp.ones((1, 2)), rtol=1e-13)
    # batch axes elsewhere than 0: x along axis 1 of a (2, 3) array
    np.testing.assert_allclose(jax.vmap(jax.vmap(jax.hessian(f)), in_axes=1, out_axes=1)(XX.T), D2[None, :] * jnp.ones((2, 1)),
                               rtol=1e-13)


def test_a_rule_that_does_not_call_the_primitive_again_loses_the_second_order():
    """Sensitivity: the same checks catch a rule whose primal is Newton's loop (its derivative from an accepted
    start is zero); its first derivative is still right."""
    f = cube_of_sqrt(SOLVES["primitive, detached rule"])
    assert abs(jax.grad(f)(X[0]) - D1[0]) < 1e-14 * D1[0]
    assert jax.jvp(jax.grad(f), (X[0],), (1.0,))[1] == 0.0


def test_why_not_custom_jvp():
    """The reason for the primitive (JAX 0.10): inside ``lax.scan``, ``jax.custom_jvp``'s rule is dropped at the
    second order in forward-over-reverse mode; reverse-over-reverse differentiates Newton's ``while_loop`` and is
    refused. Skipped, with a note, once JAX keeps the rule (the primitive may then go)."""
    f = cube_of_sqrt(SOLVES["custom_jvp"])
    assert abs(jax.grad(f)(X[0]) - D1[0]) < 1e-14 * D1[0]  # the first order is right
    second = jax.jvp(jax.grad(f), (X[0],), (1.0,))[1]
    if abs(second - D2[0]) < 1e-13 * D2[0]:
        pytest.skip(f"jax {jax.__version__} keeps custom_jvp's rule here: manifold_dirac._run.implicit may go")
    assert second == 0.0


# ------------------------------------------------------------------ rollouts whose steps accept their starts
@pytest.mark.parametrize("composition", [None, "triple_jump4"])
@pytest.mark.slow
def test_rollout_hessian_when_every_step_accepts_its_start(composition):
    """A free rigid body turning about a principal axis: every step's warm start is its solution (0 Newton
    updates), where the second derivatives were zero before the primitive (error 162, the Hessian's size). The
    Hessian's columns (forward over reverse) against central differences of the gradient, one compiled program
    giving both."""
    ex = EXAMPLES["free_rigid_body"]
    sysm = ex.system("exp")
    q0, _ = ex.initial(sysm)
    v0 = jnp.array([0.0, 0.0, 1.0])

    def L(v):
        r = rollout(sysm, q0, v, h=0.1, n_steps=3, composition=composition)
        return jnp.sum(r.p[-1] ** 3) + jnp.sum(r.q[-1] ** 2 * jnp.arange(1.0, 10.0).reshape(3, 3))

    assert np.all(np.asarray(rollout(sysm, q0, v0, h=0.1, n_steps=3, composition=composition).iterations)[1:] == 0)
    grad_and_column = jax.jit(lambda v, d: jax.jvp(jax.grad(L), (v,), (d,)))
    e = 1e-5
    for d in np.eye(3):
        column = np.asarray(grad_and_column(v0, d)[1])
        fd = (np.asarray(grad_and_column(v0 + e * d, d)[0]) - np.asarray(grad_and_column(v0 - e * d, d)[0])) / (2 * e)
        assert np.max(np.abs(column - fd)) < 1e-8 * max(1.0, np.max(np.abs(fd))), (d, column, fd)
    assert np.max(np.abs(fd)) > 1.0  # the last column: the discriminating one (162 where the rule was lost)


class _Static:
    """A hashable ``static`` that takes weak references (as a step map does)."""


def test_a_traced_function_does_not_keep_its_static_alive():
    """The traces are cached per ``static`` (a step map, and through it a system): dropped with it. Sensitivity: the
    cache holds an entry while the static lives."""
    import gc
    import weakref

    static = _Static()
    assert implicit.call(_newton, _sqrt_jvp, static, jnp.sqrt(2.0), 2.0) == jnp.sqrt(2.0)
    assert static in implicit._TRACED
    ref = weakref.ref(static)
    del static
    gc.collect()
    assert ref() is None


@pytest.mark.slow
def test_a_step_the_primitive_cannot_hold_falls_back_to_a_custom_jvp():
    """A Lagrangian with ``jax.debug.callback`` (a side effect), and a system closing over a value traced by an
    outer ``jax.jit``/``jax.vmap``: the primitive refuses them (``implicit.Unsupported``) and the step runs as a
    ``jax.custom_jvp``, as before the primitive, with the same first derivative."""
    from manifold_dirac import LagrangeDiracSystem
    from manifold_dirac._manifolds import Euclidean

    calls = []

    def L(q, v, p):
        jax.debug.callback(lambda: calls.append(1))
        return 0.5 * v[0] ** 2 + p["k"] * jnp.cos(q[0])

    noisy = LagrangeDiracSystem(Euclidean(1), L, name="with a callback", params={"k": np.float64(9.81)})
    quiet = LagrangeDiracSystem(Euclidean(1), lambda q, v, p: 0.5 * v[0] ** 2 + p["k"] * jnp.cos(q[0]),
                                name="without", params={"k": np.float64(9.81)})

    def final(s, v):
        return rollout(s, jnp.array([0.3]), v, h=0.05, n_steps=3).q[-1, 0]

    v = jnp.array([0.1])
    assert final(noisy, v) == final(quiet, v) and calls
    np.testing.assert_allclose(jax.grad(lambda v: final(noisy, v))(v), jax.grad(lambda v: final(quiet, v))(v), rtol=1e-14)

    def J(a):  # the system closes over ``a``: a value traced by an outer jit or vmap
        s = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v[0] ** 2 + a * jnp.cos(q[0]), name="closing")
        return rollout(s, jnp.array([0.3]), jnp.array([0.1]), h=0.05, n_steps=3).q[-1, 0]

    np.testing.assert_allclose(jax.jit(J)(9.81), final(quiet, v), rtol=1e-14)
    np.testing.assert_allclose(jax.vmap(J)(jnp.array([9.81, 4.0])), [final(quiet, v), J(4.0)], rtol=1e-14)
    np.testing.assert_allclose(jax.jit(jax.grad(lambda v: final(noisy, v)))(v), jax.grad(lambda v: final(quiet, v))(v),
                               rtol=1e-14)
