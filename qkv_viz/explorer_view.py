"""The scaling explorer's figure: weights heatmap + one metric against d_k.

Two ways to put the figure on screen, same drawing code:

* ``"ipympl"``: the figure gets an ipympl ``Canvas`` (an ipywidget) directly,
  whatever ``%matplotlib`` backend the notebook uses. Updates push only the
  changed pixels (a PNG diff) to the browser.
* ``"png"``: a plain Agg canvas; each update encodes the figure as a PNG into
  an ``ipywidgets.Image``. Works anywhere (inline backend, MPLBACKEND=Agg,
  plain ``python``), just slower.

Speed: the figure is built once. A d_k or scale step only changes the
image data, the marker and the title, which are "animated" artists: we
restore the saved background and redraw those three (blitting). Anything
that changes axes (n, the curves, the metric) does one full draw, which also
saves a new background.
"""
from __future__ import annotations

import io

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from .explorer import D_KS
from .plots import attention_heatmap, metric_vs_dk

FIGSIZE = (6.4, 2.7)  # inches; at DPI 72 about 460 x 195 pixels
DPI = 72
METRIC_LABELS = {
    "max_weight": "max weight (row mean)",
    "effective_tokens": "effective tokens",
    "entropy": "row entropy (nats)",
    "score_std": "score std",
    "grad_norm": "softmax grad norm",
}


def _ipympl_canvas(fig: Figure):
    """Attach an ipympl Canvas to ``fig`` (no pyplot, no global backend switch)."""
    from ipympl.backend_nbagg import Canvas, FigureManager

    canvas = Canvas(fig)
    FigureManager(canvas, id(fig))  # the manager pushes rendered frames to the browser
    canvas.header_visible = False
    canvas.footer_visible = False
    canvas.toolbar_visible = False
    canvas.resizable = False
    return canvas


class ExplorerFigure:
    """Heatmap of the weights (n, n) on the left, ``metric`` vs d_k on the right.

    ``curves`` is ``explorer.dk_curves(...)``; ``widget`` is what to display
    (the ipympl Canvas or an ``ipywidgets.Image``).
    """

    def __init__(self, weights, curves, d_k, scale, metric="max_weight", backend="png"):
        self.figure = fig = Figure(figsize=FIGSIZE, dpi=DPI)
        if backend == "ipympl":
            self.widget = _ipympl_canvas(fig)
        else:
            FigureCanvasAgg(fig)
            self.widget = widgets.Image(format="png")
        self.backend = backend
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.19, top=0.87, wspace=0.38)
        self.ax_w, self.ax_m = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
        self.image = attention_heatmap(weights, ax=self.ax_w, annotate=False)
        self.title = self.ax_w.set_title("", fontsize=9)
        lines = metric_vs_dk(D_KS, curves[metric]["scaled"], curves[metric]["unscaled"],
                             ax=self.ax_m, label=METRIC_LABELS[metric], current=d_k)
        self.line_scaled, self.line_unscaled, self.marker = lines
        self._animated = (self.image, self.title, self.marker)
        for artist in self._animated:
            artist.set_animated(True)
        self._background = None
        self.draws = 0  # frames produced (full draws + blits), for tests and benchmarks
        fig.canvas.mpl_connect("draw_event", self._on_draw)
        self.set_step(weights, curves, d_k, scale, metric)
        self.set_curves(curves, metric)  # first full draw

    # -- drawing ---------------------------------------------------------
    def _on_draw(self, event):
        """After every full draw: save the background, then paint the animated artists."""
        canvas = self.figure.canvas
        self._background = canvas.copy_from_bbox(self.figure.bbox)
        self._paint_animated()

    def _paint_animated(self):
        for artist in self._animated:
            artist.axes.draw_artist(artist)

    def _full_draw(self):
        self.figure.canvas.draw()  # fires draw_event -> _on_draw; ipympl then sends the frame
        self._publish()

    def _blit(self):
        canvas = self.figure.canvas
        if self._background is None:
            return self._full_draw()
        canvas.restore_region(self._background)
        self._paint_animated()
        canvas.blit(self.figure.bbox)  # ipympl: sends the PNG diff; Agg: no-op
        self._publish()

    def _publish(self):
        self.draws += 1
        if self.backend == "png":
            self.widget.value = self.png()

    def png(self) -> bytes:
        """The current frame as PNG bytes (what the "png" backend displays)."""
        rgba = np.asarray(self.figure.canvas.buffer_rgba())  # (height, width, 4) uint8
        with io.BytesIO() as out:
            Image.fromarray(rgba[..., :3]).save(out, format="png", compress_level=1)
            return out.getvalue()

    # -- updates ---------------------------------------------------------
    def set_step(self, weights, curves, d_k, scale, metric):
        """Set the animated artists (image, marker, title) without drawing."""
        self.image.set_data(weights)
        i = D_KS.index(d_k)
        self.marker.set_data([d_k], [curves[metric]["scaled" if scale else "unscaled"][i]])
        how = r"scaled by $1/\sqrt{d_k}$" if scale else "unscaled"
        self.title.set_text(f"weights, $d_k$={d_k}, {how}")

    def step(self, weights, curves, d_k, scale, metric):
        """d_k or scale changed (same n, same curves): blit the three animated artists."""
        self.set_step(weights, curves, d_k, scale, metric)
        self._blit()

    def set_curves(self, curves, metric):
        """New curves or metric: update both lines and the axis, one full draw."""
        self.line_scaled.set_ydata(curves[metric]["scaled"])
        self.line_unscaled.set_ydata(curves[metric]["unscaled"])
        self.ax_m.set_ylabel(METRIC_LABELS[metric], fontsize=9)
        self.ax_m.set_yscale("log" if metric == "score_std" else "linear")
        self.ax_m.relim()
        self.ax_m.autoscale_view()
        self._full_draw()

    def resize(self, weights):
        """n changed: new image shape, new limits (followed by ``set_curves``)."""
        n = weights.shape[0]
        self.image.set_data(weights)
        self.image.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))  # rows go down, as imshow does
        self.ax_w.set_xlim(-0.5, n - 0.5)
        self.ax_w.set_ylim(n - 0.5, -0.5)
