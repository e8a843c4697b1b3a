"""Chapter 7 pictures: hidden (masked) cells drawn as hatched, so "hidden" and "weight near 0"
look different on a heatmap."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

HATCH = "////"                        # causal: white diagonals on the dark weight-0 colour
PAD_HATCH = ".."                      # padding: a grey cell (no weight colour is grey), dark dots
CLICK_HATCH = "----"                  # the explorer's cells hidden by hand
HATCH_COLOR = "white"                 # light and thick, to stand out on the dark weight-0 colour
HATCH_LW = 1.6                        # (the live explorer, masks.js, draws the same looks)
PAD_FACE, PAD_EDGE = "0.72", "0.3"    # padding's fill and dots; a cell hidden by both gets both looks
_LOOK = {PAD_HATCH: (PAD_FACE, PAD_EDGE)}   # hatch -> (fill or None, line colour); others: (None, white)


def hatch_masked(ax, mask, hatch=HATCH):
    """Hatch every cell of a heatmap on ``ax`` where ``mask`` (T, S) is False (hidden), and
    remove the number written in such a cell (its weight is 0 by construction).

    The heatmap is expected in ``imshow`` cell coordinates (cell (i, j) centred on
    (j, i)), as ``qkv_viz.viz.plots`` draws it; ``hatch`` is the pattern (``PAD_HATCH`` for
    padding). Returns the rectangles drawn.
    """
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    if mask.ndim != 2:
        raise ValueError(f"mask must be 2-D (T, S), got shape {mask.shape}")
    T, S = mask.shape
    for text in list(ax.texts):  # cell numbers sit at the cell centres
        x, y = (int(round(v)) for v in text.get_position())
        if 0 <= y < T and 0 <= x < S and not mask[y, x]:
            text.remove()
    face, edge = _LOOK.get(hatch, (None, HATCH_COLOR))
    return [ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=face is not None, facecolor=face,
                                       hatch=hatch, edgecolor=edge, lw=0, hatch_linewidth=HATCH_LW))
            for i, j in np.argwhere(~mask)]


def mask_legend(fig, kinds=("causal", "padding", "both")):
    """A legend on ``fig`` with one hatched swatch per kind of hidden cell ("causal", "padding",
    "both"), on the weight-0 colour as in the heatmaps. Returns the legend."""
    from matplotlib.patches import Patch

    from qkv_viz.viz import style

    zero = plt.get_cmap(style.WEIGHTS_CMAP)(0.0)
    look = {"causal": (zero, HATCH_COLOR, HATCH), "padding": (PAD_FACE, PAD_EDGE, PAD_HATCH),
            "both": (PAD_FACE, HATCH_COLOR, HATCH + PAD_HATCH)}
    handles = [Patch(facecolor=look[k][0], edgecolor=look[k][1], hatch=look[k][2], hatch_linewidth=HATCH_LW,
                     label=f"hidden by {k}") for k in kinds]
    return fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), handleheight=1.6,
                      handlelength=2.2, frameon=False)


# (x, y, label, facecolor key) of each block in the encoder-decoder sketch; x, y = lower-left corner
_BOX_W, _BOX_H = 2.6, 0.8
_BLOCKS = {
    "enc_in": (0.0, 0.0, "S English words", None),
    "enc_self": (0.0, 1.3, "self-attention, S × S\n(padding mask)", "KEY_COLOR"),
    "enc_out": (0.0, 2.6, "encoder output X\n(S × d_model)", None),
    "dec_in": (4.0, 0.0, "T inputs: <bos> + French so far", None),
    "dec_self": (4.0, 1.3, "causal self-attention, T × T\n(+ padding mask)", "QUERY_COLOR"),
    "dec_cross": (4.0, 2.6, "cross-attention, T × S\n(padding mask)", "VALUE_COLOR"),
    "dec_out": (4.0, 3.9, "T outputs: each position's next word", None),
}
_ARROWS = [("enc_in", "enc_self"), ("enc_self", "enc_out"), ("dec_in", "dec_self"),
           ("dec_self", "dec_cross"), ("dec_cross", "dec_out")]


def plot_encoder_decoder(ax=None):
    """A sketch of an encoder-decoder Transformer: where cross-attention and causal
    self-attention sit. Returns the dict of block patches (name -> FancyBboxPatch)."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    from qkv_viz.viz import style

    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.8, 0.45))
    patches = {}
    for name, (x, y, label, colour) in _BLOCKS.items():
        face = "white" if colour is None else getattr(style, colour)
        patch = FancyBboxPatch((x, y), _BOX_W, _BOX_H, boxstyle="round,pad=0.05", facecolor=face,
                               edgecolor="0.3", alpha=1.0 if colour is None else 0.35)
        patches[name] = ax.add_patch(patch)
        ax.text(x + _BOX_W / 2, y + _BOX_H / 2, label, ha="center", va="center", fontsize=style.ANNOTATION_PT)

    def centre(name, side):
        x, y, _, _ = _BLOCKS[name]
        return {"top": (x + _BOX_W / 2, y + _BOX_H + 0.05), "bottom": (x + _BOX_W / 2, y - 0.05),
                "right": (x + _BOX_W + 0.05, y + _BOX_H / 2), "left": (x - 0.05, y + _BOX_H / 2)}[side]

    for a, b in _ARROWS:
        ax.add_patch(FancyArrowPatch(centre(a, "top"), centre(b, "bottom"), arrowstyle="-|>", mutation_scale=10))
    ax.add_patch(FancyArrowPatch(centre("enc_out", "right"), centre("dec_cross", "left"), arrowstyle="-|>",
                                 mutation_scale=10, lw=1.5, label="K, V"))
    ax.text(3.3, 3.1, "K, V\n(S rows)", ha="center", va="bottom", fontsize=style.ANNOTATION_PT)
    ax.text(4.0 + _BOX_W / 2 + 0.1, 2.3, "Q (T rows)", ha="left", va="center", fontsize=style.ANNOTATION_PT)
    ax.text(_BOX_W / 2, 4.1, "encoder (reads)", ha="center", fontweight="bold")
    ax.text(4.0 + _BOX_W / 2, 5.0, "decoder (writes)", ha="center", fontweight="bold")
    ax.set_xlim(-0.3, 6.9); ax.set_ylim(-0.3, 5.3)
    ax.set_axis_off()
    return patches


