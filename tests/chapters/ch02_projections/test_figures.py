"""Chapter 2 pictures and widgets: drive them like a reader would."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz import BERT_BASE, AttentionConfig, attention_flops, param_count  # noqa: E402
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library, soft_lookup  # noqa: E402
from qkv_viz.chapters.ch02_projections.figures import (QUERY_COLOR, config_calculator,  # noqa: E402
                                                      plot_flops_vs_T, plot_projection_shapes,
                                                      size_report)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_flops_plot_lines_follow_sizes():
    ns = [64, 512, 4096]
    lines = plot_flops_vs_T(BERT_BASE, ns)
    proj, quad = lines[0].get_ydata(), lines[1].get_ydata()
    assert proj[1] == attention_flops(BERT_BASE, 512)["projections"]
    assert quad[2] / quad[1] == pytest.approx((4096 / 512) ** 2)  # quadratic in n
    assert proj[2] / proj[1] == pytest.approx(4096 / 512)  # linear in n


def test_size_report_matches_sizes_and_torch():
    torch = pytest.importorskip("torch")
    rows = dict(size_report(BERT_BASE, 512))
    mha = torch.nn.MultiheadAttention(768, 12)
    assert rows["whole layer, with biases"] == sum(p.numel() for p in mha.parameters())
    mha_nb = torch.nn.MultiheadAttention(768, 12, bias=False)
    assert rows["whole layer (W_q, W_k, W_v, W_o), no bias"] == sum(p.numel() for p in mha_nb.parameters())
    assert rows["FLOPs Q, K, V projections, T=512"] == 6 * 512 * 768 ** 2


def test_calculator_updates_and_survives_bad_configs():
    w = config_calculator()
    assert f"{param_count(BERT_BASE):,}" in w.table.value
    good_table = w.table.value
    w.boxes["n_heads"].value = 7  # 768 is not divisible by 7
    assert "not divisible" in w.message.value
    assert w.table.value == good_table  # last good table kept
    w.boxes["n_heads"].value = 8
    assert f"{param_count(AttentionConfig(768, 8)):,}" in w.table.value
    w.boxes["d_v"].value = 32
    assert f"{param_count(AttentionConfig(768, 8, d_k=96, d_v=32)):,}" in w.table.value
    w.boxes["T"].value = 0
    assert "T must be" in w.message.value
    w.boxes["T"].value = 16
    assert "T must be" not in w.message.value


def test_projection_shapes_are_to_scale_and_highlight_one_head():
    config = AttentionConfig(768, 12, d_k=64)
    rects = plot_projection_shapes(config, 128, head=5)
    assert len(rects) == 1 + 2 * config.n_heads  # X, then W_q's and Q's head blocks
    x, w_q = rects[0], rects[1:1 + config.n_heads]
    assert (x.get_width(), x.get_height()) == (config.d_model, 128)
    assert {r.get_width() for r in w_q} == {config.d_k}
    lit = [i for i, r in enumerate(w_q) if matplotlib.colors.same_color(r.get_facecolor(), QUERY_COLOR)]
    assert lit == [5]
    with pytest.raises(ValueError, match="head"):
        plot_projection_shapes(config, 128, head=12)
