// qkv-viz in-browser renderer, part 2: chapter 4's scaling explorer.
//
// From Python (once per seed / n / head): q and k, float32 (n, d_max): the widest
// draw; a smaller d_k uses the first d_k columns (qkv_viz/chapters/ch04_scaling/explorer.py, which also
// computes the same numbers from qkv_viz.core for the still picture and the tests).
// Here, in the browser, for each step: scores = (q[:, :d_k] @ k[:, :d_k]^T) * factor,
// factor = 1/sqrt(d_k) or 1; weights = stable softmax(scores / temperature); the
// readouts; the pictures. Nothing of a d_k, scaling, temperature, metric or query
// step goes back to Python for computing.

const QUERY_OUTLINE = "#FF3030", SCALED = "#0072B2", UNSCALED = "#D55E00";   // ch04 widget.QUERY_OUTLINE (red on every viridis colour), style.SCALED_COLOR, UNSCALED_COLOR
const TICK = "13px sans-serif";   // tick numbers and small labels: >= 13 px, readable at the displayed size
const POSITIVE = "#B2182B", NEGATIVE = "#2166AC";   // scores: the ends of style.SCORES_CMAP
const METRIC_LABELS = {
  max_weight: "max weight (row mean)", effective_tokens: "effective number of keys (row mean)",
  entropy: "entropy H, nats (row mean)", score_std: "score spread, row std (row mean)",
  grad_norm: "\u2016J\u2016 Frobenius (row mean)",
};

// Unscaled q . k for every d_k of dks, one pass over the columns: dots[t] is (n, n).
function allDots(q, k, n, dMax, dks) {
  const dots = dks.map(() => new Float64Array(n * n));
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      let acc = 0, c = 0;
      for (let t = 0; t < dks.length; t++) {
        for (; c < dks[t]; c++) acc += q[i * dMax + c] * k[j * dMax + c];
        dots[t][i * n + j] = acc;   // (n, d_k) @ (d_k, n) -> (n, n), column by column
      }
    }
  }
  return dots;
}

// scores = dots * factor and weights = softmax(scores / temperature) of the given rows
// (all n rows by default): (rows.length, n) each.
function stepNumbers(dots, n, dk, scale, temperature, rows = null) {
  const factor = scale ? 1 / Math.sqrt(dk) : 1, count = rows ? rows.length : n;
  const scores = new Float64Array(count * n);
  for (let r = 0; r < count; r++) {
    const o = (rows ? rows[r] : r) * n;
    for (let j = 0; j < n; j++) scores[r * n + j] = dots[o + j] * factor;
  }
  const weights = softmaxRows(scores, count, n, temperature);
  return {factor, scores, weights};
}

// The rows (or columns) a size-pixel heatmap shows of n: nearest sampling.
const sampled = (n, size) => Array.from({length: size}, (_, k) => Math.floor((k + 0.5) * n / size));

