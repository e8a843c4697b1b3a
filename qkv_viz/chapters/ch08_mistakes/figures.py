"""Chapter 8's pictures: where the columns of a per-head fused QKV result end up after a split."""
from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap

from qkv_viz.chapters.ch08_mistakes.mistakes import split_per_head, split_per_head_as_blocks
from qkv_viz.core.validate import positive_int
from qkv_viz.viz import style

ROLE_NAMES = ("q", "k", "v")


def split_origin(n_heads: int, d_head: int, wrong: bool) -> np.ndarray:
    """Which fused column each split output reads, for a per-head layout (n, H, 3, d_head):
    (3, H d_head) integer column indices. Row 0 becomes q (its heads side by side), row 1 k,
    row 2 v. ``wrong``: the block split ``np.split(qkv, 3, axis=-1)`` instead of the per-head one.
    """
    n_heads, d_head = positive_int("n_heads", n_heads), positive_int("d_head", d_head)
    width = 3 * n_heads * d_head
    columns = np.arange(width, dtype=float)[None, :]      # (1, width): one row whose entries are column indices
    split = split_per_head_as_blocks if wrong else split_per_head
    parts = split(columns, n_heads)                       # 3 x (H, 1, d_head)
    return np.stack([p[:, 0, :].reshape(-1) for p in parts]).astype(int)   # (3, H d_head)


def plot_split(n_heads: int = 2, d_head: int = 2, wrong: bool = False, ax=None, title: str | None = None):
    """Draw the (3, H d_head) split as cells coloured by the matrix each column really came from,
    labelled with that matrix and head ("k1" = a column of head 1's key). A right split gives
    three single-coloured rows, each head in its place. Returns the image and the text artists.
    """
    import matplotlib.pyplot as plt

    origin = split_origin(n_heads, d_head, wrong)          # (3, H d_head) fused column indices
    role = (origin // d_head) % 3                          # 0 = W_q, 1 = W_k, 2 = W_v
    head = origin // (3 * d_head)
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.45, 0.45))
    cmap = ListedColormap([style.QUERY_COLOR, style.KEY_COLOR, style.VALUE_COLOR])
    im = ax.imshow(role, cmap=cmap, vmin=-0.5, vmax=2.5, aspect="auto")
    texts = [ax.text(j, i, f"{ROLE_NAMES[role[i, j]]}{head[i, j]}", ha="center", va="center",
                     color="white", fontsize=style.ANNOTATION_PT, fontweight="bold")
             for (i, j), _ in np.ndenumerate(origin)]
    ax.set_yticks(range(3), ["q", "k", "v"])
    names = ([f"read as head {h}" for h in range(n_heads)] if wrong  # what the code takes for head h
             else [f"head {h}" for h in range(n_heads)])
    ax.set_xticks([h * d_head + (d_head - 1) / 2 for h in range(n_heads)], names)
    for h in range(1, n_heads):
        ax.axvline(h * d_head - 0.5, color="white", lw=3)
    ax.set_ylabel("piece the code uses as")
    for spine in ax.spines.values():
        spine.set_visible(False)
    if title is not None:
        ax.set_title(title)
    return im, texts


