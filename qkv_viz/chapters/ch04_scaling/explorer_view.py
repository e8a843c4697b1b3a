"""The scaling explorer's figure: weights heatmap + one metric against d_k.

Two ways to put the figure on screen, same drawing code:

* ``"ipympl"``: the figure gets an ipympl ``Canvas`` (an ipywidget) directly,
  whatever ``%matplotlib`` backend the notebook uses. Updates push only the
  changed pixels (a PNG diff) to the browser.
* ``"png"``: a plain Agg canvas; each update encodes the figure as a PNG into
  an ``ipywidgets.Image``. Works anywhere (inline backend, MPLBACKEND=Agg,
  plain ``python``), just slower.

Speed: the figure is built once. A d_k or scale step only changes the
image data and the marker, which are "animated" artists: we restore the
saved background and redraw those two (blitting). Anything
that changes axes (n, the curves, the metric) does one full draw, which also
saves a new background.
"""
from __future__ import annotations

import io
import sys
import warnings
from base64 import b64encode
from functools import lru_cache

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image

from qkv_viz.chapters.ch04_scaling.explorer import D_KS
from qkv_viz.viz.plots import attention_heatmap, metric_vs_dk

FIGSIZE = (6.4, 2.7)  # inches; at DPI 72 about 460 x 195 pixels
DPI = 72
METRIC_LABELS = {
    "max_weight": "max weight (row mean)",
    "effective_tokens": "effective tokens",
    "entropy": "row entropy (nats)",
    "score_std": "score std",
    "grad_norm": "softmax grad norm",
}


def _encode_png(rgba: np.ndarray) -> bytes:
    """PNG bytes of an (h, w, 3 or 4) uint8 array; zlib level 1 is ~4x faster than 6."""
    with io.BytesIO() as out:
        Image.fromarray(rgba).save(out, format="png", compress_level=1)
        return out.getvalue()


def import_ipympl():
    """Import ipympl's backend module WITHOUT switching pyplot's backend.

    ``import ipympl`` calls ``matplotlib.use("module://ipympl.backend_nbagg")``
    when matplotlib is already imported, which would turn every later static
    (inline) figure of the notebook into a widget. We only want its Canvas.
    """
    if "ipympl" not in sys.modules:
        use, matplotlib.use = matplotlib.use, lambda *args, **kwargs: None
        try:
            import ipympl  # noqa: F401
        finally:
            matplotlib.use = use
    import ipympl.backend_nbagg

    return ipympl.backend_nbagg


@lru_cache(maxsize=1)
def _fast_canvas_class():
    """ipympl's Canvas with a cheaper frame encoder (same front-end model)."""
    Canvas = import_ipympl().Canvas

    class FastCanvas(Canvas):
        def get_diff_image(self):
            # matplotlib's webagg get_diff_image, but PNG level 1: at level 6 the
            # encoder took ~2/3 of a slider step. Unchanged pixels become 0
            # (transparent) in "diff" mode and the browser keeps its old ones.
            if not self._png_is_old:
                return None
            pixels = np.asarray(self.get_renderer().buffer_rgba())  # (h, w, 4) uint8
            buff = pixels.view(np.uint32).squeeze(2)  # one uint32 per pixel: (h, w)
            full = (self._force_full or buff.shape != self._last_buff.shape
                    or (pixels[:, :, 3] != 255).any())
            self.set_image_mode("full" if full else "diff")
            output = buff if full else np.where(buff != self._last_buff, buff, 0)
            self._last_buff = buff.copy()
            self._force_full = self._png_is_old = False
            return _encode_png(output.view(np.uint8).reshape((*output.shape, 4)))

        def send_binary(self, data):
            # Until a browser view says "initialized", ipympl keeps the whole frame in
            # the `_data_url` trait, but as bare base64 while its front end expects a
            # "data:" URL (it only adds the prefix in Canvas._repr_mimebundle_, never
            # called for a canvas inside a Box). A bare string is a broken image that
            # stops the view from loading, so we store the full URL.
            if self.syncing_data_url:
                frame = self._last_buff.view(np.uint8).reshape((*self._last_buff.shape, 4))
                self._data_url = "data:image/png;base64," + b64encode(_encode_png(frame)).decode()
            self.send({"data": '{"type": "binary"}'}, buffers=[data])

    return FastCanvas


def _ipympl_canvas(fig: Figure):
    """Attach an ipympl Canvas to ``fig`` (no pyplot, no global backend switch)."""
    FigureManager = import_ipympl().FigureManager
    canvas = _fast_canvas_class()(fig)
    with warnings.catch_warnings():  # ipympl's Toolbar trips a traitlets DeprecationWarning
        warnings.simplefilter("ignore", DeprecationWarning)
        FigureManager(canvas, id(fig))  # the manager pushes rendered frames to the browser
    canvas.header_visible = False
    canvas.footer_visible = False
    canvas.toolbar_visible = False
    canvas.resizable = False
    canvas._size = tuple(fig.bbox.size)  # CSS pixels (ipympl sets it only when shown alone)
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
        self._build_axes(weights, curves, d_k, metric)
        self._animated = (self.image, self.marker)
        for artist in self._animated:
            artist.set_animated(True)
        self._background = None
        self.draws = 0  # frames produced (full draws + blits), for tests and benchmarks
        fig.canvas.mpl_connect("draw_event", self._on_draw)
        self.set_step(weights, curves, d_k, scale, metric)
        self.set_curves(curves, metric)  # first full draw

    def _build_axes(self, weights, curves, d_k, metric):
        fig = self.figure
        fig.subplots_adjust(left=0.07, right=0.98, bottom=0.19, top=0.87, wspace=0.38)
        self.ax_w, self.ax_m = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})
        self.image = attention_heatmap(weights, ax=self.ax_w, annotate=False,
                                       title="weights (query rows, key columns)")
        self.ax_w.title.set_fontsize(9)
        self.ax_w.set_aspect("equal")
        # Resample the data, then colour the ~150 x 150 visible pixels: at n = 1024
        # this is ~6x faster than colouring all n * n cells first ("rgba" stage).
        self.image.set_interpolation_stage("data")
        lines = metric_vs_dk(D_KS, curves[metric]["scaled"], curves[metric]["unscaled"],
                             ax=self.ax_m, label=METRIC_LABELS[metric], current=d_k)
        self.line_scaled, self.line_unscaled, self.marker = lines

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
        return _encode_png(rgba[..., :3])

    # -- updates ---------------------------------------------------------
    def set_step(self, weights, curves, d_k, scale, metric):
        """Set the animated artists (image, marker) without drawing.

        d_k and the scale are written in the readouts panel, not in the
        figure: re-rendering a text title costs more than the image at n = 16.
        """
        self.image.set_data(weights)
        i = D_KS.index(d_k)
        self.marker.set_data([d_k], [curves[metric]["scaled" if scale else "unscaled"][i]])

    def step(self, weights, curves, d_k, scale, metric):
        """d_k or scale changed (same n, same curves): blit the two animated artists."""
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
