"""Plots run on real short trajectories, write PNGs, and label what they show.

Ported to the compiled engine: the trajectories come from
``manifold_dirac`` (systems, ``integrate``); every assertion and
tolerance is the old one. Each system is built once per module (its compiled
step is cached with it), so the fixtures and tests share compilations.
"""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

mpl = pytest.importorskip("matplotlib")
import matplotlib.pyplot as plt

from manifold_dirac import plotting as P
from manifold_dirac import systems as S
from manifold_dirac._manifolds import SO3
from manifold_dirac._run.integrate import integrate


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def sled():
    s = S.chaplygin_sled()
    return s, integrate(s, s.Q.identity(), v0=[1.0, 1.0, 0.0], h=0.05, n_steps=80)


@pytest.fixture(scope="module")
def sled_batch():
    s = S.knife_edge()
    q0 = s.Q.from_coordinates(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.5]]))
    v0 = np.array([[1.0, 1.0, 0.0], [0.5, 1.0, 0.0]])
    return s, integrate(s, q0, v0=v0, h=0.05, n_steps=60)


@pytest.fixture(scope="module")
def body():
    s = S.free_rigid_body()
    R0 = SO3().exp(np.zeros((3, 3)))
    w0 = np.array([[1.0, 0.3, 0.3], [0.3, 0.3, 1.0], [0.6, 1.0, 0.6]])
    return s, integrate(s, R0, v0=w0, h=0.1, n_steps=300)


def legend_texts(ax):
    leg = ax.get_legend()
    assert leg is not None, "no legend"
    return [t.get_text() for t in leg.get_texts()]


def check_png(path):
    assert path.exists() and path.stat().st_size > 5000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_se2_path(sled, tmp_path):
    _, tr = sled
    fig = P.plot_se2_path(tr, heading_every=5, path=tmp_path / "se2.png")
    check_png(tmp_path / "se2.png")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "x [m]" and ax.get_ylabel() == "y [m]"
    assert "chaplygin_sled" in ax.get_title()
    assert {"path", "heading (body x-axis)", "start", "end"} <= set(legend_texts(ax))
    assert ax.get_aspect() == 1.0


@pytest.mark.slow
def test_se2_batched_paths(sled_batch, tmp_path):
    _, tr = sled_batch
    fig = P.plot_se2_path(tr, path=tmp_path / "batch.png")
    check_png(tmp_path / "batch.png")
    assert {"member 0", "member 1"} <= set(legend_texts(fig.axes[0]))


def test_so3_body_axes_and_momentum_sphere(body, tmp_path):
    _, tr = body
    fig = P.plot_so3_body_axes(tr, member=1, path=tmp_path / "axes.png")
    check_png(tmp_path / "axes.png")
    ax = fig.axes[0]
    assert ax.get_zlabel().startswith("z (space)")
    assert {"body e1 = R[:, 0]", "body e2 = R[:, 1]", "body e3 = R[:, 2]"} <= set(legend_texts(ax))
    fig = P.plot_angular_momentum_sphere(tr, path=tmp_path / "momentum.png")
    check_png(tmp_path / "momentum.png")
    ax = fig.axes[0]
    assert ax.get_xlabel().startswith("p_1/|p| (body)")
    assert {"member 0", "member 1", "member 2", "t = 0"} <= set(legend_texts(ax))


def test_body_momentum_orbits_close(body):
    """The picture is right: the body direction returns near its start (closed orbits)."""
    _, tr = body
    u = tr.p / np.linalg.norm(tr.p, axis=-1, keepdims=True)
    d = np.linalg.norm(u[1:] - u[0], axis=-1)
    assert np.all(np.max(d, axis=0) > 0.4)  # it goes round ...
    assert np.all(np.min(d[30:], axis=0) < 0.01)  # ... and comes back


