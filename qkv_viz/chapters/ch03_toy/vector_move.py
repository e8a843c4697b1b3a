"""Chapter 3's live picture: one token's vector, moved by the weighted values (d = 2).

Left, the query among the keys; drag its tip (or use the arrow keys) and the
scores q . k_j change. Right, the values v_j as arrows, the weighted values
w_j v_j laid tip to tail, and their sum, the output, a point inside the triangle
of the values. Below, the weights as each value's share of one bar.

``vector_move()`` builds it; end a notebook cell with it. The browser
(``qkv_viz/viz/js/vector_move.js``) computes every step. Python's numbers of what
is on screen (``scores``, ``weights``, ``output``) and the still picture
(``still()``, the ``image/png`` of the output) come from
``qkv_viz.core.scaled_dot_product_attention``.

Traits: ``q`` (the query, two numbers in -3..3), ``token`` (whose query the
figure started from, 0..T-1; choosing one sets ``q`` to that row of Q),
``scale`` (bool), ``names`` (one label per token). A value the figure cannot show is
refused with a ``TraitError`` naming the trait, and the picture stays as it was; the
vectors (``k``, ``v``, ``queries``, ``d_k``) are fixed when it is built.
CSS classes: ``qkv-vector-move``, ``qkv-token``, ``qkv-scale-box``,
``qkv-query-plane`` / ``qkv-value-plane`` / ``qkv-shares`` (canvases),
``qkv-move-table``, ``qkv-message``.
"""
from __future__ import annotations

import numbers

import numpy as np
import traitlets
from matplotlib import patheffects
from matplotlib.figure import Figure
from matplotlib.patches import Polygon

from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_Q, TOY_V
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.validate import as_array
from qkv_viz.viz import style
from qkv_viz.viz.canvas import f64_bytes, figure_png, module_source
from qkv_viz.viz.traits import CheckedFigure, Whole, integer, labels, refuse

Q_LIM = 3.0  # the query plane shows -3..3 (vector_move.js's Q_LIM)
SHARE_COLOURS = ("#009E73", "#56B4E9", "#CC79A7")  # vector_move.js's first three: each value's colour
SHARE_TEXT = ("#007A59", "#1F6E9E", "#A14A7F")  # their labels: the same hues darker, >= 4.5:1 on white (the JS's)
Q_TEXT = "#A04000"  # the query's label, darker orange (vector_move.js's Q_TEXT)
OUTPUT_COLOUR = "#000000"  # orange is the query's alone


def _coord(x: float) -> str:
    """A query coordinate as the live figure writes it (one decimal: it snaps to 0.1), with a second
    decimal when the still's query needs it: 1.0, 0.5, 0.25."""
    two = f"{x:.2f}"
    return two if two[-1] != "0" else f"{x:.1f}"


def draw_query_plane(left, q, K, same=None):
    """The left plane: the query q (2,) among the keys K (S, 2), each key in its value's colour; `same` the
    index of a key equal to q (said in its label), else None."""
    q, K = np.asarray(q, dtype=float), np.asarray(K, dtype=float)
    arrow = dict(length_includes_head=True, head_width=0.2, overhang=0.2)
    # the query first, a wide orange arrow ending in the dot the live figure drags (vector_move.js),
    # so a key equal to q, drawn thin on top of it, stays visible
    left.arrow(0, 0, *q, color=style.QUERY_COLOR, width=0.1, zorder=1, **arrow)
    left.plot(*q, "o", color=style.QUERY_COLOR, ms=11, zorder=1)
    for j, k in enumerate(K):
        # every key from the origin, in its value's colour, solid
        colour = SHARE_COLOURS[j % 3]
        left.arrow(0, 0, *k, color=colour, width=0.03, zorder=2, **arrow)
        # the label above-right of the tip; at the plane's top edge below-left (clear of the title),
        # at its right edge above-left (inside the plane), on the x axis below-right (clear of keys
        # above it), as vector_move.js places it
        if k[1] > Q_LIM - 0.5:
            offset, ha, va = (-6, -6), "right", "top"
        elif k[0] > Q_LIM - 0.6:
            offset, ha, va = (-6, 4), "right", "bottom"
        elif abs(k[1]) < 0.3 and j != same:
            offset, ha, va = (4, -4), "left", "top"
        else:
            offset, ha, va = ((6, -4), "left", "top") if j == same else ((4, 4), "left", "bottom")
        left.annotate(f"k{j}" + (" (= q)" if j == same else ""), k, xytext=offset, ha=ha, va=va,
                      textcoords="offset points", color=SHARE_TEXT[j % 3], fontweight="bold")
    left.annotate("q", q, xytext=(-8, 6), textcoords="offset points", ha="right", va="bottom",
                  color=Q_TEXT, fontweight="bold")
    left.set_xlabel(f"q = ({_coord(q[0])}, {_coord(q[1])})" + (f" = k{same}" if same is not None else ""),
                     color=Q_TEXT, fontweight="bold")
    lim = max(Q_LIM, np.abs(K).max()) + 0.35  # the plane and a margin: a key at its edge keeps its arrowhead
    left.set(xlim=(-lim, lim), ylim=(-lim, lim), title="the query among the keys")
    left.set_aspect("equal")
    left.axhline(0, color="#ddd", lw=0.8, zorder=0)
    left.axvline(0, color="#ddd", lw=0.8, zorder=0)


