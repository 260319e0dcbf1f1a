"""Hand-specialized baselines of the library's default scheme, for the benchmark ratios.

Each baseline implements *the same scheme* as ``manifold_dirac.integrate``
with its defaults -- the symmetric discrete Lagrange--Dirac scheme with the
midpoint discrete Lagrangian (``docs/schemes.md``) -- and *the same solver*:
Newton in ``(xi, mu)`` with a forward-difference Jacobian in ``xi`` of the
exact equations (the ``n`` perturbed copies of ``xi`` evaluated in one
vectorized call), exact columns in ``mu``, the same tolerances and stopping
test. What is specialized by hand is everything the library does generically:
the retraction and its Jacobians are inlined for the one manifold, structure
known in advance is used (constant constraint one-forms, ``dL/dq = 0``,
``J_r(xi/2) xi = xi`` for ``exp``), and there are no layers, dataclasses or
checks. The ratio library / baseline is therefore the cost of generality.

All baselines take leading batch axes ``(*B, ...)`` like the library, so the
same code is the batched baseline. ``scalar_pendulum`` is the other extreme:
a scalar pure-Python loop (``math.sin``, analytic Newton derivative).

Each ``*_step`` function advances ``(q, p, xi, mu)`` by one step and returns
the new tuple plus the Newton iteration count; ``run(baseline, state, n)``
loops.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

RTOL, ATOL, FD, MAXIT = 1e-12, 1e-13, 1.5e-8, 30  # = SolverOptions() defaults
_SMALL = 1e-3
_I3 = np.eye(3)


# --------------------------------------------------------------------- Newton
def newton(residual: Callable, xi: np.ndarray, mu: np.ndarray, G: np.ndarray | None):
    """Solve ``residual(XI, mu) = (r1, r2, scale)`` by the library's Newton method.

    ``XI`` has a leading axis of ``n + 1`` (the iterate and its ``n``
    forward-difference copies); ``G`` is ``dr1/dmu = -G`` (constant), ``None``
    without constraints. Returns ``(xi, mu, iterations)``.
    """
    n = xi.shape[-1]
    m = mu.shape[-1]
    B = xi.shape[:-1]
    eye = np.eye(n).reshape((n,) + (1,) * len(B) + (n,))
    K = np.zeros((*B, n + m, n + m))
    Kt = np.moveaxis(K, -1, 0)
    if m:
        K[..., :n, n:] = -G
    for it in range(MAXIT + 1):
        nx = np.abs(xi).max(axis=-1)
        d = FD * np.maximum(1.0, nx)
        XI = np.concatenate([xi[None], xi + d[..., None] * eye])
        r1, r2, scale = residual(XI, mu)
        n1 = np.abs(r1[0]).max(axis=-1)
        n2 = np.abs(r2[0]).max(axis=-1, initial=0.0)
        if np.all((n1 <= ATOL + RTOL * scale) & (n2 <= ATOL + RTOL * nx)) or it == MAXIT:
            return xi, mu, it
        Kt[:n, ..., :n] = (r1[1:] - r1[0]) / d[..., None]
        if m:
            Kt[:n, ..., n:] = (r2[1:] - r2[0]) / d[..., None]
            rhs = -np.concatenate([r1[0], r2[0]], -1)
        else:
            rhs = -r1[0]
        delta = np.linalg.solve(K, rhs[..., None])[..., 0]
        xi = xi + delta[..., :n]
        mu = mu + delta[..., n:]
    raise AssertionError("unreachable")


# ------------------------------------------------------------------ Euclidean
@dataclass(frozen=True)
class Pendulum:
    """``L = m l^2/2 v^2 + m g l cos q`` on R: ``D1 = h/2 dL/dq(q + xi/2) - dL/dv``."""

    length: float = 1.0
    mass: float = 1.0
    gravity: float = 9.81
    h: float = 0.01

    def step(self, q, p, xi, mu):
        h, ml2, mgl = self.h, self.mass * self.length**2, self.mass * self.gravity * self.length

        def residual(XI, _mu):
            dq = -mgl * np.sin(q + 0.5 * XI)
            dv = ml2 * XI / h
            D1 = 0.5 * h * dq - dv
            return p + D1, XI[..., :0], np.maximum(np.abs(p).max(-1), np.abs(D1[0]).max(-1))

        xi, mu, it = newton(residual, xi, mu, None)
        p1 = 0.5 * h * (-mgl * np.sin(q + 0.5 * xi)) + ml2 * xi / h
        return (q + xi, p1, xi, mu), it


@dataclass(frozen=True)
class DoublePendulum:
    """The library's double pendulum (absolute angles), midpoint rule on R^2."""

    l1: float = 1.0
    l2: float = 1.0
    m1: float = 1.0
    m2: float = 1.0
    gravity: float = 9.81
    h: float = 0.01

    def partials(self, q, v):
        l1, l2, m1, m2, g = self.l1, self.l2, self.m1, self.m2, self.gravity
        a, b = q[..., 0], q[..., 1]
        va, vb = v[..., 0], v[..., 1]
        s, c = np.sin(a - b), np.cos(a - b)
        k = m2 * l1 * l2
        dq = np.stack([-k * va * vb * s - (m1 + m2) * g * l1 * np.sin(a), k * va * vb * s - m2 * g * l2 * np.sin(b)], -1)
        dv = np.stack([(m1 + m2) * l1**2 * va + k * vb * c, m2 * l2**2 * vb + k * va * c], -1)
        return dq, dv

    def step(self, q, p, xi, mu):
        h = self.h

        def residual(XI, _mu):
            dq, dv = self.partials(q + 0.5 * XI, XI / h)
            D1 = 0.5 * h * dq - dv
            return p + D1, XI[..., :0], np.maximum(np.abs(p).max(-1), np.abs(D1[0]).max(-1))

        xi, mu, it = newton(residual, xi, mu, None)
        dq, dv = self.partials(q + 0.5 * xi, xi / h)
        return (q + xi, 0.5 * h * dq + dv, xi, mu), it


