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
  for GitHub's preview and ``nbconvert`` without widget state.

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

    def _repr_mimebundle_(self, **kwargs):
        data, metadata = super()._repr_mimebundle_(**kwargs)
        png = self.static_png()
        data["image/png"] = base64.b64encode(png).decode()
        data["text/html"] = static_html(self, png)
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
