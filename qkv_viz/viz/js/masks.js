// qkv-viz in-browser renderer, part 2: chapter 7's mask explorer.
//
// From Python (once): the scaled scores (T x S) and the token labels. Here, for each
// change: the mask = (causal ? key j <= query i : true) AND (key j < real keys) AND the
// cells the reader clicked on; the weights = masked softmax of the scores (the formula of
// qkv_viz.core.attention.masked_softmax: shift by the largest ALLOWED score, exp, divide;
// a row with no allowed key gets all zeros, never NaN). Hidden cells are drawn as the chapter's
// matplotlib figures draw them (figures.py: HATCH, PAD_HATCH, CLICK_HATCH): causal = white '/'
// over the weight-0 colour, padding = a grey cell with dark dots (both reasons: grey, dots and the
// white '/'), clicked only = white horizontal lines. Text is 14-15 px.
// Python may set causal, n_real, clicked and the token labels (fig.n_real = 2): sync()
// moves the controls and redraws.

// weights[i, j] = mask[i, j] exp(s[i, j] - m_i) / sum_j' mask[i, j'] exp(s[i, j'] - m_i): softmaxRows with a mask
const maskedSoftmaxRows = (scores, mask, rows, cols) => softmaxRows(scores, rows, cols, 1, mask);

// why[i, j]: bit 1 = hidden by the causal mask, bit 2 = padding, bit 4 = clicked (0 = may look)
function reasonsOf(rows, cols, causal, nReal, clicked) {
  const why = new Uint8Array(rows * cols);
  for (let i = 0; i < rows; i++)
    for (let j = 0; j < cols; j++)
      why[i * cols + j] = (causal && j > i + cols - rows ? 1 : 0) | (j >= nReal ? 2 : 0) | (clicked[i * cols + j] ? 4 : 0);
  return why;
}

// mask[i, j] = 1 where no reason hides key j from query i
const maskOf = (rows, cols, causal, nReal, clicked) => reasonsOf(rows, cols, causal, nReal, clicked).map((b) => (b ? 0 : 1));

// figures.py's looks: white lines (HATCH_COLOR, HATCH_LW 1.6) for causal "/" and clicked "-";
// padding filled with PAD_FACE "0.72" and dotted with PAD_EDGE "0.3".
function hatch(ctx, x, y, w, hgt, why) {
  ctx.save();
  ctx.beginPath(); ctx.rect(x, y, w, hgt); ctx.clip();
  if (why & 2) {
    ctx.fillStyle = "#b8b8b8"; ctx.fillRect(x, y, w, hgt);
    ctx.fillStyle = "#4d4d4d";
    for (let dy = 3; dy < hgt; dy += 6) for (let dx = 3 + (dy % 12 ? 3 : 0); dx < w; dx += 6) ctx.fillRect(x + dx - 1, y + dy - 1, 2, 2);
  }
  ctx.lineWidth = 1.6;
  ctx.strokeStyle = "#fff";
  if (why & 1) for (let d = -hgt; d < w + hgt; d += 7) { ctx.beginPath(); ctx.moveTo(x + d, y + hgt); ctx.lineTo(x + d + hgt, y); ctx.stroke(); }
  if (why === 4) for (let d = 4; d < hgt; d += 7) { ctx.beginPath(); ctx.moveTo(x, y + d); ctx.lineTo(x + w, y + d); ctx.stroke(); }
  ctx.restore();
}

const F14 = "14px sans-serif", B15 = "bold 15px sans-serif";

