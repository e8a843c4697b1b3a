"""Chapter 8's split picture: the per-head split gives each row one role, the block split mixes them."""
import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

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
    assert [t.get_text() for t in texts[:4]] == ["q0", "q0", "k0", "k0"]
    im, texts = plot_split(2, 2, wrong=False)
    assert np.all(np.asarray(im.get_array()) == np.arange(3)[:, None])
    assert [t.get_text() for t in texts[:4]] == ["q0", "q0", "q1", "q1"]
    assert [t.get_text() for t in im.axes.get_xticklabels()] == ["head 0", "head 1"]
    im, _ = plot_split(2, 2, wrong=True)                           # the wrong split's columns are no heads
    assert [t.get_text() for t in im.axes.get_xticklabels()] == ["read as head 0", "read as head 1"]


def test_plot_weight_maps_hatches_the_hidden_cells_and_captions_each_panel():
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection

    from qkv_viz.chapters.ch08_mistakes.figures import plot_weight_maps
    causal = np.tril(np.ones((3, 3), dtype=bool))
    maps = {"a": (np.eye(3), causal, "first"), "b": (np.eye(3), ~causal, "second")}
    fig, axes = plt.subplots(1, 2)
    images = plot_weight_maps(maps, ["x", "y", "z"], axes)
    assert len(images) == 2
    for ax, mask, name, caption in zip(axes, (causal, ~causal), "ab", ("first", "second")):
        hatched = [c for c in ax.collections if isinstance(c, PatchCollection)]
        assert len(hatched) == 1 and len(hatched[0].get_paths()) == int((~mask).sum())
        assert ax.get_title() == f"{name}\n{caption}" and ax.get_xlabel() == "keys"
        written = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
        assert written == {(i, j): f"{np.eye(3)[i, j]:.2f}" for i, j in np.argwhere(mask)}   # visible cells only
    assert axes[1].get_ylabel() == ""
    with pytest.raises(ValueError, match="need an axis per map"):
        plot_weight_maps(maps, ["x", "y", "z"], axes[:1])
    with pytest.raises(ValueError, match="differ in shape"):
        plot_weight_maps({"c": (np.eye(3), causal[:2], "bad")}, ["x", "y", "z"], axes)
    plt.close(fig)


def test_plot_overflow_draws_both_panels_the_nan_band_and_the_zero_window():
    import matplotlib.pyplot as plt

    from qkv_viz.chapters.ch08_mistakes.figures import plot_overflow
    from qkv_viz.core.softmax import naive_softmax, softmax

    def top_weight(c):                              # the core's two softmaxes, row by row
        rows = [x + np.array([0.0, -1.0, -2.0]) for x in c]
        with np.errstate(all="ignore"):
            return np.array([naive_softmax(r)[0] for r in rows]), np.array([softmax(r)[0] for r in rows])

    c, c_fine = np.linspace(600, 800, 401), np.linspace(709.0, 710.0, 1001)
    limit = np.log(np.finfo(float).max)
    window = (limit - np.log(1 + np.exp(-1) + np.exp(-2)), limit)
    fig, axes = plt.subplots(1, 2, figsize=(8.8, 3))
    lines, arrow = plot_overflow((c, *top_weight(c)), (c_fine, *top_weight(c_fine)), limit, window, axes=axes)
    assert len(lines) == 4
    np.testing.assert_array_equal(lines[0].get_xdata(), c)
    np.testing.assert_array_equal(lines[3].get_xdata(), c_fine)
    (nan_band,) = axes[0].patches                                           # axvspan: one Rectangle
    assert limit - 1 < nan_band.get_x() < limit + 1                         # the NaN band starts at the limit
    spans = sorted(p.get_x() for p in axes[1].patches)
    assert spans[0] == pytest.approx(window[0], abs=1e-9)                   # the zero window in the zoom
    assert axes[1].get_xlim() == (709.0, 710.0)
    assert arrow.xy[0] == pytest.approx(709.5)                              # the arrow points at the zoom
    fig.canvas.draw()
    labels = [t.get_window_extent() for t in axes[1].get_xticklabels()]
    assert not any(a.overlaps(b) for i, a in enumerate(labels) for b in labels[i + 1:])   # 709.38 / 709.78 legible
    with pytest.raises(ValueError, match="one length"):
        plot_overflow((c, c[:3], c), (c_fine, c_fine, c_fine), limit, window, axes=axes)
    plt.close(fig)

