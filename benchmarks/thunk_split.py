"""When XLA:CPU hands a program's operations to another thread: the cost of a call against how many are ready at once.

Run (from the repository root)::

    PYTHONPATH=$PWD python benchmarks/thunk_split.py                 # -> benchmarks/results/thunk_split.md
    PYTHONPATH=$PWD taskset -c 1 python benchmarks/thunk_split.py --label pinned

XLA:CPU runs a program's entry computation as a graph of operations ("thunks": kernels, copies, loops).
Its executor runs them in the calling thread, except that when more of them are ready than its split
threshold (8) after it takes the next one, it hands half of the ready ones to its worker threads, and
the call waits for them. Operations all of whose buffers have at most 512 bytes, or at most 8 of
them, always run in order in the calling thread.

Timed here: ``jax.jit(lambda x: [sin(x) * c_i for i in range(k)])``, ``k`` independent operations
(one output each) all ready at the start, for ``k`` from 6 to 14, on vectors of 100 numbers (800
bytes: the graph) and of 32 (256 bytes: always in order). Wall time per call, minimum of 7
interleaved rounds of 50 calls, one process. The step from 9 to 10 ready operations on the
800-byte vectors is the hand-off; ``manifold_dirac.rollout`` keeps its entry below it
(``tests/mechanics/test_call_entry.py``, ``docs/performance.md``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


COUNTS = tuple(range(6, 15))
SIZES = (32, 100)


def measure(rounds: int = 7, calls: int = 50) -> dict[tuple[int, int], float]:
    """Wall time per call (us) of ``k`` independent operations on vectors of ``size`` numbers."""
    import jax
    import jax.numpy as jnp

    import manifold_dirac  # noqa: F401  (float64, the library's XLA flag: as a user's process)
    from benchmarks.composition import interleaved_min

    fs = {}
    for size in SIZES:
        x = jnp.ones(size)
        for k in COUNTS:
            f = jax.jit(lambda x, k=k: [jnp.sin(x) * (i + 1.5) for i in range(k)])
            jax.block_until_ready(f(x))
            fs[(size, k)] = (lambda f=f, x=x: jax.block_until_ready(f(x)))
    return {key: 1e6 * t for key, t in interleaved_min(fs, rounds, calls).items()}


def table() -> str:
    us = measure()
    lines = ["Wall time per call (us) of a jitted function with k independent operations (one output each), all "
             "ready at the start; minimum of 7 interleaved rounds of 50 calls, one process.", "",
             "| numbers per output | " + " | ".join(f"k = {k}" for k in COUNTS) + " |",
             "|---|" + "---|" * len(COUNTS)]
    for size in SIZES:
        lines.append(f"| {size} ({8 * size} bytes) | " + " | ".join(f"{us[(size, k)]:.1f}" for k in COUNTS) + " |")
    return "\n".join(lines)


def main() -> None:
    from benchmarks.composition import write_report

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", help="write thunk_split_LABEL.md")
    args = p.parse_args()
    write_report("thunk_split.md" if args.label is None else f"thunk_split_{args.label}.md", "", table)


if __name__ == "__main__":
    main()
