"""Interactive widgets of the book: the scaling explorer.

``scaling_explorer(n=16, d_k=64, scale=True, temperature=1.0, seed=0,
n_heads=1, backend="auto") -> ScalingExplorer``; end a notebook cell with it.

Public attributes of ``ScalingExplorer`` (tests and other chapters use them):

=================  ==============================================  =====================
attribute          what                                            CSS class
=================  ==============================================  =====================
``widget``         top-level ``ipywidgets.VBox``                   ``qkv-explorer``
``d_k``            SelectionSlider, ``.value`` is the int d_k      ``qkv-dk-slider``
``scale``          ToggleButton, True = divide by sqrt(d_k)        ``qkv-scale-toggle``
``temperature``    FloatText (any number can be typed)             ``qkv-temperature``
``n``              IntText, sequence length 1..1024                ``qkv-n``
``seed``           IntText, seed >= 0                              ``qkv-seed``
``head``           Dropdown of heads (hidden when n_heads == 1)    ``qkv-head``
``metric``         Dropdown: metric drawn against d_k              ``qkv-metric``
``readouts``       HTML table of the current diagnostics           ``qkv-readouts``
``canvas``         the picture: ipympl Canvas or ipywidgets.Image  ``qkv-heatmap``
``message``        HTML, empty unless a typed value is bad         ``qkv-message``
``image``          the heatmap's ``AxesImage`` (array = weights)
``figure``         the matplotlib Figure
``weights``        current weights (n, n) of the shown head
``scores``         current scores (n, n) before softmax
``metrics``        dict from ``qkv_viz.diagnostics.summarize(scores, weights)``
``curves``         ``explorer.dk_curves(...)``: every metric at every d_k
``settings``       dict of the settings on screen (last valid ones)
``backend``        "ipympl" or "png", as picked
``view``           the ``explorer_view.ExplorerFigure`` (``view.draws``
                   counts frames)
=================  ==============================================  =====================

``explorer.close()`` closes its widgets. A new n, seed, temperature or head
recomputes the metric-vs-d_k curves (a few seconds at n = 1024, with a
"computing" note in ``message``); a d_k or scale step only redraws.

Data: q, k ~ N(0, 1) of shape (n_heads, n, 1024) drawn once from the seed; a
smaller d_k uses the first d_k columns (see ``qkv_viz.explorer``). Weights
come from the math core (``attention_scores`` + ``masked_softmax``).

Backends: ``"ipympl"`` draws on an ipympl canvas (fast: pixel diffs);
``"png"`` renders a PNG into an ``ipywidgets.Image`` per update (works
without a front end). ``"auto"`` picks ipympl inside a Jupyter kernel where
ipympl imports, else png.
"""
from __future__ import annotations

import ipywidgets as widgets

from qkv_viz.chapters.ch04_scaling.explorer import D_KS, METRICS, check_settings, dk_curves, head_attention
from qkv_viz.chapters.ch04_scaling.explorer_view import DPI, METRIC_LABELS, ExplorerFigure, import_ipympl

BACKENDS = ("auto", "ipympl", "png")
_CURVE_KEYS = ("n", "seed", "temperature", "head")  # a change here recomputes the d_k curves


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def pick_backend(backend: str = "auto") -> str:
    """``"ipympl"`` or ``"png"`` for the requested backend (see the module doc)."""
    if backend == "inline":
        return "png"
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend != "auto":
        return backend
    if not _in_kernel():
        return "png"
    try:
        import_ipympl()
    except Exception:  # not installed or broken: the PNG path always works
        return "png"
    return "ipympl"


def _scale_label(on: bool) -> str:
    return "scaled by 1/\u221ad_k" if on else "not scaled"


def _controls(n, d_k, scale, temperature, seed, n_heads):
    """The input widgets, keyed by setting name, each with its CSS class."""
    style = {"description_width": "initial"}
    small = widgets.Layout(width="130px")
    c = {
        "d_k": widgets.SelectionSlider(options=[(str(d), d) for d in D_KS], value=d_k,
                                       description="d_k", continuous_update=True),
        "scale": widgets.ToggleButton(value=bool(scale), description=_scale_label(scale),
                                      tooltip="divide the scores by sqrt(d_k)",
                                      layout=widgets.Layout(width="170px")),
        "temperature": widgets.FloatText(value=temperature, description="temperature",
                                         style=style, layout=small, step=0.1),
        "n": widgets.IntText(value=n, description="tokens n", style=style, layout=small),
        "seed": widgets.IntText(value=seed, description="seed", style=style, layout=small),
        "head": widgets.Dropdown(options=list(range(n_heads)), value=0, description="head",
                                 style=style, layout=widgets.Layout(width="110px")),
        "metric": widgets.Dropdown(options=[(METRIC_LABELS[m], m) for m in METRICS],
                                   value="max_weight", description="plot", style=style,
                                   layout=widgets.Layout(width="230px")),
    }
    if n_heads == 1:
        c["head"].layout.display = "none"
    css = {"d_k": "qkv-dk-slider", "scale": "qkv-scale-toggle"}
    for name, w in c.items():
        w.add_class(css.get(name, f"qkv-{name.replace('_', '-')}"))
    return c


