"""The scaling explorer as a static picture (the ``image/png`` of its output).

The live figure is drawn in the browser (``qkv_viz/viz/js/explorer.js``); this
matplotlib version of the same three panels is what a viewer without JavaScript
shows: GitHub's preview, ``nbconvert`` without widget state.
"""
from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from qkv_viz.chapters.ch04_scaling.explorer import D_KS
from qkv_viz.viz import style
from qkv_viz.viz.plots import attention_heatmap, metric_vs_dk

METRIC_LABELS = {
    "max_weight": "max weight (row mean)",
    "effective_tokens": "effective tokens (row mean)",
    "entropy": "row entropy, nats (row mean)",
    "score_std": "score std (row mean)",
    "grad_norm": "softmax grad norm (row mean)",
}


def explorer_figure(weights, curves, d_k: int, scale: bool, query: int = 0,
                    metric: str = "max_weight") -> Figure:
    """Heatmap of ``weights`` (n, n), query ``query``'s weights as bars, ``metric`` vs d_k.

    ``curves`` is ``explorer.dk_curves(...)``. Returns a Figure (no pyplot).
    """
    fig = Figure(figsize=style.figsize(1.0, 0.36), dpi=style.DPI, layout="constrained")
    ax_w, ax_b, ax_m = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1.15, 1, 1]})
    attention_heatmap(weights, ax=ax_w, annotate=False,
                      title=f"weights, d_k = {d_k}, {'scaled' if scale else 'not scaled'}")
    row = np.asarray(weights)[query]  # (n,) one query's weights over the keys
    ax_b.bar(np.arange(row.size), row, color=style.QUERY_COLOR)
    ax_b.set(ylim=(0, 1), xlabel="keys", ylabel="weight", title=f"query {query}'s weights")
    metric_vs_dk(D_KS, curves[metric]["scaled"], curves[metric]["unscaled"], ax=ax_m,
                 label=METRIC_LABELS[metric], current=d_k)
    ax_m.set_xlabel("$d_k$")
    ax_m.legend(fontsize=style.FONT_PT - 1, loc="upper left", frameon=False)
    if metric == "score_std":
        ax_m.set_yscale("log")
    return fig
