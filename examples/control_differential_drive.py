"""Open-loop control by differentiable simulation: a differential-drive vehicle
(no sideways slip: nonholonomic, on SE(2)) driven from rest at the origin to a
target pose beside it, at rest, by L-BFGS on the discrete trajectory.

The unknowns are the forward force and the yaw torque of each of the N steps
(a control covector held over the step). The cost is the miss of the final
pose and the final momentum plus a small effort term; its exact gradient with
respect to all 2N controls is one reverse-mode pass through ``rollout``
(implicit differentiation of each step's equations).
"""

import time

import jax
import jax.numpy as jnp
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from _common import output_dir  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

from manifold_dirac import rollout  # noqa: E402
from manifold_dirac.systems import differential_drive  # noqa: E402

out = output_dir(__doc__)
zero = lambda t: 0.0 * t  # noqa: E731  (the inputs come from the controls)
car = differential_drive(mass=1.0, inertia=0.1, drive=zero, steer=zero, damping=0.2)
h, N = 0.05, 80  # 4 s
target = (1.0, 1.0, np.pi)  # x, y, heading: turned around, beside the start (a sideways shift)
c, s = np.cos(target[2]), np.sin(target[2])
G_target = jnp.array([[c, -s, target[0]], [s, c, target[1]], [0.0, 0.0, 1.0]])
EFFORT = 1e-3


def unpack(x):
    """``(N, 2)`` = (torque, force) per step -> control covectors ``(N, 3)`` (no sideways input)."""
    u = jnp.reshape(x, (N, 2))
    return jnp.stack([u[:, 0], u[:, 1], jnp.zeros(N)], axis=1)


def cost(x):
    r = rollout(car, jnp.eye(3), jnp.zeros(3), h=h, n_steps=N, controls=unpack(x))
    miss = jnp.sum((r.q[-1] - G_target) ** 2)  # position and heading (rotation block)
    moving = jnp.sum(r.p[-1] ** 2)  # arrive at rest
    return miss + moving + EFFORT * h * jnp.sum(x**2), r.status


value_and_grad = jax.jit(jax.value_and_grad(cost, has_aux=True))
rng = np.random.default_rng(1)
x0 = 0.01 * rng.standard_normal(2 * N)  # a small kick: at exact rest the sideways miss has no first-order term
t = time.perf_counter()
jax.block_until_ready(value_and_grad(jnp.asarray(x0)))
compile_s = time.perf_counter() - t
statuses = []


def fg(x):
    (f, status), g = value_and_grad(jnp.asarray(x))
    statuses.append(int(status))
    return float(f), np.asarray(g, dtype=float)


t = time.perf_counter()
res = minimize(fg, x0, jac=True, method="L-BFGS-B", options={"maxiter": 400, "gtol": 1e-9})
solve_s = time.perf_counter() - t
if any(statuses):
    raise SystemExit(f"a step failed during the optimization (status {max(statuses)})")
r = rollout(car, jnp.eye(3), jnp.zeros(3), h=h, n_steps=N, controls=unpack(jnp.asarray(res.x))).check()
qN = np.asarray(r.q[-1])
pose = (qN[0, 2], qN[1, 2], np.arctan2(qN[1, 0], qN[0, 0]) % (2 * np.pi))
print(f"differential drive to ({target[0]}, {target[1]}, pi) from rest: {res.nit} L-BFGS iterations, "
      f"{res.nfev} gradients (one reverse pass each over {N} steps), {solve_s:.2f} s (compile {compile_s:.1f} s)")
print(f"final pose ({pose[0]:.4f}, {pose[1]:.4f}, {pose[2]:.4f}), position miss "
      f"{np.hypot(pose[0] - target[0], pose[1] - target[1]):.1e}, heading miss {abs(pose[2] - target[2]):.1e}, "
      f"final |p| {np.linalg.norm(np.asarray(r.p[-1])):.1e}, sideways slip max |v_y| "
      f"{np.max(np.abs(np.asarray(r.z[:, 2]))) / h:.1e}")
if not (np.hypot(pose[0] - target[0], pose[1] - target[1]) < 0.05 and abs(pose[2] - target[2]) < 0.05):
    raise SystemExit("the controls did not reach the target")

# figure: the path with headings, and the controls
q = np.asarray(r.q)
u = np.reshape(res.x, (N, 2))
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
ax = axes[0]
ax.plot(q[:, 0, 2], q[:, 1, 2], "-", color="C0", label="path of the contact point")
every = slice(0, N + 1, 8)
ax.quiver(q[every, 0, 2], q[every, 1, 2], q[every, 0, 0], q[every, 1, 0], angles="xy", scale=8, width=0.004,
          color="C0")
ax.plot(0, 0, "ko", label="start (at rest)")
ax.quiver([target[0]], [target[1]], [c], [s], angles="xy", scale=8, width=0.006, color="C3", label="target pose")
ax.set_aspect("equal")
ax.set_xlabel("x")
ax.set_ylabel("y")
ax.legend(fontsize=8, loc="lower right")
ax.set_title("differential drive: open-loop path (arrows: heading)")
ax = axes[1]
tt = np.asarray(r.t[:-1])
ax.step(tt, u[:, 1], where="post", label="forward force f")
ax.step(tt, u[:, 0], where="post", label="yaw torque tau")
ax.set_xlabel("t")
ax.legend()
ax.set_title(f"controls (held over each step, h = {h})")
fig.tight_layout()
fig.savefig(out / "control_differential_drive.png", dpi=110)
print(f"wrote {out / 'control_differential_drive.png'}")
