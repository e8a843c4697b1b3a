"""Chapter 0's picture: "bank" moved by the weighted values."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from matplotlib.text import Text  # noqa: E402
from qkv_viz.chapters.ch00_start.figures import bank_moves  # noqa: E402
from qkv_viz.core.attention import softmax  # noqa: E402

TOKENS = "the river bank flooded".split()
X = np.array([[0, 0, 0], [1, 0, 1], [0.3, 0.3, 1], [1, 0, 0.]])
W_q = np.array([[0, 0], [0, 0], [2, 1.]])
W_k = np.array([[1, 0], [1, 0], [0, 1.]])
W_v = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0.]])


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _moves():
    rates = "the bank raised its rates".split()
    X_r = np.array([[0, 0, 0], [0.3, 0.3, 1], [0, 0.5, 0], [0, 0, 0], [0, 1, 1.]])
    out = []
    for tokens, X_s in ((TOKENS, X), (rates, X_r)):
        Q, K, V = X_s @ W_q, X_s @ W_k, X_s @ W_v
        w = softmax(Q @ K.T / np.sqrt(2))
        b = tokens.index("bank")
        out.append((" ".join(tokens), X_s[b, :2], w[b], V[:, :2], tokens))  # water and money
    return out


def test_bank_moves_ends_each_sentence_where_the_output_added_back_puts_bank():
    moves = _moves()
    drawn = bank_moves(moves)
    assert len(drawn) == 2
    for (label, start, w, V, tokens), (arrows, end) in zip(moves, drawn):
        expected = start + w @ V                       # the token after attention, water and money
        np.testing.assert_allclose(np.ravel(end.get_data()), expected)
        assert len(arrows) == int(np.count_nonzero((w[:, None] * V).any(axis=1)))  # one piece per token that gives
        assert np.allclose(arrows[0].xyann, start) and np.allclose(arrows[-1].xy, expected)  # head to tail
    texts = [t.get_text() for t in plt.gca().texts]
    assert "0.46 × river" in texts and "0.49 × rates" in texts
    river_end, rates_end = (np.ravel(e.get_data()) for _, e in drawn)
    assert river_end[0] > river_end[1] and rates_end[1] > rates_end[0]  # towards water, towards money


def test_bank_moves_refuses_mismatched_shapes_naming_them():
    label, start, w, V, tokens = _moves()[0]
    with pytest.raises(ValueError, match=r"V \(T, 2\)"):
        bank_moves([(label, start, w, V[:, :1], tokens)])


def test_data_flow_draws_five_products_and_the_toy_shapes():
    from qkv_viz.chapters.ch00_start.figures import data_flow
    ax = data_flow(T=4, d_model=3, d_k=3, d_v=3)
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("@") == 5  # X @ W_q, X @ W_k, X @ W_v, Q @ K^T, weights @ V
    for shape in ("(T, d_model)", "(T, d_k)", "(T, d_v)", "(T, T)", "Kᵀ (d_k, T)"):
        assert shape in texts, shape
    assert texts.count("here (4, 4)") == 3 and "here (4, 3)" in texts
    assert texts.count("here (3, 3)") == 3  # W_q, W_k, W_v: (d_model, d_k) and (d_model, d_v)
    assert "here (3, 5)" in [t.get_text() for t in data_flow(T=4, d_model=3, d_k=2, d_v=5).texts]
    assert min(t.get_fontsize() for t in ax.texts) >= 10
    assert all("here" not in t for t in [t.get_text() for t in data_flow().texts])


def test_data_flow_wants_all_the_shapes_or_none():
    from qkv_viz.chapters.ch00_start.figures import data_flow
    with pytest.raises(ValueError, match="d_model"):
        data_flow(T=4, d_model=3)


def test_piece_labels_touch_no_other_arrow():
    """A label such as "0.22 × flooded" sits clear of every arrow but the one it names (its own)."""
    fig, ax = plt.subplots()
    drawn = bank_moves(_moves(), ax=ax)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    arrows = [a for arrows, _ in drawn for a in arrows]
    labels = [t for t in ax.texts if " × " in t.get_text()]
    assert labels, "the pieces of length >= PIECE_MIN carry labels"
    mids = [(np.asarray(a.xy) + np.asarray(a.xyann)) / 2 for a in arrows]  # each piece's midpoint
    for label in labels:
        box = Text.get_window_extent(label, renderer)  # the words alone, without their leader line
        hits = [a for a in arrows if a.arrow_patch.get_window_extent(renderer).overlaps(box)]
        assert len(hits) == 0, f"{label.get_text()!r} overlaps {len(hits)} arrow(s)"
        # its leader line ends on its own piece: the midpoint of the arrow of the token it names
        assert label.arrow_patch is not None and any(np.allclose(label.xy, m) for m in mids), label.get_text()
    flooded = next(t for t in labels if "flooded" in t.get_text())
    last = drawn[0][0][-1]                             # the river sentence's last piece: "flooded"'s
    np.testing.assert_allclose(flooded.xy, (np.asarray(last.xy) + np.asarray(last.xyann)) / 2)  # not bank's


def test_weights_grids_draw_each_sentence_labelled_on_one_colour_bar():
    from qkv_viz.chapters.ch00_start.figures import weights_grids
    rates = "the bank raised its rates".split()
    X2 = np.array([[0, 0, 0], [0.3, 0.3, 1], [0, 0.5, 0], [0, 0, 0], [0, 1, 1.]])
    w1, w2 = (softmax((x @ W_q) @ (x @ W_k).T / np.sqrt(2)) for x in (X, X2))
    images = weights_grids([("river", TOKENS, w1), ("rates", rates, w2)])
    assert [im.get_array().shape for im in images] == [(4, 4), (5, 5)]
    assert np.allclose(images[1].get_array(), w2) and images[0].get_clim() == (0.0, 1.0)
    axes = [im.axes for im in images]
    assert [t.get_text() for t in axes[1].get_xticklabels()] == rates
    assert [t.get_text() for t in axes[0].get_yticklabels()] == TOKENS
    assert f"{w1[3, 1]:.2f}" in [t.get_text() for t in axes[0].texts]  # every cell writes its weight
    bars = [a for a in axes[0].figure.axes if a not in axes]
    assert len(bars) == 1 and bars[0].get_ylabel() == "weights"
    with pytest.raises(ValueError, match="T = 4"):
        weights_grids([("bad", TOKENS, w2)])


def test_scores_weights_grids_put_scores_from_0_above_the_weights():
    from qkv_viz.chapters.ch00_start.figures import scores_weights_grids
    rates = "the bank raised its rates".split()
    X2 = np.array([[0, 0, 0], [0.3, 0.3, 1], [0, 0.5, 0], [0, 0, 0], [0, 1, 1.]])
    s1, s2 = ((x @ W_q) @ (x @ W_k).T / np.sqrt(2) for x in (X, X2))
    scored, weighted = scores_weights_grids([("river", TOKENS, s1, softmax(s1)), ("rates", rates, s2, softmax(s2))])
    assert np.allclose(scored[1].get_array(), s2) and np.allclose(weighted[0].get_array(), softmax(s1))
    top = max(s1.max(), s2.max())
    assert [im.get_clim() for im in scored] == [(0.0, top)] * 2     # no score < 0: one range from 0
    assert scored[0].get_cmap().name == "Reds"                      # sequential, lightest at 0
    plt.close("all")
    signed, _ = scores_weights_grids([("river", TOKENS, s1 - 1, softmax(s1))])
    low, high = signed[0].get_clim()
    assert low == -high == -np.abs(s1 - 1).max()                    # a negative score: diverging about 0
    bars = [a for a in scored[0].axes.figure.axes if a not in [im.axes for im in scored + weighted]]
    assert sorted(b.get_ylabel() for b in bars) == ["scores, both sentences", "weights, both sentences"]
    with pytest.raises(ValueError, match="T = 4"):
        scores_weights_grids([("bad", TOKENS, s2, softmax(s2))])


def test_query_among_keys_labels_each_key_with_its_dot_product_and_draws_equal_score_lines():
    from qkv_viz.chapters.ch00_start.figures import query_among_keys
    words = {"the": [0, 0, 0], "its": [0, 0, 0], "river": [1, 0, 1], "flooded": [1, 0, 0.],
             "rates": [0, 1, 1], "raised": [0, 0.5, 0], "bank": [0.3, 0.3, 1]}
    keys = {w: np.array(x) @ W_k for w, x in words.items()}
    q = np.array(words["bank"]) @ W_q
    arrow, dots, lines = query_among_keys(q, keys)
    ax = arrow.axes
    labels = {t.get_text() for t in ax.texts}
    assert {"the, its: 0", "river, rates: 3", "bank: 2.2", "raised: 1", "flooded: 2"} <= labels
    assert len(dots) == 5 and len(lines) == 5                  # one dot and one line per distinct key
    levels = sorted({round(float(k @ q), 9) for k in keys.values()})
    for line, level in zip(lines, levels):                     # every point of a dashed line scores the same
        np.testing.assert_allclose(np.c_[line.get_xdata(), line.get_ydata()] @ q, level)
    assert max(keys, key=lambda w: keys[w] @ q) in ("river", "rates")  # the page: (1, 1) is farthest out
    np.testing.assert_array_equal(keys["river"], keys["rates"])


def test_query_among_keys_refuses_a_zero_query():
    from qkv_viz.chapters.ch00_start.figures import query_among_keys
    with pytest.raises(ValueError, match="non-zero"):
        query_among_keys(np.zeros(2), {"a": np.ones(2)})
