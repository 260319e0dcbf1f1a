"""One long pendulum run in a fresh interpreter; prints its peak RSS as JSON.

``python benchmarks/memory_child.py N STRIDE`` integrates the pendulum for
``N`` steps storing every ``STRIDE``-th point (``STRIDE = 0``: only start the
interpreter and import, the baseline that is subtracted) and prints
``{"steps", "stride", "stored", "maxrss_kb", "wall"}``; peak RSS from
``resource.getrusage`` (the same number ``/usr/bin/time -v`` reports as
"Maximum resident set size").
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np

from manifold_dirac import integrate
from manifold_dirac.systems import pendulum


def main(argv: list[str]) -> None:
    n, stride = int(argv[0]), int(argv[1])
    t = time.perf_counter()
    stored = 0
    if stride > 0:
        traj = integrate(pendulum(), np.array([1.0]), v0=np.array([0.0]), h=0.01, n_steps=n, stride=stride)
        stored = len(traj.t)
    wall = time.perf_counter() - t
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"steps": n, "stride": stride, "stored": stored, "maxrss_kb": rss, "wall": wall}))


if __name__ == "__main__":
    main(sys.argv[1:])