def test_energy_and_constraint_panels(sled, tmp_path):
    _, tr = sled
    fig = P.plot_energy_and_constraint(tr, path=tmp_path / "energy.png")
    check_png(tmp_path / "energy.png")
    top, bottom = fig.axes
    assert top.get_yscale() == "log" and bottom.get_yscale() == "log"
    assert "|E − E₀| / |E₀|" in top.get_ylabel() and "1e-17" in top.get_ylabel()
    assert "|c(ξ)|∞" in bottom.get_ylabel()
    assert bottom.get_xlabel() == "t [s]"
    assert legend_texts(top) == ["energy error"]


def test_energy_without_constraints_has_one_panel(body):
    _, tr = body
    fig = P.plot_energy_and_constraint(tr)
    assert len(fig.axes) == 1
    assert legend_texts(fig.axes[0]) == ["member 0", "member 1", "member 2"]


def test_energy_floor_guards_log_of_zero():
    osc = S.harmonic_oscillator()
    tr = integrate(osc, np.array([0.0]), v0=np.array([0.0]), h=0.1, n_steps=5)  # E = 0 throughout
    fig = P.plot_energy_and_constraint(tr)
    ax = fig.axes[0]
    assert "[energy units]" in ax.get_ylabel()  # E0 = 0: absolute error
    y = ax.get_lines()[0].get_ydata()
    assert np.all(y == P.LOG_FLOOR)


def test_convergence(tmp_path):
    hs = np.array([0.04, 0.02, 0.01])
    fig = P.plot_convergence(hs, {"plus": 2.0 * hs, "symmetric": 0.7 * hs**2}, path=tmp_path / "conv.png")
    check_png(tmp_path / "conv.png")
    ax = fig.axes[0]
    texts = legend_texts(ax)
    assert "plus (observed order 1.00)" in texts and "symmetric (observed order 2.00)" in texts
    assert "reference O(h^1)" in texts and "reference O(h^2)" in texts
    assert ax.get_xscale() == "log" and ax.get_xlabel() == "step size h [s]"


def test_convergence_on_a_real_study(tmp_path):
    ke = S.inclined_knife_edge()
    exact = S.inclined_knife_edge_exact(1.0)
    hs = np.array([0.1, 0.05, 0.025])
    errs = [np.abs(np.asarray(ke.Q.to_coordinates(integrate(ke, ke.Q.identity(), v0=[1.0, 0, 0], h=h,
                                                             n_steps=round(1 / h)).q[-1])) - exact).max() for h in hs]
    fig = P.plot_convergence(hs, {"symmetric/midpoint": errs}, orders=[2], error_name="max |q(T) − q_exact(T)|")
    assert fig.axes[0].get_ylabel() == "max |q(T) − q_exact(T)|"


def test_work_precision(tmp_path):
    rows = [
        {"label": f"{ret} / symmetric", "h": h, "error": e * h**2, "wall_time": 0.01 / h, "n_steps": round(1 / h)}
        for ret, e in (("exp", 1.0), ("cayley", 3.0)) for h in (0.1, 0.05, 0.025)
    ]
    fig = P.plot_work_precision(rows, path=tmp_path / "wp.png")
    check_png(tmp_path / "wp.png")
    ax = fig.axes[0]
    assert set(legend_texts(ax)) == {"exp / symmetric", "cayley / symmetric"}
    assert ax.get_xlabel() == "total wall time [s]"
    assert P.plot_work_precision(rows, per_step=True).axes[0].get_xlabel() == "wall time per step [s]"


def test_plot_trajectory_dispatch(sled, body, tmp_path):
    s, tr = sled
    assert P.plot_trajectory(tr, s).axes[0].get_xlabel() == "x [m]"
    assert P.plot_trajectory(tr).axes[0].get_xlabel() == "x [m]"  # guessed from the poses
    s3, tr3 = body
    assert P.plot_trajectory(tr3, s3).axes[0].get_zlabel().startswith("z (space)")
    pend = S.double_pendulum()
    trp = integrate(pend, np.array([0.5, 0.0]), v0=np.zeros(2), h=0.05, n_steps=40)
    fig = P.plot_trajectory(trp, pend, path=tmp_path / "coords.png")
    check_png(tmp_path / "coords.png")
    assert fig.axes[0].get_xlabel() == "t [s]"
    assert len(legend_texts(fig.axes[0])) == 2


