// qkv-viz in-browser renderer, part 2: chapter 3's "one token's vector, moved by the values".
//
// From Python (once): the keys K (S, 2), the values V (S, 2), the queries Q (T, 2), d_k and
// the token names. Here, for each drag of the query (or arrow key, or choice of token):
// scores = K @ q * factor (factor = 1/sqrt(d_k) or 1), weights = stable softmax(scores),
// output = weights @ V (the same formulas as qkv_viz.core.scaled_dot_product_attention),
// and the pictures: left, the query among the keys; right, the values as arrows, each
// weighted value w_j v_j laid tip to tail, their sum (the output) inside the triangle of
// the values; below, the weights as shares of one bar.

const Q_COLOUR = "#D55E00", K_COLOUR = "#0072B2", V_COLOUR = "#009E73";   // style.QUERY/KEY/VALUE_COLOR
const SHARE_COLOURS = ["#009E73", "#56B4E9", "#CC79A7", "#F0E442", "#999999", "#0072B2"];   // one per value
// the labels' text: the same hues, darker, at least 4.5:1 on white (WCAG AA)
const Q_TEXT = "#A04000", SHARE_TEXT = ["#007A59", "#1F6E9E", "#A14A7F", "#7A6F00", "#6B6B6B", "#0072B2"];
const OUTPUT_COLOUR = "#000";   // orange is the query's alone
// 13 px text throughout (the book's shared 12 px renders a little small in this 300 px figure)
const F13 = "13px sans-serif", B13 = "bold 13px sans-serif";
const Q_LIM = 3;   // the query moves in -3..3 on both axes (widget.py refuses |q_i| > 3); the plane adds a margin

// A plane: data coordinates [lo, hi]^2 in a square box of the canvas.
function plane(lo, hi, box) {
  const X = (v) => box.x + box.w * (v - lo) / (hi - lo), Y = (v) => box.y + box.h * (hi - v) / (hi - lo);
  const inverse = (px, py) => [lo + (px - box.x) * (hi - lo) / box.w, hi - (py - box.y) * (hi - lo) / box.h];
  return {X, Y, inverse, lo, hi, box};
}

// The ticks of plane p: every `step` from lo to hi (1 for the query plane, 0.5 for the values).
function tickValues(p) {
  const step = p.hi - p.lo > 3 ? 1 : 0.5, out = [];
  for (let v = Math.ceil(p.lo / step) * step; v <= p.hi + 1e-9; v += step) out.push(Math.round(v / step) * step);
  return out;
}

// A light grid at the ticks, the two axes through 0 a little darker, the frame, and the tick labels
// (13 px, left of and under the frame), so a reader can find a point such as (3, -3) by eye.
function axes(ctx, p) {
  const ticks = tickValues(p), fmt = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1)).replace("-", "\u2212");
  ctx.lineWidth = 1;
  for (const v of ticks) {
    ctx.strokeStyle = v === 0 ? "#bbb" : "#eee";
    ctx.beginPath();
    ctx.moveTo(p.X(p.lo), Math.round(p.Y(v)) + 0.5); ctx.lineTo(p.X(p.hi), Math.round(p.Y(v)) + 0.5);
    ctx.moveTo(Math.round(p.X(v)) + 0.5, p.Y(p.lo)); ctx.lineTo(Math.round(p.X(v)) + 0.5, p.Y(p.hi));
    ctx.stroke();
    text(ctx, fmt(v), p.box.x - 4, p.Y(v), {align: "right", base: "middle", colour: "#555", font: F13});
    text(ctx, fmt(v), p.X(v), p.box.y + p.box.h + 4, {align: "center", base: "top", colour: "#555", font: F13});
  }
  ctx.strokeStyle = "#444";
  ctx.strokeRect(p.box.x + 0.5, p.box.y + 0.5, p.box.w, p.box.h);
}

// An arrow from data point a to data point b in plane p.
function drawArrow(ctx, p, a, b, colour, width = 2, dash = []) {
  const x0 = p.X(a[0]), y0 = p.Y(a[1]), x1 = p.X(b[0]), y1 = p.Y(b[1]);
  const len = Math.hypot(x1 - x0, y1 - y0);
  if (len < 0.5) return;
  const ang = Math.atan2(y1 - y0, x1 - x0), tip = Math.min(6 + 1.5 * width, len);
  ctx.strokeStyle = colour; ctx.fillStyle = colour; ctx.lineWidth = width; ctx.setLineDash(dash);
  ctx.beginPath(); ctx.moveTo(x0, y0);
  ctx.lineTo(x1 - 0.7 * tip * Math.cos(ang), y1 - 0.7 * tip * Math.sin(ang)); ctx.stroke();
  ctx.setLineDash([]);
  ctx.beginPath(); ctx.moveTo(x1, y1);
  for (const side of [-0.45, 0.45]) ctx.lineTo(x1 - tip * Math.cos(ang + side), y1 - tip * Math.sin(ang + side));
  ctx.fill();
  ctx.lineWidth = 1;
}

