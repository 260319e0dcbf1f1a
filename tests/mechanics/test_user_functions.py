"""User functions of the wrong shape or type are refused when the system is built.

:class:`LagrangeDiracSystem` traces each user function once with
``jax.eval_shape`` (nothing is compiled: these tests are quick). Every
message names the function, the shape expected and the shape (or type)
returned; a wrong shape is a ``ValueError``, a wrong type (None, a dict,
complex, integer values) a ``TypeError`` -- never an error from inside the
library (a broadcast, a gufunc, an SVD).

Values cannot be seen by a trace: a constraint that is NaN at ``q0`` is
caught at the initial state (last test).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac._manifolds import SO3, Euclidean, ProductManifold
from manifold_dirac._mechanics.system import LagrangeDiracSystem

E2 = Euclidean(2)


def L2(q, v):
    return 0.5 * jnp.sum(v * v) - 0.5 * jnp.sum(q * q)


_CASES = {
    # name: (keyword arguments of LagrangeDiracSystem(E2, ...), exception, message)
    "force of the wrong length": (
        {"force": lambda t, q, v: jnp.zeros(3)}, ValueError,
        (r"the force F\(t, q, v\) must return a covector of shape \(2,\) for one point \(frame coordinates\), "
        r"got shape \(3,\)$")),
    "force a scalar": (
        {"force": lambda t, q, v: -v[0]}, ValueError,
        r"the force F\(t, q, v\) must return a covector of shape \(2,\) .*got shape \(\); build it with jnp\.array"),
    "force a row": ({"force": lambda t, q, v: v[None, :]}, ValueError, r"the force F\(t, q, v\) .*got shape \(1, 2\)"),
    "force None": (
        {"force": lambda t, q, v: None}, TypeError,
        r"the force F\(t, q, v\) must return a covector of shape \(2,\) for one point, got None"),
    "force a dict": ({"force": lambda t, q, v: {"f": v}}, TypeError, r"the force F\(t, q, v\) .*got dict"),
    "force complex": (
        {"force": lambda t, q, v: v + 1j}, TypeError,
        r"the force F\(t, q, v\) must return real values, got dtype complex128"),
    "force integer": (
        {"force": lambda t, q, v: jnp.zeros(2, dtype=int)}, TypeError,
        r"the force F\(t, q, v\) must return real floating-point values, got dtype int64"),
    "constraint a vector": (
        {"constraint": lambda q: jnp.array([1.0, q[0]])}, ValueError,
        (r"the constraint A\(q\) must return an \(m, 2\) array of one-forms for one point \(m constraints, 2 frame "
        r"coordinates\), got shape \(2,\); for one constraint return shape \(1, 2\)")),
    "constraint of the wrong width": (
        {"constraint": lambda q: jnp.zeros((1, 3))}, ValueError, r"the constraint A\(q\) must return an \(m, 2\) .*got shape \(1, 3\)$"),
    "constraint None": ({"constraint": lambda q: None}, TypeError, r"the constraint A\(q\) must return an \(m, 2\) .*got None"),
    "constraint complex": (
        {"constraint": lambda q: jnp.zeros((1, 2)) + 1j}, TypeError,
        r"the constraint A\(q\) must return real values, got dtype complex128"),
    "constant constraint with NaN": (
        {"constraint": np.array([[1.0, np.nan]])}, ValueError, r"constraint: non-finite entries in the one-forms"),
    "partials of the wrong shape": (
        {"partials": lambda q, v: (jnp.zeros(3), v)}, ValueError,
        (r"the analytic partials\(q, v\) must return a pair \(dL/dq, dL/dv\) of arrays of shape \(2,\) each, "
        r"got shapes \(3,\) and \(2,\)")),
    "partials one array": (
        {"partials": lambda q, v: v}, TypeError, r"the analytic partials\(q, v\) must return a pair .*got shape \(2,\)$"),
    "partials a triple": (
        {"partials": lambda q, v: (q, v, v)}, TypeError, r"the analytic partials\(q, v\) must return a pair .*got tuple of length 3"),
    "partials with None": (
        {"partials": lambda q, v: (None, v)}, TypeError, r"the analytic partials\(q, v\) .*got a pair of None and shape \(2,\)"),
    "partials complex": (
        {"partials": lambda q, v: (-q, v + 0j)}, TypeError,
        r"the analytic partials\(q, v\) must return real values, got dtype complex128 for dL/dv"),
    "Lagrangian a vector": (
        {"lagrangian": lambda q, v: 0.5 * v * v}, ValueError,
        (r"the Lagrangian L\(q, v\) must return a scalar \(shape \(\)\) for one point \(q, v\), got shape \(2,\); "
        r"write L for a single point")),
    "Lagrangian of shape (1,)": ({"lagrangian": lambda q, v: jnp.sum(v * v)[None]}, ValueError, r"must return a scalar .*got shape \(1,\)"),
    "Lagrangian None": ({"lagrangian": lambda q, v: None}, TypeError, r"the Lagrangian L\(q, v\) must return a scalar .*got None"),
    "Lagrangian complex": (
        {"lagrangian": lambda q, v: jnp.sum(v * v) + 0j}, TypeError,
        r"the Lagrangian L\(q, v\) must return real values, got dtype complex128"),
    "Lagrangian an integer": (
        {"lagrangian": lambda q, v: jnp.sum(jnp.ones(2, dtype=int))}, TypeError,
        r"the Lagrangian L\(q, v\) must return real floating-point values, got dtype int64"),
}


@pytest.mark.parametrize("case", list(_CASES))
def test_a_user_function_of_the_wrong_shape_or_type_is_refused_at_construction(case):
    kwargs, exc, message = _CASES[case]
    kwargs = {"lagrangian": L2, **kwargs}
    with pytest.raises(exc, match=message):
        LagrangeDiracSystem(E2, **kwargs)


def test_the_messages_use_the_manifolds_dimension_and_params():
    """On SO(3) x R^2 (dim 5), with params: the expected shape is (5,), the functions get params."""
    P = ProductManifold(SO3(), Euclidean(2))

    def L(q, v, k):
        return 0.5 * jnp.sum(v * v) - k * q[1][0] ** 2

    ok = LagrangeDiracSystem(P, L, force=lambda t, q, v, k: -k * v, params=1.5)
    assert ok.dim == 5 and ok.has_force
    with pytest.raises(ValueError, match=r"the force F\(t, q, v\) must return a covector of shape \(5,\) .*got shape \(3,\)"):
        LagrangeDiracSystem(P, L, force=lambda t, q, v, k: -k * v[:3], params=1.5)
    with pytest.raises(ValueError, match=r"the constraint A\(q\) must return an \(m, 5\) array .*got shape \(2, 3\)"):
        LagrangeDiracSystem(P, L, constraint=lambda q, k: k * q[0][:2], params=1.5)


def test_array_likes_that_the_library_converts_are_accepted():
    """A list or tuple of scalars is an array (the library converts outputs with jnp.asarray);
    a Python float Lagrangian is a float64 scalar; an empty constraint (0, n) is no constraint."""
    sysm = LagrangeDiracSystem(
        E2, lambda q, v: 0.5 * (v[0] ** 2 + v[1] ** 2), force=lambda t, q, v: [-v[0], -v[1]],
        constraint=lambda q: jnp.zeros((0, 2)), partials=lambda q, v: ([0.0, 0.0], (v[0], v[1])),
    )
    assert sysm.n_constraints == 0
    np.testing.assert_array_equal(np.asarray(sysm.force(0.0, jnp.zeros(2), jnp.ones(2))), [-1.0, -1.0])
    np.testing.assert_array_equal(np.asarray(sysm.partials(jnp.zeros(2), jnp.array([1.0, 2.0]))[1]), [1.0, 2.0])
    LagrangeDiracSystem(E2, lambda q, v: 0.0 * v[0] + 1.0)


def test_an_error_inside_a_user_function_is_annotated_with_the_function_and_the_probe():
    def force(t, q, v):
        return jnp.dot(jnp.ones((3, 3)), v)  # a (3, 3) matrix on a 2-dimensional manifold

    with pytest.raises(TypeError, match="dot_general requires contracting dimensions") as info:
        LagrangeDiracSystem(E2, L2, force=force)
    assert any(
        "raised by the force F(t, q, v), traced once when the LagrangeDiracSystem was built, for one point: "
        "q the default point of Euclidean(2), v of shape (2,), t = 0.0" in note
        for note in getattr(info.value, "__notes__", [])
    )


def test_untraceable_functions_still_say_what_to_change():
    with pytest.raises(TypeError, match=r"the constraint A\(q\) cannot be traced by JAX .*jax\.numpy"):
        LagrangeDiracSystem(E2, L2, constraint=lambda q: np.array([[float(q[0]), 1.0]]))
    with pytest.raises(TypeError, match=r"the force F\(t, q, v\) cannot be traced by JAX"):
        LagrangeDiracSystem(E2, L2, force=lambda t, q, v: v if v[0] > 0 else -v)


def test_a_constraint_that_is_nan_at_q0_is_refused_at_the_initial_state_naming_it():
    from manifold_dirac._run.integrate import integrate

    sysm = LagrangeDiracSystem(E2, L2, constraint=lambda q: jnp.stack([jnp.log(q[0]), 1.0])[None, :])
    with pytest.raises(ValueError, match=r"the constraint A\(q\) .* not finite at q0 \(batch index \[\]\)"):
        integrate(sysm, np.array([-1.0, 0.5]), v0=np.zeros(2), h=0.1, n_steps=2)


def test_constraint_one_forms_dependent_at_q0_are_refused_at_every_start():
    """The rank of A(q0) is checked at each start (its singular values come from the compiled start): the
    rows (1, 0), (0, q_0) are independent at q_0 = 1 (accepted) and dependent at q_0 = 0 (refused), by
    the same integrator after a good start, for one point and in a batch."""
    from manifold_dirac._run.integrator import Integrator

    sysm = LagrangeDiracSystem(E2, L2, constraint=lambda q: jnp.array([[1.0, 0.0], [0.0, q[0]]]))
    integ = Integrator(sysm, 0.1)
    integ.initial_state(np.array([1.0, 0.5]), v0=np.zeros(2))
    with pytest.raises(ValueError, match=r"linearly dependent at q0 \(rank 1 < 2 rows; smallest singular value "
                                         r"0\.00e\+00\)"):
        integ.initial_state(np.array([0.0, 0.5]), v0=np.zeros(2))
    integ.initial_state(np.array([[1.0, 0.5], [2.0, 0.5]]), v0=np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"linearly dependent at q0 \(rank 1 < 2"):
        integ.initial_state(np.array([[1.0, 0.5], [0.0, 0.5]]), v0=np.zeros((2, 2)))