def plot_masked_batch(weights, causal, padding, tokens, titles=None, axes=None):
    """One heatmap per sentence of ``weights`` (B, T, T), a decoder's self-attention over a
    padded batch: cells hidden by ``causal`` ((T, T) bool, True = may look) hatched with white
    ``/``, keys hidden by ``padding`` ((B, T) bool, True = real token) grey with dark dots (a
    cell hidden by both: grey, dots and white lines).

    ``tokens``: B lists of T names (filler included); ``titles``: B strings; ``axes``: B axes
    (created when None). Returns the B images, on one colour scale (weights 0..1), without
    their own colour bars.
    """
    from qkv_viz.viz import style
    from qkv_viz.viz.plots import attention_heatmap

    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3 or weights.shape[-1] != weights.shape[-2]:
        raise ValueError(f"weights must have shape (B, T, T), got {weights.shape}")
    B, T, _ = weights.shape
    causal, padding = np.asarray(causal), np.asarray(padding)
    if causal.shape != (T, T) or padding.shape != (B, T):
        raise ValueError(f"causal must be ({T}, {T}) and padding ({B}, {T}), got {causal.shape} and {padding.shape}")
    if len(tokens) != B or any(len(t) != T for t in tokens):
        raise ValueError(f"tokens must be {B} lists of {T} names, got {[len(t) for t in tokens]}")
    if titles is not None and len(titles) != B:
        raise ValueError(f"titles must have B = {B} entries, got {len(titles)}")
    if axes is None:
        _, axes = plt.subplots(1, B, figsize=style.figsize(0.45 * B, 0.42), layout="constrained")
    axes = np.asarray(axes).reshape(B)
    images = []
    for b, ax in enumerate(axes):
        images.append(attention_heatmap(weights[b], ax=ax, tokens_q=tokens[b], tokens_k=tokens[b], colorbar=False,
                                        title=None if titles is None else titles[b]))
        hatch_masked(ax, np.broadcast_to(padding[b], (T, T)), hatch=PAD_HATCH)   # grey first, then
        hatch_masked(ax, causal)                                                 # causal lines on top
        if b:
            ax.set_ylabel("")
    return images


def plot_causal_cut(scores, masked, weights, tokens, axes=None):
    """Three heatmaps of one head, side by side: its ``scores`` (T, T), the ``masked`` scores
    (hidden ones -inf) and the ``weights`` after the softmax. The -inf cells and the weight
    panel's hidden cells look alike: the weight-0 colour under white ``/``, no number.

    ``tokens``: T names, queries and keys; ``axes``: 3 axes (created when None). The two score
    panels share one diverging colour bar, the weights have their own (0..1). Returns the
    three images.
    """
    from qkv_viz.viz import style
    from qkv_viz.viz.plots import attention_heatmap, scores_heatmap

    scores, masked, weights = (np.asarray(a, dtype=float) for a in (scores, masked, weights))
    if not scores.shape == masked.shape == weights.shape or scores.ndim != 2:
        raise ValueError(f"scores, masked and weights must share one (T, S) shape, got "
                         f"{scores.shape}, {masked.shape}, {weights.shape}")
    hidden = np.isneginf(masked)                                     # (T, S): True = -inf
    if axes is None:
        fig, axes = plt.subplots(1, 3, figsize=style.figsize(1.0, 0.36), layout="constrained")
    axes = np.asarray(axes).reshape(3)
    limit = float(np.abs(scores).max()) or 1.0
    kw = dict(tokens_q=tokens, tokens_k=tokens, colorbar=False)
    images = [scores_heatmap(scores, ax=axes[0], limit=limit, title="scores", **kw),
              scores_heatmap(np.where(hidden, 0.0, masked), ax=axes[1], limit=limit,
                             title="masked scores (/ = −∞)", **kw),
              attention_heatmap(weights, ax=axes[2], title="weights", **kw)]
    zero = plt.get_cmap(style.WEIGHTS_CMAP)(0.0)                     # -inf: drawn as weight 0 is
    for i, j in np.argwhere(hidden):
        axes[1].add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor=zero, lw=0))
    for ax in axes[1:]:
        hatch_masked(ax, ~hidden)
        ax.set_ylabel("")
    fig = axes[0].figure
    fig.colorbar(images[0], ax=axes[:2], label="score q·k / √d_k", shrink=0.9)
    fig.colorbar(images[2], ax=axes[2], label=style.WEIGHTS_LABEL, shrink=0.9)
    return images
