"""The book's one renderer for interactive figures: anywidget + small ES modules.

Python computes what only Python can (random vectors for a seed, a real model's
forward pass) and sends it ONCE as binary buffers (``traitlets.Bytes``); the
browser does every slider step (scale factor, temperature, stable softmax,
colours, readouts, bars) and draws on ``<canvas>`` elements. The JavaScript
lives in ``qkv_viz/viz/js/``: ``attention.js`` (maths with the formulas of
``qkv_viz.core``, colour map, drawing helpers, the controls' and events' helpers
every figure shares) is put in front of one figure's file (``explorer.js``,
``library.js``, ``toy.js``, ``heads.js``, ...) to make that figure's ES module. No build step, no CDN, no network.

Every figure's display output is a mime bundle with three entries:

* ``application/vnd.jupyter.widget-view+json``: the live widget (JupyterLab,
  Notebook 7, VS Code, Colab);
* ``text/html``: :func:`static_html`, a self-contained fragment (a ``<div>``,
  the figure's ES module inlined in a ``<script type="module">`` and the
  widget's data embedded as JSON with base64 buffers) that works with no kernel
  and no widget manager, e.g. in a static web page. Until its script runs, the
  fragment shows the PNG below;
* ``image/png``: a static picture of the initial state (``widget.static_png()``),
  with the figure's controls drawn under it (``with_controls``), for GitHub's
  preview and ``nbconvert`` without widget state.

Controls that need Python (a new seed, n or sentence) are disabled in the
static fragment, with a tooltip saying so.
"""
from __future__ import annotations

import base64
import html
import io
import json
import pathlib
import uuid

import anywidget
import numpy as np
import traitlets

from qkv_viz.viz import style

JS_DIR = pathlib.Path(__file__).with_name("js")
CSS = (JS_DIR / "qkv.css").read_text()


def module_source(name: str) -> str:
    """The ES module of one figure: attention.js (shared) + ``name`` (the figure)."""
    return (JS_DIR / "attention.js").read_text() + "\n" + (JS_DIR / name).read_text()


def colour_table(cmap: str = style.WEIGHTS_CMAP) -> bytes:
    """256 x RGB uint8 of a matplotlib colour map (the browser's weights colours)."""
    import matplotlib

    rgba = matplotlib.colormaps[cmap](np.linspace(0.0, 1.0, 256))  # (256, 4) floats
    return (np.round(rgba[:, :3] * 255)).astype(np.uint8).tobytes()


def f64_bytes(a) -> bytes:
    return np.ascontiguousarray(a, dtype="<f8").tobytes()


def f32_bytes(a) -> bytes:
    return np.ascontiguousarray(a, dtype="<f4").tobytes()


class CanvasFigure(anywidget.AnyWidget):
    """Base of the book's interactive figures (see the module doc).

    Subclasses set ``_esm = module_source("<figure>.js")`` and implement
    ``static_png()`` (PNG bytes of the initial state). ``error`` is a message
    from Python (shown as text, never parsed as HTML).
    """

    _css = CSS
    lut = traitlets.Bytes(b"").tag(sync=True)
    error = traitlets.Unicode("").tag(sync=True)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.lut = colour_table()

    def static_png(self) -> bytes:  # pragma: no cover - every figure overrides it
        raise NotImplementedError

    def static_controls(self) -> list[tuple]:
        """The live figure's controls with the values of the still, drawn under it (see
        :func:`with_controls`); a figure with controls overrides this."""
        return []

    def still_with_controls(self) -> bytes:
        """PNG: ``static_png()`` with the strip of ``static_controls()`` under it."""
        return with_controls(self.static_png(), self.static_controls())

    def _repr_mimebundle_(self, **kwargs):
        data, metadata = super()._repr_mimebundle_(**kwargs)
        png = self.still_with_controls()
        data["image/png"] = base64.b64encode(png).decode()
        data["text/html"] = static_html(self, png)
        # What a reader of the saved file (or a plain console) sees instead of "<... object at 0x...>"
        data["text/plain"] = STATIC_TEXT.format(name=type(self).__name__)
        return data, metadata


def _state_json(widget) -> str:
    """The widget's synced traits as JSON; bytes become {"__b64__": "..."}."""
    state = {}
    for name in widget.keys:
        if name.startswith("_") or name in ("layout", "tabbable", "tooltip", "comm", "keys"):
            continue
        value = getattr(widget, name)
        if isinstance(value, (bytes, bytearray, memoryview)):
            value = {"__b64__": base64.b64encode(bytes(value)).decode()}
        state[name] = value
    state["static"] = True
    return json.dumps(state).replace("</", "<\\/")  # never closes the <script> early


