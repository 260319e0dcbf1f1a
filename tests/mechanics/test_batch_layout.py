"""A batch is stepped as a loop over blocks of members: each member gets the values of its own run.

On a CPU the batched step is a loop over blocks of members (``jax.lax.map``),
a block of more than one member a ``vmap``, the last block padded with copies
of the last member (``member_step``). Checked here on every layout (one
member per trip, blocks with padding, one ``vmap`` over the whole batch)
against the one-member step map applied to each member alone, with
per-member controls and a member that fails (in the padded last block), over
a few steps of a cheap system.
"""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import manifold_dirac as md
from manifold_dirac._manifolds import Euclidean
from manifold_dirac._mechanics.status import Status
from manifold_dirac._mechanics.system import LagrangeDiracSystem
from manifold_dirac._run.programs import member_step

H, N_STEPS, B = 0.1, 8, 7
WALL = LagrangeDiracSystem(Euclidean(1), lambda q, v: 0.5 * v @ v - jnp.log(2.0 - q[0]), name="log_wall")
Q0 = np.array([[0.0], [0.3], [-0.5], [1.0], [0.1], [-1.0], [1.9]])  # the last member runs into the wall
V0 = np.array([[0.1], [-0.2], [0.4], [0.0], [0.3], [1.0], [5.0]])
U = 0.3 * np.random.default_rng(0).standard_normal((N_STEPS, B, 1))


def _run(step, members, controls):
    recs = []
    for k in range(N_STEPS):
        members, rec = step(members, k, k * H, H, WALL.params, controls[k])
        recs.append(rec)
    return members, recs


@pytest.fixture(scope="module")
def alone():
    """Each member stepped alone by the one-member step map, with its own controls."""
    integ = md.Integrator(WALL, H)
    sm, st = integ.stepmap, integ.initial_state(Q0, V0).members
    one = jax.jit(sm.step)
    runs = [_run(one, jax.tree.map(lambda a: a[i], st), U[:, i]) for i in range(B)]
    return sm, st, runs


@functools.cache
def _stepper(sm, block):
    return jax.jit(member_step(sm, True, block))


def _member(tree, i):
    return jax.tree.map(lambda a: np.asarray(a)[i], tree)


def _assert_members_equal(batched, runs, atol):
    final, recs = batched
    for i, (f1, r1) in enumerate(runs):
        for a, b in zip(jax.tree.leaves(_member(final, i)), jax.tree.leaves(f1)):
            np.testing.assert_allclose(a, b, rtol=0, atol=atol, err_msg=f"member {i}")
        for rb, ra in zip(recs, r1):
            for a, b in zip(jax.tree.leaves(_member(rb, i)), jax.tree.leaves(ra)):
                np.testing.assert_allclose(a, b, rtol=0, atol=atol, err_msg=f"member {i}")


@pytest.mark.parametrize("block", [1, pytest.param(4, marks=pytest.mark.slow), 16])
def test_every_block_layout_gives_each_member_its_own_run(alone, block):
    sm, st, runs = alone
    assert int(runs[-1][0].status) != Status.OK and all(int(f.status) == Status.OK for f, _ in runs[:-1])
    batched = _run(_stepper(sm, block), st, U)
    _assert_members_equal(batched, runs, atol=0.0 if block == 1 else 1e-14)


def test_the_comparison_sees_a_member_given_another_members_run_or_controls(alone):
    """The members differ: a layout that mixed members up (or their controls) would fail the test above."""
    sm, st, runs = alone
    batched = _run(_stepper(sm, 4), st, U)
    shifted = runs[1:] + runs[:1]
    with pytest.raises(AssertionError):
        _assert_members_equal(batched, shifted, atol=1e-8)
    other_controls = _run(_stepper(sm, 4), st, U[:, ::-1])
    with pytest.raises(AssertionError):
        _assert_members_equal(other_controls, runs, atol=1e-8)


def test_the_default_layout_is_the_one_member_step_on_a_cpu(alone):
    """The default batched step gives each member its one-member values bit for bit (one member per trip), and
    runs the one-member step itself: its Newton floor is a branch (a conditional in the program), where a
    ``vmap``-ed block takes it from the linearization (none)."""
    sm, st, runs = alone
    if jax.default_backend() != "cpu":
        pytest.skip("the CPU layout")
    _assert_members_equal(_run(_stepper(sm, None), st, U), runs, atol=0.0)

    def text(block):
        return _stepper(sm, block).lower(st, 0, 0.0, H, WALL.params, U[0]).compile().as_text()

    assert re.search(r"\bconditional\(", text(None))
    assert not re.search(r"\bconditional\(", text(4))


def test_member_map_is_vmap_on_every_layout_and_refuses_another_batch_axis():
    from manifold_dirac._run.programs import member_map

    def f(x, c, y):
        return {"s": jnp.sin(x) * c + y.sum(), "t": (x * y[:1], c)}

    x, c, y = jnp.linspace(0.0, 1.0, 7), jnp.float64(3.0), jnp.arange(14.0).reshape(7, 2)
    want = jax.vmap(f, in_axes=(0, None, 0))(x, c, y)
    for block in (None, 1, 3, 16):
        got = jax.jit(member_map(f, (0, None, 0), block))(x, c, y)
        for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
            assert a.shape == b.shape  # (a vectorized sin and a scalar one differ in the last bit)
            np.testing.assert_allclose(a, b, rtol=1e-15, atol=0)
    wrong = jax.jit(member_map(f, (0, None, 0), 3))(x, c, y[::-1])  # the sensitivity: other members' y
    assert not np.allclose(wrong["s"], want["s"])
    with pytest.raises(ValueError, match="in_axes must be 0 or None"):
        member_map(f, (1, None, 0))
