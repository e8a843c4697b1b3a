"""Chapter 0's pipeline picture outlines the focus token's row, and that row holds its numbers."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch00_start.figures import LABEL_PT, NUMBER_PT, bank_pipeline  # noqa: E402
from qkv_viz.core.attention import softmax  # noqa: E402

TOKENS = "the river bank flooded".split()
X = np.array([[0, 0, 0], [1, 0, 1], [0.3, 0.3, 1], [1, 0, 0.]])
W_q = np.array([[0, 0, 0], [0, 0, 0], [2, 2, 1.]])
W_k = np.array([[2, 0, 0], [0, 2, 0], [0, 0, 1.]])
W_v = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 0.]])


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _numbers_inside(artists, box):
    out = []
    for stage in artists.values():
        for a in stage:
            if a.get_gid() == "cell-number":
                x, y = a.get_position()
                if box.get_x() < x < box.get_x() + box.get_width() and box.get_y() < y < box.get_y() + box.get_height():
                    out.append(a.get_text())
    return out


def test_the_outlined_rows_are_banks_row_of_every_query_side_matrix():
    artists, outlines = bank_pipeline(X, W_q, W_k, W_v, TOKENS)
    assert len(outlines) == 7  # X, Q twice, dot products, scores, weights, output
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    dots = Q @ K.T
    w = softmax(dots / np.sqrt(3))
    b = TOKENS.index("bank")
    fmt = lambda row: [(f"{int(round(x))}" if np.isclose(x, round(x)) else f"{x:.2f}".rstrip("0").replace("0.", ".", 1)
                        if abs(x) < 1 else f"{x:.1f}") for x in row]
    expected = [X[b], Q[b], Q[b], dots[b], dots[b] / np.sqrt(3), w[b], (w @ V)[b]]
    for box, row in zip(outlines, expected):
        assert _numbers_inside(artists, box) == fmt(row)
    sizes = {a.get_fontsize() for s in artists.values() for a in s if a.get_gid() == "cell-number"}
    assert sizes == {NUMBER_PT}
    labels = {a.get_fontsize() for s in artists.values() for a in s if a.get_gid() in ("row-label", "token-label")}
    assert labels == {LABEL_PT}


def test_an_unknown_focus_is_refused_naming_the_tokens():
    with pytest.raises(ValueError, match="focus must be one of the tokens"):
        bank_pipeline(X, W_q, W_k, W_v, TOKENS, focus="money")


def _moves():
    from qkv_viz.chapters.ch00_start.figures import bank_moves  # noqa: F401
    rates = "the bank raised its rates".split()
    X_r = np.array([[0, 0, 0], [0.3, 0.3, 1], [0, 0.5, 0], [0, 0, 0], [0, 1, 1.]])
    out = []
    for tokens, X_s in ((TOKENS, X), (rates, X_r)):
        Q, K, V = X_s @ W_q, X_s @ W_k, X_s @ W_v
        w = softmax(Q @ K.T / np.sqrt(3))
        b = tokens.index("bank")
        out.append((" ".join(tokens), X_s[b, :2], w[b], V[:, :2], tokens))  # water and money
    return out


def test_bank_moves_ends_each_sentence_where_the_output_added_back_puts_bank():
    from qkv_viz.chapters.ch00_start.figures import bank_moves
    moves = _moves()
    drawn = bank_moves(moves)
    assert len(drawn) == 2
    for (label, start, w, V, tokens), (arrows, end) in zip(moves, drawn):
        expected = start + w @ V                       # the token after attention, water and money
        np.testing.assert_allclose(np.ravel(end.get_data()), expected)
        assert len(arrows) == int(np.count_nonzero((w[:, None] * V).any(axis=1)))  # one piece per token that gives
        assert np.allclose(arrows[0].xyann, start) and np.allclose(arrows[-1].xy, expected)  # head to tail
    texts = [t.get_text() for t in plt.gca().texts]
    assert "0.50 × river" in texts and "0.59 × rates" in texts
    river_end, rates_end = (np.ravel(e.get_data()) for _, e in drawn)
    assert river_end[0] > river_end[1] and rates_end[1] > rates_end[0]  # towards water, towards money


def test_bank_moves_refuses_mismatched_shapes_naming_them():
    from qkv_viz.chapters.ch00_start.figures import bank_moves
    label, start, w, V, tokens = _moves()[0]
    with pytest.raises(ValueError, match=r"V \(T, 2\)"):
        bank_moves([(label, start, w, V[:, :1], tokens)])
