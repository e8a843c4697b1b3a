"""Chapter 9's static pictures: the value side of [CLS], one head's scores beside its
weights, and one token's attention row in chosen heads for two sentences."""
from __future__ import annotations

import numpy as np

from qkv_viz.core.validate import as_array
from qkv_viz.viz import style


def value_side_figure(norm_special, norm_other, weight_share, moved_share, special="[CLS]"):
    """Two panels per layer: (left) mean ||v W_o|| of the token ``special`` vs the other
    tokens; (right) share of the attention weight on it vs its share of what is moved.

    The four arrays are (L,). Returns the figure (closed, for display).
    """
    import matplotlib.pyplot as plt

    arrays = [as_array(n, a, ndim=1) for n, a in (("norm_special", norm_special), ("norm_other", norm_other),
                                                   ("weight_share", weight_share), ("moved_share", moved_share))]
    L = arrays[0].shape[0]
    if any(a.shape != (L,) for a in arrays):
        raise ValueError(f"all four arrays must have shape (L,), got {[a.shape for a in arrays]}")
    layers, width = np.arange(L), 0.38
    fig, axes = plt.subplots(1, 2, figsize=style.figsize(1.0, 0.36), layout="constrained")
    # left: two groups of tokens (neutral series colours); right: weights come from q . k (key
    # colour), what is moved comes from the values (value colour)
    pairs = [(arrays[0], arrays[1], special, "other tokens", "mean ‖v W_o‖ per head",
              "how much a token can move the output", (style.SERIES[0], style.SERIES[1])),
             (arrays[2], arrays[3], "share of the weight", "share of what is moved", f"share on {special}",
              "weight parked vs output delivered", (style.KEY_COLOR, style.VALUE_COLOR))]
    for ax, (a, b, la, lb, ylabel, title, (ca, cb)) in zip(axes, pairs):
        ax.bar(layers - width / 2, a, width, color=ca, label=la)
        ax.bar(layers + width / 2, b, width, color=cb, label=lb)
        ax.set_xticks(layers)
        ax.set_xlabel("layer")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(loc="upper right")
    axes[0].set_ylim(0, 1.25 * max(arrays[0].max(), arrays[1].max()))
    axes[1].set_ylim(0, 1)
    plt.close(fig)
    return fig


def token_row_figure(rows, tokens, titles, labels):
    """Bars of one query's attention row: ``rows`` (P, R, T) for P panels and R series.

    ``tokens`` (T,) label the keys; ``titles`` (P,) the panels; ``labels`` (R,)
    the series (e.g. two sentences). Returns the figure (closed, for display).
    """
    import matplotlib.pyplot as plt

    rows = as_array("rows", rows, ndim=3)
    P, R, T = rows.shape
    if len(tokens) != T or len(titles) != P or len(labels) != R:
        raise ValueError(f"rows has shape {rows.shape} but got {len(tokens)} tokens, "
                         f"{len(titles)} titles, {len(labels)} labels")
    fig, axes = plt.subplots(1, P, figsize=style.figsize(1.0, 0.4), layout="constrained", sharey=True,
                             squeeze=False)
    x, width = np.arange(T), 0.8 / R
    colors = [style.SERIES[i % len(style.SERIES)] for i in range(R)]
    for ax, panel, title in zip(axes[0], rows, titles):
        for r, (row, label) in enumerate(zip(panel, labels)):
            ax.bar(x + (r - (R - 1) / 2) * width, row, width, color=colors[r], label=label)
        ax.set_xticks(x, list(tokens), rotation=90)
        ax.set_title(title)
        ax.set_xlabel("keys (attended to)")
        ax.set_ylim(0, 1)
    axes[0, 0].set_ylabel(style.WEIGHTS_LABEL)
    axes[0, -1].legend(loc="upper right")
    plt.close(fig)
    return fig


def scores_weights_figure(scores, weights, tokens, marked, title=""):
    """One head's scores (T, T) before softmax (left, diverging colours) beside its weights
    (right, 0..1), keys on columns, queries on rows; the rows of the tokens in ``marked``
    are outlined on both panels. Returns the figure (closed, for display)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from qkv_viz.viz.plots import attention_heatmap, scores_heatmap

    scores, weights = as_array("scores", scores, ndim=2), as_array("weights", weights, ndim=2)
    T = scores.shape[0]
    if scores.shape != (T, T) or weights.shape != (T, T) or len(tokens) != T:
        raise ValueError(f"scores {scores.shape} and weights {weights.shape} must both be (T, T) "
                         f"for the {len(tokens)} tokens")
    rows = [list(tokens).index(t) for t in marked]  # ValueError names a token that is not there
    fig, axes = plt.subplots(1, 2, figsize=style.figsize(1.0, 0.52), layout="constrained")
    scores_heatmap(scores, ax=axes[0], tokens_q=tokens, tokens_k=tokens, annotate=False,
                   title="scores  q·k/√d_k", colorbar_label="scores")
    attention_heatmap(weights, ax=axes[1], tokens_q=tokens, tokens_k=tokens, annotate=False,
                      title="weights = softmax of each row", colorbar_label="weights")
    for ax, edge in zip(axes, ("black", "white")):  # visible on the pale scores and the dark weights
        for i in rows:
            ax.add_patch(Rectangle((-0.5, i - 0.5), T, 1, fill=False, lw=1.6, ec=edge))
        ax.set_xlabel("keys (attended to)")
        ax.set_ylabel("queries (attending)")
    if title:
        fig.suptitle(title)
    plt.close(fig)
    return fig
