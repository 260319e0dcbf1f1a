"""Work--precision of composition methods against DOP853 and Radau.

Run (from the repository root)::

    PYTHONPATH=$PWD python benchmarks/composition.py            # full: errors 1e-3 ... 1e-10
    PYTHONPATH=$PWD python benchmarks/composition.py --quick    # two step sizes each, smoke run
    PYTHONPATH=$PWD python benchmarks/composition.py --systems rolling_disk,chaplygin_sled
                                                      # some systems: the others' stored results are kept
    PYTHONPATH=$PWD taskset -c 1 python benchmarks/composition.py --systems rolling_disk,snakeboard --label pinned
                                                      # pinned to one core: composition_pinned.json/.md

For each system, to ``T = 2`` (the rolling disk, the Chaplygin sled, the
snakeboard, the heavy top, and a satellite with a reaction wheel driven by
a motor, built here on ``SO(3) x R``):

* the library: the ``split`` scheme with the midpoint rule (``exp``; its
  positions are those of ``symmetric`` to round-off, and so are its errors
  and its cost), alone and composed (``triple_jump4``, ``kahan_li6``,
  ``kahan_li8``), over step sizes ``h = T / n`` that put the error at
  ``T`` between ``1e-2`` and ``1e-11`` (dense where the error crosses the
  targets: every step count from 1 to 8 composed; on the snakeboard ``kahan_li8``
  up to 40 steps); on the heavy top and the satellite (no
  constraints: the Galerkin rules apply) also ``gauss4`` and ``gauss6``.
  Each run is timed through two public paths: one
  :func:`~manifold_dirac.integrate` call, and ``jax.jit`` of
  :func:`~manifold_dirac.rollout` (the same discrete map as one XLA call:
  the fastest path for a run repeated with other initial data, ``h`` or
  parameters);
* ``scipy.integrate.solve_ivp`` DOP853 and Radau at ``rtol = atol = 10^-k``
  on the reduced first-order equations of the same motion.

Errors are measured at ``T`` against a DOP853 solve at ``rtol = atol =
1e-14`` of the same reduced equations (the rolling disk: its closed form).
Times are the **wall time of one call** (``integrate``, the jitted
``rollout`` on device arrays until its result is ready, or ``solve_ivp``),
and of the call alone: the error at ``T`` and the work are computed once,
outside the timing, for every method alike. Compilation is
excluded (a first call of each program is made and not counted); a setting
whose run fails (a step too large for the system) is left out, with a
message on stderr. Minimum of
``--repeats`` interleaved rounds (round ``r`` calls the methods in an order
rotated by ``r``, and in each round the fastest of three back-to-back
calls; the minimum, because on a shared machine the load only adds time),
all in one process, so the ratios are side by side. The
matched-accuracy table gives, for each target error, the fastest run of
each method whose error is at most the target.

``--cost`` measures where one ``jax.jit(rollout)`` call's CPU time goes on
the rolling disk and the sled, or the snakeboard (a trivial jitted function of the same
inputs, one uncomposed step, ``kahan_li8`` over 1 and 4 steps: the fixed
cost of a call and the cost of a sub-step), to
``benchmarks/results/composition_cost.md``.

``--dispatch`` times one short call on the rolling disk (a trivial jitted
function, ``jax.jit(rollout)`` of 7 ``kahan_li8`` steps, DOP853 at
``rtol = 1e-3``) and three pieces of a user's other JAX code (a Python loop
of jitted layers, eager operations, one large product) with JAX's
asynchronous CPU dispatch and synchronous (``jax_cpu_enable_async_dispatch
= False``), in five pairs of fresh processes, to
``benchmarks/results/composition_dispatch.md``.

``--outputs`` times a 6-step ``kahan_li8`` call on the rolling disk, the sled and the snakeboard
returning the whole :class:`Rollout`, only its final point, or only its status (a trivial jitted
function beside them), with the thunks of each program's entry computation, to
``benchmarks/results/composition_outputs.md``: what the outputs cost in XLA:CPU's runtime.

``--reuse`` times the fastest composed run for each target from ``1e-6`` to ``1e-10`` (rolling disk,
snakeboard, sled; from ``composition.json``) with each Newton matrix option, ``SolverOptions(jacobian=
"every" | "reuse" | "keep")``, beside DOP853, with each option's Newton updates and error at ``T``, to
``benchmarks/results/composition_reuse.md`` (with ``--label NAME``: ``composition_reuse_NAME.md``).

``--matched`` compares the two sides at each target from ``1e-6`` to ``1e-10`` (rolling disk, snakeboard,
sled) with settings found in the same run on fine grids for both: the fewest ``kahan_li6`` and
``kahan_li8`` steps (every count from 1) whose error at ``T`` reaches the target, and DOP853's tolerance with
the fewest evaluations that does (``rtol = atol`` at quarter decades); the composed runs with the default
Newton matrix and with ``SolverOptions(jacobian="keep")``, all timed side by side, to
``benchmarks/results/composition_matched.md`` (with ``--label NAME``: ``composition_matched_NAME.md``).
``--reuse`` picks its runs by the wall times stored in ``composition.json``, which may be of an older
version of the library; ``--matched`` picks by the errors it computes.

``--label NAME`` writes the work--precision run to ``composition_NAME.json``/``.md`` (no figures), for
a run beside the main one, e.g. pinned to one core.

``--adjoint`` measures instead whether each base map is self-adjoint: one
step of ``h = 0.1`` from the catalog's initial data and the step of ``-h``
back, ``Phi_{-h}(Phi_h(q0, p0)) - (q0, p0)``, for the ``symmetric`` and the
``split`` scheme on every kind of system (nonholonomic, interconnected,
holonomic, Lie group, degenerate), to ``benchmarks/results/composition_adjoint.md``.

Output: ``benchmarks/results/composition.json``, the table
``benchmarks/results/composition.md`` and the figures
``docs/figures/composition_wp.png`` and ``docs/figures/composition_call.png``
(``docs/composition.md`` quotes them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from benchmarks.machine import interleaved_min  # noqa: E402,F401  (shared with the other scripts)
from manifold_dirac import StepError, integrate, rollout  # noqa: E402
from manifold_dirac._mechanics.composition import adjoint_defect, get_composition  # noqa: E402
from manifold_dirac.systems.catalog import EXAMPLES  # noqa: E402

T = 2.0
TARGETS = [10.0 ** -k for k in range(3, 11)]
COMPOSED = ("triple_jump4", "kahan_li6", "kahan_li8")


def _hat(w):
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _wrap(a):
    return (a + np.pi) % (2 * np.pi) - np.pi


def _coordinate_errors(ex, sysm, ref):
    """Max-norm errors at T of the example's coordinates (angle index 2 wrapped): of a run, of an ODE state."""
    import jax

    def err(c):
        d = np.asarray(c, float)[: len(ref)] - ref
        d[2] = _wrap(d[2])
        return float(np.max(np.abs(d)))

    return (lambda tr: err(ex.coordinates(sysm, jax.tree.map(lambda a: a[-1], tr.q)))), err


# ------------------------------------------------------------------ systems
def rolling_disk():
    """The catalog's vertical rolling disk (interconnected, SE(2) x R, exp) and its reduced ODE."""
    ex = EXAMPLES["rolling_disk"]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    c0 = np.asarray(ex.coordinates(sysm, q0), float)  # (x, y, theta, phi)
    radius = 0.5  # the catalog's disk
    ref = np.asarray(ex.reference(T, sysm), float).reshape(-1)
    v = np.asarray(v0, float)

    def rhs(_t, y):
        s = radius * y[5]
        return [s * math.cos(y[2]), s * math.sin(y[2]), y[4], y[5], 0.0, 0.0]

    # the rates of the catalog's start: theta' is the body's angular rate (v[0]), phi' the wheel's (v[-1])
    y0 = np.concatenate([c0, [v[0], v[-1]]])

    err_lib, err_ivp = _coordinate_errors(ex, sysm, ref)

    return dict(label="rolling disk (SE(2) x R, interconnected, 2 one-forms)", system=sysm, q0=q0, v0=v0, rhs=rhs,
                y0=y0, err_lib=err_lib, err_ivp=err_ivp, reference="closed form")


