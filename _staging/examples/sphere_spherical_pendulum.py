"""Spherical pendulum on S^2 through the geomstats adapter: the vertical angular
momentum is a discrete Noether invariant."""

import numpy as np
from _common import output_dir

from manifold_dirac import integrate
from manifold_dirac.plotting import plot_trajectory
from manifold_dirac.systems import spherical_pendulum, spherical_pendulum_vertical_momentum

out = output_dir(__doc__)
sp = spherical_pendulum()
tr = integrate(sp, sp.Q.from_coordinates([2.5, 0.3]), v0=np.array([0.5, 1.0]), h=0.01, n_steps=1000)
Lz = spherical_pendulum_vertical_momentum(sp.Q, tr.q, tr.p)
print(f"spherical pendulum: vertical angular momentum drift {np.ptp(Lz):.1e}, energy error {tr.energy_error:.1e}")
plot_trajectory(tr, sp, path=out / "spherical_pendulum.png")
