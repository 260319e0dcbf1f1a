"""The snakeboard (``SE(2) x R^2``, two configuration-dependent one-forms): its model, and the library's orders on it.

* the reduced equations behind ``snakeboard_reference`` equal an
  independent solve of the constrained equations in spatial coordinates
  ``(x, y, theta, psi, phi)`` (an index-1 DAE, the multipliers solved for
  at every evaluation), with and without torques -- and a reference with
  one sign flipped is far off (the comparison can fail);
* the analytic partials equal finite differences;
* the ``symmetric`` scheme converges at order 2 to the reference (with
  and without torques), holds ``A(q) v = 0`` at the nodes to round-off,
  keeps the energy bounded and the rotor's momentum (a cyclic coordinate
  the constraints leave free) exact;
* composed with ``triple_jump4`` (``kahan_li8`` under ``slow``) it has the
  composition's order;
* starts on the singular set ``cos(phi) = 0`` or off the constraints are
  refused, by the library's start checks.

The unforced runs share one system (one compiled program per scheme and
composition); step sizes measured at ``T = 1``: symmetric
``(0.05, 0.025, 0.0125)`` slopes 2.04, 2.01; ``triple_jump4``
``(0.1, 0.05, 0.025)`` 3.75, 3.92; ``kahan_li8`` ``(0.25, 0.125, 0.0625)``
7.55, 7.88 (at ``(0.25, 0.125, 0.0625)`` ``triple_jump4`` is still
pre-asymptotic: 3.27, 3.66).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import manifold_dirac as md
from manifold_dirac.systems import snakeboard, snakeboard_initial, snakeboard_reference, vehicles

T = 1.0
PARAMS = {"mass": 1.0, "inertia": 0.2, "rotor_inertia": 0.1, "wheel_inertia": 0.05, "half_length": 0.5,
          "stiffness": 4.0}  # snakeboard()'s defaults, spelled out for the independent equations below


def _fit(hs, errs):
    return float(np.polyfit(np.log(hs), np.log(errs), 1)[0])


def _slopes(hs, errs):
    return np.diff(np.log(errs)) / np.diff(np.log(hs))


def _coordinates(q):
    """``(x, y, theta, psi, phi)`` of the last point of a run."""
    pose, shape = (np.asarray(a)[-1] for a in q)
    return np.array([pose[0, 2], pose[1, 2], math.atan2(pose[1, 0], pose[0, 0]), shape[0], shape[1]])


def _error(q, ref):
    d = _coordinates(q) - ref
    d[2] = (d[2] + np.pi) % (2 * np.pi) - np.pi
    return float(np.max(np.abs(d)))


@pytest.fixture(scope="module")
def board():
    return snakeboard()


@pytest.fixture(scope="module")
def start():
    return snakeboard_initial()


@pytest.fixture(scope="module")
def reference(start):
    return snakeboard_reference([T], *start)[0]


# ------------------------------------------------------------------ the model
def _spatial_mass(p=PARAMS):
    """The kinetic energy's matrix in ``(x', y', theta', psi', phi')``."""
    m, Jr, Jw = p["mass"], p["rotor_inertia"], p["wheel_inertia"]
    Jt = p["inertia"] + 2 * Jw + Jr
    return np.array([[m, 0, 0, 0, 0], [0, m, 0, 0, 0], [0, 0, Jt, Jr, 0], [0, 0, Jr, Jr, 0], [0, 0, 0, 0, 2 * Jw]])


def _spatial_dae_solve(ts, c0, qd0, tau_psi, tau_phi, p=PARAMS):
    """``(x, y, theta, psi, phi)`` at ``ts`` from the Lagrange--d'Alembert equations in spatial coordinates.

    ``M qdd = A_s(q)^T lam - dV/dq + tau``, ``A_s(q) qdd + (d/dt A_s) qd = 0``:
    each wheel's lateral velocity, ``-sin(theta +- phi) x' + cos(theta +- phi) y' +- r cos(phi) theta'``,
    vanishes (the front pair heads along ``theta + phi``, the back along ``theta - phi``). Solved for
    ``(qdd, lam)`` at every evaluation; DOP853 at 1e-12. Also returns the largest ``|A_s qd|`` on the way.
    """
    r, k = p["half_length"], p["stiffness"]
    M = _spatial_mass(p)

    def A_s(q):
        th, phi = q[2], q[4]
        return np.array([[-np.sin(th + phi), np.cos(th + phi), r * np.cos(phi), 0, 0],
                         [-np.sin(th - phi), np.cos(th - phi), -r * np.cos(phi), 0, 0]])

    def rhs(t, y):
        q, qd = y[:5], y[5:]
        th, phi, thd, phid = q[2], q[4], qd[2], qd[4]
        A_dot = np.array([[-np.cos(th + phi) * (thd + phid), -np.sin(th + phi) * (thd + phid),
                           -r * np.sin(phi) * phid, 0, 0],
                          [-np.cos(th - phi) * (thd - phid), -np.sin(th - phi) * (thd - phid),
                           r * np.sin(phi) * phid, 0, 0]])
        A = A_s(q)
        K = np.block([[M, -A.T], [A, np.zeros((2, 2))]])
        f = np.array([0.0, 0.0, 0.0, tau_psi(t), -k * phi + tau_phi(t)])
        sol = np.linalg.solve(K, np.concatenate([f, -A_dot @ qd]))
        return np.concatenate([qd, sol[:5]])

    sol = solve_ivp(rhs, (0.0, ts[-1]), np.concatenate([c0, qd0]), t_eval=ts, method="DOP853", rtol=1e-12,
                    atol=1e-12)
    drift = max(np.max(np.abs(A_s(y[:5]) @ y[5:])) for y in sol.y.T)
    return sol.y[:5].T, sol.y[5:].T, drift


def _spatial_start(q0, v0):
    """``(x, y, theta, psi, phi)`` and their rates from the library's ``(q0, v0)`` (body twist rotated)."""
    pose, shape = np.asarray(q0[0]), np.asarray(q0[1])
    th = math.atan2(pose[1, 0], pose[0, 0])
    omega, u, w, psid, phid = v0
    c0 = np.array([pose[0, 2], pose[1, 2], th, shape[0], shape[1]])
    qd0 = np.array([u * math.cos(th) - w * math.sin(th), u * math.sin(th) + w * math.cos(th), omega, psid, phid])
    return c0, qd0