def test_invalid_inputs_raise_with_a_sentence(sled):
    _, tr = sled
    with pytest.raises(ValueError, match="SE\\(2\\) poses of shape"):
        P.plot_se2_path(np.zeros((5, 2, 2)))
    bad = np.array(tr.q)
    bad[3, 0, 2] = np.nan
    with pytest.raises(ValueError, match="non-finite"):
        P.plot_se2_path(bad)
    with pytest.raises(ValueError, match="positive and finite"):
        P.plot_convergence([0.1, 0.05], {"a": [1e-3, 0.0]})
    with pytest.raises(ValueError, match="expected 2 values"):
        P.plot_convergence([0.1, 0.05], {"a": [1e-3]})
    with pytest.raises(ValueError, match="lacks the key"):
        P.plot_work_precision([{"label": "a", "h": 0.1, "error": 1e-3}])
    with pytest.raises(ValueError, match="rotations of shape"):
        P.plot_so3_body_axes(np.zeros((4, 3)))
    with pytest.raises(ValueError, match="frame must be"):
        P.plot_angular_momentum_sphere(tr, frame="world")


# ------------------------------------------------------------------ cost: no compilation, one layout


@pytest.fixture(scope="module")
def rigid_product(body, sled):
    """Real rotations (the free rigid body's run, 301 points x 3 members) on SO(3) x R^3 and as SE(3) poses,
    the layouts of the catalog's rigid bodies whose coordinates are plotted against time; the sled's poses
    on SE(2) x R and the bodies' first axes on S^2 x R, the other manifolds with their own coordinates."""
    from types import SimpleNamespace

    from manifold_dirac import SE2, SE3, Euclidean, ProductManifold, Sphere2

    _, tr = body
    _, sl = sled
    R = np.asarray(tr.q)
    x = np.cumsum(np.ones(R.shape[:-2] + (3,)), axis=0) * 0.01
    pose = np.zeros(R.shape[:-2] + (4, 4))
    pose[..., :3, :3], pose[..., :3, 3], pose[..., 3, 3] = R, x, 1.0
    return [
        (ProductManifold(SO3(), Euclidean(3)), SimpleNamespace(t=np.asarray(tr.t), q=(R, x), meta={})),
        (SE3(), SimpleNamespace(t=np.asarray(tr.t), q=pose, meta={})),
        (ProductManifold(SE2(), Euclidean(1)),
         SimpleNamespace(t=np.asarray(sl.t), q=(np.asarray(sl.q), np.asarray(sl.t)[:, None]), meta={})),
        (ProductManifold(Sphere2(), Euclidean(1)), SimpleNamespace(t=np.asarray(tr.t), q=(R[..., 0], x[..., :1]),
                                                                    meta={})),
    ]


def test_plotting_rotations_compiles_no_xla_program(rigid_product, compiles, tmp_path):
    """Coordinates of concrete rotations are computed in NumPy: eager jax.numpy would compile a small
    program per operation and shape (about 40 per SO(3) trajectory, in every fresh process)."""
    import jax.numpy as jnp

    for Q, tr in rigid_product:
        before = compiles()
        fig = P.plot_trajectory(tr, manifold=Q, path=tmp_path / "rot.png")
        assert compiles() == before, f"{Q!r}: plotting compiled {compiles() - before} XLA programs"
        assert legend_texts(fig.axes[0]) == list(Q.coordinate_names)
    # the counter sees compilations: an eager jax.numpy operation on a shape not seen before compiles one
    before = compiles()
    jnp.sin(jnp.zeros((3, 1, 7, 11))).block_until_ready()
    assert compiles() > before


