"""A mass-spring chain torn into two subsystems and joined again by Sigma: the
interconnected model equals the monolithic one, and the interaction force is the spring's pull."""

import numpy as np
from _common import output_dir

from manifold_dirac import integrate
from manifold_dirac.plotting import plot_trajectory
from manifold_dirac.systems import mass_spring_monolithic, mass_spring_torn

out = output_dir(__doc__)
mono, torn = mass_spring_monolithic(), mass_spring_torn()  # Newton iterates each step to round-off
a = integrate(mono, np.array([0.3, -0.2]), v0=np.array([0.1, 0.4]), h=0.02, n_steps=500)
b = integrate(torn, (np.array([0.3, -0.2]), np.array([-0.2])), v0=np.array([0.1, 0.4, 0.4]), h=0.02, n_steps=500)
print(f"torn vs monolithic: max |x1 - x1'| = {np.abs(a.q[:, 0] - b.q[0][:, 0]).max():.1e}, "
      f"max |x2 - x2'| = {np.abs(a.q[:, 1] - b.q[1][:, 0]).max():.1e}")
f = torn.parts(b)["right"].interaction_force[1:, 0]
print(f"interaction force on the right mass vs k12 (x1 - x2): {np.abs(f - 1.5 * (a.q[1:-1, 0] - a.q[1:-1, 1])).max():.1e}")
plot_trajectory(b, torn, path=out / "mass_spring_torn.png")
