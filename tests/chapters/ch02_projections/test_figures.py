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


PAGE_X = np.array([[0, 0, 0, 1], [1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [0, 1, 0, 0.], [0.5, 0.5, 0, 0]])
PAGE_W_Q = np.array([[0, 2], [0, 2], [2, 0], [0, 0.]])
PAGE_W_K = np.array([[2, 0], [0, 0], [0, 2], [0, 0.]])
PAGE_TOKENS = ["the", "dog", "chased", "a", "ball", "robot"]


def test_qk_panels_put_keys_left_queries_right_at_x_times_W_and_group_shared_points():
    from qkv_viz.chapters.ch02_projections.figures import plot_qk_panels
    out = plot_qk_panels(PAGE_X, PAGE_W_Q, PAGE_W_K, PAGE_TOKENS)
    assert np.allclose(out["points"][("k", "robot")], 0.5 * PAGE_W_K[0] + 0.5 * PAGE_W_K[1])  # [1, 0]
    assert np.allclose(out["points"][("q", "chased")], [2, 0])
    k_texts, q_texts = _texts(out["labels"]["k"]), _texts(out["labels"]["q"])
    assert k_texts == ["dog", "chased", "robot", "zero: the, a, ball"]
    assert q_texts == ["dog, ball, robot", "chased", "zero: the, a"]     # three tokens on one point: one label
    assert len(out["keys"]) == 3 and len(out["queries"]) == 2             # zero vectors: the ring, not arrows
    left, right = out["axes"]
    assert all(a.axes is left for a in out["keys"]) and all(a.axes is right for a in out["queries"])
    assert left.get_xlim() == right.get_xlim() and left.get_ylim() == right.get_ylim()  # one plane, one scale
    # drawn as chapter 1 draws them: keys solid with filled heads, queries dashed with open heads
    assert out["keys"][0].get_linestyle() == "solid" and out["queries"][0].get_linestyle() != "solid"


def test_qk_panels_labels_overlap_nothing_and_stay_inside_their_panel():
    """Every label is legible: its text box overlaps no other label and no arrow of its panel, and
    lies inside the panel (the review found 'q: dog, ball, robot' at the tip of 'k: chased')."""
    from qkv_viz.chapters.ch02_projections.figures import plot_qk_panels
    out = plot_qk_panels(PAGE_X, PAGE_W_Q, PAGE_W_K, PAGE_TOKENS)
    fig = out["axes"][0].figure
    fig.canvas.draw()
    for role, arrows in (("k", out["keys"]), ("q", out["queries"])):
        boxes = [matplotlib.text.Text.get_window_extent(t) for t in out["labels"][role]]
        panel = out["labels"][role][0].axes.get_window_extent()
        for i, box in enumerate(boxes):
            assert panel.x0 <= box.x0 and box.x1 <= panel.x1 and panel.y0 <= box.y0 and box.y1 <= panel.y1
            assert not any(box.overlaps(other) for other in boxes[i + 1:])
            assert not any(box.overlaps(a.get_window_extent()) for a in arrows)


def test_qk_panels_need_d_k_two_and_one_name_per_row():
    from qkv_viz.chapters.ch02_projections.figures import plot_qk_panels
    with pytest.raises(ValueError, match="to draw a plane"):
        plot_qk_panels(np.eye(3), np.ones((3, 3)), np.ones((3, 2)), ["a", "b", "c"])
    with pytest.raises(ValueError, match="one token name per row"):
        plot_qk_panels(np.eye(3), np.ones((3, 2)), np.ones((3, 2)), ["a", "b"])
