"""Chapter 9's figures: the real model's heads, as a static grid and live in the browser.

``head_grid_figure(trace, layer)`` is a matplotlib figure of one layer's heads.
``real_attention_widget(model)`` is the interactive figure: type a sentence
(Python runs the model once and sends every layer's weights), move the layer
slider (the browser redraws, ``qkv_viz/viz/js/heads.js``; the model does not
rerun). An empty or too long sentence, or a layer the model does not have, is
refused (a ``TraitError`` from Python; typed in the page, the message shows) and
the last good picture stays.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import traitlets

from qkv_viz.bridges.real_forward import head_sharpness, run
from qkv_viz.viz.canvas import f32_bytes, figure_png, module_source
from qkv_viz.viz.plots import head_grid
from qkv_viz.viz.traits import CheckedFigure, Whole, integer, refuse


def head_grid_figure(trace, layer: int, ncols: int = 4, note: str = ""):
    """A closed matplotlib figure of every head of ``layer``: at most ``ncols`` panels
    a row, query labels on the first column and key labels under the bottom row, one shared
    0..1 colour bar; titles give each head's effective tokens (mean over queries); ``note``, if given, is a second title line."""
    weights = trace.weights[layer]  # (L, H, T, T) -> (H, T, T)
    eff = head_sharpness(trace)["effective_tokens"][layer]  # (H,)
    titles = [f"head {h}: {eff[h]:.1f} eff. tokens" for h in range(weights.shape[0])]  # heads.js's narrow words
    images = head_grid(weights, tokens_q=trace.tokens, tokens_k=trace.tokens, ncols=ncols,
                       titles=titles, suptitle=f"layer {layer}: attention weights of every head "
                                               "(rows: queries, columns: keys)" + (f"\n{note}" if note else ""))
    for im in images:  # token labels at 9 pt, the book's legible size (the grid leaves each row ~9.4 pt)
        im.axes.tick_params(labelsize=9)
        if not im.axes.get_xlabel():  # key labels only under the lowest panel of each column
            im.axes.tick_params(labelbottom=False)
    fig = images[0].figure
    plt.close(fig)
    return fig


class RealHeadsFigure(CheckedFigure):
    """Sentence box + layer slider above the layer's head grid, drawn in the browser.

    Traits: ``sentence``, ``layer``, ``tokens``, ``weights`` ((L, H, T, T) float32
    buffer), ``n_layers``, ``n_heads``, ``error``. ``trace`` is the last good
    ``Trace``. ``sentence`` and ``layer`` refuse what the model cannot run or show; the
    rest follows the sentence (fixed otherwise). CSS classes: ``qkv-heads``,
    ``qkv-sentence``, ``qkv-layer`` (range input), ``qkv-head-grid`` (canvas), ``qkv-message``.
    """

    _esm = module_source("heads.js")
    _fixed = ("tokens", "weights", "n_layers", "n_heads")
    _builder = "real_attention_widget(...)"
    sentence = traitlets.Unicode("").tag(sync=True)
    layer = Whole(0).tag(sync=True)
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
        self._next = (sentence, self.trace)  # the last sentence the model ran, and its trace
        super().__init__(sentence=sentence, layer=int(layer), n_layers=n_layers,
                         n_heads=model.config.n_heads, **self._data(self.trace))
        self.observe(self._on_sentence, names="sentence")

    @staticmethod
    def _data(trace) -> dict:
        return {"tokens": list(trace.tokens), "weights": f32_bytes(trace.weights)}  # (L, H, T, T)

    @traitlets.validate("layer")
    def _valid_layer(self, proposal):
        L = self.model.config.n_layers
        return integer("layer", proposal["value"], 0, L - 1, f"the model has {L} layers")

    @traitlets.validate("sentence")
    def _valid_sentence(self, proposal):
        """The model runs here: a sentence it cannot run is refused, the trace of one it can waits."""
        sentence = proposal["value"]
        if self._built and sentence != self._next[0]:  # __init__ has run the model already
            try:
                self._next = (sentence, run(self.model, sentence))
            except (TypeError, ValueError) as exc:
                refuse("sentence", sentence, f"{exc}")
        return sentence

    def _on_sentence(self, change):
        sentence, trace = self._next
        if sentence != change["new"]:  # pragma: no cover - the validator always runs first
            trace = run(self.model, change["new"])
        self.trace = trace
        with self.hold_sync(), self._updating():
            self.error = ""
            self.tokens = list(trace.tokens)
            self.weights = f32_bytes(trace.weights)  # the browser redraws on "change:weights"

    def static_controls(self) -> list[tuple]:
        """The live figure's controls (heads.js) with this still's values."""
        last = max(1, self.n_layers - 1)
        return [("box", "sentence (Enter to run the model)", self.sentence),
                ("slider", "layer", (self.layer / last, str(self.layer)))]

    def static_png(self) -> bytes:
        return figure_png(head_grid_figure(self.trace, self.layer))  # no "type a sentence": true only live


def real_attention_widget(model, sentence: str = "The cat sat on the mat because it was tired.",
                          layer: int = 0):
    """The real model's heads, live (see :class:`RealHeadsFigure`); end a cell with it."""
    return RealHeadsFigure(model, sentence, layer)
