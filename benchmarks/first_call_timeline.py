"""When each phase of a bundled system's first ``integrate`` call happens, and in which thread.

``python benchmarks/first_call_timeline.py NAME`` (with ``MANIFOLD_DIRAC_JAX_CACHE`` pointing at an
empty directory for a cold call) imports the library found on ``PYTHONPATH``, builds the bundled
system ``NAME`` with its default retraction, initial data and ``h``, runs one 2000-step
``integrate`` call and prints JAX's compile events of that call longer than 20 ms (tracing,
lowering to MLIR, XLA's backend compile, a cache load) with their start and end in seconds from
the call's start and the thread that ran them: which phases are on the call's critical path
(``docs/performance.md``, "Every bundled system"). On two CPUs the loop compiles in a background
thread while the main thread traces, compiles and runs the start.
"""

from __future__ import annotations

import sys
import threading
import time

from jax import monitoring

import manifold_dirac as md


def main() -> None:
    name = sys.argv[1]
    events = []
    monitoring.register_event_duration_secs_listener(
        lambda event, duration, **kw: events.append((time.perf_counter(), duration, event,
                                                     threading.current_thread().name)))
    ex = md.get_example(name)
    system = ex.system()
    q0, v0 = ex.initial(system)
    t0 = time.perf_counter()
    md.integrate(system, q0, v0=v0, h=ex.h, n_steps=2000)
    print(f"{name}: first call {time.perf_counter() - t0:.2f} s")
    for end, duration, event, thread in events:
        if duration > 0.02:
            print(f"{end - duration - t0:6.2f} -> {end - t0:6.2f} s  ({duration:5.2f} s)  {thread[:24]:24s} {event}")


if __name__ == "__main__":
    main()
