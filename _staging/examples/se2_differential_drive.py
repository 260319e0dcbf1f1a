"""A differential-drive vehicle on SE(2) driven by time-dependent inputs, and the
same vehicle steered step by step from a control loop (zero-order hold)."""

import numpy as np
from _common import output_dir

from manifold_dirac import Integrator, integrate
from manifold_dirac.plotting import plot_se2_path
from manifold_dirac.systems import differential_drive

out = output_dir(__doc__)
dd = differential_drive()
tr = integrate(dd, dd.Q.identity(), v0=np.zeros(3), h=0.02, n_steps=400)
print(f"open loop: final pose (x, y, theta) = {np.round(dd.Q.to_coordinates(tr.q[-1]), 3)}")

# closed loop: steer toward the heading of the point (3, 3)
integ = Integrator(dd, 0.02)
state = integ.initial_state(dd.Q.identity(), v0=np.zeros(3))
poses = [state.q]
for _ in range(600):
    x, y, th = dd.Q.to_coordinates(state.q)
    bearing = np.angle(np.exp(1j * (np.arctan2(3 - y, 3 - x) - th)))
    omega, speed = state.xi[0] / integ.h, state.xi[1] / integ.h  # the last step's body velocity
    distance = np.hypot(3 - x, 3 - y)
    torque = 0.5 * bearing - 0.6 * omega                    # PD on the bearing
    drive = 1.5 * min(distance, 1.0) * np.cos(bearing) - 1.0 * speed
    state, info = integ.step(state, force=np.array([torque, drive, 0.0]))
    poses.append(state.q)
print(f"closed loop: final position {np.round(dd.Q.to_coordinates(state.q)[:2], 2)} (target (3, 3))")
plot_se2_path(np.stack(poses), title="Differential drive steered to (3, 3)", path=out / "differential_drive_path.png")