def test_host_coordinates_equal_the_traced_ones(rigid_product):
    """The NumPy path of ``to_coordinates`` gives the traced path's numbers (to round-off) on SO(3)
    (including rotations near the identity and by pi), SE(3), SE(2) and S^2; a transposed rotation gives
    other numbers."""
    import jax

    from manifold_dirac import SE3

    R = np.asarray(rigid_product[0][1].q[0]).reshape(-1, 3, 3)
    near = np.asarray(SO3().exp(np.array([[1e-9, 0.0, 2e-9], [0.0, 0.0, 0.0], [np.pi - 1e-9, 0.0, 0.0],
                                          [0.0, np.pi, 0.0], [1.0, 2.0, -0.5]])))
    R = np.concatenate([R, near])
    so3 = SO3()
    host = np.asarray(so3.to_coordinates(R))
    traced = np.asarray(jax.jit(so3.to_coordinates)(R))
    np.testing.assert_allclose(host, traced, rtol=0, atol=1e-14)
    assert np.max(np.abs(np.asarray(so3.to_coordinates(np.swapaxes(R, -1, -2))) - traced)) > 0.1
    pose = np.asarray(rigid_product[1][1].q).reshape(-1, 4, 4)
    host = np.asarray(SE3().to_coordinates(pose))
    np.testing.assert_allclose(host, np.asarray(jax.jit(SE3().to_coordinates)(pose)), rtol=0, atol=1e-14)
    np.testing.assert_array_equal(host[:, :3], pose[:, :3, 3])
    for Q, tr in rigid_product[2:]:
        factor, q = Q.factors[0], tr.q[0]
        host = np.asarray(factor.to_coordinates(q))
        np.testing.assert_allclose(host, np.asarray(jax.jit(factor.to_coordinates)(q)), rtol=0, atol=1e-14)
        assert type(factor.to_coordinates(q)) is type(jax.numpy.zeros(1))  # a jax array, as before


def test_log_axis_labels_are_plain_text(sled, tmp_path):
    """The log axes' tick labels carry the default formatter's numbers without mathtext: 10⁻⁶, not $10^{-6}$."""
    from matplotlib.ticker import LogFormatterSciNotation

    _, tr = sled
    fig = P.plot_energy_and_constraint(tr, path=tmp_path / "e.png")
    fmt = fig.axes[0].yaxis.get_major_formatter()
    assert fmt(1e-6) == "10⁻⁶" and fmt(1.0) == "10⁰" and fmt(1e12) == "10¹²"
    assert LogFormatterSciNotation()(1e-6).startswith("$")  # what the default would draw
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels()]
    assert any("10⁻" in s for s in labels) and not any("$" in s for s in labels)


def test_own_figures_are_laid_out_once_and_nothing_is_cut_off(sled, body, tmp_path):
    """A figure made here is saved at its own size (no bbox_inches='tight' pass) with every label inside;
    a figure of the caller's (ax=) is still cropped to its content."""
    from PIL import Image

    s, tr = sled
    _, trb = body
    for fig, name in ((P.plot_energy_and_constraint(tr, path=tmp_path / "e.png"), "e.png"),
                      (P.plot_trajectory(trb, path=tmp_path / "b.png"), "b.png")):
        w, h = fig.get_size_inches() * 110
        assert Image.open(tmp_path / name).size == (round(w), round(h))
        inside = fig.get_tightbbox(fig.canvas.get_renderer())  # inches
        W, H = fig.get_size_inches()
        assert inside.x0 >= 0 and inside.y0 >= 0 and inside.x1 <= W and inside.y1 <= H, (name, inside)
    user_fig, ax = plt.subplots(figsize=(8, 8))
    P.plot_se2_path(tr, ax=ax, path=tmp_path / "u.png")
    assert Image.open(tmp_path / "u.png").size != (880, 880)
