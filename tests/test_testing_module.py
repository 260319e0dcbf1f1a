"""manifold_dirac.testing itself: registry, tolerance helper, hypothesis strategies, runner."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from manifold_dirac._manifolds import SE2, SO3, Euclidean, ProductManifold
from manifold_dirac.testing import (
    assert_close,
    check_manifold_laws,
    draw_sample,
    laws_for,
    points,
    register_manifold,
    registered_manifolds,
    samples,
    tangents,
    unregister_manifold,
)


def test_register_and_unregister():
    register_manifold("tmp-e2", lambda: Euclidean(2))
    try:
        assert registered_manifolds()["tmp-e2"]() == Euclidean(2)
        with pytest.raises(ValueError, match="'tmp-e2' is already registered; pass overwrite=True"):
            register_manifold("tmp-e2", lambda: Euclidean(2))
        register_manifold("tmp-e2", lambda: Euclidean(3), overwrite=True)
        assert registered_manifolds()["tmp-e2"]().dim == 3
    finally:
        unregister_manifold("tmp-e2")
    assert "tmp-e2" not in registered_manifolds()
    with pytest.raises(ValueError, match="unknown manifold 'tmp-e2'; valid: .*'so3-exp'"):
        unregister_manifold("tmp-e2")
    with pytest.raises(TypeError, match="factory must be callable"):
        register_manifold("bad", Euclidean(2))
    with pytest.raises(ValueError, match="non-empty name"):
        register_manifold("", lambda: Euclidean(2))


def test_registered_manifolds_is_a_copy():
    reg = registered_manifolds()
    reg.clear()
    assert registered_manifolds()


def test_assert_close_message():
    a = np.zeros((2, 3))
    b = np.zeros((2, 3))
    b[1, 2] = 1e-3
    assert_close(a, b, 0, 1e-2, "ok")
    with pytest.raises(
        AssertionError, match=r"xi: mismatch at batch index \[1\], entry \[2\]: .*\|error\| = 1\.000e-03"
    ):
        assert_close(a, b, 1e-12, 1e-12, "xi", batch_ndim=1)
    with pytest.raises(AssertionError, match="shapes differ"):
        assert_close(np.zeros(2), np.zeros(3))
    with pytest.raises(AssertionError, match="mismatch"):
        assert_close(np.array([np.nan]), np.array([0.0]))


def test_check_manifold_laws_counts_and_validates_names():
    n = check_manifold_laws(Euclidean(2), seeds=[0, 1], batch_shapes=[()], regimes=["generic"])
    assert n == 2 * len(laws_for(Euclidean(2)))
    with pytest.raises(ValueError, match=r"laws \['hat_vee'\] do not apply to Euclidean\(2\)"):
        check_manifold_laws(Euclidean(2), laws=["hat_vee"])


def test_draw_sample_is_reproducible():
    m = ProductManifold(SO3(), SE2())
    (q, xi), (q2, xi2) = draw_sample(m, 3, (2,), "near_singular"), draw_sample(m, 3, (2,), "near_singular")
    for a, b in zip(q, q2):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(xi, xi2)
    assert xi.shape == (2, 6) and xi.dtype == np.float64
    _q3, xi3 = draw_sample(m, 4, (2,), "near_singular")  # another seed, another sample
    assert np.abs(np.asarray(xi3) - np.asarray(xi)).max() > 1e-3


@settings(max_examples=5)
@given(q=points(SO3(), (2,)), xi=tangents(SE2(), (3,), "near_zero"), s=samples(Euclidean(3), (1,), "generic"))
def test_strategies_shapes(q, xi, s):
    assert q.shape == (2, 3, 3)
    SO3().check_point(q)
    assert xi.shape == (3, 3) and np.all(np.abs(xi) < 1e-6)
    assert s[0].shape == (1, 3) and s[1].shape == (1, 3)


@settings(max_examples=3)
@given(pair=samples(ProductManifold(SO3(), Euclidean(2)), (2,), "near_singular"))
def test_samples_of_a_product_are_pytrees_on_the_manifold(pair):
    q, xi = pair
    assert isinstance(q, tuple) and q[0].shape == (2, 3, 3) and q[1].shape == (2, 2)
    ProductManifold(SO3(), Euclidean(2)).check_point(q)
    assert xi.shape == (2, 5)


def test_strategies_refuse_an_unknown_regime():
    with pytest.raises(ValueError, match="unknown regime 'huge'; regimes: near_zero, generic, near_singular"):
        tangents(SO3(), (), "huge")
    with pytest.raises(ValueError, match="unknown regime 'huge'"):
        samples(SO3(), (), "huge")


# ------------------------------------------- running the laws on a user's manifold
def test_the_laws_command_runs_a_user_file_and_reports_a_failure(tmp_path, capsys):
    from manifold_dirac.testing import main

    good = tmp_path / "my_group.py"
    good.write_text(
        "from manifold_dirac import SE2\n"
        "from manifold_dirac._manifolds.se2 import SE2Exp\n\n"
        "def make():\n    return SE2('exp')\n\n"
        "class Broken(SE2):\n    pass\n\n"
        "class _Off(SE2Exp):\n"
        "    name = 'exp-off'\n"
        "    def tau_with_jacobians(self, G, xi):\n"
        "        t, Jq, Jxi = super().tau_with_jacobians(G, xi)\n"
        "        return t, Jq, 1.01 * Jxi\n\n"
        "from manifold_dirac._manifolds import register_retraction\n"
        "register_retraction(Broken)(_Off)\n"
    )
    law = ["--law", "fused_equals_composition", "--seeds", "1"]
    assert main([f"{good}:make", *law]) == 0
    assert "law checks passed" in capsys.readouterr().out
    assert main([f"{good}:Broken", "--retraction", "exp-off", *law]) == 1
    assert "fused_equals_composition" in capsys.readouterr().err
    assert main([f"{good}:nothing"]) == 2
    assert main(["no_such_module_xyz:Thing"]) == 2


def test_the_laws_command_runs_a_class_whose_constructor_has_no_retraction_argument(capsys):
    """Sphere2's first argument is ``values``, not the retraction: the command builds it with its one
    retraction instead of passing the retraction's name as ``values``."""
    from manifold_dirac.testing import main

    assert main(["manifold_dirac:Sphere2", "--seeds", "1", "--law", "retract_at_zero"]) == 0
    assert "Sphere2()" in capsys.readouterr().out
    assert main(["manifold_dirac:SO3", "--seeds", "1", "--law", "retract_at_zero"]) == 0
    out = capsys.readouterr().out
    assert "SO3(retraction='exp')" in out and "SO3(retraction='cayley')" in out


def test_a_retired_symmetry_attribute_is_refused_not_ignored():
    from manifold_dirac import SE2

    with pytest.raises(TypeError, match="symmetric_retraction.*Retraction class"):
        type("MySE2", (SE2,), {"symmetric_retraction": False})


def test_the_guide_retraction_example_runs():
    """The worked example of docs/adding-a-manifold.md ('A new retraction') executes as written."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "adding-a-manifold.md").read_text()
    block = re.search(r"<!-- guide-retraction -->\n```python\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    assert block, "the guide's retraction example is marked <!-- guide-retraction -->"
    from manifold_dirac import SE2

    try:
        exec(compile(block.group(1), "docs/adding-a-manifold.md", "exec"), {"__name__": "guide"})  # noqa: S102
    finally:
        SE2.retraction_registry().pop("so2xr2-guide", None)
