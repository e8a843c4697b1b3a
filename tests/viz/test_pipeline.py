import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle  # noqa: E402

from qkv_viz.viz import style  # noqa: E402
from qkv_viz.viz.pipeline import STAGES, _example, plot_pipeline  # noqa: E402


def _texts(artists, stage):
    return [a.get_text() for a in artists[stage] if hasattr(a, "get_text")]


def _fig(artists):
    return artists["input"][0].figure


def test_every_matrix_is_labelled_with_its_shape():
    arts = plot_pipeline(T=3, d_model=4, d_k=2, d_v=5)
    assert "3×4" in _texts(arts, "input")
    assert _texts(arts, "projections").count("4×2") == 2 and "4×5" in _texts(arts, "projections")
    assert _texts(arts, "qkv").count("3×2") == 2 and "3×5" in _texts(arts, "qkv")
    assert "3×3" in _texts(arts, "scores") and "3×3" in _texts(arts, "scale")
    assert "rows sum to 1" in _texts(arts, "softmax") and "softmax" in _texts(arts, "softmax")
    assert "3×5" in _texts(arts, "output")
    # cells drawn: T x d_model for X, T x T for the weights
    cells = lambda stage: sum(isinstance(a, Rectangle) and a.get_gid() is None for a in arts[stage])  # noqa: E731
    assert cells("input") == 3 * 4 and cells("softmax") == 3 * 3
    assert arts["mask"] == []  # no mask step unless asked


def test_q_k_v_wear_their_colours():
    arts = plot_pipeline()
    colours = {t.get_text(): matplotlib.colors.to_hex(t.get_color())
               for t in arts["qkv"] if hasattr(t, "get_text")}
    assert colours["$Q$"] == style.QUERY_COLOR.lower()
    assert colours["$K$"] == style.KEY_COLOR.lower()
    assert colours["$V$"] == style.VALUE_COLOR.lower()


def test_the_example_numbers_are_attention():
    d = _example(3, 4, 2, 2, masked=True)
    np.testing.assert_allclose(d["weights"].sum(axis=1), 1.0)
    assert np.all(d["weights"][np.triu_indices(3, 1)] == 0)  # causal: no weight on later keys
    np.testing.assert_allclose(d["out"], d["weights"] @ d["v"])


@pytest.mark.parametrize("stage", STAGES)
def test_highlight_rings_one_stage_and_fades_the_rest(stage):
    arts = plot_pipeline(highlight=stage)
    rings = [a for a in arts[stage] if isinstance(a, FancyBboxPatch)]
    assert rings, f"{stage} has no highlight ring"
    for other in STAGES:
        if other != stage:
            assert all(a.get_alpha() is not None and a.get_alpha() < 0.5 for a in arts[other])
            assert not any(isinstance(a, FancyBboxPatch) for a in arts[other])
    assert all(a.get_alpha() is None for a in arts[stage])
    if stage == "mask":
        assert any(a.get_hatch() for a in arts["mask"] if isinstance(a, Rectangle))


def test_highlight_names_and_aliases():
    arts = plot_pipeline(highlight="weighted_sum")
    assert any(isinstance(a, FancyArrowPatch) and a.get_linewidth() > 2 for a in arts["output"])
    with pytest.raises(ValueError, match="highlight"):
        plot_pipeline(highlight="attention")
    with pytest.raises(ValueError, match="<= 8"):
        plot_pipeline(T=20)


@pytest.mark.parametrize("kw", [{}, {"highlight": "mask"}, {"T": 4, "d_model": 6, "d_k": 3, "d_v": 3}])
def test_fits_the_column_and_text_is_readable(kw, bench):
    fig = _fig(plot_pipeline(**kw))
    r = bench.inspect_figure(fig)
    assert r["width_px"] <= 880
    assert r["heatmaps"] == 0  # matrices and colour scales are drawn as patches: not counted as heatmaps
    assert r["smallest_pt"] >= style.MIN_FONT_PT, r["small_texts"]


@pytest.mark.parametrize("kw", [dict(highlight="mask"), dict(T=4, highlight="mask"), dict(T=1, d_v=8, mask=True),
                                dict(T=8, d_model=8, d_k=8, d_v=8, mask=True), dict(T=2, d_model=2, d_k=1)])
def test_no_two_labels_overlap_and_it_fits(kw, bench):
    fig = _fig(plot_pipeline(**kw))
    assert bench.inspect_figure(fig)["width_px"] <= 880
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.axes[0].texts]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"


def test_draws_on_a_given_axes():
    fig, ax = plt.subplots(figsize=(8, 4))
    arts = plot_pipeline(ax=ax, highlight="scale")
    assert all(a.axes is ax for a in arts["scale"])
    assert tuple(fig.get_size_inches()) == (8.0, 4.0)  # a figure we did not make is not resized


def test_every_matrix_product_is_an_at_node():
    """X @ W_q -> Q (X and W_q both point into an "@", not X into the weights), Q @ K^T, weights @ V."""
    from matplotlib.patches import Circle
    arts = plot_pipeline()
    nodes = lambda stage: [a for a in arts[stage] if isinstance(a, Circle) and a.get_gid() == "at"]  # noqa: E731
    assert len(nodes("projections")) == 3 and len(nodes("scores")) == 1 and len(nodes("output")) == 1
    assert _texts(arts, "projections").count("@") == 3
    # each W ends in its "@": an arrow from the W's top edge straight up to the node's bottom
    ups = [a for a in arts["projections"] if isinstance(a, FancyArrowPatch)
           and np.isclose(a._posA_posB[0][0], a._posA_posB[1][0])]
    assert len(ups) == 3
    assert not any("·" in t for t in _texts(arts, "output"))  # no "· V" label: the "@" says it


