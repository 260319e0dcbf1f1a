"""One call from a system and initial data to a trajectory: :func:`integrate`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
from numpy.typing import ArrayLike

from .._mechanics.composition import Composition
from .._mechanics.newton import SolverOptions
from .._mechanics.rules import QuadratureRule
from .._mechanics.schemes import Scheme
from .._mechanics.system import LagrangeDiracSystem
from .._types import Params, Point
from .integrator import Integrator
from .state import RunState
from .trajectory import Trajectory
from .validate import _finite_float, _steps_to

__all__ = ["integrate"]


def integrate(
    system: LagrangeDiracSystem,
    q0: Point,
    v0: ArrayLike | None = None,
    p0: ArrayLike | None = None,
    *,
    h: float,
    n_steps: int | None = None,
    t_final: float | None = None,
    scheme: str | Scheme = "symmetric",
    discrete_lagrangian: str | QuadratureRule = "midpoint",
    composition: str | Composition | Sequence[float] | None = None,
    t0: float = 0.0,
    stride: int = 1,
    controls: ArrayLike | None = None,
    progress: bool = False,
    callback: Callable[[RunState], object] | None = None,
    on_failure: str | None = None,
    solver: SolverOptions | None = None,
    params: Params = None,
) -> Trajectory:
    """Integrate a Lagrange--Dirac system with a discrete Lagrange--Dirac scheme.

    Parameters
    ----------
    system : LagrangeDiracSystem
        The system (its manifold ``system.Q``, of dimension ``n = Q.dim``).
    q0 : point, shape=[*B, *point_shape]
        Initial configuration, float64 in the manifold's representation
        (``(*B, n)`` on ``Euclidean(n)``, ``(*B, 3, 3)`` rotation matrices on
        SO(3), a tuple on a product); leading axes ``*B`` integrate a batch.
    v0, p0 : array-like of float, shape=[*B, n]
        Initial velocity and/or momentum in frame coordinates (see
        :meth:`Integrator.initial_state`); give at least one.
    h : float
        Time step (> 0); another ``h`` does not recompile.
    n_steps : int, optional
        Number of steps. Give it or ``t_final``.
    t_final : float, optional
        The final time: ``n_steps = (t_final - t0) / h``, which must be a
        whole number to within ``1e-9`` relative (``abs(x - round(x)) <=
        1e-9 * max(1, x)`` for ``x = (t_final - t0) / h``: the round-off of
        ``10 / 0.1 = 99.99999999999999``, not a step of another length),
        else a ``ValueError`` says the nearest ``t_final`` and ``h`` that fit.
        The last stored time is ``t0 + n_steps h``.
    scheme : {"symmetric", "split", "plus", "minus"} or Scheme
        ``plus`` is (52), ``minus`` (53), ``symmetric`` the second-order
        scheme with the constraint at the retraction midpoint (default),
        ``split`` the same with the reaction split between the two ends.
    discrete_lagrangian : str or QuadratureRule
        The quadrature of the action over a step (``"midpoint"``,
        ``"trapezoid"``, ``"rectangle+"``, ``"rectangle-"``, ``"gauss4"``,
        ``"gauss6"``, or a rule object); ``gauss4``/``gauss6`` are
        of order 4 and 6 without constraint one-forms (``docs/galerkin.md``).
    composition : {"triple_jump4", "suzuki4", "yoshida6", "kahan_li6", "suzuki6", "triple_jump6", "kahan_li8"}, optional
        Compose each step of ``h`` from sub-steps ``gamma_i h`` of the
        scheme (a :class:`~manifold_dirac._mechanics.composition.Composition`,
        its name, or a sequence of coefficients): order 4, 6 or 8 from a
        self-adjoint scheme of order 2 (``docs/composition.md``). A base that
        is not self-adjoint is refused with the reason. Composed runs of
        small steps are faster with Newton's matrix kept from step to step,
        ``solver=SolverOptions(jacobian="keep")`` (10 to 31 % less time for
        ``jax.jit(rollout)`` of the rolling disk, the sled and the
        snakeboard at matched accuracy; ``docs/composition.md``, "When to
        pick what").
    t0 : float
        The time of the initial data (``t_k = t0 + k h``).
    stride : int
        Store every ``stride``-th point (and the last).
    controls : array-like of float, shape=[n_steps, *B, n], optional
        Control covectors added to the force, one per step.
    progress : bool
        Show a progress bar (tqdm) if the run takes more than a second.
    callback : callable ``(state) -> bool | None``, optional
        Called on the host with the current :class:`RunState` after every
        compiled chunk, the last one included (a run shorter than one chunk
        calls it once, at its end); returning ``False`` stops the run there
        (see :meth:`Integrator.run`).
    on_failure : {"raise", "mark"}, optional
        What a failed step does: ``raise`` (the default for one trajectory)
        raises a :class:`~manifold_dirac._errors.StepError` with the partial
        trajectory; ``mark`` (the default for a batch) records the member's
        status and goes on with the others.
    solver : SolverOptions, optional
        Newton's tolerances, iteration limit and Newton matrix option (``jacobian="keep"``: its inverse
        kept from step to step, for runs of many small steps).
    params : pytree, optional
        The system's parameters for this run, overriding ``system.params``
        (which stays unchanged): same structure and leaf shapes, real finite
        values. They are traced, so another value does not recompile.

    Returns
    -------
    Trajectory
        The stored points (numpy float64 arrays with a leading time axis),
        the steps' records, statuses and metadata.

    Notes
    -----
    Each step solves the scheme's equations (``docs/schemes.md``) by Newton's
    method in the chart centred at ``q_k``; see :class:`StepMap`.

    A first call compiles two programs, the start of the run and its loop;
    with two CPUs or more the loop compiles in a background thread while
    the start is traced, compiled and checked (``docs/performance.md``;
    ``MANIFOLD_DIRAC_COMPILE_AHEAD=0`` switches this off).

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_dirac as md
    >>> pendulum = md.systems.pendulum()
    >>> tr = md.integrate(pendulum, np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=100)
    >>> tr.q.shape, tr.ok
    ((101, 1), True)
    >>> bool(tr.energy_error < 1e-2)                     # bounded energy error, no drift
    True

    A batch of three initial angles, and other parameters for one call:

    >>> q0 = np.array([[0.1], [0.5], [1.0]])
    >>> batch = md.integrate(pendulum, q0, v0=np.zeros((3, 1)), h=0.05, n_steps=100)
    >>> batch.q.shape
    (101, 3, 1)
    >>> heavier = md.integrate(pendulum, np.array([1.0]), v0=np.array([0.0]), h=0.05, n_steps=100,
    ...                        params={"ml2": 2.0, "mgl": 19.62})
    """
    if not isinstance(system, LagrangeDiracSystem):
        raise TypeError(f"integrate: system must be a LagrangeDiracSystem, got {type(system).__name__}")
    if any(isinstance(x, jax.core.Tracer)
           for x in jax.tree.leaves((q0, v0, p0, h, t0, controls, system.params, params))):
        raise TypeError(
            "integrate runs its loop on the host (chunks, progress, failures raised) and cannot be traced by "
            "jax.grad/jacfwd/jit/vmap; for derivatives of a run use manifold_dirac.rollout, the same discrete "
            "map as one differentiable JAX function (docs/differentiable.md)")
    integ = Integrator(system, h, scheme, discrete_lagrangian, solver, on_failure, composition=composition)
    n_steps = _steps_to(n_steps, t_final, _finite_float(t0, "t0"), integ.h)
    start = integ._start(q0, v0, p0, t0, params)
    integ._loop_ahead(start, n_steps, controls, params)  # the loop compiles while the start does (ahead.py)
    state = integ._started(start)
    if v0 is None and not integ.scheme.carries_pre_momentum:
        state.v_init = state.v_legendre
    return integ.run(state, n_steps, stride=stride, controls=controls, progress=progress, callback=callback,
                     params=params)
