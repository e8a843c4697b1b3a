"""Chapter 9's static pictures: the value side of [CLS], one head's scores beside its
weights, and one token's attention row in chosen heads for two sentences."""
from __future__ import annotations

import numpy as np

from qkv_viz.core.validate import as_array
from qkv_viz.viz import style


def value_side_figure(norm_special, norm_other, weight_share, moved_share, special="[CLS]"):
    """Two panels per layer: (left) mean ||v W_o|| of the token ``special`` vs the other
    tokens; (right) share of the attention weight on it vs its share of weight x value length
    (a sum of lengths, not the output's length: vectors can cancel).

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
    # colour), the value length comes from the values (value colour)
    pairs = [(arrays[0], arrays[1], special, "other tokens", "mean ‖v W_o‖ per head",
              "how much a token can move the output", (style.SERIES[0], style.SERIES[1])),
             (arrays[2], arrays[3], "share of the weight", "share of weight × value length", f"share on {special}",
              "weight vs weight × value length", (style.KEY_COLOR, style.VALUE_COLOR))]
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


def encoder_layer_diagram(config, T: int | str = "T", ax=None):
    """One encoder layer as a block diagram with the shapes of ``config`` (``d_model``,
    ``n_heads``, ``d_k``, ``d_ff``, ``n_layers``): the attention sub-layer on the top row,
    the feed-forward sub-layer below, each with its residual and LayerNorm (BERT's order).
    ``T`` is the number of tokens (a number or the letter). Returns the artists
    (boxes, texts, arrows); with ``ax=None`` a figure is made and closed (``ax.figure``)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    d, H, d_k, d_ff = config.d_model, config.n_heads, config.d_k, config.d_ff
    if ax is None:
        fig, ax = plt.subplots(figsize=style.figsize(1.0, 0.34))
        fig.subplots_adjust(0, 0, 1, 0.9)
        plt.close(fig)
    ax.set_xlim(0, 12.4)
    ax.set_ylim(0, 4.2)
    ax.set_axis_off()
    artists = []
    attn, ffn, data = "#E8F1FA", "#EAF6EF", "#F4F4F4"  # pale fills: the text stays black on them
    pt = style.ANNOTATION_PT

    def box(x, y, w, text, shape, fill, edge="0.35"):
        artists.append(ax.add_patch(FancyBboxPatch((x - w / 2, y - 0.42), w, 0.84, boxstyle="round,pad=0.04",
                                                   fc=fill, ec=edge, lw=1.2)))
        artists.append(ax.text(x, y + 0.14, text, ha="center", va="center", fontsize=style.FONT_PT))
        artists.append(ax.text(x, y - 0.2, shape, ha="center", va="center", fontsize=pt, color="0.25"))
        return x - w / 2, x + w / 2

    def arrow(a, b, rad=0.0, **kw):
        artists.append(ax.add_patch(FancyArrowPatch(a, b, arrowstyle="-|>", mutation_scale=11, lw=1.2,
                                                    color="0.2", connectionstyle=f"arc3,rad={rad}",
                                                    shrinkA=0, shrinkB=0, **kw)))

    def plus(x, y):
        artists.append(ax.add_patch(plt.Circle((x, y), 0.2, fc="white", ec="0.2", lw=1.2)))
        artists.append(ax.text(x, y, "+", ha="center", va="center", fontsize=style.TITLE_PT))
        return x - 0.2, x + 0.2

    def line(*points):  # a bent connector; the last segment ends in an arrow head
        xs, ys = zip(*points)
        artists.extend(ax.plot(xs[:-1], ys[:-1], color="0.2", lw=1.2, solid_capstyle="butt"))
        arrow(points[-2], points[-1])

    top, low, P, LN = 3.0, 1.0, 8.6, 9.95  # rows; x of the two sums and the two LayerNorms
    # the attention sub-layer: X -> Q, K, V -> heads -> concat, W_o -> + X -> LayerNorm -> Y
    row = [box(0.6, top, 1.0, "X", f"{T} × {d}", data),
           box(2.25, top, 1.9, "Q, K, V = X W + b", f"{H} × {T} × {d_k}", attn, style.KEY_COLOR),
           box(4.55, top, 2.3, f"softmax(Q Kᵀ/√{d_k}) V", f"{H} heads: {H} × {T} × {d_k}", attn, style.KEY_COLOR),
           box(7.0, top, 2.1, "concat · W_o + b_o", f"Attn: {T} × {d}", attn, style.KEY_COLOR)]
    row.append(plus(P, top))
    row.append(box(LN, top, 1.7, "LayerNorm", f"Y: {T} × {d}", data))
    for (_, right), (left, _) in zip(row, row[1:]):
        arrow((right, top), (left, top))
    line((0.6, top + 0.46), (0.6, 3.85), (P, 3.85), (P, top + 0.2))  # the residual: X skips the attention
    artists.append(ax.text(4.55, 3.92, "residual: + X", ha="center", va="bottom", fontsize=pt, color="0.25"))
    # the feed-forward sub-layer: Y -> W_1, GELU -> W_2 -> + Y -> LayerNorm -> the next layer's X
    low_row = [box(2.25, low, 1.9, "GELU(Y W_1 + b_1)", f"{T} × {d_ff}", ffn, style.VALUE_COLOR),
               box(4.55, low, 1.7, "· W_2 + b_2", f"{T} × {d}", ffn, style.VALUE_COLOR)]
    low_row.append(plus(P, low))
    low_row.append(box(LN, low, 1.7, "LayerNorm", f"X_next: {T} × {d}", data))
    for (_, right), (left, _) in zip(low_row, low_row[1:]):
        arrow((right, low), (left, low))
    line((LN, top - 0.46), (LN, 2.0), (2.25, 2.0), (2.25, low + 0.46))  # Y down to the feed-forward block
    line((P, 2.0), (P, low + 0.2))  # the residual: Y skips the feed-forward block
    artists.append(ax.text(P - 0.1, 1.6, "residual: + Y", ha="right", va="center", fontsize=pt, color="0.25"))
    arrow((LN + 0.85, low), (11.45, low))
    artists.append(ax.text(11.5, low, f"next\nlayer\n(× {config.n_layers})", ha="left", va="center",
                           fontsize=pt))
    artists.append(ax.text(0.05, 2.3, f"attention: {H} heads of d_k = {d_k}", ha="left", va="center",
                           fontsize=style.FONT_PT, color=style.KEY_COLOR))
    artists.append(ax.text(0.05, 0.25, f"feed-forward: {d} → {d_ff} → {d}, each token on its own",
                           ha="left", va="center", fontsize=style.FONT_PT, color=style.VALUE_COLOR))
    return artists


def query_key_figure(cosines, key_norms, q_norm, tokens, marked=(), title=""):
    """One query against every key: bars of cos(q, k_j) per key (T,), each bar labelled
    with its key's length ||k_j||; ``q_norm`` (the query's length) goes in the y label, since
    the score is ||q|| ||k_j|| cos(q, k_j) / sqrt(d_k). Keys in ``marked`` are outlined in black.
    Returns the figure (closed, for display)."""
    import matplotlib.pyplot as plt

    cosines, key_norms = as_array("cosines", cosines, ndim=1), as_array("key_norms", key_norms, ndim=1)
    T = cosines.shape[0]
    if key_norms.shape != (T,) or len(tokens) != T:
        raise ValueError(f"cosines {cosines.shape} and key_norms {key_norms.shape} must both be (T,) "
                         f"for the {len(tokens)} tokens")
    fig, ax = plt.subplots(figsize=style.figsize(1.0, 0.4), layout="constrained")
    x = np.arange(T)
    edges = ["black" if t in marked else style.KEY_COLOR for t in tokens]
    ax.bar(x, cosines, 0.7, color=style.KEY_COLOR, edgecolor=edges,
           linewidth=[2.0 if t in marked else 0.5 for t in tokens])
    lo, hi = min(cosines.min(), 0), max(cosines.max(), 0)
    pad = 0.04 * (hi - lo)
    for xi, cj, nj in zip(x, cosines, key_norms):
        ax.text(xi, cj + (pad if cj >= 0 else -pad), f"{nj:.1f}", ha="center",
                va="bottom" if cj >= 0 else "top", fontsize=9)
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_ylim(lo - 4 * pad, hi + 4 * pad)
    ax.set_xticks(x, list(tokens), rotation=90)
    ax.set_xlabel("keys (attended to); the number on a bar is the key's length ‖k_j‖")
    ax.set_ylabel(f"cos(q, k_j), ‖q‖ = {q_norm:.1f}")
    if title:
        ax.set_title(title)
    plt.close(fig)
    return fig
