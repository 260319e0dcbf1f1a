"""Differentiable runs: the gradient of a trajectory functional is the exact
gradient of the discrete map.

Every derivative is checked against central finite differences of the forward
simulation (``rollout``, which is shown to be the same map as ``integrate``, and
of ``integrate`` itself where the data are its arguments), on SO(3) (heavy top),
SE(2) with a nonholonomic constraint (differential drive, controls), and an
interconnected system (rolling disk). Sensitivity: dropping the implicit term,
or differentiating through one truncated Newton update, breaks the agreement.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from manifold_dirac import integrate, rollout
from manifold_dirac._errors import StepDomainError
from manifold_dirac._interconnection import interconnect, rolling_without_slipping
from manifold_dirac._manifolds import SE2, Euclidean
from manifold_dirac._mechanics.status import Status
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import differential_drive, heavy_top

RTOL = 1e-7  # gradient vs central differences, relative to the gradient's size


def central_fd(f, x, eps=1e-6):
    """Central differences of a scalar ``f`` at the pytree ``x`` (flattened)."""
    flat, unravel = ravel_pytree(x)
    flat = np.asarray(flat, dtype=float)
    g = np.zeros_like(flat)
    for i in range(flat.size):
        e = np.zeros_like(flat)
        e[i] = eps
        g[i] = (float(f(unravel(jnp.asarray(flat + e)))) - float(f(unravel(jnp.asarray(flat - e))))) / (2 * eps)
    return g


def rel_err(a, b):
    a, b = np.asarray(ravel_pytree(a)[0]), np.asarray(ravel_pytree(b)[0])
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


WEIGHTS = jnp.arange(1.0, 10.0).reshape(3, 3) / 9.0


# ------------------------------------------------------------------ SO(3)
@pytest.fixture(scope="module")
def top():
    sysm = heavy_top(inertia=(1.0, 2.0, 3.0), mgl=1.0, chi=(0.1, 0.2, 1.0))
    q0 = sysm.Q.retract(jnp.eye(3), jnp.array([0.3, 0.2, 0.1]))
    v0 = jnp.array([0.5, 1.0, 2.0])
    params = jax.tree.map(jnp.asarray, sysm.params)
    h, N = 0.05, 20

    def J(params, eta, v0, h=h):
        r = rollout(sysm, sysm.Q.retract(q0, eta), v0, h=h, n_steps=N, params=params)
        return jnp.sum(r.q[-1] * WEIGHTS) + 0.1 * jnp.sum(r.p ** 2)

    # one compiled program gives the value (for the differences) and the gradient
    vg = jax.jit(jax.value_and_grad(J, argnums=(0, 1, 2, 3)))
    x = (params, jnp.zeros(3), v0, jnp.float64(h))
    grad = vg(*x)[1]
    return dict(sysm=sysm, q0=q0, v0=v0, params=params, h=h, N=N, J=J, vg=vg, x=x, grad=grad)


def test_heavy_top_gradient_matches_finite_differences(top):
    """Parameters (inertia, mgl, chi), q0 in the tangent frame, v0 and h: reverse mode vs central FD."""
    vg = top["vg"]
    fd = central_fd(lambda x: vg(*x)[0], top["x"])
    assert rel_err(top["grad"], fd) < RTOL


@pytest.mark.slow
def test_heavy_top_rollout_is_the_map_of_integrate(top):
    """The forward run is ``integrate``'s discrete map, and the gradient is that of ``integrate`` (FD)."""
    sysm, q0, h, N = top["sysm"], top["q0"], top["h"], top["N"]
    r = rollout(sysm, q0, top["v0"], h=h, n_steps=N)
    tr = integrate(sysm, q0, top["v0"], h=h, n_steps=N)
    assert np.max(np.abs(np.asarray(r.q) - tr.q)) < 1e-13 and np.max(np.abs(np.asarray(r.p) - tr.p)) < 1e-13
    assert int(r.status) == Status.OK and int(r.fail_step) == -1

    def J_integrate(eta, v0):
        tr = integrate(sysm, np.asarray(sysm.Q.retract(q0, eta)), np.asarray(v0), h=h, n_steps=N)
        return np.sum(tr.q[-1] * np.asarray(WEIGHTS)) + 0.1 * np.sum(tr.p ** 2)

    fd = central_fd(lambda x: J_integrate(*x), (jnp.zeros(3), top["v0"]))
    assert rel_err(top["grad"][1:3], fd) < RTOL


