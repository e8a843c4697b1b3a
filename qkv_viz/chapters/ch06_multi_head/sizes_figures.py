"""Chapter 6 pictures of sizes: W_q's column blocks becoming heads, FLOPs against T,
and the parameter/FLOP table of one layer.

Plot functions take ``ax=None``, return the artists they drew and never call
``plt.show()``. Colours come from :mod:`qkv_viz.viz.style`.
"""
from __future__ import annotations

import matplotlib.pyplot as plt

from qkv_viz.core.config import AttentionConfig
from qkv_viz.core.sizes import attention_flops, param_count
from qkv_viz.viz import style

INPUT_COLOR = "0.86"  # X: not split into heads (lighter than the 8th head's grey)


def head_colors(n_heads: int) -> list:
    """One colour per head (the book's series colours, then grey; cycled when H > 8)."""
    palette = list(style.SERIES) + ["#999999"]
    return [palette[i % len(palette)] for i in range(n_heads)]


# ---------------------------------------------------------------- W_q's blocks -> heads
def _block(ax, x, y_top, width, height, color, alpha=1.0):
    return ax.add_patch(plt.Rectangle((x, y_top - height), width, height, facecolor=color,
                                      edgecolor="white", lw=0.8, alpha=alpha))


def plot_projection_shapes(config: AttentionConfig, T: int, ax=None, head: int | None = None,
                           min_rows_drawn: int = 0):
    """``X (T, d_model) @ W_q (d_model, H d_k) = Q (T, H d_k) -> (H, T, d_k)``, drawn to scale
    (but see ``min_rows_drawn``).

    W_q's and Q's columns are cut into ``n_heads`` blocks of ``d_k``, one colour
    per head (:func:`head_colors`); the last panel is the same blocks after
    reshape and transpose: H cards of shape (T, d_k), head 0 in front. With
    ``head`` given, the other heads are faded so one head's slice stands out.
    The token axis is drawn ``max(T, min_rows_drawn)`` units tall, so a short
    sentence stays visible next to the (d_model x d_model) W_q; the labels
    always say the true T.

    Returns the rectangles: X, then W_q's H blocks, Q's H blocks, the H cards.
    """
    c = config
    if head is not None and not (isinstance(head, int) and 0 <= head < c.n_heads):
        raise ValueError(f"head must be None or an int in 0..{c.n_heads - 1}, got {head!r}")
    T = int(T)
    if T < 1:
        raise ValueError(f"T must be a positive number of tokens, got {T}")
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(1.0, 0.3))
    labelled_T, T = T, max(T, int(min_rows_drawn))   # T from here on: the drawn height
    colors = head_colors(c.n_heads)
    alpha = [1.0 if head is None or h == head else 0.25 for h in range(c.n_heads)]
    gap, artists = 0.22 * c.d_model, []
    label_y = 0.06 * c.d_model

    def label(x, text):
        ax.text(x, label_y, text, ha="center", va="bottom", fontsize=style.FONT_PT)

    # X @ W_q = Q
    x = 0.0
    artists.append(_block(ax, x, 0, c.d_model, T, INPUT_COLOR))
    label(x + c.d_model / 2, f"X ({labelled_T} x {c.d_model})")
    x += c.d_model
    ax.text(x + gap / 2, -T / 2, "@", ha="center", va="center", fontsize=style.TITLE_PT)
    x += gap
    for name, rows, shown in (("W_q", c.d_model, c.d_model), ("Q", T, labelled_T)):
        for h in range(c.n_heads):
            artists.append(_block(ax, x + h * c.d_k, 0, c.d_k, rows, colors[h], alpha[h]))
            if name == "W_q":
                ax.text(x + (h + 0.5) * c.d_k, -0.5 * c.d_k, str(h), ha="center", va="center",
                        fontsize=style.ANNOTATION_PT, color="black" if alpha[h] == 1 else "0.5")
        label(x + c.d_head_total / 2, f"{name} ({shown} x {c.d_head_total})")
        x += c.d_head_total
        if name == "W_q":
            ax.text(x + gap / 2, -T / 2, "=", ha="center", va="center", fontsize=style.TITLE_PT)
        else:  # Q -> the stack of heads
            ax.annotate("", xy=(x + gap * 0.85, -T / 2), xytext=(x + gap * 0.15, -T / 2),
                        arrowprops=dict(arrowstyle="->", lw=1.2))
        x += gap
    # the stack of H cards (T, d_k): head H-1 at the back, head 0 in front
    step = min(0.6 * c.d_k, 2.0 * c.d_model / max(c.n_heads, 1) / 4)
    cards = []
    for h in reversed(range(c.n_heads)):
        cards.append(_block(ax, x + h * step, h * step * 0.6, c.d_k, T, colors[h], alpha[h]))
    artists.extend(reversed(cards))  # in head order
    width = (c.n_heads - 1) * step + c.d_k
    ax.text(x + width, (c.n_heads - 1) * step * 0.6 + label_y, f"(H, T, d_k) = ({c.n_heads}, {labelled_T}, {c.d_k})",
            ha="right", va="bottom", fontsize=style.FONT_PT)
    ax.text(x - gap / 2, -T - 0.04 * c.d_model, "reshape +\ntranspose", ha="center", va="top",  # below the cards
            fontsize=style.ANNOTATION_PT)
    x += width
    top = max(label_y + 0.12 * c.d_model, (c.n_heads - 1) * step * 0.6 + 0.2 * c.d_model)
    ax.set(xlim=(-10, x + 10), ylim=(-1.03 * max(T, c.d_model), top), aspect="equal")
    ax.axis("off")
    return artists


