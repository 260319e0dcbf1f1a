"""What the library's XLA flag does to other JAX programs, and which threshold the library needs.

``python benchmarks/xla_flag.py [--part user|threshold|both]``

* ``user``: two large JAX programs that have nothing to do with the library
  -- a jitted MLP training step (4 layers of 512, batch 512, float32, Adam-free
  SGD) and a long ``lax.scan`` ODE (RK4, 10 000 steps of a 256-dimensional
  nonlinear system) -- each timed (compile, and the minimum run time over
  ``--repeat`` calls) in fresh processes **with** ``XLA_FLAGS`` set to the
  library's :data:`manifold_dirac._config.XLA_FLAGS` and **without** it,
  alternating ``--rounds`` times (the minimum over the rounds is reported).
  What the flag changes -- XLA:CPU's byte threshold under which a ``while``
  loop is compiled into the kernel around it -- applies to every program
  of the process, not only to the library's.
* ``threshold``: the heavy top at ``B = 4096`` (trajectory-steps per second,
  and the first call) in fresh processes with the threshold at XLA's default
  (no flag) and at several values.

Prints the machine's load (``os.getloadavg``) before and after; ``--out``
writes the table as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_USER_PROGRAMS = """
import json, sys, time
import jax, jax.numpy as jnp
import numpy as np
repeat = int(sys.argv[1])
out = {}

def timed(label, fn, *args):
    t = time.perf_counter()
    comp = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t
    jax.block_until_ready(comp(*args))
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        jax.block_until_ready(comp(*args))
        best = min(best, time.perf_counter() - t)
    out[label] = {"compile_s": compile_s, "run_s": best}

# an MLP training step: 4 dense layers of 512, batch 512, float32, plain SGD
key = jax.random.PRNGKey(0)
sizes = [256, 512, 512, 512, 10]
params = [(jax.random.normal(k, (a, b), jnp.float32) / np.sqrt(a), jnp.zeros(b, jnp.float32))
          for k, a, b in zip(jax.random.split(key, len(sizes) - 1), sizes[:-1], sizes[1:])]
x = jax.random.normal(key, (512, 256), jnp.float32)
y = jax.random.randint(key, (512,), 0, 10)

def loss(ps, x, y):
    h = x
    for w, b in ps[:-1]:
        h = jax.nn.gelu(h @ w + b)
    logits = h @ ps[-1][0] + ps[-1][1]
    return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(y.shape[0]), y])

def train(ps, x, y):  # 20 SGD steps in a loop (a training epoch's inner loop)
    def one(ps, _):
        g = jax.grad(loss)(ps, x, y)
        return jax.tree.map(lambda p, d: p - 1e-2 * d, ps, g), None
    return jax.lax.scan(one, ps, None, length=20)[0]

timed("mlp_train_20_steps", train, params, x, y)

# a long ODE: RK4 on a 256-dimensional nonlinear system, 10 000 steps in lax.scan
n = 256
A = jax.random.normal(key, (n, n), jnp.float64 if jax.config.jax_enable_x64 else jnp.float32) / np.sqrt(n)

def f(u):
    return jnp.tanh(A @ u) - 0.1 * u

def ode(u0):
    h = 1e-2
    def step(u, _):
        k1 = f(u); k2 = f(u + 0.5 * h * k1); k3 = f(u + 0.5 * h * k2); k4 = f(u + h * k3)
        return u + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4), None
    return jax.lax.scan(step, u0, None, length=10_000)[0]

timed("ode_rk4_10000_steps", ode, jnp.ones(n, A.dtype))

# a small-state loop: the case the flag is for (a scalar Newton-like iteration in a long scan)
def small(u0):
    def step(u, _):
        v = jax.lax.while_loop(lambda c: c[1] < 5, lambda c: (c[0] - (c[0] ** 3 - u) / (3 * c[0] ** 2), c[1] + 1),
                               (u, 0))[0]
        return u + 1e-3 * jnp.sin(v), None
    return jax.lax.scan(step, u0, None, length=100_000)[0]

timed("small_while_in_scan_100000_steps", small, jnp.float32(1.5))
print(json.dumps(out))
"""

_HEAVY_TOP_BATCH = """
import json, sys, time
import numpy as np
sys.path.insert(0, {root!r})
import manifold_dirac as md
from benchmarks.cases import CASES, batch_initial, system
B, n, repeat = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
c, sysm = CASES["heavy_top"], system("heavy_top")
q0, v0 = batch_initial("heavy_top", B, np.random.default_rng(0))
t = time.perf_counter()
md.integrate(sysm, q0, v0=v0, h=c.h, n_steps=n, stride=10)
first = time.perf_counter() - t
best = float("inf")
for _ in range(repeat):
    t = time.perf_counter()
    md.integrate(sysm, q0, v0=v0, h=c.h, n_steps=n, stride=10)
    best = min(best, time.perf_counter() - t)
print(json.dumps({{"first_call_s": first, "traj_steps_per_s": B * n / best}}))
"""


def _child(code: str, args: list, xla_flags: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["MANIFOLD_DIRAC_JAX_CACHE"] = "0"
    if xla_flags is None:
        env["MANIFOLD_DIRAC_XLA_FLAGS"] = "0"  # the library leaves XLA_FLAGS unset
    else:
        env["XLA_FLAGS"] = xla_flags
    res = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                         timeout=3600)
    if res.returncode:
        raise RuntimeError(res.stderr[-3000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("user", "threshold", "both"), default="both")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from benchmarks.kernel import finish, machine
    from manifold_dirac._config import XLA_FLAGS

    rows: dict = {**machine(), "flag": XLA_FLAGS}
    if a.part in ("user", "both"):
        best: dict = {}
        for _ in range(a.rounds):
            for label, flags in (("without", None), ("with", XLA_FLAGS)):
                for prog, r in _child(textwrap.dedent(_USER_PROGRAMS), [a.repeat], flags).items():
                    b = best.setdefault(prog, {}).setdefault(label, {"compile_s": float("inf"), "run_s": float("inf")})
                    b["compile_s"], b["run_s"] = min(b["compile_s"], r["compile_s"]), min(b["run_s"], r["run_s"])
        rows["user"] = best
        for prog, r in best.items():
            print(f"{prog:34s}: run {1e3 * r['without']['run_s']:9.2f} ms without / {1e3 * r['with']['run_s']:9.2f} "
                  f"ms with the flag (x{r['with']['run_s'] / r['without']['run_s']:.2f}); compile "
                  f"{r['without']['compile_s']:.2f} / {r['with']['compile_s']:.2f} s", flush=True)
    if a.part in ("threshold", "both"):
        code = _HEAVY_TOP_BATCH.format(root=str(ROOT))
        rows["threshold"] = {}
        for label, value in (("XLA default (no flag)", None), ("1 MiB", 1 << 20), ("16 MiB (library)", 1 << 24),
                             ("256 MiB", 1 << 28)):
            flags = None if value is None else \
                f"--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold={value}"
            r = _child(code, [a.batch, a.n, a.repeat], flags)
            rows["threshold"][label] = r
            print(f"heavy top B={a.batch}, threshold {label:22s}: {r['traj_steps_per_s'] / 1e3:8.0f} k traj-steps/s; "
                  f"first call {r['first_call_s']:.1f} s", flush=True)
    return finish(rows, a.out)


if __name__ == "__main__":
    raise SystemExit(main())