def chaplygin_sled():
    """The catalog's Chaplygin sled (SE(2), exp) and its reduced ODE (as ``vehicles.chaplygin_sled_reference``)."""
    from scipy.integrate import solve_ivp

    ex = EXAMPLES["chaplygin_sled"]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    a, m, J = 0.5, 1.0, 0.2  # the catalog sled's defaults (offset, mass, inertia)

    def rhs(_t, y):
        x, yy, th, w, vx = y
        return [vx * math.cos(th), vx * math.sin(th), w, -m * a * vx * w / (J + m * a * a), a * w * w]

    v = np.asarray(v0, float)  # body twist (omega, v_x, v_y = 0)
    y0 = np.array([0.0, 0.0, 0.0, v[0], v[1]])
    ref = solve_ivp(rhs, (0, T), y0, method="DOP853", rtol=1e-14, atol=1e-14).y[:3, -1]

    err_lib, err_ivp = _coordinate_errors(ex, sysm, ref)

    return dict(label="Chaplygin sled (SE(2), 1 one-form)", system=sysm, q0=q0, v0=v0, rhs=rhs, y0=y0,
                err_lib=err_lib, err_ivp=err_ivp, reference="DOP853 at 1e-14")


def snakeboard():
    """The snakeboard (``md.systems.snakeboard``, SE(2) x R^2, exp; not a catalog example) and its reduced ODE.

    Without torques, from ``snakeboard_initial()``: the steering oscillates
    (about +-0.34 rad, period 0.99), the board swerves. The reduced equations
    in ``(x, y, theta, psi, phi, u, psi', phi')`` with the 2x2 system solved
    in closed form (``D = m + (J + 2 J_w) tan^2(phi)/r^2``,
    ``g = u phi' sec^2(phi)/r``): ``u' = -tan(phi) g (J + 2 J_w)/(r D)``,
    ``psi'' = -g m/D``, ``2 J_w phi'' = -k phi``.
    """
    from scipy.integrate import solve_ivp

    import manifold_dirac as md

    sysm = md.systems.snakeboard()
    q0, v0 = md.systems.snakeboard_initial()
    P = {k: float(v) for k, v in sysm.params.items()}
    m, r, k, two_jw = P["mass"], P["half_length"], P["stiffness"], 2.0 * P["wheel_inertia"]
    Ib = P["inertia"] + two_jw  # the board's inertia with the wheel pairs'

    def rhs(_t, y):
        th, phi, u = y[2], y[4], y[5]
        c = math.cos(phi)
        tn = math.sin(phi) / c
        g = u * y[7] / (c * c * r)
        D = m + Ib * tn * tn / (r * r)
        return [u * math.cos(th), u * math.sin(th), u * tn / r, y[6], y[7], -tn * g * Ib / (r * D), -g * m / D,
                -k * phi / two_jw]

    pose, shape = np.asarray(q0[0]), np.asarray(q0[1])
    v = np.asarray(v0, float)  # (omega, u, w = 0, psi', phi')
    y0 = np.array([pose[0, 2], pose[1, 2], math.atan2(pose[1, 0], pose[0, 0]), shape[0], shape[1], v[1], v[3], v[4]])
    ref = solve_ivp(rhs, (0, T), y0, method="DOP853", rtol=1e-14, atol=1e-14).y[:5, -1]

    def err(c):
        d = np.asarray(c, float)[:5] - ref
        d[2] = _wrap(d[2])
        return float(np.max(np.abs(d)))

    def err_lib(tr):
        pose, shape = (np.asarray(a)[-1] for a in tr.q)
        return err([pose[0, 2], pose[1, 2], math.atan2(pose[1, 0], pose[0, 0]), shape[0], shape[1]])

    # its steering swings with period 0.99: kahan_li8 needs 40 steps for 1e-10 (measured 5.4e-11; 1.3e-8 at 20)
    return dict(label="snakeboard (SE(2) x R^2, 2 one-forms depending on q)", system=sysm, q0=q0, v0=v0, rhs=rhs,
                y0=y0, err_lib=err_lib, err_ivp=err, reference="DOP853 at 1e-14",
                n_composed={"kahan_li8": N_COMPOSED["kahan_li8"] + [24, 28, 32, 36, 40]})


def heavy_top():
    """The catalog's heavy top (SO(3), exp) and its equations in ``(R, omega)``."""
    from scipy.integrate import solve_ivp

    ex = EXAMPLES["heavy_top"]
    sysm = ex.system("exp")
    q0, v0 = ex.initial(sysm)
    I = np.array([1.0, 2.0, 3.0])
    mgl, chi, e3 = 1.0, np.array([0.0, 0.0, 1.0]), np.array([0.0, 0.0, 1.0])

    def rhs(_t, y):
        R, w = y[:9].reshape(3, 3), y[9:]
        torque = -mgl * np.cross(chi, R.T @ e3)
        return np.concatenate([(R @ _hat(w)).ravel(), (np.cross(I * w, w) + torque) / I])

    y0 = np.concatenate([np.asarray(q0).ravel(), np.asarray(v0, float)])
    ref = solve_ivp(rhs, (0, T), y0, method="DOP853", rtol=1e-14, atol=1e-14).y[:9, -1].reshape(3, 3)

    def err_lib(tr):
        return float(np.max(np.abs(np.asarray(tr.q)[-1] - ref)))

    def err_ivp(y):
        return float(np.max(np.abs(np.asarray(y[:9]).reshape(3, 3) - ref)))

    return dict(label="heavy top (SO(3), unconstrained)", system=sysm, q0=q0, v0=v0, rhs=rhs, y0=y0,
                err_lib=err_lib, err_ivp=err_ivp, reference="DOP853 at 1e-14", gauss=True)


SAT_I = np.array([1.0, 1.5, 2.0])  # the platform's principal moments (wheel's transverse inertia included)
SAT_J = 0.1  # the wheel's moment about its axis, the body's third axis


def satellite():
    """A satellite with a reaction wheel: SO(3) x R (attitude, wheel angle), a motor torque ``0.1 cos 2t``.

    ``L = 1/2 w . I w + 1/2 J (w_3 + phi')^2``; the motor's torque acts on
    the wheel angle (relative to the body) only. Its equations in ``(R, Pi,
    phi, p_phi)`` with the body angular momentum ``Pi = I w + p_phi e3`` and
    ``p_phi = J (w_3 + phi')``: ``R' = R hat(w)``, ``Pi' = Pi x w``,
    ``p_phi' = tau(t)``, ``w = (Pi - p_phi e3) / I``, ``phi' = p_phi / J - w_3``.
    """
    import jax.numpy as jnp
    from scipy.integrate import solve_ivp

    import manifold_dirac as md

    Iv, J = SAT_I, SAT_J

    def L(q, v):
        w, dphi = v[:3], v[3]
        return 0.5 * jnp.sum(jnp.asarray(Iv) * w * w) + 0.5 * J * (w[2] + dphi) ** 2

    def force(t, q, v):
        return jnp.zeros(4).at[3].set(0.1 * jnp.cos(2.0 * t))

    sysm = md.LagrangeDiracSystem(md.ProductManifold(md.SO3("exp"), md.Euclidean(1)), L, force=force,
                                  name="satellite with a reaction wheel")
    R0 = np.asarray(md.SO3("exp").retract(np.eye(3), np.array([0.3, -0.2, 0.1])))
    q0 = (R0, np.array([0.0]))
    v0 = np.array([0.4, 1.0, 0.3, 2.0])
    e3 = np.array([0.0, 0.0, 1.0])

    def rhs(t, y):
        R, Pi, pphi = y[:9].reshape(3, 3), y[9:12], y[13]
        w = (Pi - pphi * e3) / Iv
        return np.concatenate([(R @ _hat(w)).ravel(), np.cross(Pi, w),
                               [pphi / J - w[2], 0.1 * math.cos(2.0 * t)]])

    pphi0 = J * (v0[2] + v0[3])
    y0 = np.concatenate([R0.ravel(), Iv * v0[:3] + pphi0 * e3, [0.0, pphi0]])
    yT = solve_ivp(rhs, (0, T), y0, method="DOP853", rtol=1e-14, atol=1e-14).y[:, -1]

    def err_lib(tr):
        R, phi = (np.asarray(a)[-1] for a in tr.q)
        return float(max(np.max(np.abs(R - yT[:9].reshape(3, 3))), abs(phi[0] - yT[12])))

    def err_ivp(y):
        return float(max(np.max(np.abs(np.asarray(y[:9]) - yT[:9])), abs(y[12] - yT[12])))

    return dict(label="satellite with a reaction wheel (SO(3) x R, motor torque)", system=sysm, q0=q0, v0=v0,
                rhs=rhs, y0=y0, err_lib=err_lib, err_ivp=err_ivp, reference="DOP853 at 1e-14", gauss=True)