def draw_value_plane(right, V, weights, output, named=True):
    """The right plane: the values V (S, 2), their triangle, the weighted values w_j v_j tip to tail
    and where they end, the output (2,); `named=False` leaves out the triangle's and the output's
    labels (for small copies of the plane)."""
    V, weights = np.asarray(V, dtype=float), np.asarray(weights, dtype=float)
    lo, hi = min(0.0, V.min()), max(0.0, V.max())
    pad = 0.25 * (hi - lo)
    small = dict(length_includes_head=True, head_width=0.04 * (hi - lo), overhang=0.2)
    right.add_patch(Polygon(V, closed=True, facecolor="#000000", alpha=0.08, edgecolor="#999", lw=0.8))
    if named and len(V) == 3:  # name the triangle, as vector_move.js does: just inside the middle of its last edge
        edge_mid, inward = (V[0] + V[-1]) / 2, V[:, 0].mean() < (V[0, 0] + V[-1, 0]) / 2  # (2,), bool
        right.annotate("the values'\ntriangle", edge_mid, xytext=(-6 if inward else 6, 0),
                       textcoords="offset points", ha="right" if inward else "left", va="center",
                       color="#555", fontsize=style.MIN_FONT_PT + 1)
    at = np.zeros(2)
    for j, v in enumerate(V):
        right.arrow(0, 0, *v, color=SHARE_COLOURS[j % 3], width=0.004, ls="--", alpha=0.55, **small)
        right.annotate(f"v{j}", v, xytext=(4, 4), textcoords="offset points", color=SHARE_TEXT[j % 3],
                       fontweight="bold")
        step = weights[j] * v  # (2,): this value's share of the output
        right.arrow(*at, *step, color=SHARE_COLOURS[j % 3], width=0.006 + 0.03 * weights[j], zorder=3,
                    path_effects=[patheffects.withStroke(linewidth=3, foreground="white")], **small)
        at = at + step
        if j < len(V) - 1:  # where this piece ends and the next begins (vector_move.js's joints)
            right.plot(*at, "o", ms=4.5, mfc="white", mec=SHARE_COLOURS[j % 3], mew=1.5, zorder=4)
    # the output: a ring where the last piece ends, so even a short last piece shows through it
    right.plot(*output, "o", ms=10, mfc="none", mec=OUTPUT_COLOUR, mew=2, zorder=5)
    if named:
        right.annotate("output", output, xytext=(10, -10), textcoords="offset points", ha="left", va="top",
                       color=OUTPUT_COLOUR, fontweight="bold",
                       arrowprops=dict(arrowstyle="-", color=OUTPUT_COLOUR, lw=0.8))
    right.set_xlabel(f"output ({output[0]:.2f}, {output[1]:.2f})", color=OUTPUT_COLOUR, fontweight="bold")
    right.set(xlim=(lo - pad, hi + pad), ylim=(lo - pad, hi + pad), title=r"output = $\Sigma_j\, w_j v_j$")
    right.set_aspect("equal")
    right.axhline(0, color="#ddd", lw=0.8, zorder=0)
    right.axvline(0, color="#ddd", lw=0.8, zorder=0)


