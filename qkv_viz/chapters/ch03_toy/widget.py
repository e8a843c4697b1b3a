"""Chapter 3's editable toy: type three scores, watch every intermediate change.

``toy_widget()`` builds and returns the widget; the notebook displays it.
Bad input (not a number, inf, NaN) shows a message and leaves the widget
alive with its last good table.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np

from qkv_viz.chapters.ch03_toy.toy import TOY_SCORES, TOY_V, toy_steps

_STAGES = (("scores q.k", "scores"), ("scaled scores", "scaled"), ("exp(scaled)", "exp"),
           ("weights", "weights"))


def _parse_score(text: str, label: str) -> float:
    """A finite float from a text box, or ValueError naming the box."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError(f"{label}: {text!r} is not a number") from None
    if not np.isfinite(value):
        raise ValueError(f"{label}: {text!r} must be a finite number")
    return value


def _row(name: str, values, decimals: int = 3) -> str:
    cells = "".join(f"<td style='padding:2px 8px;text-align:right'>{x:.{decimals}f}</td>"
                    for x in np.ravel(values))
    return f"<tr><th style='text-align:left;padding-right:8px'>{name}</th>{cells}</tr>"


def steps_html(steps) -> str:
    """The intermediates of a ``ToySteps`` as a small HTML table (no scripts)."""
    head = "".join(f"<th style='padding:2px 8px'>key {j + 1}</th>" for j in range(steps.scores.size))
    rows = [f"<tr><th></th>{head}</tr>"]
    rows += [_row(name, getattr(steps, attr)) for name, attr in _STAGES]
    table = "<table style='font-family:monospace'>" + "".join(rows) + "</table>"
    extra = (f"<div style='font-family:monospace'>scale factor = {steps.factor:.3f}, "
             f"sum of exp = {steps.total:.3f}, output = "
             + ", ".join(f"{x:.3f}" for x in steps.output) + "</div>")
    return table + extra


def toy_widget(scores=TOY_SCORES, v=TOY_V, d_k: int = 2):
    """Three score boxes + a scaling checkbox above a live table of intermediates.

    Returns a ``VBox``; its ``score_boxes`` (3 ``Text``), ``scale_box``
    (``Checkbox``), ``table`` (``HTML``) and ``message`` (``HTML``)
    attributes let tests drive it.
    """
    boxes = [widgets.Text(value=f"{s:g}", description=f"q1.k{j + 1}",
                          layout=widgets.Layout(width="160px")) for j, s in enumerate(scores)]
    scale_box = widgets.Checkbox(value=True, description=f"scale by 1/sqrt(d_k), d_k={d_k}")
    table, message = widgets.HTML(), widgets.HTML()

    def update(_change=None):
        try:
            values = [_parse_score(b.value, b.description) for b in boxes]
            steps = toy_steps(values, v=v, d_k=d_k, scale=scale_box.value)
        except (ValueError, TypeError) as exc:
            message.value = f"<span style='color:#b00'>{html.escape(str(exc))}</span>"
            return
        message.value = ""
        table.value = steps_html(steps)

    for w in (*boxes, scale_box):
        w.observe(update, names="value")
    update()
    box = widgets.VBox([widgets.HBox(boxes), scale_box, message, table])
    box.score_boxes, box.scale_box, box.table, box.message = boxes, scale_box, table, message
    return box