SYSTEMS = {"rolling_disk": rolling_disk, "chaplygin_sled": chaplygin_sled, "snakeboard": snakeboard,
           "heavy_top": heavy_top, "satellite": satellite}

# step counts to T per library method (h = T / n; errors from ~1e-2 down to ~1e-11 at T = 2): the
# composed grids are dense where a method's error crosses the targets, so that the matched-accuracy
# table picks the fewest steps that reach each target (a doubling grid wastes up to 2x); a system's
# "n_composed" extends them (the snakeboard's faster motion needs more steps)
N_ORDER2 = [20, 67, 200, 667, 2000]
N_COMPOSED = {"triple_jump4": [5, 7, 10, 14, 20, 28, 40, 56, 80],
              "kahan_li6": [1, 2, 3, 4, 5, 6, 8, 10, 12, 16],
              "kahan_li8": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20]}
N_GAUSS = {"gauss4": [5, 10, 20, 40], "gauss6": [2, 4, 8, 16]}
TOLS = [10.0 ** -k for k in range(3, 13)]


def methods(case, quick):
    """``{(method, setting): (call, evaluate)}`` of the library runs.

    ``call()`` is what is timed: one :func:`~manifold_dirac.integrate` call
    (with its checks, the stored points on the host), or one call of
    ``jax.jit`` of :func:`~manifold_dirac.rollout` until its result is ready
    (``method [jit rollout]``: the same discrete map as one XLA call, what a
    user repeating a run with other initial data, ``h`` or parameters calls;
    its inputs are device arrays made once). ``evaluate(result)`` gives
    ``(error at T, Newton iterations)`` outside the timing (the error of a
    run is computed once, for every method alike). ``integrate`` stores only
    the end point (``stride = n_steps``), so its record has the first step's
    iterations only: the work reported is the rollout's (the same map).
    """
    import jax
    import jax.numpy as jnp

    out = {}
    sysm, q0, v0 = case["system"], case["q0"], case["v0"]
    q0_dev, v0_dev = jax.tree.map(jnp.asarray, q0), jnp.asarray(v0, jnp.float64)

    def lib(n, comp, scheme, rule):
        h = T / n

        def call():
            return integrate(sysm, q0, v0, h=h, n_steps=n, stride=n, scheme=scheme, discrete_lagrangian=rule,
                             composition=comp)

        return call, lambda tr: (case["err_lib"](tr), None)

    def fast(n, comp, scheme, rule):
        f = jax.jit(lambda q, v, hh: rollout(sysm, q, v, h=hh, n_steps=n, scheme=scheme,
                                             discrete_lagrangian=rule, composition=comp))
        h_dev = jnp.float64(T / n)

        def call():
            return jax.block_until_ready(f(q0_dev, v0_dev, h_dev))

        def evaluate(r):
            if int(r.status) != 0:
                raise RuntimeError(f"rollout failed: status {int(r.status)} at step {int(r.fail_step)}")
            return case["err_lib"](r), int(np.sum(r.iterations))

        return call, evaluate

    pick = (lambda ns: ns[1:3]) if quick else (lambda ns: ns)
    settings = [("split midpoint", n, None, "split", "midpoint") for n in pick(N_ORDER2)]
    n_composed = {**N_COMPOSED, **case.get("n_composed", {})}
    for comp in COMPOSED:
        settings += [(f"split + {comp}", n, comp, "split", "midpoint") for n in pick(n_composed[comp])]
    if case.get("gauss"):
        for rule, ns in N_GAUSS.items():
            settings += [(rule, n, None, "symmetric", rule) for n in pick(ns)]
    for name, n, comp, scheme, rule in settings:
        out[(name, T / n)] = lib(n, comp, scheme, rule)
        out[(f"{name} {FAST}", T / n)] = fast(n, comp, scheme, rule)
    return out


INNER = 3
"""Back-to-back calls of one method in each round (the fastest is the round's time)."""

FAST = "[jit rollout]"
"""Suffix of the methods timed as ``jax.jit`` of :func:`~manifold_dirac.rollout`."""


def ivp_methods(case, quick):
    """``{(method, rtol): (call, evaluate)}`` of ``solve_ivp`` (as :func:`methods`: the call alone is timed)."""
    from scipy.integrate import solve_ivp

    out = {}
    tols = TOLS[::5] if quick else TOLS
    for meth in ("DOP853", "Radau"):
        for r in tols:
            def call(meth=meth, r=r):
                return solve_ivp(case["rhs"], (0.0, T), case["y0"], method=meth, rtol=r, atol=r)

            out[(meth, r)] = (call, lambda sol: (case["err_ivp"](sol.y[:, -1]), int(sol.nfev)))
    return out


def measure(name, quick, repeats):
    load_before = [round(x, 2) for x in os.getloadavg()]
    case = SYSTEMS[name]()
    calls = {**methods(case, quick), **ivp_methods(case, quick)}
    compile_s = {}
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for key, (call, evaluate) in list(calls.items()):  # first calls: compile each program once (not timed)
            t0 = time.perf_counter()
            try:
                out = call()
                results[key] = evaluate(out)  # error and work, once, outside every timing
            except Exception as e:  # a step too large for this system: the setting is left out, and said so
                print(f"[composition] {name}: {key[0]} at h = {key[1]:.4g} left out: {type(e).__name__}: {e}"[:300],
                      file=sys.stderr, flush=True)
                del calls[key]
                continue
            m = key[0]
            if m not in compile_s:
                compile_s[m] = time.perf_counter() - t0
        walls = {k: [] for k in calls}
        keys = list(calls)
        for r in range(repeats):
            j = (r * 7) % len(keys)
            for k in keys[j:] + keys[:j]:
                best = math.inf
                call = calls[k][0]
                for _ in range(INNER):  # back-to-back calls: the least disturbed one is kept
                    t0 = time.perf_counter()
                    call()
                    best = min(best, time.perf_counter() - t0)
                walls[k].append(best)
    runs = [{"method": k[0], "setting": k[1], "error": results[k][0], "work": results[k][1],
             "wall": min(walls[k]), "median": statistics.median(walls[k]), "walls": walls[k]} for k in keys]
    matched = {}
    for tgt in TARGETS:
        row = {}
        for m in dict.fromkeys(k[0] for k in keys):
            ok = [r["wall"] for r in runs if r["method"] == m and r["error"] <= tgt]
            row[m] = min(ok) if ok else None
        matched[f"{tgt:.0e}"] = row
    print(f"[composition] {name}: done (load {os.getloadavg()})", file=sys.stderr, flush=True)
    return {"label": case["label"], "reference": case["reference"], "runs": runs, "matched": matched,
            "first_call_s": compile_s, "load_before": load_before,
            "load_after": [round(x, 2) for x in os.getloadavg()]}


def _best(row, pred):
    """``(ms, method)`` of the fastest method of ``row`` that ``pred`` accepts, or ``(None, "")``."""
    cand = [(v, m) for m, v in row.items() if pred(m) and v is not None]
    return min(cand) if cand else (None, "")


