// qkv-viz in-browser renderer, part 2: chapter 1's library (soft lookup with a temperature).
//
// From Python (once): the books' titles, keys (n_books, d_k) and values (n_books, d_v).
// Here, for each step of the temperature or the query: dot products = keys @ query (not
// scaled, as in library.py), scores = dots / temperature, weights = stable softmax(scores),
// output = weights @ values, and the pictures.

const KEY_COLOUR = "#0072B2", QUERY_COLOUR = "#D55E00";
const QUERY_TEXT = "#A34700";   // the query's orange, darkened for text: 6:1 on white (#D55E00 is 3.9:1)
// This figure's text: 10 pt and more (14 px / 13 px), larger than the renderer's shared 12 px / 11 px.
const LFONT = "14px sans-serif", LSMALL = "13px sans-serif", LBOLD = "bold 14px sans-serif", LABEL_H = 14;

// Where a key's label of w x h pixels goes (its centre): beyond the arrow's tip, along the arrow
// (origin -> tip, canvas points), if it fits inside the plot box; else just above (or below) the
// tip, slid sideways into the box; never on the frame; and, where a place is free, off every
// rectangle of `avoid` ([centre x, centre y, w, h]: the query's head and the labels placed so far).
function keyLabelCentre(origin, tip, w, h, box, gap = 6, avoid = []) {
  const a = Math.atan2(tip[1] - origin[1], tip[0] - origin[0]);
  const minX = box.x + w / 2 + 2, maxX = box.x + box.w - w / 2 - 2;
  const minY = box.y + h / 2 + 2, maxY = box.y + box.h - h / 2 - 2;
  const fits = ([x, y]) => x >= minX && x <= maxX && y >= minY && y <= maxY;
  const free = ([x, y]) => avoid.every(([ax, ay, aw, ah]) => Math.abs(x - ax) >= (w + aw) / 2 - 2 || Math.abs(y - ay) >= (h + ah) / 2 - 2);  // 2 px may touch
  const slide = (x) => Math.min(Math.max(x, minX), maxX);
  const up = Math.sin(a) <= 0;  // the arrow points up the screen
  const side = Math.cos(a) >= 0 ? 1 : -1;  // the arrow points right
  const around = (g) => [
    [tip[0] + Math.cos(a) * (w / 2 + g), tip[1] + Math.sin(a) * (h / 2 + g)],
    [slide(tip[0]), tip[1] + (up ? -1 : 1) * (h / 2 + g)],
    [tip[0] + side * (w / 2 + g), tip[1]],
    [slide(tip[0]), tip[1] + (up ? 1 : -1) * (h / 2 + g)],
    [tip[0] - side * (w / 2 + g), tip[1]]];
  const near = around(gap), far = around(gap + h + 2);
  for (const c of [...near, ...far]) if (fits(c) && free(c)) return c;
  for (const c of near) if (fits(c)) return c;
  return [slide(near[0][0]), Math.min(Math.max(near[0][1], minY), maxY)];
}

