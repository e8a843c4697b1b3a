"""Chapter 10's pictures draw what they say (Agg backend, no display)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.colors  # noqa: E402
import matplotlib.image  # noqa: E402
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch10_positions import figures, toy  # noqa: E402
from qkv_viz.core.positions import apply_rope, rope_dots_by_offset, sinusoidal_positions  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_sinusoids_left_panel_draws_chosen_coordinates_as_curves_and_the_cosine_maps_share_one_full_scale():
    P = sinusoidal_positions(20, 8)
    learned = np.random.default_rng(0).normal(size=(12, 6))
    arts = figures.plot_sinusoids(P, learned, pairs=[0, 2])
    lines, (im2, im3) = arts[:2], arts[2:]
    offsets = [line.get_ydata() - P[:, 2 * i] for line, i in zip(lines, (0, 2))]
    for off in offsets:          # each curve is its coordinate, shifted into its own band
        np.testing.assert_allclose(off, off[0])
    assert offsets[0][0] > offsets[1][0] + 2          # bands do not overlap (values in -1..1)
    np.testing.assert_allclose(lines[0].get_xdata(), np.arange(20))
    left = plt.gcf().axes[0]                          # curves labelled by pair, as the title says
    assert [t.get_text().split("\n")[0] for t in left.texts] == ["pair 0", "pair 2"]
    assert "theta_i" in left.get_ylabel()
    np.testing.assert_allclose(im2.get_array(), P @ P.T / 4)          # |p_m|^2 = d_model / 2
    U = learned / np.linalg.norm(learned, axis=1, keepdims=True)
    np.testing.assert_allclose(im3.get_array(), U @ U.T)
    assert im2.get_clim() == im3.get_clim() == (-1, 1)          # one scale, the cosine's full range
    assert im2.cmap.name == im3.cmap.name
    bars = [ax for ax in plt.gcf().axes if ax.get_ylabel().startswith("cosine")]
    assert len(bars) == 1 and "-1 to 1" in bars[0].get_ylabel()   # one named colour bar, limits stated
    plt.close("all")
    default = figures.plot_sinusoids(sinusoidal_positions(64, 384))
    assert len(default) == 5                          # four curves, fast to slow, and one map
    assert not any(isinstance(a, matplotlib.image.AxesImage) for a in default[:4])
    plt.close("all")
    maps = figures.plot_sinusoids(P, learned, waves=False)
    assert len(maps) == 2 and all(isinstance(a, matplotlib.image.AxesImage) for a in maps)
    assert len(plt.gcf().axes) == 3                   # two maps, one shared bar, no wave panel
    plt.close("all")
    alone = figures.plot_sinusoids(P)[-1]             # the map alone also spans -1 to 1: dark is not 0.5
    assert alone.get_clim() == (-1, 1)
    with pytest.raises(ValueError, match="pairs"):
        figures.plot_sinusoids(P, pairs=[4])


def test_sinusoids_own_range_spans_the_maps_values_and_names_the_range_on_its_bar():
    P = sinusoidal_positions(64, 512)                 # every cosine above 0.48: -1..1 would wash it out
    im = figures.plot_sinusoids(P, own_range=True)[-1]
    G = im.get_array()
    lo, hi = im.get_clim()
    assert hi == 1 and lo <= G.min() < lo + 0.1 and lo == round(lo, 1)   # minimum rounded down to 0.1
    assert im.cmap.name != "RdBu_r"                   # sequential: no white-at-0 where 0 is off the scale
    bars = [ax for ax in plt.gcf().axes if ax.get_ylabel().startswith("cosine")]
    assert len(bars) == 1 and f"{lo:.1f} to 1" in bars[0].get_ylabel()
    plt.close("all")
    with pytest.raises(ValueError, match="own_range"):
        figures.plot_sinusoids(P, P[:, :4], own_range=True)


def test_dot_grid_outlines_one_diagonal_and_its_offset_panel_has_one_value_per_column():
    q, k = np.array([1.0, -0.5, 0.3, 0.8]), np.array([0.2, 0.9, -0.4, 0.5])
    grid = toy.dot_grid(q, k, 16)
    im1, im2 = figures.plot_dot_grid(grid, offset=2)
    np.testing.assert_array_equal(im1.get_array(), grid)
    sheared = np.ma.filled(im2.get_array(), np.nan)                   # (16, 31): columns are offsets -15..15
    assert sheared.shape == (16, 31)
    for j in range(31):                                               # one value per offset
        col = sheared[:, j][~np.isnan(sheared[:, j])]
        assert len(col) == 16 - abs(j - 15)
        np.testing.assert_allclose(col, rope_dots_by_offset(q, k, [j - 15])[0], atol=1e-12)
    assert im1.get_clim() == im2.get_clim() == (grid.min(), grid.max())
    outlined = {(round(p.get_y() + 0.5), round(p.get_x() + 0.5)) for p in im1.axes.patches}
    assert sorted(outlined) == [(m, m + 2) for m in range(14)]
    assert {(p.get_x() + 0.5, p.get_height()) for p in im2.axes.patches} == {(2 + 15, 14)}
    assert [t.get_text() for t in im1.axes.get_xticklabels()] == ["0", "5", "10", "15"]
    assert [t.get_text() for t in im2.axes.get_xticklabels()] == ["-15", "-10", "-5", "0", "5", "10", "15"]
    assert plt.gcf().axes[-1].get_ylabel() == "$q_m \\cdot k_n$"            # the colour bar says what it shows
    with pytest.raises(ValueError, match="offset"):
        figures.plot_dot_grid(grid, offset=16)
    with pytest.raises(ValueError, match="square"):
        figures.by_offset(grid[:3])


def test_head_panels_show_the_weights_on_0_to_1():
    w = np.full((4, 4), 0.25), np.eye(4)
    ims = figures.plot_head(w)
    for im, want in zip(ims, w):
        np.testing.assert_array_equal(im.get_array(), want)
        assert im.get_clim() == (0, 1)


def test_turning_labels_sit_off_the_arrowheads_and_the_arc_angle_is_in_the_label():
    q, k = np.array([1.0, 0.0, 0.5, 0.5]), np.array([0.0, 1.0, 1.0, 0.0])
    arts = figures.plot_turning(q, k, m=1, n=3)
    labels = [a for a in arts if hasattr(a, "get_text") and a.get_text() in ("q at 1", "k at 3")]
    assert len(labels) == 2
    tips = {"q at 1": np.array([np.cos(1), np.sin(1)]), "k at 3": np.array([-np.sin(3), np.cos(3)])}
    for lab in labels:   # far apart (160 degrees): each label along its own arrow, beyond the head
        pos, tip = np.array(lab.get_position()), tips[lab.get_text()]
        assert np.linalg.norm(pos) > 1.1 * np.linalg.norm(tip)
        assert abs(np.arctan2(pos[1], pos[0]) - np.arctan2(tip[1], tip[0])) < 1e-9
    # the angle from q (1 rad) to k (3 + pi/2 rad), wrapped to -180..180, in the axis label
    want = np.degrees((3 + np.pi / 2 - 1 + np.pi) % (2 * np.pi) - np.pi)
    assert f"arc: {want:.0f}° from q to k" in labels[0].axes.get_xlabel()


def test_turning_labels_of_close_arrows_are_pushed_apart_and_dashes_show_both_colours():
    """The widget's still: key = query, 17 degrees apart; the labels must not overlap."""
    from qkv_viz.viz import style

    fig, ax = plt.subplots()
    q, k = toy.widget_vectors()
    arts = figures.plot_turning(q[:8], k[:8], m=2, n=5, pair=1, ax=ax)
    fig.canvas.draw()
    labels = [a for a in arts if hasattr(a, "get_text") and a.get_text() in ("q at 2", "k at 5")]
    boxes = [lab.get_window_extent() for lab in labels]
    assert not boxes[0].overlaps(boxes[1])
    dashed = [a for a in arts if hasattr(a, "arrow_patch") and a.arrow_patch.get_linestyle() != "solid"]
    assert len(dashed) == 2
    colours = {matplotlib.colors.to_hex(a.arrow_patch.get_edgecolor()) for a in dashed}
    assert colours == {matplotlib.colors.to_hex(style.QUERY_COLOR), matplotlib.colors.to_hex(style.KEY_COLOR)}


