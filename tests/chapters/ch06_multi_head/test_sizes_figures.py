"""Chapter 6 size pictures and table."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from qkv_viz import BERT_BASE, AttentionConfig, attention_flops, param_count  # noqa: E402
from qkv_viz.chapters.ch06_multi_head.sizes_figures import (head_colors, plot_flops_vs_T,  # noqa: E402
                                                           plot_projection_shapes, report_text,
                                                           size_report)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_flops_plot_lines_follow_sizes():
    Ts = [64, 512, 4096]
    lines = plot_flops_vs_T(BERT_BASE, Ts)
    proj, quad = lines[0].get_ydata(), lines[1].get_ydata()
    assert proj[1] == attention_flops(BERT_BASE, 512)["projections"]
    assert quad[2] / quad[1] == pytest.approx((4096 / 512) ** 2)  # quadratic in T
    assert proj[2] / proj[1] == pytest.approx(4096 / 512)  # linear in T


def test_size_report_matches_sizes_and_torch():
    torch = pytest.importorskip("torch")
    rows = dict(size_report(BERT_BASE, 512))
    mha = torch.nn.MultiheadAttention(768, 12)
    assert rows["whole layer, with biases"] == sum(p.numel() for p in mha.parameters())
    mha_nb = torch.nn.MultiheadAttention(768, 12, bias=False)
    assert rows["whole layer (W_q, W_k, W_v, W_o), no bias"] == sum(p.numel() for p in mha_nb.parameters())
    assert rows["FLOPs Q, K, V projections, T=512"] == 6 * 512 * 768 ** 2
    text = report_text(size_report(BERT_BASE, 512))
    assert f"{param_count(BERT_BASE):,}" in text and len(text.splitlines()) == len(rows)


def test_projection_shapes_are_to_scale_and_colour_each_head():
    config = AttentionConfig(512, 8)
    H = config.n_heads
    rects = plot_projection_shapes(config, 64)
    assert len(rects) == 1 + 3 * H  # X, then W_q's blocks, Q's blocks, the H cards
    x, w_q, q, cards = rects[0], rects[1:1 + H], rects[1 + H:1 + 2 * H], rects[1 + 2 * H:]
    assert (x.get_width(), x.get_height()) == (config.d_model, 64)
    assert {r.get_width() for r in w_q + q + cards} == {config.d_k}
    assert {r.get_height() for r in w_q} == {config.d_model}
    assert {r.get_height() for r in q + cards} == {64}
    colors = head_colors(H)
    for group in (w_q, q, cards):
        for h, r in enumerate(group):  # head h has the same colour in W_q, Q and the stack
            assert matplotlib.colors.same_color(r.get_facecolor()[:3], colors[h])
    assert len({matplotlib.colors.to_hex(c) for c in colors}) == H  # 8 heads, 8 colours
    x_grey = matplotlib.colors.to_rgb(x.get_facecolor()[:3])
    for c in colors:  # X (not split into heads) must not look like any head, the grey 8th one included
        assert max(abs(a - b) for a, b in zip(x_grey, matplotlib.colors.to_rgb(c))) > 0.15


def test_projection_shapes_fade_all_but_one_head():
    config = AttentionConfig(768, 12)
    rects = plot_projection_shapes(config, 128, head=5)
    w_q = rects[1:13]
    lit = [h for h, r in enumerate(w_q) if r.get_alpha() == 1.0]
    assert lit == [5]
    with pytest.raises(ValueError, match="head"):
        plot_projection_shapes(config, 128, head=12)
    with pytest.raises(ValueError, match="T must be"):
        plot_projection_shapes(config, 0)


@pytest.mark.parametrize("T", [16, 64, 96, 128])
def test_projection_shapes_reshape_label_clear_of_the_cards(T):
    config = AttentionConfig(512, 8)
    fig, ax = plt.subplots(figsize=(8.8, 2.64))
    rects = plot_projection_shapes(config, T, ax=ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    label = next(t for t in ax.texts if t.get_text().startswith("reshape"))
    box = label.get_window_extent(renderer)
    for card in rects[1 + 2 * config.n_heads:]:
        assert not box.overlaps(card.get_window_extent(renderer)), f"label over a card at T={T}"


def test_concat_and_mix_draws_the_product_and_frames_each_heads_blocks():
    import numpy as np
    from matplotlib.patches import Rectangle

    from qkv_viz.chapters.ch06_multi_head.sizes_figures import plot_concat_and_mix
    rng = np.random.default_rng(0)
    heads, W_o = rng.normal(size=(2, 3, 2)), rng.normal(size=(4, 5))     # H=2, T=3, d_v=2; d_model=5
    artists = plot_concat_and_mix(heads, W_o, ["a", "b", "c"])
    texts = [a.get_text() for a in artists if hasattr(a, "get_text")]
    out = np.concatenate(list(heads), axis=1) @ W_o                       # (3, 4) @ (4, 5) -> (3, 5)
    assert f"{out[2, 4]:.2f}" in texts and f"{W_o[3, 0]:.2f}" in texts and f"{heads[1, 0, 1]:.2f}" in texts
    assert texts.count("head 0") == 2 and texts.count("head 1") == 2          # over the columns, beside W_o's rows
    assert texts.count("c") == 2                                             # concat's and the output's rows
    frames = [a for a in artists if isinstance(a, Rectangle) and not a.get_fill()]
    assert [f.get_edgecolor() for f in frames[:2]] == [f.get_edgecolor() for f in frames[2:]]   # same colour per head
    assert (frames[2].get_width(), frames[2].get_height()) == (5, 2)     # W_o's row block of head 0: d_v rows
    with pytest.raises(ValueError, match="W_o"):
        plot_concat_and_mix(heads, W_o[:3], ["a", "b", "c"])
    with pytest.raises(ValueError, match="tokens"):
        plot_concat_and_mix(heads, W_o, ["a", "b"])


def test_inputs_to_heads_writes_every_weight_and_frames_each_head():
    import numpy as np
    from matplotlib.patches import Rectangle
    from qkv_viz.chapters.ch06_multi_head.sizes_figures import plot_inputs_to_heads
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 4)).round(1)                                  # T=3, d_model=4
    Q, K, V = (X @ rng.normal(size=(4, 4)).round(1) for _ in range(3))   # H=2 heads of 2 columns
    weights = rng.dirichlet(np.ones(3), size=(2, 3))                      # (H, T, S)
    artists = plot_inputs_to_heads(X, Q, K, V, weights, ["a", "b", "c"])
    texts = [a.get_text() for a in artists if hasattr(a, "get_text")]
    assert f"{weights[1, 2, 0]:.2f}" in texts and f"{Q[0, 3]:g}" in texts and "X (3, 4)" in texts
    assert texts.count("b") == 1 + 2 + 2                                  # rows of X and of each head's weights, columns of each
    frames = [a for a in artists if isinstance(a, Rectangle) and not a.get_fill()]
    assert len(frames) == 3 * 2 + 2                                        # Q, K, V per head, then each weights matrix
    assert frames[0].get_edgecolor() == frames[-2].get_edgecolor()         # head 0's columns and its weights
    with pytest.raises(ValueError, match="weights"):
        plot_inputs_to_heads(X, Q, K, V, weights[0], ["a", "b", "c"])
    with pytest.raises(ValueError, match="tokens"):
        plot_inputs_to_heads(X, Q, K, V, weights, ["a", "b"])


def test_projection_shapes_min_rows_drawn_keeps_the_true_T_in_the_labels():
    """The page draws T = 6 tokens taller than to scale: blocks get the drawn height, labels say 6."""
    config = AttentionConfig(512, 8)
    rects = plot_projection_shapes(config, 6, min_rows_drawn=64)
    H = config.n_heads
    assert rects[0].get_height() == 64 and {r.get_height() for r in rects[1 + H:]} == {64}
    texts = {t.get_text() for t in rects[0].axes.texts}
    assert {"X (6 x 512)", "Q (6 x 512)", "(H, T, d_k) = (8, 6, 64)"} <= texts
    assert plot_projection_shapes(config, 96, min_rows_drawn=64)[0].get_height() == 96
