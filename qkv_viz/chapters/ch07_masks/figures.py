"""Chapter 7 pictures: hidden (masked) cells drawn as hatched, so "hidden" and "weight near 0"
look different on a heatmap."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

HATCH = "////"
PAD_HATCH = "\\\\\\\\"                  # padding: the other diagonal
HATCH_COLOR = "0.75"


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
    return [ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=hatch,
                                       edgecolor=HATCH_COLOR, lw=0))
            for i, j in np.argwhere(~mask)]


# (x, y, label, facecolor key) of each block in the encoder-decoder sketch; x, y = lower-left corner
_BOX_W, _BOX_H = 2.6, 0.8
_BLOCKS = {
    "enc_in": (0.0, 0.0, "English words", None),
    "enc_self": (0.0, 1.3, "self-attention\n(padding mask)", "KEY_COLOR"),
    "enc_out": (0.0, 2.6, "encoder output X", None),
    "dec_in": (4.0, 0.0, "French words so far", None),
    "dec_self": (4.0, 1.3, "causal self-attention\n(French reads earlier French)", "QUERY_COLOR"),
    "dec_cross": (4.0, 2.6, "cross-attention: Q from French,\nK, V from X (padding mask)", "VALUE_COLOR"),
    "dec_out": (4.0, 3.9, "next French word", None),
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
    ax.text(3.3, 3.15, "K, V", ha="center", fontsize=style.ANNOTATION_PT)
    ax.text(_BOX_W / 2, 4.1, "encoder (reads)", ha="center", fontweight="bold")
    ax.text(4.0 + _BOX_W / 2, 5.0, "decoder (writes)", ha="center", fontweight="bold")
    ax.set_xlim(-0.3, 6.9); ax.set_ylim(-0.3, 5.3)
    ax.set_axis_off()
    return patches



def _draw_mask(ax, mask, x0=0.0, y0=0.0, hide_causal=None, face=None, zorder=1):
    """Draw a boolean grid (rows x cols) with cell (i, j) at (x0 + j, y0 + i): True filled,
    False white and hatched: '////' where ``hide_causal`` is True, '\\\\' (padding) elsewhere."""
    from qkv_viz.viz import style

    face = style.VALUE_COLOR if face is None else face
    rows, cols = mask.shape
    for i in range(rows):
        for j in range(cols):
            causal_hidden = hide_causal is not None and hide_causal[i, j]
            ax.add_patch(plt.Rectangle((x0 + j, y0 + i), 1, 1, zorder=zorder, lw=0.6, edgecolor="0.4",
                                       facecolor=face if mask[i, j] else "white", alpha=1.0,
                                       hatch=None if mask[i, j] else (HATCH if causal_hidden else PAD_HATCH)))


def plot_decoder_masks(lengths, n_heads=2, axes=None):
    """A decoder's self-attention masks for a padded batch, True = may look (filled), hidden
    hatched ('////' causal, '\\\\' padding): the causal (T, T) triangle, the (B, 1, T)
    padding mask from ``lengths``, and for each sentence their ``&``, repeated for each of
    ``n_heads`` heads ((B, 1, T, T) broadcast to (B, H, T, T)), T = max(lengths).
    Returns the list of masks drawn: [causal, padding, combined (B, T, T)]."""
    from qkv_viz.viz import style

    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.size == 0 or (lengths < 0).any():
        raise ValueError(f"lengths must be a 1-D array of counts >= 0, got {lengths!r}")
    B, T = len(lengths), int(lengths.max())
    if T == 0:
        raise ValueError("lengths are all 0: nothing to draw")
    if n_heads < 1:
        raise ValueError(f"n_heads must be >= 1, got {n_heads}")
    if axes is None:
        _, axes = plt.subplots(1, 2 + B, figsize=style.figsize(1.0, 0.34), layout="constrained")
    axes = np.ravel(axes)
    if len(axes) != 2 + B:
        raise ValueError(f"need 2 + B = {2 + B} axes, got {len(axes)}")
    causal = np.tril(np.ones((T, T), dtype=bool))                      # (T, T)
    padding = np.arange(T)[None, :] < lengths[:, None]                  # (B, T): True = real key
    combined = causal[None] & padding[:, None, :]                       # (T, T) & (B, 1, T) -> (B, T, T)
    _draw_mask(axes[0], causal, hide_causal=~causal)
    axes[0].set_title("causal (T, T)")
    _draw_mask(axes[1], padding)
    axes[1].set_title(f"padding (B, 1, T)\nlengths {lengths.tolist()}")
    axes[1].set_ylabel("sentence")
    step = 0.45
    for b in range(B):
        ax = axes[2 + b]
        for h in reversed(range(n_heads)):                              # back cards first
            _draw_mask(ax, combined[b], x0=h * step, y0=-h * step, hide_causal=~causal, zorder=1 + n_heads - h)
            ax.text(h * step + T + 0.1, -h * step + 0.1, f"head {h}", fontsize=style.MIN_FONT_PT, va="top")
        ax.set_title(f"sentence {b + 1}: causal & padding\nthe same in every head")
    for k, ax in enumerate(axes):
        rows = B if k == 1 else T
        ax.set_xlim(-0.2, T + 0.2 + (n_heads - 1) * step + (1.6 if k >= 2 else 0))
        ax.set_ylim(rows + 0.2, -0.2 - (n_heads - 1) * step * (k >= 2))
        ax.set_aspect("equal")
        ax.set_xticks(np.arange(T) + 0.5, [str(j) for j in range(T)])
        ax.set_yticks(np.arange(rows) + 0.5, [str(i + (k == 1)) for i in range(rows)])
        ax.tick_params(length=0)
        for side in ax.spines.values():
            side.set_visible(False)
        ax.set_xlabel("keys")
        if k != 1:
            ax.set_ylabel("queries" if k == 0 else "")
        ax.title.set_fontsize(style.ANNOTATION_PT)
    return [causal, padding[:, None, :], combined]
