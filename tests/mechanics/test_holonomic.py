"""Holonomic constraints g(q) = 0 held on positions (SHAKE/RATTLE in the retraction chart).

Verified on the Cartesian spherical pendulum (against the S^2 formulation and a
hand-written RATTLE), the planar four-bar linkage, the disk rolling on a plane
on SO(3) x R^3 (contact height as g(q) = 0 plus two one-forms), and two rods
pinned by spherical joints (an interconnection). Long runs (10^5 steps) and
the every-scheme sweeps of the heavier systems are marked slow.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from manifold_dirac import LagrangeDiracSystem, integrate
from manifold_dirac._manifolds import Euclidean
from manifold_dirac._manifolds.sphere import Sphere2
from manifold_dirac._run.integrator import Integrator
from manifold_dirac.systems import pendulums
from manifold_dirac.systems.linkages import (
    four_bar,
    four_bar_initial,
    rigid_double_pendulum,
    rigid_double_pendulum_initial,
)
from manifold_dirac.systems.rolling_bodies import rolling_disk_3d, rolling_disk_3d_contact, rolling_disk_3d_initial

from .mech_helpers import LAPACK_PRIMITIVE

SCHEMES = ("symmetric", "plus", "minus")
ROUNDOFF = 1e-13


def slope(hs, errs):
    return float(np.polyfit(np.log(hs), np.log(errs), 1)[0])


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def cart():
    return pendulums.cartesian_spherical_pendulum()


@pytest.fixture(scope="module")
def sphere():
    return pendulums.spherical_pendulum()


@pytest.fixture(scope="module")
def start_s2():
    S2 = Sphere2()
    q = np.asarray(S2.from_coordinates([2.5, 0.3]))
    vs = np.array([0.5, 1.0])
    return q, vs, np.asarray(S2.frame(q)) @ vs


@pytest.fixture(scope="module")
def fourbar():
    return four_bar()


@pytest.fixture(scope="module")
def disk():
    return rolling_disk_3d()


def assert_on_constraint(system, tr):
    """g(q_k) and dg(q_k) v_k at round-off at every stored point; the momentum projected likewise."""
    assert tr.ok
    assert np.max(tr.holonomic_violation) < ROUNDOFF
    G = np.asarray(system.evaluate("holonomic_differential", tr.q))
    dgv = np.einsum("kri,ki->kr", G, tr.v)
    assert np.max(np.abs(dgv)) < 1e-12
    assert np.max(tr.slip) >= np.max(np.abs(dgv)) - 1e-15  # slip covers the dg rows


# ------------------------------------------------ Cartesian spherical pendulum
@pytest.mark.parametrize("scheme", ["symmetric", "plus", pytest.param("minus", marks=pytest.mark.slow)])
def test_cartesian_pendulum_holds_the_constraint_for_every_scheme(cart, start_s2, scheme):
    q0, _, v0 = start_s2
    tr = integrate(cart, q0, v0=v0, h=0.01, n_steps=300, scheme=scheme)
    assert_on_constraint(cart, tr)
    np.testing.assert_allclose(np.linalg.norm(np.asarray(tr.q), axis=-1), 1.0, rtol=0, atol=1e-15)
    # the reported momentum is on the constrained cotangent bundle: x . p = 0 (M = m I)
    assert np.max(np.abs(np.sum(np.asarray(tr.q) * tr.p, axis=-1))) < 1e-13
    # holonomic constraints alone do not lower any scheme's order: all are SHAKE with the midpoint L_d
    assert Integrator(cart, 0.01, scheme).order == 2
    assert tr.meta["order"] == 2
    # every scheme gives the same positions (the one-form part is empty): SHAKE is one method
    ref = integrate(cart, q0, v0=v0, h=0.01, n_steps=300, scheme="symmetric")
    np.testing.assert_allclose(np.asarray(tr.q), np.asarray(ref.q), atol=1e-12)


@pytest.mark.slow  # CI time: second order with holonomic constraints stays in CI on the four-bar and the disk
def test_cartesian_pendulum_converges_to_the_sphere_formulation_at_second_order(cart, sphere, start_s2):
    """x(T) of the Cartesian system against l q(T) of the S^2 system (same initial data), both symmetric
    and midpoint: the difference of two second-order methods for the same motion is O(h^2)."""
    q0, vs, v0 = start_s2
    T, hs = 1.0, np.array([0.04, 0.02, 0.01, 0.005])
    diffs = []
    for h in hs:
        n = int(round(T / h))
        a = integrate(cart, q0, v0=v0, h=h, n_steps=n)
        b = integrate(sphere, q0, v0=vs, h=h, n_steps=n)
        diffs.append(np.max(np.abs(np.asarray(a.q)[-1] - np.asarray(b.q)[-1])))
        # the same energy function on both sides (m = l = 1)
        assert abs(a.energy[0] - b.energy[0]) < 1e-13
    diffs = np.array(diffs)
    assert 1.8 < slope(hs, diffs) < 2.2, diffs
    assert diffs[-1] < 1e-4
    # sensitivity: an initial velocity 5 % off is seen far above the discretization difference
    a = integrate(cart, q0, v0=1.05 * v0, h=0.01, n_steps=100)
    b = integrate(sphere, q0, v0=vs, h=0.01, n_steps=100)
    assert np.max(np.abs(np.asarray(a.q)[-1] - np.asarray(b.q)[-1])) > 10 * diffs[2]


def _rattle(x0, p0, h, n, m=1.0, grav=9.81, ell=1.0):
    """Textbook RATTLE (Andersen 1983) for the Cartesian pendulum, numpy, M = m I, G(x) = x^T / l."""
    gradV = np.array([0.0, 0.0, m * grav])
    xs, ps, pre = [x0], [p0], [p0]
    x, p = x0.copy(), p0.copy()
    for _ in range(n):
        a = p - 0.5 * h * gradV
        # x1 = x + (h/m)(a - (h/2) lam x/l), |x1| = l: a scalar quadratic in lam, the root near 0
        lam = 0.0
        for _ in range(50):
            x1 = x + (h / m) * (a - 0.5 * h * lam * x / ell)
            r = (x1 @ x1 - ell**2) / (2 * ell)
            dr = x1 @ (-(h / m) * 0.5 * h * x / ell) / ell
            lam -= r / dr
        x1 = x + (h / m) * (a - 0.5 * h * lam * x / ell)
        phat = a - 0.5 * h * lam * x / ell - 0.5 * h * gradV
        n1 = x1 / ell
        p1 = phat - (n1 @ phat) * n1  # dg(x1) M^-1 p1 = 0
        x, p = x1, p1
        xs.append(x)
        ps.append(p)
        pre.append(phat)
    return np.array(xs), np.array(ps), np.array(pre)


def test_start_from_a_momentum_with_a_normal_component(cart, start_s2):
    """p0 = m v0 + dg(q0)^T c (a reaction impulse added) starts the same motion as v0: the constrained
    Legendre transform drops the normal part (it is absorbed by the first multiplier)."""
    q0, _, v0 = start_s2
    a = integrate(cart, q0, v0=v0, h=0.01, n_steps=50)
    b = integrate(cart, q0, p0=v0 + 3.0 * q0, h=0.01, n_steps=50)
    np.testing.assert_allclose(np.asarray(b.q), np.asarray(a.q), atol=1e-13)
    np.testing.assert_allclose(b.p, a.p, atol=1e-12)
    c = integrate(cart, q0, p0=1.01 * v0, h=0.01, n_steps=50)  # sensitivity: a tangential change is seen
    assert np.max(np.abs(np.asarray(c.q) - np.asarray(a.q))) > 1e-3


def test_start_from_rest_or_momentum_with_the_constraint_at_round_off(cart):
    """A start on the sphere only to round-off (g(q0) = -5.6e-17), from rest or from a momentum: the
    constraint rows of the first step have a zero-size warm start, and used to get a zero scale (a
    NonFiniteError at step 0). Both starts now hold |x| = 1 and agree: from p0 = m v0 the run is the run
    from v0 (the warm start is the Legendre inverse of p0)."""
    q0 = np.array([0.3, 0.2, -np.sqrt(1 - 0.13)])
    assert cart.holonomic(q0)[0] != 0.0  # the case: off the constraint by round-off
    rest = integrate(cart, q0, v0=np.zeros(3), h=0.01, n_steps=20)
    assert np.max(rest.holonomic_violation) < 1e-15
    v0 = np.array([0.0, 0.3, 0.2 * 0.3 / np.sqrt(1 - 0.13)])  # tangent: x . v = 0
    a = integrate(cart, q0, v0=v0, h=0.01, n_steps=20)
    b = integrate(cart, q0, p0=cart.momentum(q0, v0), h=0.01, n_steps=20)
    np.testing.assert_allclose(np.asarray(b.q), np.asarray(a.q), atol=1e-13)
    assert np.max(np.abs(np.asarray(rest.q) - np.asarray(a.q))) > 1e-3  # the two starts differ: both seen


@pytest.mark.slow
def test_a_batch_is_its_members_run_alone(cart, start_s2):
    """A batch of three starts (one vmap'd program) gives each member's single run, and the constraint
    at round-off in every member; a member with another start differs (the comparison can fail)."""
    q0, _, v0 = start_s2
    c, s_ = np.cos(0.4), np.sin(0.4)
    Rz = np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])  # rotations about the vertical: still on |x| = 1
    qs = np.stack([q0, Rz @ q0, Rz.T @ q0])
    vs = np.stack([v0, Rz @ v0, 0.5 * (Rz.T @ v0)])
    batch = integrate(cart, qs, v0=vs, h=0.01, n_steps=30)
    assert batch.ok and np.max(batch.holonomic_violation) < ROUNDOFF
    for b in range(3):
        alone = integrate(cart, qs[b], v0=vs[b], h=0.01, n_steps=30)
        np.testing.assert_allclose(np.asarray(batch.q)[:, b], np.asarray(alone.q), atol=1e-13)
        np.testing.assert_allclose(batch.v[:, b], alone.v, atol=1e-12)
    assert np.max(np.abs(np.asarray(batch.q)[:, 1] - np.asarray(batch.q)[:, 2])) > 1e-2


def test_the_start_checks_every_call_and_names_the_batch_member_off_the_constraint(cart, start_s2):
    """g(q0) = 0 is checked in the compiled start program, at every call: after a good start, a start of the
    same integrator (the same compiled program) off |x| = 1, or with v0 off the tangent plane, is refused,
    and a batch names its member off the constraint (the others on it: the check can pass)."""
    q0, _, v0 = start_s2
    integ = Integrator(cart, 0.01)
    integ.initial_state(q0, v0=v0)
    with pytest.raises(ValueError, match=r"q0 violates the holonomic constraint g\(q\) = 0 .*\|g\(q0\)\| = 5\.00\de-04"):
        integ.initial_state(1.0005 * q0, v0=v0)
    with pytest.raises(ValueError, match="not in the constraint distribution"):
        integ.initial_state(q0, v0=v0 + 0.1 * q0)
    qs = np.stack([q0, q0, q0])
    vs = np.stack([v0, v0, v0])
    integ.initial_state(qs, v0=vs)  # every member on the constraint: accepted
    qs[1] *= 1.0005
    with pytest.raises(ValueError, match=r"violates the holonomic constraint.*\(batch index \[1\]\)"):
        integ.initial_state(qs, v0=vs)


def test_the_start_checks_the_holonomic_constraint_with_the_parameters_of_the_call():
    """A constraint g(q) = |x|^2 - l^2 with the length a parameter: a start on the sphere of the length
    given to the call is accepted (the start evaluates g with the call's parameters, as the run does),
    a start on the sphere of the system's default length is then refused."""
    def L(q, v, params):
        return 0.5 * jnp.dot(v, v) - 9.81 * q[2]

    s = LagrangeDiracSystem(Euclidean(3), L, holonomic=lambda q, params: jnp.array([jnp.dot(q, q) - params["l"] ** 2]),
                            params={"l": 1.0}, name="pendulum of length l")
    integ = Integrator(s, 0.01)
    q1, v0 = np.array([0.0, 0.6, -0.8]), np.array([0.3, 0.0, 0.0])
    integ.initial_state(q1, v0=v0)  # on |x| = 1 with the default l = 1
    integ.initial_state(2.0 * q1, v0=v0, params={"l": 2.0})  # on |x| = 2 with l = 2
    with pytest.raises(ValueError, match=r"violates the holonomic constraint.*\|g\(q0\)\| = 3\.0"):
        integ.initial_state(q1, v0=v0, params={"l": 2.0})
    with pytest.raises(ValueError, match=r"violates the holonomic constraint.*\|g\(q0\)\| = 3\.0"):
        integ.initial_state(2.0 * q1, v0=v0)


@pytest.mark.slow
def test_trapezoid_plus_scheme_is_rattle(cart, start_s2):
    """With the trapezoid L_d (Stormer--Verlet) the constrained step is RATTLE: the same positions and,
    after the reported-momentum projection, the same momenta as the textbook method, to round-off."""
    q0, _, v0 = start_s2
    h, n = 0.02, 100
    tr = integrate(cart, q0, v0=v0, h=h, n_steps=n, scheme="plus", discrete_lagrangian="trapezoid")
    xs, ps, pre = _rattle(q0, v0.copy(), h, n)
    np.testing.assert_allclose(np.asarray(tr.q), xs, atol=1e-13)
    np.testing.assert_allclose(tr.p, ps, atol=1e-12)
    # sensitivity: without the projection (SHAKE's momenta D2 L_d) the momenta differ by the half reaction
    assert np.max(np.abs(tr.p[1:] - pre[1:])) > 1e-3


def test_one_form_alone_drifts_off_the_constraint(start_s2):
    """The issue's failure: the constraint given only as its differential x.v = 0 (a one-form) drifts off
    |x| = l with the plus scheme, while g(q) = 0 holds it to round-off (previous tests)."""
    q0, _, v0 = start_s2
    as_form = LagrangeDiracSystem(Euclidean(3), lambda q, v: 0.5 * jnp.sum(v * v) - 9.81 * q[2],
                                  constraint=lambda q: q[None, :], name="pendulum_one_form")
    tr = integrate(as_form, q0, v0=v0, h=0.01, n_steps=300, scheme="plus")
    assert np.max(np.abs(np.linalg.norm(np.asarray(tr.q), axis=-1) - 1.0)) > 1e-3


# ------------------------------------------------------------------ four-bar
def test_four_bar_closes_at_every_step_and_is_second_order(fourbar):
    q0, v0 = four_bar_initial()
    tr = integrate(fourbar, q0, v0=v0, h=0.01, n_steps=200)
    assert_on_constraint(fourbar, tr)
    E = tr.energy
    assert np.max(np.abs(E - E[0])) < 1e-2 * max(1.0, abs(E[0]))
    # second order (self-convergence against h/16, the same compiled step)
    T, hs = 0.4, np.array([0.04, 0.02, 0.01])
    ref = integrate(fourbar, q0, v0=v0, h=0.0025, n_steps=160)
    errs = [np.max(np.abs(np.asarray(integrate(fourbar, q0, v0=v0, h=h, n_steps=int(round(T / h))).q)[-1]
                          - np.asarray(ref.q)[-1])) for h in hs]
    assert 1.8 < slope(hs, errs) < 2.3, errs


@pytest.mark.slow
def test_project_position_and_velocity_give_consistent_four_bar_data(fourbar):
    q0, v0 = four_bar_initial()
    q_rough = q0 + np.array([0.0, 1e-3, -2e-3])
    with pytest.raises(ValueError, match="violates the holonomic constraint.*project_position"):
        integrate(fourbar, q_rough, v0=v0, h=0.01, n_steps=1)
    q1 = np.asarray(fourbar.project_position(q_rough))
    assert np.max(np.abs(np.asarray(fourbar.holonomic(q1)))) < 1e-13
    assert np.max(np.abs(q1 - q0)) < 5e-3
    v_rough = v0 + np.array([0.0, 0.01, 0.0])
    with pytest.raises(ValueError, match="not in the constraint distribution.*project_velocity"):
        integrate(fourbar, q0, v0=v_rough, h=0.01, n_steps=1)
    v1 = np.asarray(fourbar.project_velocity(q0, v_rough))
    C = np.asarray(fourbar.constraint_matrix(q0))
    assert np.max(np.abs(C @ v1)) < 1e-13
    # orthogonal in the kinetic-energy metric: M (v_rough - v1) is a constraint force C^T nu
    M = np.asarray(__import__("jax").jacfwd(lambda w: fourbar.momentum(q0, w))(v1))
    f = M @ (v_rough - v1)
    nu = np.linalg.lstsq(C.T, f, rcond=None)[0]
    np.testing.assert_allclose(C.T @ nu, f, atol=1e-13)
    # sensitivity: the Euclidean projection is not M-orthogonal here
    ve = v_rough - C.T @ np.linalg.solve(C @ C.T, C @ v_rough)
    fe = M @ (v_rough - ve)
    assert np.max(np.abs(C.T @ np.linalg.lstsq(C.T, fe, rcond=None)[0] - fe)) > 1e-4
    # a consistent velocity is left alone
    np.testing.assert_allclose(np.asarray(fourbar.project_velocity(q0, v0)), v0, atol=1e-14)


# ------------------------------------------------------------- the projection of the recorded points


def _projection_jaxpr(system, q, v):
    p = system.momentum(q, v)
    return str(jax.make_jaxpr(lambda q, v, p: system.holonomic_projection(q, v, p))(q, v, p))


def test_the_recorded_points_projection_is_unrolled_for_a_small_bordered_system(cart, fourbar, disk, start_s2,
                                                                                  monkeypatch):
    """The RATTLE projection runs at every recorded point inside the step loop: up to ``SMALL_PROJECTION_MAX``
    unknowns (the Cartesian pendulum's 4, the four-bar's 5, the 3-D rolling disk's 7) by the unrolled
    elimination, no LAPACK call that would split the loop into several kernels (and make a program loaded from
    the cache import SciPy's LAPACK first); above it LAPACK, which the check sees (the limit lowered)."""
    import manifold_dirac._mechanics.system as S

    q, _, v = start_s2
    q4, v4 = four_bar_initial()
    qd, vd = rolling_disk_3d_initial()
    cases = ((cart, jnp.asarray(q), jnp.asarray(v)), (fourbar, jnp.asarray(q4), jnp.asarray(v4)),
             (disk, qd, jnp.asarray(vd)))
    sizes = [s.dim + s.n_holonomic for s, _, _ in cases]
    assert sizes == [4, 5, 7] and max(sizes) <= S.SMALL_PROJECTION_MAX
    for system, qq, vv in cases:
        assert not LAPACK_PRIMITIVE.search(_projection_jaxpr(system, qq, vv))
    monkeypatch.setattr(S, "SMALL_PROJECTION_MAX", 6)
    assert not LAPACK_PRIMITIVE.search(_projection_jaxpr(fourbar, jnp.asarray(q4), jnp.asarray(v4)))
    assert LAPACK_PRIMITIVE.search(_projection_jaxpr(disk, qd, jnp.asarray(vd)))


def _project(system, q, v, p):
    """``system.holonomic_projection`` compiled afresh (a new function each call: the module's globals, which
    the tests patch, are read at this trace; compiled, the 3-D disk's projection costs less than eagerly)."""
    return jax.jit(lambda q, v, p: system.holonomic_projection(q, v, p))(q, v, p)


def _projection_reference(system, q, v, p):
    """RATTLE's projection in closed form (numpy): ``v' = v - M^-1 G^T S^-1 G v``, ``p' = p - G^T S^-1 G M^-1 p``,
    ``S = G M^-1 G^T``."""
    G = np.asarray(system.holonomic_differential(q, system.params))
    M = np.asarray(jax.jacfwd(lambda w: system.momentum(q, w))(v))
    Minv = np.linalg.inv(M)
    S = G @ Minv @ G.T
    v, p = np.asarray(v), np.asarray(p)
    return v - Minv @ G.T @ np.linalg.solve(S, G @ v), p - G.T @ np.linalg.solve(S, G @ Minv @ p)


@pytest.mark.slow
def test_the_unrolled_projection_equals_lapacks_and_the_closed_form(cart, fourbar, disk, start_s2, monkeypatch):
    """For a velocity and momentum off the constraints, the unrolled solve, LAPACK's and the closed form give the
    same projected ``(v, p)`` (to round-off); the closed form sees a wrong sign in the reaction and a momentum
    reported as the velocity."""
    import manifold_dirac._mechanics.system as S

    q2, _, v2 = start_s2
    q4, v4 = four_bar_initial()
    qd, vd = rolling_disk_3d_initial()
    cases = [(cart, jnp.asarray(q2), jnp.asarray(v2) + jnp.array([0.2, -0.1, 0.3]), jnp.array([0.1, 0.2, -0.3])),
             (fourbar, jnp.asarray(q4), jnp.asarray(v4) + jnp.array([0.0, 0.3, -0.2]), jnp.array([0.1, -0.4, 0.25])),
             (disk, qd, jnp.asarray(vd) + jnp.array([0.1, -0.2, 0.3, 0.05, -0.1, 0.2]),
              jnp.array([0.2, 0.1, -0.3, 0.15, 0.05, -0.1]))]
    got = []
    for system, q, v, dp in cases:
        p = system.momentum(q, v) + dp
        unrolled = [np.asarray(x) for x in _project(system, q, v, p)]
        with monkeypatch.context() as m:
            m.setattr(S, "SMALL_PROJECTION_MAX", 0)
            lapack = [np.asarray(x) for x in _project(system, q, v, p)]
        reference = _projection_reference(system, q, v, p)
        for a, b, c in zip(unrolled, lapack, reference):
            np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)
            np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-13)
        G = np.asarray(system.holonomic_differential(q, system.params))
        assert np.max(np.abs(G @ unrolled[0])) < 1e-13  # tangent to g = 0
        assert np.max(np.abs(unrolled[1] - np.asarray(p))) > 1e-3  # the momentum did change (by a reaction)
        got.append((system, q, v, p, reference))
    # sensitivity: a wrong sign of the reaction, and the momentum's column reported as the velocity
    monkeypatch.setattr(S, "vm", lambda x, A: -(x @ A))
    for system, q, v, p, reference in got:
        assert np.max(np.abs(np.asarray(_project(system, q, v, p)[1]) - reference[1])) > 1e-3
    monkeypatch.undo()
    monkeypatch.setattr(S, "solve_small", lambda K, rhs: S.jnp.linalg.solve(K, rhs)[:, ::-1])
    for system, q, v, p, reference in got:
        assert np.max(np.abs(np.asarray(_project(system, q, v, p)[0]) - reference[0])) > 1e-3


