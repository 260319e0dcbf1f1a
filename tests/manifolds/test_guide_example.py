"""The worked example of docs/adding-a-manifold.md, verbatim, and its checks.

Everything between the BEGIN/END markers is the guide's code block,
character for character (``test_guide_code_is_verbatim`` keeps them in
sync). Importing this module registers the Heisenberg group, so the shared
parametrization in test_manifold_laws.py picks it up when collected after
this file.
"""

# fmt: off
# ----- BEGIN GUIDE CODE -----
import numpy as np

from manifold_dirac.manifolds import MatrixLieGroup
from manifold_dirac.testing import check_manifold_laws, register_manifold


class Heisenberg(MatrixLieGroup):
    """The Heisenberg group H(3): upper unitriangular 3x3 matrices.

    A point is ``[[1, a, c], [0, 1, b], [0, 0, 1]]``, shape ``(*batch, 3, 3)``;
    a tangent vector ``(x, y, z)``, shape ``(*batch, 3)``, stands for the body
    velocity ``q hat(x, y, z)`` with ``hat = [[0, x, z], [0, 0, y], [0, 0, 0]]``.
    The algebra is nilpotent (``hat^3 = 0``, ``ad^2 = 0``), so every series
    terminates: exp, log and both Jacobians are exact polynomials, defined
    on the whole group.
    """

    dim = 3
    matrix_size = 3
    coordinate_names = ("a", "b", "c")

    def hat(self, xi):
        xi = np.asarray(xi)
        x, y, z = xi[..., 0], xi[..., 1], xi[..., 2]
        o = np.zeros_like(x)
        return np.stack([np.stack([o, x, z], -1), np.stack([o, o, y], -1), np.stack([o, o, o], -1)], -2)

    def vee(self, X):
        X = np.asarray(X)
        return np.stack([X[..., 0, 1], X[..., 1, 2], X[..., 0, 2]], -1)

    def exp(self, xi):
        X = self.hat(xi)
        return np.eye(3) + X + 0.5 * (X @ X)

    def log(self, g):
        N = np.asarray(g) - np.eye(3)
        return self.vee(N - 0.5 * (N @ N))

    def exp_right_jacobian(self, xi):
        # J_r = sum_k (-ad_xi)^k / (k+1)! = I - ad_xi / 2, as ad_xi^2 = 0
        return np.eye(3) - 0.5 * self.ad(xi)

    def exp_right_jacobian_inv(self, xi):
        return np.eye(3) + 0.5 * self.ad(xi)

    def inverse(self, g):
        N = np.asarray(g) - np.eye(3)
        return np.eye(3) - N + N @ N

    def random_point(self, rng, batch_shape=()):
        return self.exp(rng.standard_normal((*batch_shape, 3)))

    def check_point(self, q, atol=1e-9, name="q"):
        a = self._as_matrix_array(q, 3, name, "Heisenberg")  # shape and NaN checks
        free = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0]], dtype=bool)
        err = np.max(np.abs(np.where(free, 0.0, a - np.eye(3))), axis=(-2, -1))
        if np.any(err > atol):
            idx = np.argwhere(err > atol)[0].tolist() if err.ndim else []
            raise ValueError(
                f"{name}: not upper unitriangular at batch index {idx}: "
                f"off by {np.max(err):.3e} > atol = {atol:.1e}"
            )
        return a

    def to_coordinates(self, q):
        q = np.asarray(q)
        return np.stack([q[..., 0, 1], q[..., 1, 2], q[..., 0, 2]], -1)

    def from_coordinates(self, c):
        return np.eye(3) + self.hat(np.asarray(c, dtype=float))  # hat puts (a, b, c) in place


register_manifold("heisenberg-exp", lambda: Heisenberg("exp"))
register_manifold("heisenberg-cayley", lambda: Heisenberg("cayley"))

if __name__ == "__main__":
    for retraction in Heisenberg.retractions:
        n = check_manifold_laws(Heisenberg(retraction))
        print(f"Heisenberg({retraction!r}): {n} law checks passed")
# ----- END GUIDE CODE -----
# fmt: on

import pathlib

import pytest

from manifold_dirac.testing import registered_manifolds

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "adding-a-manifold.md"


def _guide_block() -> str:
    text = GUIDE.read_text()
    start = text.index("```python\n", text.index("<!-- guide-code -->")) + len("```python\n")
    return text[start : text.index("```", start)]


def test_guide_code_is_verbatim():
    src = pathlib.Path(__file__).read_text()
    code = src[src.index("# ----- BEGIN GUIDE CODE -----\n") + 31 : src.index("# ----- END GUIDE CODE -----")]
    assert _guide_block() == code


@pytest.mark.parametrize("retraction", Heisenberg.retractions)
def test_guide_example_passes_the_shared_laws(retraction):
    assert check_manifold_laws(Heisenberg(retraction)) == 765


def test_guide_example_is_registered():
    assert {"heisenberg-exp", "heisenberg-cayley"} <= set(registered_manifolds())


def test_guide_example_check_point_message():
    q = np.eye(3)
    q[1, 0] = 0.25
    with pytest.raises(ValueError, match=r"not upper unitriangular at batch index \[\]: off by 2\.500e-01"):
        Heisenberg().check_point(q)


def test_guide_example_human_coordinates_round_trip():
    c = np.random.default_rng(0).standard_normal((4, 3))
    H = Heisenberg()
    np.testing.assert_array_equal(H.to_coordinates(H.from_coordinates(c)), c)