def plot_weight_maps(maps, tokens, axes, hatch="////", fmt=".2f"):
    """Section 5's panels: one attention map per entry of ``maps`` (name -> (weights (T, S),
    mask (T, S) bool, True = may look, caption)), token names on both axes, hidden cells
    hatched, each visible cell's weight written in it (``fmt``), the name and caption as the
    panel's title, "keys" under each map. Returns the images (one per panel)."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection

    from qkv_viz.viz.plots import attention_heatmap

    axes = np.ravel(axes)
    if len(axes) < len(maps):
        raise ValueError(f"need an axis per map: {len(maps)} maps, {len(axes)} axes")
    images = []
    for ax, (name, (weights, mask, caption)) in zip(axes, maps.items()):
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != np.shape(weights):
            raise ValueError(f"{name}: mask {mask.shape} and weights {np.shape(weights)} differ in shape")
        images.append(attention_heatmap(weights, ax=ax, tokens_q=tokens, tokens_k=tokens, annotate=False,
                                        colorbar=False, title=f"{name}\n{caption}"))
        hidden = [plt.Rectangle((j - 0.5, i - 0.5), 1, 1) for i, j in np.argwhere(~mask)]
        ax.add_collection(PatchCollection(hidden, facecolor="none", edgecolor="0.75", hatch=hatch, lw=0))
        image, weights = images[-1], np.asarray(weights)
        for i, j in np.argwhere(mask):                     # the numbers, on the visible cells only
            r, g, b = image.cmap(image.norm(weights[i, j]))[:3]
            ax.text(j, i, format(weights[i, j], fmt), ha="center", va="center",
                    fontsize=style.ANNOTATION_PT,
                    color="black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white")
        ax.title.set_fontsize(style.FONT_PT)
        ax.set_xlabel("keys")
        spec = ax.get_subplotspec()
        if spec is not None and not spec.is_first_col():
            ax.set_ylabel("")                              # one "queries" label per row of panels
    return images


def plot_overflow(sweep, zoom, limit: float, window, axes=None):
    """Section 4's picture: the top score's weight in [c, c-1, c-2], naive against stable softmax.

    ``sweep`` and ``zoom``: ``(c, naive, stable)`` arrays of one length each, the whole range and a
    fine grid around ``limit`` (where e^c overflows); ``window``: ``(start, stop)``, where the sum
    overflows but e^c does not (the naive formula gives 0). ``axes``: two axes (whole range, zoom);
    an arrow on the first points at the zoomed region. Returns ``(lines, arrow)``: the stable and
    naive lines of both panels, and the arrow's annotation.
    """
    import matplotlib.pyplot as plt

    (c, naive, stable), (c_z, naive_z, stable_z) = (tuple(np.asarray(a, dtype=float) for a in s) for s in (sweep, zoom))
    if not (c.shape == naive.shape == stable.shape and c_z.shape == naive_z.shape == stable_z.shape):
        raise ValueError("sweep and zoom must each be (c, naive, stable) arrays of one length")
    if axes is None:
        _, axes = plt.subplots(1, 2, figsize=style.figsize(1.0, 0.32), width_ratios=[1.5, 1], layout="constrained")
    ax, az = axes
    lines = []
    for a, (x, n, s) in ((ax, (c, naive, stable)), (az, (c_z, naive_z, stable_z))):
        lines.append(a.plot(x, s, lw=4, alpha=0.5, color=style.SCALED_COLOR, label="stable softmax")[0])
        lines.append(a.plot(x, n, "--", color="black", label="naive softmax")[0])
        nan = np.isnan(n)
        if nan.any():
            a.axvspan(x[nan][0], x[-1], color=style.UNSCALED_COLOR, alpha=0.15, lw=0, label="naive gives NaN")
        a.axvline(limit, color=style.UNSCALED_COLOR, lw=1)
        a.set_ylim(-0.05, 1.0)
    az.axvspan(*window, color=style.OKABE_ITO[4], alpha=0.6, lw=0, label="naive gives 0")
    az.set_xlim(c_z[0], c_z[-1])
    az.set_xticks([c_z[0], window[0], window[1], c_z[-1]], [f"{v:.2f}" for v in (c_z[0], *window, c_z[-1])])
    az.set_title(f"zoom: {c_z[0]:g} to {c_z[-1]:g}")
    az.legend(handles=[az.patches[-1]], loc="upper left", fontsize=style.FONT_PT)
    ax.set_ylabel("weight of the top score")
    ax.set_xlabel("top score c in [c, c-1, c-2]")
    az.set_xlabel("c")
    ax.set_title("scores [c, c-1, c-2]")
    ax.legend(loc="lower left", fontsize=style.FONT_PT)
    middle = (c_z[0] + c_z[-1]) / 2
    arrow = ax.annotate(f"zoom at right:\n{c_z[0]:g} to {c_z[-1]:g}", xy=(middle, 0.45), xytext=(0.3, 0.45),
                        textcoords=("axes fraction", "data"), ha="center", va="center",
                        arrowprops=dict(arrowstyle="->", color="0.2"))
    return lines, arrow

