"""Double pendulum on R^2: a variational integrator keeps the energy error bounded."""

import numpy as np
from _common import output_dir

from manifold_dirac import integrate
from manifold_dirac.plotting import plot_energy_and_constraint, plot_trajectory
from manifold_dirac.systems import double_pendulum

out = output_dir(__doc__)
dp = double_pendulum()
tr = integrate(dp, np.array([1.0, -0.5]), v0=np.zeros(2), h=0.01, n_steps=2000)
print(f"double pendulum: max |E - E0| = {tr.energy_error:.2e} over t = {tr.t[-1]:g}")
plot_trajectory(tr, dp, path=out / "double_pendulum_angles.png")
plot_energy_and_constraint(tr, path=out / "double_pendulum_energy.png")