# ---------------------------------------------------------------------- SO(3)
def _skew(w):
    z = np.zeros_like(w[..., 0])
    x, y, zz = w[..., 0], w[..., 1], w[..., 2]
    return np.stack([np.stack([z, -zz, y], -1), np.stack([zz, z, -x], -1), np.stack([-y, x, z], -1)], -2)


def _so3_coeffs(t2):
    """``a, b, c, k`` of Rodrigues and the Jacobians (series below 1e-3, else closed forms)."""
    if np.all(t2 < _SMALL):
        return (1 - t2 / 6 * (1 - t2 / 20 * (1 - t2 / 42)), 0.5 - t2 / 24 * (1 - t2 / 30 * (1 - t2 / 56)),
                1 / 6 - t2 / 120 * (1 - t2 / 42 * (1 - t2 / 72)), 1 / 12 + t2 / 720 + t2 * t2 / 30240 + t2**3 / 1209600)
    if np.any(t2 < _SMALL):  # pragma: no cover - mixed batches are rare in these benchmarks
        s = _so3_coeffs(np.minimum(t2, _SMALL / 2))
        d = _so3_coeffs(np.maximum(t2, 2 * _SMALL))
        return tuple(np.where(t2 < _SMALL, a, b) for a, b in zip(s, d))
    t = np.sqrt(t2)
    s, sh, ch = np.sin(t), np.sin(t / 2), np.cos(t / 2)
    return s / t, 2 * sh * sh / t2, (t - s) / (t2 * t), (1.0 - 0.5 * t * ch / sh) / t2


