"""Chapter 6's size calculator: parameters and FLOPs of one attention layer for any shape.

Bad input (768 split into 7 heads, T = 0, ...) shows the reason inside the
widget and keeps the last good table. Its display output also carries a
self-contained HTML version (:func:`static_html`): the same boxes and table,
computed in the page by a few lines of JavaScript with the formulas of
``qkv_viz.core.sizes``, so the calculator works on the static web edition too.
"""
from __future__ import annotations

import html
import json
import uuid

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
    widget = CalculatorBox([grid, message, table])
    for w, name in ((widget, "calculator"), (message, "calc-message"), (table, "calc-table")):
        w.add_class(f"qkv-{name}")  # CSS hooks for browser tests
    widget.boxes, widget.table, widget.message = boxes, table, message
    return widget


class CalculatorBox(widgets.VBox):
    """The calculator's box; its display output adds :func:`static_html` (no kernel needed)."""

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        data = data[0] if isinstance(data, tuple) else data
        v = {name: box.value for name, box in self.boxes.items()}
        data["text/html"] = static_html(v["d_model"], v["n_heads"], v["T"], v["d_k"], v["d_v"], v["bias"])
        return data


STATIC_JS = r"""
const el = document.getElementById(UID), box = (n) => el.querySelector(`[name=${n}]`);
const fmt = (x) => x.toLocaleString("en-US");
function rows(v) {            // qkv_viz.core.sizes.param_count / attention_flops, as size_report
  for (const n of ["d_model", "n_heads", "T"]) if (!Number.isInteger(v[n]) || v[n] < 1)
    throw new Error(`${n} must be a whole number >= 1, got ${v[n]}`);
  if ((!v.d_k || !v.d_v) && v.d_model % v.n_heads)
    throw new Error(`d_model=${v.d_model} is not divisible by n_heads=${v.n_heads}`);
  const dk = v.d_k || v.d_model / v.n_heads, dv = v.d_v || v.d_model / v.n_heads;
  for (const [n, x] of [["d_k", dk], ["d_v", dv]]) if (!Number.isInteger(x) || x < 1)
    throw new Error(`${n} must be a whole number >= 1 (0 means d_model / n_heads), got ${x}`);
  const H = v.n_heads, dm = v.d_model, T = v.T;
  const qkv = dm * H * (2 * dk + dv), qkvB = H * (2 * dk + dv), out = H * dv * dm;
  const all = (b) => qkv + out + (b ? qkvB + dm : 0);
  const f = {projections: 2 * dm * H * (T * dk + T * (dk + dv)), scores: 2 * H * T * T * dk,
             weighted_sum: 2 * H * T * T * dv, output: 2 * T * H * dv * dm};
  f.total = f.projections + f.scores + f.weighted_sum + f.output;
  return [dk, dv, [
    [`one head: W_q, W_k, W_v (${dm}x${dk}, ${dm}x${dk}, ${dm}x${dv}), no bias`, dm * (2 * dk + dv)],
    [`all ${H} heads: W_q, W_k, W_v, no bias`, qkv],
    ["all heads: W_q, W_k, W_v + their biases", qkv + qkvB],
    [`W_o (${H * dv}x${dm}), no bias`, out],
    ["whole layer (W_q, W_k, W_v, W_o), no bias", all(false)],
    ["whole layer, with biases", all(true)],
    [`this config (bias=${v.bias ? "True" : "False"})`, all(v.bias)],
    [`FLOPs Q, K, V projections, T=${T}`, f.projections], [`FLOPs scores Q K^T, T=${T}`, f.scores],
    [`FLOPs weights @ V, T=${T}`, f.weighted_sum], [`FLOPs output W_o, T=${T}`, f.output],
    [`FLOPs total, T=${T}`, f.total]]];
}
function update() {
  const v = {bias: box("bias").checked};
  for (const n of ["d_model", "n_heads", "d_k", "d_v", "T"]) v[n] = Number(box(n).value);
  const msg = el.querySelector(".qkv-calc-message"), table = el.querySelector(".qkv-calc-table");
  try {
    const [dk, dv, r] = rows(v);
    msg.textContent = `d_k = ${dk}, d_v = ${dv} (0 in a box means d_model / n_heads)`;
    msg.style.color = "";
    table.replaceChildren(...r.map(([label, value]) => {
      const tr = document.createElement("tr");
      for (const [text, right] of [[label, false], [fmt(value), true]]) {
        const td = document.createElement("td");
        td.textContent = text;
        if (right) td.style.cssText = "text-align:right;padding-left:12px";
        tr.append(td);
      }
      return tr;
    }));
    el.qkv = {rows: r};
  } catch (err) {
    msg.textContent = `${err.message} (the table still shows the last valid shape)`;
    msg.style.color = "#b00";
  }
}
el.querySelectorAll("input").forEach((i) => i.addEventListener("input", update));
update();
"""


def static_html(d_model: int = 768, n_heads: int = 12, T: int = 512, d_k: int = 0, d_v: int = 0,
                bias: bool = True) -> str:
    """The calculator as a self-contained HTML fragment: boxes, message, table and one inline
    ``<script type="module">`` computing the table in the page (no kernel, no network)."""
    uid = f"qkv-calc-{uuid.uuid4().hex[:12]}"
    values = dict(d_model=d_model, n_heads=n_heads, d_k=d_k, d_v=d_v, T=T)
    boxes = "".join(
        f"<label style='margin-right:14px'>{name} <input name='{name}' type='number' min='0' step='1' "
        f"value='{int(value)}' style='width:6em' data-lm-suppress-shortcuts='true'></label>"
        for name, value in values.items())
    check = "checked" if bias else ""
    return (f"<div id='{uid}' class='qkv-static qkv-calculator-static'>"
            f"<div>{boxes}<label>bias <input name='bias' type='checkbox' {check}></label></div>"
            "<div class='qkv-calc-message'></div>"
            "<table class='qkv-calc-table' style='font-family:monospace'></table></div>\n"
            f"<script type='module'>const UID = {json.dumps(uid)};{STATIC_JS}</script>\n")
