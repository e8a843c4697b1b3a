"""Chapter 7's mask explorer: switch the causal mask on and off, move the padding boundary,
click cells to hide single keys, and watch each row renormalise.

Drawn in the browser (``qkv_viz/viz/js/masks.js``): Python sends the scores once;
the page recomputes the masked softmax on every change, with the formula of
``qkv_viz.core.attention.masked_softmax`` (a fully masked row gets zeros).
"""
from __future__ import annotations

import numpy as np
import traitlets
from matplotlib.figure import Figure

from qkv_viz.chapters.ch07_masks.figures import CLICK_HATCH, PAD_HATCH, hatch_masked
from qkv_viz.core.attention import causal_mask, masked_softmax
from qkv_viz.core.validate import as_array
from qkv_viz.viz import style
from qkv_viz.viz.canvas import f64_bytes, figure_png, module_source
from qkv_viz.viz.plots import attention_heatmap
from qkv_viz.viz.traits import CheckedFigure, Whole, integer, labels, refuse


class MaskFigure(CheckedFigure):
    """A weights heatmap under a mask the reader builds.

    Traits: ``scores`` (T x S float64 buffer, already scaled), ``T``, ``S``, ``tokens_q``,
    ``tokens_k``, ``causal`` (bool), ``n_real`` (keys 0..n_real-1 are real, the rest
    padding), ``clicked`` (T*S bools, cells hidden by hand). ``mask`` and ``weights``
    are what is on screen, computed by the math core. CSS classes: ``qkv-masks``,
    ``qkv-causal-box``, ``qkv-real-slider``, ``qkv-reset``, ``qkv-mask-map`` (canvas).
    ``n_real``, ``clicked`` and the token labels refuse what cannot be shown (a
    ``TraitError`` naming the trait); ``scores``, ``T`` and ``S`` are fixed when it is built.
    """

    _esm = module_source("masks.js")
    _fixed = ("scores", "T", "S")
    _builder = "mask_widget(...)"
    scores = traitlets.Bytes(b"").tag(sync=True)
    T = traitlets.Int(1).tag(sync=True)
    S = traitlets.Int(1).tag(sync=True)
    tokens_q = traitlets.List().tag(sync=True)  # the validators check every entry
    tokens_k = traitlets.List().tag(sync=True)
    causal = traitlets.Bool(True).tag(sync=True)
    n_real = Whole(1).tag(sync=True)
    clicked = traitlets.List().tag(sync=True)

    def __init__(self, scores, tokens_q, tokens_k, causal: bool = True, n_real: int | None = None):
        self._scores = as_array("scores", scores, ndim=2)
        T, S = self._scores.shape
        if len(tokens_q) != T or len(tokens_k) != S:
            raise ValueError(f"scores has shape {self._scores.shape} but got {len(tokens_q)} query "
                             f"and {len(tokens_k)} key labels")
        n_real = S if n_real is None else int(n_real)
        if not 0 <= n_real <= S:
            raise ValueError(f"n_real must lie in 0..S={S}, got {n_real}")
        super().__init__(scores=f64_bytes(self._scores), T=T, S=S, tokens_q=[str(t) for t in tokens_q],
                         tokens_k=[str(t) for t in tokens_k], causal=bool(causal), n_real=n_real,
                         clicked=[False] * (T * S))

    @traitlets.validate("n_real")
    def _valid_n_real(self, proposal):
        S = self._scores.shape[1]
        return integer("n_real", proposal["value"], 0, S, f"there are {S} keys (n_real of them real)")

    @traitlets.validate("tokens_q", "tokens_k")
    def _valid_tokens(self, proposal):
        name = proposal["trait"].name
        return labels(name, proposal["value"], self._scores.shape[name == "tokens_k"],
                      "query" if name == "tokens_q" else "key")

    @traitlets.validate("clicked")
    def _valid_clicked(self, proposal):
        value, T, S = proposal["value"], *self._scores.shape
        if len(value) != T * S or not all(isinstance(x, (bool, np.bool_)) for x in value):
            refuse("clicked", value, f"it must be T * S = {T * S} booleans (True: the cell is hidden), row by row")
        return [bool(x) for x in value]

    @property
    def mask(self) -> np.ndarray:
        """(T, S) bool, True = may attend: causal AND real key AND not clicked."""
        T, S = self.T, self.S
        mask = np.arange(S)[None, :] < self.n_real  # (1, S) padding boundary
        mask = mask & ~np.array(self.clicked, dtype=bool).reshape(T, S)
        return mask & causal_mask(T, S) if self.causal else mask

    @property
    def weights(self) -> np.ndarray:
        """The masked softmax of the scores (T, S): what the page shows."""
        return masked_softmax(self._scores, self.mask)

    def static_controls(self) -> list[tuple]:
        """The live figure's controls (masks.js) with this still's values; a click on a cell masks it."""
        return [("check", "causal mask", bool(self.causal)),
                ("slider", "real keys (the rest is padding)", (self.n_real / max(1, self.S), str(self.n_real))),
                ("button", "clear clicked cells", None), ("note", "click a cell to mask it", None)]

    def static_png(self) -> bytes:
        fig = Figure(figsize=style.figsize(0.6, 0.62), dpi=style.DPI, layout="constrained")
        ax = fig.subplots()
        im = attention_heatmap(self.weights, ax=ax, tokens_q=self.tokens_q, tokens_k=self.tokens_k,
                               colorbar=False, title="weights after the mask. Hidden keys:\n"
                                                     "stripes = causal, grey = padding,\n"
                                                     "horizontal lines = clicked")
        T, S = self.T, self.S
        by_causal = ~causal_mask(T, S) if self.causal else np.zeros((T, S), bool)
        by_padding = np.broadcast_to(np.arange(S)[None, :] >= self.n_real, (T, S))
        by_click = np.array(self.clicked, dtype=bool).reshape(T, S) & ~by_causal & ~by_padding
        hatch_masked(ax, ~by_padding, hatch=PAD_HATCH)             # grey first, causal lines on top
        hatch_masked(ax, ~by_causal)
        hatch_masked(ax, ~by_click, hatch=CLICK_HATCH)             # clicked only: no other reason
        fig.colorbar(im, ax=ax, label=style.WEIGHTS_LABEL)
        return figure_png(fig)


def mask_widget(scores, tokens_q, tokens_k, causal: bool = True, n_real: int | None = None):
    """The mask explorer (see :class:`MaskFigure`); end a notebook cell with it."""
    return MaskFigure(scores, tokens_q, tokens_k, causal, n_real)