TORQUES = {  # (rotor, steering); plain functions of a float t for both solvers
    "free": (lambda t: 0.0, lambda t: 0.0),
    "driven": (lambda t: 0.3 * math.sin(3 * t), lambda t: 0.2 * math.cos(2 * t)),
}


@pytest.mark.parametrize("case", sorted(TORQUES))
def test_reduced_reference_equals_the_spatial_dae(case, monkeypatch):
    """``snakeboard_reference`` (the reduced equations) against the DAE in spatial coordinates, to 1e-9 over T = 2.

    Sensitivity: the same reference with the sign of ``u'`` flipped is off by
    far more (the comparison would see a wrong reduced equation).
    """
    assert {k: float(v) for k, v in snakeboard().params.items()} == PARAMS
    tau_psi, tau_phi = TORQUES[case]
    q0, v0 = snakeboard_initial(pose=(0.1, -0.2, 0.3), psi=0.5)
    ts = np.linspace(0.0, 2.0, 9)
    torques = {} if case == "free" else {"rotor_torque": tau_psi, "steer_torque": tau_phi}
    red = snakeboard_reference(ts, q0, v0, **torques)
    c, cd, drift = _spatial_dae_solve(ts, *_spatial_start(q0, v0), tau_psi, tau_phi)
    assert drift < 1e-9  # the DAE's velocity constraint held along the solve
    assert np.max(np.abs(red - c)) < 1e-9, np.max(np.abs(red - c))
    assert np.ptp(red[:, 4]) > 0.5 and np.ptp(red[:, 2]) > 0.1  # a motion: steering swings, the board turns
    if case == "free":  # energy and the rotor's momentum J_r (theta' + psi') conserved
        E = 0.5 * np.einsum("ki,ij,kj->k", cd, _spatial_mass(), cd) + 0.5 * PARAMS["stiffness"] * c[:, 4] ** 2
        assert np.ptp(E) < 1e-10 and np.ptp(cd[:, 2] + cd[:, 3]) < 1e-10
        assert np.ptp(cd[:, 3]) > 0.1  # the rotor's rate relative to the board moves with the board's turning

    rates = vehicles._snakeboard_rates

    def flipped(*a):
        f = rates(*a)

        def g(t, y):
            out = f(t, y)
            out[5] = -out[5]
            return out

        return g

    monkeypatch.setattr(vehicles, "_snakeboard_rates", flipped)
    wrong = snakeboard_reference(ts, q0, v0, **torques)
    assert np.max(np.abs(wrong - c)) > 1e-3


