"""A homogeneous ball rolling on a plane, SO(3) x R^2 with the rolling constraint
as Sigma: the spatial angular velocity is constant and the centre moves on a line."""

import numpy as np
from _common import output_dir

from manifold_dirac import integrate
from manifold_dirac.plotting import plot_trajectory
from manifold_dirac.systems import rolling_ball, rolling_ball_exact
from manifold_dirac import get_example

out = output_dir(__doc__)
ball = rolling_ball(0.5)
q0, v0 = get_example("rolling_ball").initial(ball)
tr = integrate(ball, q0, v0=v0, h=0.05, n_steps=400)
W = np.einsum("kij,kj->ki", tr.q[0], tr.v[:, :3])
print(f"rolling ball: spatial angular velocity spread {np.ptp(W, axis=0).max():.1e}, "
      f"centre error {np.abs(tr.q[1] - rolling_ball_exact(tr.t, 0.5, W[0])).max():.1e}")
plot_trajectory(tr, ball, path=out / "rolling_ball.png")