# ------------------------------------------------------------- rolling disk
@pytest.mark.slow  # ~16 s: an order measurement on the 3-D rolling disk
def test_rolling_disk_contact_height_held_and_second_order(disk):
    q0, v0 = rolling_disk_3d_initial()
    tr = integrate(disk, q0, v0=v0, h=0.01, n_steps=200)
    assert tr.ok and np.max(tr.holonomic_violation) < ROUNDOFF
    # the physical slip of the one-forms is small (second order) but not round-off; the discrete residual is
    assert 1e-9 < np.max(tr.slip) < 1e-3
    assert np.max(tr.constraint_residual) < 1e-13
    # second order (self-convergence), positions of the centre
    T, hs = 0.4, np.array([0.04, 0.02, 0.01])
    ref = integrate(disk, q0, v0=v0, h=0.0025, n_steps=160)
    errs = [np.max(np.abs(np.asarray(integrate(disk, q0, v0=v0, h=h, n_steps=int(round(T / h))).q[1])[-1]
                          - np.asarray(ref.q[1])[-1])) for h in hs]
    assert 1.8 < slope(hs, errs) < 2.3, errs


def test_rolling_disk_dg_is_the_vertical_contact_velocity(disk):
    """dg by autodiff along the retraction equals the one-form e_z . (xdot + (R Omega) x rho), the vertical
    velocity of the contact point, at random attitudes; a disk of another radius does not."""
    rng = np.random.default_rng(3)
    SO3 = disk.Q.factors[0]
    for _ in range(5):
        R = np.asarray(SO3.exp(rng.normal(size=3) * 0.8))
        q = (R, np.array([0.1, -0.2, 0.3]))
        rho = np.asarray(rolling_disk_3d_contact(jnp.asarray(R), 0.5))
        hat = np.array([[0, -rho[2], rho[1]], [rho[2], 0, -rho[0]], [-rho[1], rho[0], 0]])
        row = np.concatenate([-(hat @ R)[2], [0.0, 0.0, 1.0]])
        np.testing.assert_allclose(np.asarray(disk.holonomic_differential(q))[0], row, atol=1e-13)
        # against a central difference along the retraction
        eps, fd = 1e-6, []
        for e in np.eye(6):
            fd.append((float(disk.holonomic(disk.Q.retract(q, eps * e))[0])
                       - float(disk.holonomic(disk.Q.retract(q, -eps * e))[0])) / (2 * eps))
        np.testing.assert_allclose(fd, row, atol=1e-8)
        rho2 = np.asarray(rolling_disk_3d_contact(jnp.asarray(R), 0.6))
        hat2 = np.array([[0, -rho2[2], rho2[1]], [rho2[2], 0, -rho2[0]], [-rho2[1], rho2[0], 0]])
        assert np.max(np.abs(np.concatenate([-(hat2 @ R)[2], [0, 0, 1.0]]) - row)) > 1e-3


