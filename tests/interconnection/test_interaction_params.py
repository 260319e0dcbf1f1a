"""The constants of an interconnection are parameters: a radius, an axle's length, a gear ratio.

An interaction's numbers (and a holonomic joint's anchors) are ``params`` of
the interconnected system next to the subsystems' own, so

* a bundled interconnected system built again with other constants has the
  same structure key and runs the programs compiled for the first (nothing
  compiles), with its own values: it equals a system written by hand with the
  constants built in (compiled afresh) to round-off, and a wrong value in
  ``params`` changes the motion;
* ``rollout`` differentiates with respect to them (a wheel's radius fitted by
  gradient), matching central differences.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import monitoring

import manifold_dirac as md
from manifold_dirac import systems as S
from manifold_dirac._mechanics import compile_cache
from manifold_dirac._mechanics.compile_cache import structure_key
from manifold_dirac._interconnection import Interaction, interconnect, linear_interaction
from manifold_dirac._manifolds import SE2, Euclidean
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac.systems import KNIFE_EDGE_CONSTRAINT

_COMPILES = [0]


def _on_duration(event, duration, **kw):
    if event == "/jax/core/compile/backend_compile_duration":
        _COMPILES[0] += 1


monitoring.register_event_duration_secs_listener(_on_duration)


def _programs_and_compiles(fn):
    """``(result, new entries of the compiled-program table, XLA compilations)`` of ``fn()``."""
    keys = {k for k, _ in compile_cache.entries()}
    before = _COMPILES[0]
    out = fn()
    new = [k for k, _ in compile_cache.entries() if k not in keys]
    return out, len(new), _COMPILES[0] - before


# ----------------------------------------------------- the same structure
OTHER_CONSTANTS = {
    "mass_spring_torn": dict(m1=1.5, m2=0.7, k1=2.0, k12=0.5, k2=4.0),
    "lc_from_elements": dict(inductance=2.0, capacitance=0.3),
    "rolling_disk": dict(radius=0.6, mass=1.3, yaw_inertia=0.07, roll_inertia=0.2),
    "rolling_ball": dict(radius=0.7, mass=2.0),
    "two_wheel_cart": dict(track=1.3, radius=0.4, mass=1.2),
    "two_wheel_cart_flat": dict(track=1.3, radius=0.4, mass=1.2, yaw_inertia=0.08, roll_inertia=0.1),
    "rigid_double_pendulum": dict(length=1.2, mass=0.8, gravity=9.7),
}


@pytest.mark.parametrize("name", sorted(OTHER_CONSTANTS))
def test_other_constants_give_the_same_structure_and_other_params(name):
    """Every constant of a bundled interconnected system is in its params, none in its functions."""
    factory = getattr(S, name)
    a, b = factory(), factory(**OTHER_CONSTANTS[name])
    assert structure_key(a) == structure_key(b)
    la, lb = jax.tree.leaves(a.params), jax.tree.leaves(b.params)
    assert jax.tree.structure(a.params) == jax.tree.structure(b.params)
    assert any(not np.array_equal(x, y) for x, y in zip(la, lb))


def test_the_structure_key_sees_a_constant_an_interaction_closes_over():
    """The same check can fail: an interaction whose radius is built into its function is another program."""
    def disk(radius):
        body, wheel = S.rolling_disk().subsystems
        rows = Interaction(lambda q: jnp.array([[0.0, 1.0, 0.0, -radius]]), label="rolling")
        return interconnect(body, wheel, names=("body", "wheel"), interaction=rows)

    assert structure_key(disk(0.5)) == structure_key(disk(0.5))
    assert structure_key(disk(0.5)) != structure_key(disk(0.6))


# ------------------------------------------- one program, each its values
Q0 = (np.asarray(SE2().identity()), np.zeros(1))
RUN = dict(h=0.05, n_steps=40, stride=10)


def _v0(radius, heading_rate=0.7, rolling_rate=2.0):
    return np.array([heading_rate, radius * rolling_rate, 0.0, rolling_rate])


def _disk_by_hand(radius, mass, yaw_inertia, roll_inertia):
    """The rolling disk with every constant built into its functions and a constant interaction matrix."""
    body = LagrangeDiracSystem(
        SE2(), lambda q, v: 0.5 * mass * (v[1] ** 2 + v[2] ** 2) + 0.5 * yaw_inertia * v[0] ** 2,
        KNIFE_EDGE_CONSTRAINT, name="body")
    wheel = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * roll_inertia * v[0] ** 2, name="wheel")
    return interconnect(body, wheel, interaction=Interaction(np.array([[0.0, 1.0, 0.0, -radius]])),
                        name="disk_by_hand")


@pytest.fixture(scope="module")
def disks():
    """The default disk run (compiles, or finds, the programs), then one with other constants."""
    first = md.integrate(S.rolling_disk(), Q0, v0=_v0(0.5), **RUN)
    other = dict(radius=0.6, mass=1.3, yaw_inertia=0.07, roll_inertia=0.2)
    sysm = S.rolling_disk(**other)
    second, programs, compiles = _programs_and_compiles(lambda: md.integrate(sysm, Q0, v0=_v0(0.6), **RUN))
    return dict(first=first, second=second, programs=programs, compiles=compiles, other=other, sysm=sysm)


def test_a_disk_with_another_radius_compiles_nothing_and_runs_with_its_own_values(disks):
    assert disks["programs"] == 0 and disks["compiles"] == 0, disks
    second = disks["second"]
    # the constants matter: the default disk moves otherwise
    assert np.max(np.abs(second.q[0] - disks["first"].q[0])) > 1e-3
    # the closed form of a disk rolling at R phi' with R = 0.6 (O(h^2); 0.28 apart for the radius 0.5)
    ex = S.rolling_disk_exact(second.t, 0.6, 0.7, 2.0)
    assert np.max(np.abs(second.q[0][:, 0, 2] - ex[:, 0])) < 2e-2


@pytest.mark.slow
def test_a_disk_with_another_radius_equals_one_compiled_afresh_with_its_constants_built_in(disks):
    """The run with the shared programs equals, to round-off, a disk whose constants are built into its
    functions and its constant interaction matrix (a new program, compiled for it)."""
    hand, programs, _ = _programs_and_compiles(
        lambda: md.integrate(_disk_by_hand(**disks["other"]), Q0, v0=_v0(0.6), **RUN))
    assert programs > 0  # the count sees a new program
    second = disks["second"]
    for a, b in zip(jax.tree.leaves((second.q, second.p, second.mu)), jax.tree.leaves((hand.q, hand.p, hand.mu))):
        assert np.max(np.abs(np.asarray(a) - np.asarray(b))) <= 1e-13
    wrong = md.integrate(_disk_by_hand(**{**disks["other"], "mass": 1.0}), Q0, v0=_v0(0.6), **RUN)
    assert np.max(np.abs(np.asarray(wrong.p) - np.asarray(second.p))) > 1e-3  # a wrong constant shows


def test_a_wrong_radius_in_params_changes_the_motion(disks):
    """``integrate(..., params=)`` with the interaction's radius alone changed: the program reads it."""
    sysm = disks["sysm"]
    body, wheel, _ = sysm.params
    wrong = (body, wheel, {"interaction": ({"radius": np.float64(0.5)},)})
    with pytest.raises(ValueError, match="constraint distribution"):  # v0 rolls at 0.6: refused for 0.5
        md.integrate(sysm, Q0, v0=_v0(0.6), params=wrong, **RUN)
    again, programs, compiles = _programs_and_compiles(
        lambda: md.integrate(sysm, Q0, v0=_v0(0.5), params=wrong, **RUN))
    assert programs == 0 and compiles == 0
    # the same as a disk built with the radius 0.5 (and the other constants of sysm)
    built_system = S.rolling_disk(**{**disks["other"], "radius": 0.5})
    built = md.integrate(built_system, Q0, v0=_v0(0.5), **RUN)
    assert np.max(np.abs(np.asarray(again.p) - np.asarray(built.p))) <= 1e-13
    assert np.max(np.abs(again.q[0] - built.q[0])) <= 1e-13
    # the radius is in the constraint: v_x = R phi' on every stored point, with R = 0.5, not 0.6
    v = np.asarray(again.v)
    np.testing.assert_allclose(v[:, 1], 0.5 * v[:, 3], atol=1e-12)
    assert np.max(np.abs(v[:, 1] - 0.6 * v[:, 3])) > 0.1
    # the forces per subsystem are read back with the params of the run
    mine, theirs = sysm.parts(again, params=wrong), built_system.parts(built)
    for name in ("body", "wheel"):
        np.testing.assert_allclose(mine[name].interaction_force, theirs[name].interaction_force, rtol=0, atol=1e-12)
    f = mine["wheel"].interaction_force  # R mu / h: read with the default radius 0.6 it is 6/5 of itself
    assert np.max(np.abs(sysm.parts(again)["wheel"].interaction_force - f)) > 0.1 * np.max(np.abs(f)) > 0


