// qkv-viz in-browser renderer, part 2: chapter 11's generation stepper.
//
// From Python (once): the sentence's token vectors x (T x d_model) and the layer's
// multi-head projections W_q, W_k, W_v (d_model x H d_k). Here, for each change:
// K/V heads = the mean of each group's W_k and W_v columns (qkv_viz.core.kv_cache.
// group_kv_heads), K = x W_k and V = x W_v for the tokens generated so far (the cache),
// q = x_t W_q for the new token only, and query head h reads K/V head h / (H / H_kv):
// weights = softmax(q . k / sqrt(d_k)) over tokens 0..t (no mask needed: the cache holds
// only the past). The rows of earlier steps are what those steps computed: the causal
// matrix fills one row per step.

// (rows x inner) @ (inner x cols) -> rows x cols, all flat and row-major
function matmul(a, b, rows, inner, cols) {
  const out = new Float64Array(rows * cols);
  for (let i = 0; i < rows; i++)
    for (let k = 0; k < inner; k++) {
      const aik = a[i * inner + k];
      for (let j = 0; j < cols; j++) out[i * cols + j] += aik * b[k * cols + j];
    }
  return out;
}

// W (d x H*dh) -> (d x Hkv*dh): K/V head g = mean of heads g*rep .. (g+1)*rep - 1
function groupHeads(W, d, H, Hkv, dh) {
  const rep = H / Hkv, out = new Float64Array(d * Hkv * dh);
  for (let r = 0; r < d; r++)
    for (let g = 0; g < Hkv; g++)
      for (let c = 0; c < dh; c++) {
        let s = 0;
        for (let m = 0; m < rep; m++) s += W[r * H * dh + (g * rep + m) * dh + c];
        out[r * Hkv * dh + g * dh + c] = s / rep;
      }
  return out;
}

// Everything the figure shows for K/V heads Hkv: q (T x H dh), K and V (T x Hkv dh) and the
// causal weights of every head (H x T x T, zero above the diagonal).
function generationState(x, Wq, Wk, Wv, T, d, H, Hkv, dh) {
  const q = matmul(x, Wq, T, d, H * dh);
  const k = matmul(x, groupHeads(Wk, d, H, Hkv, dh), T, d, Hkv * dh);
  const v = matmul(x, groupHeads(Wv, d, H, Hkv, dh), T, d, Hkv * dh);
  const weights = new Float64Array(H * T * T), rep = H / Hkv, scale = 1 / Math.sqrt(dh);
  for (let hh = 0; hh < H; hh++) {
    const g = Math.floor(hh / rep);
    for (let t = 0; t < T; t++) {         // step t: the new query against the cached keys 0..t
      const s = new Float64Array(t + 1);
      for (let j = 0; j <= t; j++) {
        let dot = 0;
        for (let c = 0; c < dh; c++) dot += q[t * H * dh + hh * dh + c] * k[j * Hkv * dh + g * dh + c];
        s[j] = dot * scale;
      }
      const w = softmaxRows(s, 1, t + 1, 1);
      for (let j = 0; j <= t; j++) weights[(hh * T + t) * T + j] = w[j];
    }
  }
  return {q, k, v, weights};
}

// Numbers the cache holds after step t: 2 (K and V) x (t + 1) tokens x Hkv heads x dh
const cacheNumbers = (t, Hkv, dh) => 2 * (t + 1) * Hkv * dh;

// Vertical bar of divColour for -m .. m, ticks at -m, 0, m, and a label.
function drawDivBar(ctx, x, y, w, hgt, m, label) {
  for (let i = 0; i < hgt; i++) {
    ctx.fillStyle = divColour(1 - 2 * (i + 0.5) / hgt);
    ctx.fillRect(x, y + i, w, 1);
  }
  ctx.strokeStyle = "#444";
  ctx.strokeRect(x + 0.5, y + 0.5, w - 1, hgt - 1);
  for (const [v, ty] of [[m, y], [0, y + hgt / 2], [-m, y + hgt]]) {
    ctx.fillStyle = "#444";
    ctx.fillRect(x + w, Math.round(ty), 4, 1);
    text(ctx, v === 0 ? "0" : v.toFixed(1), x + w + 6, ty, {base: "middle", font: SMALL});
  }
  text(ctx, label, x + w + 40, y + hgt / 2, {align: "center", base: "middle", angle: -Math.PI / 2});
}

