"""Chapter 11's step-cost figure draws the counted FLOPs of both ways."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from qkv_viz.chapters.ch11_generation.figures import plot_step_costs  # noqa: E402
from qkv_viz.core.kv_cache import step_flops  # noqa: E402


def test_lines_are_the_counted_flops():
    fig, ax = plt.subplots()
    cached, rerun = plot_step_costs(64, 4, T=50, ax=ax)
    np.testing.assert_array_equal(cached.get_xdata(), np.arange(50))
    assert list(cached.get_ydata()) == [step_flops(64, 4, t) for t in range(50)]
    assert list(rerun.get_ydata()) == [step_flops(64, 4, t, cached=False) for t in range(50)]
    assert ax.get_yscale() == "linear" and len(ax.get_legend().get_texts()) == 2
    plt.close(fig)
