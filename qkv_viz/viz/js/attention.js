// qkv-viz in-browser renderer, part 1: the maths of a slider step, the drawing helpers and
// the helpers every figure's events share (attempter, linkTraits), written once.
//
// Python (qkv_viz/viz/canvas.py) puts this file in front of one figure's file
// (explorer.js, library.js, ...) to make that figure's ES module: no imports,
// no build step, no network. The formulas are the ones of qkv_viz.core:
// softmax.py (stable softmax, shift by the row maximum before dividing by the
// temperature) and diagnostics.py (entropy, effective tokens, max weight,
// softmax-gradient Frobenius norm, score std). Arrays are flat, row-major.

// ---------------------------------------------------------------- data in
function bytesOf(view) {            // a DataView (widget) or ArrayBuffer -> Uint8Array copy
  if (!view) return new Uint8Array(0);
  const buf = view.buffer || view;
  const off = view.byteOffset || 0, len = view.byteLength;
  return new Uint8Array(buf.slice(off, off + len));
}
const asF64 = (view) => new Float64Array(bytesOf(view).buffer);
const asF32 = (view) => new Float32Array(bytesOf(view).buffer);

// ---------------------------------------------------------------- maths
// weights[i, :] = softmax((scores[i, :] - max_j scores[i, j]) / temperature)   (rows x cols)
// With a mask (rows x cols, 1 = may attend), core.attention.masked_softmax: the maximum and the
// sum run over the allowed keys only, a hidden key gets weight 0, a row with no allowed key all
// zeros (never NaN).
function softmaxRows(scores, rows, cols, temperature = 1, mask = null) {
  const w = new Float64Array(rows * cols);
  for (let i = 0; i < rows; i++) {
    const o = i * cols;
    let m = -Infinity;
    for (let j = 0; j < cols; j++) if ((!mask || mask[o + j]) && scores[o + j] > m) m = scores[o + j];
    if (mask && m === -Infinity) continue;                  // fully masked row: zeros
    let total = 0;
    for (let j = 0; j < cols; j++) {
      const e = !mask || mask[o + j] ? Math.exp((scores[o + j] - m) / temperature) : 0;  // exponent <= 0: never overflows
      w[o + j] = e;
      total += e;
    }
    for (let j = 0; j < cols; j++) w[o + j] /= total;
  }
  return w;
}

// The diagnostics of one row (diagnostics.py), weights p and scores s of length cols at offset o.
function rowDiagnostics(s, p, o, cols) {
  let mean = 0, top = o, ent = 0, rest = 0, restSq = 0, sq = 0;
  for (let j = o; j < o + cols; j++) {
    mean += s[j];
    if (p[j] > p[top]) top = j;
    if (p[j] > 0) ent -= p[j] * Math.log(p[j]);
    sq += p[j] * p[j];
  }
  mean /= cols;
  let v = 0;
  for (let j = o; j < o + cols; j++) v += (s[j] - mean) * (s[j] - mean);
  for (let j = o; j < o + cols; j++) if (j !== top) { rest += p[j]; restSq += p[j] * p[j]; }
  // ||diag(p) - p p^T||_F^2 = sum_i p_i^2 (1 - p_i)^2 + sum_i p_i^2 sum_{j != i} p_j^2,
  // with 1 - p_top and sum_{j != top} p_j^2 summed from the small entries (accurate near one-hot).
  let g = 0;
  for (let j = o; j < o + cols; j++) {
    const pj2 = p[j] * p[j];
    const oneMinus = j === top ? rest : 1 - p[j];
    const others = j === top ? restSq : sq - pj2;
    g += pj2 * oneMinus * oneMinus + pj2 * others;
  }
  return {score_std: Math.sqrt(v / cols), max_weight: p[top], entropy: ent,
          effective_tokens: Math.exp(ent), grad_norm: Math.sqrt(g)};
}

const METRIC_NAMES = ["score_std", "max_weight", "entropy", "effective_tokens", "grad_norm"];

// Means over all rows, as diagnostics.summarize does.
function summarize(scores, weights, rows, cols) {
  const sum = Object.fromEntries(METRIC_NAMES.map((m) => [m, 0]));
  for (let i = 0; i < rows; i++) {
    const d = rowDiagnostics(scores, weights, i * cols, cols);
    for (const m of METRIC_NAMES) sum[m] += d[m];
  }
  for (const m of METRIC_NAMES) sum[m] /= rows;
  return sum;
}

// ---------------------------------------------------------------- colours
// lut: 256 x RGB bytes of the book's colour map (style.WEIGHTS_CMAP, sent by Python).
// Same index as matplotlib's Colormap for a value on 0..1: floor(x * 256), clipped.
function lutIndex(x) {
  const i = Math.floor(x * 256);
  return i < 0 ? 0 : i > 255 ? 255 : i;
}
function lutColour(lut, x) {
  const i = 3 * lutIndex(x);
  return `rgb(${lut[i]},${lut[i + 1]},${lut[i + 2]})`;
}

