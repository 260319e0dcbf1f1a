"""What a short ``jax.jit(rollout)`` call of the rolling disk costs, with the buffers of its compiled program.

XLA:CPU's runtime allocates and frees one block per buffer of a compiled program at every call (a
``memalign``, in the calling thread with the library's synchronous dispatch). A reduction XLA does not
fuse into its reader keeps its combining function as a computation of its own, each of whose values is
such a buffer (three for a sum or a maximum, 26 for an ``argmax``). This script counts, for the rolling
disk's composed rollout (``kahan_li8``, ``split``), the program's buffers (XLA's buffer assignment, from
a dump of a fresh compile), those of combining functions among them (``thread-local``), its constants,
and the reductions of its lowered program; and times, side by side in alternating fresh processes (one
per version with ``--before DIR``), the minimum over interleaved rounds of

* ``2 steps`` and ``18 steps``: ``jax.jit(rollout)`` calls of 2 and 18 steps over the same time;
* ``no step``: the rollout's program inside a ``fori_loop`` run 0 times: the cost of calling the
  program, nothing of its loop;
* ``trivial``: a jitted function of the same arguments.

    python benchmarks/call_buffers.py                       # this checkout
    taskset -c 1 python benchmarks/call_buffers.py --before ../older-checkout --pairs 3

Results: ``benchmarks/results/call_buffers.md`` (``--label NAME``: ``call_buffers_NAME.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def child(rounds: int, calls: int, jacobian: str = "every") -> dict:
    """Measured in this process, on the library found on ``PYTHONPATH`` (``rounds = 0``: the counts only)."""
    import gc

    import jax
    import jax.numpy as jnp

    import manifold_dirac as md
    from machine import interleaved_min  # beside this script (sys.path[0]); no import of the library from there

    disk = md.systems.rolling_disk()
    q = jax.tree.map(jnp.asarray, disk.Q.from_coordinates([0.0, 0.0, 0.0, 0.0]))
    v = jnp.array([0.7, 1.0, 0.0, 2.0])

    def run(n):
        return lambda q, v, h: md.rollout(disk, q, v, h=h, n_steps=n, scheme="split", composition="kahan_li8",
                                          solver=md.SolverOptions(jacobian=jacobian))

    def never(q, v, h, reps):  # the 2-step program, called 0 times
        body = lambda i, acc: acc + jnp.sum(run(2)(q, v, h * (1.0 + acc)).q[0])  # noqa: E731
        return jax.lax.fori_loop(0, reps, body, 0.0)

    T = 1.8
    fs, out = {}, {}
    for n in (2, 18):
        f = jax.jit(run(n))
        h = jnp.float64(T / n)
        if n == 2:
            out["reductions"] = len(re.findall(r"stablehlo\.reduce\b", f.lower(q, v, h).as_text()))
            jax.block_until_ready(f(q, v, h))  # compiled first: the largest program dumped so far is this one
            out["buffers"] = _buffers(os.environ.get("CALL_BUFFERS_DUMP"))
            if not rounds:
                return out
        fs[f"{n} steps"] = lambda f=f, h=h: jax.block_until_ready(f(q, v, h))
    g, h2, zero = jax.jit(never), jnp.float64(T / 2), jnp.int32(0)
    fs["no step"] = lambda: jax.block_until_ready(g(q, v, h2, zero))
    triv = jax.jit(lambda q, v, h: (jax.tree.map(lambda a: a * h, q), v * h))
    fs["trivial"] = lambda: jax.block_until_ready(triv(q, v, h2))
    gc.collect()
    gc.disable()
    out["us"] = {k: 1e6 * b for k, b in interleaved_min(fs, rounds, calls).items()}
    return out


def _buffers(dump: str | None) -> dict:
    """The buffers of the largest program in XLA's dump directory ``dump``: all, of combining functions
    (``thread-local``), constants."""
    files = sorted(Path(dump).glob("*buffer-assignment.txt"), key=lambda p: p.stat().st_size) if dump else []
    heads = re.findall(r"^allocation \d+: size \d+, (.*?):", files[-1].read_text(), re.M) if files else []
    return {"all": len(heads), "thread-local": sum(h.startswith("thread-local") for h in heads),
            "constant": sum(h.startswith("constant") for h in heads)}


def run_version(tree: Path, rounds: int, calls: int, jacobian: str) -> dict:
    """One fresh process on ``tree``'s library. With ``rounds = 0`` the counts only, from an empty compilation
    cache and XLA's dump of its programs (a dump slows every call: the times are measured without it)."""
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as dump:
        env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "MANIFOLD_DIRAC_XLA_FLAGS")}
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import call_buffers, json; print('RESULT ' + "
                "json.dumps(call_buffers.child(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])))")
        env.update(PYTHONPATH=str(tree))
        if not rounds:  # the library's flag set here, with the dump (setting XLA_FLAGS switches the library's off)
            from manifold_dirac._config import XLA_FLAGS

            env.update(MANIFOLD_DIRAC_JAX_CACHE=cache, CALL_BUFFERS_DUMP=dump,
                       XLA_FLAGS=f"{XLA_FLAGS} --xla_dump_to={dump} --xla_dump_hlo_as_text "
                                 "--xla_dump_hlo_module_re=.*lambda.*")
        p = subprocess.run([sys.executable, "-c", code, str(HERE), str(rounds), str(calls), jacobian], env=env,
                           capture_output=True, text=True, cwd=tempfile.gettempdir(), timeout=900)
        line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
        if not line:
            raise RuntimeError(p.stderr[-3000:])
        return json.loads(line[-1][7:])


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from benchmarks.machine import add_version_arguments, commit, describe, load, versions

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_version_arguments(ap, "one pair, few rounds")
    ap.add_argument("--pairs", type=int, default=3, help="fresh processes per version (default: %(default)s)")
    ap.add_argument("--jacobian", default="every", help="SolverOptions(jacobian=...) (default: %(default)s)")
    ap.add_argument("--label")
    ap.add_argument("--out", type=Path, default=HERE / "results", help="the results' directory")
    args = ap.parse_args()
    rounds, calls, pairs = (3, 10, 1) if args.quick else (7, 20, args.pairs)
    vs = versions(args, ROOT)
    before = describe()
    counts = {label: run_version(Path(tree), 0, 0, args.jacobian) for label, tree in vs.items()}
    rows = []
    for i in range(pairs):
        for label, tree in vs.items():
            r = {**run_version(Path(tree), rounds, calls, args.jacobian), "buffers": counts[label]["buffers"]}
            rows.append((i + 1, label, r))
            print(i + 1, label, json.dumps(r), file=sys.stderr, flush=True)
    keys = ["2 steps", "18 steps", "no step", "trivial"]
    lines = [f"Machine: {before}; load average after: {load()}.", "",
             f"The rolling disk's composed rollout (`kahan_li8`, `split`, `jacobian={args.jacobian!r}`): its "
             "compiled 2-step program's buffers (all, of combining functions, constants), the reductions of its "
             f"lowered program, and wall time per call (µs), the minimum of {rounds} interleaved rounds of {calls} "
             "calls in each fresh process. "
             "Versions: " + ", ".join(f"{k} = `{commit(v) or v}`" for k, v in vs.items()) + ".", "",
             "| process | version | buffers (combining functions; constants) | reductions | "
             + " | ".join(keys) + " |", "|---|---|---|---|" + "---|" * len(keys)]
    for i, label, r in rows:
        b = r.get("buffers", {})
        lines.append(f"| {i} | {label} | {b.get('all')} ({b.get('thread-local')}; {b.get('constant')}) | "
                     f"{r['reductions']} | " + " | ".join(f"{r['us'][k]:.1f}" for k in keys) + " |")
    name = f"call_buffers{'_' + args.label if args.label else ''}.md"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / name).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