@dataclass(frozen=True)
class HeavyTop:
    """``L = 1/2 w.I w - mgl e3.(R chi)`` on SO(3) with ``exp`` or Cayley; no constraints.

    ``D1 = h P0^T dL/dq(c) + J0^T I v``, ``P0 = Ad_{tau(xi/2)^-1} + J_r(xi/2) J0 / 2``,
    ``c = R tau(xi/2)``, ``J0 = -J_l^{-1}(xi)``, ``J1 = J_r^{-1}(xi)``.
    """

    inertia: tuple = (1.0, 2.0, 3.0)
    mgl: float = 1.0
    chi: tuple = (0.0, 0.0, 1.0)
    h: float = 0.01
    retraction: str = "exp"

    def _geometry(self, R, XI):
        X = _skew(XI)
        XX = X @ X
        t2 = np.sum(XI * XI, -1)
        Xh, XXh, t2h = 0.5 * X, 0.25 * XX, 0.25 * t2
        if self.retraction == "exp":
            _, _, _, k = _so3_coeffs(t2)
            ah, bh, ch, _ = _so3_coeffs(t2h)
            tau_h = _I3 + ah[..., None, None] * Xh + bh[..., None, None] * XXh
            Jx_h = _I3 - bh[..., None, None] * Xh + ch[..., None, None] * XXh
            kXX = k[..., None, None] * XX
            Jl_inv, Jr_inv = _I3 - 0.5 * X + kXX, _I3 + 0.5 * X + kXX
        else:
            f = 1.0 / (1.0 + t2h / 4)
            tau_h = _I3 + f[..., None, None] * (Xh + 0.5 * XXh)
            Jx_h = (2.0 / (4.0 + t2h))[..., None, None] * (2.0 * _I3 - Xh)
            outer = 0.25 * XI[..., :, None] * XI[..., None, :]
            Jl_inv, Jr_inv = _I3 - 0.5 * X + outer, _I3 + 0.5 * X + outer
        c = R @ tau_h
        J0 = -Jl_inv
        P0 = np.swapaxes(tau_h, -1, -2) + 0.5 * Jx_h @ J0
        P1 = 0.5 * Jx_h @ Jr_inv
        return c, J0, Jr_inv, P0, P1

    def _D(self, R, XI):
        I, chi, h = np.asarray(self.inertia), np.asarray(self.chi), self.h
        c, J0, J1, P0, P1 = self._geometry(R, XI)
        up = c[..., 2, :]  # c^T e3
        dq = -self.mgl * np.stack([chi[1] * up[..., 2] - chi[2] * up[..., 1], chi[2] * up[..., 0] - chi[0] * up[..., 2],
                                   chi[0] * up[..., 1] - chi[1] * up[..., 0]], -1)
        dv = I * XI / h
        hdq = h * dq[..., None, :]
        dvr = dv[..., None, :]
        D1 = (hdq @ P0 + dvr @ J0)[..., 0, :]
        D2 = (hdq @ P1 + dvr @ J1)[..., 0, :]
        return c, D1, D2

    def step(self, R, p, xi, mu):
        def residual(XI, _mu):
            _, D1, _ = self._D(R, XI)
            return p + D1, XI[..., :0], np.maximum(np.abs(p).max(-1), np.abs(D1[0]).max(-1))

        xi, mu, it = newton(residual, xi, mu, None)
        t2 = np.sum(xi * xi, -1)
        X = _skew(xi)
        if self.retraction == "exp":
            a, b, _, _ = _so3_coeffs(t2)
            tau = _I3 + a[..., None, None] * X + b[..., None, None] * (X @ X)
        else:
            tau = _I3 + (1.0 / (1.0 + t2 / 4))[..., None, None] * (X + 0.5 * X @ X)
        _, _, D2 = self._D(R, xi)
        return (R @ tau, D2, xi, mu), it


# ---------------------------------------------------------------------- SE(2)
def _se2_abcd(w):
    w2 = w * w
    if np.all(w2 < _SMALL):
        return (1 - w2 / 6 * (1 - w2 / 20 * (1 - w2 / 42)), w / 2 * (1 - w2 / 12 * (1 - w2 / 30 * (1 - w2 / 56))),
                w / 6 * (1 - w2 / 20 * (1 - w2 / 42 * (1 - w2 / 72))), 0.5 - w2 / 24 * (1 - w2 / 30 * (1 - w2 / 56)))
    if np.any(w2 < _SMALL):  # pragma: no cover
        small = w2 < _SMALL
        s = _se2_abcd(np.where(small, w, 0.0))
        d = _se2_abcd(np.where(small, 1.0, w))
        return tuple(np.where(small, a, b) for a, b in zip(s, d))
    s, hc = np.sin(w), 2 * np.sin(w / 2) ** 2
    return s / w, hc / w, (w - s) / w2, hc / w2


def _se2_exp(xi):
    """``(cos, sin, tx, ty)`` of ``exp(xi)``, ``xi = (w, vx, vy)``."""
    w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
    A, B, _, _ = _se2_abcd(w)
    return np.cos(w), np.sin(w), A * vx - B * vy, B * vx + A * vy


