"""A Ctrl-C during the package's import is raised, not swallowed.

Importing JAX takes a second or more. A SIGINT that arrives then can land
inside a callback Python runs for the garbage collector (JAX registers one);
an exception raised there is *unraisable*: Python prints "Exception ignored
in ..." and goes on, so the Ctrl-C would be lost and a command started from
a shell would run to its end. :func:`kept_during_import` notes such a
swallowed ``KeyboardInterrupt`` and raises it again once the block ends.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def kept_during_import() -> Iterator[None]:
    """Within the block, a ``KeyboardInterrupt`` that Python would report as unraisable is kept;
    after the block it is raised (the previous ``sys.unraisablehook`` is restored first)."""
    swallowed: list[BaseException] = []
    previous = sys.unraisablehook

    def hook(unraisable: "sys.UnraisableHookArgs") -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            swallowed.append(unraisable.exc_value)
        else:
            previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
    if swallowed:
        raise KeyboardInterrupt("interrupted while importing manifold_dirac") from swallowed[0]