// blue (negative) - white - red (positive), x on -1..1
function divColour(x) {
  const a = Math.min(1, Math.abs(x)), end = x < 0 ? [33, 102, 172] : [178, 24, 43];
  const c = end.map((e) => Math.round(255 + (e - 255) * a));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function render({model, el}) {
  const T = model.get("T"), d = model.get("d_model"), H = model.get("n_heads"), dh = d / H;
  const tokens = model.get("tokens"), lut = bytesOf(model.get("lut"));
  const x = asF64(model.get("x")), Wq = asF64(model.get("W_q"));
  const Wk = asF64(model.get("W_k")), Wv = asF64(model.get("W_v"));
  const kvChoices = [];
  for (let g = H; g >= 1; g--) if (H % g === 0) kvChoices.push(g);
  const kvName = (g) => (g === H ? "multi-head" : g === 1 ? "multi-query" : "grouped-query");

  const step = rangeInput("qkv-gen-step", 0, T - 1, 1, model.get("step"), "step: the new token");
  const stepOut = h("output", {class: "qkv-gen-token"});
  const next = h("button", {class: "qkv-gen-next", type: "button", text: "next token \u25b6"});
  const head = h("select", {class: "qkv-gen-head", "aria-label": "query head", "data-lm-suppress-shortcuts": "true"},
    Array.from({length: H}, (_, i) => h("option", {value: String(i), text: `head ${i}`})));
  const kv = h("select", {class: "qkv-gen-kv", "aria-label": "K/V heads", "data-lm-suppress-shortcuts": "true"},
    kvChoices.map((g) => h("option", {value: String(g), text: `${g} (${kvName(g)})`})));
  head.value = String(model.get("head"));
  kv.value = String(model.get("n_kv_heads"));
  const readout = h("div", {class: "qkv-gen-readout", role: "status", style: "font-family:monospace;white-space:pre-wrap"});
  const cell = 34, left = 54, top = 34, cw = 11, gap = 5;
  const cacheW = H * dh * cw + (H - 1) * gap;
  const wbar = left + T * cell + 14;                         // the weights' colour bar
  const kx = wbar + 70, vx = kx + cacheW + 36, dbar = vx + cacheW + 24;   // dbar: K, V and q's colour bar
  const pic = makeCanvas("qkv-gen-map", dbar + 80, top + T * cell + 92);
  el.append(h("div", {class: "qkv-figure qkv-generation"}, [
    h("div", {class: "qkv-row"}, [labelled("step: the new token", step), stepOut, next]),
    h("div", {class: "qkv-row"}, [labelled("query head", head), labelled("K/V heads", kv)]),
    pic.canvas, readout,
    h("div", {class: "qkv-hint", text: "Step through the sentence: each step adds one row to the K and V caches "
      + "and one row of weights (the new query's). Fewer K/V heads: the caches get narrower; each colour "
      + "block is one K/V head, shared by the query heads of its group."})]));
  const s = {step: Number(step.value), head: Number(head.value), kv: Number(kv.value)};
  let state = generationState(x, Wq, Wk, Wv, T, d, H, s.kv, dh);

  function drawCache(ctx, values, x0, label, t, Hkv, maxAbs) {
    text(ctx, label, x0, top - 10, {font: BOLD});
    for (let i = 0; i < T; i++) {
      const y = top + i * cell + 4;
      for (let g = 0; g < H; g++)
        for (let c = 0; c < dh; c++) {
          const cx = x0 + g * (dh * cw + gap) + c * cw;
          if (g >= Hkv || i > t) {          // not held: an empty outline
            ctx.strokeStyle = "#e2e2e2";
            ctx.strokeRect(cx + 0.5, y + 0.5, cw - 1, cell - 9);
            continue;
          }
          ctx.fillStyle = divColour(values[i * Hkv * dh + g * dh + c] / maxAbs);
          ctx.fillRect(cx, y, cw - 1, cell - 8);
        }
      if (i === t) {                          // the row this step appended
        ctx.strokeStyle = "#d55e00"; ctx.lineWidth = 2;
        ctx.strokeRect(x0 - 2, y - 2, Hkv * (dh * cw + gap) - gap + 3, cell - 4);
        ctx.lineWidth = 1;
      }
    }
  }

  function update() {
    const {ctx, width, height} = pic, t = s.step, hd = s.head, Hkv = s.kv, rep = H / Hkv;
    ctx.clearRect(0, 0, width, height);
    // the causal matrix of head hd: rows 0..t filled (each by its own step), row t outlined
    text(ctx, `weights, head ${hd}`, left, top - 10, {font: BOLD});
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const cx = left + j * cell, cy = top + i * cell;
        if (j > i) { ctx.fillStyle = "#f4f4f4"; ctx.fillRect(cx, cy, cell - 1, cell - 1); continue; }
        if (i > t) { ctx.strokeStyle = "#d0d0d0"; ctx.strokeRect(cx + 0.5, cy + 0.5, cell - 2, cell - 2); continue; }
        const w = state.weights[(hd * T + i) * T + j];
        ctx.fillStyle = lutColour(lut, w);
        ctx.fillRect(cx, cy, cell - 1, cell - 1);
        text(ctx, w.toFixed(2), cx + cell / 2, cy + cell / 2, {align: "center", base: "middle", font: SMALL,
             colour: w > 0.6 ? "#000" : "#fff"});
      }
      text(ctx, tokens[i], left - 6, top + (i + 0.5) * cell, {align: "right", base: "middle",
           font: i === t ? BOLD : FONT, colour: i > t ? "#aaa" : "#222"});
    }
    ctx.strokeStyle = "#d55e00"; ctx.lineWidth = 2;
    ctx.strokeRect(left - 1, top + t * cell - 1, (t + 1) * cell + 1, cell + 1);
    ctx.lineWidth = 1;
    tokens.forEach((w, j) => text(ctx, w, left + (j + 0.5) * cell, top + T * cell + 8,
                                  {align: "right", base: "middle", angle: -Math.PI / 4, colour: j > t ? "#aaa" : "#222"}));
    text(ctx, "query (row) \u00d7 key (column)", left, top + T * cell + 52, {font: SMALL, colour: "#555"});
    drawColourBar(ctx, lut, wbar, top, 12, T * cell, "attention weight");
    // the caches and the new query
    let maxAbs = 1e-12;
    for (const a of [state.k, state.v, state.q]) for (const val of a) maxAbs = Math.max(maxAbs, Math.abs(val));
    maxAbs *= 0.6;                          // stronger colours; the largest entries saturate
    drawCache(ctx, state.k, kx, `K cache (${Hkv} head${Hkv > 1 ? "s" : ""} \u00d7 ${dh})`, t, Hkv, maxAbs);
    drawDivBar(ctx, dbar, top, 12, T * cell, maxAbs, "entries of K, V, q");
    drawCache(ctx, state.v, vx, `V cache (${Hkv} head${Hkv > 1 ? "s" : ""} \u00d7 ${dh})`, t, Hkv, maxAbs);
    const qy = top + T * cell + 26, g = Math.floor(hd / rep);
    text(ctx, `q of "${tokens[t]}" (all ${H} query heads; used this step only, never cached)`, kx, qy - 6, {font: SMALL});
    for (let hh = 0; hh < H; hh++)
      for (let c = 0; c < dh; c++) {
        ctx.fillStyle = divColour(state.q[t * H * dh + hh * dh + c] / maxAbs);
        ctx.fillRect(kx + hh * (dh * cw + gap) + c * cw, qy, cw - 1, 18);
      }
    ctx.strokeStyle = "#222";
    ctx.strokeRect(kx + hd * (dh * cw + gap) - 1.5, qy - 1.5, dh * cw + 2, 21);
    ctx.strokeRect(kx + g * (dh * cw + gap) - 1.5, top + 1.5, dh * cw + 2, (t + 1) * cell - 2);
    text(ctx, `head ${hd} reads K/V head ${g}`, kx, qy + 36, {font: SMALL, colour: "#555"});
    // readouts
    const row = Array.from(state.weights.subarray((hd * T + t) * T, (hd * T + t) * T + t + 1));
    const n = cacheNumbers(t, Hkv, dh), full = cacheNumbers(t, H, dh);
    stepOut.textContent = `${t}: "${tokens[t]}"`;
    next.textContent = t === T - 1 ? "start again \u21ba" : "next token \u25b6";
    readout.textContent =
      `step ${t}: the new token is "${tokens[t]}"; its query (head ${hd}) meets the keys of ${t ? `tokens 0..${t}` : "token 0"}\n`
      + `weights: ${row.map((w, j) => `${tokens[j]} ${w.toFixed(3)}`).join(", ")}\n`
      + `cache: 2 (K and V) \u00d7 ${t + 1} token${t ? "s" : ""} \u00d7 ${Hkv} K/V head${Hkv > 1 ? "s" : ""} \u00d7 ${dh} = ${n} numbers`
      + (Hkv < H ? ` (multi-head attention: ${full}, ${rep}\u00d7 more)` : "");
    el.qkv = {settings: {step: t, head: hd, n_kv_heads: Hkv}, weights: new Float64Array(row), cache_numbers: n,
              k_cache: state.k.slice(0, (t + 1) * Hkv * dh)};
  }

  function save() {
    model.set("step", s.step); model.set("head", s.head); model.set("n_kv_heads", s.kv);
    model.save_changes();
  }
  step.addEventListener("input", () => { s.step = Number(step.value); save(); update(); });
  next.addEventListener("click", () => {
    s.step = (s.step + 1) % T; step.value = String(s.step); save(); update();
  });
  head.addEventListener("change", () => { s.head = Number(head.value); save(); update(); });
  kv.addEventListener("change", () => {
    s.kv = Number(kv.value);
    state = generationState(x, Wq, Wk, Wv, T, d, H, s.kv, dh);
    save(); update();
  });
  update();
}

export default { render };
