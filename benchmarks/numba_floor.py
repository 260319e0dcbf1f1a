"""Hand-specialized Numba floor of one integrator step, for the compiled-engine ratios.

The library's default scheme -- the *symmetric* discrete Lagrange--Dirac
scheme with the *midpoint* discrete Lagrangian (``docs/schemes.md``) --
written out by hand for two systems and compiled with Numba (scalar tuples,
no allocation inside a step; same formulas as ``benchmarks/baselines.py``):

* **Heavy top on SO(3)**, ``exp``, ``I = diag(1, 2, 3)``, ``mgl = 1``,
  ``chi = e3``; unknown ``xi`` (``q1 = q0 exp(xi)``). With ``c = q0 exp(xi/2)``,
  ``v = xi/h`` and ``y = (h/2) J_r(xi/2)^T dL/dq(c, v) + I v``::

      D1 L_d = h exp(xi/2) dL/dq(c, v) - J_r^{-1}(xi) y,   D2 L_d = J_l^{-1}(xi) y,

  i.e. ``h P0^T dL/dq + J0^T dL/dv`` (and with ``P1``, ``J1``) for
  ``J0 = -J_l^{-1}(xi)``, ``J1 = J_r^{-1}(xi)``, ``P0 = Ad_{exp(-xi/2)} +
  J_r(xi/2) J0 / 2``, ``P1 = J_r(xi/2) J1 / 2``, every matrix applied as cross
  products. Residual ``r = p_k + D1 L_d`` (3 equations).
* **Knife edge on SE(2)**, ``exp``, twists ``(omega, v_x, v_y)``,
  ``L = m/2 (v_x^2 + v_y^2) + J/2 omega^2`` (``m = 1``, ``J = 0.5``),
  ``A = [0, 0, 1]``; unknowns ``(xi, mu)``. ``dL/dq = 0``, so
  ``D1 = J0^T dL/dv``, ``D2 = J1^T dL/dv``; ``r1 = p_k + D1 - A^T mu``,
  ``r2 = A xi`` (the midpoint tangent ``J_r(xi/2) xi`` is ``xi`` for ``exp``).

Then ``p_{k+1} = D2 L_d``, ``q_{k+1} = q_k exp(xi)``. Closed forms and Taylor
branches (``theta^2 < 1e-3``) are those of ``manifold_dirac/_manifolds/so3.py``
and ``se2.py``. Entry points: ``*_step`` (one step), ``run_*`` (one
trajectory), ``run_*_batch`` (``B`` trajectories, ``prange``), :func:`check`.

Notes
-----
Newton rule (the compiled engine uses the same). Warm start ``z0`` = the
previous step's solution (first step ``xi = h v0``, ``mu = 0``). Exact
Jacobian by complex-step differentiation, ``J[:, j] = Im r(z + i 1e-30 e_j) /
1e-30`` (the residuals are complex analytic; the Taylor-branch test uses the
real part). For the knife edge the ``mu`` column ``-A^T`` and the row of
``r2`` are exact constants and the 4x4 system is solved by eliminating
``xi_2`` and ``mu``. Scaled residual ``e = max(|r1|_inf / s1, |r2|_inf / s2)``,
``s1 = max(|p_k|_inf, |D1 L_d|_inf)``, ``s2 = |xi|_inf`` (a zero numerator
counts as 0). Fail on a non-finite residual; converged when ``e <= 4 eps``,
or after at least one iteration when ``e >= e_prev / 2`` and ``e <= 1e-10``
(stagnation); at 30 iterations converged iff ``e <= 1e-10``; otherwise
``z -= J^{-1} r`` and repeat.

The free knife edge is a relative equilibrium (``omega``, ``v_x`` constant):
the discrete ``(xi, mu)`` is the same at every step, so after the first two
steps the warm start already satisfies ``e <= 4 eps`` and a step costs one
residual evaluation and the pose update (0 Newton iterations). In the heavy
top's 2 iterations per step the 6 complex residual evaluations of the
Jacobian are ~85 % of the time.

Examples
--------
Check against the library, then time (prints us/step, compile times, Newton
iterations per step and trajectory-steps/s for B = 1, 64, 4096)::

    python benchmarks/numba_floor.py
"""

