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
``head`` (0..n_heads-1). Each refuses a value it cannot show with a
``TraitError`` naming the trait (``metric = "nope"``, ``query = 99`` with n = 8),
and the figure keeps its last good picture.

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

import numpy as np
import traitlets
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from qkv_viz.chapters.ch04_scaling.explorer import (D_KS, D_MAX, METRICS, N_MAX,
                                                    check_settings, dk_curves, draw_qk,
                                                    head_attention)
from qkv_viz.viz import style
from qkv_viz.viz.canvas import f32_bytes, figure_png, module_source
from qkv_viz.core.diagnostics import summarize
from qkv_viz.viz.plots import attention_heatmap, metric_vs_dk
from qkv_viz.viz.traits import CheckedFigure, Number, Whole, integer, number, one_of

METRIC_LABELS = {  # the same words as explorer.js's menu and as chapter 4's page
    "max_weight": "max weight (row mean)",
    "effective_tokens": "effective number of keys (row mean)",
    "entropy": "entropy H, nats (row mean)",
    "score_std": "score spread, row std (row mean)",
    "grad_norm": "\u2016J\u2016 Frobenius (row mean)",
}
QUERY_OUTLINE = "#FF3030"  # the followed row's box in the still: red shows on every viridis colour and on white
POSITIVE, NEGATIVE = "#B2182B", "#2166AC"  # scores: the ends of style.SCORES_CMAP (as explorer.js)
READOUT_LABELS = {  # the readout table's row names (explorer.js's drawReadouts)
    "score_std": "score spread (std)", "max_weight": "max weight", "entropy": "entropy H (nats)",
    "effective_tokens": "effective number of keys", "grad_norm": "\u2016J\u2016 Frobenius",
}


