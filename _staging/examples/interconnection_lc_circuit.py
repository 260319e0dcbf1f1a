"""The LC loop assembled from its elements: an inductor and a (degenerate)
capacitor joined by Kirchhoff's current law; the frequency is 1/sqrt(LC)."""

import numpy as np
from _common import output_dir

from manifold_dirac import integrate
from manifold_dirac.plotting import plot_trajectory
from manifold_dirac.systems import lc_from_elements

out = output_dir(__doc__)
l, C = 0.5, 0.08
lc = lc_from_elements(l, C)
tr = integrate(lc, (np.array([1.0]), np.array([1.0])), v0=np.zeros(2), h=0.002, n_steps=2000)
qc = tr.q[0][:, 0]
up = np.nonzero((qc[:-1] < 0) & (qc[1:] >= 0))[0]
period = np.mean(np.diff(tr.t[up] - qc[up] * (tr.t[up + 1] - tr.t[up]) / (qc[up + 1] - qc[up])))
print(f"LC from elements: period {period:.6f}, 2 pi sqrt(LC) = {2 * np.pi * np.sqrt(l * C):.6f}")
plot_trajectory(tr, lc, path=out / "lc_from_elements.png")
