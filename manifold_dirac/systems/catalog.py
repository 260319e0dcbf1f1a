"""The named examples behind ``manifold-dirac run/study/tour``.

Each :class:`Example` bundles a system factory (by retraction), default
initial data, step and duration, and -- where one exists -- a reference
solution: a closed form, or a tight ``solve_ivp`` of the reduced equations.

The interconnected examples import :mod:`.interconnected` when they are
built or referenced, not when this module is imported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .._manifolds import SE2, SE3, SO3
from .._mechanics.system import LagrangeDiracSystem
from .._types import ArrayLike, Point

if TYPE_CHECKING:
    from .. import Trajectory
from . import circuits, pendulums, rigid_bodies, vehicles

__all__ = ["EXAMPLES", "Example", "get_example"]


@dataclass(frozen=True)
class Example:
    """A ready-to-run example.

    Attributes
    ----------
    name : str
        The catalog key (``md.get_example(name)``, ``manifold-dirac run name``).
    description : str
        One line for ``manifold-dirac list``.
    build : callable ``retraction -> LagrangeDiracSystem``
        The system with the named retraction (one of ``retractions``).
    initial : callable ``system -> (q0, v0)``
        Initial point and velocity (float64 arrays of the point's and the
        frame's shape).
    h : float
        Default step.
    T : float
        Default duration.
    retractions : tuple of str
        Retractions the example can be built with (the first is the default).
    reference : callable ``(t, system) -> array``, optional
        Reference comparison coordinates at time ``t`` (closed form or a
        tight solve), matched by ``coordinates``.
    coordinates : callable ``(system, q) -> array``
        What is compared with the reference (default: human coordinates).
    invariant : callable ``(system, trajectory) -> array``, optional
        A conserved quantity besides the energy (momentum map), per point.
    plot : str
        Which figure suits it: ``"se2"``, ``"so3"``, ``"sphere"``, ``"coordinates"``.
    angles : tuple of int
        Indices of ``coordinates`` that are angles (differences wrapped to (-pi, pi]).

    Examples
    --------
    >>> import manifold_dirac as md
    >>> ex = md.get_example("pendulum")
    >>> ex.name, ex.retractions
    ('pendulum', ('identity',))
    >>> system = ex.build(ex.retractions[0])
    >>> q0, v0 = ex.initial(system)
    >>> tr = md.integrate(system, q0, v0=v0, h=ex.h, n_steps=4)
    >>> len(tr.t)
    5
    """

    name: str
    description: str
    build: Callable[[str], LagrangeDiracSystem]
    initial: Callable[[LagrangeDiracSystem], tuple[Point, np.ndarray]]
    h: float
    T: float
    retractions: tuple[str, ...] = ("identity",)
    reference: Callable[[float, LagrangeDiracSystem], np.ndarray] | None = None
    coordinates: Callable[[LagrangeDiracSystem, Point], np.ndarray] = field(
        default=lambda s, q: np.asarray(s.Q.to_coordinates(q))
    )
    invariant: Callable[[LagrangeDiracSystem, Trajectory], ArrayLike] | None = None
    plot: str = "coordinates"
    angles: tuple[int, ...] = ()

    def error(self, system: LagrangeDiracSystem, q: Point, t: float) -> float:
        """Max-norm error of the point ``q`` at time ``t`` against :attr:`reference`."""
        if self.reference is None:
            raise ValueError(f"example {self.name!r} has no reference solution")
        d = np.asarray(self.coordinates(system, q), dtype=float) - np.asarray(self.reference(t, system), dtype=float)
        for i in self.angles:
            d[..., i] = np.angle(np.exp(1j * d[..., i]))
        return float(np.max(np.abs(d)))

    def system(self, retraction: str | None = None) -> LagrangeDiracSystem:
        """The system, built with ``retraction`` (default: the first listed)."""
        r = retraction or self.retractions[0]
        if r not in self.retractions:
            raise ValueError(
                f"example {self.name!r}: unknown retraction {r!r}; valid: " + ", ".join(repr(x) for x in self.retractions)
            )
        return self.build(r)


# ---------------------------------------------------------------- helpers
def _interconnected():
    """The interconnected systems module, imported on first use."""
    from . import interconnected

    return interconnected


# Initial data made on first use, not at import: a concrete point is a JAX array on JAX's CPU backend, and
# starting that backend at import would fix the JAX options a user sets after importing (its dispatch mode,
# XLA_FLAGS). tests/test_config.py imports every module and checks that none starts it.
@functools.cache
def _heavy_top_initial() -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(SO3().exp(np.array([0.3, 0.1, 0.0]))), np.array([0.5, -0.2, 2.0])


# thrown up at 3 m/s, spinning at 8 rad/s close to the intermediate axis (it flips: Dzhanibekov)
@functools.cache
def _brick_initial() -> tuple[np.ndarray, np.ndarray]:
    return (np.asarray(SE3().from_coordinates([0.0, 0.0, 1.0, 0.3, -0.2, 0.1])),
            np.array([0.2, 8.0, 0.3, 1.0, 0.5, 3.0]))


def _so3_compare(sysm, q):
    return np.asarray(q)  # compare rotation matrices entrywise


def _rolling_disk_coords(sysm, q):
    return np.concatenate([np.asarray(SE2().to_coordinates(q[0])), np.asarray(q[1])], -1)


EXAMPLES: dict[str, Example] = {}


def _add(ex: Example) -> None:
    EXAMPLES[ex.name] = ex


_add(Example(
    "pendulum", "planar pendulum (Euclidean R^1)", lambda r: pendulums.pendulum(),
    lambda s: (np.array([1.0]), np.array([0.0])), h=0.01, T=5.0,
))
_add(Example(
    "double_pendulum", "planar double pendulum (Euclidean R^2)", lambda r: pendulums.double_pendulum(),
    lambda s: (np.array([1.0, -0.5]), np.array([0.0, 0.0])), h=0.01, T=5.0,
))
_add(Example(
    "harmonic_oscillator", "harmonic oscillator on R^2 (closed form)", lambda r: pendulums.harmonic_oscillator(2),
    lambda s: (np.array([1.0, 0.0]), np.array([0.0, 0.5])), h=0.05, T=10.0,
    reference=lambda t, s: pendulums.harmonic_oscillator_exact(t, np.array([1.0, 0.0]), np.array([0.0, 0.5]))[0],
))
_add(Example(
    "free_rigid_body", "free rigid body on SO(3) (spatial angular momentum conserved)",
    lambda r: rigid_bodies.free_rigid_body(retraction=r),
    lambda s: (s.Q.from_coordinates([0.4, -0.2, 1.0]), np.array([1.0, 0.3, -0.5])), h=0.05, T=20.0,
    retractions=("exp", "cayley"), plot="so3", coordinates=_so3_compare,
    invariant=lambda s, tr: rigid_bodies.spatial_angular_momentum(tr.q, tr.p),
))
_add(Example(
    "heavy_top", "heavy top on SO(3) (reference: tight solve_ivp)", lambda r: rigid_bodies.heavy_top(retraction=r),
    lambda s: _heavy_top_initial(), h=0.01, T=2.0, retractions=("exp", "cayley"),
    reference=lambda t, s: rigid_bodies.heavy_top_reference(t, *_heavy_top_initial()), coordinates=_so3_compare,
    plot="so3",
))
_add(Example(
    "tumbling_brick", "brick tumbling in gravity on SE(3) (reference: tight solve_ivp of Newton-Euler)",
    lambda r: rigid_bodies.tumbling_brick(retraction=r),
    lambda s: _brick_initial(), h=0.01, T=2.0, retractions=("so3xr3", "exp", "cayley"),
    reference=lambda t, s: rigid_bodies.tumbling_brick_reference(t, *_brick_initial()), coordinates=_so3_compare,
    invariant=lambda s, tr: rigid_bodies.se3_spatial_momentum(tr.q, tr.p)[..., [2, 3, 4]],
))
_add(Example(
    "knife_edge", "knife edge / Chaplygin skate on SE(2) (circles)", lambda r: vehicles.knife_edge(retraction=r),
    lambda s: (s.Q.identity(), np.array([0.8, 1.0, 0.0])), h=0.05, T=10.0, retractions=("exp", "cayley", "so2xr2"),
    reference=lambda t, s: _interconnected().rolling_disk_exact(t, 1.0, 0.8, 1.0)[..., :3], plot="se2",
    angles=(2,),
))
_add(Example(
    "inclined_knife_edge", "knife edge on an inclined plane on SE(2) (closed form)",
    lambda r: vehicles.inclined_knife_edge(retraction=r),
    lambda s: (s.Q.identity(), np.array([1.0, 0.0, 0.0])), h=0.02, T=4.0, retractions=("exp", "cayley", "so2xr2"),
    reference=lambda t, s: vehicles.inclined_knife_edge_exact(t), plot="se2",
    angles=(2,),
))
_add(Example(
    "chaplygin_sled", "Chaplygin sled on SE(2) (reference: tight solve_ivp)",
    lambda r: vehicles.chaplygin_sled(retraction=r),
    lambda s: (s.Q.identity(), np.array([1.0, 1.0, 0.0])), h=0.02, T=4.0, retractions=("exp", "cayley", "so2xr2"),
    reference=lambda t, s: vehicles.chaplygin_sled_reference([t])[0], plot="se2",
    angles=(2,),
))
_add(Example(
    "differential_drive", "differential-drive vehicle on SE(2) with time-dependent inputs",
    lambda r: vehicles.differential_drive(retraction=r),
    lambda s: (s.Q.identity(), np.zeros(3)), h=0.02, T=8.0, retractions=("exp", "cayley", "so2xr2"), plot="se2",
))
_add(Example(
    "spherical_pendulum", "spherical pendulum on S^2 via the geomstats adapter",
    lambda r: pendulums.spherical_pendulum(),
    lambda s: (s.Q.from_coordinates([2.5, 0.3]), np.array([0.5, 1.0])), h=0.01, T=5.0, retractions=("metric",),
    invariant=lambda s, tr: pendulums.spherical_pendulum_vertical_momentum(s.Q, tr.q, tr.p), plot="sphere",
))
_add(Example(
    "lc_circuit", "LC loop, degenerate Lagrangian with Kirchhoff's law (closed form)", lambda r: circuits.lc_circuit(),
    lambda s: (np.array([1.0, 1.0]), np.zeros(2)), h=0.01, T=5.0,
    reference=lambda t, s: np.array([circuits.lc_circuit_exact(t, 1.0, 0.0)]),
    coordinates=lambda s, q: np.asarray(q)[..., :1],
))
_add(Example(
    "mass_spring_torn", "mass-spring chain torn into two subsystems (interconnection)",
    lambda r: _interconnected().mass_spring_torn(),
    lambda s: ((np.array([0.3, -0.2]), np.array([-0.2])), np.array([0.1, 0.4, 0.4])), h=0.02, T=10.0,
))
_add(Example(
    "lc_from_elements", "LC loop assembled from an inductor and a capacitor (interconnection)",
    lambda r: _interconnected().lc_from_elements(),
    lambda s: ((np.array([1.0]), np.array([1.0])), np.zeros(2)), h=0.01, T=5.0,
    reference=lambda t, s: np.array([circuits.lc_circuit_exact(t, 1.0, 0.0)]),
    coordinates=lambda s, q: np.asarray(q[0]),
))
_add(Example(
    "rolling_disk", "vertical rolling disk: SE(2) body + wheel angle (interconnection, closed form)",
    lambda r: _interconnected().rolling_disk(0.5, retraction=r),
    lambda s: ((np.asarray(SE2().identity()), np.zeros(1)), np.array([0.7, 1.0, 0.0, 2.0])), h=0.02, T=4.0,
    retractions=("exp", "cayley", "so2xr2"),
    reference=lambda t, s: _interconnected().rolling_disk_exact(t, 0.5, 0.7, 2.0), coordinates=_rolling_disk_coords,
    plot="se2",
    angles=(2,),
))
_add(Example(
    "rolling_ball", "homogeneous ball rolling on a plane: SO(3) x R^2 (interconnection)",
    lambda r: _interconnected().rolling_ball(0.5, retraction=r),
    lambda s: _ball_initial(), h=0.05, T=10.0, retractions=("exp", "cayley"),
    reference=lambda t, s: _interconnected().rolling_ball_exact(t, 0.5, np.array([0.3, -1.0, 0.5])),
    coordinates=lambda s, q: np.asarray(q[1]),
))
_add(Example(
    "two_wheel_cart", "two rolling disks joined by an axle (interconnection of interconnections)",
    lambda r: _interconnected().two_wheel_cart(1.0, 0.5),
    lambda s: _cart_initial(), h=0.05, T=10.0, plot="se2",
))


def _ball_initial():
    W = np.array([0.3, -1.0, 0.5])
    R0 = np.asarray(SO3().exp(np.array([0.2, 0.4, -0.1])))
    return (R0, np.zeros(2)), np.concatenate([R0.T @ W, 0.5 * np.array([W[1], -W[0]])])


def _cart_initial():
    om, vL, r = 0.4, 1.0, 0.5
    q0 = ((np.asarray(SE2().identity()), np.zeros(1)), (np.asarray(SE2().from_coordinates([0, -1.0, 0])), np.zeros(1)))
    return q0, np.array([om, vL, 0, vL / r, om, vL + om, 0, (vL + om) / r])


def get_example(name: str) -> Example:
    """Look an example up by name.

    Parameters
    ----------
    name : str
        A key of :data:`EXAMPLES`.

    Returns
    -------
    Example

    Raises
    ------
    ValueError
        For an unknown name, listing the valid ones.

    Examples
    --------
    >>> import manifold_dirac as md
    >>> ex = md.get_example("heavy_top")
    >>> ex.retractions
    ('exp', 'cayley')
    >>> top = ex.system("cayley")                        # a LagrangeDiracSystem on SO(3)
    >>> top.Q
    SO3(retraction='cayley')
    """
    try:
        return EXAMPLES[name]
    except KeyError:
        raise ValueError(f"unknown system {name!r}; valid: " + ", ".join(sorted(EXAMPLES))) from None


# ------------------------------------------------ holonomic constraints g(q) = 0
def _linkages():
    from . import linkages

    return linkages


def _cartesian_pendulum_initial():
    """The ``spherical_pendulum`` example's start in Cartesian coordinates: ``x = q``, ``v = E(q) v_S2``."""
    from .._manifolds.sphere import Sphere2, sphere_frame

    q = np.asarray(Sphere2().from_coordinates([2.5, 0.3]))
    return q, sphere_frame(q, xp=np) @ np.array([0.5, 1.0])  # on the host (|z| = 0.80: far from the chart switch)


def _rolling_bodies():
    from . import rolling_bodies

    return rolling_bodies


_add(Example(
    "cartesian_pendulum", "spherical pendulum in Cartesian R^3 with |x| = l held as g(q) = 0 (holonomic)",
    lambda r: pendulums.cartesian_spherical_pendulum(),
    lambda s: _cartesian_pendulum_initial(), h=0.01, T=5.0,
))
_add(Example(
    "four_bar", "planar four-bar linkage: 3 joint angles, 2 loop-closure constraints g(q) = 0",
    lambda r: _linkages().four_bar(), lambda s: _linkages().four_bar_initial(), h=0.01, T=5.0, angles=(0, 1, 2),
))
_add(Example(
    "rolling_disk_3d", "disk rolling on a plane: SO(3) x R^3, contact height g(q) = 0 and 2 one-forms",
    lambda r: _rolling_bodies().rolling_disk_3d(retraction=r), lambda s: _rolling_bodies().rolling_disk_3d_initial(),
    h=0.01, T=5.0, retractions=("exp", "cayley"),
))
_add(Example(
    "rigid_double_pendulum", "two rods in space joined by spherical joints (interconnection, pin_joint)",
    lambda r: _linkages().rigid_double_pendulum(), lambda s: _linkages().rigid_double_pendulum_initial(),
    h=0.005, T=2.0,
))