# ---------------------------------------------------------- interconnection
@pytest.mark.slow
def test_two_particles_joined_by_a_rigid_rod_interconnected():
    """interconnect(..., holonomic=g) on the product: two particles in gravity joined by a rod |x1 - x2| = l.
    The rod length holds to round-off, the horizontal momentum is conserved, and parts() reports the rod's
    pull on each particle exactly: m (x_{k+1} - 2 x_k + x_{k-1}) / h^2 = -m g e_z + f_k (midpoint rule)."""
    from manifold_dirac._interconnection import interconnect

    def particle(m, name):
        return LagrangeDiracSystem(Euclidean(3), lambda q, v: 0.5 * m * jnp.sum(v * v) - 9.81 * m * q[2], name=name)

    pair = interconnect(particle(1.0, "a"), particle(2.0, "b"),
                        holonomic=lambda q: jnp.array([0.5 * (jnp.sum((q[0] - q[1]) ** 2) - 1.0)]))
    assert (pair.n_one_forms, pair.n_holonomic) == (0, 1)
    assert pair.constraint_rows()["interaction.holonomic"] == slice(0, 1)
    q0 = (np.array([0.0, 0.0, 0.0]), np.array([0.6, 0.0, -0.8]))
    v0 = np.array([1.6, 1.0, 1.2, 0.8, -0.5, 0.6])          # (x1 - x2) . (v1 - v2) = 0
    h = 0.01
    tr = integrate(pair, q0, v0=v0, h=h, n_steps=100)
    assert_on_constraint(pair, tr)
    xa, xb = (np.asarray(x) for x in tr.q)
    np.testing.assert_allclose(np.linalg.norm(xa - xb, axis=-1), 1.0, atol=1e-15)
    P = tr.p[:, 0:3] + tr.p[:, 3:6]
    np.testing.assert_allclose(P[:, :2] - P[0, :2], 0.0, atol=1e-13)
    parts = pair.parts(tr)
    for name, x, m in (("a", xa, 1.0), ("b", xb, 2.0)):
        f = parts[name].interaction_force
        newton = m * ((x[2:] - 2 * x[1:-1] + x[:-2]) / h**2 + np.array([0.0, 0.0, 9.81]))
        np.testing.assert_allclose(newton, f[1:], atol=1e-7 * np.max(np.abs(f)))
    # action and reaction along the rod; sensitivity: a's force is not b's law
    np.testing.assert_allclose(parts["a"].interaction_force, -parts["b"].interaction_force, atol=1e-12)
    assert np.max(np.abs(2.0 * ((xb[2:] - 2 * xb[1:-1] + xb[:-2]) / h**2 + [0, 0, 9.81])
                         - parts["a"].interaction_force[1:])) > 1.0


