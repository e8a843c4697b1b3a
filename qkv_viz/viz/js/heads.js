// qkv-viz in-browser renderer, part 2: chapter 9's real model, every head of one layer.
//
// From Python (once per sentence): the tokens and the model's attention weights
// (n_layers, n_heads, T, T) as float32. Here: the layer slider picks one (n_heads, T, T)
// block and draws it, 4 panels a row, one shared 0..1 colour bar, each head's
// effective tokens (mean over queries of exp(entropy), as head_sharpness computes).
// Moving the layer never reruns the model.

function render({model, el}) {
  const sentence = numberInput("qkv-sentence", model.get("sentence"), "sentence", "520px");
  sentence.setAttribute("inputmode", "text");
  needsPython(model, [sentence]);
  const layer = rangeInput("qkv-layer", 0, model.get("n_layers") - 1, 1, model.get("layer"), "layer");
  const layerOut = h("output", {class: "qkv-layer-value"});
  const message = h("div", {class: "qkv-message", role: "status"});
  const holder = h("div", {class: "qkv-grid-holder"});
  const root = h("div", {class: "qkv-figure qkv-heads"}, [
    h("div", {class: "qkv-row"}, [labelled("sentence (Enter to run the model)", sentence)]),
    h("div", {class: "qkv-row"}, [labelled("layer", layer), layerOut]), message, holder]);
  el.append(root);
  const lut = bytesOf(model.get("lut"));
  let data = null, shown = model.get("layer");

  function load() {
    const tokens = model.get("tokens"), T = tokens.length;
    const L = model.get("n_layers"), H = model.get("n_heads");
    const weights = asF32(model.get("weights"));
    if (weights.length !== L * H * T * T) throw new Error("weights not received yet");
    data = {tokens, T, L, H, weights};
  }

  function draw() {
    // at most 4 panels a row; 3 when there are many tokens, so their labels do not touch
    const {tokens, T, H, weights} = data, cols = Math.min(T > 12 ? 3 : 4, H), rows = Math.ceil(H / cols);
    const left = 84, gap = 14, panel = Math.floor((840 - left - 60 - gap * (cols - 1)) / cols);
    const titleH = 20, bottom = 80, cell = panel / T;
    const label = cell >= 13 ? "13px sans-serif" : SMALL;   // token labels: 13 px where rows leave room
    const unit = panel >= 200 ? "effective tokens" : "eff. tokens";  // the still's words, where they fit
    const c = makeCanvas("qkv-head-grid", left + cols * (panel + gap) + 60, rows * (panel + titleH + gap) + bottom);
    const {ctx} = c;
    const eff = [];
    for (let hd = 0; hd < H; hd++) {
      const o = (shown * H + hd) * T * T, block = weights.subarray(o, o + T * T);
      let e = 0;
      for (let i = 0; i < T; i++) e += rowDiagnostics(block, block, i * T, T).effective_tokens;
      eff.push(e / T);
      const x = left + (hd % cols) * (panel + gap), y = Math.floor(hd / cols) * (panel + titleH + gap) + titleH;
      text(ctx, `head ${hd}: ${eff[hd].toFixed(1)} ${unit}`, x, y - 5, {font: BOLD});
      drawHeatmap(ctx, block, T, T, lut, x, y, panel, panel);
      const lastRow = Math.floor(hd / cols) === rows - 1 || hd + cols >= H;
      if (hd % cols === 0)
        tokens.forEach((t, i) => text(ctx, t, x - 4, y + (i + 0.5) * cell, {align: "right", base: "middle", font: label}));
      if (lastRow)
        tokens.forEach((t, j) => text(ctx, t, x + (j + 0.5) * cell, y + panel + 5, {align: "right", base: "middle", font: label, angle: -Math.PI / 2}));
    }
    const gridH = rows * (panel + titleH + gap) - gap;
    text(ctx, "queries (attending)", 10, gridH / 2, {align: "center", base: "middle", angle: -Math.PI / 2, font: "13px sans-serif"});
    text(ctx, "keys (attended to)", left + cols * (panel + gap) / 2, gridH + bottom - 4, {align: "center", font: "13px sans-serif"});
    drawColourBar(ctx, lut, left + cols * (panel + gap), titleH, 12, Math.min(gridH - titleH, 300), "weights",
                  {font: "13px sans-serif", labelFont: "13px sans-serif", labelGap: 34});
    const sharpest = eff.indexOf(Math.min(...eff));
    describe(c.canvas, `layer ${shown} of 0..${data.L - 1}: attention weights of ${H} heads over ${T} tokens `
      + `(${tokens.join(" ")}); effective tokens per head (mean over queries): `
      + eff.map((e, hd) => `head ${hd} ${e.toFixed(1)}`).join(", ") + `; sharpest: head ${sharpest}`);
    holder.replaceChildren(c.canvas);
    layerOut.textContent = `${shown} of 0..${data.L - 1}`;
    el.qkv = {settings: {layer: shown, sentence: model.get("sentence")}, tokens, effective_tokens: eff,
              weights: weights.subarray(shown * H * T * T, (shown + 1) * H * T * T)};
  }

  const attempt = attempter(message, draw, {model, note: () => `${data.T} tokens`});
  layer.addEventListener("input", () => attempt(() => {
    shown = parseNumber(layer.value, "layer", {integer: true, min: 0, max: data.L - 1});
    model.set("layer", shown); model.save_changes();
  }));
  sentence.addEventListener("change", () => {
    if (!sentence.value.trim()) return setMessage(message, "sentence: type at least one word. Showing the last valid picture.");
    setMessage(message, "running the model\u2026", false);
    model.set("sentence", sentence.value); model.save_changes();
  });
  model.on("change:weights", () => attempt(load));
  showPythonError(model, message);
  model.on("change:layer", () => { const v = model.get("layer"); if (v !== shown) attempt(() => { shown = v; layer.value = String(v); }); });
  attempt(load);
}

export default { render };