// ---------------------------------------------------------------- DOM helpers
function h(tag, attrs = {}, children = []) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v;           // text only: nothing is parsed as HTML
    else if (k === "style") node.style.cssText = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

// A native range slider whose arrow keys reach it in JupyterLab AND Notebook 7
// (data-lm-suppress-shortcuts stops the notebook's cell-navigation shortcuts).
function rangeInput(cls, min, max, step, value, label) {
  return h("input", {type: "range", class: cls, min, max, step, value,
                     "aria-label": label, "data-lm-suppress-shortcuts": "true"});
}
function numberInput(cls, value, label, width = "5em") {
  return h("input", {type: "text", inputmode: "decimal", class: cls, value: String(value),
                     "aria-label": label, "data-lm-suppress-shortcuts": "true",
                     style: `width:${width}`});
}
function labelled(text, control) {
  return h("label", {class: "qkv-control"}, [h("span", {text}), control]);
}
// A checkbox (its keys, as the slider's, stay out of the notebook's shortcuts), ticked or not;
// tickLabel(text, box) puts it in front of its text.
function checkbox(cls, checked, label = "") {
  const box = h("input", {type: "checkbox", class: cls, "data-lm-suppress-shortcuts": "true",
                          ...(label ? {"aria-label": label} : {})});
  box.checked = Boolean(checked);
  return box;
}
function tickLabel(text, box) {
  return h("label", {class: "qkv-control"}, [box, h("span", {text})]);
}

// A <canvas> of css width x height, sharp on high-DPI screens; ctx works in CSS pixels.
function makeCanvas(cls, width, height) {
  const canvas = h("canvas", {class: cls});
  const ratio = Math.max(1, Math.round(window.devicePixelRatio || 1));
  canvas.width = width * ratio;
  canvas.height = height * ratio;
  canvas.style.width = `${width}px`;
  canvas.style.height = `${height}px`;
  canvas.setAttribute("role", "img");
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  return {canvas, ctx, width, height};
}

// A canvas's text alternative: what it shows now, in words ("weights of query 1 at d_k = 64,
// scaled: max weight 0.30"). Every figure calls it at the end of each redraw, so a screen
// reader (and a test) reads the same numbers the picture draws.
function describe(canvas, summary) {
  canvas.setAttribute("aria-label", summary);
}

const FONT = "12px sans-serif", SMALL = "11px sans-serif", BOLD = "bold 12px sans-serif";

function text(ctx, str, x, y, {align = "left", base = "alphabetic", font = FONT, colour = "#222", angle = 0} = {}) {
  ctx.save();
  ctx.font = font;
  ctx.fillStyle = colour;
  ctx.textAlign = align;
  ctx.textBaseline = base;
  ctx.translate(x, y);
  if (angle) ctx.rotate(angle);
  ctx.fillText(str, 0, 0);
  ctx.restore();
}

// Heatmap of values (rows x cols, on 0..1) into the box (x, y, w, hgt): one cell per
// value, nearest sampling when there are more values than pixels.
function drawHeatmap(ctx, values, rows, cols, lut, x, y, w, hgt) {
  const img = new ImageData(cols, rows);
  const px = img.data;
  for (let i = 0; i < rows * cols; i++) {
    const c = 3 * lutIndex(values[i]);
    px[4 * i] = lut[c]; px[4 * i + 1] = lut[c + 1]; px[4 * i + 2] = lut[c + 2]; px[4 * i + 3] = 255;
  }
  const off = document.createElement("canvas");
  off.width = cols;
  off.height = rows;
  off.getContext("2d").putImageData(img, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, x, y, w, hgt);
}

// Vertical colour bar for 0..1 with ticks 0, 0.5, 1 and a label.
// font / labelFont: the numbers' and the label's; gap / labelGap: their distance from the bar
function drawColourBar(ctx, lut, x, y, w, hgt, label, {font = SMALL, labelFont = FONT, gap = 6, labelGap = 28} = {}) {
  for (let i = 0; i < hgt; i++) {
    ctx.fillStyle = lutColour(lut, 1 - (i + 0.5) / hgt);
    ctx.fillRect(x, y + i, w, 1);
  }
  ctx.strokeStyle = "#444";
  ctx.strokeRect(x + 0.5, y + 0.5, w - 1, hgt - 1);
  for (const t of [0, 0.5, 1]) {
    const ty = y + (1 - t) * hgt;
    ctx.fillStyle = "#444";
    ctx.fillRect(x + w, Math.round(ty), 4, 1);
    text(ctx, String(t), x + w + gap, ty, {base: "middle", font});
  }
  text(ctx, label, x + w + labelGap, y + hgt / 2, {align: "center", base: "middle", angle: -Math.PI / 2, font: labelFont});
}

// A few integer ticks along an axis of n cells (0 .. n-1).
function cellTicks(n) {
  const step = n <= 10 ? 1 : n <= 20 ? 5 : Math.pow(2, Math.ceil(Math.log2(n / 5)));
  const out = [];
  for (let t = 0; t < n; t += step) out.push(t);
  return out;
}