def test_turning_title_is_the_pairs_dot_product():
    q, k = np.array([1.0, 0.0, 0.5, 0.5]), np.array([0.0, 1.0, 1.0, 0.0])
    arts = figures.plot_turning(q, k, m=1, n=3)
    title = arts[-1].get_text()
    # pair 0 turned by 1 and 3 rad: q0 = (cos 1, sin 1), k0 = (-sin 3, cos 3)
    want = np.cos(1) * -np.sin(3) + np.sin(1) * np.cos(3)
    assert f"{want:.3f}" in title and title.startswith("pair 0") and "\n" not in title


def test_offset_curve_marks_the_current_offset():
    q, k = toy.widget_vectors()
    line, marker = figures.plot_offset_curve(q[:8], k[:8], 10000.0, 32, 2, 5)[:2]
    assert marker.get_xdata()[0] == 3
    np.testing.assert_allclose(marker.get_ydata()[0], rope_dots_by_offset(q[:8], k[:8], [3])[0])
    assert len(line.get_xdata()) == 63


def test_decay_panel_draws_the_closed_form():
    d = np.arange(0, 100)
    arts = figures.plot_frequencies_and_decay(16, 10000.0, d, toy.expected_decay(16, d))
    np.testing.assert_allclose(arts[1].get_ydata(), toy.expected_decay(16, d))


def test_head_map_names_its_tokens_and_refuses_a_wrong_count():
    import matplotlib.pyplot as plt
    w = np.eye(3)
    ims = figures.plot_head([w, w], tokens=[None, ["dog", "bites", "man"]])
    ax = ims[1].axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["dog", "bites", "man"]
    assert ims[0].axes.get_xlabel() == "key position n"
    plt.close("all")
    with pytest.raises(ValueError, match="tokens must"):
        figures.plot_head([w], tokens=[["dog", "man"]])


