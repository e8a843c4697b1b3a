"""Chapter 8's split picture: the per-head split gives each row one role, the block split mixes them."""
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from qkv_viz.chapters.ch08_mistakes import mistakes  # noqa: E402
from qkv_viz.chapters.ch08_mistakes.figures import plot_split, split_origin  # noqa: E402


def test_split_origin_agrees_with_the_split_functions():
    H, d_head = 2, 3
    qkv = np.arange(3 * H * d_head, dtype=float)[None, :]  # one row whose entries are the column indices
    for wrong, fn in [(False, mistakes.split_per_head), (True, mistakes.split_per_head_as_blocks)]:
        want = np.stack([p[:, 0, :].reshape(-1) for p in fn(qkv, H)])
        np.testing.assert_array_equal(split_origin(H, d_head, wrong), want)


def test_plot_split_colours_and_labels():
    im, texts = plot_split(2, 2, wrong=True)
    roles = np.asarray(im.get_array())
    np.testing.assert_array_equal(roles[0], [0, 0, 1, 1])          # the block "q" holds head 0's q and k
    assert [t.get_text() for t in texts[:4]] == ["Q0", "Q0", "K0", "K0"]
    im, texts = plot_split(2, 2, wrong=False)
    assert np.all(np.asarray(im.get_array()) == np.arange(3)[:, None])
    assert [t.get_text() for t in texts[:4]] == ["Q0", "Q0", "Q1", "Q1"]