from __future__ import annotations

import math
import time
import timeit
from functools import partial

import numba
import numpy as np
from numba import njit, prange

EPS = 2.220446049250313e-16
RTOL, MAX_ITER, CSTEP = 1e-10, 30, 1e-30
SMALL = 1e-3  # theta^2 below which the Taylor branches are used
# heavy top: I = diag(1, 2, 3), mgl = 1, chi = e3; knife edge: m = 1, J = 0.5
I1, I2, I3, MGL, CHI = 1.0, 2.0, 3.0, 1.0, (0.0, 0.0, 1.0)
MASS, INERTIA = 1.0, 0.5
JIT = dict(cache=True, error_model="numpy")  # x/0 -> inf/nan (caught as non-finite), no exception


# ------------------------------------------------------------ tuple algebra
@njit(**JIT)
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(**JIT)
def _comb(x, a, y, b, z):
    """``x + a y + b z`` for 3-tuples."""
    return (x[0] + a * y[0] + b * z[0], x[1] + a * y[1] + b * z[1], x[2] + a * y[2] + b * z[2])


@njit(**JIT)
def _norm_inf(x):
    m = 0.0
    for v in x:
        m = max(m, abs(v))
    return m


@njit(**JIT)
def _rel(r, s):
    """``|r|_inf / s``; a zero numerator counts as 0 (and ``x/0 = inf``)."""
    n = _norm_inf(r)
    return 0.0 if n == 0.0 else n / s


@njit(**JIT)
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(**JIT)
def _newton_stop(r, e, e_prev, it):
    """The stopping rule of the module docstring: ``(stop, converged)``."""
    for v in r:
        if not math.isfinite(v):
            return True, False
    if e <= 4 * EPS or (it > 0 and e >= 0.5 * e_prev and e <= RTOL):
        return True, True
    if it == MAX_ITER:
        return True, e <= RTOL
    return False, False


@njit(**JIT)
def _cplx3(z, j):
    """``z + i CSTEP e_j`` as a complex 3-tuple."""
    return (complex(z[0], CSTEP if j == 0 else 0.0), complex(z[1], CSTEP if j == 1 else 0.0),
            complex(z[2], CSTEP if j == 2 else 0.0))


@njit(**JIT)
def _im3(x):
    return (x[0].imag * (1 / CSTEP), x[1].imag * (1 / CSTEP), x[2].imag * (1 / CSTEP))


# -------------------------------------------------------------------- SO(3)
@njit(**JIT)
def _so3_abck(t2):
    """``a = sin t/t``, ``b = (1-cos t)/t^2``, ``c = (t-sin t)/t^3``, ``k = (1-(t/2)cot(t/2))/t^2``.

    Real divisors are written as products with reciprocals: a complex / real
    division is a full complex division in Numba (twice the cost).
    """
    if t2.real < SMALL:
        return (1 - t2 * (1 / 6) * (1 - t2 * (1 / 20) * (1 - t2 * (1 / 42))),
                0.5 - t2 * (1 / 24) * (1 - t2 * (1 / 30) * (1 - t2 * (1 / 56))),
                1 / 6 - t2 * (1 / 120) * (1 - t2 * (1 / 42) * (1 - t2 * (1 / 72))),
                1 / 12 + t2 * (1 / 720 + t2 * (1 / 30240 + t2 * (1 / 1209600))))
    t = np.sqrt(t2)
    s, sh, ch = np.sin(t), np.sin(0.5 * t), np.cos(0.5 * t)
    i2 = 1.0 / t2
    return s / t, 2 * sh * sh * i2, (t - s) * i2 / t, (1.0 - 0.5 * t * ch / sh) * i2