STATIC_BOOT = """
{model_js}
const el = document.getElementById("{uid}");
const state = JSON.parse(document.getElementById("{uid}-data").textContent);
el.replaceChildren();
const style = document.createElement("style");
style.textContent = {css};
el.append(style);
render({{model: staticModel(state), el}});
"""


# The still picture's text alternative until the script replaces it with the live figure (whose
# canvases then describe themselves); a figure class may set ``static_alt`` to say more.
STATIC_ALT = "{name}: a still picture of the interactive figure in its first state"
STATIC_TEXT = ("{name}: an interactive figure, live in JupyterLab, Notebook 7 and the web edition "
               "(a still picture of its first state where it cannot run)")


def static_html(widget, png: bytes | None = None) -> str:
    """A self-contained HTML fragment of ``widget`` that runs with no kernel.

    A ``<div>`` (holding the PNG of the initial state until the script runs),
    the figure's data as JSON, and one ``<script type="module">``: the same ES
    module as the live widget, inlined, then ``render()`` on a small stand-in
    for the widget model (``static.js``) built from that data. Every control
    the browser computes (d_k, scaling, temperature, layer, ...) works; those
    that need Python are disabled. No request leaves the page.
    """
    png = widget.static_png() if png is None else png
    uid = f"qkv-{uuid.uuid4().hex[:12]}"
    alt = html.escape(getattr(widget, "static_alt", "") or STATIC_ALT.format(name=type(widget).__name__))
    img = f'<img alt="{alt}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'
    boot = STATIC_BOOT.format(model_js=(JS_DIR / "static.js").read_text(), uid=uid,
                              css=json.dumps(CSS))
    return (f'<div id="{uid}" class="qkv-static">{img}</div>\n'
            f'<script type="application/json" id="{uid}-data">{_state_json(widget)}</script>\n'
            f'<script type="module">\n{widget._esm}\n{boot}</script>\n')


