"""Chapter 5's two figures draw what they are given, legibly."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch05_saturation import plots as sp  # noqa: E402
from qkv_viz.viz import style  # noqa: E402


def test_smooth_matches_running_mean():
    v = np.arange(10.0)
    out = sp.smooth(v, 3)
    assert out[0] == 0 and out[1] == 0.5 and out[5] == pytest.approx(np.mean(v[3:6]))
    with pytest.raises(ValueError):
        sp.smooth(v, 0)


def test_distance_from_one_hot_stays_exact_near_zero():
    w = np.array([[1 - 3e-17, 1e-17, 2e-17], [0.5, 0.3, 0.2]])
    np.testing.assert_allclose(sp.distance_from_one_hot(w), [3e-17, 0.5], rtol=1e-12)   # 1 - max would give 0


def test_gradient_vs_largest_weight_scatters_each_row_log_log_with_the_saturated_band():
    weights = {"scaled": np.array([[0.5, 0.3, 0.2], [0.4, 0.4, 0.2]]),
               "unscaled": np.array([[1.0, 0.0, 0.0], [0.999, 0.001, 0.0]])}
    norms = {"scaled": np.array([0.3, 0.2]), "unscaled": np.array([0.0, 1e-3])}
    points = sp.gradient_vs_largest_weight(weights, norms, floor=1e-20)
    ax = points[0].axes
    np.testing.assert_allclose(points[0].get_offsets(), [[0.5, 0.3], [0.6, 0.2]])
    np.testing.assert_allclose(points[1].get_offsets(), [[1e-20, 1e-20], [1e-3, 1e-3]])   # exact zeros at the floor
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and ax.get_xlim()[1] == 1
    band = [p for p in ax.patches]
    assert len(band) == 1 and band[0].get_x() + band[0].get_width() == pytest.approx(0.01)   # largest weight > 0.99
    assert [tuple(p.get_facecolor()[0][:3]) for p in points] == [matplotlib.colors.to_rgb(sp.COLORS[n])
                                                                 for n in ("scaled", "unscaled")]
    with pytest.raises(ValueError, match="norms"):
        sp.gradient_vs_largest_weight(weights, {"scaled": np.ones(3), "unscaled": np.ones(2)})
    plt.close("all")


def test_learning_curves_and_a_correct_chance_line():
    acc = {"scaled": np.linspace(0, 1, 30), "unscaled": np.zeros(30)}
    lines = sp.learning_curves(acc, chance=1 / 16, window=5)
    np.testing.assert_allclose(lines[0].get_ydata(), sp.smooth(acc["scaled"], 5))
    chance = lines[-1]
    assert chance.get_ydata()[0] == pytest.approx(1 / 16) and chance.get_label() == "chance (1 key in 16)"
    target = lines[-2]                                                 # the 90 % the text counts steps to
    assert target.get_ydata()[0] == pytest.approx(0.9) and target.get_label() == "90 % (steps counted to here)"
    assert len(sp.learning_curves(acc, chance=1 / 16, target=None)) == 3   # no target line when asked
    other = sp.learning_curves(acc, chance=1 / 16, target=None, ylabel="own-key weight", legend=False)
    assert other[0].axes.get_ylabel() == "own-key weight" and other[0].axes.get_legend() is None
    fig = chance.axes.figure
    assert fig.get_size_inches()[0] <= style.COLUMN_WIDTH
    fig.canvas.draw()
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text()]
    assert min(sizes) >= style.MIN_FONT_PT
    plt.close("all")


def test_weight_rows_one_panel_per_row():
    rows = {"scaled": np.full(4, 0.25), "unscaled": np.array([0.0, 1.0, 0.0, 0.0])}
    bars = sp.weight_rows(rows)
    assert [b.patches[1].get_height() for b in bars] == [0.25, 1.0]
    axes = [b.patches[0].axes for b in bars]
    assert [ax.get_title() for ax in axes] == ["scaled", "unscaled"] and axes[0].get_ylim() == (0, 1)
    fig = axes[0].figure
    fig.canvas.draw()
    assert min(t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text()) >= style.MIN_FONT_PT
    with pytest.raises(ValueError, match="one axis per row"):
        sp.weight_rows(rows, axes=[axes[0]])
    plt.close("all")


def test_learning_curves_band_over_seeds():
    acc = {"scaled": np.stack([np.linspace(0, 1, 30), np.linspace(0, 0.5, 30)])}
    lines = sp.learning_curves(acc, chance=1 / 16, window=10)
    ax = lines[0].axes
    want = (sp.smooth(acc["scaled"][0], 10) + sp.smooth(acc["scaled"][1], 10)) / 2
    np.testing.assert_allclose(lines[0].get_ydata(), want)
    assert len(ax.collections) == 1                                   # the band between the seeds
    plt.close("all")


def test_weights_over_training_grid_and_labelled_colorbar():
    snaps = {"scaled": np.full((3, 4, 4), 0.25), "unscaled": np.stack([np.eye(4)] * 3)}
    images = sp.weights_over_training(snaps, (0, 5, 9))
    assert len(images) == 6
    np.testing.assert_allclose(images[3].get_array(), np.eye(4))
    assert images[3].axes.get_title() == "unscaled, step 0" and images[0].get_clim() == (0, 1)
    fig = images[0].axes.figure
    assert any(ax.get_ylabel() == "weights" for ax in fig.axes)
    assert list(images[0].axes.get_xticks()) == [0] and images[0].axes.get_ylabel() == "query (token)"
    fig.canvas.draw()
    assert min(t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text()) >= style.MIN_FONT_PT
    with pytest.raises(ValueError, match="snaps"):
        sp.weights_over_training({"scaled": np.zeros((2, 4, 4))}, (0, 5, 9))
    plt.close("all")


def test_the_four_runs_have_four_colours():
    acc = {name: np.zeros(20) for name in ("scaled", "unscaled", "small start", "lr / 4")}
    lines = sp.learning_curves(acc, chance=1 / 16)
    assert len({ln.get_color() for ln in lines[:4]}) == 4
    plt.close("all")


def test_weights_over_training_uses_the_books_weights_colormap_and_distinct_run_colours():
    snaps = {"scaled": np.full((2, 4, 4), 0.25), "unscaled": np.tile(np.eye(4), (2, 1, 1))}
    images = sp.weights_over_training(snaps, (0, 9))
    assert len(images) == 4 and all(im.get_cmap().name == style.WEIGHTS_CMAP for im in images)
    assert images[0].axes.get_title() == "scaled, step 0"
    with pytest.raises(ValueError, match="snaps"):
        sp.weights_over_training({"scaled": np.zeros((3, 4, 4))}, (0, 9))
    runs = ("scaled", "unscaled", "small start", "lr / 4", "divided twice")
    assert len({sp._color(name, i) for i, name in enumerate(runs)}) == len(runs)
    plt.close("all")



def test_divided_twice_stands_out_from_scaled():
    """The two nearly overlapping curves (page, learning curves) differ in colour family and line style."""
    from matplotlib.colors import rgb_to_hsv, to_rgb
    lines = sp.learning_curves({"scaled": np.zeros(20), "divided twice": np.zeros(20)}, chance=1 / 16)
    h1, h2 = (rgb_to_hsv(to_rgb(ln.get_color()))[0] for ln in lines[:2])
    assert abs(h1 - h2) > 0.05                                          # another hue, not a lighter blue
    assert lines[0].get_linestyle() != lines[1].get_linestyle()
    plt.close("all")