@pytest.mark.slow
def test_heavy_top_forward_and_reverse_modes_agree(top):
    fwd = jax.jit(jax.jacfwd(top["J"], argnums=(0, 1, 2, 3)))(*top["x"])
    assert rel_err(fwd, top["grad"]) < 1e-12


def test_motion_fixes_inertia_and_centre_of_mass_only_up_to_scale(top):
    """L and alpha L have the same motions: (inertia, mgl) scaled together leave q unchanged (the
    identification example fixes the scale by a measured length); scaling the inertia alone does not."""
    sysm, q0, v0, P = top["sysm"], top["q0"], top["v0"], top["params"]
    base = rollout(sysm, q0, v0, h=top["h"], n_steps=top["N"], params=P)
    both = rollout(sysm, q0, v0, h=top["h"], n_steps=top["N"], params={**P, "inertia": 3 * P["inertia"],
                                                                       "mgl": 3 * P["mgl"]})
    alone = rollout(sysm, q0, v0, h=top["h"], n_steps=top["N"], params={**P, "inertia": 3 * P["inertia"]})
    assert np.max(np.abs(np.asarray(both.q) - np.asarray(base.q))) < 1e-12
    assert np.max(np.abs(np.asarray(alone.q) - np.asarray(base.q))) > 1e-2


def test_failed_step_poisons_values_and_gradient(top):
    """A step outside the chart (|xi| > pi): status DOMAIN at that step, NaN values and gradient, check() raises."""
    sysm, q0, h, N = top["sysm"], top["q0"], top["h"], top["N"]
    fast = jnp.array([0.0, 0.0, 80.0])  # 4 rad per step
    r = rollout(sysm, q0, fast, h=h, n_steps=N)
    assert int(r.status) == Status.DOMAIN and int(r.fail_step) == 0
    assert np.all(np.isnan(np.asarray(r.q[1:]))) and np.all(np.isfinite(np.asarray(r.q[0])))
    g = top["vg"](top["params"], jnp.zeros(3), fast, jnp.float64(h))[1]
    assert np.all(np.isnan(ravel_pytree(g)[0]))
    with pytest.raises(StepDomainError, match="step 0"):
        r.check()


