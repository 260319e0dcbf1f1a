"""The primitives at and around the edges of their domains: finite values or a clear error.

Outside ``jit`` a primitive given an argument outside its domain (a rotation
by pi for the Cayley inverse, the antipode for the sphere's logarithm, a
rotation part of norm 2 pi for the inverse Jacobians of ``exp``, a non-finite
entry, an argument whose closed form overflows) raises a
:class:`RetractionDomainError` that names the primitive, the batch member and
the domain; it never returns inf or NaN. Inside ``jit`` nothing raises: the
integrator's step status reports a step outside the domain.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac._errors import RetractionDomainError
from manifold_dirac._manifolds import SE2, SE3, SO3, Euclidean, GeomstatsManifold, Manifold, Sphere2
from manifold_dirac._manifolds.base import Manifold as BaseManifold
from manifold_dirac.testing import check_domain_edges, draw_sample, registered_manifolds

SEED = 7


@functools.cache
def _manifold(name: str) -> Manifold:
    return registered_manifolds()[name]()


def _rot_z(t: float) -> np.ndarray:
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def test_every_registered_retraction_of_a_builtin_manifold_is_checked():
    """The law below runs over the registry; every retraction registered on a built-in class is in it."""
    covered = {(type(M).__name__, M.retraction.name) for M in map(_manifold, registered_manifolds())}
    for cls in (SO3, SE2, SE3, Euclidean, GeomstatsManifold):
        for name in cls.retraction_names():
            owner = "Sphere2" if cls is GeomstatsManifold else cls.__name__
            assert (owner, name) in covered, (owner, name)


@pytest.mark.parametrize("name", list(registered_manifolds()))
@pytest.mark.parametrize("regime", ["generic", "near_singular"])
def test_primitives_at_the_edges_of_their_domains(name, regime):
    M = _manifold(name)
    check_domain_edges(M, *draw_sample(M, SEED, (), regime))


def test_the_edge_law_fails_without_the_domain_checks(monkeypatch):
    """Sensitivity: with the eager domain checks switched off, the Cayley inverse at a rotation by pi
    returns inf/NaN again, and the law says so."""
    monkeypatch.setattr(BaseManifold, "_check_domain", lambda self, *a: None)
    M = SO3("cayley")
    with pytest.raises(AssertionError, match=r"inverse_retract at q1 .*returned non-finite values without an error"):
        check_domain_edges(M, *draw_sample(M, SEED, (), "generic"))


def test_cayley_inverse_at_a_rotation_by_pi_names_the_primitive_the_point_and_the_domain():
    for t in (np.pi, np.pi - 1e-6, np.pi + 1e-6):
        with pytest.raises(
            RetractionDomainError,
            match=r"SO3\(retraction='cayley'\)\.inverse_retract: at batch index \[\], q0\^-1 q1 is a rotation by "
                  r"3\.14159\d+ rad; the inverse of the Cayley retraction is defined for rotations by less than pi",
        ):
            SO3("cayley").inverse_retract(np.eye(3), _rot_z(t))
    # just inside: a finite, accurate value (|xi| = 2 tan(theta/2))
    xi = np.asarray(SO3("cayley").inverse_retract(np.eye(3), _rot_z(np.pi - 1e-3)))
    np.testing.assert_allclose(xi[2], 2 * np.tan(0.5 * (np.pi - 1e-3)), rtol=1e-9)
    # a rotation by 2 pi is the identity: xi = 0
    assert np.all(np.abs(np.asarray(SO3("cayley").inverse_retract(np.eye(3), _rot_z(2 * np.pi)))) < 1e-15)
    # batched: the member is named
    with pytest.raises(RetractionDomainError, match=r"SE2\(retraction='cayley'\)\.inverse_retract: at batch index \[1\]"):
        SE2("cayley").inverse_retract(np.eye(3), SE2().from_coordinates([[0, 0, 1.0], [0, 0, np.pi]]))
    with pytest.raises(RetractionDomainError, match=r"SE3\(retraction='cayley'\)\.inverse_retract"):
        SE3("cayley").inverse_retract(np.eye(4), SE3().from_coordinates([1.0, 2.0, 3.0, 0.0, np.pi, 0.0]))


def test_exp_and_split_retractions_at_pi_return_the_principal_value():
    """``log`` is defined on the whole group: at a rotation by pi it returns one of the two preimages."""
    for M in (SO3(), SE3("so3xr3")):
        g = M.identity() if not isinstance(M, SE3) else np.eye(4)
        q1 = _rot_z(np.pi) if isinstance(M, SO3) else SE3().from_coordinates([0, 0, 0, 0, 0, np.pi])
        xi = np.asarray(M.inverse_retract(g, q1))
        assert np.isclose(np.linalg.norm(xi[:3]), np.pi) and not bool(M.in_domain(xi))


def test_inverse_jacobians_of_exp_at_2_pi_and_overflow_are_refused():
    with pytest.raises(RetractionDomainError, match=r"SO3\(retraction='exp'\)\.exp_right_jacobian_inv: .*"
                                                    r"rotation part of norm 6\.28318\d+; the inverse Jacobian of exp "
                                                    r"is singular at 2 pi"):
        SO3().exp_right_jacobian_inv(np.array([0.0, 0.0, 2 * np.pi]))
    with pytest.raises(RetractionDomainError, match=r"SE3\(retraction='so3xr3'\)\.retract_with_inverse_jacobians"):
        SE3("so3xr3").retract_with_inverse_jacobians(np.eye(4), np.array([0, 2 * np.pi, 0, 1.0, 0, 0]))
    with pytest.raises(RetractionDomainError, match=r"SO3\(retraction='cayley'\)\.retract: a non-finite result "
                                                    r"from finite arguments"):
        SO3("cayley").retract(np.eye(3), np.array([0.0, 0.0, 1e160]))
    with pytest.raises(RetractionDomainError, match=r"xi has non-finite entries at batch index \[\]"):
        SE2().retract(np.eye(3), np.array([np.nan, 0.0, 0.0]))


def test_sphere_at_the_antipode():
    S = Sphere2()
    with pytest.raises(RetractionDomainError, match=r"Sphere2\(\)\.inverse_retract: at batch index \[\], q1 is "
                                                    r"3\.14159\d+ rad from q0; .* not defined at the antipode"):
        S.inverse_retract(np.array([0.0, 0.0, 1.0]), np.array([0.0, 1e-12, -1.0]) / np.hypot(1e-12, 1.0))
    with pytest.raises(RetractionDomainError, match=r"Sphere2\(\)\.retract_with_inverse_jacobians"):
        S.retract_with_inverse_jacobians(np.array([0.0, 0.0, 1.0]), np.array([np.pi, 0.0]))


def test_inside_jit_nothing_raises():
    """Traced calls are not checked (no Python exception on tracers); the integrator's status reports them."""
    out = jax.jit(SO3("cayley").inverse_retract)(jnp.eye(3), jnp.asarray(_rot_z(np.pi)))
    assert not np.all(np.isfinite(np.asarray(out)))
    jax.jit(SO3().exp_right_jacobian_inv)(jnp.array([0.0, 0.0, 2 * np.pi]))
    jax.vmap(SO3("cayley").retract, (None, 0))(jnp.eye(3), jnp.array([[0.0, 0.0, 1e160]]))


@pytest.mark.slow
def test_rotation_angle_equals_the_norm_of_the_logarithm():
    """The numpy angle the Cayley inverse's domain check reads equals |rotation part of log g|, up to pi."""
    rng = np.random.default_rng(3)
    for G in (SO3(), SE2(), SE3()):
        g = np.asarray(G.retract(G.random_point(rng, (64,)), G.sample_tangent(rng, (64,), "generic")))
        t = np.asarray(G.exp(np.concatenate([np.full((1, 1), np.pi), np.zeros((1, G.dim - 1))], -1)))
        g = np.concatenate([g, t])
        ref = np.sqrt(np.asarray(G.rotation_norm2(G.log(g))))
        np.testing.assert_allclose(G.rotation_angle(g), ref, rtol=0, atol=1e-14)