def test_params_of_another_structure_are_refused(disks):
    sysm = disks["sysm"]
    with pytest.raises(ValueError, match="structure of system.params"):
        md.integrate(sysm, Q0, v0=_v0(0.6), params=sysm.params[:2], **RUN)


# ------------------------------------------------ the derivative by radius
@pytest.mark.slow
def test_the_gradient_with_respect_to_the_radius_matches_central_differences():
    """Fitting a wheel's radius: ``d x(T) / d R`` through ``rollout``, with the initial velocity rolling
    at ``R phi'`` and the radius in the interaction only, against central differences of the same run."""
    disk = S.rolling_disk()
    body, wheel, _ = disk.params
    q0 = (jnp.eye(3), jnp.zeros(1))

    def final_x(radius, rolling_radius):
        """x(T) with the interaction's radius and the radius of the initial rolling speed apart."""
        params = (body, wheel, {"interaction": ({"radius": radius},)})
        v0 = jnp.stack([0.7, 2.0 * rolling_radius, 0.0, 2.0])
        r = md.rollout(disk, q0, v0, h=0.05, n_steps=20, params=params)
        return r.q[0][-1, 0, 2]

    value_and_grad = jax.jit(jax.value_and_grad(final_x, argnums=(0, 1)))
    x, (g, g_held) = value_and_grad(0.5, 0.5)
    eps = 1e-6
    fd = (value_and_grad(0.5 + eps, 0.5 + eps)[0] - value_and_grad(0.5 - eps, 0.5 - eps)[0]) / (2 * eps)
    total = float(g) + float(g_held)
    assert abs(total - float(fd)) <= 1e-7 * abs(float(fd))
    # near the continuous one: x(T) = R (phi'/theta') sin(theta' T) is linear in R, dx/dR = x / R
    assert abs(total - float(x) / 0.5) <= 1e-2 * abs(total)
    # the interaction's radius carries its share: without it the derivative disagrees with the differences
    assert abs(float(g_held) - float(fd)) > 1e-2 * abs(float(fd))


