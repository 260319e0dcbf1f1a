"""A differential-drive vehicle on SE(2) driven by time-dependent inputs, and the
same vehicle steered step by step from a control loop (zero-order hold).

In the loop the vehicle has no inputs or resistance of its own: Integrator.step(state, u)
adds the control covector u to the system's force."""

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
steered = differential_drive(drive=lambda t: 0.0, steer=lambda t: 0.0, damping=0.0)
integ = Integrator(steered, 0.02)
state = integ.initial_state(steered.Q.identity(), v0=np.zeros(3))
poses = [np.asarray(state.q)]
for _ in range(600):
    x, y, th = np.asarray(steered.Q.to_coordinates(state.q))
    bearing = np.angle(np.exp(1j * (np.arctan2(3 - y, 3 - x) - th)))
    xi = np.asarray(state.members.xi)                       # the last step's chart coordinate
    omega, speed = xi[0] / integ.h, xi[1] / integ.h         # its body velocity
    distance = np.hypot(3 - x, 3 - y)
    torque = 0.5 * bearing - 0.6 * omega                    # PD on the bearing
    drive = 1.5 * min(distance, 1.0) * np.cos(bearing) - 1.0 * speed
    state, rec = integ.step(state, np.array([torque, drive, 0.0]))
    poses.append(np.asarray(state.q))
print(f"closed loop: final position {np.round(np.asarray(steered.Q.to_coordinates(state.q))[:2], 2)} (target (3, 3))")
plot_se2_path(np.stack(poses), title="Differential drive steered to (3, 3)", path=out / "differential_drive_path.png")
