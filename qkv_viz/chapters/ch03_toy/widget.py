"""Chapter 3's editable toy: type three scores, watch every intermediate change.

``toy_widget()`` builds and returns the figure; the notebook displays it. It is
drawn in the browser (``qkv_viz/viz/js/toy.js``): each edit recomputes the
table and the bars in the page. Bad input (not a number, inf, NaN) shows a
message and keeps the last good table.
"""
from __future__ import annotations

import numpy as np
import traitlets
from matplotlib.figure import Figure

from qkv_viz.chapters.ch03_toy.toy import TOY_SCORES, TOY_V, toy_steps
from qkv_viz.viz import style
from qkv_viz.viz.canvas import f64_bytes, figure_png, module_source
from qkv_viz.viz.traits import CheckedFigure, numbers_list


def format_number(x: float) -> str:
    """A table cell, as toy.js writes it: 3 decimals, an exponent from 10^4 on, inf past float64."""
    if not np.isfinite(x):
        return "inf (overflow)"
    return f"{x:.2e}" if abs(x) >= 1e4 else f"{x:.3f}"


def _row(name: str, values) -> str:
    cells = "".join(f"<td style='padding:2px 8px;text-align:right'>{format_number(x)}</td>"
                    for x in np.ravel(values))
    return f"<tr><th style='text-align:left;padding-right:8px'>{name}</th>{cells}</tr>"


_STAGES = (("dot products q.k", "scores"), ("scores (x factor)", "scaled"), ("exp(scores)", "exp"),
           ("weights", "weights"))


def steps_html(steps) -> str:
    """The intermediates of a ``ToySteps`` as a small HTML table (no scripts)."""
    head = "".join(f"<th style='padding:2px 8px'>key {j}</th>" for j in range(steps.scores.size))
    rows = [f"<tr><th></th>{head}</tr>"] + [_row(name, getattr(steps, attr)) for name, attr in _STAGES]
    extra = (f"<div style='font-family:monospace'>scale factor = {steps.factor:.3f}, "
             f"sum of exp = {format_number(steps.total)}, output = "
             + ", ".join(f"{x:.3f}" for x in steps.output) + "</div>")
    return "<table style='font-family:monospace'>" + "".join(rows) + "</table>" + extra


class ToyFigure(CheckedFigure):
    """Score boxes + a scaling checkbox above a live table and bars of the weights.

    Traits: ``scores`` (list of floats, the last valid ones), ``scale`` (bool),
    ``v`` (values, float64 buffer), ``d_k``. ``steps`` is ``toy_steps`` of what is
    on screen. CSS classes: ``qkv-toy``, ``qkv-score-0..``, ``qkv-scale-box``,
    ``qkv-steps`` (table), ``qkv-toy-bars`` (canvas), ``qkv-message``. ``scores`` refuses
    anything but one finite number per key; ``v`` and ``d_k`` are fixed when it is built.
    """

    _esm = module_source("toy.js")
    _fixed = ("v", "d_k")
    _builder = "toy_widget(...)"
    scores = traitlets.List().tag(sync=True)  # the validator checks each number
    scale = traitlets.Bool(True).tag(sync=True)
    v = traitlets.Bytes(b"").tag(sync=True)
    d_k = traitlets.Int(2).tag(sync=True)

    def __init__(self, scores=TOY_SCORES, v=TOY_V, d_k: int = 2, scale: bool = True):
        self._v = np.asarray(v, dtype=float)
        toy_steps(scores, self._v, d_k, scale)  # validates
        super().__init__(scores=[float(x) for x in scores], scale=bool(scale),
                         v=f64_bytes(self._v), d_k=int(d_k))

    @traitlets.validate("scores")
    def _valid_scores(self, proposal):
        return numbers_list("scores", proposal["value"], self._v.shape[0])

    @property
    def steps(self):
        """``toy_steps`` of the scores and scaling on screen (the math core)."""
        return toy_steps(self.scores, self._v, self.d_k, self.scale)

    def still(self) -> Figure:
        """The picture on screen, drawn by matplotlib: the table of intermediates above the weights' bars."""
        st = self.steps
        S = st.weights.size
        fig = Figure(figsize=style.figsize(0.8, 0.62), dpi=style.DPI, layout="constrained")
        top, ax = fig.subplots(2, 1, height_ratios=[1, 1.3])
        top.axis("off")
        cells = [[format_number(x) for x in np.ravel(getattr(st, attr))] for _, attr in _STAGES]
        table = top.table(cellText=cells, rowLabels=[name for name, _ in _STAGES],
                          colLabels=[f"key {j}" for j in range(S)], loc="center", cellLoc="right")
        table.auto_set_font_size(False)
        table.set_fontsize(style.FONT_PT - 1)
        top.set_title(f"scale factor {st.factor:.3f}, sum of exp {format_number(st.total)}",
                      fontsize=style.FONT_PT)
        ax.bar([f"key {j}" for j in range(S)], st.weights, color=style.KEY_COLOR)
        for j, w in enumerate(st.weights):
            ax.text(j, w + 0.02, f"{w:.3f}", ha="center")
        ax.set(ylim=(0, 1.15), ylabel="weight", title="the weights (from the shifted softmax)")
        return fig

    def static_controls(self) -> list[tuple]:
        """The live figure's controls (toy.js) with this still's values."""
        return ([("box", f"q0\u00b7k{j}", f"{x:g}") for j, x in enumerate(self.scores)]
                + [("check", f"scale by 1/\u221ad_k (d_k = {self.d_k})", bool(self.scale))])

    def static_png(self) -> bytes:
        return figure_png(self.still())


def toy_widget(scores=TOY_SCORES, v=TOY_V, d_k: int = 2):
    """The editable toy (see :class:`ToyFigure`); end a notebook cell with it."""
    return ToyFigure(scores, v, d_k)
