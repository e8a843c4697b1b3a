// qkv-viz in-browser renderer, part 2: chapter 3's editable toy (one query, a few keys).
//
// From Python (once): the typed scores, the values v (S, d_v) and d_k. Here, for each
// edit: scaled = factor * scores (factor = 1/sqrt(d_k) or 1), exp(scaled) as written
// on paper (may overflow), weights from the stable softmax (shift by the maximum:
// never overflows), output = weights @ v, the table and the bars (toy.py's toy_steps).
// Python may set scores and scale (fig.scores = [1, 2, 3]): sync() moves the boxes and redraws.

// A table cell: 3 decimals for ordinary numbers, 3 significant digits with an exponent
// from 10^4 on (so 2.3e+15 never stretches the table), "inf (overflow)" past float64's range.
function formatNumber(x) {
  if (!Number.isFinite(x)) return "inf (overflow)";
  return Math.abs(x) >= 1e4 ? x.toExponential(2) : x.toFixed(3);
}

function render({model, el}) {
  const values = asF64(model.get("v")), dK = model.get("d_k");
  const lut = bytesOf(model.get("lut"));
  const S = model.get("scores").length, dV = values.length / S;
  const boxes = model.get("scores").map((x, j) => numberInput(`qkv-score qkv-score-${j}`, x, `q0.k${j}`));
  const scale = checkbox("qkv-scale-box", model.get("scale"));
  const message = h("div", {class: "qkv-message", role: "status"});
  const table = h("table", {class: "qkv-readouts qkv-steps", "aria-live": "polite"});
  const bars = makeCanvas("qkv-toy-bars", 420, 200);
  const root = h("div", {class: "qkv-figure qkv-toy"}, [
    h("div", {class: "qkv-row"}, boxes.map((b, j) => labelled(`q0\u00b7k${j}`, b))),
    h("div", {class: "qkv-row"}, [tickLabel(`scale by 1/\u221ad_k (d_k = ${dK})`, scale)]),
    message, h("div", {class: "qkv-row qkv-top"}, [table, bars.canvas])]);
  el.append(root);
  const s = {scores: model.get("scores").map(Number), scale: scale.checked};

  function steps() {
    const factor = s.scale ? 1 / Math.sqrt(dK) : 1;
    const scaled = s.scores.map((x) => x * factor);
    const exp = scaled.map(Math.exp);            // by hand, unshifted (may be Infinity)
    const weights = Array.from(softmaxRows(Float64Array.from(scaled), 1, S, 1));
    const output = Array.from({length: dV}, (_, c) => weights.reduce((acc, w, j) => acc + w * values[j * dV + c], 0));
    return {factor, scaled, exp, total: exp.reduce((a, b) => a + b, 0), weights, output};
  }

  function update() {
    const r = steps(), f3 = formatNumber;
    const row = (name, xs) => h("tr", {}, [h("th", {text: name}), ...xs.map((x) => h("td", {text: f3(x)}))]);
    table.replaceChildren(
      h("tr", {}, [h("th", {text: "step"}), ...s.scores.map((_, j) => h("th", {text: `key ${j}`}))]),
      row("dot products q\u00b7k", s.scores), row("scores (\u00d7 factor)", r.scaled), row("exp(scores)", r.exp),
      row("weights", r.weights),
      h("tr", {}, [h("th", {text: "output"}), h("td", {colspan: S, text: r.output.map((x) => x.toFixed(3)).join(", ")})]),
      h("tr", {}, [h("th", {text: "factor, sum of exp"}), h("td", {colspan: S, text: `${r.factor.toFixed(3)}, ${f3(r.total)}`})]));
    const {ctx, width, height} = bars;
    ctx.clearRect(0, 0, width, height);
    text(ctx, "weights of query 0 over the keys", 44, 16, {font: BOLD});
    const box = {x: 44, y: 28, w: width - 60, h: height - 60};
    const yOf = drawBars(ctx, r.weights, box, 0, 1, (v) => lutColour(lut, v));
    yAxis(ctx, box, yOf, [0, 0.5, 1]);
    r.weights.forEach((w, j) => {
      const x = box.x + (j + 0.5) * box.w / S;
      text(ctx, `key ${j}`, x, box.y + box.h + 14, {align: "center", font: SMALL});
      text(ctx, w.toFixed(3), x, Math.max(yOf(w) - 4, box.y + 10), {align: "center", font: SMALL});
    });
    const top = r.weights.indexOf(Math.max(...r.weights));
    describe(bars.canvas, `weights of query 0 over ${S} keys, ${s.scale ? `scaled by 1/\u221a${dK} = ${r.factor.toFixed(3)}` : "not scaled"}: `
      + r.weights.map((w, j) => `key ${j} ${w.toFixed(3)}`).join(", ") + `; largest: key ${top}`);
    el.qkv = {settings: {...s}, ...r};
  }

  const attempt = attempter(message, update, {what: "table", model});
  const send = linkTraits(model, ["scores", "scale", "error"], () => attempt(sync));
  const save = () => send({scores: [...s.scores], scale: s.scale});

  // The traits into the boxes (checked first: a value the page cannot show changes nothing).
  function sync() {
    const xs = model.get("scores");
    if (!Array.isArray(xs) || xs.length !== S || !xs.every(Number.isFinite))
      throw new Error(`scores must be ${S} finite numbers, got ${JSON.stringify(xs)}`);
    Object.assign(s, {scores: xs.slice(), scale: Boolean(model.get("scale"))});
    const typed = (b) => { try { return parseNumber(b.value, ""); } catch { return NaN; } };
    boxes.forEach((b, j) => { if (typed(b) !== s.scores[j]) b.value = String(s.scores[j]); });  // keep "1." as typed
    scale.checked = s.scale;
  }

  boxes.forEach((b, j) => b.addEventListener("input", () => attempt(() => {
    s.scores[j] = parseNumber(b.value, `q0.k${j}`);
    save();
  })));
  scale.addEventListener("change", () => attempt(() => { s.scale = scale.checked; save(); }));
  attempt(sync);
}

export default { render };
