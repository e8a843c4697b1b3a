"""Chapter 1 pictures (the interactive figure is tested in test_widget.py)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz import BERT_BASE, AttentionConfig, attention_flops, param_count  # noqa: E402
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library, soft_lookup  # noqa: E402
from qkv_viz.chapters.ch01_library.figures import (library_and_weights,  # noqa: E402
                                                  plot_library, plot_weight_bars,
                                                  weights_vs_temperature, KEY_LW)
from qkv_viz.viz import style  # noqa: E402
from matplotlib.colors import to_rgb  # noqa: E402
from matplotlib.text import Text  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _page_table(lib, n=200):
    """The page's table: weights at n temperatures from 0.01 to 100, (n, n_books)."""
    taus = np.geomspace(0.01, 100, n)
    return taus, np.stack([soft_lookup(DEMO_QUERY, lib, t)[1] for t in taus])


def test_static_pictures_draw_what_they_return():
    lib = demo_library()
    taus, table = _page_table(lib)
    lines = weights_vs_temperature(taus[:, None], table, lib)  # the page passes its (200, 1) column
    assert len(lines) == lib.n_books + 2  # one curve per book, then the two marks
    for j, line in enumerate(lines[:lib.n_books]):  # each curve is that book's column of the table
        x, w = line.get_data()
        np.testing.assert_array_equal(x, taus)
        np.testing.assert_array_equal(w, table[:, j])
    assert [line.get_label() for line in lines[:lib.n_books]] == list(lib.titles)
    assert lines[0].get_data()[1][0] > 0.99 and np.allclose([l.get_data()[1][-1] for l in lines[:5]], 0.2, atol=0.02)
    with pytest.raises(ValueError, match="increasing"):
        weights_vs_temperature(taus[::-1], table, lib)
    with pytest.raises(ValueError, match="weights must have shape"):
        weights_vs_temperature(taus, table[:, :3], lib)
    artists = library_and_weights(lib, DEMO_QUERY, temperature=1.0)
    widths = [b.get_width() for b in artists[-1]]
    np.testing.assert_allclose(widths, soft_lookup(DEMO_QUERY, lib, 1.0)[1])
    assert len(plot_library(lib, DEMO_QUERY)) == 2 * lib.n_books + 2
    assert plot_weight_bars([0.5, 0.5], ["a", "b"]).patches[0].axes.get_xlim() == (0, 1)


def test_arrows_have_one_width_and_carry_their_weight_as_a_label():
    lib = demo_library()
    for t in (0.1, 1.0, 10.0):
        w = soft_lookup(DEMO_QUERY, lib, t)[1]
        artists = plot_library(lib, DEMO_QUERY, weights=w)
        arrows, labels = artists[0:2 * lib.n_books:2], artists[1:2 * lib.n_books:2]
        lws = np.array([a.arrow_patch.get_linewidth() for a in arrows])
        np.testing.assert_allclose(lws, KEY_LW)  # width no longer encodes the weight
        assert [lab.get_text() for lab in labels] == [f"{name}\n{x:.2f}" for name, x in zip(lib.short, w)]
    colours = {a.arrow_patch.get_edgecolor()[:3] for a in arrows}
    assert colours == {to_rgb(style.KEY_COLOR)}
    assert [a.get_text() for a in plot_library(lib, DEMO_QUERY)[1:2 * lib.n_books:2]] == \
        list(lib.short)
    with pytest.raises(ValueError, match="weights"):
        plot_library(lib, DEMO_QUERY, weights=[0.5, 0.5])


