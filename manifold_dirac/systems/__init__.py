"""Ready-made systems (``md.systems.pendulum()``, ...), each with analytic partials.

Every Lagrangian, constraint and force is written for one point with
``jax.numpy``; the exact and reference solutions (``*_exact``,
``*_reference``) are numpy/scipy. By family:

* oscillators and pendulums (Euclidean): :func:`harmonic_oscillator`,
  :func:`damped_oscillator`, :func:`pendulum`, :func:`double_pendulum`,
  :func:`spherical_pendulum`;
* rigid bodies: :func:`free_rigid_body`, :func:`heavy_top` (SO(3));
  :func:`tumbling_brick` (SE(3), or SO(3) x R^3: :func:`tumbling_brick_on_product`);
* vehicles (SE(2), nonholonomic): :func:`knife_edge`, :func:`inclined_knife_edge`,
  :func:`chaplygin_sled`, :func:`differential_drive`; :func:`snakeboard`
  (SE(2) x R^2: steered wheels and a rotor, configuration-dependent one-forms);
* degenerate Lagrangians: :func:`lc_circuit` (Kirchhoff's law as a constraint),
  :func:`lotka_volterra` (linear in the velocities);
* interconnected systems: :func:`mass_spring_torn` (and its monolithic twin),
  :func:`lc_from_elements`, :func:`rolling_disk`, :func:`rolling_ball`,
  :func:`two_wheel_cart`;
* holonomic constraints ``g(q) = 0``: :func:`four_bar`, :func:`rigid_double_pendulum`
  (rods pinned by spherical joints), :func:`cartesian_spherical_pendulum`,
  :func:`rolling_disk_3d` (a disk rolling on a plane in space).

The named, ready-to-run examples built from them are ``md.get_example(name)``
(``manifold-dirac list``).
"""

from .circuits import KIRCHHOFF_LC, lc_circuit, lc_circuit_exact
from .degenerate import LOTKA_VOLTERRA_INITIAL, lotka_volterra, lotka_volterra_invariant
from .pendulums import (
    damped_oscillator,
    damped_oscillator_exact,
    double_pendulum,
    harmonic_oscillator,
    harmonic_oscillator_exact,
    pendulum,
    spherical_pendulum,
    spherical_pendulum_vertical_momentum,
)
from .rigid_bodies import (
    free_rigid_body,
    heavy_top,
    heavy_top_reference,
    se3_spatial_momentum,
    spatial_angular_momentum,
    tumbling_brick,
    tumbling_brick_on_product,
    tumbling_brick_reference,
)
from .vehicles import (
    KNIFE_EDGE_CONSTRAINT,
    chaplygin_sled,
    chaplygin_sled_reference,
    differential_drive,
    inclined_knife_edge,
    inclined_knife_edge_exact,
    knife_edge,
    snakeboard,
    snakeboard_initial,
    snakeboard_reference,
)

__all__ = [
    "KIRCHHOFF_LC",
    "KNIFE_EDGE_CONSTRAINT",
    "LOTKA_VOLTERRA_INITIAL",
    "chaplygin_sled",
    "chaplygin_sled_reference",
    "damped_oscillator",
    "damped_oscillator_exact",
    "differential_drive",
    "double_pendulum",
    "free_rigid_body",
    "harmonic_oscillator",
    "harmonic_oscillator_exact",
    "heavy_top",
    "heavy_top_reference",
    "inclined_knife_edge",
    "inclined_knife_edge_exact",
    "knife_edge",
    "lc_circuit",
    "lc_circuit_exact",
    "lotka_volterra",
    "lotka_volterra_invariant",
    "pendulum",
    "snakeboard",
    "snakeboard_initial",
    "snakeboard_reference",
    "spatial_angular_momentum",
    "spherical_pendulum",
    "spherical_pendulum_vertical_momentum",
]
__all__ += ["se3_spatial_momentum", "tumbling_brick", "tumbling_brick_on_product", "tumbling_brick_reference"]

from .interconnected import (
    lc_from_elements,
    mass_spring_monolithic,
    mass_spring_torn,
    rolling_ball,
    rolling_ball_exact,
    rolling_disk,
    rolling_disk_exact,
    two_wheel_cart,
    two_wheel_cart_flat,
)

__all__ += [
    "lc_from_elements",
    "mass_spring_monolithic",
    "mass_spring_torn",
    "rolling_ball",
    "rolling_ball_exact",
    "rolling_disk",
    "rolling_disk_exact",
    "two_wheel_cart",
    "two_wheel_cart_flat",
]

# holonomic constraints g(q) = 0: closed chains, Cartesian pendulums, a disk rolling in space
from .linkages import four_bar, four_bar_initial, rigid_double_pendulum, rigid_double_pendulum_initial
from .pendulums import cartesian_spherical_pendulum
from .rolling_bodies import rolling_disk_3d, rolling_disk_3d_initial

__all__ += [
    "cartesian_spherical_pendulum",
    "four_bar",
    "four_bar_initial",
    "rigid_double_pendulum",
    "rigid_double_pendulum_initial",
    "rolling_disk_3d",
    "rolling_disk_3d_initial",
]
