"""The vertical rolling disk: a planar body on SE(2) and a wheel angle joined by
rolling without slipping; the contact point runs on a circle of radius R phi'/theta'."""

import numpy as np
from _common import output_dir

from manifold_dirac import SE2, integrate
from manifold_dirac.plotting import plot_se2_path
from manifold_dirac.systems import rolling_disk, rolling_disk_exact

out = output_dir(__doc__)
R = 0.5
disk = rolling_disk(R)
tr = integrate(disk, (SE2().identity(), np.zeros(1)), v0=np.array([0.7, 2.0 * R, 0.0, 2.0]), h=0.02, n_steps=500)
exact = rolling_disk_exact(tr.t, R, 0.7, 2.0)
print(f"rolling disk: position error {np.abs(tr.q[0][:, :2, 2] - exact[:, :2]).max():.1e}, "
      f"radius R phi'/theta' = {R * 2.0 / 0.7:.4f}")
print(f"discrete heading and rolling rates are constant to {max(np.ptp(tr.xi[:, 0]), np.ptp(tr.xi[:, 3])):.1e}")
parts = disk.parts(tr)  # per-subsystem read-back
print(f"wheel angle after {tr.t[-1]:g} s: {parts['wheel'].q[-1, 0]:.4f} rad (exact {exact[-1, 3]:.4f})")
plot_se2_path(tr.q[0], title="Rolling disk: contact-point path", path=out / "rolling_disk_path.png")
