"""Ready-made systems, one file per family (each with analytic partials), on the compiled engine.

Every Lagrangian, constraint and force is written for one point with
``jax.numpy``; exact and reference solutions are numpy/scipy.

* :mod:`.pendulums` -- oscillators, pendulum, double pendulum (Euclidean);
* :mod:`.rigid_bodies` -- free rigid body, heavy top (SO(3)); tumbling brick (SE(3));
* :mod:`.vehicles` -- knife edge, inclined knife edge, Chaplygin sled,
  differential drive (SE(2));
* :mod:`.circuits` -- the LC loop (degenerate, Kirchhoff constraint);
* :mod:`.degenerate` -- the Lotka--Volterra Lagrangian, linear in the velocities;
* :mod:`.interconnected` -- the worked interconnected systems;
* :mod:`.linkages`, :mod:`.rolling_bodies` -- holonomic constraints ``g(q) = 0``: the four-bar
  linkage, rods pinned by spherical joints, a disk rolling on a plane in space;
* :mod:`.catalog` -- the named examples (imported on its own: ``from .catalog import get_example``).
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