# ------------------------------------------------- SE(2), nonholonomic, controls
@pytest.fixture(scope="module")
def drive():
    sysm = differential_drive(mass=1.0, inertia=0.1, drive=lambda t: 0.0 * t, steer=lambda t: 0.0 * t,
                              damping=0.1)
    q0 = jnp.eye(3)
    h, N = 0.1, 12
    rng = np.random.default_rng(3)
    controls = jnp.asarray(np.c_[rng.normal(0, 0.5, N), rng.normal(1.0, 0.5, N), np.zeros(N)])
    params = jax.tree.map(jnp.asarray, sysm.params)
    v0 = jnp.array([0.2, 0.5, 0.0])  # in Delta: no sideways velocity

    def make_J(**kw):
        def J(params, controls, v0):
            r = rollout(sysm, q0, v0, h=h, n_steps=N, params=params, controls=controls, **kw)
            return jnp.sum(r.q[-1] * WEIGHTS) + jnp.sum(r.q[N // 2] ** 2), jnp.sum(r.iterations)
        return J

    J = make_J()
    vg = jax.jit(jax.value_and_grad(J, argnums=(0, 1, 2), has_aux=True))
    x = (params, controls, v0)
    grad = vg(*x)[1]
    fd = central_fd(lambda x: vg(*x)[0][0], x)
    return dict(sysm=sysm, q0=q0, h=h, N=N, x=x, J=J, vg=vg, make_J=make_J, grad=grad, fd=fd)


@pytest.mark.slow
def test_differential_drive_gradient_matches_finite_differences(drive):
    """SE(2) with the no-slip constraint: d/d(mass, inertia, damping, controls, v0) vs central FD."""
    assert rel_err(drive["grad"], drive["fd"]) < RTOL


@pytest.mark.slow  # integrate with controls compiles its own chunk
def test_differential_drive_rollout_is_the_map_of_integrate(drive):
    """With controls: the same trajectory as integrate, and the gradient in the controls is that of integrate."""
    sysm, q0, h, N = drive["sysm"], drive["q0"], drive["h"], drive["N"]
    params, controls, v0 = drive["x"]
    r = rollout(sysm, q0, v0, h=h, n_steps=N, controls=controls)
    tr = integrate(sysm, q0, v0, h=h, n_steps=N, controls=np.asarray(controls))
    assert np.max(np.abs(np.asarray(r.q) - tr.q)) < 1e-13

    def J_integrate(u):
        tr = integrate(sysm, q0, v0, h=h, n_steps=N, controls=np.asarray(u))
        return np.sum(tr.q[-1] * np.asarray(WEIGHTS)) + np.sum(tr.q[N // 2] ** 2)

    fd = central_fd(J_integrate, controls)
    assert rel_err(drive["grad"][1], fd) < RTOL


@pytest.mark.slow  # another compiled gradient program
def test_gradient_does_not_depend_on_newton_iterations(drive):
    """Newton from z = 0 each step (more iterations) gives the same gradient: it is not taken through them."""
    (_, warm_iterations), _ = drive["vg"](*drive["x"])
    cold = jax.jit(jax.value_and_grad(drive["make_J"](warm_start=False), argnums=(0, 1, 2), has_aux=True))
    (_, cold_iterations), g_cold = cold(*drive["x"])
    assert int(cold_iterations) > int(warm_iterations)
    assert rel_err(g_cold, drive["grad"]) < 1e-11


@pytest.mark.slow
def test_dropping_the_implicit_term_breaks_agreement(drive):
    """Sensitivity: the solution treated as a constant (the implicit term dropped) is far from FD."""
    detached = drive["make_J"](differentiation="detached")
    g = jax.jit(jax.grad(detached, argnums=(0, 1, 2), has_aux=True))(*drive["x"])[0]
    assert rel_err(g, drive["fd"]) > 1e-4


@pytest.mark.slow  # two more compiled gradient programs
def test_differentiating_through_newton_iterations_needs_many_of_them(drive):
    """Through one Newton update from the warm start the gradient is wrong; through four it is right
    (the derivative of the iterates converges to the implicit one), at four times the cost."""
    one, four = (drive["make_J"](differentiation="unrolled", unrolled_iterations=k) for k in (1, 4))
    both = jax.jit(lambda x: tuple(jax.grad(f, argnums=(0, 1, 2), has_aux=True)(*x)[0] for f in (one, four)))
    g1, g4 = both(drive["x"])
    assert rel_err(g1, drive["fd"]) > 1e-4
    assert rel_err(g4, drive["fd"]) < RTOL


@pytest.mark.slow  # a run from p0 compiles another program
def test_a_run_from_the_momentum_is_the_run_from_the_velocity(top):
    sysm, q0, v0, h, N = top["sysm"], top["q0"], top["v0"], top["h"], top["N"]
    p0 = sysm.momentum(q0, v0, sysm.params)
    a = rollout(sysm, q0, v0, h=h, n_steps=N)
    b = rollout(sysm, q0, p0=p0, h=h, n_steps=N)
    assert np.max(np.abs(np.asarray(a.q) - np.asarray(b.q))) < 1e-13


@pytest.mark.slow  # a batched gradient program
def test_batched_gradients_with_vmap(drive):
    """vmap of the gradient over initial velocities equals the gradient of each member."""
    J = drive["J"]
    params, controls, _ = drive["x"]
    v0s = jnp.array([[0.2, 0.5, 0.0], [-0.3, 1.0, 0.0], [0.0, 0.1, 0.0]])
    batched = jax.jit(jax.vmap(jax.grad(J, argnums=(1, 2), has_aux=True), in_axes=(None, None, 0)))(
        params, controls, v0s)[0]
    for i in range(len(v0s)):
        one = drive["vg"](params, controls, v0s[i])[1][1:]
        assert rel_err(jax.tree.map(lambda a: a[i], batched), one) < 1e-12


# --------------------------------------------------------- interconnected
@pytest.mark.slow  # ~23 s cold; gradients against finite differences stay on the heavy top and the differential drive
def test_interconnected_rolling_disk_gradient_matches_finite_differences():
    """A rolling disk assembled by interconnection: a body on SE(2) whose blade is turned by a parameter
    angle (a constraint parameter) with mass and inertia parameters, and a wheel on R; d/d(parameters of
    the Lagrangians and the constraint, q0 in the tangent frame, v0) against central differences."""

    def L_body(q, v, p):
        return 0.5 * p["mass"] * (v[1] ** 2 + v[2] ** 2) + 0.5 * p["inertia"] * v[0] ** 2

    def A_body(q, p):  # no slip across a blade turned by the angle p["blade"] in the body frame
        return jnp.stack([jnp.zeros(()), -jnp.sin(p["blade"]), jnp.cos(p["blade"])])[None, :]

    body = LagrangeDiracSystem(SE2(), L_body, A_body, name="body",
                               params={"mass": np.float64(1.0), "inertia": np.float64(0.0625),
                                       "blade": np.float64(0.1)})
    wheel = LagrangeDiracSystem(Euclidean(1, names=("phi",)), lambda q, v, p: 0.5 * p["roll"] * v[0] ** 2,
                                name="wheel", params={"roll": np.float64(0.125)})
    disk = interconnect(body, wheel, interaction=rolling_without_slipping("body", "wheel", 0.5), name="disk")
    q0 = (jnp.eye(3), jnp.zeros(1))
    h, N = 0.05, 12
    params = jax.tree.map(jnp.asarray, disk.params)
    v0 = jnp.array([0.4, 0.5, 0.5 * np.tan(0.1), 1.0])  # v_x = R phi', v_y = tan(blade) v_x

    def J(params, eta, v0):
        r = rollout(disk, disk.Q.retract(q0, eta), v0, h=h, n_steps=N, params=params)
        return jnp.sum(r.q[0][-1] * WEIGHTS) + jnp.sum(r.q[1][-1] ** 2) + 0.1 * jnp.sum(r.p ** 2)

    x = (params, jnp.zeros(disk.dim), v0)
    vg = jax.jit(jax.value_and_grad(J, argnums=(0, 1, 2)))
    grad = vg(*x)[1]
    fd = central_fd(lambda x: vg(*x)[0], x)
    assert rel_err(grad, fd) < RTOL


def test_bad_arguments_are_refused(top):
    sysm, q0, v0 = top["sysm"], top["q0"], top["v0"]
    with pytest.raises(ValueError, match="exactly one"):
        rollout(sysm, q0, h=0.1, n_steps=3)
    with pytest.raises(ValueError, match="n_steps"):
        rollout(sysm, q0, v0, h=0.1, n_steps=0)
    with pytest.raises(ValueError, match="controls"):
        rollout(sysm, q0, v0, h=0.1, n_steps=3, controls=jnp.zeros((2, 3)))
    with pytest.raises(ValueError, match="one point"):
        rollout(sysm, jnp.stack([q0, q0]), v0, h=0.1, n_steps=3)
    with pytest.raises(ValueError, match="differentiation"):
        rollout(sysm, q0, v0, h=0.1, n_steps=3, differentiation="finite")


def test_integrate_under_a_transformation_points_to_rollout(top):
    """integrate's host loop cannot be traced: the error says so and names rollout (not a shape complaint)."""
    sysm, q0 = top["sysm"], top["q0"]
    with pytest.raises(TypeError, match="rollout"):
        jax.grad(lambda w: integrate(sysm, q0, w, h=0.1, n_steps=3).q[-1].sum())(top["v0"])