def figure_png(fig) -> bytes:
    """PNG bytes of a matplotlib Figure (no pyplot: nothing left open)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    with io.BytesIO() as out:
        fig.savefig(out, format="png", dpi=style.DPI)
        return out.getvalue()


# -- the live figure's controls, drawn under its still -----------------------------------
# A still (GitHub's preview, nbconvert, a reader without JavaScript) shows what the figure
# draws but not what a reader can move. A figure lists its controls with the values of the
# still (``static_controls()``); ``with_controls`` draws them as a row of greyed stand-ins
# under the picture: a slider at its place, a ticked or empty box, a menu, a text box.
CONTROL_KINDS = ("slider", "check", "menu", "box", "button", "note")
CONTROLS_CAPTION = "controls of the live figure, as set for this picture:"
_ROW_PX, _GAP_PX, _TRACK_PX, _PAD_PX = 30, 22, 70, 8
_INK, _FAINT = "#333333", "#9A9A9A"


def check_controls(controls) -> list[tuple]:
    """``controls`` as a list of tuples ``(kind, label, value)``; raise ValueError otherwise.

    kind is one of CONTROL_KINDS. value: a float in 0..1 (the knob's place) and a text,
    as ``(fraction, text)``, for "slider"; a bool for "check"; a text for "menu" and "box";
    None for "button" and "note" (a hint in words, e.g. what to drag).
    """
    out = []
    for i, item in enumerate(controls):
        if not (isinstance(item, tuple) and len(item) == 3 and item[0] in CONTROL_KINDS):
            raise ValueError(f"controls[{i}] must be (kind, label, value) with kind in {CONTROL_KINDS}, "
                             f"got {item!r}")
        kind, label, value = item
        if kind == "slider" and not (isinstance(value, tuple) and len(value) == 2
                                     and 0.0 <= float(value[0]) <= 1.0):
            raise ValueError(f"controls[{i}] ({label!r}): a slider's value is (fraction in 0..1, text), "
                             f"got {value!r}")
        if kind == "check" and not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"controls[{i}] ({label!r}): a check box's value is a bool, got {value!r}")
        out.append((kind, str(label), value))
    return out


def _draw_control(fig, x, y, kind, label, value, renderer) -> float:
    """Draw one control with its left edge at pixel x, centre line at pixel y; return its right edge."""
    from matplotlib.patches import Circle, FancyBboxPatch, Rectangle

    def text(x0, s, **kw):
        t = fig.text(x0, y, s, transform=None, va="center", fontsize=9, color=_INK, **kw)
        return t.get_window_extent(renderer).x1

    def add(patch):
        patch.set_transform(None)
        fig.add_artist(patch)

    if kind == "check":  # the box in front of its text, as in the page
        add(Rectangle((x, y - 6), 12, 12, facecolor="white", edgecolor=_FAINT, lw=1))
        if value:
            fig.add_artist(_tick(x, y))
        return text(x + 17, label)
    if kind == "note":
        return text(x, label, style="italic")
    end = text(x, label)
    if kind == "button":
        start = x
        add(FancyBboxPatch((start - 4, y - 9), end - start + 8, 18, boxstyle="round,pad=0,rounding_size=3",
                           facecolor="none", edgecolor=_FAINT, lw=1))
        return end + 4
    if kind == "slider":
        frac, shown = value
        x0 = end + 12                                   # the knob (radius 6) clear of the label
        add(Rectangle((x0, y - 2), _TRACK_PX, 4, facecolor="#D9D9D9", edgecolor="none"))
        add(Rectangle((x0, y - 2), _TRACK_PX * float(frac), 4, facecolor=_FAINT, edgecolor="none"))
        add(Circle((x0 + _TRACK_PX * float(frac), y), 6, facecolor="white", edgecolor=_INK, lw=1.2))
        return text(x0 + _TRACK_PX + 8, str(shown), fontweight="bold")
    # a menu or a text box: its value in a frame (a menu with its arrow)
    x0 = end + 6
    right = text(x0 + 5, str(value) + (" \u25be" if kind == "menu" else ""), fontweight="bold")
    add(FancyBboxPatch((x0, y - 9), right - x0 + 5, 18, boxstyle="round,pad=0,rounding_size=3",
                       facecolor="none", edgecolor=_FAINT, lw=1))
    return right + 5


def _tick(x, y):
    from matplotlib.lines import Line2D

    return Line2D([x + 2.5, x + 5, x + 10], [y, y - 3.5, y + 4], color=_INK, lw=1.6, transform=None)


def with_controls(png: bytes, controls) -> bytes:
    """``png`` with a strip under it that draws ``controls`` (see :func:`check_controls`).

    The picture's pixels are placed unscaled (``figimage``); the strip wraps its
    controls onto as many rows as the picture's width needs. No controls: ``png`` as given.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.image import imread

    controls = check_controls(controls)
    if not controls:
        return png
    image = imread(io.BytesIO(png), format="png")  # (H, W, 3 or 4) floats in 0..1
    height, width = image.shape[:2]
    measure = FigureCanvasAgg(Figure(dpi=style.DPI)).get_renderer()  # text widths at the strip's dpi
    rows = _layout(controls, width, measure)
    strip = _ROW_PX * (len(rows) + 1) + _PAD_PX
    fig = Figure(figsize=(width / style.DPI, (height + strip) / style.DPI), dpi=style.DPI)
    canvas = FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    fig.figimage(image, xo=0, yo=strip, origin="upper")
    y = strip - _ROW_PX / 2 - _PAD_PX / 2
    fig.text(_PAD_PX, y, CONTROLS_CAPTION, transform=None, va="center", fontsize=9,
             color="#666666", style="italic")
    for row in rows:
        y -= _ROW_PX
        x = _PAD_PX + 4
        for kind, label, value in row:
            x = _draw_control(fig, x, y, kind, label, value, renderer) + _GAP_PX
    fig.add_artist(_rule(strip, width))
    with io.BytesIO() as out:
        fig.savefig(out, format="png", dpi=style.DPI)
        return out.getvalue()


def _rule(strip, width):
    from matplotlib.lines import Line2D

    return Line2D([_PAD_PX, width - _PAD_PX], [strip - 2, strip - 2], color="#DDDDDD", lw=1, transform=None)


def _control_px(kind, label, value, renderer) -> float:
    """The width in pixels :func:`_draw_control` gives one control, its text measured by
    ``renderer`` in the strip's fonts (9 pt; values bold, notes italic)."""
    from matplotlib.font_manager import FontProperties

    def px(s, **font):
        return renderer.get_text_width_height_descent(s, FontProperties(size=9, **font), ismath=False)[0]

    if kind == "check":
        return 17 + px(label)
    if kind == "note":
        return px(label, style="italic")
    if kind == "button":
        return px(label) + 4
    if kind == "slider":
        return px(label) + 12 + _TRACK_PX + 8 + px(str(value[1]), weight="bold")
    shown = str(value) + (" \u25be" if kind == "menu" else "")
    return px(label) + 6 + 5 + px(shown, weight="bold") + 5


def _layout(controls, width, renderer) -> list[list[tuple]]:
    """Controls in rows that fit ``width`` pixels, each control's width measured as drawn."""
    rows, row, used = [], [], _PAD_PX + 4
    for kind, label, value in controls:
        need = _control_px(kind, label, value, renderer)
        if row and used + need > width - _PAD_PX:
            rows.append(row)
            row, used = [], _PAD_PX + 4
        row.append((kind, label, value))
        used += need + _GAP_PX
    rows.append(row)
    return rows
