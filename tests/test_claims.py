"""Every measured number of the documentation names the script that regenerates it.

``tools/claims.py`` reads the comment markers ``<!-- from: benchmarks/x.py -->``
of ``README.md`` and ``docs/``: each named script must exist, and every line
with a timing claim (a duration in µs or ms, a ratio such as ``3×``, seconds
on a line about cost, minutes) or an accuracy claim (an error size such as
``1.6e-3``, a measured order or slope such as ``3.97``) must stand in a section
that carries a marker.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# pages whose measurements are being redone with their benchmarks; each leaves this set with its markers
PENDING: set[str] = set()


@pytest.fixture(scope="module")
def claims():
    spec = importlib.util.spec_from_file_location("claims", ROOT / "tools" / "claims.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclass looks its module up
    spec.loader.exec_module(mod)
    return mod


def _pages(claims):
    return [(str(p.relative_to(ROOT)), claims.audit(p)) for p in claims.pages()]


def test_every_marked_script_exists(claims):
    missing = {name: page.missing for name, page in _pages(claims) if page.missing}
    assert not missing


def test_every_measured_claim_has_a_source(claims):
    uncovered = {
        name: page.uncovered for name, page in _pages(claims) if page.uncovered and name not in PENDING
    }
    assert not uncovered


def test_the_detector_sees_claims_and_markers(claims, tmp_path):
    """A timing claim without a marker is reported; the same with a marker in its section is not."""
    assert claims.is_timing_claim("a step costs 12 µs of CPU")
    assert claims.is_timing_claim("gauss4 costs 3–5× midpoint")
    assert claims.is_timing_claim("144 cells in 17 minutes")
    assert claims.is_timing_claim("378 law checks passed (5.0 s)")
    assert claims.is_timing_claim("compiles in 4.6 s of CPU")
    assert not claims.is_timing_claim("the error at T = 10 s is 1e-6")
    page = tmp_path / "page.md"
    page.write_text(
        "# A\n\nThe step costs 12 µs.\n\n# B\n\n<!-- from: tools/claims.py -->\nIt costs 3× less.\n"
    )
    result = claims.audit(page)
    assert [i for i, _ in result.uncovered] == [3] and not result.missing
    page.write_text("# A\n<!-- from: tools/no_such_script.py -->\nThe step costs 12 µs.\n")
    assert claims.audit(page).missing == ["tools/no_such_script.py"]


@pytest.mark.parametrize(
    "line",
    [
        "a 100x smaller `exp` error (1.6e-3 instead of 0.15 at $h = 0.02$)",
        "(slope 1.86) against the split one",
        "observed order 3.97 on the pendulum",
        "| heavy top | 4.00 (errors 1.6e-5, 1.0e-6, 6.3e-8) |",
        "$\\sigma_{\\min} = 1.3\\cdot 10^{-4}$ there",
        "energy error 6 × 10⁻⁴ after T = 100",
        "errors of 0.47 and 1.1",
    ],
)
def test_the_detector_sees_accuracy_claims(claims, line):
    assert claims.is_accuracy_claim(line)


@pytest.mark.parametrize(
    "line",
    [
        "at `h = 0.05` over T = 10 with rtol 1e-12",  # parameters of an example
        "a tolerance of `1e-9` relative",  # a code literal: a default or a threshold
        "$|g(q_0)| \\le 10^{-9}\\,(1 + |dg(q_0)|)$",  # a bound stated as a requirement
        "finite, at least 1.5e-154 (below, h^2 underflows)",
        "the discrete Euler-Lagrange equations (3.12) of the paper, eq. 4.7",  # equation numbers
        "needs jax 0.10; version 0.2.0 changed the order 2 default",  # versions; an integer order is theory
        "for accuracies below $10^{-6}$ a composition",  # a bare power of ten: an accuracy level, not a result
    ],
)
def test_what_is_not_a_measurement(claims, line):
    assert not claims.is_accuracy_claim(line)


def test_an_accuracy_claim_needs_a_marker(claims, tmp_path):
    """An error size without a marker in its section is reported; with a marker it is not."""
    page = tmp_path / "page.md"
    page.write_text("# A\n\nThe error is 1.6e-3.\n\n# B\n\n<!-- from: tools/claims.py -->\nSlope 1.98.\n")
    assert [i for i, _ in claims.audit(page).uncovered] == [3]


def test_a_claim_inside_python_code_is_not_prose(claims, tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A\n\n```python\nprint('12 µs')\n```\n\n```text\nok (5.0 s)\n```\n")
    assert [i for i, _ in claims.audit(page).uncovered] == [8]


def test_the_readme_slip_numbers():
    """The README's slip of the inclined skate: 1.3e-3 / 3.1e-4 (symmetric), 5.1e-2 / 2.5e-2 (plus)."""
    import jax.numpy as jnp
    import numpy as np

    import manifold_dirac as md

    skate = md.LagrangeDiracSystem(
        md.Euclidean(3),
        lambda q, v: 0.5 * (v[0] ** 2 + v[1] ** 2) + 0.25 * v[2] ** 2 + 2.0 * q[0],
        constraint=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]),
    )
    quoted = {
        ("symmetric", 0.05): 1.3e-3,
        ("symmetric", 0.025): 3.1e-4,
        ("plus", 0.05): 5.1e-2,
        ("plus", 0.025): 2.5e-2,
    }
    for (scheme, h), value in quoted.items():
        tr = md.integrate(skate, np.zeros(3), v0=np.array([0.0, 0.0, 1.0]), h=h, t_final=10.0, scheme=scheme)
        assert abs(tr.slip.max() - value) < 0.05 * value, (scheme, h, tr.slip.max())