function render({model, el}) {
  const titles = model.get("titles"), nBooks = titles.length;
  const keys = asF64(model.get("book_keys")), values = asF64(model.get("book_values"));
  const dK = keys.length / nBooks, dV = values.length / nBooks;
  const valueAxes = model.get("value_axes"), keyAxes = model.get("key_axes");
  const keyName = (i) => (keyAxes[i] ? `key[${i}]: ${keyAxes[i]}` : `key[${i}]`);
  const queryName = (i) => (keyAxes[i] ? `query[${i}] (${keyAxes[i]})` : `query[${i}]`);
  // ---- controls: temperature on a log scale (10^-2 .. 10^2), the query's two coordinates
  const temp = rangeInput("qkv-temperature", -2, 2, 0.05, Math.log10(model.get("temperature")), "temperature (log scale)");
  const tempOut = h("output", {class: "qkv-temperature-value"});
  const q0 = model.get("query");
  const qs = [0, 1].map((i) => rangeInput(`qkv-query-${i}`, -2.5, 2.5, 0.1, q0[i], `query[${i}]`));
  const qOut = [0, 1].map(() => h("output"));
  const message = h("div", {class: "qkv-message", role: "status"});
  const plane = makeCanvas("qkv-figure-plane", 330, 330);
  const bars = makeCanvas("qkv-weights-bars", 490, 330);
  const table = h("table", {class: "qkv-readouts qkv-weights", "aria-live": "polite"});
  const root = h("div", {class: "qkv-figure qkv-library"}, [
    h("div", {class: "qkv-row"}, [labelled("temperature", temp), tempOut]),
    h("div", {class: "qkv-row"}, [labelled(queryName(0), qs[0]), qOut[0],
                                  labelled(queryName(1), qs[1]), qOut[1]]),
    message,
    h("div", {class: "qkv-row qkv-top"}, [plane.canvas, bars.canvas]), table]);
  el.append(root);

  const s = {temperature: model.get("temperature"), query: [...q0]};

  function compute() {
    const scores = new Float64Array(nBooks);
    for (let b = 0; b < nBooks; b++)
      for (let c = 0; c < dK; c++) scores[b] += keys[b * dK + c] * s.query[c];  // (n, d_k) @ (d_k,) -> (n,)
    const weights = softmaxRows(scores, 1, nBooks, s.temperature);
    const output = new Float64Array(dV);
    for (let b = 0; b < nBooks; b++)
      for (let c = 0; c < dV; c++) output[c] += weights[b] * values[b * dV + c];  // (n,) @ (n, d_v) -> (d_v,)
    let best = 0;
    for (let b = 1; b < nBooks; b++) if (scores[b] > scores[best]) best = b;
    return {scores, weights, output, best};
  }

  function drawPlane(r) {
    const {ctx, width, height} = plane;
    ctx.clearRect(0, 0, width, height);
    let lim = Math.max(Math.abs(s.query[0]), Math.abs(s.query[1]));
    for (let b = 0; b < nBooks; b++) lim = Math.max(lim, Math.abs(keys[b * dK]), Math.abs(keys[b * dK + 1]));
    lim *= 1.3;
    const box = {x: 40, y: 26, w: width - 56, h: height - 70};
    const X = (v) => box.x + box.w * (v + lim) / (2 * lim), Y = (v) => box.y + box.h * (lim - v) / (2 * lim);
    text(ctx, "keys (book: weight) and the query", box.x - 30, 16, {font: LBOLD});
    ctx.strokeStyle = "#ddd";
    ctx.beginPath(); ctx.moveTo(X(-lim), Y(0)); ctx.lineTo(X(lim), Y(0)); ctx.moveTo(X(0), Y(-lim)); ctx.lineTo(X(0), Y(lim)); ctx.stroke();
    ctx.strokeStyle = "#444";
    ctx.strokeRect(box.x + 0.5, box.y + 0.5, box.w, box.h);
    const arrow = (x, y, colour, width, dash) => {
      const x0 = X(0), y0 = Y(0), x1 = X(x), y1 = Y(y), a = Math.atan2(y1 - y0, x1 - x0), head = 7 + width;
      ctx.strokeStyle = colour; ctx.fillStyle = colour; ctx.lineWidth = width; ctx.setLineDash(dash);
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1 - head * 0.6 * Math.cos(a), y1 - head * 0.6 * Math.sin(a)); ctx.stroke();
      ctx.setLineDash([]);
      ctx.beginPath(); ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - head * Math.cos(a - 0.4), y1 - head * Math.sin(a - 0.4));
      ctx.lineTo(x1 - head * Math.cos(a + 0.4), y1 - head * Math.sin(a + 0.4)); ctx.fill();
      ctx.lineWidth = 1;
    };
    // Each key's label off the query's head and off the labels placed before it; then the query's
    // label, like a key's, off every key's tip and label.
    ctx.font = LBOLD;
    const qTip = [X(s.query[0]), Y(s.query[1])], qW = ctx.measureText("query").width;
    const placed = [[qTip[0], qTip[1], 18, 18]];  // the query's head
    for (let b = 0; b < nBooks; b++) {
      const kx = keys[b * dK], ky = keys[b * dK + 1];
      arrow(kx, ky, KEY_COLOUR, 1.6, []);  // one width for every key: the weight is written at the tip
      const label = `book ${b}: ${r.weights[b].toFixed(2)}`;
      ctx.font = LBOLD;
      const w = ctx.measureText(label).width;
      const [lx, ly] = keyLabelCentre([X(0), Y(0)], [X(kx), Y(ky)], w, LABEL_H, box, 6, placed);
      placed.push([lx, ly, w, LABEL_H], [X(kx), Y(ky), 10, 10]);
      text(ctx, label, lx, ly, {align: "center", base: "middle", font: LBOLD, colour: KEY_COLOUR});
    }
    const [qx, qy] = keyLabelCentre([X(0), Y(0)], qTip, qW, LABEL_H, box, 6, placed.slice(1));
    arrow(s.query[0], s.query[1], QUERY_COLOUR, 2, [5, 3]);
    text(ctx, "query", qx, qy, {align: "center", base: "middle", font: LBOLD, colour: QUERY_TEXT});
    for (let v = -2 * Math.floor(lim / 2); v <= lim; v += 2) {  // ticks at the even numbers, as in the still
      text(ctx, String(v), X(v), box.y + box.h + 15, {align: "center", font: LSMALL});
      text(ctx, String(v), box.x - 4, Y(v), {align: "right", base: "middle", font: LSMALL});
    }
    text(ctx, keyName(0), box.x + box.w / 2, box.y + box.h + 34, {align: "center", font: LFONT});
    text(ctx, keyName(1), 12, box.y + box.h / 2, {align: "center", base: "middle", angle: -Math.PI / 2, font: LFONT});
    const at = (x, y) => `(${x.toFixed(1)}, ${y.toFixed(1)})`;
    describe(plane.canvas, `the query (dashed arrow) at ${at(s.query[0], s.query[1])} and the ${nBooks} books' keys `
      + `(solid arrows), each with its weight: ` + titles.map((t, b) =>
        `${b} ${t} at ${at(keys[b * dK], keys[b * dK + 1])}: ${r.weights[b].toFixed(2)}`).join("; "));
  }

  function drawWeightBars(r) {
    const {ctx, width, height} = bars;
    ctx.clearRect(0, 0, width, height);
    text(ctx, `weight of each book at temperature ${s.temperature.toFixed(2)}`, 10, 16, {font: LBOLD});
    const box = {x: 210, y: 30, w: width - 260, h: height - 70}, slot = box.h / nBooks;
    for (let b = 0; b < nBooks; b++) {
      const y = box.y + b * slot, w = r.weights[b];
      ctx.fillStyle = KEY_COLOUR;  // the page's bars: one colour, the length is the weight
      ctx.fillRect(box.x, y + 4, Math.max(box.w * w, 1), slot - 8);
      ctx.strokeStyle = "#888";
      ctx.strokeRect(box.x + 0.5, y + 4.5, box.w, slot - 8);
      text(ctx, `${b}. ${titles[b]}`, box.x - 8, y + slot / 2, {align: "right", base: "middle", colour: b === r.best ? QUERY_TEXT : "#222",
                                                                  font: b === r.best ? LBOLD : LFONT});
      text(ctx, w.toFixed(3), box.x + box.w + 6, y + slot / 2, {base: "middle", font: LSMALL});
    }
    for (const t of [0, 0.5, 1]) text(ctx, String(t), box.x + t * box.w, box.y + box.h + 16, {align: "center", font: LSMALL});
    text(ctx, "weight (0..1)", box.x + box.w / 2, box.y + box.h + 34, {align: "center", font: LSMALL});
    describe(bars.canvas, `weight of each book at temperature ${s.temperature.toFixed(2)}: `
      + titles.map((t, b) => `${t} ${r.weights[b].toFixed(3)}`).join(", ") + `; the best match (bold) is ${titles[r.best]}`);
  }

  function update() {
    const r = compute();
    tempOut.textContent = s.temperature.toFixed(2);
    qOut.forEach((o, i) => { o.textContent = s.query[i].toFixed(1); });
    drawPlane(r);
    drawWeightBars(r);
    const mix = Array.from(r.output, (x, c) => `${valueAxes[c] || c}: ${x.toFixed(2)}`).join(", ");
    table.replaceChildren(
      h("tr", {}, [h("th", {text: "hard lookup picks"}), h("td", {text: titles[r.best]})]),
      h("tr", {}, [h("th", {text: "uniform mix would give"}), h("td", {text: `${(1 / nBooks).toFixed(3)} to each book`})]),
      h("tr", {}, [h("th", {text: "output (blended value)"}), h("td", {text: mix})]));
    el.qkv = {settings: {...s}, scores: r.scores, weights: r.weights, output: r.output};
  }

  const attempt = attempter(message, update, {what: "settings"});
  temp.addEventListener("input", () => attempt(() => {
    s.temperature = Math.pow(10, parseNumber(temp.value, "temperature exponent", {min: -2, max: 2}));
    model.set("temperature", s.temperature); model.save_changes();
  }));
  qs.forEach((input, i) => input.addEventListener("input", () => attempt(() => {
    s.query[i] = parseNumber(input.value, `query[${i}]`);
    model.set("query", [...s.query]); model.save_changes();
  })));
  model.on("change:temperature", () => {
    const t = model.get("temperature");
    if (t !== s.temperature) attempt(() => {
      s.temperature = parseNumber(t, "temperature", {min: 0, minExclusive: true});
      temp.value = String(Math.log10(t));
    });
  });
  model.on("change:query", () => {
    const q = model.get("query");
    if (q.some((v, i) => v !== s.query[i])) attempt(() => {
      s.query = q.map((v, i) => parseNumber(v, `query[${i}]`));
      qs.forEach((input, i) => { input.value = String(s.query[i]); });
    });
  });
  attempt(() => {});
}

export default { render };