// Bars of values in the box; range [lo, hi]; colour(value, index) picks each bar's colour.
function drawBars(ctx, values, box, lo, hi, colour) {
  const {x, y, w, h: hgt} = box, n = values.length;
  const yOf = (v) => y + hgt * (hi - Math.min(hi, Math.max(lo, v))) / (hi - lo);
  const slot = w / n, gap = slot > 4 ? Math.min(2, slot * 0.2) : 0;
  for (let j = 0; j < n; j++) {
    const y0 = yOf(0), y1 = yOf(values[j]);
    ctx.fillStyle = colour(values[j], j);
    ctx.fillRect(x + j * slot + gap / 2, Math.min(y0, y1), Math.max(slot - gap, 0.5), Math.max(Math.abs(y1 - y0), 0.5));
  }
  ctx.strokeStyle = "#888";
  ctx.beginPath(); ctx.moveTo(x, Math.round(yOf(0)) + 0.5); ctx.lineTo(x + w, Math.round(yOf(0)) + 0.5); ctx.stroke();
  return yOf;
}

// Left axis with ticks at the given values.
function yAxis(ctx, box, yOf, ticks, fmt = String, font = SMALL) {
  ctx.strokeStyle = "#444";
  ctx.beginPath(); ctx.moveTo(box.x - 0.5, box.y); ctx.lineTo(box.x - 0.5, box.y + box.h); ctx.stroke();
  for (const t of ticks) {
    const ty = Math.round(yOf(t)) + 0.5;
    ctx.beginPath(); ctx.moveTo(box.x - 4, ty); ctx.lineTo(box.x, ty); ctx.stroke();
    text(ctx, fmt(t), box.x - 6, ty, {align: "right", base: "middle", font});
  }
}

function fmt(x, digits = 3) {       // like Python's :.3g, without the exponent's zero padding
  if (!Number.isFinite(x)) return String(x);
  if (x !== 0 && (Math.abs(x) < 1e-3 || Math.abs(x) >= 1e5)) return x.toExponential(digits - 1);
  return String(Number(x.toPrecision(digits)));
}

// In a static page (no kernel: static.js's model), the controls that need Python are disabled
// and say why.
function needsPython(model, controls) {
  if (!model.get("static")) return;
  for (const c of controls) {
    c.disabled = true;
    c.title = "needs Python: open the notebook and run it";
  }
}

// Python's error (a model run that failed, a value it refused) on the message line as it arrives.
function showPythonError(model, message) {
  model.on("change:error", () => { const e = model.get("error"); if (e) setMessage(message, e); });
}

// A message line: text only (never parsed as HTML), red for errors.
function setMessage(node, message, isError = true) {
  node.textContent = message ? (isError ? "\u26a0 " : "") + message : "";
  node.classList.toggle("qkv-error", Boolean(message) && isError);
}

// ---------------------------------------------------------------- events and traits
// attempt = attempter(message, redraw, {what, model, note}): every change of a figure runs as
// attempt(change). change() moves the figure's settings and throws an Error naming a value the
// figure cannot show; redraw() draws them. If either throws, the message line says
// "<error>. Showing the last valid <what>." and the picture is the last one drawn. After a
// good change the line shows Python's `error` (red; traits.py puts a value it refused there and
// sends the last good one back) when `model` is given and it is set, else note() as plain text
// ("" clears the line); note: null leaves the line to redraw().
function attempter(message, redraw, {what = "picture", model = null, note = () => ""} = {}) {
  return (change) => {
    try {
      change();
      redraw();
      const error = model ? model.get("error") : "";
      if (error) setMessage(message, error);
      else if (note) setMessage(message, note(), false);
    } catch (err) {
      setMessage(message, `${err.message}. Showing the last valid ${what}.`);
    }
  };
}

// save = linkTraits(model, names, fromPython): fromPython() runs when one of the traits `names`
// changes from Python (a cell sets fig.step = 3, or traits.py sends a good value back), never
// for the figure's own changes: save({trait: value, ...}) sets those traits with their change
// events ignored, then sends them to Python in one save_changes().
function linkTraits(model, names, fromPython) {
  let saving = false;                    // our own model.set: not a change from Python
  for (const name of names) model.on(`change:${name}`, () => { if (!saving) fromPython(); });
  return (values) => {
    saving = true;
    try { for (const [name, value] of Object.entries(values)) model.set(name, value); } finally { saving = false; }
    model.save_changes();
  };
}

// Parse a typed number; throws an Error naming the control.
function parseNumber(raw, name, {integer = false, min = -Infinity, max = Infinity, minExclusive = false} = {}) {
  const s = String(raw).trim();
  const x = s === "" ? NaN : Number(s);
  if (!Number.isFinite(x)) throw new Error(`${name}: "${s}" is not a finite number`);
  if (integer && !Number.isInteger(x)) throw new Error(`${name} must be a whole number, got ${s}`);
  if (minExclusive ? x <= min : x < min) throw new Error(`${name} must be ${minExclusive ? ">" : ">="} ${min}, got ${s}`);
  if (x > max) throw new Error(`${name} must be <= ${max}, got ${s}`);
  return x;
}