@njit(**JIT)
def _heavy_top_D(u, xi, h):
    """``(D1 L_d, D2 L_d)`` at ``q1 = R exp(xi)``; ``u = R^T e3`` (row 2 of ``R``)."""
    t2 = _dot(xi, xi)
    k = _so3_abck(t2)[3]
    ah, bh, ch, _ = _so3_abck(0.25 * t2)
    xh = (0.5 * xi[0], 0.5 * xi[1], 0.5 * xi[2])
    xu = _cross(xh, u)
    up = _comb(u, -ah, xu, bh, _cross(xh, xu))  # c^T e3 = exp(xi/2)^T u
    cu = _cross(CHI, up)
    dq = (-MGL * cu[0], -MGL * cu[1], -MGL * cu[2])  # dL/dq(c)
    xd = _cross(xh, dq)
    xxd = _cross(xh, xd)
    tau_dq = _comb(dq, ah, xd, bh, xxd)  # exp(xi/2) dq
    jt_dq = _comb(dq, bh, xd, ch, xxd)  # J_r(xi/2)^T dq
    hh, ih = 0.5 * h, 1.0 / h
    y = (hh * jt_dq[0] + I1 * ih * xi[0], hh * jt_dq[1] + I2 * ih * xi[1], hh * jt_dq[2] + I3 * ih * xi[2])
    xy = _cross(xi, y)
    xxy = _cross(xi, xy)
    jr_inv_y = _comb(y, 0.5, xy, k, xxy)
    D1 = (h * tau_dq[0] - jr_inv_y[0], h * tau_dq[1] - jr_inv_y[1], h * tau_dq[2] - jr_inv_y[2])
    return D1, _comb(y, -0.5, xy, k, xxy)


@njit(**JIT)
def _heavy_top_residual(u, p, xi, h):
    """``(r, e, D2 L_d)``: residual ``p + D1 L_d``, its scaled size and the new momentum."""
    D1, D2 = _heavy_top_D(u, xi, h)
    r = (p[0] + D1[0], p[1] + D1[1], p[2] + D1[2])
    return r, _rel(r, max(_norm_inf(p), _norm_inf(D1))), D2


@njit(**JIT)
def _heavy_top_advance(R, p_arr, xi_arr, h):
    """One step in place on ``(R, p, xi)``; returns ``(iterations, converged)``."""
    u = (R[2, 0], R[2, 1], R[2, 2])
    p = (p_arr[0], p_arr[1], p_arr[2])
    z = (xi_arr[0], xi_arr[1], xi_arr[2])
    r, e, D2 = _heavy_top_residual(u, p, z, h)
    e_prev, it = math.inf, 0
    while True:
        stop, ok = _newton_stop(r, e, e_prev, it)
        if stop:
            break
        c0 = _im3(_heavy_top_D(u, _cplx3(z, 0), h)[0])  # columns of dr/dxi
        c1 = _im3(_heavy_top_D(u, _cplx3(z, 1), h)[0])
        c2 = _im3(_heavy_top_D(u, _cplx3(z, 2), h)[0])
        c12 = _cross(c1, c2)  # Cramer's rule
        det = _dot(c0, c12)
        d0, d1, d2 = _dot(r, c12) / det, _dot(c0, _cross(r, c2)) / det, _dot(c0, _cross(c1, r)) / det
        z = (z[0] - d0, z[1] - d1, z[2] - d2)
        it += 1
        e_prev = e
        r, e, D2 = _heavy_top_residual(u, p, z, h)
    if not ok:
        return it, False
    # q_{k+1} = R exp(xi), p_{k+1} = D2, xi kept as the next warm start
    a, b, _, _ = _so3_abck(_dot(z, z))
    for i in range(3):
        row = (R[i, 0], R[i, 1], R[i, 2])
        rx = _cross(z, row)  # row @ hat(z) = -z x row, row @ hat(z)^2 = z x (z x row)
        rxx = _cross(z, rx)
        for j in range(3):
            R[i, j] = row[j] - a * rx[j] + b * rxx[j]
        p_arr[i] = D2[i]
        xi_arr[i] = z[i]
    return it, True