@pytest.mark.slow
def test_rods_pinned_by_spherical_joints():
    """An interconnection whose interaction is holonomic (pin_joint): the joints coincide at every step,
    and parts() reports the joint reaction on the lower rod exactly: its centre obeys the discrete Newton
    law m (x_{k+1} - 2 x_k + x_{k-1}) / h^2 = -m g e_z + f_k with f_k the interaction force."""
    sysm = rigid_double_pendulum()
    q0, v0 = rigid_double_pendulum_initial()
    h = 0.01
    tr = integrate(sysm, q0, v0=v0, h=h, n_steps=60)
    assert_on_constraint(sysm, tr)
    (R1, x1), (R2, x2) = (tuple(np.asarray(a) for a in part) for part in tr.q)
    top, bottom = np.array([0, 0, 0.5]), np.array([0, 0, -0.5])
    assert np.max(np.abs(x1 + R1 @ top)) < ROUNDOFF
    assert np.max(np.abs(x1 + R1 @ bottom - x2 - R2 @ top)) < ROUNDOFF
    assert sysm.constraint_rows()["interaction.holonomic"] == slice(0, 6)
    parts = sysm.parts(tr)
    f = parts["lower"].interaction_force[:, 3:]          # (Omega, xdot) frame: the force on the centre
    assert f.shape == (60, 3) and np.max(np.abs(f)) > 1.0
    newton = (x2[2:] - 2 * x2[1:-1] + x2[:-2]) / h**2 + np.array([0.0, 0.0, 9.81])
    np.testing.assert_allclose(newton, f[1:], atol=1e-6 * np.max(np.abs(f)))
    # sensitivity: the upper rod's interaction force (both joints) does not balance the lower rod
    assert np.max(np.abs(newton - parts["upper"].interaction_force[1:, 3:])) > 1.0


