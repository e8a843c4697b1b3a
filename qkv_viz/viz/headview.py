"""BertViz's head view, live: who reads whom, drawn as lines between two columns of tokens.

Queries on the left, keys on the right, one line from query token i to key token j
for every pair, as wide as the weight ``weights[i, j]``, and the more opaque the larger
it is. Hovering or focusing a token (mouse, or Tab on the keyboard) shows only its
lines and lists its weights; clicking pins it. Everything happens in the browser (``js/headview.js``), so
the figure is as live in the web edition as in JupyterLab; the static PNG draws the
same picture with the ``focus`` token's lines highlighted.

    head_view(["the", "river", "bank"], weights, focus="bank")   # weights (T, S), rows sum to 1

For cross-attention pass ``tokens_k`` (the S key tokens); by default the keys are the
queries' own tokens (self-attention, S = T).
"""
from __future__ import annotations

import numpy as np
import traitlets
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from qkv_viz.viz import style
from qkv_viz.viz.canvas import f64_bytes, figure_png, module_source
from qkv_viz.viz.traits import CheckedFigure, Whole, integer, labels

MAX_LINE_PT = 7.0    # the width of a line of weight 1 (points in the PNG, CSS px in the browser)
FAINT = 0.06         # opacity factor of the lines of tokens that are not focused


def head_view_inputs(tokens, weights, tokens_k=None):
    """Validated ``(tokens_q, tokens_k, weights)``: lists of str and a float (T, S) array.

    Raises ``ValueError`` naming the argument and the shapes when ``weights`` is not 2-D,
    its shape does not match the tokens, or an entry is not a finite number in [0, 1].
    """
    w = np.asarray(weights, dtype=float)
    tokens_q = [str(t) for t in tokens]
    tokens_k = tokens_q if tokens_k is None else [str(t) for t in tokens_k]
    if w.ndim != 2:
        raise ValueError(f"weights must be a 2-D (T, S) array, got shape {w.shape}")
    if w.shape != (len(tokens_q), len(tokens_k)):
        raise ValueError(f"weights has shape {w.shape} but there are {len(tokens_q)} query tokens and "
                         f"{len(tokens_k)} key tokens: expected ({len(tokens_q)}, {len(tokens_k)})")
    if w.size == 0:
        raise ValueError(f"weights is empty, shape {w.shape}: give at least one query and one key token")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"weights (shape {w.shape}) contains NaN or inf")
    if w.min() < 0 or w.max() > 1:
        raise ValueError(f"weights (shape {w.shape}) must lie in [0, 1] (softmax output), "
                         f"got entries from {w.min():.3g} to {w.max():.3g}")
    return tokens_q, tokens_k, w


def _focus_index(focus, tokens_q) -> int:
    """-1 for none, else the query index: an int, or a token's name (its first occurrence)."""
    if focus is None:
        return -1
    if isinstance(focus, str):
        if focus not in tokens_q:
            raise ValueError(f"focus {focus!r} is not one of the query tokens {tokens_q}")
        return tokens_q.index(focus)
    i = int(focus)
    if not 0 <= i < len(tokens_q):
        raise ValueError(f"focus must be a query index in 0..{len(tokens_q) - 1}, got {focus}")
    return i


def plot_head_view(tokens, weights, tokens_k=None, focus=None, ax=None, title=None):
    """The head view in matplotlib (the live figure's static picture). Returns the artists.

    ``weights`` (T, S): line i -> j is ``MAX_LINE_PT * weights[i, j]`` points wide, with
    opacity ``0.2 + 0.8 * weights[i, j]``; with ``focus`` (a query index or token), only
    that token's lines are strong and its weights are written next to the keys.
    """
    import matplotlib.pyplot as plt

    tokens_q, tokens_k, w = head_view_inputs(tokens, weights, tokens_k)
    f = _focus_index(focus, tokens_q)
    T, S = w.shape
    if ax is None:
        _, ax = plt.subplots(figsize=(3.6, 0.5 + 0.3 * max(T, S)))
    n = max(T, S)
    yq = lambda i: -(i - (T - 1) / 2)  # noqa: E731  rows centred on 0, token 0 on top
    yk = lambda j: -(j - (S - 1) / 2)  # noqa: E731
    segs, widths, colours = [], [], []
    for i in range(T):
        for j in range(S):
            strong = f < 0 or i == f
            alpha = 0.2 + 0.8 * float(w[i, j]) if strong else FAINT * float(w[i, j])
            segs.append([(0.0, yq(i)), (1.0, yk(j))])
            widths.append(MAX_LINE_PT * float(w[i, j]))
            colours.append((*_rgb(style.QUERY_COLOR), alpha))
    lines = LineCollection(segs, linewidths=widths, colors=colours, capstyle="butt")
    ax.add_collection(lines)
    labels_q = [ax.text(-0.04, yq(i), t, ha="right", va="center", color=style.QUERY_COLOR,
                        fontweight="bold" if i == f else "normal") for i, t in enumerate(tokens_q)]
    labels_k = []
    for j, t in enumerate(tokens_k):
        label = f"{t}  {w[f, j]:.2f}" if f >= 0 else t
        labels_k.append(ax.text(1.04, yk(j), label, ha="left", va="center", color=style.KEY_COLOR))
    ax.text(-0.04, (n + 1) / 2 - 0.1, "queries", ha="right", va="bottom", fontsize=style.ANNOTATION_PT,
            color="#555")
    ax.text(1.04, (n + 1) / 2 - 0.1, "keys", ha="left", va="bottom", fontsize=style.ANNOTATION_PT, color="#555")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-(n + 1) / 2, (n + 1) / 2 + 0.4)
    ax.axis("off")
    if title:
        ax.set_title(title)
    return {"lines": lines, "labels_q": labels_q, "labels_k": labels_k}