// scores, weights, output of one query q (2,) against keys (S, 2) and values (S, d_v).
function attendOne(q, keys, values, S, dV, factor) {
  const scores = new Float64Array(S);
  for (let j = 0; j < S; j++) scores[j] = factor * (keys[2 * j] * q[0] + keys[2 * j + 1] * q[1]);  // (S, 2) @ (2,) -> (S,)
  const weights = softmaxRows(scores, 1, S, 1);
  const output = new Float64Array(dV);
  for (let j = 0; j < S; j++) for (let c = 0; c < dV; c++) output[c] += weights[j] * values[j * dV + c];  // (S,) @ (S, d_v)
  return {scores, weights, output};
}

function render({model, el}) {
  const names = model.get("names"), S = names.length, dK = model.get("d_k");
  const keys = asF64(model.get("k")), values = asF64(model.get("v")), queries = asF64(model.get("queries"));
  const T = queries.length / 2, dV = values.length / S;
  // ---- controls
  const token = h("select", {class: "qkv-token", "aria-label": "whose query", "data-lm-suppress-shortcuts": "true"});
  for (let i = 0; i < T; i++) token.append(h("option", {value: i, text: `${names[i] || `token ${i}`}'s query`}));
  token.value = String(model.get("token"));
  const scale = checkbox("qkv-scale-box", model.get("scale"), "divide the scores by the square root of d_k");
  const message = h("div", {class: "qkv-message", role: "status"});
  const left = makeCanvas("qkv-query-plane", 300, 300);
  const right = makeCanvas("qkv-value-plane", 300, 300);
  const shares = makeCanvas("qkv-shares", 612, 60);
  left.canvas.setAttribute("tabindex", "0");
  left.canvas.setAttribute("data-lm-suppress-shortcuts", "true");
  left.canvas.style.cursor = "grab";
  const table = h("table", {class: "qkv-readouts qkv-move-table", "aria-live": "polite"});
  const rows = [["key and value", "th"], ["q\u00b7k\u2c7c", "td"], ["scores", "td"], ["weights w\u2c7c", "td"]].map(
    ([name, tag], i) => [h("th", {scope: i ? "row" : "col", text: name}),
                         ...names.map((n, j) => h(tag, i ? {} : {scope: "col", text: `${n} (k${j}, v${j})`}))]);
  table.append(...rows.map((cells) => h("tr", {}, cells)));   // built once; update() changes the numbers
  const root = h("div", {class: "qkv-figure qkv-vector-move"}, [
    h("div", {class: "qkv-row"}, [labelled("start from", token),
      tickLabel(`divide by \u221ad\u2096 (d\u2096 = ${dK})`, scale)]),
    message,
    h("div", {class: "qkv-row qkv-top"}, [left.canvas, right.canvas]),
    shares.canvas, table,
    h("div", {class: "qkv-hint", text: "Drag the tip of the orange query (or click the left plane and use the arrow keys)."})]);
  el.append(root);

  const s = {q: model.get("q").map(Number), token: model.get("token"), scale: model.get("scale")};
  const trail = [];   // the last outputs, to see the point move

  // value plane: the values and the origin, padded
  let lo = 0, hi = 0;
  for (let i = 0; i < S * dV; i++) { lo = Math.min(lo, values[i]); hi = Math.max(hi, values[i]); }
  const pad = 0.25 * (hi - lo || 1);
  // query plane: -3..3 and a margin, as vector_move.py draws it, so a key at the edge keeps its arrowhead
  let keyMax = Q_LIM;
  for (let i = 0; i < 2 * S; i++) keyMax = Math.max(keyMax, Math.abs(keys[i]));
  const qp = plane(-(keyMax + 0.35), keyMax + 0.35, {x: 30, y: 26, w: 256, h: 256});
  const vp = plane(lo - pad, hi + pad, {x: 30, y: 26, w: 256, h: 256});

  function drawLeft(r) {
    const {ctx, width, height} = left;
    ctx.clearRect(0, 0, width, height);
    text(ctx, "the query among the keys", qp.box.x, 16, {font: B13});
    axes(ctx, qp);
    drawArrow(ctx, qp, [0, 0], s.q, Q_COLOUR, 5);   // the query first, wide: a key under it stays visible
    ctx.fillStyle = Q_COLOUR;
    ctx.beginPath(); ctx.arc(qp.X(s.q[0]), qp.Y(s.q[1]), 7, 0, 2 * Math.PI); ctx.fill();
    let same = -1;   // the key the query equals (to 0.05), said in its label
    for (let j = 0; j < S; j++) {
      const kj = [keys[2 * j], keys[2 * j + 1]];
      const equal = same < 0 && Math.max(Math.abs(kj[0] - s.q[0]), Math.abs(kj[1] - s.q[1])) < 0.05;
      if (equal) same = j;
      // every key from the origin, in its value's colour; a key equal to q is dashed over it
      const colour = SHARE_COLOURS[j % SHARE_COLOURS.length];
      drawArrow(ctx, qp, [0, 0], kj, colour, 2, equal ? [5, 4] : []);
      // the label above-right of the tip; at the plane's top edge below-left (clear of the title),
      // at its right edge above-left (inside the canvas), on the x axis below-right (clear of keys above it)
      const nearTop = qp.Y(kj[1]) - 5 < qp.box.y + 14, nearRight = qp.X(kj[0]) + 30 > qp.box.x + qp.box.w;
      const left_ = nearTop || nearRight, below = nearTop || (!left_ && Math.abs(kj[1]) < 0.3);
      text(ctx, `k${j}${equal ? " (= q)" : ""}`, qp.X(kj[0]) + (left_ ? -6 : 5), qp.Y(kj[1]) + (below ? 16 : -5),
           {font: B13, colour: SHARE_TEXT[j % SHARE_TEXT.length], align: left_ ? "right" : "left"});
    }
    text(ctx, `q = (${s.q[0].toFixed(1)}, ${s.q[1].toFixed(1)})${same >= 0 ? ` = k${same}` : ""}`,
         qp.box.x + 6, qp.box.y + qp.box.h - 8, {font: B13, colour: Q_TEXT});
    const pt = (a, o) => `(${a[o].toFixed(1)}, ${a[o + 1].toFixed(1)})`;
    describe(left.canvas, `the query q = ${pt(s.q, 0)}${same >= 0 ? `, equal to k${same}` : ""}, among the keys ` +
      names.map((_, j) => `k${j} ${pt(keys, 2 * j)}`).join(", ") +
      `; scores ${Array.from(r.scores, (x, j) => `k${j} ${x.toFixed(2)}`).join(", ")}. ` +
      "Drag the tip, or focus here and use the arrow keys (steps of 0.1).");
    return same;
  }

  function drawRight(r) {
    const {ctx, width, height} = right;
    ctx.clearRect(0, 0, width, height);
    text(ctx, "output = \u03a3\u2c7c w\u2c7c v\u2c7c", vp.box.x, 16, {font: B13});
    axes(ctx, vp);
    ctx.fillStyle = "rgba(0, 0, 0, 0.06)";
    ctx.beginPath();
    for (let j = 0; j < S; j++) ctx[j ? "lineTo" : "moveTo"](vp.X(values[j * dV]), vp.Y(values[j * dV + 1]));
    ctx.closePath(); ctx.fill();
    // the triangle's label, as in the still: just inside the middle of its last edge (v_last v_0), on the side of
    // the centre, clear of the value arrows; under everything else
    let cx = 0;
    for (let j = 0; j < S; j++) cx += values[j * dV] / S;
    const ex = (values[0] + values[(S - 1) * dV]) / 2, ey = (values[1] + values[(S - 1) * dV + 1]) / 2;
    const inward = cx < ex ? "right" : "left", tx = vp.X(ex) + (cx < ex ? -6 : 6), ty = vp.Y(ey) + 6;
    text(ctx, "the values'", tx, ty, {align: inward, base: "bottom", font: F13, colour: "#555"});
    text(ctx, "triangle", tx, ty, {align: inward, base: "top", font: F13, colour: "#555"});
    for (let j = 0; j < S; j++) {
      const vj = [values[j * dV], values[j * dV + 1]];
      const colour = SHARE_COLOURS[j % SHARE_COLOURS.length];   // each value and its weighted piece share a colour
      drawArrow(ctx, vp, [0, 0], vj, colour, 1, [4, 3]);
      text(ctx, `v${j}`, vp.X(vj[0]) + 5, vp.Y(vj[1]) - 5, {font: B13, colour: SHARE_TEXT[j % SHARE_TEXT.length]});
    }
    ctx.fillStyle = "rgba(0, 0, 0, 0.2)";
    for (const p of trail) { ctx.beginPath(); ctx.arc(vp.X(p[0]), vp.Y(p[1]), 2.5, 0, 2 * Math.PI); ctx.fill(); }
    let at = [0, 0];   // w_0 v_0, then + w_1 v_1, ...: tip to tail
    const joints = [];
    for (let j = 0; j < S; j++) {
      const next = [at[0] + r.weights[j] * values[j * dV], at[1] + r.weights[j] * values[j * dV + 1]];
      const w = 1.5 + 4 * r.weights[j];
      drawArrow(ctx, vp, at, next, "#ffffff", w + 3);   // a white halo: a short piece stands out from its dashed value
      drawArrow(ctx, vp, at, next, SHARE_COLOURS[j % SHARE_COLOURS.length], w);
      if (j < S - 1) joints.push([next, SHARE_COLOURS[j % SHARE_COLOURS.length]]);
      at = next;
    }
    for (const [p, colour] of joints) {   // where one piece ends and the next begins: even a short piece shows
      ctx.beginPath(); ctx.arc(vp.X(p[0]), vp.Y(p[1]), 2.5, 0, 2 * Math.PI);
      ctx.fillStyle = "#ffffff"; ctx.fill(); ctx.strokeStyle = colour; ctx.lineWidth = 2; ctx.stroke(); ctx.lineWidth = 1;
    }
    ctx.strokeStyle = OUTPUT_COLOUR;   // the output: a ring where the last piece ends (a short last piece shows through)
    ctx.lineWidth = 2; ctx.beginPath(); ctx.arc(vp.X(r.output[0]), vp.Y(r.output[1]), 6, 0, 2 * Math.PI); ctx.stroke();
    ctx.lineWidth = 1;
    // "output" beside the dot, on the side towards the plane's centre, with a white halo over the pieces
    const ox = vp.X(r.output[0]), oy = vp.Y(r.output[1]), mid = vp.box.x + vp.box.w / 2;
    const toRight = ox < mid, lx = ox + (toRight ? 9 : -9), ly = oy + (oy < vp.box.y + 40 ? 14 : -10);
    ctx.save(); ctx.font = B13; ctx.textAlign = toRight ? "left" : "right"; ctx.textBaseline = "middle";
    ctx.lineWidth = 4; ctx.strokeStyle = "#fff"; ctx.lineJoin = "round"; ctx.strokeText("output", lx, ly);
    ctx.fillStyle = OUTPUT_COLOUR; ctx.fillText("output", lx, ly); ctx.restore();
    text(ctx, `output (${r.output[0].toFixed(2)}, ${r.output[1].toFixed(2)})`, vp.box.x + 6, vp.box.y + vp.box.h - 8,
         {font: B13, colour: OUTPUT_COLOUR});
    describe(right.canvas, `output = \u03a3 w\u2c7c v\u2c7c = (${r.output[0].toFixed(2)}, ${r.output[1].toFixed(2)}), ` +
      "inside the triangle of the values " +
      names.map((_, j) => `v${j} (${values[j * dV].toFixed(1)}, ${values[j * dV + 1].toFixed(1)})`).join(", ") +
      `; the pieces w\u2c7c v\u2c7c laid tip to tail: ${percents(r)}.`);
  }

  function drawShares(r) {
    const {ctx, width, height} = shares, box = {x: 30, y: 20, w: width - 40, h: 22};
    ctx.clearRect(0, 0, width, height);
    text(ctx, "the weights: each value's share of the output", box.x, 13, {font: B13});
    let x = box.x, free = box.x;   // free: where the row of labels under the bar may continue
    ctx.font = B13;
    for (let j = 0; j < S; j++) {
      const w = r.weights[j] * box.w;
      ctx.fillStyle = SHARE_COLOURS[j % SHARE_COLOURS.length];
      ctx.fillRect(x, box.y, w, box.h);
      const label = `v${j} ${(100 * r.weights[j]).toFixed(0)} %`;
      if (w > 44) text(ctx, label, x + w / 2, box.y + box.h / 2, {align: "center", base: "middle", font: B13, colour: "#000"});
      else if (r.weights[j] >= 0.005) {   // too narrow: the label goes under the bar, in the value's colour,
        const half = ctx.measureText(label).width / 2;   // left to right, never over the previous one
        const lx = Math.min(Math.max(x + w / 2, free + half), box.x + box.w - half);
        text(ctx, label, lx, box.y + box.h + 11,
             {align: "center", base: "middle", font: B13, colour: SHARE_TEXT[j % SHARE_TEXT.length]});
        free = lx + half + 8;
      }
      x += w;
    }
    ctx.strokeStyle = "#444";
    ctx.strokeRect(box.x + 0.5, box.y + 0.5, box.w, box.h);
    describe(shares.canvas, `the weights, each value's share of the output: ${percents(r)}.`);
  }
  const percents = (r) => Array.from(r.weights, (w, j) => `v${j} ${(100 * w).toFixed(0)} %`).join(", ");

  function drawTable(r) {
    const put = (node, str) => { if (node.textContent !== str) node.textContent = str; };  // only changes are announced
    put(rows[2][0], s.scale ? `scores (\u00d7 1/\u221a${dK})` : "scores (not scaled)");
    for (let j = 0; j < S; j++) {
      put(rows[1][j + 1], (r.scores[j] / r.factor).toFixed(2));
      put(rows[2][j + 1], r.scores[j].toFixed(3));
      put(rows[3][j + 1], r.weights[j].toFixed(3));
    }
  }

  function update() {
    const factor = s.scale ? 1 / Math.sqrt(dK) : 1;
    const r = {factor, ...attendOne(s.q, keys, values, S, dV, factor)};
    trail.push([r.output[0], r.output[1]]);
    if (trail.length > 40) trail.shift();
    const same = drawLeft(r);
    drawRight(r); drawShares(r); drawTable(r);
    el.qkv = {settings: {q: [...s.q], token: s.token, scale: s.scale}, sameAsKey: same >= 0 ? same : null,
              scores: Array.from(r.scores), weights: Array.from(r.weights), output: Array.from(r.output)};
  }

  const attempt = attempter(message, update);
  const sendQ = () => { model.set("q", [...s.q]); model.save_changes(); };
  const clampQ = (v) => Math.round(10 * Math.max(-Q_LIM, Math.min(Q_LIM, v))) / 10;

  // ---- dragging the query's tip (pointer events: mouse, pen and touch)
  let dragging = false;
  const at = (e) => { const b = left.canvas.getBoundingClientRect(); return qp.inverse(e.clientX - b.left, e.clientY - b.top); };
  left.canvas.addEventListener("pointerdown", (e) => {
    const [x, y] = at(e);
    if (Math.hypot(qp.X(x) - qp.X(s.q[0]), qp.Y(y) - qp.Y(s.q[1])) > 14) return;   // grab the tip only
    dragging = true;
    left.canvas.setPointerCapture(e.pointerId);
    left.canvas.style.cursor = "grabbing";
  });
  left.canvas.addEventListener("pointermove", (e) => {
    if (!dragging) return;
    attempt(() => { s.q = at(e).map(clampQ); });
  });
  const stop = () => { if (dragging) { dragging = false; left.canvas.style.cursor = "grab"; sendQ(); } };
  left.canvas.addEventListener("pointerup", stop);
  left.canvas.addEventListener("pointercancel", stop);
  left.canvas.addEventListener("keydown", (e) => {
    const step = {ArrowLeft: [-0.1, 0], ArrowRight: [0.1, 0], ArrowUp: [0, 0.1], ArrowDown: [0, -0.1]}[e.key];
    if (!step) return;
    e.preventDefault();
    attempt(() => { s.q = [clampQ(s.q[0] + step[0]), clampQ(s.q[1] + step[1])]; sendQ(); });
  });
  token.addEventListener("change", () => attempt(() => {
    s.token = Number(token.value);
    s.q = [queries[2 * s.token], queries[2 * s.token + 1]];
    model.set("token", s.token); sendQ();
  }));
  scale.addEventListener("change", () => attempt(() => { s.scale = scale.checked; model.set("scale", s.scale); model.save_changes(); }));
  // Python-side changes (figure.q = [1, 0] in a cell) move the picture too
  model.on("change:q", () => { const v = model.get("q").map(Number); if (v.join() !== s.q.join()) attempt(() => { s.q = v; }); });
  model.on("change:token", () => attempt(() => { s.token = model.get("token"); token.value = String(s.token); }));
  model.on("change:scale", () => attempt(() => { s.scale = model.get("scale"); scale.checked = s.scale; }));
  attempt(() => {});
}

export default { render };