# -------------------------------------------------------------------- SE(2)
@njit(**JIT)
def _se2_abcd(w):
    """``A = sin w/w``, ``B = (1-cos w)/w``, ``C = (w-sin w)/w^2``, ``D = (1-cos w)/w^2``."""
    w2 = w * w
    if w2.real < SMALL:
        return (1 - w2 * (1 / 6) * (1 - w2 * (1 / 20) * (1 - w2 * (1 / 42))),
                0.5 * w * (1 - w2 * (1 / 12) * (1 - w2 * (1 / 30) * (1 - w2 * (1 / 56)))),
                w * (1 / 6) * (1 - w2 * (1 / 20) * (1 - w2 * (1 / 42) * (1 - w2 * (1 / 72)))),
                0.5 - w2 * (1 / 24) * (1 - w2 * (1 / 30) * (1 - w2 * (1 / 56))))
    s, sh = np.sin(w), np.sin(0.5 * w)
    iw = 1.0 / w
    hc = 2 * sh * sh * iw
    return s * iw, hc, (w - s) * iw * iw, hc * iw


@njit(**JIT)
def _knife_edge_D(xi, h):
    """``(J0^T dL/dv, J1^T dL/dv)``: ``J1 = J_r^{-1}(xi)``, ``J0 = -J_r^{-1}(-xi)``.

    ``J_r^{-1} = [[1, 0], [-M^{-1} c, M^{-1}]]``, ``M^{-1} = [[a, -b], [b, a]]``,
    ``c = (vx C - vy D, vx D + vy C)``; ``-xi`` flips ``b`` and ``c``.
    """
    w, vx, vy = xi
    A, B, C, D = _se2_abcd(w)
    n_inv = 1.0 / (A * A + B * B)
    a, b = A * n_inv, B * n_inv
    ih = 1.0 / h
    d0, d1, d2 = INERTIA * ih * w, MASS * ih * vx, MASS * ih * vy
    c0, c1 = vx * C - vy * D, vx * D + vy * C
    g0, g1 = -(a * c0 - b * c1), -(b * c0 + a * c1)
    D2 = (d0 + g0 * d1 + g1 * d2, a * d1 + b * d2, -b * d1 + a * d2)
    c0, c1 = vx * C + vy * D, vy * C - vx * D
    g0, g1 = -(a * c0 + b * c1), -(a * c1 - b * c0)
    D1 = (-(d0 + g0 * d1 + g1 * d2), b * d2 - a * d1, -(b * d1 + a * d2))
    return D1, D2


@njit(**JIT)
def _knife_edge_residual(p, xi, mu, h):
    """``((r1, r2), e, D2 L_d)``."""
    D1, D2 = _knife_edge_D(xi, h)
    r = (p[0] + D1[0], p[1] + D1[1], p[2] + D1[2] - mu)  # r1 = p + D1 - A^T mu
    e = max(_rel(r, max(_norm_inf(p), _norm_inf(D1))), _rel((xi[2],), _norm_inf(xi)))  # r2 = A xi = xi_2
    return (r[0], r[1], r[2], xi[2]), e, D2


