"""Chapter 11's generation stepper: one token per step, the K and V caches growing, the new
query's row of weights, and a control for how many K/V heads the query heads share.

Drawn in the browser (``qkv_viz/viz/js/generation.js``): Python sends the token vectors
and the layer's multi-head projections once; the page computes the grouped K/V
projections (``qkv_viz.core.kv_cache.group_kv_heads``), the caches and the weights for
every setting, so every control works without a kernel.
"""
from __future__ import annotations

import numpy as np
import traitlets
from matplotlib.figure import Figure

from qkv_viz.chapters.ch11_generation.generation import SENTENCE, shared_kv, toy_layer
from qkv_viz.core.kv_cache import GQAParams, causal_self_attention, generate
from qkv_viz.core.validate import as_array
from qkv_viz.viz import style
from qkv_viz.viz.canvas import CanvasFigure, f64_bytes, figure_png, module_source
from qkv_viz.viz.plots import attention_heatmap


class GenerationFigure(CanvasFigure):
    """Step through a sentence; the K/V caches, the new query's weights, the causal matrix.

    Traits: ``tokens``, ``T``, ``d_model``, ``n_heads``; ``x`` (T x d_model), ``W_q``,
    ``W_k``, ``W_v`` (d_model x n_heads d_k, multi-head) as float64 buffers; ``step``
    (the new token, 0..T-1), ``head`` (query head shown), ``n_kv_heads`` (a divisor of
    n_heads). CSS classes: ``qkv-generation``, ``qkv-gen-step`` (slider), ``qkv-gen-next``
    (button), ``qkv-gen-head``, ``qkv-gen-kv`` (selects), ``qkv-gen-map`` (canvas),
    ``qkv-gen-readout``.
    """

    _esm = module_source("generation.js")
    tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    T = traitlets.Int(1).tag(sync=True)
    d_model = traitlets.Int(1).tag(sync=True)
    n_heads = traitlets.Int(1).tag(sync=True)
    x = traitlets.Bytes(b"").tag(sync=True)
    W_q = traitlets.Bytes(b"").tag(sync=True)
    W_k = traitlets.Bytes(b"").tag(sync=True)
    W_v = traitlets.Bytes(b"").tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)
    head = traitlets.Int(0).tag(sync=True)
    n_kv_heads = traitlets.Int(1).tag(sync=True)

    def __init__(self, x, params: GQAParams, tokens, step: int = 0, n_kv_heads: int | None = None):
        self._x = as_array("x", x, ndim=2)
        if not isinstance(params, GQAParams) or params.n_kv_heads != params.n_heads:
            raise ValueError("params must be a multi-head GQAParams (n_kv_heads == n_heads); "
                             "the figure shares the K/V heads itself")
        if len(tokens) != len(self._x):
            raise ValueError(f"x has {len(self._x)} rows (tokens) but got {len(tokens)} token labels")
        self._params = params
        H = params.n_heads
        n_kv_heads = H if n_kv_heads is None else int(n_kv_heads)
        if n_kv_heads < 1 or H % n_kv_heads:
            raise ValueError(f"n_kv_heads must divide n_heads={H}, got {n_kv_heads}")
        if not 0 <= int(step) < len(self._x):
            raise ValueError(f"step must lie in 0..{len(self._x) - 1}, got {step}")
        super().__init__(tokens=[str(t) for t in tokens], T=len(self._x), d_model=self._x.shape[1],
                         n_heads=H, x=f64_bytes(self._x), W_q=f64_bytes(params.W_q),
                         W_k=f64_bytes(params.W_k), W_v=f64_bytes(params.W_v), step=int(step),
                         head=0, n_kv_heads=n_kv_heads)

    def _layer(self) -> GQAParams:
        return shared_kv(self._params, self.n_kv_heads)

    @property
    def weights(self) -> np.ndarray:
        """The new query's weights on screen, (step+1,): head ``head``, computed by the core."""
        _, w = causal_self_attention(self._x[:self.step + 1], self._layer())  # (H, t+1, t+1)
        return w[self.head, -1]

    @property
    def cache(self):
        """The ``KVCache`` after ``step`` (tokens 0..step), computed by the core."""
        return generate(self._x[:self.step + 1], self._layer())[1]

    @property
    def cache_numbers(self) -> int:
        """Numbers the K and V caches hold after ``step``."""
        c = self.cache
        return c.k.size + c.v.size

    def static_png(self) -> bytes:
        fig = Figure(figsize=style.figsize(0.95, 0.42), dpi=style.DPI, layout="constrained")
        ax_w, ax_c = fig.subplots(1, 2, width_ratios=(1.1, 1))
        _, w = causal_self_attention(self._x, self._params)  # (H, T, T)
        attention_heatmap(w[0], ax=ax_w, tokens_q=self.tokens, tokens_k=self.tokens,
                          title="weights, head 0: one row per step")
        H, T = self.n_heads, self.T
        choices = [g for g in range(H, 0, -1) if H % g == 0]
        numbers = [2 * T * g * (self.d_model // H) for g in choices]
        bars = ax_c.bar([f"{g} K/V head{'s' if g > 1 else ''}" for g in choices], numbers, color=style.KEY_COLOR)
        ax_c.bar_label(bars, labels=[str(n) for n in numbers])
        ax_c.set(ylabel="numbers in the K and V caches", ylim=(0, max(numbers) * 1.2),
                 title=f"the cache after {T} tokens")
        return figure_png(fig)


def generation_widget(step: int = 0, n_kv_heads: int | None = None):
    """The stepper on the chapter's sentence and layer (see :class:`GenerationFigure`)."""
    x, params = toy_layer()
    return GenerationFigure(x, params, SENTENCE, step=step, n_kv_heads=n_kv_heads)