def _se2_compose(q, c, s, tx, ty):
    """``q exp(xi)`` from the parts of ``exp(xi)``; ``q`` is ``(*B, 3, 3)``."""
    g = np.zeros(np.broadcast_shapes(q.shape, np.shape(c) + (3, 3)))
    R00, R01, R10, R11 = q[..., 0, 0], q[..., 0, 1], q[..., 1, 0], q[..., 1, 1]
    g[..., 0, 0] = R00 * c + R01 * s
    g[..., 0, 1] = -R00 * s + R01 * c
    g[..., 1, 0] = R10 * c + R11 * s
    g[..., 1, 1] = -R10 * s + R11 * c
    g[..., 0, 2] = R00 * tx + R01 * ty + q[..., 0, 2]
    g[..., 1, 2] = R10 * tx + R11 * ty + q[..., 1, 2]
    g[..., 2, 2] = 1.0
    return g


def _se2_J0T_J1T_dot(xi, dv):
    """``(J0^T dv, J1^T dv)`` for ``exp``: ``J1 = J_r^{-1}(xi)``, ``J0 = -J_l^{-1}(xi) = -J_r^{-1}(-xi)``.

    ``J_r^{-1} = [[1, 0], [-M^-1 c, M^-1]]`` with ``M = [[A, B], [-B, A]]``,
    ``c = (vx C - vy D, vx D + vy C)``, ``M^-1 = [[A, -B], [B, A]] / (A^2 + B^2)``.
    """
    w, vx, vy = xi[..., 0], xi[..., 1], xi[..., 2]
    A, B, C, D = _se2_abcd(w)
    n = A * A + B * B
    a, b = A / n, B / n
    d0, d1, d2 = dv[..., 0], dv[..., 1], dv[..., 2]

    def jinv_t_dot(b_, c0, c1):
        # M^-1 = [[a, -b_], [b_, a]]; col = -M^-1 c
        col0 = -(a * c0 - b_ * c1)
        col1 = -(b_ * c0 + a * c1)
        return np.stack([d0 + col0 * d1 + col1 * d2, a * d1 + b_ * d2, -b_ * d1 + a * d2], -1)

    J1T = jinv_t_dot(b, vx * C - vy * D, vx * D + vy * C)
    J0T = -jinv_t_dot(-b, vx * C + vy * D, vy * C - vx * D)
    return J0T, J1T