function render({model, el}) {
  const T = model.get("T"), S = model.get("S");
  const scores = asF64(model.get("scores")), lut = bytesOf(model.get("lut"));
  let tq = model.get("tokens_q"), tk = model.get("tokens_k");        // checked by sync()
  const causal = checkbox("qkv-causal-box", model.get("causal"));
  const real = rangeInput("qkv-real-slider", 0, S, 1, model.get("n_real"), "real keys (the rest is padding)");
  const realOut = h("output", {text: String(model.get("n_real"))});
  const reset = h("button", {class: "qkv-reset", type: "button", text: "clear clicked cells"});
  const message = h("div", {class: "qkv-message", role: "status"});
  const cell = 72, left = 78, top = 30, bottom = 88;   // tests/test_browser_ch07.py clicks by these
  const pic = makeCanvas("qkv-mask-map", Math.max(left + S * cell + 100, 400), top + T * cell + bottom);
  pic.canvas.setAttribute("tabindex", "0");     // arrows move a cursor cell, Enter or Space toggles it
  pic.canvas.setAttribute("data-lm-suppress-shortcuts", "true");
  const root = h("div", {class: "qkv-figure qkv-masks"}, [
    h("div", {class: "qkv-row"}, [
      tickLabel("causal mask", causal),
      labelled("real keys (the rest is padding)", real), realOut, reset]),
    pic.canvas, message,
    h("div", {class: "qkv-hint", text: "Click a cell to hide or show that key for that query "
      + "(or focus the picture, move with the arrow keys, press Enter)."})]);
  el.append(root);
  const s = {causal: causal.checked, nReal: Number(real.value), clicked: []};
  const cursor = {i: 0, j: 0};

  function update() {
    const mask = maskOf(T, S, s.causal, s.nReal, s.clicked);
    const w = maskedSoftmaxRows(scores, mask, T, S);
    const why = reasonsOf(T, S, s.causal, s.nReal, s.clicked);
    const {ctx, width, height} = pic;
    ctx.clearRect(0, 0, width, height);
    drawHeatmap(ctx, w, T, S, lut, left, top, S * cell, T * cell);
    const empty = [];
    for (let i = 0; i < T; i++) {
      let any = false;
      for (let j = 0; j < S; j++) {
        const x = left + j * cell, y = top + i * cell, k = i * S + j;
        if (!mask[k]) { hatch(ctx, x, y, cell, cell, why[k]); continue; }
        any = true;
        text(ctx, w[k].toFixed(2), x + cell / 2, y + cell / 2, {align: "center", base: "middle", font: F14,
             colour: w[k] > 0.45 ? "#000" : "#fff"});  // >= 4.5:1 on either side of viridis 0.45
      }
      if (!any) empty.push(tq[i]);
      text(ctx, tq[i], left - 6, top + (i + 0.5) * cell, {align: "right", base: "middle", font: F14});
    }
    tk.forEach((t, j) => text(ctx, t, left + (j + 0.5) * cell, top + T * cell + 8, {align: "right", base: "middle", angle: -Math.PI / 4, font: F14}));
    text(ctx, "keys (attended to)", left + S * cell / 2, height - 24, {align: "center", font: F14});
    text(ctx, "queries (attending)", 9, top + T * cell / 2, {align: "center", base: "middle", angle: -Math.PI / 2, font: F14});
    text(ctx, "attention weights after the mask", left, 17, {font: B15});
    text(ctx, "hidden (weight exactly 0):  / causal   grey, dotted: padding   \u2014 clicked", 4, height - 6, {font: F14});
    drawColourBar(ctx, lut, left + S * cell + 14, top, 14, T * cell, "weights",
                  {font: F14, labelFont: F14, gap: 7, labelGap: 38});
    const focused = document.activeElement === pic.canvas;
    if (focused) {                                   // the keyboard's cursor: a thick dashed frame
      ctx.save(); ctx.strokeStyle = "#d00"; ctx.lineWidth = 3; ctx.setLineDash([6, 3]);
      ctx.strokeRect(left + cursor.j * cell + 2, top + cursor.i * cell + 2, cell - 4, cell - 4); ctx.restore();
    }
    describe(pic.canvas, describeMasks(w, mask, why) + (focused
      ? `; cursor on query ${tq[cursor.i]}, key ${tk[cursor.j]} (Enter hides or shows it)` : ""));
    realOut.textContent = String(s.nReal);
    setMessage(message, model.get("error") || (empty.length
      ? `fully masked row(s): ${empty.join(", ")}: no key allowed, so all weights are 0 (as masked_softmax gives, not NaN)`
      : "every row sums to 1 over its allowed keys"), Boolean(model.get("error")));
    el.qkv = {settings: {causal: s.causal, n_real: s.nReal}, mask: Array.from(mask), why: Array.from(why), weights: Array.from(w)};
  }

  // In words: each query's allowed keys with their weights, then how many cells each reason hides.
  function describeMasks(w, mask, why) {
    const rows = tq.map((q, i) => {
      const seen = tk.map((k, j) => (mask[i * S + j] ? `${k} ${w[i * S + j].toFixed(2)}` : null)).filter(Boolean);
      return `${q}: ${seen.length ? seen.join(", ") : "no key allowed, all weights 0"}`;
    });
    const count = (bit) => why.filter((b) => b & bit).length;
    return `attention weights after the mask (causal mask ${s.causal ? "on" : "off"}, ${s.nReal} real keys of ${S}): `
      + `${rows.join("; ")}. Hidden cells: ${count(1)} by the causal mask, ${count(2)} padding, ${count(4)} clicked`;
  }

  const attempt = attempter(message, update, {note: null});   // update() writes the message line
  const send = linkTraits(model, ["causal", "n_real", "clicked", "tokens_q", "tokens_k", "error"], () => attempt(sync));
  const save = () => send({causal: s.causal, n_real: s.nReal, clicked: s.clicked.slice()});

  // The traits into the controls (checked first: a value the page cannot show changes nothing).
  function sync() {
    const nReal = model.get("n_real"), clicked = model.get("clicked");
    const q = model.get("tokens_q"), k = model.get("tokens_k");
    if (!Number.isInteger(nReal) || nReal < 0 || nReal > S) throw new Error(`n_real must be 0..${S}, got ${nReal}`);
    if (!Array.isArray(clicked) || clicked.length !== T * S) throw new Error(`clicked must be ${T * S} booleans`);
    for (const [name, xs, n] of [["tokens_q", q, T], ["tokens_k", k, S]])
      if (!Array.isArray(xs) || xs.length !== n) throw new Error(`${name} must be ${n} labels, got ${JSON.stringify(xs)}`);
    [tq, tk] = [q.map(String), k.map(String)];
    Object.assign(s, {causal: Boolean(model.get("causal")), nReal, clicked: clicked.map(Boolean)});
    causal.checked = s.causal;
    real.value = String(nReal);
  }

  causal.addEventListener("change", () => { s.causal = causal.checked; save(); update(); });
  real.addEventListener("input", () => { s.nReal = Number(real.value); save(); update(); });
  reset.addEventListener("click", () => { s.clicked = s.clicked.map(() => false); save(); update(); });
  pic.canvas.addEventListener("click", (ev) => {
    const r = pic.canvas.getBoundingClientRect();
    const j = Math.floor((ev.clientX - r.left - left) / cell), i = Math.floor((ev.clientY - r.top - top) / cell);
    if (i < 0 || i >= T || j < 0 || j >= S) return;
    s.clicked[i * S + j] = !s.clicked[i * S + j];
    save(); update();
  });
  pic.canvas.addEventListener("keydown", (ev) => {
    const move = {ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1]}[ev.key];
    if (move) {
      cursor.i = Math.min(T - 1, Math.max(0, cursor.i + move[0]));
      cursor.j = Math.min(S - 1, Math.max(0, cursor.j + move[1]));
    } else if (ev.key === "Enter" || ev.key === " ") {
      s.clicked[cursor.i * S + cursor.j] = !s.clicked[cursor.i * S + cursor.j];
      save();
    } else return;
    ev.preventDefault();
    update();
  });
  pic.canvas.addEventListener("focus", update);
  pic.canvas.addEventListener("blur", update);
  attempt(sync);
}

export default { render };