def _ms(x):
    return "-" if x is None else f"{1e3 * x:.3g}"


def table(out) -> str:
    lines = [f"Machine: {out['machine']}; load average before/after the run: {out['load_before']} / "
             f"{out['load_after']} (a run of some systems keeps the others' results, each with its own load); "
             f"minimum of {out['repeats']} interleaved rounds (each the fastest of {INNER} "
             f"back-to-back calls), compile excluded; T = {T:g}"
             + (f"; the process ran on CPUs {out['cpus']}" if "cpus" in out else "") + ".", "",
             "Wall time (ms) per call of the fastest run with error at T <= target; `integrate`: one "
             "`md.integrate` call; `jit rollout`: `jax.jit` of `md.rollout` (one XLA call); ratios to DOP853.",
             ""]
    comp_int = lambda m: m.startswith("split +") and not m.endswith(FAST)  # noqa: E731
    comp_fast = lambda m: m.startswith("split +") and m.endswith(FAST)  # noqa: E731
    for name, d in out["systems"].items():
        gauss = any(m.startswith("gauss") for m in next(iter(d["matched"].values())))
        load = (f"Load average before/after this system: {d['load_before']} / {d['load_after']}."
                if "load_before" in d else
                "From an earlier run, whose library times include the evaluation of the error at T (later runs "
                "time the call alone): re-run this system to replace them.")
        lines += [f"### {d['label']}", "", load, "",
                  "| target | DOP853 | Radau | split midpoint (jit rollout) | composed, integrate | "
                  "composed, jit rollout | " + ("gauss4/6, jit rollout | " if gauss else "") +
                  "integrate / DOP853 | jit rollout / DOP853 |",
                  "|---" * (8 + gauss) + "|"]
        for tgt, row in d["matched"].items():
            dop, rad = row.get("DOP853"), row.get("Radau")
            ci, ci_m = _best(row, comp_int)
            cf, cf_m = _best(row, comp_fast)
            g, g_m = _best(row, lambda m: m.startswith("gauss") and m.endswith(FAST))
            mid = row.get(f"split midpoint {FAST}")
            cells = [tgt, _ms(dop), _ms(rad), _ms(mid),
                     f"{_ms(ci)} ({ci_m.removeprefix('split + ')})" if ci else "-",
                     f"{_ms(cf)} ({cf_m.removeprefix('split + ').removesuffix(' ' + FAST)})" if cf else "-"]
            if gauss:
                cells.append(f"{_ms(g)} ({g_m.removesuffix(' ' + FAST)})" if g else "-")
            cells += [f"{x / dop:.2f}" if x and dop else "-" for x in (ci, cf)]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


DOCS_TARGETS = ("1e-03", "1e-06", "1e-08", "1e-10")
DOCS_NAMES = {"rolling_disk": "rolling disk", "chaplygin_sled": "Chaplygin sled", "snakeboard": "snakeboard",
              "heavy_top": "heavy top", "satellite": "satellite with a reaction wheel"}


def docs_rows(out) -> str:
    """The rows of the table in ``docs/composition.md`` (``--figure-only`` prints them after the results table)."""
    def ms_ratio(x, dop, label=""):
        if x is None:
            return "not reached"
        r = f"{x / dop:.2g}×" if dop else ""
        inner = ", ".join(v for v in (label, r) if v)
        return f"{_ms(x)} ({inner})"

    comp_int = lambda m: m.startswith("split +") and not m.endswith(FAST)  # noqa: E731
    comp_fast = lambda m: m.startswith("split +") and m.endswith(FAST)  # noqa: E731
    lines = []
    for name, d in out["systems"].items():
        gauss = any(m.startswith("gauss") for m in next(iter(d["matched"].values())))
        for j, tgt in enumerate(DOCS_TARGETS):
            row = d["matched"][tgt]
            dop = row.get("DOP853")
            cf, cf_m = _best(row, comp_fast)
            ci, _ = _best(row, comp_int)
            g, g_m = _best(row, lambda m: m.startswith("gauss") and m.endswith(FAST))
            label = f"`{cf_m.removeprefix('split + ').removesuffix(' ' + FAST)}`" if cf else ""
            gcell = (f"{_ms(g)} (`{g_m.removesuffix(' ' + FAST)}`)" if g else "not reached") if gauss else "—"
            lines.append(f"| {DOCS_NAMES.get(name, name) if j == 0 else ''} | $10^{{-{int(tgt[3:])}}}$ | "
                         f"{_ms(dop)} | {_ms(row.get('Radau'))} | {ms_ratio(cf, dop, label)} | "
                         f"{ms_ratio(ci, dop)} | {gcell} |")
    return "\n".join(lines)


_STYLE = {"DOP853": ("k", "--", "s"), "Radau": ("0.5", "--", "D"), "split midpoint": ("tab:gray", "-", "o"),
          "split + triple_jump4": ("tab:blue", "-", "o"), "split + kahan_li6": ("tab:orange", "-", "o"),
          "split + kahan_li8": ("tab:red", "-", "o"), "gauss4": ("tab:green", "-", "^"),
          "gauss6": ("tab:purple", "-", "^")}


def _curve(ax, d, method, label, **kw):
    rs = sorted((r for r in d["runs"] if r["method"] == method and r["error"] > 0), key=lambda r: -r["error"])
    if rs:
        ax.loglog([1e3 * r["wall"] for r in rs], [r["error"] for r in rs], label=label, **kw)
    from matplotlib.ticker import NullFormatter

    ax.xaxis.set_minor_formatter(NullFormatter())  # no crowded minor labels on a narrow decade


