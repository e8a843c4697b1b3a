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
        """The step on screen, as the live figure draws it: the new query's row of weights (outlined)
        in the causal matrix, the K and V caches with the row this step appended (outlined), the
        new query (all heads, never cached), each with a colour bar."""
        from matplotlib.patches import Rectangle
        t, hd, H, Hkv, T = self.step, self.head, self.n_heads, self.n_kv_heads, self.T
        layer = self._layer()
        _, w = causal_self_attention(self._x, layer)                # (H, T, T): row i = step i's weights
        w = np.where((np.arange(T)[:, None] <= t) & np.tri(T, dtype=bool), w[hd], np.nan)  # future: blank
        cache = generate(self._x[:t + 1], layer)[1]                 # k, v: (H_kv, t+1, d_k)
        q = self._x[t] @ layer.W_q                                  # (H d_k,): the new query, all heads
        k, v = (a.swapaxes(0, 1).reshape(t + 1, -1) for a in (cache.k, cache.v))  # (t+1, H_kv d_k)
        lim = float(max(np.abs(a).max() for a in (k, v, q)))
        fig = Figure(figsize=style.figsize(1.0, 0.55), dpi=style.DPI, layout="constrained")
        grid = fig.add_gridspec(2, 3, height_ratios=(T, 1.6), width_ratios=(1.4, 1, 1))
        ax_w = fig.add_subplot(grid[0, 0])
        im_w = ax_w.imshow(w, cmap=style.WEIGHTS_CMAP, vmin=0, vmax=1)
        for i, j in zip(*np.nonzero(np.isfinite(w))):
            ax_w.text(j, i, f"{w[i, j]:.2f}", ha="center", va="center", fontsize=7,
                      color="black" if w[i, j] > 0.6 else "white")
        ax_w.set(title=f"weights, head {hd}", xticks=range(T), yticks=range(T),
                 xticklabels=self.tokens, yticklabels=self.tokens, xlabel="key", ylabel="query")
        fig.colorbar(im_w, ax=ax_w, label=style.WEIGHTS_LABEL, shrink=0.8)
        ax_w.add_patch(Rectangle((-0.5, t - 0.5), t + 1, 1, fill=False, edgecolor=style.QUERY_COLOR, lw=2.5))
        im, cache_axes = None, []
        for col, (name, a) in enumerate((("K", k), ("V", v)), start=1):
            ax = fig.add_subplot(grid[0, col])
            cache_axes.append(ax)
            full = np.full((T, a.shape[1]), np.nan)
            full[:t + 1] = a
            im = ax.imshow(full, cmap=style.SCORES_CMAP, vmin=-lim, vmax=lim, aspect="auto")
            ax.add_patch(Rectangle((-0.5, t - 0.5), a.shape[1], 1, fill=False, edgecolor=style.QUERY_COLOR, lw=2.5, zorder=3))
            for g in range(1, Hkv):
                ax.axvline(g * layer.d_k - 0.5, color="white", lw=2)
            ax.set(title=f"{name} cache ({Hkv} K/V head{'s' if Hkv > 1 else ''})",
                   yticks=range(T), yticklabels=self.tokens, xticks=[])
        ax_q = fig.add_subplot(grid[1, 1:])
        ax_q.imshow(q[None], cmap=style.SCORES_CMAP, vmin=-lim, vmax=lim, aspect="auto")
        for g in range(1, H):
            ax_q.axvline(g * layer.d_k - 0.5, color="white", lw=2)
        ax_q.set(xticks=[], yticks=[], title=f'query of "{self.tokens[t]}" ({H} heads): used, never cached')
        fig.colorbar(im, ax=cache_axes + [ax_q], label="entries of K, V, q", shrink=0.8)
        fig.suptitle(f'step {t}: "{self.tokens[t]}" adds row {t} (outlined) to the weights and to each cache')
        return figure_png(fig)


def generation_widget(step: int = 0, n_kv_heads: int | None = None):
    """The stepper on the chapter's sentence and layer (see :class:`GenerationFigure`)."""
    x, params = toy_layer()
    return GenerationFigure(x, params, SENTENCE, step=step, n_kv_heads=n_kv_heads)
