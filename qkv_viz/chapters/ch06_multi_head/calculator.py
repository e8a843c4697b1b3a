"""Chapter 6's size calculator: parameters and FLOPs of one attention layer for any shape.

Bad input (768 split into 7 heads, T = 0, ...) shows the reason inside the
widget and keeps the last good table.
"""
from __future__ import annotations

import html

import ipywidgets as widgets

from qkv_viz.core.config import AttentionConfig
from qkv_viz.chapters.ch06_multi_head.sizes_figures import report_html, size_report


def config_calculator(d_model: int = 768, n_heads: int = 12, T: int = 512):
    """Boxes for d_model, n_heads, d_k, d_v (0 = d_model / n_heads), bias and T (tokens).

    Shows parameter counts and FLOPs (via ``size_report``). An invalid config
    shows AttentionConfig's message and keeps the last good table. Returns a
    ``VBox`` with attributes ``boxes`` (dict name -> widget), ``table`` and
    ``message`` (HTML) for tests.
    """
    ints = dict(d_model=d_model, n_heads=n_heads, d_k=0, d_v=0, T=T)
    boxes = {name: widgets.IntText(value=v, description=name, layout=widgets.Layout(width="170px"))
             for name, v in ints.items()}
    boxes["bias"] = widgets.Checkbox(value=True, description="bias")
    table, message = widgets.HTML(), widgets.HTML()

    def update(_=None):
        v = {name: box.value for name, box in boxes.items()}
        try:
            config = AttentionConfig(d_model=v["d_model"], n_heads=v["n_heads"],
                                     d_k=v["d_k"] or None, d_v=v["d_v"] or None, bias=v["bias"])
            rows = size_report(config, v["T"])
        except (ValueError, TypeError) as exc:
            message.value = (f"<b style='color:#b00'>{html.escape(str(exc))}</b><br>"
                             "(the table still shows the last valid shape)")
            return
        message.value = (f"d_k = {config.d_k}, d_v = {config.d_v} "
                         f"(0 in a box means d_model / n_heads)")
        table.value = report_html(rows)

    for box in boxes.values():
        box.observe(update, names="value")
    update()
    grid = widgets.HBox([widgets.VBox(list(boxes.values())[:3]),
                         widgets.VBox(list(boxes.values())[3:])])
    widget = widgets.VBox([grid, message, table])
    for w, name in ((widget, "calculator"), (message, "calc-message"), (table, "calc-table")):
        w.add_class(f"qkv-{name}")  # CSS hooks for browser tests
    widget.boxes, widget.table, widget.message = boxes, table, message
    return widget