@njit(**JIT)
def _knife_edge_advance(q, p_arr, z_arr, h):
    """One step in place on ``(q, p, z = (xi, mu))``; returns ``(iterations, converged)``."""
    p = (p_arr[0], p_arr[1], p_arr[2])
    xi, mu = (z_arr[0], z_arr[1], z_arr[2]), z_arr[3]
    r, e, D2 = _knife_edge_residual(p, xi, mu, h)
    e_prev, it = math.inf, 0
    while True:
        stop, ok = _newton_stop(r, e, e_prev, it)
        if stop:
            break
        k0 = _im3(_knife_edge_D(_cplx3(xi, 0), h)[0])  # columns of dr1/dxi
        k1 = _im3(_knife_edge_D(_cplx3(xi, 1), h)[0])
        k2 = _im3(_knife_edge_D(_cplx3(xi, 2), h)[0])
        # [[K, -e3], [e3^T, 0]] d = r: row 3 gives d2, rows 0-1 a 2x2 system, row 2 d_mu
        d2 = r[3]
        b0, b1 = r[0] - k2[0] * d2, r[1] - k2[1] * d2
        det = k0[0] * k1[1] - k1[0] * k0[1]
        d0, d1 = (b0 * k1[1] - k1[0] * b1) / det, (k0[0] * b1 - b0 * k0[1]) / det
        dmu = k0[2] * d0 + k1[2] * d1 + k2[2] * d2 - r[2]
        xi, mu = (xi[0] - d0, xi[1] - d1, xi[2] - d2), mu - dmu
        it += 1
        e_prev = e
        r, e, D2 = _knife_edge_residual(p, xi, mu, h)
    if not ok:
        return it, False
    # q_{k+1} = q exp(xi): rotation by w, translation V(w) (vx, vy)
    w = xi[0]
    A, B, _, _ = _se2_abcd(w)
    c, s = math.cos(w), math.sin(w)
    tx, ty = A * xi[1] - B * xi[2], B * xi[1] + A * xi[2]
    for i in range(2):
        r0, r1 = q[i, 0], q[i, 1]
        q[i, 0], q[i, 1] = r0 * c + r1 * s, r1 * c - r0 * s
        q[i, 2] += r0 * tx + r1 * ty
        p_arr[i] = D2[i]
    p_arr[2] = D2[2]
    z_arr[0], z_arr[1], z_arr[2], z_arr[3] = xi[0], xi[1], xi[2], mu
    return it, True


# ------------------------------------------------------------ entry points
@njit(**JIT)
def heavy_top_step(R, p, xi, h):
    """One heavy-top step: ``(R1, p1, xi1, iterations, converged)`` (new arrays)."""
    R1, p1, xi1 = R.copy(), p.copy(), xi.copy()
    it, ok = _heavy_top_advance(R1, p1, xi1, h)
    return R1, p1, xi1, it, ok


@njit(**JIT)
def knife_edge_step(q, p, z, h):
    """One knife-edge step, ``z = (xi, mu)``: ``(q1, p1, z1, iterations, converged)``."""
    q1, p1, z1 = q.copy(), p.copy(), z.copy()
    it, ok = _knife_edge_advance(q1, p1, z1, h)
    return q1, p1, z1, it, ok


@njit(**JIT)
def _heavy_top_loop(R, p, xi, h, n_steps):
    """``n_steps`` steps in place: ``(iterations, steps done)``, stopping at a failure."""
    total = 0
    for k in range(n_steps):
        it, ok = _heavy_top_advance(R, p, xi, h)
        total += it
        if not ok:
            return total, k
    return total, n_steps


@njit(**JIT)
def _knife_edge_loop(q, p, z, h, n_steps):
    total = 0
    for k in range(n_steps):
        it, ok = _knife_edge_advance(q, p, z, h)
        total += it
        if not ok:
            return total, k
    return total, n_steps


@njit(**JIT)
def run_heavy_top(state, h, n_steps):
    """``n_steps`` steps from ``state = (R, p, xi)``: ``(state, iterations, steps_done)``."""
    R, p, xi = state[0].copy(), state[1].copy(), state[2].copy()
    its, done = _heavy_top_loop(R, p, xi, h, n_steps)
    return (R, p, xi), its, done


@njit(**JIT)
def run_knife_edge(state, h, n_steps):
    """``n_steps`` steps from ``state = (q, p, z)``: ``(state, iterations, steps_done)``."""
    q, p, z = state[0].copy(), state[1].copy(), state[2].copy()
    its, done = _knife_edge_loop(q, p, z, h, n_steps)
    return (q, p, z), its, done


