"""Chapter 1's interactive figure: the library search with a temperature slider."""
from __future__ import annotations

import html
import io

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from qkv_viz.chapters.ch01_library.figures import numbered_titles, plot_library, plot_weight_bars
from qkv_viz.chapters.ch01_library.library import (DEMO_QUERY, VALUE_AXES, demo_library,
                                                   hard_lookup, soft_lookup)

# ---------------------------------------------------------------- widgets
def weights_html(library, weights, output) -> str:
    """Weights per book and the blended value as a small HTML table (no scripts)."""
    rows = "".join(f"<tr><td style='white-space:nowrap'>{html.escape(t)}</td>"
                   f"<td style='text-align:right'>{w:.3f}</td></tr>"
                   for t, w in zip(library.titles, weights))
    names = VALUE_AXES if len(output) == len(VALUE_AXES) else range(len(output))
    mix = "<br>".join(f"{n}: {x:.2f}" for n, x in zip(names, output))
    return (f"<table style='font-family:monospace'>{rows}</table>"
            f"<div style='font-family:monospace'>output (blended value):<br>{mix}</div>")


def library_widget(library=None, query=None, show_plot: bool = True):
    """Temperature slider (log scale) and query sliders over the library.

    The sliders update on release (or on each arrow-key press): one redraw of
    the picture takes ~0.1-0.3 s on a busy machine, too slow to follow a drag.
    Returns a ``VBox``; attributes ``temperature``, ``query_x``, ``query_y``
    (sliders), ``table``, ``message`` (HTML) and ``figure`` (PNG ``Image``,
    None without ``show_plot``) let tests drive it.
    """
    library = demo_library() if library is None else library
    query = DEMO_QUERY if query is None else np.asarray(query, dtype=float)
    temp = widgets.FloatLogSlider(value=1.0, base=10, min=-2, max=2, step=0.05,
                                  description="temperature", readout_format=".2f",
                                  continuous_update=False, style={"description_width": "initial"})
    qx, qy = (widgets.FloatSlider(value=float(v), min=-2.5, max=2.5, step=0.1, continuous_update=False,
                                  description=f"query[{i}]") for i, v in enumerate(query[:2]))
    table, message = widgets.HTML(layout=widgets.Layout(flex="0 0 auto")), widgets.HTML()
    image, draw = _library_figure(library) if show_plot else (None, None)

    def update(_=None):
        q = np.array([qx.value, qy.value])
        try:
            output, weights = soft_lookup(q, library, temp.value)
        except (ValueError, TypeError) as exc:
            message.value = f"<b style='color:#b00'>{html.escape(str(exc))}</b>"
            return
        best = library.titles[hard_lookup(q, library)]
        message.value = (f"hard lookup picks <b>{html.escape(best)}</b>; "
                         f"uniform mix would be {1 / library.n_books:.3f} each")
        table.value = weights_html(library, weights, output)
        if draw is not None:
            draw(q, weights, temp.value)

    for w in (temp, qx, qy):
        w.observe(update, names="value")
    update()
    row = widgets.HBox([table] + ([image] if image is not None else []))
    box = widgets.VBox([temp, widgets.HBox([qx, qy]), message, row])
    for w, name in ((box, "library"), (temp, "temperature"), (table, "weights"), (image, "figure")):
        if w is not None:
            w.add_class(f"qkv-{name}")  # CSS hooks for browser tests
    box.temperature, box.query_x, box.query_y = temp, qx, qy
    box.table, box.message, box.figure = table, message, image
    return box


def _library_figure(library):
    """An ``Image`` widget and ``draw(query, weights, temperature)`` that redraws it.

    One ``matplotlib.figure.Figure`` (no pyplot: nothing to close, nothing the
    inline backend shows twice) is reused; each draw is rendered to PNG bytes.
    """
    fig = Figure(figsize=(6, 2.6))
    ax_keys, ax_bars = fig.subplots(1, 2)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.18, top=0.9, wspace=1.0)
    size = dict(width=f"{6 * fig.dpi:.0f}px", height=f"{2.6 * fig.dpi:.0f}px")
    image = widgets.Image(format="png", layout=widgets.Layout(flex="0 0 auto", **size))

    def draw(query, weights, temperature):
        ax_keys.clear()
        ax_bars.clear()
        plot_library(library, query, ax=ax_keys, weights=weights)
        plot_weight_bars(weights, numbered_titles(library), ax=ax_bars,
                         title=f"temperature {temperature:.2f}")
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        image.value = buf.getvalue()

    return image, draw


