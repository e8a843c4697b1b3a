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


def test_length_against_angle_unit_keys_let_the_nearest_direction_win():
    """The same q0: as given, k1 (the longest) wins; at length 1 every dot product is |q0| cos, so k0 (the largest
    cosine) wins. The titles name the winner and print the weights computed here."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from qkv_viz.chapters.ch03_toy.figures import plot_length_against_angle
    fig, weights = plot_length_against_angle(TOY_Q[0], TOY_K)
    np.testing.assert_allclose(weights[0], qv.softmax(TOY_K @ TOY_Q[0] / np.sqrt(2)))
    unit = TOY_K / np.linalg.norm(TOY_K, axis=1, keepdims=True)
    np.testing.assert_allclose(weights[1], qv.softmax(unit @ TOY_Q[0] / np.sqrt(2)))
    assert np.argmax(weights[0]) == 1 and np.argmax(weights[1]) == 0
    titles = [ax.get_title() for ax in fig.axes]
    assert "$k_1$ wins" in titles[0] and "$k_0$ wins" in titles[1]
    assert f"{weights[1, 0]:.2f}" in titles[1]
    labels = [t.get_text() for t in fig.axes[1].texts]
    assert any("length 1.00" in t and "= 1.58" in t for t in labels)     # |q0| cos = sqrt(5) * 0.707
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
