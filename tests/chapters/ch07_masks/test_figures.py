"""Hidden cells are hatched, exactly the masked ones, at the heatmap's cell positions."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz import causal_mask  # noqa: E402
from qkv_viz.chapters.ch07_masks.figures import hatch_masked  # noqa: E402
from qkv_viz.viz.plots import attention_heatmap  # noqa: E402


def test_hatches_exactly_the_hidden_cells():
    mask = causal_mask(5)
    fig, ax = plt.subplots()
    attention_heatmap(np.tril(np.ones((5, 5))) / np.arange(1, 6)[:, None], ax=ax)
    patches = hatch_masked(ax, mask)
    assert len(patches) == int((~mask).sum()) == 10
    cells = {(int(p.get_y() + 0.5), int(p.get_x() + 0.5)) for p in patches}
    assert cells == {(int(i), int(j)) for i, j in np.argwhere(~mask)}
    assert all(p.get_hatch() and not p.get_fill() for p in patches)
    numbers = {(int(round(t.get_position()[1])), int(round(t.get_position()[0]))) for t in ax.texts}
    assert numbers == {(int(i), int(j)) for i, j in np.argwhere(mask)}  # numbers only where visible
    plt.close(fig)


def test_refuses_a_non_boolean_mask():
    fig, ax = plt.subplots()
    with pytest.raises(TypeError, match="boolean"):
        hatch_masked(ax, np.ones((2, 2)))
    with pytest.raises(ValueError, match="2-D"):
        hatch_masked(ax, np.ones((2, 2, 2), dtype=bool))
    plt.close(fig)


def test_encoder_decoder_sketch_marks_both_attentions():
    from qkv_viz.chapters.ch07_masks.figures import plot_encoder_decoder
    fig, ax = plt.subplots()
    patches = plot_encoder_decoder(ax=ax)
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "causal self-attention" in texts and "cross-attention" in texts
    assert texts.count("padding mask") == 3                 # all three: a padded batch pads every side
    for shape in ("S × d_model", "S × S", "T × T", "T × S", "K, V\n(S rows)", "Q (T rows)"):
        assert shape in texts, shape                        # each attention's map shape, and where Q, K, V come from
    cross, enc = patches["dec_cross"].get_bbox(), patches["enc_out"].get_bbox()
    assert cross.y0 == enc.y0 and cross.x0 > enc.x1        # the encoder output feeds cross-attention sideways
    plt.close(fig)


def test_plot_masked_batch_hatches_causal_one_way_and_padding_the_other():
    from qkv_viz.chapters.ch07_masks.figures import HATCH, PAD_HATCH, plot_masked_batch
    causal = causal_mask(4)
    padding = np.arange(4)[None, :] < np.array([4, 2])[:, None]                 # (B, T)
    both = causal & padding[:, None, :]                                          # (B, T, T)
    weights = np.where(both, 1.0, 0.0)
    weights /= weights.sum(-1, keepdims=True)
    fig, axes = plt.subplots(1, 2)
    tokens = [list("abcd"), ["a", "b", "<pad>", "<pad>"]]
    images = plot_masked_batch(weights, causal, padding, tokens, ["t0", "t1"], axes=axes)
    assert len(images) == 2 and all(im.get_clim() == (0.0, 1.0) for im in images)
    hatches = [[p.get_hatch() for p in ax.patches] for ax in axes]
    assert [h.count(HATCH) for h in hatches] == [6, 6]        # the causal mask: 6 hidden cells in both
    assert [h.count(PAD_HATCH) for h in hatches] == [0, 8]    # the filler keys: 2 columns of 4
    pads = [p for p in axes[1].patches if p.get_hatch() == PAD_HATCH]
    assert all(p.get_fill() for p in pads)                    # padding is a grey cell, causal only lines
    assert not any(p.get_fill() for p in axes[1].patches if p.get_hatch() == HATCH)
    assert [t.get_text() for t in axes[1].get_xticklabels()][2] == "<pad>"
    assert axes[1].get_title() == "t1"
    with pytest.raises(ValueError, match="causal must be"):
        plot_masked_batch(weights, np.ones((3, 4), bool), padding, tokens)
    with pytest.raises(ValueError, match="tokens"):
        plot_masked_batch(weights, causal, padding, tokens[:1])
    plt.close("all")


def test_the_static_explorer_hatches_each_reason_its_own_way():
    from qkv_viz.chapters.ch07_masks import widget
    from qkv_viz.chapters.ch07_masks.figures import CLICK_HATCH, HATCH, PAD_HATCH
    drawn = []
    real = widget.hatch_masked
    widget.hatch_masked = lambda ax, mask, hatch=HATCH: drawn.append((hatch, mask.copy())) or real(ax, mask, hatch)
    try:
        fig = widget.MaskFigure(np.zeros((3, 3)), list("abc"), list("xyz"), causal=True, n_real=2)
        fig.clicked = [False, False, False, True, False, False, False, True, False]   # (b, x) alone, (c, y) too
        fig.static_png()
    finally:
        widget.hatch_masked = real
    (h2, m2), (h1, m1), (h3, m3) = drawn                  # padding's grey first, causal lines over it
    assert (h2, h1, h3) == (PAD_HATCH, HATCH, CLICK_HATCH)
    np.testing.assert_array_equal(~m1, ~causal_mask(3))                                 # causal
    np.testing.assert_array_equal(~m2, np.broadcast_to([False, False, True], (3, 3)))    # padding: key 2
    np.testing.assert_array_equal(np.argwhere(~m3), [[1, 0], [2, 1]])                   # clicked, no other reason


def test_mask_legend_has_one_hatched_swatch_per_reason_in_the_heatmaps_patterns():
    from qkv_viz.chapters.ch07_masks.figures import HATCH, PAD_HATCH, mask_legend
    fig = plt.figure()
    legend = mask_legend(fig)
    handles = legend.legend_handles
    assert [t.get_text() for t in legend.get_texts()] == ["hidden by causal", "hidden by padding", "hidden by both"]
    assert [h.get_hatch() for h in handles] == [HATCH, PAD_HATCH, HATCH + PAD_HATCH]
    assert [t.get_text() for t in mask_legend(plt.figure(), ["padding"]).get_texts()] == ["hidden by padding"]
    plt.close("all")


def test_plot_causal_cut_hatches_the_minus_inf_cells_and_names_both_colour_bars():
    from qkv_viz import masked_softmax
    from qkv_viz.chapters.ch07_masks.figures import HATCH, plot_causal_cut
    causal = causal_mask(4)
    peek = 4.0 * np.eye(4, k=1)                                   # the page's peeking head
    filled = np.where(causal, peek, -np.inf)
    fig, axes = plt.subplots(1, 3)
    images = plot_causal_cut(peek, filled, masked_softmax(peek, causal), list("abcd"), axes=axes)
    assert [ax.get_title() for ax in axes] == ["scores", "masked scores (/ = −∞)", "weights"]
    assert images[0].get_clim() == images[1].get_clim() == (-4.0, 4.0) and images[2].get_clim() == (0.0, 1.0)
    assert len(axes[0].texts) == 16 and not axes[0].patches                   # every score written
    for ax in axes[1:]:
        lines = {(int(p.get_y() + 0.5), int(p.get_x() + 0.5)) for p in ax.patches if p.get_hatch() == HATCH}
        assert lines == {(int(i), int(j)) for i, j in np.argwhere(~causal)}  # exactly the -inf cells
        assert len(ax.texts) == int(causal.sum())                             # numbers only where visible
    labels = sorted(a.get_ylabel() for a in fig.axes[3:])                     # the two colour bars
    assert labels == ["score q·k / √d_k", "weights"]
    with pytest.raises(ValueError, match="share one"):
        plot_causal_cut(peek, filled[:3], peek, list("abcd"))
    plt.close("all")