def readouts_html(metrics: dict, n: int, d_k: int, scale: bool, pixels: int = 0) -> str:
    """Small HTML table of the diagnostics (what the readouts panel shows).

    ``pixels``: width of the heatmap on screen; when n exceeds it, a note says
    that the picture samples one row/column in every n / pixels.
    """
    factor = f"1/\u221a{d_k} = {d_k ** -0.5:.3g}" if scale else "1 (no scaling)"
    rows = [
        ("score factor", factor),
        ("score std", f"{metrics['score_std']:.3g}"),
        ("max weight", f"{metrics['max_weight']:.3f}"),
        ("row entropy", f"{metrics['entropy']:.3f} nats"),
        ("effective tokens", f"{metrics['effective_tokens']:.2f} of {n}"),
        ("softmax grad", f"{metrics['grad_norm']:.3g}"),
    ]
    if 0 < pixels < n:  # nearest-neighbour sampling: most cells are not on screen
        rows.append(("heatmap shows", f"1 in ~{n / pixels:.0f} rows/cols"))
    body = "".join(f"<tr><td>{k}</td><td style='text-align:right'><b>{v}</b></td></tr>"
                   for k, v in rows)
    return f"<table style='font-size:12px'>{body}</table>"


class ScalingExplorer:
    """Heatmap + readouts + metric-vs-d_k plot driven by ipywidgets.

    Build it with :func:`scaling_explorer`. Every control change goes through
    ``_on_change``: validate, compute with the math core, redraw in place.
    A bad value shows a message and keeps the last good picture.
    """

    def __init__(self, n=16, d_k=64, scale=True, temperature=1.0, seed=0, n_heads=1,
                 backend="auto"):
        check_settings(n, d_k, seed, temperature, n_heads)
        self.backend = pick_backend(backend)
        self.controls = _controls(n, d_k, scale, temperature, seed, n_heads)
        for name, w in self.controls.items():
            setattr(self, name, w)
        self.n_heads = n_heads
        self._state = self._read()
        self._compute(self._state, curves=True)
        self.view = ExplorerFigure(self.weights, self.curves, d_k, scale, "max_weight",
                                   self.backend)
        self.figure, self.image, self.canvas = self.view.figure, self.view.image, self.view.widget
        self.canvas.add_class("qkv-heatmap")
        self.readouts = widgets.HTML(self._readouts(self._state),
                                     layout=widgets.Layout(margin="0 0 0 12px"))
        self.readouts.add_class("qkv-readouts")
        self.message = widgets.HTML("")
        self.message.add_class("qkv-message")
        self.widget = self._layout()
        for w in self.controls.values():
            w.observe(self._on_change, names="value")

    def _layout(self):
        c = self.controls
        row1 = widgets.HBox([c["d_k"], c["scale"], c["temperature"]])
        row2 = widgets.HBox([c["n"], c["seed"], c["head"], c["metric"]])
        body = widgets.HBox([self.canvas, self.readouts])
        box = widgets.VBox([row1, row2, body, self.message])
        box.add_class("qkv-explorer")
        return box

    def _read(self) -> dict:
        return {name: w.value for name, w in self.controls.items()}

    def _compute(self, s: dict, curves: bool):
        if curves:
            self.curves = dk_curves(s["seed"], self.n_heads, s["n"], s["temperature"], s["head"])
        self.scores, self.weights, self.metrics = head_attention(
            s["seed"], self.n_heads, s["n"], s["d_k"], s["scale"], s["temperature"], s["head"])

    def _on_change(self, change=None):
        new = self._read()
        try:
            check_settings(new["n"], new["d_k"], new["seed"], new["temperature"],
                           self.n_heads, new["head"])
            self._apply(new)  # its ValueErrors come from the maths, before any drawing
        except (ValueError, TypeError) as exc:
            return self._show_error(f"{exc}. Showing the last valid settings.")
        except Exception as exc:  # keep the widget alive whatever happens
            return self._show_error(f"could not update: {type(exc).__name__}: {exc}")
        self.message.value = ""

    def _apply(self, new: dict):
        old = self._state
        new_curves = any(new[k] != old[k] for k in _CURVE_KEYS)
        if new_curves and new["n"] >= 256:  # seconds of work: say so while it runs
            self.message.value = f"computing the d_k curves for n = {new['n']} ..."
        self._compute(new, curves=new_curves)
        self._state = new
        if new["n"] != old["n"]:
            self.view.resize(self.weights)
        if new_curves or new["metric"] != old["metric"]:
            self.view.set_step(self.weights, self.curves, new["d_k"], new["scale"], new["metric"])
            self.view.set_curves(self.curves, new["metric"])
        else:
            self.view.step(self.weights, self.curves, new["d_k"], new["scale"], new["metric"])
        self.readouts.value = self._readouts(new)
        self.scale.description = _scale_label(new["scale"])

    def _readouts(self, s: dict) -> str:
        pixels = int(self.view.ax_w.bbox.width / self.figure.dpi * DPI)  # CSS pixels
        return readouts_html(self.metrics, s["n"], s["d_k"], s["scale"], pixels)

    def _show_error(self, text: str):
        self.message.value = f"<span style='color:#b00020'>\u26a0 {text}</span>"

    @property
    def settings(self) -> dict:
        """The settings of the picture on screen (the last valid ones)."""
        return dict(self._state)

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)

    def close(self):
        """Close this explorer's widgets (frees their front-end views)."""
        for w in (*self.controls.values(), self.canvas, self.readouts, self.message):
            w.close()
        for box in (self.widget, *self.widget.children):
            box.close()


def scaling_explorer(n=16, d_k=64, scale=True, temperature=1.0, seed=0, n_heads=1,
                     backend="auto") -> ScalingExplorer:
    """Build the scaling explorer; end a notebook cell with the returned object.

    n tokens (1..1024), d_k a power of two (1..1024), ``scale`` on/off,
    softmax ``temperature`` > 0, ``seed`` >= 0, ``n_heads`` (1..8, choose one
    with the head control), ``backend`` "auto" | "ipympl" | "png".
    """
    return ScalingExplorer(n, d_k, scale, temperature, seed, n_heads, backend)