def _label_boxes_and_arrow_points(ax, artists):
    """Display-space boxes of the tip labels and points sampled along every arrow shaft."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes, shafts = [], []
    for a in artists:
        if a.get_text():
            boxes.append((a.get_text(), a.get_window_extent(renderer)))
        else:
            tip = np.asarray(a.xy, dtype=float)
            pts = np.linspace(0, 1, 200)[:, None] * tip[None, :]  # origin -> tip
            shafts.append(ax.transData.transform(pts))
    return boxes, shafts


@pytest.mark.parametrize("query", [DEMO_QUERY, np.array([0.5, 1.5]), np.array([-1.0, 1.0])])
def test_labels_overlap_neither_each_other_nor_any_arrow(query):
    lib = demo_library()
    for t in (0.1, 1, 10):  # labels carry the weight: check them cold, warm and hot, in the page's figure
        artists = library_and_weights(lib, query, temperature=t)[:-1]  # the key panel's arrows and labels
        ax = artists[0].axes
        boxes, shafts = _label_boxes_and_arrow_points(ax, artists)
        frame = ax.get_window_extent(ax.figure.canvas.get_renderer())
        assert len(boxes) == lib.n_books + 1 and len(shafts) == lib.n_books + 1
        for i, (name, box) in enumerate(boxes):
            for other, box2 in boxes[i + 1:]:
                assert not box.overlaps(box2), f"labels {name!r} and {other!r} overlap"
            for pts in shafts:
                b = box.padded(1)
                inside = (pts[:, 0] > b.x0) & (pts[:, 0] < b.x1) & (pts[:, 1] > b.y0) & (pts[:, 1] < b.y1)
                assert not np.any(inside), f"label {name!r} lies on an arrow"
            assert frame.contains(*box.min) and frame.contains(*box.max), f"label {name!r} leaves the panel"
        plt.close("all")


def test_text_is_at_least_the_books_minimum_size():
    lib = demo_library()
    for artists in (weights_vs_temperature(*_page_table(lib), lib), library_and_weights(lib, DEMO_QUERY)):
        fig = artists[0].figure
        assert fig.get_size_inches()[0] <= style.COLUMN_WIDTH
        sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
        assert min(sizes) >= style.MIN_FONT_PT


def test_library_and_weights_keeps_every_label_inside_a_saved_constrained_figure():
    """The widget's still saves a constrained-layout Figure without a tight box: the left y label
    ("key[1]: about food") must not run past the figure's left edge."""
    from matplotlib.figure import Figure

    from qkv_viz.chapters.ch01_library.figures import library_and_weights
    from qkv_viz.viz import style
    from qkv_viz.viz.canvas import figure_png
    for tau in (0.3, 1.0):
        fig = Figure(figsize=style.figsize(1.0, 0.42), dpi=style.DPI, layout="constrained")
        axes = fig.subplots(1, 2, gridspec_kw=dict(width_ratios=[1, 1.25]))
        library_and_weights(demo_library(), DEMO_QUERY, tau, axes=axes)
        figure_png(fig)  # the save lays the figure out once more, as the widget's does
        renderer = fig.canvas.get_renderer()
        for ax in axes:
            for label in (ax.yaxis.label, ax.xaxis.label, ax.title):
                box = label.get_window_extent(renderer)
                assert box.x0 >= 0 and box.x1 <= fig.bbox.width, label.get_text()


def test_output_as_sum_stacks_each_books_weighted_value_into_the_output():
    from qkv_viz.chapters.ch01_library.figures import output_as_sum
    lib = demo_library()
    out, w = soft_lookup(DEMO_QUERY, lib, 1.0)
    contributions = w[:, None] * lib.values                                     # (5, 3)
    bars = output_as_sum(contributions, lib, ("AI facts", "recipes", "history"))
    assert len(bars) == lib.n_books
    ends = np.array([[p.get_x() + p.get_width() for p in b.patches] for b in bars])  # (5, 3)
    np.testing.assert_allclose(ends[-1], out)                                    # the last piece ends at the output
    np.testing.assert_allclose([[p.get_width() for p in b.patches] for b in bars], contributions)
    texts = [t.get_text() for t in bars[0].patches[0].axes.texts]
    assert [f"= {x:.3f}" for x in out] == [t for t in texts if t.startswith("=")]
    with pytest.raises(ValueError, match="contributions must have shape"):
        output_as_sum(contributions[:, :2], lib, ("AI facts", "recipes", "history"))


