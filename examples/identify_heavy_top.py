"""Identification by differentiable simulation: recover a heavy top's full inertia
tensor and centre-of-mass offset (and its unknown initial attitude and angular
velocity) from a noisy recorded trajectory of its attitude.

A recorded motion determines ``(I, c)`` only up to a common factor (``L`` and
``alpha L`` have the same motions), so one length is measured: the distance
``|c|`` from the pivot to the centre of mass. The unknowns are the 6 entries
of ``I``, the direction of ``c`` (its two lateral components), the initial
attitude (in the tangent frame of the first recorded attitude) and the
initial angular velocity.

The model is the discrete map itself (``rollout``): the residuals are the
simulated minus the recorded rotation matrices, and their exact Jacobian with
respect to the 15 unknowns comes from ``jax.jacfwd`` through the run (implicit
differentiation of each step). ``scipy.optimize.least_squares`` does the rest.
"""

import time

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import output_dir  # noqa: E402
from scipy.optimize import least_squares  # noqa: E402

from manifold_dirac import SO3, LagrangeDiracSystem, rollout  # noqa: E402

out = output_dir(__doc__)
MG = 9.81 * 0.5  # known: mass 0.5 kg times gravity
DIST = float(np.linalg.norm([0.01, -0.005, 0.04]))  # known: |c|, pivot to centre of mass (fixes the scale)


def symmetric(s):
    """The inertia tensor from its 6 independent entries ``(Ixx, Iyy, Izz, Ixy, Ixz, Iyz)``."""
    return jnp.array([[s[0], s[3], s[4]], [s[3], s[1], s[5]], [s[4], s[5], s[2]]])


def L(q, v, p):
    """``1/2 w.I w - m g e3.(R c)``: ``q[2, :] = R^T e3``."""
    return 0.5 * v @ symmetric(p["inertia"]) @ v - MG * jnp.dot(q[2, :], p["com"])


def partials(q, v, p):
    return -MG * jnp.cross(p["com"], q[2, :]), symmetric(p["inertia"]) @ v


truth = {"inertia": jnp.array([0.012, 0.018, 0.009, 0.002, -0.001, 0.0015]), "com": jnp.array([0.01, -0.005, 0.04])}
top = LagrangeDiracSystem(SO3(), L, partials=partials, name="heavy_top_full_tensor", params=truth)
Q = top.Q
h, N = 0.01, 150  # 1.5 s recorded at 100 Hz
R0_true = Q.retract(jnp.eye(3), jnp.array([0.4, -0.2, 0.0]))
w0_true = jnp.array([2.0, -1.0, 6.0])

# the recording: attitude only, with 0.002 noise on each matrix entry
rng = np.random.default_rng(0)
rec = rollout(top, R0_true, w0_true, h=h, n_steps=N, params=truth).check()
R_obs = np.asarray(rec.q) + 0.002 * rng.standard_normal(np.shape(rec.q))

# unknowns: inertia (6), centre of mass (3), initial attitude in the tangent frame of the first
# (noisy) recorded attitude, projected onto SO(3) (3), initial angular velocity (3)
U, _, Vt = np.linalg.svd(R_obs[0])
R_guess = jnp.asarray(U @ Vt)
w_guess = np.asarray(Q.inverse_retract(R_guess, jnp.asarray(np.linalg.svd(R_obs[2])[0] @ np.linalg.svd(R_obs[2])[2]))) / (2 * h)
x0 = np.concatenate([[0.015, 0.015, 0.015, 0.0, 0.0, 0.0], [0.0, 0.0], np.zeros(3), w_guess])


def unpack(x):
    com = jnp.array([x[6], x[7], jnp.sqrt(DIST**2 - x[6] ** 2 - x[7] ** 2)])
    return {"inertia": x[:6], "com": com}, Q.retract(R_guess, x[8:11]), x[11:14]


def residuals(x):
    params, R0, w0 = unpack(x)
    r = rollout(top, R0, w0, h=h, n_steps=N, params=params)
    return jnp.ravel(r.q - R_obs)


