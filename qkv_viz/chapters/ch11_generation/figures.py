"""Chapter 11's static figures: the counted work of each generation step, three ways; the stepper's still."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import FuncFormatter

from qkv_viz.viz import style


def plot_step_costs(steps, costs, title: str = "", ax=None):
    """The counted FLOPs of each generation step, one line per way of computing it, on log-log
    axes against the prefix length t + 1, so a cost growing like t has slope 1 and one growing
    like t**2 slope 2. Each line is labelled at its right end with its slope there, computed
    from the last two counts.

    ``steps`` (T,) the token positions t, ``costs`` a dict {label: (T,) FLOPs}, in the order drawn
    (the first is the cached one). Returns the ``Line2D`` artists, one per entry of ``costs``.
    """
    steps = np.asarray(steps)
    if not costs or any(np.shape(ys) != steps.shape for ys in costs.values()):
        raise ValueError(f"costs must map labels to arrays of shape {steps.shape} (one FLOP count per step), "
                         f"got shapes {[np.shape(ys) for ys in costs.values()]}")
    if any(np.min(ys) <= 0 for ys in costs.values()):
        raise ValueError("costs must be positive FLOP counts (the axes are logarithmic)")
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.8, 0.5), layout="constrained")
    colors = (style.SCALED_COLOR, style.CONTROL_COLOR, style.UNSCALED_COLOR, *style.SERIES)
    x = steps + 1                                        # the prefix length: keys the step's query meets
    lines = [ax.plot(x, ys, color=color, label=label)[0]
             for (label, ys), color in zip(costs.items(), colors)]
    for line, ys in zip(lines, costs.values()):
        ys = np.asarray(ys, dtype=float)
        slope = np.log(ys[-1] / ys[-2]) / np.log(x[-1] / x[-2]) if len(x) > 1 else 0.0   # d log y / d log x
        ax.annotate(f"slope {slope:.1f}", (x[-1], ys[-1]), xytext=(-4, 4), textcoords="offset points",
                    ha="right", va="bottom", color=line.get_color(), fontsize=max(style.MIN_FONT_PT, 10))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(top=4 * max(np.max(ys) for ys in costs.values()))   # room for the top line's label
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1e9:g}G" if v >= 1e9 else f"{v / 1e6:g}M"))
    ax.set(xlabel="prefix length t + 1 (log scale)", ylabel="FLOPs of the step (log scale)", title=title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left")                          # above the lines' common start
    return lines


def plot_generation_step(words, weights, logits, cache, vocab, step: int, head: int, n_prompt: int, fig=None):
    """The stepper's still: one generation step drawn in ``fig`` (a new figure if None).

    ``words`` (T,) the finished sentence, ``weights`` (H, T, T) and ``logits`` (T, V) from
    ``generation.write``, ``cache`` the ``KVCache`` after ``step`` (tokens 0..step),
    ``vocab`` (V,) the words, ``head`` the query head drawn, ``n_prompt`` how many tokens
    the prompt gave. Left: the causal matrix of weights of head ``head`` filled up to row
    ``step``, that row (the new query's) outlined; then the K and V caches, a block of
    columns per K/V head and a column per coordinate 0..d_k-1 (the numbers written to one
    decimal), this step's row outlined. Every text is at least ``style.MIN_FONT_PT``.
    Returns the artists: [weights image, K image, V image, title].
    """
    from matplotlib.patches import Rectangle

    words, vocab = list(words), list(vocab)
    T, t = len(words), int(step)
    if not 0 <= t < T:
        raise ValueError(f"step must lie in 0..{T - 1} (the sentence has {T} tokens), got {step}")
    weights = np.asarray(weights, dtype=float)
    if weights.shape[1:] != (T, T) or not 0 <= int(head) < weights.shape[0]:
        raise ValueError(f"weights must be (H, T, T) with T = {T} and head in 0..{weights.shape[0] - 1}; "
                         f"got {weights.shape} and head {head}")
    n_kv, d_k = cache.k.shape[0], cache.k.shape[-1]
    if cache.k.shape[1] != t + 1:
        raise ValueError(f"the cache must hold tokens 0..{t} ({t + 1} rows), it holds {cache.k.shape[1]}")
    small = style.MIN_FONT_PT
    if fig is None:
        fig = plt.figure(figsize=style.figsize(1.0, 0.62), layout="constrained")
    w = np.where((np.arange(T)[:, None] <= t) & np.tri(T, dtype=bool), weights[head], np.nan)
    k, v = (a.swapaxes(0, 1).reshape(t + 1, -1) for a in (cache.k, cache.v))   # (t+1, H_kv d_k)
    lim = float(max(np.abs(k).max(), np.abs(v).max(), 1e-12))
    grid = fig.add_gridspec(1, 3, width_ratios=(1.0, 1.05, 1.05))
    ax_w = fig.add_subplot(grid[0])
    im_w = ax_w.imshow(w, cmap=style.WEIGHTS_CMAP, vmin=0, vmax=1)
    for i, j in zip(*np.nonzero(np.isfinite(w))):
        ax_w.text(j, i, f"{w[i, j]:.2f}".replace("0.", "."), ha="center", va="center", fontsize=small,
                  color="black" if w[i, j] > 0.6 else "white")
    ax_w.set(title=f"weights, head {head}", xticks=range(T), yticks=range(T), xlabel="key",
             ylabel="query (new token)")
    ax_w.set_xticklabels(words, rotation=90)
    ax_w.set_yticklabels(words)
    fig.colorbar(im_w, ax=ax_w, label="weights", shrink=0.6, location="bottom")
    ax_w.add_patch(Rectangle((-0.5, t - 0.5), t + 1, 1, fill=False, edgecolor=style.QUERY_COLOR, lw=2.5))
    arts, axes = [im_w], []
    for col, (name, a) in enumerate((("K", k), ("V", v)), start=1):
        ax = fig.add_subplot(grid[col])
        axes.append(ax)
        full = np.full((T, a.shape[1]), np.nan)
        full[:t + 1] = a
        arts.append(ax.imshow(full, cmap=style.SCORES_CMAP, vmin=-lim, vmax=lim, aspect="auto"))
        for i, j in zip(*np.nonzero(np.abs(np.nan_to_num(full)) > 1e-9)):
            ax.text(j, i, f"{full[i, j]:.1f}", ha="center", va="center", fontsize=small,
                    color="white" if abs(full[i, j]) > 0.6 * lim else "black")
        ax.add_patch(Rectangle((-0.5, t - 0.5), a.shape[1], 1, fill=False, edgecolor=style.QUERY_COLOR,
                               lw=2.5, zorder=3))
        for g in range(1, n_kv):
            ax.axvline(g * d_k - 0.5, color="black", lw=1.5)
        ax.set_xticks(range(a.shape[1]), list(range(d_k)) * n_kv, fontsize=small)
        for g in range(n_kv):
            ax.text((g + 0.5) * d_k - 0.5, -0.6, f"K/V head {g}" if n_kv > 1 else "one K/V head",
                    ha="center", va="bottom", fontsize=small)
        ax.set_title(f"{name} cache", pad=16)
        ax.set(yticks=range(T), yticklabels=words if col == 1 else [])
    fig.colorbar(arts[-1], ax=axes, label="entries of K, V", shrink=0.6, location="bottom")
    logits_t = np.asarray(logits, dtype=float)[t]
    best = int(np.argmax(logits_t))
    nxt = ("the sentence ends" if t >= T - 1 else f'token {t + 1} is given by the prompt: "{words[t + 1]}"'
           if t < n_prompt - 1 else
           f'"{vocab[best]}", the next token (largest logit of output \u00b7 E\u1d40: {logits_t[best]:.2f})')
    arts.append(fig.suptitle(f'step {t}: "{words[t]}" adds row {t} to both caches (outlined)\n{nxt}'))
    return arts
