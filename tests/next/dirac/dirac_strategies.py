"""Shared hypothesis strategies and helpers for the Dirac-structure tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st


@dataclass(frozen=True)
class TwoSystems:
    """Two constrained subsystems and an interaction, at one point."""

    n1: int
    n2: int
    A1: np.ndarray  # (m1, n1)
    A2: np.ndarray  # (m2, n2)
    S: np.ndarray  # (r, n1 + n2)
    rng: np.random.Generator

    @property
    def n(self) -> int:
        return self.n1 + self.n2


@st.composite
def two_systems(draw: st.DrawFn, *, max_dim: int = 4, regular: bool = False) -> TwoSystems:
    """Random dimensions ``n_i in [1, max_dim]``, random (a.s. full-rank) ``A1, A2, S``.

    With ``regular=True`` the declared forms are independent
    (``m1 + m2 + r <= n1 + n2``).
    """
    n1 = draw(st.integers(1, max_dim))
    n2 = draw(st.integers(1, max_dim))
    m1 = draw(st.integers(0, n1))
    m2 = draw(st.integers(0, n2))
    r_max = n1 + n2 - m1 - m2 if regular else n1 + n2
    r = draw(st.integers(0, r_max))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    # Redraw (deterministically in the seed) until every matrix, and the
    # stacked forms of (31), are well conditioned: the interconnected
    # structure depends on the data with condition number ~ cond([A; S])^2
    # (see docs/dirac.md, "Tolerances"), and a nearly dependent set of forms
    # is tested separately, with a tolerance to match.
    while True:
        a1 = rng.standard_normal((m1, n1))
        a2 = rng.standard_normal((m2, n2))
        s = rng.standard_normal((r, n1 + n2))
        stacked = np.vstack([np.pad(a1, ((0, 0), (0, n2))), np.pad(a2, ((0, 0), (n1, 0))), s])
        if all(condition(x) <= MAX_CONDITION for x in (a1, a2, s, stacked)):
            break
    return TwoSystems(n1=n1, n2=n2, A1=a1, A2=a2, S=s, rng=rng)


MAX_CONDITION = 1e3
"""Largest condition number of the random forms drawn by :func:`two_systems`."""


def condition(a: np.ndarray) -> float:
    """Ratio of the largest to the smallest of the ``min(rows, cols)`` singular values."""
    if min(a.shape) == 0:
        return 1.0
    sv = np.linalg.svd(a, compute_uv=False)
    return float(sv[0] / sv[-1]) if sv[-1] > 0 else np.inf


@st.composite
def forms(draw: st.DrawFn, *, max_dim: int = 6) -> tuple[np.ndarray, np.random.Generator]:
    """A random ``(m, n)`` matrix of one-forms, ``0 <= m <= n``, and a generator."""
    n = draw(st.integers(1, max_dim))
    m = draw(st.integers(0, n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng.standard_normal((m, n)), rng


def random_kernel_vector(A: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random vector of ``ker A``."""
    _, s, vt = np.linalg.svd(A, full_matrices=True) if A.shape[0] else (None, np.zeros(0), np.eye(A.shape[1]))
    r = int(np.sum(s > 1e-10 * (s[0] if s.size else 1.0)))
    e = vt[r:].T
    return e @ rng.standard_normal(e.shape[1])
