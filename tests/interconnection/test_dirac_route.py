"""The independent route: each interconnected step solved as membership in the discrete Dirac
structure assembled from the subsystems' own structures (``manifold_dirac.dirac.route``), against
the integrator; the verifier; and the sensitivity of both to deliberate errors.

The route shares no step code with the integrator: not the stacked constraint matrix, the schemes,
the quadrature evaluation, the product retraction or the Newton solver. It uses each elementary
subsystem's Lagrangian, one-forms, force and retraction, each level's interaction forms, and the
linear algebra of ``manifold_dirac.dirac`` (direct sums and tensor products of subspaces).

The worked systems are those of ``manifold_dirac/systems/interconnected.py`` and
``examples/interconnection_*.py`` (the two-wheel cart both nested and flat). CI runs the torn
mass--spring chain in the symmetric and the (-) scheme and cheap Euclidean systems for two of the
sensitivity tests;
the full matrix (six systems x three schemes) is ``slow`` (``pytest -m slow``; measured:
agreement <= 4e-13 in q and <= 1.2e-13 in p on every case).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac  # noqa: F401  (float64)
from manifold_dirac.dirac import DiscreteDiracStructure, dirac_route, discrete_structure_of, verify
from manifold_dirac._interconnection import (
    interconnect,
    linear_interaction,
    rolling_without_slipping,
)
from manifold_dirac._manifolds.euclidean import Euclidean
from manifold_dirac._manifolds.product import ProductManifold
from manifold_dirac._manifolds.se2 import SE2
from manifold_dirac._manifolds.so3 import SO3
from manifold_dirac._run.integrate import integrate
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import interconnected as S
from manifold_dirac.systems.vehicles import chaplygin_sled

R = 0.5


def _worked():
    out = {
        "mass_spring": (S.mass_spring_torn(), (np.array([0.3, -0.2]), np.array([-0.2])),
                        np.array([0.1, 0.4, 0.4]), 0.05, 30),
        "lc": (S.lc_from_elements(), (np.array([1.0]), np.array([1.0])), np.zeros(2), 0.02, 30),
        "rolling_disk": (S.rolling_disk(R), (SE2().identity(), np.zeros(1)), np.array([0.7, 2 * R, 0, 2.0]),
                         0.05, 30),
    }
    W = np.array([0.3, -1.0, 0.5])
    R0 = np.asarray(SO3().exp(jnp.array([0.2, 0.4, -0.1])))
    out["rolling_ball"] = (S.rolling_ball(R), (R0, np.zeros(2)),
                           np.concatenate([R0.T @ W, R * np.array([W[1], -W[0]])]), 0.05, 30)
    om, vL = 0.4, 1.0
    right = np.asarray(SE2().from_coordinates(jnp.array([0, -1.0, 0])))
    q0 = ((SE2().identity(), np.zeros(1)), (right, np.zeros(1)))
    v0 = np.array([om, vL, 0, vL / R, om, vL + om, 0, (vL + om) / R])
    out["cart"] = (S.two_wheel_cart(1.0, R), q0, v0, 0.05, 30)
    # examples/interconnection_two_wheel_cart.py: the same cart as one flat interconnection of four parts
    out["cart_flat"] = (S.two_wheel_cart_flat(1.0, R), (q0[0][0], q0[0][1], q0[1][0], q0[1][1]), v0, 0.05, 30)
    return out


WORKED = _worked()
RUNS: dict = {}


def run(name, scheme, rule="midpoint"):
    """``integrate`` of a worked system, once per (system, scheme, rule)."""
    key = (name, scheme, rule)
    if key not in RUNS:
        sysm, q0, v0, h, n = WORKED[name]
        RUNS[key] = integrate(sysm, q0, v0=v0, h=h, n_steps=n, scheme=scheme, discrete_lagrangian=rule)
    return RUNS[key]


def _leaves(q):
    return [np.asarray(x) for x in jax.tree.leaves(q)]


def max_diff(a_q, b_q):
    return max(float(np.max(np.abs(x - y))) for x, y in zip(_leaves(a_q), _leaves(b_q)))


CI = {("mass_spring", "symmetric"), ("mass_spring", "minus")}


def _cases():
    for name in WORKED:
        for scheme in ("symmetric", "plus", "minus"):
            marks = () if (name, scheme) in CI else (pytest.mark.slow,)
            yield pytest.param(name, scheme, marks=marks, id=f"{name}-{scheme}")


@pytest.mark.parametrize("name,scheme", list(_cases()))
def test_the_dirac_route_equals_integrate(name, scheme):
    """Every worked interconnected system and scheme: the step solved from the discrete Dirac
    structures (46)/(47), (29) and (50)/(51) agrees with ``integrate`` to round-off."""
    sysm, q0, v0, h, n = WORKED[name]
    a = run(name, scheme)
    b = dirac_route(sysm, q0, v0=v0, h=h, n_steps=n, scheme=scheme)
    assert a.ok
    assert np.max(b.residual) < 1e-13
    assert max_diff(a.q, b.stacked_q()) < 1e-12
    np.testing.assert_allclose(a.p, b.p, rtol=0, atol=1e-12)
    # and the verifier finds the integrator's steps in the structure
    ver = verify(sysm, a)
    assert ver.max < 1e-13, (ver.membership.max(), ver.basepoint.max(), ver.constraint.max())


@pytest.mark.slow
def test_the_route_with_the_trapezoid_rule():
    """The rule's nodes define each subsystem's L_d: the trapezoid rule (two nodes) agrees too."""
    sysm, q0, v0, h, n = WORKED["mass_spring"]
    a = run("mass_spring", "symmetric", "trapezoid")
    b = dirac_route(sysm, q0, v0=v0, h=h, n_steps=n, scheme="symmetric", discrete_lagrangian="trapezoid")
    assert max_diff(a.q, b.stacked_q()) < 1e-12


def test_the_assembled_structure_is_the_discrete_32():
    """(D1 (+) D2) ⊠ D_int, computed by direct sums and tensor products, equals the induced
    structure of the stacked forms (31) -- at points of the cart (nested), both signs."""
    sysm = WORKED["cart"][0]
    rng = np.random.default_rng(3)
    for _ in range(2):
        q = sysm.Q.random_point(rng)
        A = np.asarray(sysm.constraint_matrix(q))
        for sign in "+-":
            assert discrete_structure_of(sysm, sign, q).equals(DiscreteDiracStructure.induced(A, sign))
    # without the axle rows it is another subspace
    assert not discrete_structure_of(sysm, "+", q).equals(DiscreteDiracStructure.induced(A[:4], "+"))


# ------------------------------------------------------------------ sensitivity
def _chain_with(interaction, name):
    torn = WORKED["mass_spring"][0]
    return interconnect(*torn.subsystems, interaction=interaction, name=name)


CHAIN_V0 = np.array([0.1, 0.0, 0.0])  # y' = x2' = 0: consistent with every variant below


@pytest.fixture(scope="module")
def chain_run():
    sysm, q0, _, h, n = WORKED["mass_spring"]
    return integrate(sysm, q0, v0=CHAIN_V0, h=h, n_steps=n, scheme="symmetric")


@pytest.mark.parametrize("variant", ["flipped_sign", "dropped_row"])
def test_a_wrong_interaction_in_the_route_disagrees_with_integrate(chain_run, variant):
    """The route with a wrong interaction -- one row's sign flipped (``y' = -x2'``) or the row
    dropped -- no longer agrees with the integrator's run of the true chain; with the true
    interaction it does (the same data, scheme and rule)."""
    sysm, q0, _, h, n = WORKED["mass_spring"]
    good = dirac_route(sysm, q0, v0=CHAIN_V0, h=h, n_steps=n, scheme="symmetric")
    assert max_diff(chain_run.q, good.stacked_q()) < 1e-12
    wrong = {"flipped_sign": linear_interaction({("left", 1): 1.0, ("right", 0): 1.0}),
             "dropped_row": None}[variant]
    bad = dirac_route(_chain_with(wrong, variant), q0, v0=CHAIN_V0, h=h, n_steps=n, scheme="symmetric")
    assert max_diff(chain_run.q, bad.stacked_q()) > 1e-3
    # and the verifier sees the integrator's steps outside the wrong structure
    assert verify(_chain_with(wrong, variant), chain_run).max > 1e-3


def _two_particles(radius=1.0):
    """Particles of masses 1 and 3 on a line, tied by rolling without slipping ``v_a = radius v_b``
    (``radius = 1``: equal velocities), a constant force F = 2 on ``a``: with ``radius = 1`` the
    interaction force on ``b`` is ``3 F / 4 = 1.5``."""
    a = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v[0] ** 2, force=lambda t, q, v: jnp.array([2.0]),
                            name="a")
    b = LagrangeDiracSystem(Euclidean(1), lambda q, v: 1.5 * v[0] ** 2, name="b")
    return interconnect(a, b, interaction=rolling_without_slipping("a", "b", radius, 0, 0),
                        name=f"two_particles_r{radius}")


TWO = _two_particles()
TWO_START = dict(q0=(np.zeros(1), np.zeros(1)), v0=np.array([0.3, 0.3]), h=0.1, n_steps=12)
TWO_RUNS: dict = {}


def two_run(scheme):
    if scheme not in TWO_RUNS:
        TWO_RUNS[scheme] = integrate(TWO, **TWO_START, scheme=scheme)
    return TWO_RUNS[scheme]


@pytest.mark.slow
def test_a_wrong_radius_makes_the_routes_disagree():
    """Rolling without slipping ``v_a = r v_b`` with ``r = 1`` in the integrator and ``r = 1.1`` in
    the route: the routes disagree; with the same radius they agree (forced, so the motion is
    not uniform)."""
    a = two_run("symmetric")
    b = dirac_route(TWO, **TWO_START, scheme="symmetric")
    c = dirac_route(_two_particles(1.1), **TWO_START, scheme="symmetric")
    assert max_diff(a.q, b.stacked_q()) < 1e-12
    assert max_diff(a.q, c.stacked_q()) > 1e-3


class CoupledProduct(ProductManifold):
    """``R x R`` with a retraction that couples the factors: ``R_q(xi) = q + (xi0 + c xi0 xi1, xi1)``.
    A valid retraction that is not a product one."""

    c = 0.5

    def __init__(self):
        super().__init__(Euclidean(1), Euclidean(1))

    def _key(self):
        return ("CoupledProduct",)

    def retract(self, q, xi):
        xi = jnp.asarray(xi)
        return (q[0] + (xi[..., :1] + self.c * xi[..., :1] * xi[..., 1:]), q[1] + xi[..., 1:])

    def inverse_retract(self, q0, q1):
        d0, d1 = jnp.asarray(q1[0]) - q0[0], jnp.asarray(q1[1]) - q0[1]
        return jnp.concatenate([d0 / (1 + self.c * d1), d1], -1)

    def retract_with_inverse_jacobians(self, q0, xi):
        q1 = self.retract(q0, xi)
        J1 = jax.jacfwd(lambda b: self.inverse_retract(q0, (q1[0] + b[:1], q1[1] + b[1:])))(jnp.zeros(2))
        J0 = jax.jacfwd(lambda a: self.inverse_retract((q0[0] + a[:1], q0[1] + a[1:]), q1))(jnp.zeros(2))
        return q1, J0, J1

    def retract_with_jacobians(self, q, xi):
        Jx = jax.jacfwd(lambda x: jnp.concatenate(self.retract(q, x)))(jnp.asarray(xi))
        return self.retract(q, xi), jnp.eye(2), Jx


@pytest.mark.slow
def test_a_coupled_non_product_retraction_makes_the_routes_disagree():
    """The two particles on the product with a coupled retraction (same L, constraint and force)
    give the integrator another discrete flow than the route, where each factor moves by its own
    retraction; with the product retraction the two agree (previous test). Both are consistent
    discretizations, so the difference is a discretization difference, far above round-off."""
    coupled = LagrangeDiracSystem(CoupledProduct(), TWO.lagrangian, constraint=np.array([[1.0, -1.0]]),
                                  force=lambda t, q, v: TWO.force(t, q, v), name="two_particles_coupled")
    ref = dirac_route(TWO, **TWO_START, scheme="symmetric")
    other = integrate(coupled, **TWO_START, scheme="symmetric")
    assert other.ok
    assert max_diff(other.q, ref.stacked_q()) > 1e-4


def test_the_verifier_sees_a_perturbed_momentum(chain_run):
    """A 1e-6 change of one stored momentum puts that step outside the structure by ~1e-6."""
    sysm = WORKED["mass_spring"][0]
    ok = verify(sysm, chain_run)
    assert ok.max < 1e-13
    bad_p = np.array(chain_run.p)
    bad_p[7, 0] += 1e-6

    class Perturbed:
        q, p, v, t, meta = chain_run.q, bad_p, chain_run.v, chain_run.t, chain_run.meta

    ver = verify(sysm, Perturbed())
    assert ver.membership[7] > 1e-7 and np.argmax(ver.membership) == 7


def test_the_verifier_compiles_no_jacobian(chain_run):
    """``verify`` evaluates the route's equations at the stored points and solves nothing: it compiles the route's
    pieces, not their Jacobian (``dirac_route``'s Newton matrix, ``jit(with_jacobian)``: on the knife edge 7 s of
    a 12 s first call). Sensitivity: a ``dirac_route`` call compiles it."""
    names = []

    def listen(event, duration, **kwargs):
        if event.endswith("backend_compile_duration"):
            names.append(str(kwargs.get("fun_name")))

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        sysm = S.mass_spring_torn()  # a new system object: nothing compiled for it yet
        assert verify(sysm, chain_run).max < 1e-13
        assert names and not [n for n in names if "with_jacobian" in n], names
        dirac_route(sysm, WORKED["mass_spring"][1], v0=WORKED["mass_spring"][2], h=0.05, n_steps=1)
        assert [n for n in names if "with_jacobian" in n]
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


def test_verifier_refuses_what_it_cannot_check(chain_run):
    sysm = WORKED["mass_spring"][0]
    with pytest.raises(ValueError, match="scheme"):
        verify(sysm, chain_run, scheme="leapfrog")
    with pytest.raises(ValueError, match="exactly one"):
        dirac_route(sysm, WORKED["mass_spring"][1], h=0.1, n_steps=1)
    with pytest.raises(ValueError, match="does not batch"):
        dirac_route(sysm, WORKED["mass_spring"][1], v0=np.zeros((2, 3)), h=0.1, n_steps=1)

    class Strided:
        q, p, v, t, meta = chain_run.q, chain_run.p, chain_run.v, chain_run.t, {**chain_run.meta, "stride": 2}

    with pytest.raises(ValueError, match="stride"):
        verify(sysm, Strided())


@pytest.mark.slow
def test_noether_quantity_of_the_rolling_ball():
    """The ball's spin about the vertical, ``J = <p_ball, R^T e3>`` (a symmetry whose generator lies
    in Delta_Q: a spin about the contact normal does not move the centre), is a discrete Noether
    quantity of all three schemes: conserved to round-off over 300 steps."""
    sysm, q0, v0, h, _ = WORKED["rolling_ball"]

    def spin(q):
        return jnp.concatenate([jnp.asarray(q[0]).T @ jnp.array([0.0, 0.0, 1.0]), jnp.zeros(2)])

    for scheme in ("symmetric", "plus", "minus"):
        tr = integrate(sysm, q0, v0=v0, h=h, n_steps=300, scheme=scheme)
        ver = verify(sysm, tr, symmetry=spin)
        assert ver.noether_drift < 1e-12, (scheme, ver.noether_drift)


# ------------------------------------------- the first interaction impulse, p0-only starts
@pytest.mark.parametrize("scheme", ["symmetric", pytest.param("minus", marks=pytest.mark.slow)])
def test_the_first_interaction_impulse_spans_half_a_step(scheme):
    """Not a property of massless ports: for ANY interconnected system with a constraint force,
    ``mu_0`` is the impulse over ``[t0, t0 + h/2]`` only, because ``p0 = dL/dv(q0, v0)`` is the
    momentum at ``t0`` while every later ``p_k = D2 L_d(q_{k-1}, q_k) + f^+`` is the momentum
    of the step before (the impulse of step ``k`` spans ``[t_k - h/2, t_k + h/2]``). So the force
    ``-S^T mu_0 / h`` reported for step 0 is half the true one: 0.75 against 1.5 here, exact from
    step 1 on; twice it is the force to O(h)."""
    tr = two_run(scheme)
    f = TWO.parts(tr)["b"].interaction_force[:, 0]
    np.testing.assert_allclose(f[0], 0.75, atol=1e-12)
    np.testing.assert_allclose(f[1:], 1.5, atol=1e-12)
    # the motion is unaffected: the common acceleration is F / 4 = 0.5 from the start
    x = np.asarray(tr.q[1])[:, 0]
    np.testing.assert_allclose(x, 0.3 * tr.t + 0.25 * tr.t**2, atol=1e-12)


@pytest.mark.slow
def test_p0_only_start_respects_the_constraints():
    """The Legendre inverse of a p0-only start solves ``dL/dv(q0, v) = p0 + A^T lam``, ``A v = 0``:
    on the Chaplygin sled with ``p0`` carrying a component in ``Delta°`` the start velocity lies in
    ``Delta(q0)`` and ``E[0]`` is the energy of that velocity, the same as a v0 start."""
    sled = chaplygin_sled()
    q0 = SE2().identity()
    v0 = np.array([0.5, 1.0, 0.0])  # (omega, v_x, v_y): v_y = 0 is the blade constraint
    A = np.asarray(sled.constraint_matrix(q0, sled.params))
    p0 = np.asarray(sled.momentum(q0, v0, sled.params)) + 0.7 * A[0]  # + a constraint impulse
    a = integrate(sled, q0, p0=p0, h=0.01, n_steps=3, scheme="plus")
    assert abs(float(A[0] @ a.v[0])) < 1e-14
    np.testing.assert_allclose(a.v[0], v0, atol=1e-13)
    m, J, off = 1.0, 0.2, 0.5
    E = 0.5 * m * (v0[1] ** 2 + (v0[2] + off * v0[0]) ** 2) + 0.5 * J * v0[0] ** 2
    np.testing.assert_allclose(a.energy[0], E, rtol=1e-13)