def test_holonomic_validation_errors():
    E3 = Euclidean(3)
    L = lambda q, v: 0.5 * jnp.sum(v * v)  # noqa: E731
    with pytest.raises(ValueError, match=r"holonomic constraint g\(q\) must return an array of shape \(r,\)"):
        LagrangeDiracSystem(E3, L, holonomic=lambda q: jnp.ones((2, 2)))
    with pytest.raises(TypeError, match="cannot be traced"):
        LagrangeDiracSystem(E3, L, holonomic=lambda q: np.array([float(q[0]) - 1.0]))
    with pytest.raises(TypeError, match="must return an array of shape"):
        LagrangeDiracSystem(E3, L, holonomic=lambda q: None)
    with pytest.raises(ValueError, match="at most 3 constraints"):
        LagrangeDiracSystem(E3, L, constraint=np.eye(3)[:2], holonomic=lambda q: q[:2])
    with pytest.raises(TypeError, match="holonomic must be callable"):
        LagrangeDiracSystem(E3, L, holonomic=[1.0, 0.0, 0.0])
    s = LagrangeDiracSystem(E3, L, holonomic=lambda q: jnp.array([q[0], q[0]]))
    with pytest.raises(ValueError, match="dependent"):
        s.check_position(np.zeros(3))
    s = LagrangeDiracSystem(E3, L, holonomic=lambda q: jnp.array([jnp.sum(q * q) - 1.0]))
    assert (s.n_constraints, s.n_one_forms, s.n_holonomic) == (1, 0, 1)
    assert not s.has_constant_constraint
    with pytest.raises(ValueError, match=r"not reached"):
        s.project_position(np.zeros(3), max_iter=3)


