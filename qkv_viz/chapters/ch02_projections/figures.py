"""Chapter 2 pictures and the size calculator.

``plot_flops_vs_T`` and ``plot_projection_shapes`` (``ax=None``, return the
artists), then ``config_calculator``. Bad input shows a message inside the widget.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import matplotlib.pyplot as plt

from qkv_viz.core.config import AttentionConfig
from qkv_viz.core.sizes import attention_flops, param_count

QUERY_COLOR, KEY_COLOR = "tab:red", "tab:blue"


# ---------------------------------------------------------------- pictures
def plot_flops_vs_T(config: AttentionConfig, Ts, ax=None):
    """FLOPs of one layer against sequence length T, log-log. Returns the lines.

    Q/K/V projections and W_o grow like T; scores and the weighted sum like T^2.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    parts = [attention_flops(config, int(T)) for T in Ts]
    series = {"Q, K, V projections": [p["projections"] for p in parts],
              "scores + weighted sum": [p["scores"] + p["weighted_sum"] for p in parts],
              "output W_o": [p["output"] for p in parts],
              "total": [p["total"] for p in parts]}
    lines = [ax.loglog(Ts, y, label=name, lw=2 if name == "total" else 1.2)[0]
             for name, y in series.items()]
    ax.set(xlabel="sequence length T", ylabel="FLOPs per layer")
    ax.legend(fontsize=7)
    return lines


def plot_projection_shapes(config: AttentionConfig, T: int, ax=None, head: int = 0):
    """X (T, d_model) @ W_q (d_model, H d_k) = Q (T, H d_k), drawn to scale.

    W_q and Q are cut into their n_heads column blocks; block ``head`` is
    highlighted to show that one head's W_q is a slice of the big matrix.
    Returns the rectangles drawn.
    """
    if not 0 <= head < config.n_heads:
        raise ValueError(f"head must be in 0..{config.n_heads - 1}, got {head}")
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 2.2))
    c, gap = config, 0.25 * config.d_model
    blocks = [("X", T, c.d_model, 1), ("W_q", c.d_model, c.d_head_total, c.n_heads),
              ("Q", T, c.d_head_total, c.n_heads)]
    x, artists = 0.0, []
    for i, (name, rows, cols, parts) in enumerate(blocks):
        width = cols / parts
        for p in range(parts):
            lit = parts > 1 and p == head
            artists.append(ax.add_patch(plt.Rectangle(
                (x + p * width, -rows), width, rows, edgecolor="white", lw=0.5,
                facecolor=QUERY_COLOR if lit else ("0.75" if p % 2 else "0.6"))))
        ax.text(x + cols / 2, 0.05 * c.d_model, f"{name}  ({rows} x {cols})", ha="center", fontsize=8)
        if i < 2:
            ax.text(x + cols + gap / 2, -T / 2, "@" if i == 0 else "=", ha="center", va="center")
        x += cols + gap
    ax.set(xlim=(-10, x - gap + 10), ylim=(-1.05 * max(T, c.d_model), 0.2 * c.d_model), aspect="equal")
    ax.axis("off")
    return artists




# ---------------------------------------------------------------- widgets
def size_report(config: AttentionConfig, T: int) -> list:
    """Rows ``(label, number)`` of parameter counts and FLOPs for one layer at T tokens."""
    c = config
    qkv = dict(include_output=False)
    no_b, with_b = param_count(c, bias=False, **qkv), param_count(c, bias=True, **qkv)
    flops = attention_flops(c, T)
    return [
        (f"one head: W_q, W_k, W_v ({c.d_model}x{c.d_k}, {c.d_model}x{c.d_k}, "
         f"{c.d_model}x{c.d_v}), no bias", param_count(c, bias=False, per_head=True)),
        (f"all {c.n_heads} heads: W_q, W_k, W_v, no bias", no_b),
        ("all heads: W_q, W_k, W_v + their biases", with_b),
        (f"W_o ({c.n_heads * c.d_v}x{c.d_model}), no bias", param_count(c, bias=False) - no_b),
        ("whole layer (W_q, W_k, W_v, W_o), no bias", param_count(c, bias=False)),
        ("whole layer, with biases", param_count(c, bias=True)),
        (f"this config (bias={c.bias})", param_count(c)),
        (f"FLOPs Q, K, V projections, T={T}", flops["projections"]),
        (f"FLOPs scores Q K^T, T={T}", flops["scores"]),
        (f"FLOPs weights @ V, T={T}", flops["weighted_sum"]),
        (f"FLOPs output W_o, T={T}", flops["output"]),
        (f"FLOPs total, T={T}", flops["total"]),
    ]


def report_html(rows) -> str:
    """``size_report`` rows as an HTML table with thousands separators."""
    body = "".join(f"<tr><td>{html.escape(label)}</td>"
                   f"<td style='text-align:right;padding-left:12px'>{value:,}</td></tr>"
                   for label, value in rows)
    return f"<table style='font-family:monospace'>{body}</table>"


def config_calculator(d_model: int = 768, n_heads: int = 12, T: int = 512):
    """Boxes for d_model, n_heads, d_k, d_v (0 = d_model / n_heads), bias and T (tokens).

    Shows parameter counts and FLOPs (via ``qkv_viz.sizes``). An invalid config
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
