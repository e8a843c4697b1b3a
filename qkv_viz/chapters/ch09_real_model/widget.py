"""Chapter 9's figures: the real model's heads, as a static grid and live in the browser.

``head_grid_figure(trace, layer)`` is a matplotlib figure of one layer's heads.
``real_attention_widget(model)`` is the interactive figure: type a sentence
(Python runs the model once and sends every layer's weights), move the layer
slider (the browser redraws, ``qkv_viz/viz/js/heads.js``; the model does not
rerun). An empty or too long sentence shows the message and keeps the last
good picture.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import traitlets

from qkv_viz.bridges.real_forward import head_sharpness, run
from qkv_viz.viz.canvas import CanvasFigure, f32_bytes, figure_png, module_source
from qkv_viz.viz.plots import head_grid


def head_grid_figure(trace, layer: int, ncols: int = 4):
    """A closed matplotlib figure of every head of ``layer``: at most ``ncols`` panels
    a row, token labels, one shared 0..1 colour bar; titles give each head's
    effective tokens (mean over queries)."""
    weights = trace.weights[layer]  # (L, H, T, T) -> (H, T, T)
    eff = head_sharpness(trace)["effective_tokens"][layer]  # (H,)
    titles = [f"head {h}: {eff[h]:.1f} effective tokens" for h in range(weights.shape[0])]
    images = head_grid(weights, tokens_q=trace.tokens, tokens_k=trace.tokens, ncols=ncols,
                       titles=titles, suptitle=f"layer {layer}: attention weights of every head "
                                               "(rows: queries, columns: keys)")
    fig = images[0].figure
    plt.close(fig)
    return fig


class RealHeadsFigure(CanvasFigure):
    """Sentence box + layer slider above the layer's head grid, drawn in the browser.

    Traits: ``sentence``, ``layer``, ``tokens``, ``weights`` ((L, H, T, T) float32
    buffer), ``n_layers``, ``n_heads``, ``error``. ``trace`` is the last good
    ``Trace``. CSS classes: ``qkv-heads``, ``qkv-sentence``, ``qkv-layer``
    (range input), ``qkv-head-grid`` (canvas), ``qkv-message``.
    """

    _esm = module_source("heads.js")
    sentence = traitlets.Unicode("").tag(sync=True)
    layer = traitlets.Int(0).tag(sync=True)
    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    weights = traitlets.Bytes(b"").tag(sync=True)
    n_layers = traitlets.Int(1).tag(sync=True)
    n_heads = traitlets.Int(1).tag(sync=True)

    def __init__(self, model, sentence: str, layer: int = 0):
        self.model = model
        n_layers = model.config.n_layers
        if not 0 <= int(layer) < n_layers:
            raise ValueError(f"layer must be in 0..{n_layers - 1}, got {layer!r}")
        self.trace = run(model, sentence)  # ValueError for an empty or too long sentence
        super().__init__(sentence=sentence, layer=int(layer), n_layers=n_layers,
                         n_heads=model.config.n_heads, **self._data(self.trace))
        self.observe(self._on_sentence, names="sentence")

    @staticmethod
    def _data(trace) -> dict:
        return {"tokens": list(trace.tokens), "weights": f32_bytes(trace.weights)}  # (L, H, T, T)

    def _on_sentence(self, change):
        try:
            trace = run(self.model, change["new"])
        except (TypeError, ValueError) as exc:
            self.error = f"{exc}. Showing the last valid picture."
            return
        self.trace = trace
        with self.hold_sync():
            self.error = ""
            self.tokens = list(trace.tokens)
            self.weights = f32_bytes(trace.weights)  # the browser redraws on "change:weights"

    def static_png(self) -> bytes:
        return figure_png(head_grid_figure(self.trace, self.layer))


def real_attention_widget(model, sentence: str = "The cat sat on the mat because it was tired.",
                          layer: int = 0):
    """The real model's heads, live (see :class:`RealHeadsFigure`); end a cell with it."""
    return RealHeadsFigure(model, sentence, layer)
