"""Chapter 0 picture: the whole pipeline for one sentence, one token's row outlined.

``bank_pipeline(X, W_q, W_k, W_v, tokens, focus="bank", ax=None)`` draws
``qkv_viz.viz.pipeline.plot_pipeline`` for the given example and outlines the row of
``focus`` in every matrix that has one row per query: X, Q (both copies), the dot
products, the scores, the weights and the output. The numbers in the cells are
written at ``NUMBER_PT``. Returns ``(artists, outlines)``: the pipeline's dict stage ->
artists, and the list of outline Rectangles (one per matrix, in drawing order).
Never calls ``plt.show()``.
"""
from __future__ import annotations

from matplotlib.patches import Rectangle

from qkv_viz.viz.pipeline import plot_pipeline

NUMBER_PT = 9.0          # the cells' numbers: legible at the column's width
OUTLINE_COLOR = "#111111"   # not a role colour: it sits on orange Q and red scores alike
_QUERY_ROWS = ("input", "scores", "scale", "softmax", "output")  # one row per token in every frame


def _frames(artists, stage):
    return [a for a in artists[stage] if a.get_gid() == "frame"]


def bank_pipeline(X, W_q, W_k, W_v, tokens, focus="bank", ax=None):
    """The pipeline of ``X`` (T, d_model) through ``W_q``, ``W_k`` (d_model, d_k) and ``W_v``
    (d_model, d_v), ``tokens`` (T names) beside the rows, the row of token ``focus`` outlined."""
    tokens = [str(t) for t in tokens]
    if focus not in tokens:
        raise ValueError(f"focus must be one of the tokens {tokens}, got {focus!r}")
    artists = plot_pipeline(X=X, W_q=W_q, W_k=W_k, W_v=W_v, tokens=tokens, ax=ax)
    for stage_artists in artists.values():
        for a in stage_artists:
            if a.get_gid() == "cell-number":
                a.set_fontsize(NUMBER_PT)
    T, i = len(tokens), tokens.index(focus)
    q_frames = _frames(artists, "qkv")[0::3]  # Q, K, V on the first row, then again on the second: the Q's
    frames = _frames(artists, "input") + q_frames + [f for s in _QUERY_ROWS[1:] for f in _frames(artists, s)]
    outlines = []
    for f in frames:
        h = f.get_height() / T  # one row
        y = f.get_y() + (T - 1 - i) * h  # row 0 is on top
        ring = Rectangle((f.get_x() - 0.02, y - 0.02), f.get_width() + 0.04, h + 0.04, fill=False,
                         edgecolor=OUTLINE_COLOR, lw=2.0, zorder=5, gid="focus-row")
        f.axes.add_patch(ring)
        outlines.append(ring)
    return artists, outlines
