"""Bad input: every validation error has the right type and says what, where, how much."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac._manifolds import (
    SE2,
    SO3,
    Euclidean,
    GeomstatsManifold,
    ProductManifold,
    ProductRetraction,
    RetractionDomainError,
    Sphere2,
)


def _rot_z(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# --------------------------------------------------------------------- SO3
def test_so3_non_rotation_says_where_and_by_how_much():
    R = np.broadcast_to(np.eye(3), (2, 3, 3, 3)).copy()
    R[1, 2, 0, 1] = 1e-3
    with pytest.raises(
        ValueError,
        match=r"R0: not a rotation matrix \(SO3\) at batch index \[1, 2\]: "
        r"\|R\^T R - I\| = 1\.414e-03 > atol = 1\.0e-09",
    ):
        SO3().check_point(R, name="R0")
    with pytest.raises(ValueError, match=r"det = -1 \(a reflection\)"):
        SO3().check_point(np.diag([1.0, 1.0, -1.0]))


def test_so3_wrong_shape_and_nan():
    with pytest.raises(
        ValueError, match=r"q: a point of SO3 is an array of shape \(\.\.\., 3, 3\), got shape \(3, 4\)"
    ):
        SO3().check_point(np.zeros((3, 4)))
    R = np.broadcast_to(np.eye(3), (4, 3, 3)).copy()
    R[2, 1, 1] = np.nan
    with pytest.raises(ValueError, match=r"q: non-finite entries in a point of SO3 at batch index \[2\]"):
        SO3().check_point(R)


# --------------------------------------------------------------------- SE2
def test_se2_rotation_block_last_row_and_reflection():
    g = np.broadcast_to(np.eye(3), (3, 3, 3)).copy()
    g[1, 0, 1] = 0.2
    with pytest.raises(
        ValueError,
        match=r"g: not a pose \(SE2\) at batch index \[1\]: the rotation block is not a "
        r"rotation, \|R\^T R - I\| 2\.857e-01 > atol = 1\.0e-09",
    ):
        SE2().check_point(g, name="g")
    g = np.eye(3)
    g[2, 0] = 0.1
    with pytest.raises(
        ValueError,
        match=r"q: not a pose \(SE2\) at batch index \[\]: the last row is not \[0, 0, 1\], "
        r"off by 1\.000e-01",
    ):
        SE2().check_point(g)
    with pytest.raises(
        ValueError, match=r"not a pose \(SE2\) at batch index \[\]: the rotation block has det = -1"
    ):
        SE2().check_point(np.diag([1.0, -1.0, 1.0]))


def test_se2_wrong_shape_nan_and_type():
    with pytest.raises(
        ValueError, match=r"a point of SE2 is an array of shape \(\.\.\., 3, 3\), got shape \(2, 2\)"
    ):
        SE2().check_point(np.eye(2))
    g = np.broadcast_to(np.eye(3), (2, 3, 3)).copy()
    g[1, 0, 2] = np.inf
    with pytest.raises(ValueError, match=r"non-finite entries in a point of SE2 at batch index \[1\]"):
        SE2().check_point(g)
    with pytest.raises(TypeError, match="a point of SE2 is an array"):
        SE2().check_point("pose")
    SE2().check_point(SE2().from_coordinates([1.0, 2.0, 0.3]) + 1e-11)  # within atol


# ------------------------------------------------------------ retractions
@pytest.mark.parametrize(
    "factory,valid",
    [
        (SO3, "'exp', 'cayley'"),
        (SE2, "'exp', 'cayley', 'so2xr2'"),
        (lambda r: Euclidean(2, retraction=r), "'identity'"),
        (lambda r: ProductManifold(SO3(), retraction=r), "'product'"),
    ],
)
def test_unknown_retraction_lists_valid_ones(factory, valid):
    with pytest.raises(ValueError, match=rf"unknown retraction 'qr'; valid: {valid} \(add one"):
        factory("qr")


def test_a_retraction_of_another_group_is_refused():
    with pytest.raises(ValueError, match=r"SO3: retraction SO2xR2\(\) is not registered for SO3"):
        SO3(SE2("so2xr2").retraction)


def test_cayley_and_exp_domains():
    assert not bool(SE2("cayley").in_domain(np.array([1.8, 0.0, 0.0])))  # w (1 + w^2/4) > pi
    assert bool(SE2("cayley").in_domain(np.array([1.7, 1e6, -1e6])))  # the translation does not limit it
    assert not bool(SE2("exp").in_domain(np.array([np.pi, 0.0, 0.0])))
    assert not bool(SE2("so2xr2").in_domain(np.array([-3.2, 0.0, 0.0])))
    with pytest.raises(RetractionDomainError, match=r"SE2\(retraction='cayley'\)\.inverse_retract: .* a rotation by "
                                                    r"3\.141592654 rad; the inverse of the Cayley retraction"):
        SE2("cayley").checked_inverse_retract(np.eye(3), SE2().from_coordinates([0.0, 0.0, np.pi]))


# ------------------------------------------------------- other manifolds
def test_product_errors():
    P = ProductManifold(SO3(), Euclidean(2))
    with pytest.raises(
        ValueError,
        match=r"q: a point of a product of 2 manifolds is a tuple of 2 factor points, "
        r"got tuple of length 1",
    ):
        P.check_point((np.eye(3),))
    with pytest.raises(TypeError, match="is a tuple of 2 factor points, got ndarray"):
        P.check_point(np.eye(3))
    with pytest.raises(
        ValueError, match=r"q\[1\]: a point of Euclidean\(2\) has shape \(\.\.\., 2\), got shape \(3,\)"
    ):
        P.check_point((np.eye(3), np.zeros(3)))
    with pytest.raises(ValueError, match=r"q\[0\]: not a rotation matrix \(SO3\)"):
        P.check_point([2 * np.eye(3), np.zeros(2)])
    assert isinstance(P.check_point([np.eye(3), np.zeros(2)]), tuple)
    with pytest.raises(TypeError, match="one or more Manifold instances"):
        ProductManifold()
    with pytest.raises(ValueError, match="does not match the factors'"):
        ProductManifold(SO3(), Euclidean(2), retraction=ProductRetraction((SO3("cayley").retraction,)))
    with pytest.raises(
        ValueError, match=r"coordinates have length 5 \(0\.rx, 0\.ry, 0\.rz, 1\.x0, 1\.x1\), got shape \(4,\)"
    ):
        P.from_coordinates(np.zeros(4))


def test_sphere_errors():
    sphere = Sphere2()
    with pytest.raises(
        ValueError,
        match=r"not on the unit sphere \(Sphere2\) at batch index \[1\]: \| \|q\| - 1 \| = 5\.000e-02",
    ):
        sphere.check_point(np.array([[0.0, 0.0, 1.0], [0.0, 1.05, 0.0]]))
    with pytest.raises(ValueError, match=r"unit 3-vector, shape \(\.\.\., 3\), got \(2,\)"):
        sphere.check_point(np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"non-finite entries in a point of Sphere2 at batch index \[0\]"):
        sphere.check_point(np.array([[np.nan, 0.0, 1.0]]))
    with pytest.raises(
        ValueError, match=r"unknown values 'exact'; valid values are 'closed_form', 'geomstats'"
    ):
        Sphere2(values="exact")
    with pytest.raises(ValueError, match="only n = 2"):
        GeomstatsManifold.hypersphere(3)
    assert GeomstatsManifold.hypersphere(2) == Sphere2() != Sphere2(values="geomstats")
    q = np.array([[0.0, 0.0, 1.0], [0.6, 0.8, 0.0]])
    with pytest.raises(RetractionDomainError, match=r"batch index \[1\]"):
        sphere.checked_inverse_retract(q, np.array([[1.0, 0.0, 0.0], [-0.6, -0.8, 0.0]]))


def test_closed_form_sphere_does_not_need_geomstats(monkeypatch):
    monkeypatch.setitem(sys.modules, "geomstats", None)  # any import of geomstats now fails
    sphere = Sphere2()
    q1 = sphere.retract(np.array([0.0, 0.0, 1.0]), np.array([0.1, 0.2]))
    sphere.check_point(q1)
    with pytest.raises(ImportError):
        Sphere2(values="geomstats")


# ------------------------------------------- arguments of the primitives (issue 10, point 4)
# Shapes are checked in every call (static in JAX: also under jit/vmap, at no cost);
# values (is it a rotation, a pose, a unit vector?) in eager calls on concrete arrays.
_PRODUCT = ProductManifold(SO3(), Euclidean(2))
_P = "ProductManifold\\(SO3\\(retraction='exp'\\), Euclidean\\(2\\)\\)"
_I3, _Z2, _Z3 = np.eye(3), np.zeros(2), np.zeros(3)
_N = np.array([0.0, 0.0, 1.0])

_SHAPE_CASES = {
    # name: (manifold, method, args, message)
    "SO3 retract, xi of length 4": (
        SO3(), "retract", (_I3, np.zeros(4)),
        (r"SO3\(retraction='exp'\)\.retract: xi must be a tangent vector in frame coordinates, "
        r"shape \(\.\.\., 3\), got shape \(4,\)")),
    "SO3 retract, xi of length 2 (was silently clamped)": (
        SO3(), "retract", (_I3, _Z2), r"SO3\(retraction='exp'\)\.retract: xi .* shape \(\.\.\., 3\), got shape \(2,\)"),
    "SO3 cayley retract_with_inverse_jacobians": (
        SO3("cayley"), "retract_with_inverse_jacobians", (_I3, np.zeros(6)),
        r"SO3\(retraction='cayley'\)\.retract_with_inverse_jacobians: xi .* got shape \(6,\)"),
    "SO3 retract, q of shape (2, 2)": (
        SO3(), "retract", (np.eye(2), _Z3),
        r"SO3\(retraction='exp'\)\.retract: q must be a point, an array of shape \(\.\.\., 3, 3\), got shape \(2, 2\)"),
    "SO3 inverse_retract, q1 of shape (4, 4)": (
        SO3(), "inverse_retract", (_I3, np.eye(4)), r"\.inverse_retract: q1 must be a point, .*got shape \(4, 4\)"),
    "SO3 exp, xi of length 2": (SO3(), "exp", (_Z2,), r"SO3\(retraction='exp'\)\.exp: xi .* got shape \(2,\)"),
    "SO3 log, g of shape (3,)": (SO3(), "log", (_Z3,), r"\.log: g must be a point, .*\(\.\.\., 3, 3\), got shape \(3,\)"),
    "SO3 log, g is None": (SO3(), "log", (None,), r"\.log: g must be a point, .*got NoneType"),
    "SO3 batches that do not broadcast": (
        SO3(), "retract", (np.broadcast_to(_I3, (2, 3, 3)), np.zeros((3, 3))),
        r"\.retract: the batch shapes of q \(2,\) and xi \(3,\) do not broadcast"),
    "SE2 retract, xi of length 2": (SE2(), "retract", (_I3, _Z2), r"SE2\(retraction='exp'\)\.retract: xi .*got shape \(2,\)"),
    "SE2 exp, xi of length 4": (SE2(), "exp", (np.zeros(4),), r"SE2\(retraction='exp'\)\.exp: xi .*got shape \(4,\)"),
    "SE2 so2xr2 in_domain": (SE2("so2xr2"), "in_domain", (_Z2,), r"SE2\(retraction='so2xr2'\)\.in_domain: xi .*\(2,\)"),
    "Euclidean retract, xi of length 3": (
        Euclidean(2), "retract", (_Z2, _Z3), r"Euclidean\(2\)\.retract: xi .* shape \(\.\.\., 2\), got shape \(3,\)"),
    "Euclidean ambient_tangent, eta of length 1": (
        Euclidean(2), "ambient_tangent", (_Z2, np.zeros(1)), r"Euclidean\(2\)\.ambient_tangent: eta .*got shape \(1,\)"),
    "product tangent of total length 4": (
        _PRODUCT, "retract", ((_I3, _Z2), np.zeros(4)),
        _P + r"\.retract: xi must be a tangent vector in frame coordinates, shape \(\.\.\., 5\) "
        r"\(the factors' frame coordinates concatenated: 3 \+ 2\), got shape \(4,\)"),
    "product tangent of total length 6": (_PRODUCT, "in_domain", (np.zeros(6),), _P + r"\.in_domain: xi .*got shape \(6,\)"),
    "product point not a tuple": (
        _PRODUCT, "inverse_retract", (_I3, (_I3, _Z2)),
        _P + r"\.inverse_retract: q0 must be a point of the product, a tuple of 2 factor points "
        r"\(SO3\(retraction='exp'\), Euclidean\(2\)\), got ndarray of shape \(3, 3\)"),
    "product point with one factor": (
        _PRODUCT, "retract", ((_I3,), np.zeros(5)), _P + r"\.retract: q must be a point of the product, .*got tuple of length 1"),
    "product factor point of the wrong shape": (
        _PRODUCT, "retract_with_jacobians", ((_I3, _Z3), np.zeros(5)),
        _P + r"\.retract_with_jacobians: q\[1\] must be a point, an array of shape \(\.\.\., 2\), got shape \(3,\)"),
    "Sphere2 retract, xi of length 3": (Sphere2(), "retract", (_N, _Z3), r"Sphere2\(\)\.retract: xi .*\(\.\.\., 2\), got shape \(3,\)"),
    "Sphere2 retract, q of length 2": (
        Sphere2(), "retract", (np.array([0.0, 1.0]), _Z2), r"Sphere2\(\)\.retract: q must be a point, .*\(\.\.\., 3\), got shape \(2,\)"),
    "Sphere2 inverse_retract, q0 of length 4": (
        Sphere2(), "inverse_retract", (np.array([0.0, 0.0, 0.0, 1.0]), _N), r"Sphere2\(\)\.inverse_retract: q0 .*got shape \(4,\)"),
}


@pytest.mark.parametrize("case", list(_SHAPE_CASES))
def test_a_primitive_refuses_arguments_of_the_wrong_shape(case):
    """Each message names the manifold, the method, the argument, the shape expected and the shape given."""
    M, method, args, message = _SHAPE_CASES[case]
    with pytest.raises(ValueError, match=message):
        getattr(M, method)(*args)


@pytest.mark.parametrize("case", ["SO3 retract, xi of length 2 (was silently clamped)", "product tangent of total length 4",
                                  "Sphere2 retract, q of length 2", "Euclidean retract, xi of length 3"])
def test_shape_checks_also_run_inside_jit_and_vmap(case):
    M, method, args, message = _SHAPE_CASES[case]
    fn = getattr(M, method)
    with pytest.raises(ValueError, match=message):
        jax.jit(fn)(*args)
    batched = jax.tree.map(lambda a: np.stack([a, a]), args)
    with pytest.raises(ValueError, match=message):
        jax.vmap(fn)(*batched)


def test_a_new_manifold_subclass_gets_the_shape_checks():
    class Shifted(Euclidean):
        def retract(self, q, xi):
            return jnp.asarray(q) + jnp.asarray(xi) + 1.0

    with pytest.raises(ValueError, match=r"Euclidean\(2\)\.retract: xi .*got shape \(3,\)"):
        Shifted(2).retract(_Z2, _Z3)
    np.testing.assert_array_equal(np.asarray(Shifted(2).retract(_Z2, _Z2)), [1.0, 1.0])


def test_euclidean_lists_are_added_not_concatenated():
    np.testing.assert_array_equal(np.asarray(Euclidean(2).retract([0.0, 1.0], [1.0, 1.0])), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(Euclidean(2).inverse_retract([0.0, 1.0], [1.0, 1.0])), [1.0, 0.0])


_VALUE_CASES = {
    "SO3 log of 2 I": (
        SO3(), "log", (np.stack([_I3, 2 * _I3]),),
        (r"SO3\(retraction='exp'\)\.log: g is not an element of SO3 at batch index \[1\]: "
        r"\|g\^T g - I\| = 5\.196e\+00 > 1e-06\. Pass a point of the group")),
    "SO3 log of a reflection": (SO3(), "log", (np.diag([1.0, 1.0, -1.0]),), r"\|det g - 1\| \(det -1: a reflection\) = 2\.000e\+00"),
    "SO3 cayley inverse_retract, q1 not a rotation": (
        SO3("cayley"), "inverse_retract", (_I3, _I3 + 0.01), r"SO3\(retraction='cayley'\)\.inverse_retract: q1 is not an element of SO3"),
    "SO3 retract, q not a rotation": (SO3(), "retract", (np.ones((3, 3)), _Z3), r"\.retract: q is not an element of SO3"),
    "SE2 log, last row": (
        SE2(), "log", (np.array([[1.0, 0, 0], [0, 1, 0], [0.5, 0, 1]]),),
        r"SE2\(retraction='exp'\)\.log: g is not an element of SE2 at batch index \[\]: \|last row - \[0, 0, 1\]\| = 5\.000e-01"),
    "SE2 retract_with_inverse_jacobians, rotation block": (
        SE2(), "retract_with_inverse_jacobians", (2 * _I3, _Z3), r"q0 is not an element of SE2 .*rotation block"),
    "Sphere2 retract, q not a unit vector": (
        Sphere2(), "retract", (np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 2.0]]), _Z2),
        r"Sphere2\(\)\.retract: q is not on the unit sphere \(Sphere2\) at batch index \[1\]: \| \|q\| - 1 \| = 1\.000e\+00"),
    "product, the SO3 factor of q1": (
        _PRODUCT, "inverse_retract", ((_I3, _Z2), (3 * _I3, _Z2)), _P + r"\.inverse_retract: q1\[0\] is not an element of SO3"),
}


@pytest.mark.parametrize("case", list(_VALUE_CASES))
def test_an_eager_primitive_refuses_a_point_off_the_manifold(case):
    M, method, args, message = _VALUE_CASES[case]
    with pytest.raises(ValueError, match=message):
        getattr(M, method)(*args)


def test_value_checks_skip_traced_calls_nan_members_and_round_off():
    """Inside jit values are unknown: no check (and no cost), a NaN member passes through; in an eager
    call a NaN member is refused, naming it; a rotation off by round-off is accepted (the tolerance is
    1e-6, a guard, not check_point)."""
    jax.jit(SO3().log)(2 * _I3)  # traced: not checked (the entry points validate once, check_point)
    bad = np.stack([_rot_z(0.3), np.full((3, 3), np.nan)])
    out = np.asarray(jax.jit(SO3().log)(bad))
    np.testing.assert_allclose(out[0], [0.0, 0.0, 0.3], rtol=0, atol=1e-15)
    assert np.all(np.isnan(out[1]))
    with pytest.raises(RetractionDomainError, match=r"SO3\(retraction='exp'\)\.log: g has non-finite entries at "
                                                    r"batch index \[1\]"):
        SO3().log(bad)
    SO3().log(_rot_z(0.3) + 1e-9)
    SE2().log(SE2().from_coordinates([1e9, -2e9, 0.5]))  # a large translation is not a defect
    Sphere2().retract(_N * (1 + 1e-9), _Z2)
    with pytest.raises(ValueError, match="is not an element of SO3"):
        SO3().log(_rot_z(0.3) + 1e-5)  # just above the tolerance


def test_the_checks_add_no_operation_to_a_compiled_primitive(monkeypatch):
    """The jaxpr of every checked primitive is identical with the checks switched off; a deliberate
    extra operation changes it (so the comparison can fail)."""
    from manifold_dirac._manifolds.base import Manifold

    cases = []
    for M in (Euclidean(3), SO3(), SO3("cayley"), SE2(), SE2("so2xr2"), Sphere2(), ProductManifold(SO3(), Euclidean(2))):
        q = M.default_point()
        xi = jnp.full(M.dim, 0.1)
        q1 = M.retract(q, xi)
        cases += [(M.retract, (q, xi)), (M.inverse_retract, (q, q1)), (M.retract_with_inverse_jacobians, (q, xi)),
                  (M.retract_with_jacobians, (q, xi)), (M.in_domain, (xi,)),
                  (jax.vmap(M.retract), jax.tree.map(lambda a: jnp.stack([a, a]), (q, xi)))]
        if hasattr(M, "log"):
            cases += [(M.log, (q1,)), (M.exp, (xi,))]

    def jaxprs():
        return [str(jax.make_jaxpr(fn)(*args)) for fn, args in cases]

    checked = jaxprs()
    monkeypatch.setattr(Manifold, "_validate", lambda self, *a: None)
    # the switch works: NumPy's own error (a concrete exp is evaluated on the host), not the check's
    with pytest.raises(ValueError, match="could not be broadcast"):
        SO3().retract(_I3, _Z2)
    assert jaxprs() == checked
    fn, (q, xi) = cases[6]  # SO3.retract
    assert str(jax.make_jaxpr(lambda a, b: fn(a, b + 0.0))(q, xi)) != checked[6]
