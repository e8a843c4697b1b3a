"""The figure measure of benchmarks/bench_figures.py on synthetic figures: it must be able to fail."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.viz import plots, style  # noqa: E402


def _plain_heatmap(figsize=(4, 3)):
    fig, ax = plt.subplots(figsize=figsize, dpi=100)
    im = ax.imshow(np.random.default_rng(0).random((5, 5)), vmin=0, vmax=1)
    ax.set_title("no bar")
    return fig, ax, im


def test_a_heatmap_without_bar_or_numbers_is_unlabelled(bench):
    fig, _, _ = _plain_heatmap()
    r = bench.inspect_figure(fig)
    assert r["heatmaps"] == 1 and r["unlabelled"] == ["no bar"]


def test_a_colour_bar_labels_it(bench):
    fig, ax, im = _plain_heatmap()
    fig.colorbar(im, ax=ax)
    r = bench.inspect_figure(fig)
    assert r["heatmaps"] == 1 and r["unlabelled"] == []  # the bar's own QuadMesh is not a heatmap


def test_numbers_in_the_cells_label_it(bench):
    fig, ax, _ = _plain_heatmap()
    for i in range(5):
        for j in range(5):
            ax.text(j, i, "0.1", ha="center", va="center", fontsize=9)
    assert bench.inspect_figure(fig)["unlabelled"] == []


def test_a_shared_bar_labels_every_panel_but_not_a_different_range(bench):
    fig, axes = plt.subplots(1, 3, figsize=(8, 3), dpi=100)
    ims = [ax.imshow(np.eye(4), vmin=0, vmax=1) for ax in axes[:2]]
    axes[2].imshow(np.eye(4) * 5, vmin=-5, vmax=5, cmap="RdBu_r")
    axes[2].set_title("scores")
    fig.colorbar(ims[0], ax=list(axes[:2]))
    r = bench.inspect_figure(fig)
    assert r["heatmaps"] == 3 and r["unlabelled"] == ["scores"]


def test_rgb_pictures_and_line_plots_are_not_heatmaps(bench):
    fig, (a, b) = plt.subplots(1, 2, dpi=100)
    a.imshow(np.zeros((4, 4, 3)))
    b.plot([0, 1], [1, 0])
    assert bench.inspect_figure(fig)["heatmaps"] == 0


def test_a_6_pt_label_is_found(bench):
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("tiny", fontsize=6)
    r = bench.inspect_figure(fig)
    assert r["smallest_pt"] == pytest.approx(6.0)
    assert r["smallest_text"] == "tiny" and (6.0, "tiny") in r["small_texts"]


def test_hidden_and_empty_texts_do_not_count(bench):
    fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("hidden", fontsize=5).set_visible(False)
    ax.set_title("", fontsize=4)
    ax.tick_params(labelsize=9)
    assert bench.inspect_figure(fig)["smallest_pt"] == pytest.approx(9.0)


def test_an_oversize_figure_is_scaled_down_with_its_text(bench):
    fig, ax = plt.subplots(figsize=(18, 3), dpi=100)  # ~1800 px: the browser shows it at ~half size
    ax.plot([0, 1], [0, 1])
    ax.tick_params(labelsize=10)
    ax.set_xlabel("x", fontsize=10)
    r = bench.inspect_figure(fig)
    assert r["width_px"] > style.COLUMN_PX
    expected = 10 * style.COLUMN_PX / r["width_px"]
    assert r["scale"] == pytest.approx(style.COLUMN_PX / r["width_px"], abs=1e-3)
    assert r["smallest_pt"] == pytest.approx(expected, abs=0.02) and r["smallest_pt"] < style.MIN_FONT_PT
    assert any("px wide" in p for p in bench._problems(r))


def test_the_book_plots_pass_the_measure(bench):
    tokens = "The animal didn 't cross the street because it was too tired".split()
    w = np.random.default_rng(1).dirichlet(np.ones(12), size=(12, 12))  # (H, T, S), rows sum to 1
    figures = [plots.head_grid(w, tokens_q=tokens, tokens_k=tokens)[0].figure,
               plots.attention_heatmap(w[0, :4, :4], tokens_q=tokens[:4], tokens_k=tokens[:4]).figure,
               plots.scores_heatmap(np.log(w[1]), tokens_q=tokens, tokens_k=tokens).figure,
               plots.head_grid(w[:3, :4, :4])[0].figure]
    for fig in figures:
        r = bench.inspect_figure(fig)
        assert r["unlabelled"] == [] and r["heatmaps"] >= 1
        assert r["smallest_pt"] >= style.MIN_FONT_PT, r["small_texts"]
        assert r["width_px"] <= style.COLUMN_PX


def test_heatmaps_without_axis_titles_are_found(bench):
    fig, _, _ = _plain_heatmap()
    assert bench.inspect_figure(fig)["unnamed"] == ["no bar"]
    fig2, axes = plt.subplots(1, 2, dpi=100)
    for ax in axes:
        ax.imshow(np.eye(3))
    axes[0].set_ylabel("queries")  # a grid names its axes once
    assert bench.inspect_figure(fig2)["unnamed"] == []


def test_metric_vs_dk_text_is_readable(bench):
    d_ks = np.array([1, 2, 4, 8, 16, 32, 64, 128])
    line = plots.metric_vs_dk(d_ks, d_ks * 0 + 0.3, np.linspace(0.3, 1, 8), label="max weight", current=16)[0]
    r = bench.inspect_figure(line.figure)
    assert r["smallest_pt"] >= style.MIN_FONT_PT and r["heatmaps"] == 0