def test_t_final(cart, start_s2):
    q0, _, v0 = start_s2
    tr = integrate(cart, q0, v0=v0, h=0.1, t_final=10.0)
    assert tr.meta["n_steps"] == 100 and tr.t[-1] == pytest.approx(10.0)
    tr = integrate(cart, q0, v0=v0, h=0.1, t0=1.0, t_final=1.3)
    assert tr.meta["n_steps"] == 3
    with pytest.raises(ValueError, match="not a whole number of steps.*t_final = 10 or 10.1,"):
        integrate(cart, q0, v0=v0, h=0.1, t_final=10.05)
    with pytest.raises(ValueError, match="not both"):
        integrate(cart, q0, v0=v0, h=0.1, t_final=1.0, n_steps=10)
    with pytest.raises(ValueError, match="give n_steps"):
        integrate(cart, q0, v0=v0, h=0.1)
    with pytest.raises(ValueError, match="before t0"):
        integrate(cart, q0, v0=v0, h=0.1, t_final=-1.0)


def test_slip_and_violation_survive_save_and_load(cart, start_s2, tmp_path):
    q0, _, v0 = start_s2
    tr = integrate(cart, q0, v0=v0, h=0.01, n_steps=20)
    back = type(tr).load(tr.save(tmp_path / "tr"))
    assert back.equals(tr)
    np.testing.assert_array_equal(back.slip, tr.slip)
    np.testing.assert_array_equal(back.holonomic_violation, tr.holonomic_violation)
    import dataclasses
    assert not dataclasses.replace(tr, slip=tr.slip + 1.0).equals(tr)


