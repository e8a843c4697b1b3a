"""Chapter 8's split picture: the right split reads three blocks, the reshape bug interleaves."""
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from qkv_viz.chapters.ch08_mistakes import mistakes  # noqa: E402
from qkv_viz.chapters.ch08_mistakes.figures import plot_split, split_origin  # noqa: E402


def test_split_origin_agrees_with_the_split_functions():
    d = 4
    qkv = np.arange(3 * d, dtype=float)[None, :]  # one row whose entries are the column indices
    np.testing.assert_array_equal(split_origin(d, wrong=False), np.concatenate(mistakes.split_fused_right(qkv, d)))
    np.testing.assert_array_equal(split_origin(d, wrong=True), np.concatenate(mistakes.split_fused_wrong(qkv, d)))


def test_plot_split_colours_and_labels():
    im, texts = plot_split(3, wrong=True)
    roles = np.asarray(im.get_array())
    np.testing.assert_array_equal(roles, split_origin(3, True) // 3)
    assert [t.get_text() for t in texts[:3]] == ["Q0", "K3", "V6"]  # q reads columns 0, 3, 6: one from each matrix
    im, _ = plot_split(3, wrong=False)
    assert np.all(np.asarray(im.get_array()) == np.arange(3)[:, None])
