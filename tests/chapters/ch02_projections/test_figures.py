"""Chapter 2 pictures draw what they claim: the numbers in the cells, the scores on the arrows."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch02_projections.figures import plot_token_to_qkv  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _texts(artists):
    return [a.get_text() for a in artists if isinstance(a, matplotlib.text.Text)]


def test_token_to_qkv_writes_x_and_its_three_projections():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(6)
    W_q, W_k, W_v = rng.standard_normal((6, 3)), rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    texts = _texts(plot_token_to_qkv(x, W_q, W_k, W_v, decimals=3))
    for vec in (x, x @ W_q, x @ W_k, x @ W_v):
        for value in vec:
            assert f"{value:.3f}" in texts
    assert any("$W_v$  6×2" in t for t in texts)  # W_v's shape is written on its arrow


def test_token_to_qkv_names_a_shape_mismatch():
    with pytest.raises(ValueError, match="W_k needs 4 rows"):
        plot_token_to_qkv(np.ones(4), np.ones((4, 2)), np.ones((3, 2)), np.ones((4, 2)))


def test_frame_row_max_frames_each_rows_largest_cell():
    from qkv_viz.chapters.ch02_projections.figures import frame_row_max
    scores = np.array([[0.0, 3.0, 1.0], [5.0, 0.0, 1.0]])
    _, ax = plt.subplots()
    ax.imshow(scores)
    frames = frame_row_max(scores, ax=ax)
    assert [(r.get_x() + 0.5, r.get_y() + 0.5) for r in frames] == [(1.0, 0.0), (0.0, 1.0)]


def test_frame_row_max_frames_every_tied_maximum_and_no_flat_row():
    from qkv_viz.chapters.ch02_projections.figures import frame_row_max
    scores = np.array([[1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])  # row 0: a tie; row 1: no largest entry
    _, ax = plt.subplots()
    ax.imshow(scores)
    frames = frame_row_max(scores, ax=ax)
    assert [(r.get_x() + 0.5, r.get_y() + 0.5) for r in frames] == [(0.0, 0.0), (2.0, 0.0)]


def test_asymmetry_is_zero_for_tied_and_about_one_for_random_projections():
    from qkv_viz.chapters.ch02_projections.figures import asymmetry
    rng = np.random.default_rng(0)
    W_q, W_k = rng.standard_normal((200, 16)), rng.standard_normal((200, 16))
    assert asymmetry(W_q @ W_q.T) == pytest.approx(0.0, abs=1e-12)
    assert asymmetry(W_q @ W_k.T) == pytest.approx(1.0, abs=0.1)
    with pytest.raises(ValueError, match="square"):
        asymmetry(np.ones((2, 3)))


def test_plot_learning_draws_the_weights_and_the_two_rows_on_one_scale():
    from qkv_viz.chapters.ch02_projections.figures import plot_learning
    rng = np.random.default_rng(0)
    tokens = ("the", "dog", "chased", "a", "ball")
    features = ("animate", "thing", "action", "determiner")
    history = rng.dirichlet(np.ones(5), size=11)                 # (steps, T)
    row_hand, row_learned = np.array([4.0, 0, 0, 0]), np.array([7.6, -2.2, -2.1, -3.1])
    arts = plot_learning(history, row_hand, row_learned, features, tokens, target="dog")
    np.testing.assert_allclose(arts["target"].get_ydata(), history[:, 1])
    assert len(arts["others"]) == 4
    im = arts["rows"]
    assert im.get_clim() == (-8.0, 8.0)                          # one scale, rounded up to a tick
    np.testing.assert_allclose(im.get_array(), [[4, 0, 0, 0], [8, -2, -2, -3]])  # whole numbers in the cells
    assert im.colorbar is not None and im.colorbar.ax.get_ylabel() == "adds to the score"
    ax = im.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["by hand", "after 10 updates"]
    assert [t.get_text() for t in ax.get_xticklabels()] == list(features)  # full names, not cut
    with pytest.raises(ValueError, match="d_model"):
        plot_learning(history, row_hand, np.ones(3), features, tokens, target="dog")
    with pytest.raises(ValueError, match="target"):
        plot_learning(history, row_hand, row_learned, features, tokens, target="cat")


def test_plot_learning_names_the_target_and_the_others_once():
    from qkv_viz.chapters.ch02_projections.figures import plot_learning
    tokens = ("the", "dog", "chased", "a", "ball")
    history = np.random.default_rng(1).dirichlet(np.ones(5), size=11)
    arts = plot_learning(history, np.ones(4), np.ones(4), ("a", "b", "c", "d"), tokens, target="dog")
    legend = arts["target"].axes.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ['"dog"', "the other 4 (nearly equal)"]
    assert {line.get_linestyle() for line in arts["others"]} == {"-"}    # one style: the legend names them once
    assert len(arts["target"].figure.axes) == 3                          # two panels and one colour bar


def test_qk_plane_puts_each_query_and_key_at_x_times_W_and_groups_shared_points():
    from qkv_viz.chapters.ch02_projections.figures import plot_qk_plane
    X = np.array([[1, 0, 0], [0, 1, 0], [0.5, 0.5, 0]])   # the third token mixes the first two rows of W
    W_q = np.array([[0, 2], [2, 0], [0, 0.]])
    W_k = np.array([[2, 0], [0, 0], [0, 2.]])
    out = plot_qk_plane(X, W_q, W_k, ["a", "b", "mix"])
    assert np.allclose(out["points"][("k", "mix")], 0.5 * W_k[0] + 0.5 * W_k[1])  # [1, 0]
    assert np.allclose(out["points"][("q", "mix")], [1, 1])
    texts = _texts(out["labels"])
    assert "zero: k of b" in texts and "q: a" in texts and "k: a" in texts
    assert len(out["queries"]) == 3 and len(out["keys"]) == 2   # "b"'s zero key: the ring, not an arrow
    assert out["zero"] is not None
    # drawn as chapter 1 draws them: keys solid with filled heads, queries dashed with open heads on top
    key_arrow, query_arrow = out["keys"][0], out["queries"][0]
    assert key_arrow.get_linestyle() == "solid" and query_arrow.get_linestyle() != "solid"
    assert query_arrow.get_zorder() > key_arrow.get_zorder()
    out = plot_qk_plane(np.eye(3)[[0, 0, 1]], W_q, W_k, ["x", "y", "z"])
    assert "q: x, y" in _texts(out["labels"])        # two tokens on one point share one label


def test_qk_plane_merges_every_zero_vector_into_one_label_clear_of_the_arrows():
    """The page's sentence: "the" and "a" have zero queries and keys, "ball" a zero key. One ring,
    one label "zero: q of the, a; k of the, a, ball", set away from every arrow and inside the frame."""
    from qkv_viz.chapters.ch02_projections.figures import plot_qk_plane
    X = np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0.]])
    W_q = np.array([[0, 2], [0, 2], [2, 0], [0, 0.]])
    W_k = np.array([[2, 0], [0, 0], [0, 2], [0, 0.]])
    out = plot_qk_plane(X, W_q, W_k, ["the", "dog", "chased", "a", "ball"])
    texts = _texts(out["labels"])
    assert "zero: q of the, a;\nk of the, a, ball" in texts       # two lines, one label
    assert not any("(zero)" in t for t in texts)
    zero = out["labels"][-1]
    ax = zero.axes
    at = np.array(zero.xyann)                                   # the label's anchor, in data units
    assert (at > 0.5).all()                                     # the empty quadrant, not on an axis arrow
    assert ax.get_xlim()[0] < at[0] < ax.get_xlim()[1] and ax.get_ylim()[0] < at[1] < ax.get_ylim()[1]
    ax.figure.canvas.draw()
    box = matplotlib.text.Text.get_window_extent(zero)           # the text alone, not its leader line
    for arrow in out["keys"] + out["queries"]:                  # the text's box overlaps no arrow
        assert not box.overlaps(arrow.get_window_extent())


def test_qk_plane_needs_d_k_two_and_one_name_per_row():
    from qkv_viz.chapters.ch02_projections.figures import plot_qk_plane
    with pytest.raises(ValueError, match="to draw a plane"):
        plot_qk_plane(np.eye(3), np.ones((3, 3)), np.ones((3, 2)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="one token name per row"):
        plot_qk_plane(np.eye(3), np.ones((3, 2)), np.ones((3, 2)), ["a", "b"])


def test_qk_plane_labels_a_key_and_a_query_on_one_point_apart():
    """'chased''s query lies on 'dog''s key: both labels show, on opposite sides of the arrow."""
    from qkv_viz.chapters.ch02_projections.figures import plot_qk_plane
    W_q = np.array([[0, 2], [2, 0.]])
    W_k = np.array([[2, 0], [0, 2.]])
    out = plot_qk_plane(np.eye(2), W_q, W_k, ["dog", "chased"])
    pos = {t.get_text(): t.get_position() for t in out["labels"]}
    assert pos["q: chased"][1] < 0 < pos["k: dog"][1]           # the horizontal arrow: key above, query below
    assert pos["q: dog"][0] > 0 > pos["k: chased"][0]           # the vertical arrow: key left, query right


def test_qk_plane_draws_a_query_along_a_key_a_few_points_to_its_right_on_top():
    """'q: chased' lies on 'k: dog': the dashed query is shifted QUERY_SHIFT_PT sideways, so both show."""
    from qkv_viz.chapters.ch02_projections.figures import QUERY_SHIFT_PT, plot_qk_plane
    W_q = np.array([[0, 2], [2, 0], [1, 1.]])
    W_k = np.array([[2, 0], [0, 2], [0, 0.]])
    out = plot_qk_plane(np.eye(3), W_q, W_k, ["dog", "chased", "odd"])   # "odd": a query on no key's line
    ax = out["keys"][0].axes
    pt = ax.figure.dpi / 72.0  # display pixels per point

    def shift(arrow):  # where the arrow's origin lands, minus where (0, 0) does, in points
        return (arrow.get_transform().transform((0, 0)) - ax.transData.transform((0, 0))) / pt

    by_label = dict(zip([t.get_text() for t in out["labels"]], out["labels"]))
    q_dog, q_chased, q_odd = out["queries"]                     # drawn in token order
    assert np.allclose(shift(q_chased), [0, -QUERY_SHIFT_PT])    # along +x: its right is down
    assert np.allclose(shift(q_dog), [QUERY_SHIFT_PT, 0])        # along +y: its right is +x
    assert np.allclose(shift(q_odd), 0)                          # (1, 1) lies on no key: not moved
    assert all(np.allclose(shift(k), 0) for k in out["keys"])      # keys stay put ("odd"'s zero key: the ring)
    assert q_chased.get_zorder() > out["keys"][0].get_zorder()
    assert np.allclose((by_label["q: chased"].get_transform().transform((0, 0))
                        - ax.transData.transform((0, 0))) / pt, [0, -QUERY_SHIFT_PT])  # its label moves with it