function render({model, el}) {
  const dks = model.get("d_ks");
  // ---- controls
  const dk = rangeInput("qkv-dk-slider", 0, dks.length - 1, 1, dks.indexOf(model.get("d_k")), "d_k");
  const dkOut = h("output", {class: "qkv-dk-value"});
  const scale = checkbox("qkv-scale-toggle", model.get("scale"), "divide the scores by sqrt(d_k)");
  const temp = numberInput("qkv-temperature", model.get("temperature"), "temperature");
  const nBox = numberInput("qkv-n", model.get("n"), "tokens n");
  const seedBox = numberInput("qkv-seed", model.get("seed"), "seed");
  const head = h("select", {class: "qkv-head", "aria-label": "head"});
  for (let i = 0; i < model.get("n_heads"); i++) head.append(h("option", {value: i, text: `head ${i}`}));
  head.value = String(model.get("head"));
  const metric = h("select", {class: "qkv-metric", "aria-label": "metric plotted against d_k"});
  for (const [m, label] of Object.entries(METRIC_LABELS)) metric.append(h("option", {value: m, text: label}));
  metric.value = model.get("metric");
  const message = h("div", {class: "qkv-message", role: "status"});
  const heat = makeCanvas("qkv-heatmap", 428, 396);
  heat.canvas.setAttribute("tabindex", "0");          // up / down arrows pick the query
  heat.canvas.setAttribute("data-lm-suppress-shortcuts", "true");
  const bars = makeCanvas("qkv-bars", 400, 396);
  const curve = makeCanvas("qkv-curve", 428, 236);
  const readouts = h("table", {class: "qkv-readouts", "aria-live": "polite"});
  needsPython(model, [nBox, seedBox, head]);
  const row1 = h("div", {class: "qkv-row"}, [
    labelled("d\u2096", dk), dkOut, tickLabel("divide by \u221ad\u2096", scale),
    labelled("temperature", temp)]);
  const row2 = h("div", {class: "qkv-row"}, [labelled("tokens n", nBox), labelled("seed", seedBox),
    ...(model.get("n_heads") > 1 ? [head] : []), labelled("plot against d\u2096", metric)]);
  const side = h("div", {class: "qkv-side"}, [readouts, h("div", {class: "qkv-hint",
    text: "Click a row of the heatmap (or focus it and press \u2191 \u2193) to follow that query. "
      + "Arrow keys move the focused slider."})]);
  const root = h("div", {class: "qkv-figure qkv-explorer"}, [row1, row2, message,
    h("div", {class: "qkv-row qkv-top"}, [heat.canvas, bars.canvas]),
    h("div", {class: "qkv-row qkv-top"}, [curve.canvas, side])]);
  el.append(root);

  // ---- state: data from Python, settings on screen (the last valid ones)
  let data = null, numbers = null, curves = null, curvesFor = null;
  const s = {dk: model.get("d_k"), scale: model.get("scale"), temperature: model.get("temperature"),
             query: Math.min(model.get("query"), model.get("n") - 1), metric: model.get("metric")};
  const scaling = () => (s.scale ? "scaled" : "not scaled");

  function loadData() {
    const n = model.get("n"), dMax = model.get("d_max");
    const q = asF32(model.get("q")), k = asF32(model.get("k"));
    if (q.length !== n * dMax || k.length !== n * dMax) throw new Error(`data for n = ${n} not received yet`);
    data = {n, dots: allDots(q, k, n, dMax, dks)};
    s.query = Math.min(s.query, n - 1);
    curves = null;
  }

  // Every metric at every d_k, scaled and unscaled (summarize over all rows: 22 softmaxes
  // of (n, n)), one (d_k, scaling) per task so that a large n does not freeze the page.
  function computeCurves(done) {
    const {n, dots} = data, temperature = s.temperature;
    const out = Object.fromEntries(METRIC_NAMES.map((m) => [m, {scaled: [], unscaled: []}]));
    const jobs = dks.flatMap((d, t) => [[t, d, "scaled", true], [t, d, "unscaled", false]]);
    const next = () => {
      if (data.dots !== dots || s.temperature !== temperature) return;  // outdated: a newer run follows
      const [t, d, key, on] = jobs.shift();
      const r = stepNumbers(dots[t], n, d, on, temperature);
      const sum = summarize(r.scores, r.weights, n, n);
      for (const m of METRIC_NAMES) out[m][key][t] = sum[m];
      if (jobs.length) update.timer = setTimeout(next, 0);
      else { curves = out; curvesFor = temperature; done(); }
    };
    clearTimeout(update.timer);
    update.timer = setTimeout(next, n > 256 ? 30 : 0);
  }

  // One step. The readouts' row means come from the curves when they are ready (the
  // same summarize of the same weights); the heatmap needs only the rows it shows
  // (all of them up to n = 320); the bars one row. The full weights are computed
  // when asked (el.qkv.weights).
  function update() {
    const n = data.n, t = dks.indexOf(s.dk), dots = data.dots[t];
    const shown = n > HS ? sampled(n, HS) : null;
    numbers = stepNumbers(dots, n, s.dk, s.scale, s.temperature, shown);
    numbers.shownRows = shown ? shown.length : n;
    const one = stepNumbers(dots, n, s.dk, s.scale, s.temperature, [s.query]);
    numbers.rowScores = one.scores;
    numbers.rowWeights = one.weights;
    numbers.row = rowDiagnostics(one.scores, one.weights, 0, n);
    const ready = curves && curvesFor === s.temperature;
    const key = s.scale ? "scaled" : "unscaled";
    if (ready) numbers.metrics = Object.fromEntries(METRIC_NAMES.map((m) => [m, curves[m][key][t]]));
    else {
      const full = shown ? stepNumbers(dots, n, s.dk, s.scale, s.temperature) : numbers;
      numbers.metrics = summarize(full.scores, full.weights, n, n);
    }
    dkOut.textContent = String(s.dk);
    drawHeat();
    drawBarsPanel();
    drawReadouts();
    drawCurve();
    if (!ready) computeCurves(() => { drawCurve(); if (el.qkv) el.qkv.curves = curves; });
    const settings = {...s, n, seed: model.get("seed"), head: model.get("head")};
    let full = shown ? null : numbers;
    const fullNumbers = () => full || (full = stepNumbers(dots, n, settings.dk, settings.scale, settings.temperature));
    el.qkv = {settings, metrics: numbers.metrics, row: numbers.row, curves: ready ? curves : null,
              get weights() { return fullNumbers().weights; }, get scores() { return fullNumbers().scores; }};
  }

  const HX = 50, HY = 30, HS = 320;   // heatmap box in the heat canvas (CSS px)
  function drawHeat() {
    const {ctx, width, height} = heat, n = data.n;
    ctx.clearRect(0, 0, width, height);
    text(ctx, "attention weights (each row sums to 1)", HX, 18, {font: BOLD});
    if (n > HS) {                   // the shown rows, and of them the shown columns: (HS, HS)
      const cols = sampled(n, HS), img = new Float64Array(HS * HS);
      for (let r = 0; r < HS; r++) for (let c = 0; c < HS; c++) img[r * HS + c] = numbers.weights[r * n + cols[c]];
      drawHeatmap(ctx, img, HS, HS, lut, HX, HY, HS, HS);
    } else drawHeatmap(ctx, numbers.weights, n, n, lut, HX, HY, HS, HS);
    const cell = HS / n;
    for (const t of cellTicks(n)) {
      text(ctx, String(t), HX + (t + 0.5) * cell, HY + HS + 14, {align: "center", font: TICK});
      text(ctx, String(t), HX - 5, HY + (t + 0.5) * cell, {align: "right", base: "middle", font: TICK});
    }
    text(ctx, "keys (columns)", HX + HS / 2, HY + HS + 32, {align: "center"});
    text(ctx, "queries (rows)", 10, HY + HS / 2, {align: "center", base: "middle", angle: -Math.PI / 2});
    ctx.strokeStyle = QUERY_OUTLINE;
    ctx.lineWidth = 2;
    ctx.strokeRect(HX - 1, HY + s.query * cell - 1, HS + 2, Math.max(cell, 2) + 2);
    ctx.lineWidth = 1;
    drawColourBar(ctx, lut, HX + HS + 10, HY, 12, HS, "weights");
    const m = numbers.metrics;
    describe(heat.canvas, `attention weights of ${n} queries over ${n} keys at d_k = ${s.dk}, ${scaling()}: `
      + `row mean max weight ${m.max_weight.toFixed(2)}, ${m.effective_tokens.toFixed(1)} effective keys of ${n}; `
      + `query ${s.query} outlined (up and down arrows move it)`);
  }

  function drawBarsPanel() {
    const {ctx, width, height} = bars, n = data.n;
    ctx.clearRect(0, 0, width, height);
    const w = numbers.rowWeights, sc = numbers.rowScores;
    const top = {x: 46, y: 30, w: width - 56, h: 140};
    const how = scaling(), colour = s.scale ? SCALED : UNSCALED;
    text(ctx, `query ${s.query}: its weights over the ${n} keys (${how})`, top.x, 18, {font: BOLD});
    const yOf = drawBars(ctx, w, top, 0, 1, () => colour);
    yAxis(ctx, top, yOf, [0, 0.5, 1]);
    text(ctx, "weight", 10, top.y + top.h / 2, {align: "center", base: "middle", angle: -Math.PI / 2});
    const bottom = {x: 46, y: 232, w: width - 56, h: 130};
    let big = 0;
    for (const v of sc) big = Math.max(big, Math.abs(v));
    big = big || 1;
    text(ctx, `query ${s.query}: its scores \u00d7 ${fmt(numbers.factor)} (before softmax)`, bottom.x, 214, {font: BOLD});
    const yOf2 = drawBars(ctx, sc, bottom, -big, big, (v) => (v >= 0 ? POSITIVE : NEGATIVE));
    yAxis(ctx, bottom, yOf2, [-big, 0, big], (t) => fmt(t, 2));
    text(ctx, "score", 10, bottom.y + bottom.h / 2, {align: "center", base: "middle", angle: -Math.PI / 2});
    for (const t of cellTicks(n)) for (const box of [top, bottom]) {   // keys numbered from 0, never touching
      text(ctx, String(t), box.x + (t + 0.5) * box.w / n, box.y + box.h + 12, {align: "center", font: TICK});
    }
    text(ctx, "keys", top.x + top.w / 2, top.y + top.h + 26, {align: "center", font: TICK});
    text(ctx, "keys", bottom.x + bottom.w / 2, bottom.y + bottom.h + 26, {align: "center", font: TICK});
    const r = numbers.row, top1 = w.indexOf(r.max_weight);
    describe(bars.canvas, `query ${s.query}'s weights over the ${n} keys at d_k = ${s.dk}, ${how}: max weight `
      + `${r.max_weight.toFixed(2)} on key ${top1}, ${r.effective_tokens.toFixed(1)} effective keys; its scores \u00d7 `
      + `${fmt(numbers.factor)} run from ${fmt(Math.min(...sc), 2)} (below the zero line) to ${fmt(Math.max(...sc), 2)}`);
  }

  // Round tick values inside [lo, hi] (in log10 units when log): 1, 3, 10, 30 ... or steps of 1, 2, 2.5, 5 x 10^k.
  function niceTicks(lo, hi, log) {
    if (log) {
      const out = [];
      for (let e = Math.floor(lo); e <= Math.ceil(hi); e++) {
        for (const m of [1, 3]) { const v = m * Math.pow(10, e); if (Math.log10(v) >= lo && Math.log10(v) <= hi) out.push(v); }
      }
      return out;
    }
    const raw = (hi - lo) / 4, p = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((v) => v >= 0.8 * raw);   // 3 to 5 ticks
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(Number(v.toPrecision(6)));
    return out;
  }

  function drawCurve() {
    const {ctx, width, height} = curve;
    ctx.clearRect(0, 0, width, height);
    const box = {x: 64, y: 30, w: width - 84, h: height - 76};
    text(ctx, `${METRIC_LABELS[s.metric]} against d\u2096`, box.x - 50, 16, {font: BOLD});
    if (!curves) {
      text(ctx, "computing the curves\u2026", box.x + 10, box.y + 30);
      return describe(curve.canvas, `${METRIC_LABELS[s.metric]} against d_k: computing the curves`);
    }
    const ys = [...curves[s.metric].scaled, ...curves[s.metric].unscaled];
    const log = s.metric === "score_std";
    const tf = log ? Math.log10 : (v) => v;
    const uniform = s.metric === "max_weight" ? 1 / data.n : null;   // a uniform row's max weight, drawn as a line
    let lo = Math.min(...ys.map(tf), ...(uniform ? [uniform] : [])), hi = Math.max(...ys.map(tf));
    if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
    const pad = 0.06 * (hi - lo);
    lo -= pad; hi += pad;
    const xOf = (t) => box.x + box.w * t / (dks.length - 1);
    const yOf = (v) => box.y + box.h * (hi - tf(v)) / (hi - lo);
    ctx.strokeStyle = "#444";
    ctx.strokeRect(box.x - 0.5, box.y - 0.5, box.w + 1, box.h + 1);
    dks.forEach((d, t) => { if (t % 2 === 0) text(ctx, String(d), xOf(t), box.y + box.h + 14, {align: "center", font: TICK}); });
    text(ctx, "d\u2096 (log scale)", box.x + box.w / 2, box.y + box.h + 32, {align: "center", font: TICK});
    for (const v of niceTicks(lo, hi, log)) {
      text(ctx, fmt(v, 2), box.x - 6, yOf(v), {align: "right", base: "middle", font: TICK});
    }
    if (uniform) {
      ctx.strokeStyle = "#777"; ctx.setLineDash([2, 3]);
      ctx.beginPath(); ctx.moveTo(box.x, yOf(uniform)); ctx.lineTo(box.x + box.w, yOf(uniform)); ctx.stroke();
      ctx.setLineDash([]);
      text(ctx, `uniform row: 1/${data.n}`, box.x + box.w - 4, yOf(uniform) - 5, {align: "right", font: TICK});
    }
    for (const [key, colour] of [["scaled", SCALED], ["unscaled", UNSCALED]]) {
      ctx.strokeStyle = colour;
      ctx.lineWidth = 2;
      ctx.setLineDash(key === "scaled" ? [] : [6, 3]);
      ctx.beginPath();
      curves[s.metric][key].forEach((v, t) => (t ? ctx.lineTo(xOf(t), yOf(v)) : ctx.moveTo(xOf(t), yOf(v))));
      ctx.stroke();
    }
    ctx.setLineDash([]);
    ctx.lineWidth = 1;
    const t = dks.indexOf(s.dk), v = curves[s.metric][s.scale ? "scaled" : "unscaled"][t];
    ctx.strokeStyle = "#999";
    ctx.setLineDash([3, 3]);
    ctx.beginPath(); ctx.moveTo(xOf(t), box.y); ctx.lineTo(xOf(t), box.y + box.h); ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = "#000";
    ctx.beginPath(); ctx.arc(xOf(t), yOf(v), 6, 0, 2 * Math.PI); ctx.fill();
    // the legend: a sample of each line (colour AND dash) and dark text (readable, not the colour alone)
    const legend = (x, label, colour, dash) => {
      ctx.strokeStyle = colour; ctx.lineWidth = 2; ctx.setLineDash(dash);
      ctx.beginPath(); ctx.moveTo(x, height - 10); ctx.lineTo(x + 24, height - 10); ctx.stroke();
      ctx.setLineDash([]); ctx.lineWidth = 1;
      text(ctx, label, x + 28, height - 6, {font: TICK});
    };
    legend(10, "scaled", SCALED, []);
    legend(84, "not scaled", UNSCALED, [6, 3]);
    const ends = (key) => `${fmt(curves[s.metric][key][0], 2)} to ${fmt(curves[s.metric][key][dks.length - 1], 2)}`;
    describe(curve.canvas, `${METRIC_LABELS[s.metric]} against d_k from ${dks[0]} to ${dks[dks.length - 1]}: `
      + `scaled (solid line) ${ends("scaled")}, not scaled (dashed line) ${ends("unscaled")}; `
      + `the dot marks d_k = ${s.dk}, ${scaling()}: ${fmt(v, 2)}`);
  }

  function drawReadouts() {
    const m = numbers.metrics, r = numbers.row, n = data.n;
    const rows = [
      ["measure", "all rows (mean)", `query ${s.query}`],
      ["score factor", s.scale ? `1/\u221a${s.dk} = ${fmt(numbers.factor)}` : "1 (not scaled)", ""],
      ["score spread (std)", fmt(m.score_std), fmt(r.score_std)],
      ["max weight", m.max_weight.toFixed(3), r.max_weight.toFixed(3)],
      ["entropy H (nats)", m.entropy.toFixed(3), r.entropy.toFixed(3)],
      ["effective number of keys", `${m.effective_tokens.toFixed(2)} of ${n}`, r.effective_tokens.toFixed(2)],
      ["\u2016J\u2016 Frobenius", fmt(m.grad_norm), fmt(r.grad_norm)],
    ];
    if (n > HS) rows.push(["heatmap shows", `1 in ~${Math.round(n / HS)} rows/cols`, ""]);
    readouts.replaceChildren(...rows.map((cells, i) => h("tr", {}, cells.map((c, j) =>
      h(i === 0 || j === 0 ? "th" : "td", {text: c}))))); // textContent only
  }

  // ---- events: validate each control on its own; a bad value keeps the last good picture
  const attempt = attempter(message, update, {what: "settings"});
  function sync(name, value) {
    model.set(name, value);
    model.save_changes();
  }
  dk.addEventListener("input", () => attempt(() => { s.dk = dks[Number(dk.value)]; sync("d_k", s.dk); }));
  scale.addEventListener("change", () => attempt(() => { s.scale = scale.checked; sync("scale", s.scale); }));
  temp.addEventListener("input", () => attempt(() => {
    const t = parseNumber(temp.value, "temperature", {min: 0, minExclusive: true, max: 1e6});
    s.temperature = t;
    sync("temperature", t);
  }));
  metric.addEventListener("change", () => attempt(() => { s.metric = metric.value; sync("metric", s.metric); }));
  heat.canvas.addEventListener("click", (e) => attempt(() => {
    const rect = heat.canvas.getBoundingClientRect();
    const y = e.clientY - rect.top, x = e.clientX - rect.left;
    if (x < HX || x > HX + HS || y < HY || y >= HY + HS) return;
    s.query = Math.floor((y - HY) / (HS / data.n));
    sync("query", s.query);
  }));
  heat.canvas.addEventListener("keydown", (e) => {
    const step = {ArrowUp: -1, ArrowDown: 1}[e.key];
    if (!step) return;
    e.preventDefault();                                 // the page does not scroll
    attempt(() => { s.query = Math.min(data.n - 1, Math.max(0, s.query + step)); sync("query", s.query); });
  });
  const askPython = (box, name, opts) => box.addEventListener("change", () => {
    try {
      const v = parseNumber(box.value, name, opts);
      setMessage(message, "asking Python for new vectors\u2026", false);
      sync(box === nBox ? "n" : "seed", v);
    } catch (err) {
      setMessage(message, `${err.message}. Showing the last valid settings.`);
    }
  });
  askPython(nBox, "tokens n", {integer: true, min: 1, max: model.get("n_max")});
  askPython(seedBox, "seed", {integer: true, min: 0, max: 2 ** 32 - 1});
  head.addEventListener("change", () => sync("head", Number(head.value)));

  const onData = () => attempt(() => {
    loadData();
    nBox.value = String(data.n);
    seedBox.value = String(model.get("seed"));
    if (!model.get("error")) setMessage(message, "");
  });
  model.on("change:q", onData);
  showPythonError(model, message);
  // Python-side changes of the step settings (explorer.d_k = 256 in a cell) move the controls too
  // (our own model.set fires these too: nothing to do when the value is already on screen)
  const follow = (name, key, apply) => model.on(`change:${name}`, () => {
    const v = model.get(name);
    if (v !== s[key]) attempt(() => apply(v));
  });
  follow("d_k", "dk", (v) => { s.dk = v; dk.value = String(dks.indexOf(v)); });
  follow("scale", "scale", (v) => { s.scale = v; scale.checked = v; });
  follow("temperature", "temperature", (v) => { s.temperature = v; temp.value = String(v); });
  follow("query", "query", (v) => { s.query = Math.min(v, data.n - 1); });
  follow("metric", "metric", (v) => { s.metric = v; metric.value = v; });

  const lut = bytesOf(model.get("lut"));
  attempt(loadData);
  if (model.get("error")) setMessage(message, model.get("error"));
  return () => clearTimeout(update.timer);
}

export default { render };