@njit(parallel=True, **JIT)
def run_heavy_top_batch(state, h, n_steps):
    """:func:`run_heavy_top` of ``B`` trajectories (arrays ``(B, ...)``) in ``prange``.

    Returns ``(state, iterations, steps_done)``, the last two of shape ``(B,)``.
    """
    R, p, xi = state[0].copy(), state[1].copy(), state[2].copy()
    its, done = np.zeros(R.shape[0], np.int64), np.zeros(R.shape[0], np.int64)
    for b in prange(R.shape[0]):
        its[b], done[b] = _heavy_top_loop(R[b], p[b], xi[b], h, n_steps)
    return (R, p, xi), its, done


@njit(parallel=True, **JIT)
def run_knife_edge_batch(state, h, n_steps):
    """:func:`run_knife_edge` of ``B`` trajectories (arrays ``(B, ...)``) in ``prange``."""
    q, p, z = state[0].copy(), state[1].copy(), state[2].copy()
    its, done = np.zeros(q.shape[0], np.int64), np.zeros(q.shape[0], np.int64)
    for b in prange(q.shape[0]):
        its[b], done[b] = _knife_edge_loop(q[b], p[b], z[b], h, n_steps)
    return (q, p, z), its, done


# ---------------------------------------------------------- initial states
def heavy_top_state(R0, v0, h):
    """``(R, p, xi)`` (any leading batch axes) with ``p = I v0``, ``xi = h v0``."""
    v0 = np.asarray(v0, dtype=float)
    return np.array(R0, dtype=float), v0 * np.array([I1, I2, I3]), h * v0


def knife_edge_state(q0, v0, h):
    """``(q, p, z)`` with ``p = dL/dv(v0)``, ``z = (h v0, mu = 0)``."""
    v0 = np.asarray(v0, dtype=float)
    z = np.concatenate([h * v0, np.zeros(v0.shape[:-1] + (1,))], -1)
    return np.array(q0, dtype=float), v0 * np.array([INERTIA, MASS, MASS]), z


def _cases():
    """``name: (system, q0, v0, h, make_state, step, run, run_batch)`` of the check and timings."""
    from manifold_dirac._manifolds import SO3
    from manifold_dirac.systems import heavy_top, knife_edge

    return {
        "heavy_top": (heavy_top(), SO3().from_coordinates([0.3, 0.1, 0.0]), [0.5, -0.2, 2.0], 0.01,
                      heavy_top_state, heavy_top_step, run_heavy_top, run_heavy_top_batch),
        "knife_edge": (knife_edge(), np.eye(3), [0.8, 1.0, 0.0], 0.05,
                       knife_edge_state, knife_edge_step, run_knife_edge, run_knife_edge_batch),
    }


def check(n_steps: int = 50, tol: float = 1e-10) -> dict:
    """Compare ``n_steps`` steps of both systems with ``manifold_dirac.integrate``.

    Returns the worst relative deviations ``{name: (dq, dp)}`` over the
    trajectory (max-norm, relative to the library's); raises ``AssertionError``
    above ``tol``.
    """
    from manifold_dirac import integrate

    out = {}
    for name, (system, q0, v0, h, make, step, _, _) in _cases().items():
        ref = integrate(system, q0, v0=np.array(v0), h=h, n_steps=n_steps)
        q, p, z = make(q0, v0, h)
        qs, ps = [q], [p]
        for _ in range(n_steps):
            q, p, z, _it, ok = step(q, p, z, h)
            assert ok, f"{name}: Newton failed"
            qs.append(q)
            ps.append(p)
        dq, dp = (float(np.max(np.abs(np.array(x) - y)) / np.max(np.abs(y)))
                  for x, y in [(qs, ref.q), (ps, ref.p)])
        assert dq <= tol and dp <= tol, f"{name}: |dq| = {dq:.2e}, |dp| = {dp:.2e} (relative) > {tol:.0e}"
        out[name] = (dq, dp)
    return out


