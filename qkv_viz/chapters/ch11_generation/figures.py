"""Chapter 11's static figure: the work of each generation step, with and without the cache."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from qkv_viz.core.kv_cache import step_flops
from qkv_viz.viz import style


def plot_step_costs(d_model: int = 64, n_heads: int = 4, T: int = 1024, ax=None):
    """FLOPs of step t (t = 0..T-1) for one layer, cached and uncached, on linear axes:
    a line and a parabola; an inset draws the cached line on its own scale.

    Returns the two ``Line2D`` artists (cached, uncached).
    """
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.8, 0.4), layout="constrained")
    t = np.arange(T)
    cached = [step_flops(d_model, n_heads, int(i)) for i in t]
    rerun = [step_flops(d_model, n_heads, int(i), cached=False) for i in t]
    (a,) = ax.plot(t, cached, color=style.SCALED_COLOR, label="with the K/V cache")
    (b,) = ax.plot(t, rerun, color=style.UNSCALED_COLOR, label="without: the whole prefix again")
    ax.set(xlabel="token t (step)", ylabel="FLOPs of the step",
           title=f"one layer, d_model = {d_model}, {n_heads} heads: linear with the cache, quadratic without")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e6:,.0f}M"))
    ax.legend(loc="lower right", bbox_to_anchor=(1, 0.08))
    inset = ax.inset_axes((0.1, 0.4, 0.28, 0.42))  # the cached line on its own linear scale
    inset.plot(t, cached, color=style.SCALED_COLOR)
    inset.set_title("with the cache, zoomed in", fontsize=8)
    inset.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e3:,.0f}k"))
    inset.tick_params(labelsize=7)
    return a, b