class VectorMoveFigure(CheckedFigure):
    """The live picture (build it with :func:`vector_move`)."""

    _esm = module_source("vector_move.js")
    _fixed = ("k", "v", "queries", "d_k")
    _builder = "vector_move(...)"
    q = traitlets.List().tag(sync=True)  # the validator checks the two numbers
    token = Whole(0).tag(sync=True)
    scale = traitlets.Bool(True).tag(sync=True)
    k = traitlets.Bytes(b"").tag(sync=True)
    v = traitlets.Bytes(b"").tag(sync=True)
    queries = traitlets.Bytes(b"").tag(sync=True)
    names = traitlets.List().tag(sync=True)
    d_k = traitlets.Int(2).tag(sync=True)

    def __init__(self, Q=TOY_Q, K=TOY_K, V=TOY_V, token: int = 0, names=None, scale: bool = True):
        self._Q, self._K, self._V = (as_array(n, a, ndim=2) for n, a in (("Q", Q), ("K", K), ("V", V)))
        if self._Q.shape[1] != 2 or self._K.shape[1] != 2 or self._V.shape[1] != 2:
            raise ValueError(f"this picture is drawn in the plane: Q, K and V need 2 columns, got shapes "
                             f"{self._Q.shape}, {self._K.shape}, {self._V.shape}")
        if self._K.shape[0] != self._V.shape[0]:
            raise ValueError(f"K and V need one row per key: got {self._K.shape} and {self._V.shape}")
        S = self._K.shape[0]
        names = [f"token {j}" for j in range(S)] if names is None else [str(x) for x in names]
        if len(names) != S:
            raise ValueError(f"names needs one name per key ({S}), got {len(names)}")
        super().__init__(names=names, d_k=2, scale=bool(scale), k=f64_bytes(self._K),
                         v=f64_bytes(self._V), queries=f64_bytes(self._Q))
        self.token = token
        self.q = [float(x) for x in self._Q[self.token]]
        self.observe(self._on_token, names=["token"])

    @traitlets.validate("q")
    def _valid_q(self, proposal):
        q = proposal["value"]
        if len(q) != 2 or not all(isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))
                                  and np.isfinite(x) and abs(x) <= Q_LIM for x in q):  # the plane's square
            refuse("q", q, f"q must be two finite numbers in -{Q_LIM:g}..{Q_LIM:g} (the plane drawn)")
        return [float(x) for x in q]

    @traitlets.validate("token")
    def _valid_token(self, proposal):
        T = self._Q.shape[0]
        return integer("token", proposal["value"], 0, T - 1, f"there are {T} tokens")

    @traitlets.validate("names")
    def _valid_names(self, proposal):
        return labels("names", proposal["value"], self._K.shape[0])

    def _on_token(self, change):
        self.q = [float(x) for x in self._Q[change["new"]]]

    # -- what is on screen, from the math core ----------------------------------
    def _attend(self):
        q = np.asarray(self.q, dtype=float)[None, :]  # (1, 2): one query
        output, weights = scaled_dot_product_attention(q, self._K, self._V, scale=self.scale)  # (1, 2), (1, S)
        return output[0], weights[0]

    @property
    def scores(self) -> np.ndarray:
        """The scores (S,) softmax receives: K @ q, divided by sqrt(d_k) when ``scale``."""
        q = np.asarray(self.q, dtype=float)
        return self._K @ q / (np.sqrt(self.d_k) if self.scale else 1.0)  # (S, 2) @ (2,) -> (S,)

    @property
    def weights(self) -> np.ndarray:
        return self._attend()[1]

    @property
    def output(self) -> np.ndarray:
        return self._attend()[0]

    def same_as_key(self):
        """The index of the key the query equals (to 0.05), else None: the picture says it."""
        gaps = np.abs(self._K - np.asarray(self.q)).max(axis=1)  # (S,)
        j = int(np.argmin(gaps))
        return j if gaps[j] < 0.05 else None

    def still(self) -> Figure:
        """The picture on screen, drawn by matplotlib (what a viewer without JavaScript shows)."""
        output, weights = self._attend()
        q, K, V = np.asarray(self.q), self._K, self._V
        fig = Figure(figsize=style.figsize(0.8, 0.6), dpi=style.DPI, layout="constrained")
        grid = fig.add_gridspec(2, 2, height_ratios=[1, 0.14])
        left, right, bar = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])
        draw_query_plane(left, q, K, self.same_as_key())
        draw_value_plane(right, V, weights, output)
        start, last_label = 0.0, -1.0  # below: the weights as each value's share of one bar (the live figure's bar)
        for j, w in enumerate(weights):
            bar.barh(0, w, left=start, color=SHARE_COLOURS[j % 3], edgecolor="white")
            label = f"v{j} {100 * w:.0f} %"
            if w > 0.07:
                bar.text(start + w / 2, 0, label, ha="center", va="center",
                         fontweight="bold", fontsize=style.FONT_PT - 1)
            else:  # too narrow for its label: the label sits just above its segment, in the value's colour,
                # moved right of the previous such label so two never overlap
                x_label = max(min(max(start + w / 2, 0.04), 0.96), last_label + 0.11)
                bar.text(x_label, 0.5, label, ha="center", va="bottom", clip_on=False,
                         color=SHARE_TEXT[j % 3], fontweight="bold", fontsize=style.FONT_PT - 1)
                last_label = x_label
            start += w
        bar.set(xlim=(0, 1), ylim=(-0.4, 0.4), yticks=[], xticks=[])
        bar.set_xlabel("the weights: each value's share of the output", fontsize=style.FONT_PT, loc="left")
        factor = f"scores divided by \u221a{self.d_k}" if self.scale else "scores not scaled"
        fig.suptitle(f"still picture, {factor} (a running notebook lets you drag q)", fontsize=style.FONT_PT - 1,
                     color="#666", x=0.99, ha="right")
        return fig

    def static_controls(self) -> list[tuple]:
        """The live figure's controls (vector_move.js) with this still's values; q is dragged on the left plane."""
        name = self.names[self.token] if self.token < len(self.names) else f"token {self.token}"
        return [("menu", "start from", f"{name}'s query"),
                ("check", f"divide by \u221ad\u2096 (d\u2096 = {self.d_k})", bool(self.scale)),
                ("note", "drag q on the left plane (or press the arrow keys)", None)]

    def static_png(self) -> bytes:
        return figure_png(self.still())


def vector_move(Q=TOY_Q, K=TOY_K, V=TOY_V, token: int = 0, names=None) -> VectorMoveFigure:
    """The live picture of one token's output (see the module doc); end a notebook cell with it."""
    return VectorMoveFigure(Q, K, V, token, names)