def figure(out, path, path_call):
    """Two figures: the work--precision of every method (jit rollout path); integrate against jit rollout."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(out["systems"])
    # 1. work--precision: the library through its fastest path, against DOP853 and Radau
    fig, axes = plt.subplots(1, len(names), figsize=(4.3 * len(names), 4.0), squeeze=False)
    for ax, name in zip(axes[0], names):
        d = out["systems"][name]
        for base, (c, ls, mk) in _STYLE.items():
            m = base if base in ("DOP853", "Radau") else f"{base} {FAST}"
            _curve(ax, d, m, base, color=c, ls=ls, marker=mk, ms=4)
        ax.set_title(d["label"], fontsize=8.5)
        ax.set_xlabel("wall time per call (ms)")
        ax.axhspan(1e-10, 1e-6, color="0.93", zorder=0)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("error at T = 2")
    handles = {}
    for ax in axes[0]:
        for h_, l_ in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(l_, h_)
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles), fontsize=8,
               frameon=False)
    fig.suptitle("Work and precision: compositions (one jax.jit call of rollout) against DOP853 and Radau",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    # 2. what one call costs: the same composed runs through integrate and through jax.jit(rollout)
    fig, axes = plt.subplots(1, len(names), figsize=(4.3 * len(names), 4.0), squeeze=False)
    for ax, name in zip(axes[0], names):
        d = out["systems"][name]
        _curve(ax, d, "DOP853", "DOP853", color="k", ls="--", marker="s", ms=4)
        _curve(ax, d, "split + kahan_li8", "kahan_li8, integrate", color="tab:red", ls=":", marker="o", ms=4,
               mfc="none")
        _curve(ax, d, f"split + kahan_li8 {FAST}", "kahan_li8, jax.jit(rollout)", color="tab:red", ls="-",
               marker="o", ms=4)
        ax.set_title(d["label"], fontsize=8.5)
        ax.set_xlabel("wall time per call (ms)")
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("error at T = 2")
    axes[0][0].legend(fontsize=8)
    fig.suptitle("The same composed runs: one integrate call against one jax.jit(rollout) call", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path_call, dpi=110)
    plt.close(fig)


ADJOINT_CASES = [
    ("rolling_disk", "exp"), ("rolling_disk", "cayley"), ("rolling_disk", "so2xr2"), ("chaplygin_sled", "exp"),
    ("chaplygin_sled", "cayley"), ("knife_edge", "exp"), ("inclined_knife_edge", "exp"), ("rolling_ball", "exp"),
    ("rolling_disk_3d", "exp"), ("four_bar", "identity"), ("cartesian_pendulum", "identity"), ("heavy_top", "exp"),
    ("heavy_top", "cayley"), ("tumbling_brick", "so3xr3"), ("tumbling_brick", "exp"), ("lc_circuit", "identity"),
    ("lc_from_elements", "identity"), ("mass_spring_torn", "identity"),
]


def adjoint_table() -> str:
    lines = ["Round trip Phi_{-h}(Phi_h(q0, p0)) - (q0, p0), h = 0.1, midpoint rule, max-norms (q in the chart at q0; "
             "p_Delta: the momentum defect on the constraint distribution).", "",
             "| system | retraction | constraints | symmetric: q | symmetric: p | symmetric: p on Delta | "
             "split: q | split: p |", "|---|---|---|---|---|---|---|---|"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, r in ADJOINT_CASES:
            ex = EXAMPLES[name]
            sysm = ex.system(r)
            q0, v0 = ex.initial(sysm)
            a = adjoint_defect(sysm, q0, v0, 0.1, "symmetric")
            b = adjoint_defect(sysm, q0, v0, 0.1, "split")
            lines.append(f"| {name} | {r} | {sysm.n_constraints} | {a['q']:.1e} | {a['p']:.1e} | {a['p_delta']:.1e} | "
                         f"{b['q']:.1e} | {b['p']:.1e} |")
            print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def cost_table(names, calls=200, rounds=5) -> str:
    """Where a ``jax.jit(rollout)`` call's time goes: CPU time of the process per call (``--cost``).

    For each system: a trivial jitted function of the same inputs (the
    dispatch floor), the uncomposed rollout of one step, and ``kahan_li8``
    rollouts of 1 and 4 steps at ``h = 0.5``, with their Newton iterations.
    ``(4 steps - 1 step) / (3 s)`` is the cost of a sub-step after the first
    step; the one-step run minus its sub-steps is the fixed cost of a call.
    CPU time of the process (``time.process_time``), minimum of ``calls``
    back-to-back calls in each of ``rounds`` interleaved rounds: less
    sensitive to other jobs on the machine than wall time.
    """
    import jax
    import jax.numpy as jnp

    lines = ["CPU time of the process per call (us), minimum of interleaved rounds; h = 0.5.", "",
             "| system | trivial jit | rollout, 1 step | kahan_li8, 1 step | kahan_li8, 4 steps | "
             "per sub-step after the first step |", "|---|---|---|---|---|---|"]
    for name in names:
        case = SYSTEMS[name]()
        sysm = case["system"]
        q, v, h = jax.tree.map(jnp.asarray, case["q0"]), jnp.asarray(case["v0"], jnp.float64), jnp.float64(0.5)
        fs = {"trivial": jax.jit(lambda q, v, h: (jax.tree.map(lambda a: a * h, q), v * h))}
        for comp, n in ((None, 1), ("kahan_li8", 1), ("kahan_li8", 4)):
            fs[(comp, n)] = jax.jit(lambda q, v, hh, comp=comp, n=n: rollout(
                sysm, q, v, h=hh, n_steps=n, scheme="split", composition=comp))
        its = {k: (None if k == "trivial" else np.asarray(jax.block_until_ready(f(q, v, h)).iterations).tolist())
               for k, f in fs.items()}
        best = {k: math.inf for k in fs}
        for _ in range(rounds):
            for k, f in fs.items():
                jax.block_until_ready(f(q, v, h))
                for _ in range(calls):
                    t0 = time.process_time()
                    jax.block_until_ready(f(q, v, h))
                    best[k] = min(best[k], time.process_time() - t0)
        us = {k: 1e6 * b for k, b in best.items()}
        per = (us[("kahan_li8", 4)] - us[("kahan_li8", 1)]) / (3 * 17)
        cell = lambda k: f"{us[k]:.0f} ({sum(its[k])} iterations)"  # noqa: E731
        lines.append(f"| {name} | {us['trivial']:.0f} | {cell((None, 1))} | {cell(('kahan_li8', 1))} | "
                     f"{cell(('kahan_li8', 4))} | {per:.1f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


REUSE_RUNS = tuple((name, f"1e-{k:02d}") for name in ("rolling_disk", "snakeboard", "chaplygin_sled")
                   for k in range(6, 11))
"""``(system, target)`` of ``--reuse``: the fastest composed ``jax.jit(rollout)`` run of the stored results."""


def reuse_table(rounds: int = 7, calls: int = 20) -> str:
    """The fastest composed run for a target (``results/composition.json``) with each of the three Newton
    matrix options: evaluated at every update (the default), ``SolverOptions(jacobian="reuse")`` (simplified
    Newton: evaluated at a solve's first iterate, again after an update that does not halve the error) and
    ``SolverOptions(jacobian="keep")`` (its inverse kept from the same sub-step on the last step, evaluated
    again after an update that does not cut the error to 1/32), next to DOP853 at the ``rtol`` that reached
    the target in the stored run; wall time per call, minimum of ``rounds`` interleaved rounds of ``calls``
    calls, in one process, with each option's Newton updates and error at ``T``."""
    import jax
    from scipy.integrate import solve_ivp

    from manifold_dirac import SolverOptions

    stored = json.loads((HERE / "results" / "composition.json").read_text())["systems"]
    timed = {}
    cases = {name: SYSTEMS[name]() for name in dict.fromkeys(n for n, _ in REUSE_RUNS)}  # each built once
    for name, tgt in REUSE_RUNS:
        case = cases[name]
        runs = stored[name]["runs"]
        lib = [r for r in runs if r["method"].endswith(FAST) and "+" in r["method"] and r["error"] <= float(tgt)]
        ivp = [r for r in runs if r["method"] == "DOP853" and r["error"] <= float(tgt)]
        if not lib or not ivp:
            continue
        best = min(lib, key=lambda r: r["wall"])
        dop = min(ivp, key=lambda r: r["wall"])
        comp = best["method"].split("+ ")[1].split(" ")[0]
        n = int(round(T / best["setting"]))
        out = {}
        for jac in JACOBIANS:
            f = jax.jit(lambda q, v, h, comp=comp, n=n, sysm=case["system"], jac=jac: rollout(
                sysm, q, v, h=h, n_steps=n, scheme="split", composition=comp, solver=SolverOptions(jacobian=jac)))
            r = jax.block_until_ready(f(case["q0"], case["v0"], T / n))
            if int(r.status) != 0:
                raise RuntimeError(f"{name}, {comp}, {n} steps, jacobian={jac!r}: status {int(r.status)}")
            out[jac] = (lambda f=f, n=n, case=case: jax.block_until_ready(f(case["q0"], case["v0"], T / n)),
                        int(np.sum(r.iterations)), case["err_lib"](r))
        rt = dop["setting"]
        out["DOP853"] = (lambda case=case, rt=rt: solve_ivp(case["rhs"], (0.0, T), case["y0"], method="DOP853",
                                                             rtol=rt, atol=rt), dop["work"], dop["error"])
        timed[(name, tgt, comp, n, rt)] = out
    flat = interleaved_min({(k, m): f for k, v in timed.items() for m, (f, *_rest) in v.items()}, rounds, calls)
    best_t = {k: {m: flat[(k, m)] for m in v} for k, v in timed.items()}
    lines = ["| system | target | composed run | DOP853 (rtol; evaluations) | "
             + " | ".join(f"`jacobian=\"{j}\"` (updates; error at T)" for j in JACOBIANS) + " | "
             + " | ".join(f"{j} / DOP853" for j in JACOBIANS) + " |",
             "|---|---|---|---|" + "---|" * (2 * len(JACOBIANS))]
    for (name, tgt, comp, n, rt), v in timed.items():
        b = best_t[(name, tgt, comp, n, rt)]
        lines.append(f"| {DOCS_NAMES[name]} | {tgt} | `{comp}`, {n} steps | {1e3 * b['DOP853']:.3g} ms ({rt:.0e}; "
                     f"{v['DOP853'][1]}) | "
                     + " | ".join(f"{1e3 * b[j]:.3g} ms ({v[j][1]}; {v[j][2]:.1e})" for j in JACOBIANS) + " | "
                     + " | ".join(f"{b[j] / b['DOP853']:.2f}" for j in JACOBIANS) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


MATCHED_SYSTEMS = ("rolling_disk", "snakeboard", "chaplygin_sled")
"""The systems of ``--matched``: the issue's two (the rolling disk, the snakeboard) and the sled."""

MATCHED_TARGETS = tuple(10.0 ** -k for k in range(6, 11))
"""The target errors at ``T`` of ``--matched``."""

MATCHED_COMPOSITIONS = ("kahan_li6", "kahan_li8")
"""The compositions ``--matched`` searches (the fastest at 1e-6 and below in the work--precision run)."""

MATCHED_MAX_STEPS = 64
"""The most composed steps ``--matched`` tries for one target (the snakeboard reaches 1e-10 with 37)."""

MATCHED_RTOLS = tuple(10.0 ** (-k / 4) for k in range(12, 49))
"""DOP853's tolerances in ``--matched``: ``rtol = atol`` at quarter decades from 1e-3 to 1e-12.

About as fine as the compositions' grid of every step count: at order 8 a step count 7 % smaller (one step in
14) costs 7 % less and has an error about 1.8 times larger, and a quarter decade of tolerance is a factor 1.78.
Below 14 steps one step is more than 7 % of the cost (the sled's 3 to 10 steps: 10 to 33 %), so there the
compositions' grid is the coarser one."""


def matched_settings(case, targets=MATCHED_TARGETS, compositions=MATCHED_COMPOSITIONS,
                     max_steps=MATCHED_MAX_STEPS, rtols=MATCHED_RTOLS):
    """Each side's cheapest setting for each target, found on the grids of ``--matched`` (no timing).

    Returns ``{target: {"composed": {comp: (n, error)}, "DOP853": (rtol, evaluations, error)}}``: for each
    composition the fewest steps ``n`` (of ``1 .. max_steps``) whose error at ``T`` is at most the target,
    and DOP853's tolerance of ``rtols`` with the fewest evaluations (the loosest of equals) whose error is.
    The errors of the composed runs come from :func:`~manifold_dirac.integrate` (``h`` and ``n_steps`` are
    traced: one compile per composition); the rollout timed is the same map. A side that reaches a target
    with no setting of its grid has no entry for it.
    """
    from scipy.integrate import solve_ivp

    sysm, q0, v0 = case["system"], case["q0"], case["v0"]
    errors = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for comp in compositions:
            errors[comp] = {}
            for n in range(1, max_steps + 1):
                try:
                    tr = integrate(sysm, q0, v0, h=T / n, n_steps=n, stride=n, scheme="split", composition=comp)
                except StepError:  # a step too large for this system: no run with n steps
                    continue
                errors[comp][n] = case["err_lib"](tr)
                if errors[comp][n] <= min(targets):
                    break
        ivp = []
        for rt in rtols:
            sol = solve_ivp(case["rhs"], (0.0, T), case["y0"], method="DOP853", rtol=rt, atol=rt)
            if sol.status == 0:  # reached T
                ivp.append((rt, int(sol.nfev), case["err_ivp"](sol.y[:, -1])))
    out = {}
    for tgt in targets:
        row = {"composed": {}}
        for comp, errs in errors.items():
            ok = [n for n, e in errs.items() if e <= tgt]
            if ok:
                row["composed"][comp] = (min(ok), errs[min(ok)])
        ok = [r for r in ivp if r[2] <= tgt]
        if ok:
            row["DOP853"] = min(ok, key=lambda r: (r[1], -r[0]))
        out[tgt] = row
    return out


def matched_table(names=MATCHED_SYSTEMS, jacobians=("every", "keep"), rounds: int = 7, calls: int = 20) -> str:
    """At each target, each side's cheapest setting found now (:func:`matched_settings`), timed side by side.

    For each system and target of ``--matched``: the composed ``jax.jit(rollout)`` runs (``split`` scheme) of
    each composition at its fewest steps that reach the target, with each Newton matrix option of
    ``jacobians``, and DOP853 at its cheapest tolerance that does; wall time per call, minimum of ``rounds``
    interleaved rounds of ``calls`` calls, all in one process. The steps are chosen on the errors of
    ``integrate`` (the default solver); each timed rollout's own error at ``T`` is checked, and a rollout that
    misses the target (its solver stops elsewhere within Newton's tolerance) or fails takes one step more,
    until it reaches it. The faster composition of each cell is chosen by the times reported (every one
    chosen so far is ``kahan_li8``). A target one side does not reach on its grid is a row that says so."""
    import jax
    import jax.numpy as jnp
    from scipy.integrate import solve_ivp

    from manifold_dirac import SolverOptions

    timed, chosen, made = {}, [], {}
    for name in names:
        case = SYSTEMS[name]()
        found = matched_settings(case)
        q, v = jax.tree.map(jnp.asarray, case["q0"]), jnp.asarray(case["v0"], jnp.float64)
        for tgt, row in found.items():
            picks = {}
            for comp, (n0, _err) in row["composed"].items():
                for jac in jacobians:
                    for n in range(n0, MATCHED_MAX_STEPS + 1):
                        key = (name, comp, n, jac)
                        if key not in made:
                            f = jax.jit(lambda q, v, h, comp=comp, n=n, sysm=case["system"], jac=jac: rollout(
                                sysm, q, v, h=h, n_steps=n, scheme="split", composition=comp,
                                solver=SolverOptions(jacobian=jac)))
                            h = jnp.float64(T / n)
                            r = jax.block_until_ready(f(q, v, h))
                            made[key] = (int(r.status), int(np.sum(r.iterations)), case["err_lib"](r),
                                         lambda f=f, q=q, v=v, h=h: jax.block_until_ready(f(q, v, h)))
                        status, _its, err, call = made[key]
                        if status == 0 and err <= tgt:
                            timed[key] = call
                            picks[(comp, jac)] = n
                            break
            chosen.append((name, tgt, row, picks))
            if "DOP853" in row:
                rt = row["DOP853"][0]
                timed.setdefault((name, "DOP853", rt), lambda case=case, rt=rt: solve_ivp(
                    case["rhs"], (0.0, T), case["y0"], method="DOP853", rtol=rt, atol=rt))
        print(f"[matched] {name}: settings found and compiled", file=sys.stderr, flush=True)
    best = interleaved_min(timed, rounds, calls)
    lines = ["| system | target | DOP853 (rtol; evaluations; error at T) | "
             + " | ".join(f"composed, `jacobian=\"{j}\"` (steps; updates; error at T)" for j in jacobians) + " | "
             + " | ".join(f"{j} / DOP853" for j in jacobians) + " |",
             "|---|---|---|" + "---|" * (2 * len(jacobians))]
    for name, tgt, row, picks in chosen:
        dop = best.get((name, "DOP853", row["DOP853"][0])) if "DOP853" in row else None
        ivp_cell = (f"{1e3 * dop:.3g} ms ({row['DOP853'][0]:.1e}; {row['DOP853'][1]}; {row['DOP853'][2]:.1e})"
                    if dop is not None else "not reached")
        cells, ratios = [], []
        for jac in jacobians:
            runs = [(best[(name, c, n, j)], c, n) for (c, j), n in picks.items() if j == jac]
            if not runs:
                cells.append(f"not reached in {MATCHED_MAX_STEPS} steps")
                ratios.append("—")
                continue
            t, comp, n = min(runs)
            _status, its, err, _call = made[(name, comp, n, jac)]
            cells.append(f"{1e3 * t:.3g} ms (`{comp}`, {n}; {its}; {err:.1e})")
            ratios.append(f"{t / dop:.2f}" if dop is not None else "—")
        lines.append(f"| {DOCS_NAMES[name]} | {tgt:.0e} | {ivp_cell} | " + " | ".join(cells) + " | "
                     + " | ".join(ratios) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


JACOBIANS = ("every", "reuse", "keep")
"""The Newton matrix options ``--reuse`` times (``SolverOptions.jacobian``)."""


DISPATCH_STEPS = 7
"""``kahan_li8`` steps of the rolling disk in ``--dispatch`` (its fastest run for 1e-6 in the work-precision run)."""


def dispatch_child(mode: str, rounds: int = 7, calls: int = 50) -> dict:
    """Wall time per call in this process (JAX's CPU dispatch ``mode``, set here before the first computation:
    ``async`` JAX's default, ``sync`` synchronous): the minimum over
    ``rounds`` interleaved rounds of ``calls`` back-to-back calls, of a trivial jitted function, of
    ``jax.jit(rollout)`` of ``DISPATCH_STEPS`` ``kahan_li8`` steps of the rolling disk and of DOP853 at
    ``rtol = atol = 1e-3`` on its reduced equations; and what a user's other JAX code sees: a Python loop of
    100 dependent calls of a jitted ``tanh(x @ w)`` on ``(256, 256)``, 100 eager ``jnp`` operations on a
    vector of 1000 numbers, one ``(2000, 2000)`` product (the time of the whole, until the result is ready)."""
    import jax
    import jax.numpy as jnp
    from scipy.integrate import solve_ivp

    from jax._src import xla_bridge

    # JAX's option is a flag (not read from the environment), read when its CPU backend starts: before any array.
    # Checked, not assumed: set after the backend started, it is recorded but has no effect (the runs of
    # 2026-12-05 were made so: importing the catalog started the backend then).
    if xla_bridge.backends_are_initialized():
        raise RuntimeError("JAX's CPU backend started before the dispatch mode was set: the mode would not apply")
    jax.config.update("jax_cpu_enable_async_dispatch", mode == "async")
    case = SYSTEMS["rolling_disk"]()
    sysm = case["system"]
    q, v = jax.tree.map(jnp.asarray, case["q0"]), jnp.asarray(case["v0"], jnp.float64)
    assert bool(jax.config.read("jax_cpu_enable_async_dispatch")) == (mode == "async")
    h = jnp.float64(T / DISPATCH_STEPS)  # made once: an eager conversion per call is a dispatched program
    triv = jax.jit(lambda q, v, h: (jax.tree.map(lambda a: a * h, q), v * h))
    roll = jax.jit(lambda q, v, hh: rollout(sysm, q, v, h=hh, n_steps=DISPATCH_STEPS, scheme="split",
                                            composition="kahan_li8"))
    layer = jax.jit(lambda x, w: jnp.tanh(x @ w))
    x256 = jnp.asarray(np.random.default_rng(0).normal(size=(256, 256)) / 16)
    vec = jnp.linspace(0.0, 1.0, 1000)
    big = jnp.asarray(np.random.default_rng(1).normal(size=(2000, 2000)))

    def chain():
        y = x256
        for _ in range(100):
            y = layer(y, x256)
        return y.block_until_ready()

    def eager():
        y = vec
        for _ in range(100):
            y = jnp.sin(y) + 0.5
        return y.block_until_ready()

    fs = {"trivial jit": lambda: jax.block_until_ready(triv(q, v, h)),
          f"jit(rollout), kahan_li8, {DISPATCH_STEPS} steps": lambda: jax.block_until_ready(roll(q, v, h)),
          "DOP853, rtol = 1e-3": lambda: solve_ivp(case["rhs"], (0.0, T), case["y0"], method="DOP853",
                                                   rtol=1e-3, atol=1e-3)}
    best = interleaved_min(fs, rounds, calls)
    user = {"100 chained jitted (256, 256) layers": chain, "100 eager jnp operations": eager,
            "one (2000, 2000) product": lambda: (big @ big).block_until_ready()}
    best.update(interleaved_min(user, rounds, 3))
    return {"mode": mode, "async_dispatch": bool(jax.config.read("jax_cpu_enable_async_dispatch")),
            "us": {k: 1e6 * b for k, b in best.items()}}


NOT_RUN = ("parameter", "constant", "get-tuple-element", "tuple", "bitcast")
"""Entry instructions XLA:CPU does not run as operations of their own."""


def entry_operations(hlo: str) -> dict[str, set[str]]:
    """The operations of a compiled program's entry computation that XLA:CPU runs as thunks (kernels, copies,
    loops): every instruction of ``ENTRY`` but :data:`NOT_RUN`, each with the operations it reads from (through
    tuples and bitcasts; an empty set: it reads only parameters and constants, ready at the program's start)."""
    import re

    body = re.search(r"^ENTRY .*?\{\n(.*?)\n\}", hlo, re.S | re.M).group(1)
    feeds: dict[str, set[str]] = {}
    ops: dict[str, set[str]] = {}
    for line in body.splitlines():
        m = re.match(r"\s*(?:ROOT )?%(\S+) = .*? ([a-z][\w-]*)\((.*?)\)(?:, |$)", line)
        if m is None:
            continue
        name, op, args = m.groups()
        inputs = set().union(*[feeds.get(a, set()) for a in re.findall(r"%([\w.\-]+)", args)])
        if op in NOT_RUN:
            feeds[name] = inputs
        else:
            ops[name] = inputs
            feeds[name] = {name}
    return ops


def entry_kernels(hlo: str) -> tuple[int, int]:
    """How many operations a compiled program's entry computation runs as thunks (:func:`entry_operations`),
    and how many of them are ready at the program's start. XLA:CPU hands half of the ready ones to a worker
    thread when more than 9 are ready at once (``benchmarks/thunk_split.py``)."""
    ops = entry_operations(hlo)
    return len(ops), sum(not inputs for inputs in ops.values())


def outputs_table(names, n_steps: int = 6, rounds: int = 7, calls: int = 20) -> str:
    """What a ``jax.jit(rollout)`` call's outputs cost: the same ``kahan_li8`` run returning the whole
    :class:`Rollout`, only its final point, or only its status (XLA drops what is not returned), with the
    number of thunks of each program's entry computation (``--outputs``); wall time per call, minimum of
    ``rounds`` interleaved rounds of ``calls`` calls, one process."""
    import jax
    import jax.numpy as jnp

    stages = len(get_composition("kahan_li8").coefficients)
    lines = [f"Wall time per call (us), `kahan_li8`, {n_steps} steps of h = T / {n_steps}, `split` scheme; minimum "
             f"of {rounds} interleaved rounds of {calls} calls, one process. In brackets: the thunks of the "
             "program's entry computation, and how many of them are ready at its start (XLA:CPU runs them in the "
             "calling thread, except that when more than 9 are ready at once it hands half of them to a worker "
             "thread; `benchmarks/thunk_split.py`).", "",
             "| system | trivial jit | whole Rollout | final point only | status only | Newton iterations per step |",
             "|---|---|---|---|---|---|"]
    for name in names:
        case = SYSTEMS[name]()
        sysm = case["system"]
        q, v = jax.tree.map(jnp.asarray, case["q0"]), jnp.asarray(case["v0"], jnp.float64)
        h = jnp.float64(T / n_steps)
        pick = {"whole": lambda r: r, "final": lambda r: (jax.tree.map(lambda a: a[-1], r.q), r.p[-1]),
                "status": lambda r: r.status}
        fs = {"trivial": jax.jit(lambda q, v, h: (jax.tree.map(lambda a: a * h, q), v * h))}
        for k, o in pick.items():
            fs[k] = jax.jit(lambda q, v, hh, o=o: o(rollout(sysm, q, v, h=hh, n_steps=n_steps, scheme="split",
                                                              composition="kahan_li8")))
        kernels = {k: entry_kernels(f.lower(q, v, h).compile().as_text()) for k, f in fs.items()}
        best = interleaved_min({k: (lambda f=f: jax.block_until_ready(f(q, v, h))) for k, f in fs.items()},
                               rounds, calls)
        cell = lambda k: f"{1e6 * best[k]:.0f} ({kernels[k][0]}, {kernels[k][1]} ready)"  # noqa: E731
        its = np.asarray(fs["whole"](q, v, h).iterations).tolist()
        lines.append(f"| {name} | {cell('trivial')} | {cell('whole')} | {cell('final')} | {cell('status')} | "
                     f"{', '.join(map(str, its))} (of {stages} sub-steps each) |")
        print(lines[-1], file=sys.stderr, flush=True)
    return "\n".join(lines)


def dispatch_table(pairs: int = 5) -> str:
    """The same calls with JAX's asynchronous CPU dispatch and synchronous, each in a fresh
    process; ``pairs`` pairs of processes (the time of a short call varies from one process to the next)."""
    import subprocess

    res = []
    for _ in range(pairs):
        for mode in ("async", "sync"):
            out = subprocess.run([sys.executable, __file__, "--dispatch-child", mode], capture_output=True, text=True,
                                 check=True)
            res.append(json.loads(out.stdout.strip().splitlines()[-1]))
    keys = list(res[0]["us"])
    lines = [f"Wall time per call (us), minimum of 7 rounds (of 50 calls; of 3 for the last three columns, a "
             f"user's other JAX code) in each process; {pairs} pairs of fresh processes, JAX's CPU dispatch "
             "asynchronous (JAX's default) and synchronous (`jax_cpu_enable_async_dispatch = False`), "
             "set in each child before its first computation and checked.", "",
             "| process | dispatch | " + " | ".join(keys) + " |", "|---|---|" + "---|" * len(keys)]
    for i, r in enumerate(res):
        lines.append(f"| {i // 2 + 1} | {r['mode']} | " + " | ".join(f"{r['us'][k]:.1f}" for k in keys) + " |")
    return "\n".join(lines)


def write_report(filename: str, note: str, body) -> None:
    """Write ``results/filename``: the machine, the CPUs the process runs on (``note`` after them), the load
    before, ``body()``, the load after; and print it."""
    txt = (f"Machine: {platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}; the process "
           f"runs on CPUs {sorted(os.sched_getaffinity(0))}{note}; load average before: "
           f"{[round(x, 2) for x in os.getloadavg()]}.\n\n" + body())
    txt += f"\n\nLoad average after: {[round(x, 2) for x in os.getloadavg()]}.\n"
    (HERE / "results" / filename).write_text(txt)
    print(txt)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--adjoint", action="store_true", help="measure the self-adjointness of the base maps instead")
    ap.add_argument("--figure-only", action="store_true", help="redraw the table and figure from the stored results")
    ap.add_argument("--cost", action="store_true",
                    help="where one jax.jit(rollout) call's CPU time goes (fixed cost, per sub-step), "
                         "to benchmarks/results/composition_cost.md")
    ap.add_argument("--dispatch", action="store_true",
                    help="one disk call and a user's other JAX code with JAX's asynchronous CPU dispatch and without, "
                         "to benchmarks/results/composition_dispatch.md (with --label: composition_dispatch_LABEL.md)")
    ap.add_argument("--reuse", action="store_true",
                    help="the fastest composed runs for 1e-6 ... 1e-10 (disk, snakeboard, sled) with each "
                         "SolverOptions(jacobian='every' | 'reuse' | 'keep'), to benchmarks/results/composition_reuse.md")
    ap.add_argument("--matched", action="store_true",
                    help="each side's cheapest setting for 1e-6 ... 1e-10 found now on fine grids (every step "
                         "count; DOP853 at quarter decades of rtol), timed side by side, to "
                         "benchmarks/results/composition_matched.md (with --label: composition_matched_LABEL.md)")
    ap.add_argument("--outputs", action="store_true",
                    help="what a jax.jit(rollout) call's outputs cost (whole Rollout, final point, status), "
                         "to benchmarks/results/composition_outputs.md")
    ap.add_argument("--label", default="",
                    help="write composition_LABEL.json/.md instead, without the figures (a run beside the main one, "
                         "e.g. pinned with `taskset -c 1` and --label pinned); its CPUs are recorded")
    ap.add_argument("--dispatch-child", choices=("async", "sync"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.dispatch_child:
        print(json.dumps(dispatch_child(args.dispatch_child)))
        return
    if args.reuse:  # with --label (e.g. pinned with `taskset -c 1`): composition_reuse_LABEL.md
        write_report(f"composition_reuse{'_' + args.label if args.label else ''}.md", "", lambda: (
            "Wall time per call, minimum of 7 interleaved rounds of 20 calls, one process; the composed runs are "
            "`jax.jit(rollout)`, `split` scheme, the fastest for the target in `composition.json`.\n\n"
            + reuse_table()))
        return
    if args.matched:  # with --label (e.g. pinned with `taskset -c 1`): composition_matched_LABEL.md
        write_report(f"composition_matched{'_' + args.label if args.label else ''}.md", "", lambda: (
            "For each target, each side's cheapest setting found in this run: the fewest `kahan_li6` and "
            "`kahan_li8` steps whose error at T is at most the target (the faster of the two is shown), and "
            "DOP853's tolerance (rtol = atol at quarter decades, 1e-3 ... 1e-12) with the fewest evaluations "
            "that reaches it. Wall time per call, minimum of 7 interleaved rounds of 20 calls, one process; the "
            "composed runs are `jax.jit(rollout)`, `split` scheme.\n\n" + matched_table()))
        return
    if args.dispatch:  # with --label (e.g. pinned with `taskset -c 1`): composition_dispatch_LABEL.md
        write_report(f"composition_dispatch{'_' + args.label if args.label else ''}.md", "", dispatch_table)
        return
    if args.outputs:
        names = (["rolling_disk", "chaplygin_sled", "snakeboard"] if args.systems == ",".join(SYSTEMS)
                 else [n for n in args.systems.split(",") if n in SYSTEMS])
        write_report("composition_outputs.md", "", lambda: outputs_table(names))
        return
    if args.cost:
        names = [n for n in args.systems.split(",")
                 if n in ("rolling_disk", "chaplygin_sled", "snakeboard")] or ["rolling_disk"]
        write_report("composition_cost.md", " (pin it, e.g. `taskset -c 0`, to compare runs)",
                     lambda: cost_table(names))
        return
    if args.figure_only:
        out = json.loads((HERE / "results" / "composition.json").read_text())
        print(table(out))
        print("Rows of the table in docs/composition.md:\n\n" + docs_rows(out))
        figure(out, ROOT / "docs" / "figures" / "composition_wp.png",
               ROOT / "docs" / "figures" / "composition_call.png")
        return
    if args.adjoint:
        txt = f"Machine: {platform.machine()}, {os.cpu_count()} cores.\n\n" + adjoint_table()
        (HERE / "results" / "composition_adjoint.md").write_text(txt + "\n")
        print(txt)
        return
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
           "load_before": [round(x, 2) for x in os.getloadavg()], "repeats": 1 if args.quick else args.repeats,
           "T": T, "cpus": sorted(os.sched_getaffinity(0)), "systems": {}}
    for name in args.systems.split(","):
        out["systems"][name] = measure(name, args.quick, out["repeats"])
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    res = HERE / "results"
    suffix = ("_quick" if args.quick else "") + (f"_{args.label}" if args.label else "")
    old = res / f"composition{suffix}.json"
    if old.exists() and set(out["systems"]) != set(SYSTEMS):  # a run of some systems updates the others' results
        prev = json.loads(old.read_text())
        out["systems"] = {**{k: v for k, v in prev.get("systems", {}).items() if k not in out["systems"]},
                          **out["systems"]}
        out["load_before"] = prev.get("load_before", out["load_before"])  # of the whole run; each system has its own
        out["systems"] = {k: out["systems"][k] for k in SYSTEMS if k in out["systems"]}
    (res / f"composition{suffix}.json").write_text(json.dumps(out, indent=1))
    txt = table(out)
    (res / f"composition{suffix}.md").write_text(txt + "\n")
    print(txt)
    if not args.quick and not args.label:
        figure(out, ROOT / "docs" / "figures" / "composition_wp.png",
               ROOT / "docs" / "figures" / "composition_call.png")


if __name__ == "__main__":
    main()
