"""The LC loop as a degenerate Lagrange-Dirac system (Kirchhoff's law as the
constraint), and why the midpoint rule is the one for Lagrangians linear in velocities."""

import warnings

import numpy as np
from _common import output_dir

from manifold_dirac import integrate
from manifold_dirac import DegenerateLagrangianWarning, StepError
from manifold_dirac.plotting import plot_trajectory
from manifold_dirac.systems import LOTKA_VOLTERRA_INITIAL, lc_circuit, lc_circuit_exact, lotka_volterra

out = output_dir(__doc__)
lc = lc_circuit(inductance=1.0, capacitance=0.25)
tr = integrate(lc, np.array([1.0, 1.0]), v0=np.zeros(2), h=0.01, n_steps=500)
print(f"LC loop: charge error against cos(t / sqrt(LC)) {np.abs(tr.q[:, 0] - lc_circuit_exact(tr.t, 1.0, 0.0)).max():.1e}")
plot_trajectory(tr, lc, path=out / "lc_circuit.png")

# a Lagrangian linear in the velocities (Lotka-Volterra type)
lv = lotka_volterra()
q0, p0 = LOTKA_VOLTERRA_INITIAL
for rule in ("midpoint", "trapezoid"):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DegenerateLagrangianWarning)
        try:
            t = integrate(lv, q0, p0=p0, h=0.05, n_steps=2000,
                          discrete_lagrangian=rule)
            print(f"{rule:9s}: 2000 steps fine, warned: {bool(caught)}")
        except StepError as exc:
            print(f"{rule:9s}: stopped at step {exc.step} ({type(exc).__name__}), warned: {bool(caught)}")