@pytest.mark.parametrize("masked", [False, True])
def test_scores_names_the_matrix_softmax_receives(masked):
    arts = plot_pipeline(mask=masked)
    assert any(t.startswith("dot products") for t in _texts(arts, "scores"))
    assert not any("scores" in t for t in _texts(arts, "scores") if "\n" in t)
    named = lambda stage: any(t.startswith("scores") for t in _texts(arts, stage))  # noqa: E731
    assert named("mask") if masked else named("scale")
    assert not named("scale") if masked else not named("mask")


def test_highlighting_the_projections_colours_the_inputs_bus_too():
    from matplotlib.lines import Line2D
    arts = plot_pipeline(highlight="projections")
    bus = [a for a in arts["projections"] if isinstance(a, Line2D)]
    assert len(bus) == 2 and all(matplotlib.colors.to_hex(a.get_color()) == "#e69f00" for a in bus)


_BANK_X = np.array([[0, 0, 0], [1, 0, 1], [0.3, 0.3, 1], [1, 0, 0]])  # chapter 0: the river bank flooded
_BANK_W = dict(W_q=np.array([[0, 0], [0, 0], [2, 2]]), W_k=np.array([[2, 0], [0, 2], [0, 0]]),
               W_v=np.array([[1, 0], [0, 1], [0, 0]]))


def test_a_given_example_writes_its_own_numbers_in_the_cells():
    arts = plot_pipeline(X=_BANK_X, tokens=["the", "river", "bank", "flooded"], **_BANK_W)
    numbers = lambda stage: [t.get_text() for t in arts[stage] if getattr(t, "get_gid", lambda: None)() == "cell-number"]  # noqa: E731
    assert numbers("input") == ["0", "0", "0", "1", "0", "1", ".3", ".3", "1", "1", "0", "0"]
    weights = _BANK_X @ _BANK_W["W_q"] @ (_BANK_X @ _BANK_W["W_k"]).T / np.sqrt(2)
    weights = np.exp(weights - weights.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    assert numbers("softmax")[4:8] == [f"{w:.2f}".lstrip("0") for w in weights[1]]  # river's row: .02 .42 .14 .42
    assert "bank" in _texts(arts, "input") and "4×3" in _texts(arts, "input")
    assert "dot products,\nscores: white = 0" in _texts(arts, "scale")
    assert "weights" in _texts(arts, "softmax")


def test_a_given_example_fits_and_no_two_labels_overlap(bench):
    fig = _fig(plot_pipeline(X=_BANK_X, tokens=["the", "river", "bank", "flooded"], **_BANK_W))
    r = bench.inspect_figure(fig)
    assert r["width_px"] <= 880 and r["smallest_pt"] >= style.MIN_FONT_PT, r["small_texts"]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in fig.axes[0].texts]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"


def test_a_given_example_needs_all_four_matrices_and_matching_shapes():
    with pytest.raises(ValueError, match="missing: W_v"):
        plot_pipeline(X=_BANK_X, W_q=_BANK_W["W_q"], W_k=_BANK_W["W_k"])
    with pytest.raises(ValueError, match=r"W_k must have d_model = 3 rows"):
        plot_pipeline(X=_BANK_X, W_q=_BANK_W["W_q"], W_k=np.ones((4, 2)), W_v=_BANK_W["W_v"])
    with pytest.raises(ValueError, match="tokens has 2 names"):
        plot_pipeline(X=_BANK_X, tokens=["a", "b"], **_BANK_W)


def test_a_given_example_names_the_keys_above_every_t_by_t_matrix():
    tokens = ["the", "river", "bank", "flooded"]
    arts = plot_pipeline(X=_BANK_X, tokens=tokens, **_BANK_W)
    for stage in ("scores", "scale", "softmax"):
        names = [t.get_text() for t in arts[stage] if getattr(t, "get_gid", lambda: None)() == "token-label"]
        assert names == tokens, stage
    assert not [t for t in plot_pipeline()["softmax"] if getattr(t, "get_gid", lambda: None)() == "token-label"]


def test_a_given_example_names_the_rows_of_q_k_v_the_dot_products_and_the_output():
    tokens = ["the", "river", "bank", "flooded"]
    arts = plot_pipeline(X=_BANK_X, tokens=tokens, **_BANK_W)
    rows = lambda stage: [t.get_text() for t in arts[stage] if getattr(t, "get_gid", lambda: None)() == "row-label"]  # noqa: E731
    assert rows("qkv") == tokens * 5  # Q, K, V on the first row; Q and K again on the second
    assert rows("scores") == tokens and rows("output") == tokens
    assert not [t for t in plot_pipeline()["output"] if getattr(t, "get_gid", lambda: None)() == "row-label"]


def test_faded_numbers_are_written_in_dark_ink():
    arts = plot_pipeline(X=_BANK_X, tokens=["the", "river", "bank", "flooded"], highlight="projections", **_BANK_W)
    faded = [t for t in arts["qkv"] if getattr(t, "get_gid", lambda: None)() == "cell-number"]
    assert faded and all(matplotlib.colors.to_hex(t.get_color()) == "#222222" for t in faded)
    kept = [t for t in arts["projections"] if getattr(t, "get_gid", lambda: None)() == "cell-number"]
    assert any(matplotlib.colors.to_hex(t.get_color()) == "#ffffff" for t in kept)  # W's dark cells keep white