# -------------------------------------------------------------------- slow
@pytest.mark.slow
@pytest.mark.parametrize("scheme", SCHEMES)
def test_every_scheme_holds_g_on_four_bar_and_rolling_disk(fourbar, disk, scheme):
    q0, v0 = four_bar_initial()
    assert_on_constraint(fourbar, integrate(fourbar, q0, v0=v0, h=0.01, n_steps=500, scheme=scheme))
    q0, v0 = rolling_disk_3d_initial()
    tr = integrate(disk, q0, v0=v0, h=0.01, n_steps=5000, scheme=scheme)  # T = 50: the drift test
    assert tr.ok and np.max(tr.holonomic_violation) < ROUNDOFF


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cartesian_pendulum", "four_bar", "rolling_disk_3d"])
def test_energy_bounded_over_1e5_steps(name, cart, fourbar, disk, start_s2):
    sysm = {"cartesian_pendulum": cart, "four_bar": fourbar, "rolling_disk_3d": disk}[name]
    q0, v0 = {"cartesian_pendulum": start_s2[::2], "four_bar": four_bar_initial(),
              "rolling_disk_3d": rolling_disk_3d_initial()}[name]
    tr = integrate(sysm, q0, v0=v0, h=0.01, n_steps=100_000, stride=100)
    assert tr.ok and np.max(tr.holonomic_violation) < 1e-12
    dE = np.abs(tr.energy - tr.energy[0])
    first, last = np.max(dE[: len(dE) // 10]), np.max(dE[-len(dE) // 10:])
    print(f"{name}: max |E - E0| = {np.max(dE):.3e} (first tenth {first:.3e}, last tenth {last:.3e}), "
          f"max |g| = {np.max(tr.holonomic_violation):.1e}, max slip = {np.max(tr.slip):.1e}")
    assert np.max(dE) < 0.05 * max(1.0, abs(tr.energy[0]))
    assert last < 3 * first + 1e-12  # bounded: no drift


@pytest.mark.slow
def test_pinned_rods_energy_second_order_and_bounded():
    sysm = rigid_double_pendulum()
    q0, v0 = rigid_double_pendulum_initial()
    errs = [integrate(sysm, q0, v0=v0, h=h, t_final=2.0).energy_error for h in (0.01, 0.005)]
    tr = integrate(sysm, q0, v0=v0, h=0.01, n_steps=100_000, stride=100)
    dE = np.abs(tr.energy - tr.energy[0])
    print(f"pinned rods: energy error over T = 2 at h = 0.01, 0.005: {errs[0]:.3e}, {errs[1]:.3e}; over 10^5 "
          f"steps max {np.max(dE):.3e}, max |g| = {np.max(tr.holonomic_violation):.1e}")
    assert 3.0 < errs[0] / errs[1] < 5.0
    assert tr.ok and np.max(tr.holonomic_violation) < 1e-12
    assert np.max(dE[-len(dE) // 10:]) < 3 * np.max(dE[: len(dE) // 10]) + 1e-12
