"""Chapter 3's triangle: each output's barycentric coordinates are its row of weights, so
every output lies inside the triangle of the values (the page's picture shows it live)."""
import numpy as np
import pytest

import qkv_viz as qv
from qkv_viz.chapters.ch03_toy.figures import barycentric
from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_Q, TOY_V


def test_outputs_recover_their_weights_and_lie_inside_the_triangle():
    out, weights = qv.scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    for o, w in zip(out, weights):
        coords = barycentric(o, TOY_V)
        np.testing.assert_allclose(coords, w)
        assert np.all(coords >= 0)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="corners"):
        barycentric([0.1, 0.2], np.ones((4, 2)))


def test_rows_times_columns_writes_every_dot_product_and_the_framed_sum():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from qkv_viz.chapters.ch03_toy.figures import plot_rows_times_columns
    arts = plot_rows_times_columns(TOY_Q, TOY_K, i=0, j=1)
    dots = TOY_Q @ TOY_K.T
    assert [[float(t.get_text()) for t in row] for row in arts["cells"]] == dots.tolist()
    assert arts["sum"].get_text().endswith("1·3 + 2·1 = 5")
    assert arts["cells"][0][1].get_fontweight() == "bold"       # the framed cell: row 0 meets column 1
    with pytest.raises(ValueError, match="same d_k"):
        plot_rows_times_columns(TOY_Q, np.ones((3, 3)))
    with pytest.raises(ValueError, match="i must be"):
        plot_rows_times_columns(TOY_Q, TOY_K, i=3)
    plt.close("all")


def test_rows_times_columns_draws_weights_at_V_with_its_own_names():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from qkv_viz.chapters.ch03_toy.figures import plot_rows_times_columns
    out, weights = qv.scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    arts = plot_rows_times_columns(weights, TOY_V.T, i=0, j=1, decimals=2, row_names=["a", "b", "c"],
                                   col_names=["x", "y"], sum_name="token 0's output, entry 1")
    assert [[t.get_text() for t in row] for row in arts["cells"]] == [[f"{v:.2f}" for v in row] for row in out]
    assert arts["sum"].get_text().startswith("token 0's output, entry 1 = ")
    assert arts["sum"].get_text().endswith(f"= {out[0, 1]:.2f}")
    assert plot_rows_times_columns(TOY_K, TOY_Q, i=1, j=0)["sum"].get_text().endswith("3·1 + 1·2 = 5")
    assert plot_rows_times_columns(TOY_Q, TOY_K, i=1, j=1)["sum"].get_text().endswith("(-1)·3 + 1·1 = -2")
    with pytest.raises(ValueError, match="row_names needs 3"):
        plot_rows_times_columns(weights, TOY_V.T, row_names=["a"])
    plt.close("all")


def test_weights_times_values_names_the_framed_output_entry():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from qkv_viz.chapters.ch03_toy.figures import plot_weights_times_values
    out, weights = qv.scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    arts = plot_weights_times_values(weights, TOY_V, ["token 0", "token 1", "token 2"], i=2, j=0)
    assert [[t.get_text() for t in row] for row in arts["cells"]] == [[f"{v:.2f}" for v in row] for row in out]
    assert arts["sum"].get_text().startswith("token 2's output, entry 0 = ")
    assert arts["sum"].get_text().endswith(f"= {out[2, 0]:.2f}")
    plt.close("all")


def test_query_and_keys_labels_each_key_with_its_length_cosine_and_dot_product():
    """The page's first picture: q0 points nearest k0 (largest cosine), yet k1, the longest key, gets
    the largest dot product. The labels are computed from the vectors and no label overlaps another."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from qkv_viz.chapters.ch03_toy.figures import plot_query_and_keys
    from qkv_viz.viz import style
    with matplotlib.rc_context():                                # the book's fonts, restored afterwards
        style.use()
        arts = plot_query_and_keys(TOY_Q[0], TOY_K)
        arts["query"].figure.canvas.draw()
    texts = [t.get_text() for t in arts["labels"]]
    assert len(arts["keys"]) == 3 and arts["query"] is not None
    assert "length 1.00" in texts[0] and "cos 0.89" in texts[0] and "= 2" in texts[0]
    assert "length 3.16" in texts[1] and "cos 0.71" in texts[1] and "= 5" in texts[1]
    assert "cos 0.45" in texts[2] and "= 1" in texts[2]
    boxes = [t.get_window_extent() for t in arts["labels"]]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    ax = arts["query"].axes
    assert all(ax.bbox.contains(b.x0, b.y0) and ax.bbox.contains(b.x1, b.y1) for b in boxes)  # inside the plane
    with pytest.raises(ValueError, match="plane"):
        plot_query_and_keys([1.0, 2.0, 3.0], TOY_K)
    plt.close("all")


def test_weights_times_values_labels_the_weights_by_key_and_query_and_reads_at_page_width():
    """The weights' columns are the keys k_0.., their rows the queries q_0.., V's rows the values v_0..;
    the rows-times-columns figure drawn on its own has type 1.5 times the body size."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from qkv_viz.chapters.ch03_toy.figures import plot_rows_times_columns, plot_weights_times_values
    from qkv_viz.viz import style
    out, weights = qv.scaled_dot_product_attention(TOY_Q, TOY_K, TOY_V)
    plot_weights_times_values(weights, TOY_V, ["token 0", "token 1", "token 2"])
    texts = [t.get_text() for t in plt.gca().texts]
    for name in ("$k_0$", "$k_1$", "$k_2$", "$v_0$", "$v_2$", "token 0 ($q_0$)", "token 2 ($q_2$)"):
        assert name in texts, (name, texts)
    arts = plot_rows_times_columns(TOY_Q, TOY_K)
    assert arts["sum"].get_fontsize() >= 1.5 * style.FONT_PT
    assert min(t.get_fontsize() for t in plt.gca().texts) >= 1.5 * style.ANNOTATION_PT
    with pytest.raises(ValueError, match="inner_names"):
        plot_rows_times_columns(TOY_Q, TOY_K, inner_names=(["a"], ["b"]))
    plt.close("all")


def test_query_states_are_the_cores_and_every_arrow_is_inside_its_plane():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from qkv_viz.chapters.ch03_toy.figures import plot_query_states
    queries = np.array([[0.0, -3.0], [-2.0, 0.5]])
    fig, weights = plot_query_states(queries, TOY_K, TOY_V, ["down", "left"])
    np.testing.assert_allclose(weights, qv.scaled_dot_product_attention(queries, TOY_K, TOY_V)[1])
    assert fig.axes[0].get_title() == f"down:\nv2 gets {100 * weights[0, 2]:.0f} %"
    x0, x1 = fig.axes[0].get_xlim()
    assert x0 < -3 and x1 > np.abs(TOY_K).max()       # k1 = (3, 1) and a query at -3 keep their arrowheads
    with pytest.raises(ValueError, match="caption"):
        plot_query_states(queries, TOY_K, TOY_V, ["down"])
    plt.close("all")