# ------------------------------------------------------------------ timing
def _median_time(fn, repeats: int) -> float:
    return float(np.median(timeit.repeat(fn, number=1, repeat=repeats)))


def _batch_state(name: str, B: int, rng: np.random.Generator):
    """``B`` generic initial states near the check's (``v_y = 0`` for the knife edge)."""
    from manifold_dirac._manifolds import SE2, SO3

    if name == "heavy_top":
        R0 = SO3().from_coordinates(rng.normal(0.0, 0.5, (B, 3)) + [0.3, 0.1, 0.0])
        return heavy_top_state(R0, [0.5, -0.2, 2.0] + 0.2 * rng.standard_normal((B, 3)), 0.01)
    v0 = np.stack([0.8 + 0.2 * rng.standard_normal(B), 1.0 + 0.2 * rng.standard_normal(B), np.zeros(B)], -1)
    return knife_edge_state(SE2().from_coordinates(rng.normal(0.0, 1.0, (B, 3))), v0, 0.05)


def main(repeats: int = 7, n_single: int = 100_000, batch_work: int = 500_000) -> None:
    """Compile, check, time; ``batch_work`` trajectory-steps per batched timing (>= 200 steps)."""
    numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
    print(f"numba {numba.__version__}, {numba.get_num_threads()} threads, medians of {repeats} repeats")
    cases, rng = _cases(), np.random.default_rng(0)
    print("first call = compile time (each includes the helpers it compiles first):")
    total = 0.0
    for name, (_, q0, v0, h, make, step, run, run_batch) in cases.items():
        st = make(q0, v0, h)
        bst = _batch_state(name, 2, rng)
        for fn, args in ((step, (*st, h)), (run, (st, h, 1)), (run_batch, (bst, h, 1))):
            t = time.perf_counter()
            fn(*args)
            dt = time.perf_counter() - t
            total += dt
            how = "cache load" if sum(fn.stats.cache_hits.values()) else "compiled"
            print(f"  {fn.__name__:22s} {dt:6.2f} s ({how})")
    print(f"  {'total':22s} {total:6.2f} s")

    for name, (dq, dp) in check().items():
        print(f"check {name:10s} vs manifold_dirac.integrate, 50 steps: "
              f"|dq|/|q| = {dq:.1e}, |dp|/|p| = {dp:.1e}  OK")

    print(f"single trajectory, {n_single} steps (run_*):")
    for name, (_, q0, v0, h, make, _, run, _) in cases.items():
        st = make(q0, v0, h)
        _, its, done = run(st, h, n_single)
        assert done == n_single, f"{name}: Newton failed at step {done}"
        t = _median_time(partial(run, st, h, n_single), repeats)
        print(f"  {name:10s} h = {h:4.2f}: {1e6 * t / n_single:6.3f} us/step, "
              f"{its / n_single:.3f} Newton iterations/step")

    print("batched (run_*_batch, prange), trajectory-steps/s:")
    for B in (1, 64, 4096):
        n = max(200, batch_work // B)
        for name, (_, _, _, h, _, _, _, run_batch) in cases.items():
            st = _batch_state(name, B, rng)
            _, its, done = run_batch(st, h, n)
            assert np.all(done == n), f"{name}: Newton failed in a batch member"
            t = _median_time(partial(run_batch, st, h, n), repeats)
            print(f"  {name:10s} B = {B:4d} ({n:6d} steps): {B * n / t:10.3e} traj-steps/s, "
                  f"{its.sum() / (B * n):.3f} Newton iterations/step")


if __name__ == "__main__":
    # Run the functions of ``benchmarks.numba_floor``, not of ``__main__``: Numba's
    # on-disk cache records the defining module, and one name keeps it valid for both.
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.numba_floor import main as _main

    _main()