# ------------------------------------------------- interactions with params
def test_an_interaction_with_params_and_the_layout_of_the_params():
    mass = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v, name="m")
    lever = Interaction(lambda q, p: jnp.stack([1.0, p["k"]])[None, :], params={"k": 2.0}, label="lever")
    fixed = Interaction(np.array([[1.0, 1.0]]), label="fixed")
    both = interconnect(mass, mass, names=("a", "b"), interaction=lever + fixed)
    assert both.params == (None, None, {"interaction": ({"k": 2.0}, None)})
    q = (np.zeros(1), np.zeros(1))
    np.testing.assert_allclose(both.constraint_matrix(q), [[1.0, 2.0], [1.0, 1.0]])
    np.testing.assert_allclose(both.constraint_matrix(q, (None, None, {"interaction": ({"k": 5.0}, None)})),
                               [[1.0, 5.0], [1.0, 1.0]])
    # nested: the inner system's own params stay with it
    outer = interconnect(both, mass, names=("pair", "c"),
                         interaction=linear_interaction({("pair.a", 0): 1.0, ("c", 0): -3.0}))
    assert outer.params[0] == both.params and outer.params[1] is None
    np.testing.assert_allclose(outer.params[2]["interaction"][0]["coefficients"], [1.0, -3.0])
    np.testing.assert_allclose(outer.constraint_matrix((q, np.zeros(1)))[-1], [1.0, 0.0, -3.0])


def test_linear_interaction_coefficients_as_functions_of_params():
    mass = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v, name="m")
    rows = linear_interaction([{("a", 0): 1.0, ("b", 0): lambda p: -p["arm"]}, {("b", 0): 1.0}],
                              params={"arm": 2.0})
    assert rows.params == ({"arm": 2.0},)
    both = interconnect(mass, mass, names=("a", "b"), interaction=rows)
    q = (np.zeros(1), np.zeros(1))
    np.testing.assert_allclose(both.constraint_matrix(q), [[1.0, -2.0], [0.0, 1.0]])
    np.testing.assert_allclose(both.constraint_matrix(q, (None, None, {"interaction": ({"arm": 3.0},)})),
                               [[1.0, -3.0], [0.0, 1.0]])


def test_a_component_named_twice_gets_the_sum_of_its_coefficients():
    """``v_a = 3 v_a`` is ``(1 - 3) v_a = 0``, as a matrix row would say."""
    mass = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v, name="m")
    both = interconnect(mass, mass, names=("a", "b"), interaction=md.equal_velocities(("a", 0), ("a", 0), 3.0))
    np.testing.assert_allclose(both.constraint_matrix((np.zeros(1), np.zeros(1))), [[-2.0, 0.0]])


def test_bad_interaction_params_are_refused():
    with pytest.raises(TypeError, match="S\\(q, params\\)"):
        Interaction(np.array([[1.0, -1.0]]), params={"k": 1.0})
    with pytest.raises(TypeError, match="coefficient must be a number"):
        linear_interaction({("a", 0): lambda p: 1.0})
    with pytest.raises(ValueError, match="finite"):
        linear_interaction({("a", 0): np.nan})
    with pytest.raises(ValueError, match="radius must be positive"):
        md.rolling_without_slipping("body", "wheel", -0.5)
    with pytest.raises(ValueError, match="finite"):
        md.equal_velocities(("a", 0), ("b", 0), ratio=np.inf)


def test_the_double_pendulum_reads_its_length_from_params():
    """The joints are placed by the length in params: a configuration consistent for l = 1.2 satisfies
    g = 0 with the params of l = 1.2 and not with those of l = 1."""
    sysm = S.rigid_double_pendulum(length=1.2)
    q0, _ = S.rigid_double_pendulum_initial(length=1.2)
    assert float(jnp.max(jnp.abs(sysm.holonomic(q0)))) < 1e-14
    short = S.rigid_double_pendulum(length=1.0).params
    assert float(jnp.max(jnp.abs(sysm.holonomic(q0, short)))) > 1e-2
