"""Chapter 4's interactive figure: the scaling explorer, drawn in the browser.

``scaling_explorer(n=16, d_k=64, scale=True, temperature=1.0, seed=0, n_heads=1)
-> ScalingExplorer``; end a notebook cell with it.

Python draws q, k ~ N(0, 1) of shape (n_heads, n, 1024) from the seed (see
``explorer.py``) and sends the shown head's q and k ONCE, as float32 buffers
(exact: the draw is float32). The browser (``qkv_viz/viz/js/explorer.js``)
computes q . k for every d_k, and for each step of d_k, scaling, temperature,
metric or selected query: scores, the stable softmax, the readouts and every
picture, with no round trip to Python. Python works again only for a new n,
seed or head.

Traits (synced with the browser; set them from Python to move the figure):
``d_k`` (a power of two, 1..1024), ``scale`` (bool), ``temperature`` (> 0),
``query`` (the followed row), ``metric``, ``n`` (1..1024), ``seed`` (>= 0),
``head`` (0..n_heads-1). ``error``: Python's message for a bad n / seed / head.

Python-side numbers of what is on screen (from the math core, computed when
asked): ``weights``, ``scores`` (n, n), ``metrics`` (``summarize`` dict),
``curves`` (``dk_curves``), ``settings`` (dict). In the page, the root element
of each view carries the browser's own numbers as ``el.qkv`` (for the tests).

CSS classes: ``qkv-explorer`` (the figure), ``qkv-dk-slider`` (range input),
``qkv-dk-value``, ``qkv-scale-toggle`` (checkbox), ``qkv-temperature``, ``qkv-n``,
``qkv-seed``, ``qkv-head``, ``qkv-metric``, ``qkv-heatmap`` (canvas: weights +
colour bar), ``qkv-bars`` (canvas: the query's weights and scores),
``qkv-curve`` (canvas: metric vs d_k), ``qkv-readouts`` (table), ``qkv-message``.
"""
from __future__ import annotations

import traitlets

from qkv_viz.chapters.ch04_scaling.explorer import (D_KS, D_MAX, METRICS, N_MAX, check_settings,
                                                    dk_curves, draw_qk, head_attention)
from qkv_viz.chapters.ch04_scaling.explorer_view import explorer_figure
from qkv_viz.viz.canvas import CanvasFigure, f32_bytes, figure_png, module_source

_DATA_KEYS = ("n", "seed", "head")  # a change here needs new vectors from Python


class ScalingExplorer(CanvasFigure):
    """The scaling explorer (build it with :func:`scaling_explorer`)."""

    _esm = module_source("explorer.js")
    n = traitlets.Int(16).tag(sync=True)
    seed = traitlets.Int(0).tag(sync=True)
    n_heads = traitlets.Int(1).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    d_k = traitlets.Int(64).tag(sync=True)
    scale = traitlets.Bool(True).tag(sync=True)
    temperature = traitlets.Float(1.0).tag(sync=True)
    query = traitlets.Int(0).tag(sync=True)
    metric = traitlets.Unicode("max_weight").tag(sync=True)
    q = traitlets.Bytes(b"").tag(sync=True)  # (n, D_MAX) float32 of the shown head
    k = traitlets.Bytes(b"").tag(sync=True)
    d_ks = traitlets.List(list(D_KS)).tag(sync=True)
    d_max = traitlets.Int(D_MAX).tag(sync=True)
    n_max = traitlets.Int(N_MAX).tag(sync=True)

    def __init__(self, n=16, d_k=64, scale=True, temperature=1.0, seed=0, n_heads=1, head=0,
                 query=0, metric="max_weight"):
        check_settings(n, d_k, seed, temperature, n_heads, head)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        super().__init__(n=int(n), seed=int(seed), n_heads=int(n_heads), head=int(head),
                         d_k=int(d_k), scale=bool(scale), temperature=float(temperature),
                         query=int(query) % int(n), metric=metric)
        self._good = {}
        self._send_vectors()
        self.observe(self._on_data, names=list(_DATA_KEYS))

    @traitlets.validate("d_k")
    def _valid_d_k(self, proposal):
        if proposal["value"] not in D_KS:
            raise traitlets.TraitError(f"d_k must be a power of two in 1..{D_MAX}, got {proposal['value']}")
        return proposal["value"]

    @traitlets.validate("temperature")
    def _valid_temperature(self, proposal):
        t = proposal["value"]
        if not (0 < t < float("inf")):
            raise traitlets.TraitError(f"temperature must be a finite number > 0, got {t}")
        return t

    # -- Python's part: vectors for (seed, n, head) -----------------------------
    def _send_vectors(self):
        q, k = draw_qk(self.seed, self.n_heads, self.n, D_MAX)  # (H, n, D_MAX) each, float64 of float32
        self._good = {key: getattr(self, key) for key in _DATA_KEYS}
        self.query = min(self.query, self.n - 1)
        with self.hold_sync():  # q and k arrive together
            self.k = f32_bytes(k[self.head])
            self.q = f32_bytes(q[self.head])  # the browser recomputes on "change:q"

    def _on_data(self, change=None):
        try:
            check_settings(self.n, self.d_k, self.seed, self.temperature, self.n_heads, self.head)
        except (ValueError, TypeError) as exc:
            self.error = f"{exc}. Showing the last valid settings."
            return
        self.error = ""
        if {key: getattr(self, key) for key in _DATA_KEYS} != self._good:
            self._send_vectors()

    # -- what is on screen, from the math core ----------------------------------
    @property
    def settings(self) -> dict:
        """The settings on screen: n, seed, head, d_k, scale, temperature, query, metric."""
        keys = ("n", "seed", "head", "d_k", "scale", "temperature", "query", "metric")
        return {key: getattr(self, key) for key in keys}

    def _core(self):
        s = self.settings
        return head_attention(s["seed"], self.n_heads, s["n"], s["d_k"], s["scale"],
                              s["temperature"], s["head"])

    @property
    def scores(self):
        """Scores (n, n) before softmax, from the math core."""
        return self._core()[0]

    @property
    def weights(self):
        """Weights (n, n), from the math core (what the browser draws)."""
        return self._core()[1]

    @property
    def metrics(self) -> dict:
        """``diagnostics.summarize(scores, weights)`` of the current step."""
        return self._core()[2]

    @property
    def curves(self) -> dict:
        """``dk_curves`` at the current seed, n, head and temperature."""
        return dk_curves(self.seed, self.n_heads, self.n, self.temperature, self.head)

    def static_png(self) -> bytes:
        """The initial picture (heatmap, the query's bars, the metric curve) as PNG."""
        return figure_png(explorer_figure(self.weights, self.curves, self.d_k, self.scale,
                                          self.query, self.metric))


def scaling_explorer(n=16, d_k=64, scale=True, temperature=1.0, seed=0, n_heads=1,
                     **kwargs) -> ScalingExplorer:
    """Build the scaling explorer; end a notebook cell with the returned object.

    n tokens (1..1024), d_k a power of two (1..1024), ``scale`` on/off,
    softmax ``temperature`` > 0, ``seed`` >= 0, ``n_heads`` (1..8, choose one
    with the head control). Keyword arguments: ``head``, ``query``, ``metric``.
    """
    return ScalingExplorer(n, d_k, scale, temperature, seed, n_heads, **kwargs)
