"""Vehicles on SE(2): knife edge (Chaplygin skate), inclined knife edge,
Chaplygin sled, a differential-drive vehicle with inputs, and the
snakeboard (SE(2) x R^2: a board with a rotor and steered wheels).

Points are poses ``[[R, x], [0, 1]]``, velocities body twists
``(omega, v_x, v_y)`` of the body frame whose origin is the blade's contact
point and whose x-axis is the blade. "No sideways slip" is ``v_y = 0``:
``A = [0, 0, 1]``, constant in the body frame.

Lagrangians, forces and analytic partials are written for one point with
``jax.numpy``. The physical parameters are the system's ``params`` (traced:
a system built with other values -- a heavier skate, another incline --
reuses the compiled step, and they are differentiable); called without
them, the functions use the system's own. The exact and reference
solutions are numpy/scipy.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from .._manifolds import SE2, Euclidean, ProductManifold
from .._mechanics.system import LagrangeDiracSystem

__all__ = [
    "KNIFE_EDGE_CONSTRAINT",
    "chaplygin_sled",
    "chaplygin_sled_reference",
    "differential_drive",
    "inclined_knife_edge",
    "inclined_knife_edge_exact",
    "knife_edge",
    "snakeboard",
    "snakeboard_initial",
    "snakeboard_reference",
]

KNIFE_EDGE_CONSTRAINT = np.array([[0.0, 0.0, 1.0]])
"""``v_y = 0`` in the body frame."""


def _x_partial(q, weight):
    """``weight * d/de x(q exp(e eta))`` as a covector: ``weight * (0, R[0, 0], R[0, 1])``."""
    return weight * jnp.stack([jnp.zeros_like(q[0, 0]), q[0, 0], q[0, 1]])


def inclined_knife_edge(
    mass: float = 1.0,
    inertia: float = 0.5,
    gravity: float = 9.81,
    incline: float = 0.3,
    retraction: str = "exp",
) -> LagrangeDiracSystem:
    """A knife edge on a plane inclined by ``incline`` (downhill along ``+x``).

    ``L = m/2 (v_x^2 + v_y^2) + J/2 omega^2 + m g sin(alpha) x``, ``v_y = 0``.
    Exact solution from rest at the origin with ``omega(0) = w``:
    :func:`inclined_knife_edge_exact`. With ``incline = 0`` it is the free
    knife edge (Chaplygin skate).

    Parameters
    ----------
    mass : float
        Mass ``m``.
    inertia : float
        Moment of inertia ``J`` about the contact point.
    gravity : float
        Gravitational acceleration ``g``.
    incline : float
        Angle ``alpha`` of the plane (radians).
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2).

    Returns
    -------
    LagrangeDiracSystem
        On ``SE2(retraction)`` with the constraint :data:`KNIFE_EDGE_CONSTRAINT`
        and analytic partials; ``params = {"mass", "inertia", "pull"}`` with
        ``pull = m g sin(alpha)``. Named ``"knife_edge"`` when ``incline = 0``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> edge = md.systems.inclined_knife_edge(incline=0.3)
    >>> edge.Q, edge.n_constraints
    (SE2(retraction='exp'), 1)
    >>> round(float(edge.params["pull"]), 4)
    2.8991
    """
    # the downhill pull m g sin(alpha) is one parameter: the free knife edge is the same program with 0
    P = {"mass": np.float64(mass), "inertia": np.float64(inertia),
         "pull": np.float64(mass * gravity * np.sin(incline))}

    def L(q, v, p):
        kinetic = 0.5 * p["mass"] * (v[1] ** 2 + v[2] ** 2) + 0.5 * p["inertia"] * v[0] ** 2
        return kinetic + p["pull"] * q[0, 2]

    def partials(q, v, p):
        dv = jnp.stack([p["inertia"] * v[0], p["mass"] * v[1], p["mass"] * v[2]])
        return _x_partial(q, p["pull"]), dv

    name = "inclined_knife_edge" if incline else "knife_edge"
    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, partials=partials, name=name,
                               params=P)


def knife_edge(mass: float = 1.0, inertia: float = 0.5, retraction: str = "exp") -> LagrangeDiracSystem:
    """The free knife edge (Chaplygin skate): ``omega``, ``v_x`` constant, a circle.

    Parameters
    ----------
    mass, inertia : float
        As in :func:`inclined_knife_edge`.
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2).

    Returns
    -------
    LagrangeDiracSystem
        :func:`inclined_knife_edge` with ``incline = 0`` (the same compiled
        program: only a parameter differs).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> skate = md.systems.knife_edge(retraction="cayley")
    >>> skate.Q, skate.name
    (SE2(retraction='cayley'), 'knife_edge')
    """
    return inclined_knife_edge(mass, inertia, 0.0, 0.0, retraction)


def inclined_knife_edge_exact(t, omega: float = 1.0, gravity: float = 9.81, incline: float = 0.3):
    """``(x, y, theta)`` at times ``t`` ``(T,)`` -> ``(T, 3)``, from rest at the origin, ``theta' = omega``.

    ``theta = w t``, ``x = g sin(a)/(2 w^2) sin^2(w t)``,
    ``y = g sin(a)/(2 w^2) (w t - sin(2 w t)/2)``, for any mass and inertia.

    Parameters
    ----------
    t : array-like, shape=[T]
        Times.
    omega : float
        The constant heading rate ``w`` (nonzero).
    gravity, incline : float
        As in :func:`inclined_knife_edge`.

    Returns
    -------
    numpy.ndarray, shape=[T, 3]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.inclined_knife_edge_exact(np.array([0.0, np.pi]), omega=1.0).round(4)
    array([[0.    , 0.    , 0.    ],
           [0.    , 4.5538, 3.1416]])
    """
    t = np.asarray(t, dtype=float)
    c = gravity * np.sin(incline) / (2 * omega**2)
    wt = omega * t
    return np.stack([c * np.sin(wt) ** 2, c * (wt - 0.5 * np.sin(2 * wt)), wt], -1)


def chaplygin_sled(
    mass: float = 1.0, inertia: float = 0.2, offset: float = 0.5, retraction: str = "exp"
) -> LagrangeDiracSystem:
    """Chaplygin sled: blade at the body origin, centre of mass at ``(a, 0)``.

    The centre of mass moves with body velocity ``(v_x, v_y + a omega)``:
    ``L = m/2 (v_x^2 + (v_y + a omega)^2) + J/2 omega^2`` (``J`` about the
    centre of mass), ``v_y = 0``. Energy is conserved; the sled settles into
    straight-line motion (``omega -> 0``) as ``t -> +inf``.

    Parameters
    ----------
    mass : float
        Mass ``m``.
    inertia : float
        Moment of inertia ``J`` about the centre of mass.
    offset : float
        Distance ``a`` from the blade to the centre of mass along the blade.
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2).

    Returns
    -------
    LagrangeDiracSystem
        On ``SE2(retraction)`` with :data:`KNIFE_EDGE_CONSTRAINT` and analytic
        partials; ``params = {"mass", "inertia", "offset"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> sled = md.systems.chaplygin_sled(offset=0.5)
    >>> sled.Q, sorted(sled.params)
    (SE2(retraction='exp'), ['inertia', 'mass', 'offset'])
    """
    P = {"mass": np.float64(mass), "inertia": np.float64(inertia), "offset": np.float64(offset)}

    def L(q, v, p):
        m, a = p["mass"], p["offset"]
        return 0.5 * m * (v[1] ** 2 + (v[2] + a * v[0]) ** 2) + 0.5 * p["inertia"] * v[0] ** 2

    def partials(q, v, p):
        m, a = p["mass"], p["offset"]
        s = m * (v[2] + a * v[0])
        dv = jnp.stack([a * s + p["inertia"] * v[0], m * v[1], s])
        return jnp.zeros_like(dv), dv

    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, partials=partials,
                               name="chaplygin_sled", params=P)


def _default_drive(t):
    return jnp.where(t < 2.0, 1.0, 0.0)


def _default_steer(t):
    return 0.5 * jnp.sin(t)


def differential_drive(
    mass: float = 1.0,
    inertia: float = 0.1,
    drive: Callable[[float], float] | None = None,
    steer: Callable[[float], float] | None = None,
    damping: float = 0.1,
    retraction: str = "exp",
) -> LagrangeDiracSystem:
    """A differential-drive vehicle: a knife edge with forward force and yaw torque inputs.

    ``F(t, q, v) = (tau(t) - c omega, f(t) - c v_x, 0)``: ``f`` the sum of the
    wheel forces, ``tau`` their difference times the half track, ``c`` a
    linear rolling resistance. Defaults: ``f = 1`` for ``t < 2`` then ``0``,
    ``tau = 0.5 sin(t)``.

    Parameters
    ----------
    mass : float
        Mass.
    inertia : float
        Yaw moment of inertia.
    drive : callable ``t -> f``, optional
        Forward force; a scalar time in, a scalar out, traced by JAX: write it
        with ``jax.numpy`` (``jnp.where``, not ``if``).
    steer : callable ``t -> tau``, optional
        Yaw torque, likewise.
    damping : float
        Linear rolling resistance ``c``.
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2).

    Returns
    -------
    LagrangeDiracSystem
        On ``SE2(retraction)`` with :data:`KNIFE_EDGE_CONSTRAINT`, the force
        above and analytic partials; ``params = {"mass", "inertia", "damping"}``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> robot = md.systems.differential_drive(damping=0.2)
    >>> robot.Q, robot.has_force
    (SE2(retraction='exp'), True)
    """
    f = drive if drive is not None else _default_drive
    tq = steer if steer is not None else _default_steer
    P = {"mass": np.float64(mass), "inertia": np.float64(inertia), "damping": np.float64(damping)}

    def L(q, v, p):
        return 0.5 * p["mass"] * (v[1] ** 2 + v[2] ** 2) + 0.5 * p["inertia"] * v[0] ** 2

    def partials(q, v, p):
        dv = jnp.stack([p["inertia"] * v[0], p["mass"] * v[1], p["mass"] * v[2]])
        return jnp.zeros_like(dv), dv

    def force(t, q, v, p):
        c = p["damping"]
        return jnp.stack([tq(t) - c * v[0], f(t) - c * v[1], jnp.zeros_like(v[2])]).astype(v.dtype)

    return LagrangeDiracSystem(SE2(retraction), L, KNIFE_EDGE_CONSTRAINT, force=force, partials=partials,
                               name="differential_drive", params=P)


def chaplygin_sled_reference(t, pose0=(0.0, 0.0, 0.0), omega0: float = 1.0, vx0: float = 1.0,
                             mass: float = 1.0, inertia: float = 0.2, offset: float = 0.5):
    """Tight-tolerance reference ``(x, y, theta)`` of the Chaplygin sled at times ``t`` ``(T,)``.

    Solves the reduced equations ``(J + m a^2) omega' = -m a v_x omega``,
    ``v_x' = a omega^2`` with ``theta' = omega``, ``(x, y)' = v_x (cos, sin)(theta)``
    by ``scipy.integrate.solve_ivp`` (DOP853, rtol = atol = 1e-12).

    Parameters
    ----------
    t : array-like, shape=[T]
        Times (``>= 0``).
    pose0 : tuple of float
        Initial ``(x, y, theta)``.
    omega0, vx0 : float
        Initial heading rate and forward speed.
    mass, inertia, offset : float
        As in :func:`chaplygin_sled`.

    Returns
    -------
    numpy.ndarray, shape=[T, 3]

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.chaplygin_sled_reference(np.array([0.0, 1.0])).round(4)
    array([[0.    , 0.    , 0.    ],
           [1.0451, 0.3891, 0.5789]])
    """
    from scipy.integrate import solve_ivp

    a, m, J = offset, mass, inertia
    t = np.atleast_1d(np.asarray(t, dtype=float))

    def f(_, y):
        _, _, th, w, vx = y
        return [vx * np.cos(th), vx * np.sin(th), w, -m * a * vx * w / (J + m * a * a), a * w * w]

    y0 = [pose0[0], pose0[1], pose0[2], omega0, vx0]
    if not t.max() > 0.0:  # only t = 0 asked for: an empty time span is not an ODE solve
        return np.broadcast_to(np.asarray(y0[:3], dtype=float), (t.size, 3)).copy()
    sol = solve_ivp(f, (0.0, float(t.max())), y0, t_eval=t, rtol=1e-12, atol=1e-12, method="DOP853")
    if not sol.success or sol.y.shape[1] != t.size:  # pragma: no cover (smooth equations: not seen to fail)
        raise RuntimeError(f"chaplygin_sled_reference: solve_ivp stopped short of t = {float(t.max()):.6g}: "
                           f"{sol.message}")
    return sol.y[:3].T


# ------------------------------------------------------------------ the snakeboard
def _check_snakeboard(mass, inertia, rotor_inertia, wheel_inertia, half_length, stiffness, who):
    """Refuse physical parameters without a meaning (the board's mass matrix must be positive definite)."""
    bad = [f"{n} = {v!r}" for n, v, ok in (
        ("mass", mass, mass > 0), ("inertia", inertia, inertia >= 0), ("rotor_inertia", rotor_inertia, rotor_inertia > 0),
        ("wheel_inertia", wheel_inertia, wheel_inertia > 0), ("half_length", half_length, half_length > 0),
        ("stiffness", stiffness, stiffness >= 0)) if not (np.isfinite(v) and ok)]
    if bad:
        raise ValueError(f"{who}: need mass, rotor_inertia, wheel_inertia and half_length > 0 and inertia, stiffness "
                         f">= 0 (finite), got {', '.join(bad)}")


def snakeboard(
    mass: float = 1.0,
    inertia: float = 0.2,
    rotor_inertia: float = 0.1,
    wheel_inertia: float = 0.05,
    half_length: float = 0.5,
    stiffness: float = 4.0,
    rotor_torque: Callable[[float], float] | None = None,
    steer_torque: Callable[[float], float] | None = None,
    retraction: str = "exp",
) -> LagrangeDiracSystem:
    """The snakeboard: a board on two steerable wheel pairs with a rotor at its centre, on ``SE(2) x R^2``.

    ``q = (pose, (psi, phi))``: the board's pose (body origin at its centre,
    body x-axis along the board), the rotor's angle ``psi`` relative to the
    board and the wheels' steering angle ``phi`` (the front pair turned by
    ``+phi``, the back pair by ``-phi``, both relative to the board, at
    ``+-r`` along the body x-axis). ``v = (omega, u, w, psi', phi')``: the
    board's body twist (``(omega, v_x, v_y)`` as for the other vehicles) and
    the shape rates::

        L = m/2 (u^2 + w^2) + 1/2 (J + 2 J_w) omega^2 + 1/2 J_r (omega + psi')^2
            + J_w phi'^2 - 1/2 k phi^2

    Neither wheel pair slips sideways::

        front  -sin(phi) u + cos(phi) (w + r omega) = 0
        back    sin(phi) u + cos(phi) (w - r omega) = 0

    i.e. ``A(q) = [[r c, -s, c, 0, 0], [-r c, s, c, 0, 0]]`` (``c, s = cos phi,
    sin phi``): ``w = 0`` and ``omega = u tan(phi) / r``. The two one-forms
    become dependent at ``cos(phi) = 0`` (the wheels across the board, which
    may then slide sideways and turn: ``u = 0`` is the only condition left):
    start with ``|phi| < pi/2``. ``integrate`` refuses a start there (the
    one-forms linearly dependent at ``q0``) and within about ``1e-9`` of it
    (the step equations singular); a start ``1e-6`` away runs, but the motion
    is stiff there (``omega = u tan(phi) / r``). A run may swing through
    ``cos(phi) = 0`` (with a large ``phi'``): the board's speed falls to 0 there
    (``D u^2`` is conserved, Notes) and ``omega`` stays bounded.

    Parameters
    ----------
    mass : float
        The board's mass ``m``.
    inertia : float
        The board's moment of inertia ``J`` about its centre.
    rotor_inertia : float
        The rotor's moment of inertia ``J_r`` (about the board's centre).
    wheel_inertia : float
        The moment of inertia ``J_w`` of each wheel pair about its steering axis.
    half_length : float
        The distance ``r`` from the board's centre to each wheel pair.
    stiffness : float
        The stiffness ``k`` of the torsion spring that centres the wheels
        (``phi`` oscillates with the angular frequency ``sqrt(k / (2 J_w))``
        when not steered).
    rotor_torque : callable ``t -> tau_psi``, optional
        A torque on the rotor angle ``psi`` (the motor between board and
        rotor); a scalar time in, a scalar out, traced by JAX: write it with
        ``jax.numpy`` (``jnp.where``, not ``if``). Default: none.
    steer_torque : callable ``t -> tau_phi``, optional
        A torque on the steering angle ``phi``, likewise. Default: none.
    retraction : {"exp", "cayley", "so2xr2"}
        Retraction of SE(2) (the shape factor ``R^2`` is Euclidean).

    Returns
    -------
    LagrangeDiracSystem
        On ``ProductManifold(SE2(retraction), Euclidean(2))`` (points
        ``(pose (3, 3), (psi, phi) (2,))``, velocities ``(5,)``) with the two
        one-forms ``A(q)`` above, the torques (when given) as the force
        ``(0, 0, 0, tau_psi(t), tau_phi(t))`` and analytic partials;
        ``params = {"mass", "inertia", "rotor_inertia", "wheel_inertia",
        "half_length", "stiffness"}``. Initial data: :func:`snakeboard_initial`;
        reference solution: :func:`snakeboard_reference`.

    Raises
    ------
    ValueError
        For a parameter without a meaning: ``mass``, ``rotor_inertia``,
        ``wheel_inertia`` or ``half_length`` not positive, ``inertia`` or
        ``stiffness`` negative, or any of them not finite.

    Notes
    -----
    With ``t = tan(phi)``, ``J_t = J + 2 J_w + J_r`` and ``eta = (u, psi', phi')``
    the reduced equations (the constraint forces eliminated) are::

        [[m + J_t t^2/r^2, J_r t/r], [J_r t/r, J_r]] [u', psi'']
              = -u phi' sec^2(phi)/r [J_t t/r, J_r] + [0, tau_psi]
        2 J_w phi'' = -k phi + tau_phi
        theta' = u t / r,   x' = u cos(theta),   y' = u sin(theta)

    The energy ``m/2 u^2 + 1/2 (J + 2 J_w) omega^2 + 1/2 J_r (omega + psi')^2
    + J_w phi'^2 + 1/2 k phi^2`` is conserved without torques. Without a rotor
    torque the rotor's angular momentum ``J_r (omega + psi')`` is conserved
    too, and so is ``D u^2 = (m + (J + 2 J_w) t^2/r^2) u^2`` (twice the
    board's kinetic energy, conserved with a steering torque as well): the
    board's speed follows the steering angle, and propulsion needs a rotor
    torque. The steering motion it works against may be the spring's own
    oscillation: a rotor torque alone in phase with it drives the board
    (``u' = -(t/r) tau_psi / D`` when ``phi'`` averages out).

    This is the snakeboard of Ostrowski, Lewis, Murray & Burdick (ICRA 1994)
    and Ostrowski (PhD thesis, Caltech, 1995), as in Bloch, Krishnaprasad,
    Marsden & Murray, "Nonholonomic mechanical systems with symmetry", Arch.
    Rational Mech. Anal. 136 (1996), with the wheels' steering angles
    coupled (``phi_front = -phi_back = phi``) and a centring spring added.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> board = md.systems.snakeboard()
    >>> board.Q, board.n_constraints
    (ProductManifold(SE2(retraction='exp'), Euclidean(2)), 2)
    >>> sorted(board.params)
    ['half_length', 'inertia', 'mass', 'rotor_inertia', 'stiffness', 'wheel_inertia']
    >>> q0, v0 = md.systems.snakeboard_initial(phi=0.3, speed=1.0)
    >>> bool(abs(board.constraint_matrix(q0) @ v0).max() < 1e-15)
    True
    """
    _check_snakeboard(mass, inertia, rotor_inertia, wheel_inertia, half_length, stiffness, "snakeboard")
    P = {"mass": np.float64(mass), "inertia": np.float64(inertia), "rotor_inertia": np.float64(rotor_inertia),
         "wheel_inertia": np.float64(wheel_inertia), "half_length": np.float64(half_length),
         "stiffness": np.float64(stiffness)}

    def L(q, v, p):
        Jw = p["wheel_inertia"]
        kinetic = (0.5 * p["mass"] * (v[1] ** 2 + v[2] ** 2) + 0.5 * (p["inertia"] + 2.0 * Jw) * v[0] ** 2
                   + 0.5 * p["rotor_inertia"] * (v[0] + v[3]) ** 2 + Jw * v[4] ** 2)
        return kinetic - 0.5 * p["stiffness"] * q[1][1] ** 2

    def partials(q, v, p):
        Jw = p["wheel_inertia"]
        spin = p["rotor_inertia"] * (v[0] + v[3])
        dv = jnp.stack([(p["inertia"] + 2.0 * Jw) * v[0] + spin, p["mass"] * v[1], p["mass"] * v[2], spin,
                        2.0 * Jw * v[4]])
        phi = q[1][1]
        zero = jnp.zeros_like(phi)
        return jnp.stack([zero, zero, zero, zero, -p["stiffness"] * phi]), dv

    def A(q, p):
        phi = q[1][1]
        c, s = jnp.cos(phi), jnp.sin(phi)
        rc, zero = p["half_length"] * c, jnp.zeros_like(phi)
        return jnp.stack([jnp.stack([rc, -s, c, zero, zero]), jnp.stack([-rc, s, c, zero, zero])])

    force = None
    if rotor_torque is not None or steer_torque is not None:
        def _none(t):
            return 0.0

        t_psi = rotor_torque if rotor_torque is not None else _none
        t_phi = steer_torque if steer_torque is not None else _none

        def force(t, q, v, p):
            zero = jnp.zeros_like(v[0])
            return jnp.stack([zero, zero, zero, zero + t_psi(t), zero + t_phi(t)]).astype(v.dtype)

    Q = ProductManifold(SE2(retraction), Euclidean(2))
    return LagrangeDiracSystem(Q, L, A, force=force, partials=partials, name="snakeboard", params=P)


def snakeboard_initial(pose=(0.0, 0.0, 0.0), psi: float = 0.0, phi: float = 0.3, speed: float = 1.0,
                       psi_dot: float = 2.0, phi_dot: float = 1.0, half_length: float = 0.5):
    """A consistent ``(q0, v0)`` of :func:`snakeboard`: ``v0 = (speed tan(phi) / r, speed, 0, psi', phi')``.

    The defaults (with :func:`snakeboard`'s) give a motion over ``T = 2``
    with the steering angle oscillating between about ``-0.34`` and ``0.34``
    (period ``2 pi sqrt(2 J_w / k) = 0.99``), the board swerving and the
    rotor's relative rate following the board's turning.

    Parameters
    ----------
    pose : tuple of float
        The board's initial ``(x, y, theta)``.
    psi, phi : float
        The rotor angle and the steering angle (``|phi| < pi/2``).
    speed : float
        The board's forward speed ``u`` (body ``v_x``).
    psi_dot, phi_dot : float
        The shape rates.
    half_length : float
        ``r``, as in :func:`snakeboard` (the turning rate is ``u tan(phi) / r``).

    Returns
    -------
    q0 : tuple (pose (3, 3), shape (2,)) of numpy.ndarray, float64
        The pose and ``(psi, phi)``.
    v0 : numpy.ndarray, shape (5,), float64
        ``(omega, u, w, psi', phi')``, in the constraint distribution.

    Raises
    ------
    ValueError
        For ``|phi| >= pi/2`` (the wheels across the board: no consistent
        velocity with ``u != 0``), or ``half_length <= 0``.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> (pose, shape), v0 = md.systems.snakeboard_initial(phi=0.3, speed=1.0)
    >>> shape, v0.round(4)
    (array([0. , 0.3]), array([0.6187, 1.    , 0.    , 2.    , 1.    ]))
    """
    if not (np.isfinite(half_length) and half_length > 0):
        raise ValueError(f"snakeboard_initial: half_length must be positive, got {half_length!r}")
    if not abs(phi) < np.pi / 2:
        raise ValueError(f"snakeboard_initial: the steering angle must satisfy |phi| < pi/2, got phi = {phi!r}: at "
                         "cos(phi) = 0 the wheels stand across the board and the constraints are singular")
    x, y, th = (float(a) for a in pose)
    q0 = (np.array([[np.cos(th), -np.sin(th), x], [np.sin(th), np.cos(th), y], [0.0, 0.0, 1.0]]),
          np.array([psi, phi], dtype=float))
    v0 = np.array([speed * np.tan(phi) / half_length, speed, 0.0, psi_dot, phi_dot])
    return q0, v0


def _snakeboard_rates(mass, inertia, rotor_inertia, wheel_inertia, half_length, stiffness, tau_psi, tau_phi):
    """The reduced equations of :func:`snakeboard` in ``y = (x, y, theta, psi, phi, u, psi', phi')``, plain floats.

    The 2x2 system of the Notes solved in closed form: with
    ``D = m + (J + 2 J_w) t^2/r^2`` and ``g = u phi' sec^2(phi)/r``,
    ``u' = -(t/r)(g (J + 2 J_w) + tau_psi)/D`` and
    ``psi'' = -g m/D + tau_psi (m + J_t t^2/r^2)/(J_r D)``.
    """
    import math

    m, Jr, r = mass, rotor_inertia, half_length
    Ib = inertia + 2.0 * wheel_inertia
    Jt, two_jw = Ib + Jr, 2.0 * wheel_inertia

    def f(t, y):
        th, phi, u, psid, phid = y[2], y[4], y[5], y[6], y[7]
        c = math.cos(phi)
        tn = math.sin(phi) / c
        g = u * phid / (c * c * r)
        tr2 = tn * tn / (r * r)
        D = m + Ib * tr2
        tp = 0.0 if tau_psi is None else float(tau_psi(t))
        tf = 0.0 if tau_phi is None else float(tau_phi(t))
        return [u * math.cos(th), u * math.sin(th), u * tn / r, psid, phid, -(tn / r) * (g * Ib + tp) / D,
                -g * m / D + tp * (m + Jt * tr2) / (Jr * D), (tf - stiffness * phi) / two_jw]

    return f


def snakeboard_reference(t, q0=None, v0=None, mass: float = 1.0, inertia: float = 0.2, rotor_inertia: float = 0.1,
                         wheel_inertia: float = 0.05, half_length: float = 0.5, stiffness: float = 4.0,
                         rotor_torque: Callable[[float], float] | None = None,
                         steer_torque: Callable[[float], float] | None = None):
    """Tight-tolerance reference ``(x, y, theta, psi, phi)`` of the snakeboard at times ``t`` ``(T,)``.

    Solves the reduced equations of :func:`snakeboard` (Notes) in
    ``(x, y, theta, psi, phi, u, psi', phi')`` by ``scipy.integrate.solve_ivp``
    (DOP853, rtol = atol = 1e-12). ``theta`` is not wrapped.

    Parameters
    ----------
    t : array-like, shape=[T]
        Times (``>= 0``).
    q0 : tuple (pose (3, 3), (psi, phi) (2,)), optional
        The initial point, as given to ``integrate``; default that of
        :func:`snakeboard_initial` (with its defaults).
    v0 : array-like, shape=[5], optional
        The initial velocity ``(omega, u, w, psi', phi')``, in the constraint
        distribution at ``q0``; default that of :func:`snakeboard_initial`.
    mass, inertia, rotor_inertia, wheel_inertia, half_length, stiffness : float
        As in :func:`snakeboard`.
    rotor_torque, steer_torque : callable ``t -> float``, optional
        As in :func:`snakeboard` (called here with a float ``t``; a function
        written with ``jax.numpy`` works, and so does one with ``math``).

    Returns
    -------
    numpy.ndarray, shape=[T, 5]

    Raises
    ------
    ValueError
        For ``v0`` off the constraints at ``q0`` (``|A(q0) v0| > 1e-9 (1 + |v0|)``),
        a start with ``cos(phi) = 0`` (the reduced equations do not hold
        there: a board turning in place is not ``omega = u tan(phi) / r``),
        parameters refused by :func:`snakeboard`, or only one of ``q0``,
        ``v0`` given.
    RuntimeError
        When ``solve_ivp`` does not reach the last time (a torque returning
        NaN, a swing through ``cos(phi) = 0`` it cannot step over).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> md.systems.snakeboard_reference(np.array([0.0, 1.0])).round(4)
    array([[0.    , 0.    , 0.    , 0.    , 0.3   ],
           [1.0155, 0.0519, 0.0041, 2.6146, 0.3063]])
    """
    from scipy.integrate import solve_ivp

    if (q0 is None) != (v0 is None):
        raise ValueError("snakeboard_reference: give both q0 and v0, or neither (snakeboard_initial's defaults)")
    _check_snakeboard(mass, inertia, rotor_inertia, wheel_inertia, half_length, stiffness, "snakeboard_reference")
    if q0 is None:
        q0, v0 = snakeboard_initial(half_length=half_length)
    pose, shape = np.asarray(q0[0], dtype=float), np.asarray(q0[1], dtype=float)
    v = np.asarray(v0, dtype=float)
    c, s, r = np.cos(shape[1]), np.sin(shape[1]), half_length
    if not abs(c) > 1e-9:
        raise ValueError(f"snakeboard_reference: the start's steering angle phi = {shape[1]!r} has cos(phi) = {c:.1e}: "
                         "the one-forms are dependent there and the reduced equations (omega = u tan(phi) / r) do "
                         "not hold")
    off = np.abs(np.array([[r * c, -s, c], [-r * c, s, c]]) @ v[:3])
    if not np.max(off) <= 1e-9 * (1.0 + np.max(np.abs(v))):
        raise ValueError(f"snakeboard_reference: v0 is not in the constraint distribution at q0: |A(q0) v0| = "
                         f"{np.max(off):.3e} (it needs w = 0 and omega = u tan(phi) / r)")
    t = np.atleast_1d(np.asarray(t, dtype=float))
    y0 = [pose[0, 2], pose[1, 2], np.arctan2(pose[1, 0], pose[0, 0]), shape[0], shape[1], v[1], v[3], v[4]]
    if not t.max() > 0.0:  # only t = 0 asked for: an empty time span is not an ODE solve
        return np.broadcast_to(np.asarray(y0[:5], dtype=float), (t.size, 5)).copy()
    f = _snakeboard_rates(mass, inertia, rotor_inertia, wheel_inertia, half_length, stiffness, rotor_torque,
                          steer_torque)
    sol = solve_ivp(f, (0.0, float(t.max())), y0, t_eval=t, rtol=1e-12, atol=1e-12, method="DOP853")
    if not sol.success or sol.y.shape[1] != t.size:
        done = np.asarray(sol.t, dtype=float)
        raise RuntimeError(f"snakeboard_reference: solve_ivp stopped short of t = {float(t.max()):.6g} ("
                           f"{done.size} of {t.size} times reached): {sol.message}")
    return sol.y[:5].T
