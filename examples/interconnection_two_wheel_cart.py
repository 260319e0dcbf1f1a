"""A hierarchy: two rolling disks (each an interconnection) joined by an axle
into a cart -- the same motion as the flat interconnection of its four parts."""

import numpy as np
from _common import output_dir

from manifold_dirac import integrate
from manifold_dirac.plotting import plot_se2_path
from manifold_dirac.systems import two_wheel_cart, two_wheel_cart_flat
from manifold_dirac import get_example

out = output_dir(__doc__)
cart = two_wheel_cart(1.0, 0.5)  # Newton iterates each step to round-off: no tightened solver options
q0, v0 = get_example("two_wheel_cart").initial(cart)
a = integrate(cart, q0, v0=v0, h=0.05, n_steps=300)
b = integrate(two_wheel_cart_flat(1.0, 0.5), (q0[0][0], q0[0][1], q0[1][0], q0[1][1]), v0=v0, h=0.05, n_steps=300)
print(f"hierarchical vs flat: max pose difference {np.abs(a.q[0][0] - b.q[0]).max():.1e}")
axle = np.linalg.norm(a.q[0][0][:, :2, 2] - a.q[1][0][:, :2, 2], axis=-1)
print(f"axle length stays {axle[0]:.1f} to {np.ptp(axle):.1e}")
plot_se2_path(np.stack([a.q[0][0], a.q[1][0]], axis=1), title="Two-wheel cart: left (0) and right (1) wheel",
              path=out / "two_wheel_cart_paths.png")