def _rgb(hex_colour: str):
    return tuple(int(hex_colour[k:k + 2], 16) / 255 for k in (1, 3, 5))


class HeadView(CheckedFigure):
    """Two columns of tokens and a line per (query, key) pair, width = weight (see module doc).

    Traits: ``tokens_q`` (T names), ``tokens_k`` (S names), ``weights`` (T * S float64,
    row-major), ``focus`` (the query index highlighted before any hover; -1: none),
    ``title``. In the page, ``el.qkv`` holds ``{selected: {side, index} | null, widths,
    alphas}`` (T * S, what was drawn). CSS classes: ``qkv-headview``, ``qkv-hv-q-i`` /
    ``qkv-hv-k-j`` (the token buttons), ``qkv-hv-lines`` (canvas), ``qkv-hv-readout``.
    ``focus`` and the token labels refuse what cannot be shown (a ``TraitError`` naming the
    trait); ``weights`` is fixed when the figure is built.
    """

    _esm = module_source("headview.js")
    _fixed = ("weights",)
    _builder = "head_view(...)"
    tokens_q = traitlets.List().tag(sync=True)  # the validator checks every entry
    tokens_k = traitlets.List().tag(sync=True)
    weights = traitlets.Bytes(b"").tag(sync=True)
    focus = Whole(-1).tag(sync=True)
    title = traitlets.Unicode("").tag(sync=True)

    def __init__(self, tokens, weights, tokens_k=None, focus=None, title: str = ""):
        tokens_q, tokens_k, w = head_view_inputs(tokens, weights, tokens_k)
        self._w = w
        super().__init__(tokens_q=tokens_q, tokens_k=tokens_k, weights=f64_bytes(w),
                         focus=_focus_index(focus, tokens_q), title=str(title))

    @traitlets.validate("focus")
    def _valid_focus(self, proposal):
        T = self._w.shape[0]
        return integer("focus", proposal["value"], -1, T - 1, f"there are {T} query tokens (-1: none)")

    @traitlets.validate("tokens_q", "tokens_k")
    def _valid_tokens(self, proposal):
        name = proposal["trait"].name
        return labels(name, proposal["value"], self._w.shape[name == "tokens_k"],
                      "query" if name == "tokens_q" else "key")

    @property
    def weights_array(self) -> np.ndarray:
        """The (T, S) weights drawn."""
        return self._w.copy()

    def static_controls(self) -> list[tuple]:
        """The live figure has no widgets: a token is picked with the pointer (headview.js)."""
        return [("note", "hover over or tab to a token to see only its lines", None)]

    def static_png(self) -> bytes:
        T, S = self._w.shape
        fig = Figure(figsize=(4.4, 0.8 + 0.3 * max(T, S)), dpi=style.DPI, layout="constrained")
        plot_head_view(self.tokens_q, self._w, self.tokens_k, focus=self.focus if self.focus >= 0 else None,
                       ax=fig.subplots(), title=self.title or None)
        return figure_png(fig)


def head_view(tokens, weights, tokens_k=None, focus=None, title: str = "") -> HeadView:
    """The live head view (see :class:`HeadView`); end a notebook cell with it.

    tokens: T query tokens; weights: (T, S) attention weights; tokens_k: S key tokens
    (default: ``tokens``); focus: a query index or token to highlight first.
    """
    return HeadView(tokens, weights, tokens_k=tokens_k, focus=focus, title=title)
