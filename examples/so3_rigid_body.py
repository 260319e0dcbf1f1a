"""Rigid bodies on SO(3): the free rigid body's momentum orbits, and the heavy
top against a tight solve_ivp reference with the exp and Cayley retractions."""

import numpy as np
from _common import output_dir

from manifold_dirac import SO3, integrate
from manifold_dirac.plotting import plot_angular_momentum_sphere, plot_so3_body_axes
from manifold_dirac.systems import free_rigid_body, heavy_top, spatial_angular_momentum
from manifold_dirac import get_example

out = output_dir(__doc__)
# free rigid body: a batch of 6 initial angular velocities advanced together
rb = free_rigid_body()
w0 = np.array([[1, 0.1, 0.1], [0.1, 1, 0.1], [0.1, 0.1, 1], [1, 0.5, 0], [0, 0.5, 1], [0.6, 0.6, 0.6]])
tr = integrate(rb, rb.Q.identity((6,)), v0=w0, h=0.05, n_steps=400)
pi = spatial_angular_momentum(tr.q, tr.p)
print(f"free rigid body: spatial angular momentum drift {np.max(np.abs(pi - pi[0])):.1e} (6 bodies at once)")
plot_angular_momentum_sphere(tr, path=out / "free_rigid_body_momentum_sphere.png")

# heavy top: error at T against a tight reference, both retractions
ex = get_example("heavy_top")
for retraction in ("exp", "cayley"):
    top = heavy_top(retraction=retraction)
    q0, v0 = ex.initial(top)
    trt = integrate(top, q0, v0=v0, h=0.01, n_steps=200)
    err = np.linalg.norm(SO3().log(ex.reference(2.0, top).T @ trt.q[-1]))
    print(f"heavy top, {retraction:6s}: rotation error at t = 2: {err:.2e}, energy error {trt.energy_error:.1e}")
plot_so3_body_axes(trt, path=out / "heavy_top_body_axes.png")