def test_reference_and_initial_data_refuse_what_they_cannot_start_from(start):
    q0, v0 = start
    with pytest.raises(ValueError, match="not in the constraint distribution"):
        snakeboard_reference([1.0], q0, v0 + np.array([0.0, 0.0, 1e-6, 0.0, 0.0]))
    with pytest.raises(ValueError, match="both q0 and v0"):
        snakeboard_reference([1.0], q0)
    with pytest.raises(ValueError, match=r"\|phi\| < pi/2"):
        snakeboard_initial(phi=np.pi / 2)
    assert np.array_equal(snakeboard_reference([0.0], q0, v0)[0], [0.0, 0.0, 0.0, 0.0, 0.3])


def test_analytic_partials_equal_finite_differences(board):
    q = snakeboard_initial(pose=(0.3, -1.0, 2.0), psi=0.4, phi=-0.7)[0]
    v = np.array([0.3, -1.2, 0.5, 2.0, -0.8])
    assert board.check_partials(q, v, rtol=1e-7) <= 1e-7


# ------------------------------------------------------------------ the library on it
@pytest.mark.slow
def test_symmetric_scheme_order_constraints_energy_and_rotor_momentum(board, start, reference):
    """Order 2 (regression slope over three steps), ``A(q) v = 0`` at every node, energy bounded over 4000
    steps (200 periods of the steering), the rotor's momentum ``p_psi`` exact (a discrete Noether invariant:
    the constraints do not involve ``psi'``)."""
    q0, v0 = start
    hs, errs = (0.05, 0.025, 0.0125), []
    for h in hs:
        tr = md.integrate(board, q0, v0, h=h, n_steps=int(round(T / h)))
        assert float(np.max(tr.constraint_residual)) < 1e-13
        errs.append(_error(tr.q, reference))
    assert abs(_fit(hs, errs) - 2) < 0.2, (errs, _slopes(hs, errs))

    tr = md.integrate(board, q0, v0, h=0.05, n_steps=4000)  # every point: a stride near the steering's
    assert float(np.max(tr.constraint_residual)) < 1e-13   # period would sample its phase only
    dE = np.abs(np.asarray(tr.energy) - float(tr.energy[0]))[1:].reshape(4, -1).max(axis=1)
    assert dE.max() < 5e-4, dE  # measured 3.85e-4 of E = 1.13 in every quarter (and to T = 2000)
    assert dE[-1] < 1.05 * dE[0], dE  # no drift: the last quarter is not worse than the first
    p_psi = np.asarray(tr.p)[:, 3]
    assert np.ptp(p_psi) < 1e-12 and np.ptp(np.asarray(tr.v)[:, 3]) > 0.1


@pytest.mark.slow  # ~17 s cold: a driven board's program of its own (the free board's order 2 is in the slow tier too)
def test_driven_board_order_two():
    """Torques on the rotor and the steering (``jax.numpy`` functions of t): order 2 against the reference with
    the same torques (measured slopes 2.03, 2.01), so the force enters in the shape factor's frame coordinates."""
    torques = {"rotor_torque": lambda t: 0.3 * jnp.sin(3 * t), "steer_torque": lambda t: 0.2 * jnp.cos(2 * t)}
    driven = snakeboard(**torques)
    q0, v0 = snakeboard_initial()
    ref = snakeboard_reference([T], q0, v0, **torques)[0]
    assert np.max(np.abs(ref - snakeboard_reference([T], q0, v0)[0])) > 1e-2  # the torques matter
    hs, errs = (0.05, 0.025, 0.0125), []
    for h in hs:
        tr = md.integrate(driven, q0, v0, h=h, n_steps=int(round(T / h)), stride=int(round(T / h)))
        errs.append(_error(tr.q, ref))
    assert abs(_fit(hs, errs) - 2) < 0.2, (errs, _slopes(hs, errs))