# ---------------------------------------------------------------- cost against T
def plot_flops_vs_T(config: AttentionConfig, Ts, ax=None):
    """FLOPs of one layer against sequence length T, log-log. Returns the lines.

    Q/K/V projections and W_o grow like T; scores and the weighted sum like T^2.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.7, 0.55))
    parts = [attention_flops(config, int(T)) for T in Ts]
    series = {"Q, K, V projections": [p["projections"] for p in parts],
              "scores + weighted sum": [p["scores"] + p["weighted_sum"] for p in parts],
              "output W_o": [p["output"] for p in parts],
              "total": [p["total"] for p in parts]}
    colors = list(style.SERIES[:3]) + [style.OKABE_ITO[0]]
    lines = [ax.loglog(Ts, y, label=name, color=col, lw=2.2 if name == "total" else 1.4)[0]
             for (name, y), col in zip(series.items(), colors)]
    ax.set(xlabel="sequence length T (tokens)", ylabel="FLOPs per layer")
    ax.legend()
    return lines


# ---------------------------------------------------------------- the size table
def size_report(config: AttentionConfig, T: int) -> list:
    """Rows ``(label, number)`` of parameter counts and FLOPs for one layer at T tokens."""
    c = config
    qkv = dict(include_output=False)
    no_b, with_b = param_count(c, bias=False, **qkv), param_count(c, bias=True, **qkv)
    flops = attention_flops(c, T)
    return [
        (f"one head: W_q, W_k, W_v ({c.d_model}x{c.d_k}, {c.d_model}x{c.d_k}, "
         f"{c.d_model}x{c.d_v}), no bias", param_count(c, bias=False, per_head=True)),
        (f"all {c.n_heads} heads: W_q, W_k, W_v, no bias", no_b),
        ("all heads: W_q, W_k, W_v + their biases", with_b),
        (f"W_o ({c.n_heads * c.d_v}x{c.d_model}), no bias", param_count(c, bias=False) - no_b),
        ("whole layer (W_q, W_k, W_v, W_o), no bias", param_count(c, bias=False)),
        ("whole layer, with biases", param_count(c, bias=True)),
        (f"this config (bias={c.bias})", param_count(c)),
        (f"FLOPs Q, K, V projections, T={T}", flops["projections"]),
        (f"FLOPs scores Q K^T, T={T}", flops["scores"]),
        (f"FLOPs weights @ V, T={T}", flops["weighted_sum"]),
        (f"FLOPs output W_o, T={T}", flops["output"]),
        (f"FLOPs total, T={T}", flops["total"]),
    ]


def report_text(rows, width: int = 58) -> str:
    """``size_report`` rows as aligned plain text with thousands separators."""
    return "\n".join(f"{label:{width}s} {value:>15,}" for label, value in rows)


# ---------------------------------------------------------------- heads -> concat -> W_o
def _matrix(ax, M, x0, y0, vmax, edge_rows=None, edge_cols=None, fmt="{:.2f}"):
    """Draw M (r, c) as numbered cells, top-left corner at (x0, y0), y pointing down."""
    import numpy as np

    cmap = plt.get_cmap(style.SCORES_CMAP)
    artists = []
    for (i, j), v in np.ndenumerate(M):
        artists.append(ax.add_patch(plt.Rectangle((x0 + j, y0 + i), 1, 1, lw=0.8, edgecolor="white",
                                                  facecolor=cmap(0.5 + 0.5 * v / vmax))))
        artists.append(ax.text(x0 + j + 0.5, y0 + i + 0.5, fmt.format(v) if v else "0", ha="center",
                               va="center", fontsize=style.ANNOTATION_PT,
                               color="white" if abs(v) > 0.6 * vmax else "black"))
    for (r0, r1, c0, c1, color) in (edge_rows or []) + (edge_cols or []):
        artists.append(ax.add_patch(plt.Rectangle((x0 + c0, y0 + r0), c1 - c0, r1 - r0, fill=False,
                                                  edgecolor=color, lw=2.5)))
    return artists


def plot_concat_and_mix(heads, W_o, tokens, ax=None, out_labels=None):
    """``[head_0 | ... | head_{H-1}] @ W_o = output``, with numbers in every cell.

    ``heads`` (H, T, d_v) are the heads' outputs, ``W_o`` (H d_v, d_model). Head h's columns
    of the concatenation and its block of d_v rows of W_o are framed in head h's colour
    (:func:`head_colors`): only they meet in the product. The concatenation's and the output's
    rows are labelled with ``tokens``. Returns the patches and texts drawn.
    """
    import numpy as np

    heads, W_o = np.asarray(heads, dtype=float), np.asarray(W_o, dtype=float)
    if heads.ndim != 3 or W_o.shape[0] != heads.shape[0] * heads.shape[2]:
        raise ValueError(f"heads must be (H, T, d_v) and W_o (H*d_v, d_model); got heads {heads.shape}, "
                         f"W_o {W_o.shape}")
    H, T, d_v = heads.shape
    d_model = W_o.shape[1]
    if len(tokens) != T:
        raise ValueError(f"tokens: {len(tokens)} names for T = {T} rows")
    concat = heads.transpose(1, 0, 2).reshape(T, H * d_v)        # (H, T, d_v) -> (T, H*d_v)
    out = concat @ W_o                                           # (T, H*d_v) @ (H*d_v, d_model) -> (T, d_model)
    vmax = max(np.abs(concat).max(), np.abs(W_o).max(), np.abs(out).max(), 1e-12)
    colors = head_colors(H)
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(1.0, 0.32))
    x_w = H * d_v + 2.4                                          # room for '@' and W_o's row labels
    x_out = x_w + d_model + 2.6                                  # room for '=' and the output's row labels
    blocks_c = [(0, T, h * d_v, (h + 1) * d_v, colors[h]) for h in range(H)]
    blocks_w = [(h * d_v, (h + 1) * d_v, 0, d_model, colors[h]) for h in range(H)]
    artists = _matrix(ax, concat, 0, 0, vmax, edge_cols=blocks_c)
    artists += _matrix(ax, W_o, x_w, 0, vmax, edge_rows=blocks_w)
    artists += _matrix(ax, out, x_out, 0, vmax)
    for x, s in ((H * d_v + 0.45, "@"), (x_w + d_model + 0.6, "=")):
        artists.append(ax.text(x, min(T, H * d_v) / 2, s, ha="center", va="center", fontsize=style.TITLE_PT + 3))
    for h in range(H):
        artists.append(ax.text((h + 0.5) * d_v, -0.2, f"head {h}", ha="center", va="bottom", rotation=90,
                               color=colors[h], fontsize=style.FONT_PT, fontweight="bold"))
        artists.append(ax.text(x_w - 0.1, (h + 0.5) * d_v, f"head {h}", ha="right", va="center",
                               color=colors[h], fontsize=style.FONT_PT, fontweight="bold"))
    for x, w, s in ((0, H * d_v, f"concat ({T}, {H * d_v})"), (x_w, d_model, f"W_o ({H * d_v}, {d_model})"),
                    (x_out, d_model, f"output ({T}, {d_model})")):
        artists.append(ax.text(x + w / 2, T + 0.35, s, ha="center", va="top", fontsize=style.FONT_PT))
    for t, name in enumerate(tokens):                            # rows of the concatenation and of the output
        for x in (-0.15, x_out - 0.15):
            artists.append(ax.text(x, t + 0.5, name, ha="right", va="center", fontsize=style.FONT_PT))
    for j, name in enumerate(out_labels or []):
        artists.append(ax.text(x_out + j + 0.5, -0.2, name, ha="center", va="bottom", rotation=90,
                               fontsize=style.FONT_PT))
    ax.set_xlim(-1.6, x_out + d_model + 0.1)
    ax.set_ylim(T + 1.3, -2.0)
    ax.set_aspect("equal")
    ax.axis("off")
    return artists


def plot_inputs_to_heads(X, Q, K, V, weights, tokens, ax=None, feature_labels=None):
    """``X -> Q, K, V -> each head's weights``, with numbers in every cell.

    ``X`` (T, d_model); ``Q``, ``K`` (T, H d_k), ``V`` (T, H d_v); ``weights`` (H, T, T).
    Head h's columns of Q, K, V are framed in head h's colour (:func:`head_colors`), and so
    is its weights matrix. The first half of the flow whose second half is
    :func:`plot_concat_and_mix`. Returns the patches and texts drawn.
    """
    import numpy as np

    X, Q, K, V, weights = (np.asarray(a, dtype=float) for a in (X, Q, K, V, weights))
    if weights.ndim != 3 or X.ndim != 2 or not (len(X) == len(Q) == len(K) == len(V) == weights.shape[1]):
        raise ValueError(f"X (T, d_model), Q/K/V (T, H*d), weights (H, T, T) expected; got X {X.shape}, "
                         f"Q {Q.shape}, K {K.shape}, V {V.shape}, weights {weights.shape}")
    H, T, S = weights.shape
    if len(tokens) != T:
        raise ValueError(f"tokens: {len(tokens)} names for T = {T} rows")
    colors = head_colors(H)
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(1.0, 0.32))
    artists, x = [], 0.0
    artists += _matrix(ax, X, x, 0, max(np.abs(X).max(), 1e-12), fmt="{:g}")
    panels = [(x, X.shape[1], f"X ({T}, {X.shape[1]})")]
    for j, name in enumerate(feature_labels or []):
        artists.append(ax.text(x + j + 0.5, -0.2, name, ha="center", va="bottom", rotation=90,
                               fontsize=style.FONT_PT))
    x += X.shape[1] + 1.6
    artists.append(ax.text(x - 0.8, T / 2, "→", ha="center", va="center", fontsize=style.TITLE_PT + 3))
    for M, name in ((Q, "Q"), (K, "K"), (V, "V")):
        d = M.shape[1] // H
        frames = [(0, T, h * d, (h + 1) * d, colors[h]) for h in range(H)]
        artists += _matrix(ax, M, x, 0, max(np.abs(M).max(), 1e-12), edge_cols=frames, fmt="{:g}")
        panels.append((x, M.shape[1], f"{name} {M.shape}"))
        artists.append(ax.text(x + M.shape[1] / 2, -0.2, f"X W_{name.lower()}", ha="center", va="bottom",
                               fontsize=style.FONT_PT))
        x += M.shape[1] + 0.8
    x += 0.8
    artists.append(ax.text(x - 0.8, T / 2, "→", ha="center", va="center", fontsize=style.TITLE_PT + 3))
    for h in range(H):
        x += 1.6                                                      # room for the query names
        for t, name in enumerate(tokens):                             # each weights row is one query
            artists.append(ax.text(x - 0.2, t + 0.5, name, ha="right", va="center", fontsize=style.FONT_PT))
        cmap = plt.get_cmap(style.WEIGHTS_CMAP)                       # weights: 0..1, sequential
        for (i, j), w in np.ndenumerate(weights[h]):
            artists.append(ax.add_patch(plt.Rectangle((x + j, i), 1, 1, lw=0.8, edgecolor="white",
                                                      facecolor=cmap(w))))
            artists.append(ax.text(x + j + 0.5, i + 0.5, f"{w:.2f}", ha="center", va="center",
                                   fontsize=style.ANNOTATION_PT, color="black" if w > 0.6 else "white"))
        artists.append(ax.add_patch(plt.Rectangle((x, 0), S, T, fill=False, edgecolor=colors[h], lw=2.5)))
        artists.append(ax.text(x + S / 2, -0.2, f"head {h}\nweights", ha="center", va="bottom",
                               color=colors[h], fontsize=style.FONT_PT, fontweight="bold"))
        for j, name in enumerate(tokens):
            artists.append(ax.text(x + j + 0.5, T + 0.15, name, ha="center", va="top", fontsize=style.FONT_PT))
        panels.append((x, S, f"({T}, {S})"))
        x += S
    for x0, w, s in panels:
        artists.append(ax.text(x0 + w / 2, T + (0.75 if s.startswith("(") else 0.35), s, ha="center",
                               va="top", fontsize=style.FONT_PT))
    for t, name in enumerate(tokens):
        artists.append(ax.text(-0.15, t + 0.5, name, ha="right", va="center", fontsize=style.FONT_PT))
    ax.set_xlim(-1.6, x + 0.3)
    ax.set_ylim(T + 1.5, -2.2)
    ax.set_aspect("equal")
    ax.axis("off")
    return artists