def test_frequency_panel_is_the_cosine_map_with_a_mathtext_bar_label():
    import matplotlib.pyplot as plt
    im, line = figures.plot_frequencies_and_decay(8, 10000.0, np.arange(5), np.ones(5), T=10)
    assert im.get_array().shape == (10, 4)                 # positions 0..9, pairs 0..3
    assert any("$\\cos(m\\,\\theta_i)$" in ax.get_xlabel() for ax in plt.gcf().axes)   # the bar, under the map
    plt.close("all")


def test_angle_map_is_the_cosine_of_m_theta_i_on_a_diverging_map_with_a_labelled_bar():
    from qkv_viz.core.positions import rope_frequencies

    im, bar = figures.plot_angles(40, 16)
    want = np.cos(np.arange(40)[:, None] * rope_frequencies(16)[None, :])   # (40, 8)
    np.testing.assert_allclose(im.get_array(), want)
    assert im.get_array()[1, 0] == pytest.approx(np.cos(1.0))   # pair 0 turns 1 radian per position
    assert im.get_clim() == (-1, 1) and im.get_cmap().name == "RdBu_r"   # symmetric, not cyclic
    assert "cos" in bar.ax.get_xlabel() and bar.orientation == "horizontal"   # under the map, clear of a neighbour


def test_decay_panel_draws_the_bound_beside_the_match_and_refuses_a_wrong_length():
    import matplotlib.pyplot as plt
    d = np.arange(6)
    arts = figures.plot_frequencies_and_decay(8, 10000.0, d, np.ones(6), bound=np.linspace(1, 0.5, 6))
    np.testing.assert_allclose(arts[2].get_ydata(), np.linspace(1, 0.5, 6))
    assert [t.get_text() for t in arts[2].axes.get_legend().get_texts()][1].startswith("the paper's bound")
    plt.close("all")
    with pytest.raises(ValueError, match="bound must have one value per distance"):
        figures.plot_frequencies_and_decay(8, 10000.0, d, np.ones(6), bound=np.ones(5))
    plt.close("all")


def test_sentence_weights_grid_has_one_map_per_sentence_and_condition_with_labelled_rows():
    plt.close("all")
    w = np.full((3, 3), 1 / 3), np.eye(3)
    ims = figures.plot_sentence_weights([w, w[::-1]], ["dog bites man", "man bites dog"], ["none", "RoPE"])
    assert len(ims) == 4
    np.testing.assert_array_equal(ims[1].get_array(), np.eye(3))
    assert all(im.get_clim() == (0, 1) for im in ims)
    assert [t.get_text() for t in ims[2].axes.get_yticklabels()] == ["man", "bites", "dog"]
    assert "man bites dog" in ims[2].axes.get_ylabel() and ims[0].axes.get_title() == "none"
    assert len(ims[0].axes.texts) == 9                                 # every weight printed
    assert plt.gcf().axes[-1].get_ylabel() == "weights"
    with pytest.raises(ValueError, match="rows of 2 maps"):
        figures.plot_sentence_weights([w], ["dog bites man", "man bites dog"], ["none", "RoPE"])
    with pytest.raises(ValueError, match="must be"):
        figures.plot_sentence_weights([[np.eye(2)]], ["dog bites man"], ["none"])


def test_rope_toy_draws_pair_0_turned_to_each_position_and_names_the_pair_parts():
    W_q, W_k, _ = toy.constructed()
    X = toy.sentence("dog bites man")
    q, k = (X @ W_q)[1], (X @ W_k)[0]
    fig, ax = plt.subplots()
    arts = figures.plot_rope_toy(q, {"dog": (k, 0), "man": (k, 2)}, m=1, query_name="bites", ax=ax)
    turned = [a.xy for a in arts if hasattr(a, "xy") and hasattr(a, "arrow_patch")][1::2]   # solid arrows
    np.testing.assert_allclose(turned[0], 2 * np.array([np.cos(1.0), np.sin(1.0)]))    # q at 1
    np.testing.assert_allclose(turned[1], [0, 2], atol=1e-12)                           # dog's key at 0
    np.testing.assert_allclose(turned[2], 2 * np.array([-np.sin(2.0), np.cos(2.0)]))   # man's key at 2
    text = arts[-1].get_text()
    assert f"dog (key) at 0: {4 * np.sin(1.0):+.2f}" in text and f"man (key) at 2: {-4 * np.sin(1.0):+.2f}" in text


def test_decay_panel_draws_sample_means_as_dots_with_a_legend():
    d = np.arange(0, 17)
    arts = figures.plot_frequencies_and_decay(16, 10000.0, d, toy.expected_decay(16, d),
                                              sampled={"k = q": (d[::4], np.ones(5)), "independent": (d[::4], np.zeros(5))})
    dots = arts[-2:]
    assert [a.get_label() for a in dots] == ["k = q", "independent"] and all(a.get_marker() == "o" for a in dots)
    np.testing.assert_allclose(dots[1].get_ydata(), 0)
    assert dots[0].axes.get_legend() is not None