fun = residuals  # calls the compiled run (the same program as the recording)
jac = jax.jit(jax.jacfwd(residuals))  # 14 tangent directions: forward mode
t = time.perf_counter()
jax.block_until_ready(jac(jnp.asarray(x0)))
compile_s = time.perf_counter() - t
t = time.perf_counter()
sol = least_squares(lambda x: np.asarray(fun(jnp.asarray(x))), x0, jac=lambda x: np.asarray(jac(jnp.asarray(x))),
                    method="lm", xtol=1e-12, ftol=1e-12)
solve_s = time.perf_counter() - t
params, R0, w0 = unpack(jnp.asarray(sol.x))
# standard errors from the Gauss-Newton covariance (noise estimated from the residual)
dof = sol.fun.size - sol.x.size
sigma2 = float(sol.fun @ sol.fun) / dof
cov = sigma2 * np.linalg.inv(sol.jac.T @ sol.jac)
se = np.sqrt(np.diag(cov))

names = ["Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz", "c_x", "c_y", "c_z"]
true_vec = np.concatenate([truth["inertia"], truth["com"]])
# c_z follows from |c|: its standard error by the delta method
grad_cz = np.zeros(sol.x.size)
grad_cz[6:8] = -sol.x[6:8] / float(params["com"][2])
se = np.concatenate([se[:8], [np.sqrt(grad_cz @ cov @ grad_cz)], se[8:]])
est = np.concatenate([sol.x[:8], [float(params["com"][2])]])
print(f"heavy top identification (|c| = {DIST:.4f} known): {sol.x.size} unknowns from {N + 1} noisy attitudes "
      f"(noise 0.002, recovered noise {np.sqrt(sigma2):.4f}); {sol.nfev} model runs, {sol.njev} Jacobians, "
      f"{solve_s:.2f} s (compile {compile_s:.1f} s)")
print(f"{'':5s} {'truth':>10s} {'recovered':>10s} {'std.err':>9s} {'error/se':>8s}")
for i, name in enumerate(names):
    print(f"{name:5s} {true_vec[i]:10.5f} {est[i]:10.5f} {se[i]:9.1e} {(est[i] - true_vec[i]) / se[i]:8.2f}")
print(f"initial angular velocity: truth {np.asarray(w0_true)}, recovered {np.round(np.asarray(w0), 4)}")
rel = np.linalg.norm(est - true_vec) / np.linalg.norm(true_vec)
print(f"relative error of (inertia, centre of mass): {rel:.1e}")
if not (sol.success and rel < 0.05):
    raise SystemExit("identification failed")

# figure: recorded vs fitted attitude (the body z axis in space) and the parameters
fit = rollout(top, R0, w0, h=h, n_steps=N, params=params)
start = rollout(top, *unpack(jnp.asarray(x0))[1:], h=h, n_steps=N, params=unpack(jnp.asarray(x0))[0])
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
ax = axes[0]
for j, name in enumerate("xyz"):
    ax.plot(rec.t, R_obs[:, j, 2], ".", ms=2, color=f"C{j}", alpha=0.5)
    ax.plot(fit.t, np.asarray(fit.q)[:, j, 2], "-", color=f"C{j}", label=f"body z axis, {name} (fit)")
    ax.plot(start.t, np.asarray(start.q)[:, j, 2], ":", color=f"C{j}", alpha=0.7)
ax.set_xlabel("t")
ax.set_title("recorded (dots), initial guess (dotted), fitted (lines)")
ax.legend(fontsize=8)
ax = axes[1]
xs = np.arange(9)
ax.bar(xs - 0.2, true_vec, 0.4, label="truth")
ax.bar(xs + 0.2, est, 0.4, yerr=2 * se[:9], label="recovered (2 s.e.)")
ax.set_xticks(xs, names)
ax.set_title("inertia tensor entries and centre-of-mass offset")
ax.legend()
fig.tight_layout()
fig.savefig(out / "identify_heavy_top.png", dpi=110)
print(f"wrote {out / 'identify_heavy_top.png'}")