@pytest.mark.slow  # three composed programs of the board (~40 s cold); order 4 of a composition: test_composition.py
def test_triple_jump_order_four(board, start, reference):
    q0, v0 = start
    hs, errs = (0.1, 0.05, 0.025), []
    for h in hs:
        n = int(round(T / h))
        tr = md.integrate(board, q0, v0, h=h, n_steps=n, composition="triple_jump4")
        assert tr.meta["order"] == 4
        assert float(np.max(tr.constraint_residual)) < 1e-13
        errs.append(_error(tr.q, reference))
    assert abs(_fit(hs, errs) - 4) < 0.35, (errs, _slopes(hs, errs))


@pytest.mark.slow  # another compiled program (~8 s without the persistent cache)
def test_kahan_li8_order_eight(board, start, reference):
    q0, v0 = start
    hs, errs = (0.25, 0.125, 0.0625), []
    for h in hs:
        n = int(round(T / h))
        tr = md.integrate(board, q0, v0, h=h, n_steps=n, stride=n, composition="kahan_li8")
        errs.append(_error(tr.q, reference))
    assert _fit(hs, errs) > 7.5, (errs, _slopes(hs, errs))  # measured 7.72 (errors 7.7e-6 ... 1.7e-10)


def test_starts_on_the_singular_set_or_off_the_constraints_are_refused(board, start):
    q0, v0 = start
    with pytest.raises(ValueError, match="v0 is not in the constraint distribution"):
        md.integrate(board, q0, v0 + np.array([0.0, 0.0, 1e-6, 0.0, 0.0]), h=0.05, n_steps=2)
    spin = np.array([1.0, 0.0, 0.0, 0.0, 0.0])  # the board turning on the spot: in Delta where cos(phi) = 0
    across = (q0[0], np.array([0.0, np.pi / 2]))  # wheels across the board: the one-forms are dependent
    with pytest.raises(ValueError, match="linearly dependent at q0"):
        md.integrate(board, across, spin, h=0.05, n_steps=2)
    # within 1e-9 of it the rank test passes (relative threshold 1e-10) and the step equations are refused
    nearly = snakeboard_initial(phi=np.pi / 2 - 1e-9, speed=1e-12, psi_dot=0.0, phi_dot=0.0)
    with pytest.raises(md.IllPosedSystemError, match="singular at the start"):
        md.integrate(board, *nearly, h=0.05, n_steps=2)


# ----------------------------------------------------------- refusals of the factory and the reference
@pytest.mark.parametrize("bad", [dict(mass=-1.0), dict(wheel_inertia=0.0), dict(half_length=0.0),
                                 dict(inertia=-0.5), dict(stiffness=float("nan"))])
def test_parameters_without_a_meaning_are_refused(bad):
    with pytest.raises(ValueError, match="snakeboard: need mass"):
        md.systems.snakeboard(**bad)
    with pytest.raises(ValueError, match="snakeboard_reference: need mass"):
        md.systems.snakeboard_reference([1.0], **bad)


def test_the_reference_refuses_a_start_across_the_board_and_a_failed_solve():
    q0, _ = md.systems.snakeboard_initial()
    q0 = (q0[0], np.array([0.0, np.pi / 2]))
    with pytest.raises(ValueError, match="cos\\(phi\\)"):  # A(q0) v0 = 0 holds for a board turning in place
        md.systems.snakeboard_reference([1.0], q0, np.array([1.0, 0.0, 0.0, 0.0, 0.0]))
    with pytest.raises(RuntimeError, match="solve_ivp stopped short"):
        md.systems.snakeboard_reference(np.linspace(0.0, 1.0, 11),
                                        rotor_torque=lambda t: float("nan") if t > 0.3 else 0.0)
    with pytest.raises(ValueError, match="half_length must be positive"):
        md.systems.snakeboard_initial(half_length=0.0)


def test_a_rotor_torque_alone_propels_the_board():
    """With the centring spring the steering oscillates by itself; a rotor torque in phase with it drives the
    board forward on average (the docstring's claim; with no torque the board's D u^2 is conserved)."""
    tau = lambda t: 0.5 * np.cos(np.sqrt(40.0) * t)  # noqa: E731  (the steering's frequency sqrt(k / 2 J_w))
    q0, v0 = md.systems.snakeboard_initial(speed=0.0, psi_dot=0.0, phi_dot=1.0)
    x = md.systems.snakeboard_reference(np.array([5.0, 10.0]), q0, v0, rotor_torque=tau)[:, 0]
    assert abs(x[1]) > 2.0 * abs(x[0]) > 1.0, x  # it travels, faster and faster
