"""The worked examples of docs/sweeps.md at full size, and their figures.

1. A retraction study as one sweep: 2 SE(2) systems x 3 retractions (the "6") x 3 schemes
   x 2 discrete Lagrangians x 4 step sizes = 144 cells.
2. A 10^4-member Monte Carlo ensemble of the heavy top's energy error: perturbed initial
   data, integrated in batches of ``--batch`` members (one vmap batch per call), per
   retraction and step size.

    python benchmarks/sweep_examples.py                      # both, on a local cluster of all CPUs
    python benchmarks/sweep_examples.py --only ensemble --members 1000 --workers 1
    python benchmarks/sweep_examples.py --scheduler tcp://host:8786   # on a running cluster

Writes ``docs/figures/sweep_study.png``, ``docs/figures/sweep_ensemble.png`` and the Datasets
(``sweep_study.nc``, ``sweep_ensemble.nc``) to ``--out`` (default ``benchmarks/results``), and
keeps every finished cell in ``--out``/stores/ (a rerun with ``--resume`` skips them).
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from manifold_dirac.study import StudyResult, study_cell  # noqa: E402
from manifold_dirac._sweep import save_dataset, sweep  # noqa: E402

STUDY_AXES = {
    "system": ["inclined_knife_edge", "chaplygin_sled"],
    "retraction": ["exp", "cayley", "so2xr2"],
    "scheme": ["symmetric", "plus", "minus"],
    "rule": ["midpoint", "trapezoid"],
    "h": [0.04, 0.02, 0.01, 0.005],
}


def heavy_top_ensemble_cell(retraction: str, h: float, members: np.ndarray, *, T: float = 10.0,
                            sigma: float = 0.05, n_members: int = 10_000, seed: int = 2026) -> dict:
    """Energy error of the heavy top over ``T`` (at every 10th step) for the given ensemble members.

    Member ``i``'s initial data are the example's ``(R0, w0)`` perturbed by ``R0 exp(sigma a_i)``
    and ``w0 + sigma b_i`` with ``a_i, b_i`` standard normal, drawn once for the whole
    ensemble from ``seed`` (so a member's data do not depend on how the ensemble is split
    into batches).
    """
    from manifold_dirac._manifolds import SO3
    from manifold_dirac._run.integrate import integrate
    from manifold_dirac.study import example_system
    from manifold_dirac.systems.catalog import get_example

    ex = get_example("heavy_top")
    sysm = example_system(ex, retraction)
    R0, w0 = ex.initial(sysm)
    noise = np.random.default_rng(seed).standard_normal((n_members, 6))[members]
    R = np.asarray(SO3().exp(sigma * noise[:, :3]))
    q0 = np.einsum("ij,bjk->bik", np.asarray(R0), R)
    v0 = np.asarray(w0) + sigma * noise[:, 3:]
    n = int(round(T / h))
    tr = integrate(sysm, q0, v0=v0, h=h, n_steps=n, stride=10)  # one compiled program for every h
    e0 = tr.energy[0]
    err = np.max(np.abs(tr.energy - e0), axis=0) / np.maximum(1.0, np.abs(e0))
    return {"energy_error": err, "failed": (tr.status != 0).astype(float)}


def run_study(args, out: Path) -> None:
    cell = functools.partial(study_cell, T=4.0, long_steps=500)
    t0 = time.perf_counter()
    ds = sweep(cell, STUDY_AXES, store=out / "stores" / "study", resume=args.resume, client=args.scheduler,
               workers=args.workers, attrs={"T": 4.0, "long_steps": 500})
    print(f"study: {ds.attrs['cells']} cells ({ds.attrs['cells_run']} run, {ds.attrs['cells_resumed']} resumed) "
          f"in {time.perf_counter() - t0:.0f} s on {ds.attrs['workers']} workers, overhead "
          f"{100 * ds.attrs['overhead']:.1f} %; statuses: "
          + ", ".join(f"{s}: {int((ds.status == s).sum())}" for s in np.unique(ds.status.values)))
    save_dataset(ds, out / "sweep_study.nc")
    for system in STUDY_AXES["system"]:
        sub = ds.sel(system=system)
        sub.attrs.update(system=system, reference="closed form / solve_ivp")
        print(StudyResult.from_dataset(sub).table())
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axs = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    colors = {"exp": "C0", "cayley": "C1", "so2xr2": "C2"}
    styles = {"symmetric": "-", "plus": "--", "minus": ":"}
    for ax, system in zip(axs, STUDY_AXES["system"]):
        for ret in STUDY_AXES["retraction"]:
            for scheme in STUDY_AXES["scheme"]:
                e = ds.error.sel(system=system, retraction=ret, scheme=scheme, rule="midpoint")
                ax.loglog(ds.h, e, styles[scheme], color=colors[ret], marker="o", ms=3,
                          label=f"{ret} / {scheme}")
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_title(f"{system} (midpoint rule)")
        ax.set_xlabel("h")
        ax.grid(True, which="both", alpha=0.3)
    axs[0].set_ylabel("error at T = 4")
    axs[1].legend(fontsize=7, ncol=3, loc="lower right")
    fig.tight_layout()
    fig.savefig(args.figures / "sweep_study.png", dpi=110)
    print(f"wrote {args.figures / 'sweep_study.png'}")


def run_ensemble(args, out: Path) -> None:
    cell = functools.partial(heavy_top_ensemble_cell, n_members=args.members)
    t0 = time.perf_counter()
    ds = sweep(cell, {"retraction": ["exp", "cayley"], "h": [0.05, 0.025]}, members=args.members,
               members_per_task=args.batch, store=out / "stores" / f"ensemble-{args.members}",
               resume=args.resume, client=args.scheduler, workers=args.workers,
               attrs={"T": 10.0, "sigma": 0.05, "seed": 2026})
    steps = sum(int(round(10.0 / h)) for h in ds.h.values) * ds.sizes["retraction"] * args.members
    print(f"ensemble: {args.members} members x {ds.sizes['retraction'] * ds.sizes['h']} cells "
          f"({steps:.2e} trajectory-steps) in {time.perf_counter() - t0:.0f} s on {ds.attrs['workers']} workers, "
          f"overhead {100 * ds.attrs['overhead']:.1f} %; failed members: {int(ds.failed.sum())}; statuses: "
          + ", ".join(f"{s}: {int((ds.status == s).sum())}" for s in np.unique(ds.status.values)))
    save_dataset(ds, out / "sweep_ensemble.nc")
    med = ds.energy_error.median("member")
    q99 = ds.energy_error.quantile(0.99, "member")
    for ret in ds.retraction.values:
        for h in ds.h.values:
            print(f"  {ret:7s} h = {h:<6g} median {float(med.sel(retraction=ret, h=h)):.2e}, "
                  f"99 % {float(q99.sel(retraction=ret, h=h)):.2e}, max "
                  f"{float(ds.energy_error.sel(retraction=ret, h=h).max()):.2e}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    lo = np.log10(float(ds.energy_error.min()))
    hi = np.log10(float(ds.energy_error.max()))
    bins = np.logspace(lo - 0.05, hi + 0.05, 60)
    for i, ret in enumerate(ds.retraction.values):
        for h, ls in zip(ds.h.values, ("-", "--")):
            ax.hist(ds.energy_error.sel(retraction=ret, h=h).values, bins=bins, histtype="step", ls=ls,
                    color=f"C{i}", label=f"{ret}, h = {h:g}")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("max |E - E0| / max(1, |E0|) over T = 10")
    ax.set_ylabel("members")
    ax.set_title(f"heavy top: {args.members} perturbed initial conditions (sigma = 0.05)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.figures / "sweep_ensemble.png", dpi=110)
    print(f"wrote {args.figures / 'sweep_ensemble.png'}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--only", choices=["study", "ensemble"])
    p.add_argument("--workers", type=int, default=None, help="local workers (default: all CPUs; 0: this process)")
    p.add_argument("--scheduler", help="a scheduler address instead of a local cluster")
    p.add_argument("--members", type=int, default=10_000)
    p.add_argument("--batch", type=int, default=2500, help="members per call (one vmap batch)")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    p.add_argument("--figures", type=Path, default=ROOT / "docs" / "figures")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    args.figures.mkdir(parents=True, exist_ok=True)
    if args.only in (None, "study"):
        run_study(args, args.out)
    if args.only in (None, "ensemble"):
        run_ensemble(args, args.out)


if __name__ == "__main__":
    main()