def test_the_doubled_query_is_one_marked_pair_on_the_temperature_curves():
    """The page's overlay: 2 * query at tau = 1, drawn as one circle per book at tau = 1/2, lands on the
    curves; the legend names the circles; no second (coupled) x axis; the sqrt(d_k) mark is labelled
    with its value (a cold read found the coupled top axis of c = 1/tau the hardest picture)."""
    lib = demo_library()
    taus, table = _page_table(lib)
    c = 2.0
    w_double = soft_lookup(c * DEMO_QUERY, lib, 1.0)[1]  # (n_books,)
    lines = weights_vs_temperature(taus, table, lib, longer=(c, w_double))
    assert len(lines) == 2 * lib.n_books + 2
    for j, circle in enumerate(lines[-lib.n_books:]):
        x, w = circle.get_data()
        np.testing.assert_allclose(x, [1 / c])
        np.testing.assert_allclose(w, [soft_lookup(DEMO_QUERY, lib, 1 / c)[1][j]], atol=1e-12)
        np.testing.assert_allclose(w, np.interp(1 / c, taus, table[:, j]), atol=0.01)  # on the drawn line
        np.testing.assert_allclose(to_rgb(circle.get_mec()), to_rgb(lines[j].get_color()))  # its book's colour
    ax = lines[0].axes
    assert not ax.child_axes  # one x axis only
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:lib.n_books] == list(lib.titles)
    assert any("2 × query at τ = 1" in t and "τ = 1/2" in t for t in legend)
    assert any("sqrt{d_k} = \\sqrt{2}" in t.get_text() for t in ax.texts)
    with pytest.raises(ValueError, match="longer must be"):
        weights_vs_temperature(taus, table, lib, longer=(c, w_double[:3]))
    with pytest.raises(ValueError, match="longer must be"):
        weights_vs_temperature(taus, table, lib, longer=(0.0, w_double))


def test_a_key_along_a_longer_keys_line_is_drawn_beside_it():
    """Books 0 (2, 0) and 1 (1.5, 0) point the same way: book 1's arrow is shifted a few points to the side
    (and drawn on top), so its shaft is not hidden under book 0's; no other key moves."""
    from qkv_viz.chapters.ch01_library.figures import COLLINEAR_SHIFT_PT, _collinear_shifts
    lib = demo_library()
    shifts = _collinear_shifts(lib.keys)
    np.testing.assert_allclose(shifts[1], [0, -COLLINEAR_SHIFT_PT])
    assert not np.delete(shifts, 1, axis=0).any()
    artists = plot_library(lib, DEMO_QUERY)
    fig = artists[0].figure
    fig.canvas.draw()
    ends = [a.arrow_patch.get_path().vertices for a in artists[0:4:2]]  # display space: books 0 and 1
    assert abs(np.median(ends[0][:, 1]) - np.median(ends[1][:, 1])) >= 0.8 * COLLINEAR_SHIFT_PT * fig.dpi / 72


def test_the_moved_arrow_is_named_in_the_figure():
    """The offset of book 1's arrow is marked in the panel itself, and only when some key was moved."""
    lib = demo_library()
    artists = plot_library(lib, DEMO_QUERY)
    notes = [t.get_text() for t in artists[0].axes.texts if t.get_gid() == "collinear-note"]
    assert notes == ["Deep Learning lies along Attention: drawn offset"]
    apart = type(lib)(lib.titles, lib.keys + np.array([[0, 0], [0, 1.0], [0, 0], [0, 0], [0, 0]]), lib.values)
    artists = plot_library(apart, DEMO_QUERY)
    assert not [t for t in artists[0].axes.texts if t.get_gid() == "collinear-note"]


def test_output_as_sum_names_every_thin_piece_and_gives_no_legend_entry_to_an_invisible_book():
    """Pieces too thin for their number are listed with it beside the bars; a book with no visible
    piece (book 4, weight 0.002 on the page) is named there and left out of the legend."""
    from qkv_viz.chapters.ch01_library.figures import VISIBLE_MIN, output_as_sum
    lib = demo_library()
    _, w = soft_lookup(DEMO_QUERY, lib, 1.0)
    contributions = w[:, None] * lib.values                                     # (5, 3)
    label_min = 0.035
    bars = output_as_sum(contributions, lib, ("AI facts", "recipes", "history"), label_min=label_min)
    ax = bars[0].patches[0].axes
    texts = [t.get_text() for t in ax.texts]
    note = next(t for t in texts if t.startswith("too thin to label"))
    inside = [t for t in texts if not t.startswith(("=", "too thin"))]
    assert sorted(inside) == sorted(f"{x:.2f}" for x in contributions.ravel() if x >= label_min)
    for j, r in zip(*np.nonzero((contributions > 0) & (contributions < label_min))):
        x = contributions[j, r]
        assert (f"{x:.3f}" if x >= 5e-4 else "< 0.001") in note
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    invisible = [j for j in range(lib.n_books) if contributions[j].max() < VISIBLE_MIN]
    assert invisible, "the page's library has a book too thin to see; the test needs one"
    for j in range(lib.n_books):
        named = any(lib.titles[j] in t for t in legend)
        assert named == (j not in invisible)
        thin = ((contributions[j] > 0) & (contributions[j] < label_min)).any()
        assert (lib.titles[j] in note) == bool(thin)              # every book with a thin piece, by title