class ScalingExplorer(CheckedFigure):
    """The scaling explorer (build it with :func:`scaling_explorer`).

    Every trait refuses a value the figure cannot show (a ``TraitError`` naming
    the trait); the figure then keeps its last good picture. ``n_heads`` and the
    vectors are fixed when it is built.
    """

    _esm = module_source("explorer.js")
    _fixed = ("n_heads", "q", "k", "d_ks", "d_max", "n_max")
    _builder = "scaling_explorer(...)"
    n = Whole(16).tag(sync=True)
    seed = Whole(0).tag(sync=True)
    n_heads = Whole(1).tag(sync=True)
    head = Whole(0).tag(sync=True)
    d_k = Whole(64).tag(sync=True)
    scale = traitlets.Bool(True).tag(sync=True)
    temperature = Number(1.0).tag(sync=True)
    query = Whole(0).tag(sync=True)
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
        if isinstance(query, bool) or not isinstance(query, (int, np.integer)) or not 0 <= query < n:
            raise ValueError(f"query must be an integer in 0..{n - 1} (n = {n}), got {query!r}")
        super().__init__(n=int(n), seed=int(seed), n_heads=int(n_heads), head=int(head),
                         d_k=int(d_k), scale=bool(scale), temperature=float(temperature),
                         query=int(query), metric=metric)
        self._send_vectors()
        self.observe(self._send_vectors, names=["n", "seed", "head"])

    # -- refuse what the figure cannot show ---------------------------------------
    @traitlets.validate("d_k")
    def _valid_d_k(self, proposal):
        return one_of("d_k", proposal["value"], D_KS, "d_k is a power of two")

    @traitlets.validate("temperature")
    def _valid_temperature(self, proposal):
        return number("temperature", proposal["value"], above=0)

    @traitlets.validate("metric")
    def _valid_metric(self, proposal):
        return one_of("metric", proposal["value"], METRICS)

    @traitlets.validate("query", "n", "seed", "head")
    def _valid_index(self, proposal):
        name = proposal["trait"].name
        lo, hi, why = {"query": (0, self.n - 1, f"there are {self.n} tokens"),
                       "n": (1, N_MAX, None), "seed": (0, 2 ** 32 - 1, None),
                       "head": (0, self.n_heads - 1, f"there are {self.n_heads} heads")}[name]
        return integer(name, proposal["value"], lo, hi, why)

    # -- Python's part: vectors for (seed, n, head) -----------------------------
    def _send_vectors(self, change=None):
        q, k = draw_qk(self.seed, self.n_heads, self.n, D_MAX)  # (H, n, D_MAX) each
        if self.query >= self.n:
            self.query = self.n - 1
        with self.hold_sync(), self._updating():  # q and k arrive together
            self.k = f32_bytes(k[self.head])
            self.q = f32_bytes(q[self.head])  # the browser recomputes on "change:q"

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

    def static_controls(self) -> list[tuple]:
        """The live figure's controls (explorer.js) with this still's values."""
        i = D_KS.index(self.d_k)
        out = [("slider", "d\u2096", (i / (len(D_KS) - 1), str(self.d_k))),
               ("check", "divide by \u221ad\u2096", bool(self.scale)),
               ("box", "temperature", f"{self.temperature:g}"),
               ("box", "tokens n", str(self.n)), ("box", "seed", str(self.seed))]
        if self.n_heads > 1:
            out.append(("menu", "head", f"head {self.head}"))
        return out + [("menu", "plot against d\u2096", METRIC_LABELS[self.metric])]

    def static_png(self) -> bytes:
        """The still of what is on screen (heatmap, the query's bars, the metric curve) as PNG."""
        return figure_png(self.still())

    def still(self) -> Figure:
        """The live figure drawn by matplotlib from the math core: the weights heatmap, the
        followed query's weights and scores (bars), the metric against d_k and the readouts."""
        scores, weights, metrics = self._core()
        n, on, qi = self.n, self.scale, self.query
        how = "scaled" if on else "not scaled"
        fig = Figure(figsize=style.figsize(1.0, 0.62), dpi=style.DPI, layout="constrained")
        fig.suptitle("A still picture of the explorer: it moves in a running notebook", x=0.01, ha="left",
                     fontsize=style.FONT_PT, color="0.3")
        grid = fig.add_gridspec(2, 3, width_ratios=[1.4, 0.8, 1.25])  # the heatmap fills its column
        ax_w = fig.add_subplot(grid[:, 0])
        ax_b, ax_s = fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])
        ax_m, ax_t = fig.add_subplot(grid[0, 2]), fig.add_subplot(grid[1, 2])
        attention_heatmap(weights, ax=ax_w, annotate=False,
                          title=f"weights, $d_k$ = {self.d_k},\n{how}, query {qi} boxed")
        ax_w.set_aspect("equal")                                 # square cells, as in the live heatmap
        ticks = np.arange(0, n, max(1, int(np.ceil(n / 5))))  # at most 5 labels: they never touch
        ax_w.set_xticks(ticks, [str(t) for t in ticks])
        ax_w.set_yticks(ticks, [str(t) for t in ticks])
        ax_w.add_patch(Rectangle((-0.5, qi - 0.5), n, 1, fill=False, edgecolor=QUERY_OUTLINE, lw=2,
                                 clip_on=False))  # the followed query's row: red, so no white band looks like a gap
        ax_b.bar(np.arange(n), weights[qi], hatch=None if on else "//", edgecolor="white",
                 color=style.SCALED_COLOR if on else style.UNSCALED_COLOR)
        ax_b.set(ylim=(0, 1), ylabel="weight", title=f"query {qi}'s weights ({how})")
        factor = f"1/\u221a{self.d_k}" if on else "1"
        row = scores[qi]
        big = float(np.abs(row).max()) or 1.0
        ax_s.bar(np.arange(n), row, color=np.where(row >= 0, POSITIVE, NEGATIVE))
        ax_s.axhline(0, color="black", lw=0.6)
        ax_s.set(ylim=(-1.05 * big, 1.05 * big), xlabel="keys", ylabel="score",
                 title=f"query {qi}'s scores, factor {factor}")
        for ax in (ax_b, ax_s):
            ax.set_xticks(ticks, [str(t) for t in ticks])
        metric_vs_dk(D_KS, *(self.curves[self.metric][key] for key in ("scaled", "unscaled")), ax=ax_m,
                     label=METRIC_LABELS[self.metric], current=self.d_k)
        ax_m.set_xlabel("$d_k$")
        if self.metric == "max_weight":                          # the baseline every max weight is read against
            ax_m.axhline(1 / n, color="0.45", lw=1, ls=":", label="_uniform")   # named on the axes, not in the legend
            ax_m.text(0.98, 1 / n, f"uniform row: 1/{n}", transform=ax_m.get_yaxis_transform(), ha="right",
                      va="bottom", fontsize=style.FONT_PT - 1, color="0.35")
        ax_m.legend(fontsize=style.FONT_PT - 1, frameon=False, handlelength=1.5, ncol=2, columnspacing=1.0,
                    loc="lower left", bbox_to_anchor=(0.0, 1.0), borderaxespad=0.2)  # above the axes: on no curve
        if self.metric == "score_std":
            ax_m.set_yscale("log")
        one = summarize(scores[qi:qi + 1], weights[qi:qi + 1])  # the followed row alone
        cells = [
            [READOUT_LABELS[key], f"{metrics[key]:.3g}", f"{one[key]:.3g}"] for key in READOUT_LABELS]
        ax_t.axis("off")  # the readout table, one text line per row (the live figure's table)
        header = ["", "all rows", f"query {qi}"]
        for i, line in enumerate([header] + cells):
            y = 1.0 - i / (len(cells) + 1)
            for x, text in zip((-0.22, 0.8, 1.12), line):
                ax_t.text(x, y, text, transform=ax_t.transAxes, ha="right" if x > 0 else "left", va="top",
                          fontsize=style.FONT_PT - 1, fontweight="bold" if i == 0 else "normal")
        return fig


def scaling_explorer(n=16, d_k=64, scale=True, temperature=1.0, seed=0, n_heads=1,
                     **kwargs) -> ScalingExplorer:
    """Build the scaling explorer; end a notebook cell with the returned object.

    n tokens (1..1024), d_k a power of two (1..1024), ``scale`` on/off,
    softmax ``temperature`` > 0, ``seed`` >= 0, ``n_heads`` (1..8, choose one
    with the head control). Keyword arguments: ``head``, ``query``, ``metric``.
    """
    return ScalingExplorer(n, d_k, scale, temperature, seed, n_heads, **kwargs)
