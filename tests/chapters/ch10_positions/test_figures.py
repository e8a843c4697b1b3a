"""Chapter 10's pictures draw what they say (Agg backend, no display)."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch10_positions import figures, toy  # noqa: E402
from qkv_viz.core.positions import rope_dots_by_offset, sinusoidal_positions  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_sinusoids_panels_show_P_and_its_gram_matrix():
    P = sinusoidal_positions(20, 8)
    im1, im2 = figures.plot_sinusoids(P)
    np.testing.assert_allclose(im1.get_array(), P)
    np.testing.assert_allclose(im2.get_array(), P @ P.T)


def test_dot_grid_ticks_do_not_run_together():
    im = figures.plot_dot_grid(np.arange(256.0).reshape(16, 16))
    assert [t.get_text() for t in im.axes.get_xticklabels()] == ["0", "5", "10", "15"]


def test_turning_title_is_the_pairs_dot_product():
    q, k = np.array([1.0, 0.0, 0.5, 0.5]), np.array([0.0, 1.0, 1.0, 0.0])
    arts = figures.plot_turning(q, k, m=1, n=3)
    title = arts[-1].get_text()
    # pair 0 turned by 1 and 3 rad: q0 = (cos 1, sin 1), k0 = (-sin 3, cos 3)
    want = np.cos(1) * -np.sin(3) + np.sin(1) * np.cos(3)
    assert f"{want:.3f}" in title and "m = 1, n = 3" in title


def test_offset_curve_marks_the_current_offset():
    q, k = toy.widget_vectors()
    line, marker = figures.plot_offset_curve(q[:8], k[:8], 10000.0, 32, 2, 5)[:2]
    assert marker.get_xdata()[0] == 3
    np.testing.assert_allclose(marker.get_ydata()[0], rope_dots_by_offset(q[:8], k[:8], [3])[0])
    assert len(line.get_xdata()) == 63
