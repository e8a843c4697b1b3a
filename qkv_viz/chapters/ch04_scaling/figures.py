"""Chapter 4's static figures, in the book's style (``qkv_viz.viz.style``).

Each function draws one picture that answers one question, returns the figure
and never calls ``plt.show()``. Heatmaps come from :mod:`qkv_viz.viz.plots`
and always carry a colour bar (one shared bar per kind of matrix).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.viz import style
from qkv_viz.viz.plots import attention_heatmap

LABELS = {True: r"scaled: $q\cdot k/\sqrt{d_k}$", False: r"unscaled: $q\cdot k$"}
COLORS = {True: style.SCALED_COLOR, False: style.UNSCALED_COLOR}


def _log2_dk_axis(ax, d_ks):
    ax.set_xscale("log", base=2)
    ax.set_xticks(d_ks[::2], [f"{d:g}" for d in d_ks[::2]])
    ax.minorticks_off()
    ax.set_xlabel("$d_k$ (width of q and k)")


def variance_figure(d_ks, var_unscaled, var_scaled):
    """How does Var(q . k) grow with d_k? Measured points, theory lines d_k and 1 (log-log)."""
    d_ks = np.asarray(d_ks, dtype=float)
    fig, ax = plt.subplots(figsize=style.figsize(0.62, 0.6), constrained_layout=True)
    ax.plot(d_ks, d_ks, ":", color="black", lw=1, label="theory: $d_k$ and 1")
    ax.plot(d_ks, np.ones_like(d_ks), ":", color="black", lw=1)
    for scaled, values in ((False, var_unscaled), (True, var_scaled)):
        ax.plot(d_ks, values, "o" if scaled else "s", color=COLORS[scaled], ms=5,
                label="measured, " + LABELS[scaled])
    ax.set_yscale("log", base=2)
    _log2_dk_axis(ax, d_ks)
    ax.set_ylabel("variance of the score")
    ax.set_title("Var(q·k) over 4000 random pairs per $d_k$")
    ax.legend(loc="upper left")
    return fig


def diagnostics_figure(on: dict, off: dict, S: int | None = None):
    """Against d_k, with and without the factor: score spread, max weight, Jacobian norm (three panels).

    ``on`` and ``off`` hold d_k (K,) and score_std, max_weight, grad_norm, each (K,) (row means);
    with ``S`` the max-weight panel also draws the uniform row's max weight 1/S.
    """
    keys = (("score_std", "score spread (row std)", "std of a row's scores"),
            ("max_weight", "max weight of a row", "weight"),
            ("grad_norm", r"$\|\mathrm{diag}(w) - ww^\top\|_F$", "Frobenius norm"))
    fig, axes = plt.subplots(1, 3, figsize=style.figsize(1.0, 0.34), constrained_layout=True)
    d_ks = np.asarray(on["d_k"], dtype=float)
    for ax, (key, title, ylabel) in zip(axes, keys):
        for scaled, r in ((True, on), (False, off)):
            ax.plot(d_ks, r[key], "o-" if scaled else "s--", ms=4, color=COLORS[scaled],
                    label="scaled" if scaled else "unscaled")
        _log2_dk_axis(ax, d_ks)
        ax.set_title(title)
        ax.set_ylabel(ylabel)
    handles = axes[2].lines[:2]                                  # the two row-mean curves drawn above
    labels = ["scaled (row mean)", "unscaled (row mean)"]
    if S is not None:
        handles = handles + [axes[1].axhline(1 / S, color="0.45", lw=1, ls=":")]
        labels.append(f"uniform row: 1/S = 1/{S}")
    axes[0].set_yscale("log")
    ref = axes[0].plot(d_ks, np.sqrt(d_ks), ":", color="black", lw=1, label="_sqrt")[0]   # the maths: std = sqrt(d_k)
    axes[0].annotate(r"$\sqrt{d_k}$", (d_ks[-3], np.sqrt(d_ks[-3])), xytext=(-4, 6), textcoords="offset points",
                     ha="right", fontsize=10)
    axes[0].set_yticks([0.5, 1, 2, 4, 8, 16, 32], ["0.5", "1", "2", "4", "8", "16", "32"])
    ref.set_gid("sqrt_d_k")
    for ax in axes:
        ax.minorticks_off()                                      # minor log ticks: slow to lay out, not read
    axes[1].set_ylim(0, 1.02)
    axes[2].set_ylim(0, None)
    fig.legend(handles, labels, loc="outside lower center", ncol=len(handles), fontsize=10)   # below: hides no curve
    fig.suptitle("Random attention rows against $d_k$, with and without $1/\\sqrt{d_k}$")
    return fig


def small_multiples(weights_by_dk: dict):
    """Attention weights for each d_k (columns), scaled (top) and unscaled (bottom); one colour bar.

    ``weights_by_dk`` maps d_k to a pair (scaled, unscaled) of (T, S) weight matrices, computed by the page.
    """
    if not weights_by_dk:
        raise ValueError("weights_by_dk must map at least one d_k to its (scaled, unscaled) weights")
    fig, axes = plt.subplots(2, len(weights_by_dk), figsize=style.figsize(0.95, 0.6), constrained_layout=True,
                             sharex=True, sharey=True, squeeze=False)
    im = None
    for j, (d_k, pair) in enumerate(weights_by_dk.items()):
        if len(pair) != 2:
            raise ValueError(f"weights_by_dk[{d_k}] must be a pair (scaled, unscaled), got {len(pair)} items")
        for i, (scaled, w) in enumerate(zip((True, False), pair)):
            im = attention_heatmap(np.asarray(w), ax=axes[i, j], annotate=False, colorbar=False,
                                   title=f"$d_k$ = {d_k}, {'scaled' if scaled else 'unscaled'}")
            if j:
                axes[i, j].set_ylabel("")
            if i == 0:
                axes[i, j].set_xlabel("")
    fig.colorbar(im, ax=axes, shrink=0.9, label=style.WEIGHTS_LABEL, ticks=np.linspace(0, 1, 5))
    return fig


def score_histograms(dots_by_dk: dict, bins: int = 40):
    """What do the scores look like with and without the factor? One panel per d_k.

    ``dots_by_dk`` maps d_k to the dot products q . k of random pairs (n,); each panel
    shows them as they are (unscaled) and divided by sqrt(d_k) (scaled), each in ``bins``
    bins over +-4 of its std, each panel on its own x-range (+-4 std of its wider set),
    its std in the legend. The y-axis counts pairs per bin: each set has its own bins,
    so both bells are equally tall and the unscaled one, at d_k = 512, visibly 23 times wider
    (a density would squash it flat beside the scaled spike). Where the scaled bell is a sliver,
    an inset shows it on its own x-range.
    """
    if not dots_by_dk:
        raise ValueError("dots_by_dk must map at least one d_k to its dot products")
    fig, axes = plt.subplots(1, len(dots_by_dk), figsize=style.figsize(1.0, 0.32), constrained_layout=True,
                             squeeze=False)
    for ax, (d_k, dots) in zip(axes[0], dots_by_dk.items()):
        dots = np.asarray(dots, dtype=float)
        reach = 4 * max(dots.std(), dots.std() / np.sqrt(d_k))     # 4 std of the wider set: nearly all
        for scaled, values in ((False, dots), (True, dots / np.sqrt(d_k))):
            ax.hist(values, bins=np.linspace(-4, 4, bins + 1) * values.std(), alpha=0.75 if scaled else 0.6,
                    color=COLORS[scaled], label=f"{'scaled' if scaled else 'unscaled'}: std {values.std():.2f}")
        ax.set_title(f"$d_k$ = {d_k}")
        ax.set_xlim(-reach, reach)
        scaled = dots / np.sqrt(d_k)
        if reach > 16 * scaled.std():                               # the scaled bell is a sliver: zoom on it
            inset = ax.inset_axes([0.02, 0.5, 0.26, 0.45])
            inset.hist(scaled, bins=np.linspace(-4, 4, bins + 1) * scaled.std(), color=COLORS[True], alpha=0.75)
            inset.set_xlim(-4 * scaled.std(), 4 * scaled.std())
            inset.set_yticks([])
            inset.set_xticks([-3, 0, 3])
            inset.tick_params(labelsize=9)
            inset.set_title("scaled, zoomed", fontsize=9)
        ax.set_xlabel("score")
        ax.legend(loc="upper right")
    axes[0, 0].set_ylabel(f"pairs per bin ({bins} bins each)")
    return fig