@dataclass(frozen=True)
class SE2Vehicle:
    """A Lagrangian on SE(2) (or SE(2) x R) with constant constraint one-forms.

    ``kind``: ``"knife"`` (inclined knife edge, ``dL/dq = w (0, R00, R01)``),
    ``"sled"`` (Chaplygin sled), ``"disk"`` (vertical rolling disk on SE(2) x R:
    ``xi = (w, vx, vy, dphi)``, constraints ``vy = 0``, ``vx = r dphi``).
    The midpoint constraint ``A J_r(xi/2) xi`` is ``A xi`` for ``exp``.
    """

    kind: str = "knife"
    h: float = 0.01
    mass: float = 1.0
    inertia: float = 0.5
    gravity: float = 9.81
    incline: float = 0.3
    offset: float = 0.5
    radius: float = 0.5
    roll_inertia: float = 0.125

    @property
    def A(self):
        if self.kind == "disk":
            return np.array([[0.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, -self.radius]])
        return np.array([[0.0, 0.0, 1.0]])

    def _dv(self, v):
        m, J = self.mass, self.inertia
        if self.kind == "sled":
            s = m * (v[..., 2] + self.offset * v[..., 0])
            return np.stack([self.offset * s + J * v[..., 0], m * v[..., 1], s], -1)
        return np.stack([J * v[..., 0], m * v[..., 1], m * v[..., 2]], -1)

    def _D(self, q, XI):
        h = self.h
        body = XI[..., :3]
        dv = self._dv(body / h)
        J0T, J1T = _se2_J0T_J1T_dot(body, dv)
        if self.kind == "knife":
            # dL/dq at c = q exp(xi/2) pulled back: h P^T dq, P0 = Ad_{tau_h^-1} + J_r(xi/2) J0 / 2
            wgt = self.mass * self.gravity * np.sin(self.incline)
            half = 0.5 * body
            ch, sh, txh, tyh = _se2_exp(half)
            # R(c)[0, :] = R(q)[0, :] rot(w/2): the x-row of the midpoint's rotation
            r0 = q[..., 0, 0] * ch + q[..., 0, 1] * sh
            r1 = -q[..., 0, 0] * sh + q[..., 0, 1] * ch
            dq = np.stack([np.zeros_like(r0), wgt * r0, wgt * r1], -1)
            Ad = np.zeros(np.shape(r0) + (3, 3))
            Ad[..., 0, 0] = 1.0
            Ad[..., 1, 0], Ad[..., 2, 0] = sh * txh - ch * tyh, ch * txh + sh * tyh
            Ad[..., 1, 1], Ad[..., 1, 2], Ad[..., 2, 1], Ad[..., 2, 2] = ch, sh, -sh, ch
            w, vx, vy = half[..., 0], half[..., 1], half[..., 2]
            A, B, C, D = _se2_abcd(w)
            Jx = np.zeros_like(Ad)
            Jx[..., 0, 0] = 1.0
            Jx[..., 1, 0], Jx[..., 2, 0] = vx * C - vy * D, vx * D + vy * C
            Jx[..., 1, 1], Jx[..., 1, 2], Jx[..., 2, 1], Jx[..., 2, 2] = A, B, -B, A
            # P0^T dq = Ad^T dq + J0^T (Jx^T dq) / 2; J0^T y and J1^T y via the helper
            y = (dq[..., None, :] @ Jx)[..., 0, :]
            J0Ty, J1Ty = _se2_J0T_J1T_dot(body, y)
            AdTdq = (dq[..., None, :] @ Ad)[..., 0, :]
            D1 = h * (AdTdq + 0.5 * J0Ty) + J0T
            D2 = h * 0.5 * J1Ty + J1T
            return D1, D2
        if self.kind == "disk":
            ir = self.roll_inertia * XI[..., 3:] / h
            return np.concatenate([J0T, -ir], -1), np.concatenate([J1T, ir], -1)
        return J0T, J1T

    def step(self, q, p, xi, mu):
        A = self.A
        G = np.broadcast_to(A.T, (*xi.shape[:-1], *A.T.shape))
        pose = q[0] if self.kind == "disk" else q

        def residual(XI, MU):
            D1, _ = self._D(pose, XI)
            r1 = p + D1 - MU @ A
            return r1, XI @ A.T, np.maximum(np.abs(p).max(-1), np.abs(D1[0]).max(-1))

        xi, mu, it = newton(residual, xi, mu, G)
        _, D2 = self._D(pose, xi)
        q1 = _se2_compose(pose, *_se2_exp(xi[..., :3]))
        if self.kind == "disk":
            q1 = (q1, q[1] + xi[..., 3:])
        return (q1, D2, xi, mu), it


def run(baseline, state, n_steps: int):
    """``n_steps`` steps of a baseline from ``state = (q, p, xi, mu)``; returns the last state."""
    for _ in range(n_steps):
        state, _ = baseline.step(*state)
    return state


# ------------------------------------------------------------ pure Python
def scalar_pendulum(q: float, v: float, h: float, n_steps: int, length=1.0, mass=1.0, gravity=9.81):
    """The pendulum's midpoint variational integrator as a scalar pure-Python loop.

    Newton on ``p + h/2 dL/dq(q + x/2) - m l^2 x / h = 0`` with the analytic
    derivative, the library's tolerances. Returns ``(q, p)`` after ``n_steps``.
    """
    ml2, mgl = mass * length * length, mass * gravity * length
    sin, cos = math.sin, math.cos
    p, x = ml2 * v, h * v
    c1, c2 = 0.5 * h * mgl, ml2 / h
    for _ in range(n_steps):
        for _it in range(MAXIT):
            s = sin(q + 0.5 * x)
            r = p - c1 * s - c2 * x
            if abs(r) <= ATOL + RTOL * max(abs(p), abs(c1 * s + c2 * x)):
                break
            x -= r / (-0.5 * c1 * cos(q + 0.5 * x) - c2)
        p = -c1 * sin(q + 0.5 * x) + c2 * x
        q += x
    return q, p
