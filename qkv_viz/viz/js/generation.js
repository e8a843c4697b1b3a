// qkv-viz in-browser renderer, part 2: chapter 11's generation stepper.
//
// From Python (once): the embeddings E (V x d_model) and the layer's multi-head projections
// W_q, W_k, W_v (d_model x H d_k), W_o (H d_k x d_model), the prompt's word ids and the stop
// word. Here, for each K/V-heads setting, the generation loop itself: K/V heads = the mean of
// each group's W_k and W_v columns (qkv_viz.core.kv_cache.group_kv_heads); step t projects
// token t only (q, and one new row of the K and V caches), query head h reads K/V head
// h / (H / H_kv): weights = softmax(q . k / sqrt(d_k)) over tokens 0..t (no mask: the cache
// holds only the past); output = heads @ W_o; logits = output @ E^T; after the prompt the
// argmax is appended and fed back (qkv_viz.chapters.ch11_generation.generation.write).
// Python may set step, head and n_kv_heads (fig.step = 4): sync() moves the controls and redraws.

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

// The whole generation for K/V heads Hkv: word ids (T), q (T x H dh), the caches K and V
// (T x Hkv dh), every head's causal weights (H x T x T, row t = step t's) and logits (T x V).
function generationState(E, Wq, Wk, Wv, Wo, nv, d, H, Hkv, dh, prompt, stop, maxTokens) {
  const Wkg = groupHeads(Wk, d, H, Hkv, dh), Wvg = groupHeads(Wv, d, H, Hkv, dh);
  const ids = prompt.slice(), qs = [], ks = [], vs = [], rows = [], logits = [];
  const rep = H / Hkv, scale = 1 / Math.sqrt(dh);
  for (let t = 0; t < maxTokens && t < ids.length; t++) {
    const x = E.subarray(ids[t] * d, (ids[t] + 1) * d);
    const q = matmul(x, Wq, 1, d, H * dh);                 // (1, d) @ (d, H dh): this step only
    ks.push(matmul(x, Wkg, 1, d, Hkv * dh));                // the caches grow by one row each
    vs.push(matmul(x, Wvg, 1, d, Hkv * dh));
    qs.push(q);
    const heads = new Float64Array(H * dh), wrow = [];
    for (let hh = 0; hh < H; hh++) {
      const g = Math.floor(hh / rep), s = new Float64Array(t + 1);
      for (let j = 0; j <= t; j++) {
        let dot = 0;
        for (let c = 0; c < dh; c++) dot += q[hh * dh + c] * ks[j][g * dh + c];
        s[j] = dot * scale;
      }
      const w = softmaxRows(s, 1, t + 1, 1);
      for (let j = 0; j <= t; j++)
        for (let c = 0; c < dh; c++) heads[hh * dh + c] += w[j] * vs[j][g * dh + c];
      wrow.push(w);
    }
    rows.push(wrow);
    const out = matmul(heads, Wo, 1, H * dh, d);            // (1, H dh) @ (H dh, d)
    const lg = matmul(out, transpose(E, nv, d), 1, d, nv);  // (1, d) @ (d, V): one score per word
    logits.push(lg);
    if (t === ids.length - 1 && ids[t] !== stop && ids.length < maxTokens) {
      let best = 0;
      for (let i = 1; i < nv; i++) if (lg[i] > lg[best]) best = i;
      ids.push(best);                                       // the chosen word is the next input
    }
  }
  const T = ids.length, weights = new Float64Array(H * T * T);
  rows.forEach((wrow, t) => wrow.forEach((w, hh) => w.forEach((val, j) => { weights[(hh * T + t) * T + j] = val; })));
  const flat = (list, n) => { const a = new Float64Array(list.length * n); list.forEach((r, i) => a.set(r, i * n)); return a; };
  return {ids, T, q: flat(qs, H * dh), k: flat(ks, Hkv * dh), v: flat(vs, Hkv * dh), weights, logits: flat(logits, nv)};
}

function transpose(a, rows, cols) {
  const out = new Float64Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) out[j * rows + i] = a[i * cols + j];
  return out;
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

const BIG = "13px sans-serif", BIG_BOLD = "bold 13px sans-serif";   // the logits block: read at a glance
const LATER = "#767676";   // text of what this step does not hold yet: grey, still 4.5:1 on white
const CHOICE = "#A04000";  // the chosen word's text: the query's orange, darker (>= 4.5:1 on white)

// a short number for a cell: 1, -2, .5
const short = (v) => (Math.abs(v - Math.round(v)) < 1e-9 ? String(Math.round(v)) : v.toFixed(1).replace(/^(-?)0\./, "$1."));

function render({model, el}) {
  const d = model.get("d_model"), H = model.get("n_heads");
  const vocab = model.get("vocab"), nv = vocab.length, lut = bytesOf(model.get("lut"));
  const E = asF64(model.get("E")), Wq = asF64(model.get("W_q")), Wk = asF64(model.get("W_k"));
  const dh = Wq.length / (d * H);                            // d_k: W_q is d_model x H d_k
  const Wv = asF64(model.get("W_v")), Wo = asF64(model.get("W_o"));
  const prompt = model.get("prompt"), stop = model.get("stop"), maxTokens = model.get("max_tokens");
  const kvChoices = [];
  for (let g = H; g >= 1; g--) if (H % g === 0) kvChoices.push(g);
  const kvName = (g) => (g === H ? "multi-head" : g === 1 ? "multi-query" : "grouped-query");
  const states = {};
  for (const g of kvChoices) states[g] = generationState(E, Wq, Wk, Wv, Wo, nv, d, H, g, dh, prompt, stop, maxTokens);
  const Tmax = Math.max(...kvChoices.map((g) => states[g].T));
  const colName = (c) => (d === nv ? vocab[c] : String(c));   // one-hot embeddings: dimension c = word c

  const step = rangeInput("qkv-gen-step", 0, Tmax - 1, 1, model.get("step"), "step: the new token");
  const stepOut = h("output", {class: "qkv-gen-token"});
  const next = h("button", {class: "qkv-gen-next", type: "button", text: "next token \u25b6",
                            "data-lm-suppress-shortcuts": "true"});
  const head = h("select", {class: "qkv-gen-head", "aria-label": "query head", "data-lm-suppress-shortcuts": "true"},
    Array.from({length: H}, (_, i) => h("option", {value: String(i), text: `head ${i}`})));
  const kv = h("select", {class: "qkv-gen-kv", "aria-label": "K/V heads", "data-lm-suppress-shortcuts": "true"},
    kvChoices.map((g) => h("option", {value: String(g), text: `${g} (${kvName(g)})`})));
  head.value = String(model.get("head"));
  kv.value = String(model.get("n_kv_heads"));
  const readout = h("div", {class: "qkv-gen-readout", role: "status", style: "font-family:monospace;white-space:pre-wrap"});
  const message = h("div", {class: "qkv-message", role: "status"});
  const cell = 32, left = 62, top = 50, cw = 28, gap = 8, rowH = 32;   // cw: a 12 px "-4.5" fits
  const block = dh * cw, cacheW = H * block + (H - 1) * gap;
  const wbar = left + Tmax * cell + 12;                       // the weights' colour bar
  const kx = wbar + 70, vx = kx + cacheW + 20, dbar = vx + cacheW + 14;
  const cacheBottom = top + Tmax * rowH;
  const pic = makeCanvas("qkv-gen-map", dbar + 64, Math.max(top + Tmax * cell + 150, cacheBottom + 130));
  el.append(h("div", {class: "qkv-figure qkv-generation"}, [
    h("div", {class: "qkv-row"}, [labelled("step: the new token", step), stepOut, next]),
    h("div", {class: "qkv-row"}, [labelled("query head", head), labelled("K/V heads", kv)]),
    message, pic.canvas, readout,
    h("div", {class: "qkv-hint", text: "Each step projects only the new token: its query (used once), one new row "
      + "of K and of V. Its output's logits choose the next word, which becomes the next step's token. "
      + "Set K/V heads to 1: both query heads then read one averaged K/V head."})]));
  const s = {step: model.get("step"), head: model.get("head"), kv: model.get("n_kv_heads")};  // checked by sync()

  function drawCache(ctx, values, x0, label, t, T, Hkv, maxAbs) {
    text(ctx, label, x0, top - 34, {font: BOLD});
    for (let g = 0; g < H; g++) {
      const bx = x0 + g * (block + gap);
      text(ctx, g < Hkv ? `K/V head ${g}` : "(not kept)", bx + block / 2, top - 12,
           {align: "center", font: SMALL, colour: g < Hkv ? "#222" : LATER});
      for (let c = 0; c < dh; c++)
        text(ctx, colName(c), bx + (c + 0.5) * cw, cacheBottom + 6, {align: "right", base: "middle",
             angle: -Math.PI / 2, font: SMALL, colour: g < Hkv ? "#444" : LATER});
    }
    for (let i = 0; i < Tmax; i++) {
      const y = top + i * rowH;
      for (let g = 0; g < H; g++)
        for (let c = 0; c < dh; c++) {
          const cx = x0 + g * (block + gap) + c * cw;
          if (g >= Hkv || i > t || i >= T) {            // not held: an empty outline
            ctx.strokeStyle = "#e6e6e6";
            ctx.strokeRect(cx + 0.5, y + 0.5, cw - 1, rowH - 3);
            continue;
          }
          const val = values[i * Hkv * dh + g * dh + c];
          ctx.fillStyle = divColour(val / maxAbs);
          ctx.fillRect(cx, y, cw - 1, rowH - 2);
          if (Math.abs(val) > 1e-9)
            text(ctx, short(val), cx + cw / 2, y + rowH / 2, {align: "center", base: "middle", font: FONT,
                 colour: Math.abs(val) / maxAbs > 0.6 ? "#fff" : "#000"});
        }
      if (i === t) {                                  // the row this step appended
        ctx.strokeStyle = "#d55e00"; ctx.lineWidth = 2.5;
        ctx.strokeRect(x0 - 2, y - 2, Hkv * (block + gap) - gap + 3, rowH + 2);
        ctx.lineWidth = 1;
      }
    }
  }

  function update() {
    const st = states[s.kv], T = st.T;
    if (s.step > T - 1) { s.step = T - 1; step.value = String(s.step); }
    const {ctx, width, height} = pic, t = s.step, hd = s.head, Hkv = s.kv, rep = H / Hkv;
    const words = st.ids.map((i) => vocab[i]);
    ctx.clearRect(0, 0, width, height);
    // the causal matrix of head hd: rows 0..t filled (each by its own step), row t outlined
    text(ctx, `weights, head ${hd}`, left, top - 34, {font: BOLD});
    text(ctx, "key \u2192", left, top - 12, {font: SMALL, colour: "#555"});
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        const cx = left + j * cell, cy = top + i * cell;
        if (j > i) { ctx.fillStyle = "#f4f4f4"; ctx.fillRect(cx, cy, cell - 1, cell - 1); continue; }
        if (i > t) { ctx.strokeStyle = "#d0d0d0"; ctx.strokeRect(cx + 0.5, cy + 0.5, cell - 2, cell - 2); continue; }
        const w = st.weights[(hd * T + i) * T + j];
        ctx.fillStyle = lutColour(lut, w);
        ctx.fillRect(cx, cy, cell - 1, cell - 1);
        text(ctx, w.toFixed(2), cx + cell / 2, cy + cell / 2, {align: "center", base: "middle", font: FONT,
             colour: w > 0.6 ? "#000" : "#fff"});
      }
      text(ctx, `${i} ${words[i]}`, left - 6, top + (i + 0.5) * cell, {align: "right", base: "middle",
           font: i === t ? BOLD : FONT, colour: i > t ? LATER : "#222"});
    }
    ctx.strokeStyle = "#d55e00"; ctx.lineWidth = 2.5;
    ctx.strokeRect(left - 1, top + t * cell - 1, (t + 1) * cell + 1, cell + 1);
    ctx.lineWidth = 1;
    words.forEach((w, j) => text(ctx, w, left + (j + 0.5) * cell, top + T * cell + 8,
                                 {align: "right", base: "middle", angle: -Math.PI / 4, colour: j > t ? LATER : "#222"}));
    drawColourBar(ctx, lut, wbar, top, 12, T * cell, "weights");
    // the new token's logits and the choice they make
    const lg = st.logits.subarray(t * nv, (t + 1) * nv);
    let best = 0;
    for (let i = 1; i < nv; i++) if (lg[i] > lg[best]) best = i;
    const ly = top + T * cell + 62;
    text(ctx, `logits for the next token (output \u00b7 E\u1d40):`, left - 50, ly, {font: BIG});
    vocab.forEach((w, i) => {
      const bx = left - 50 + i * 46;
      text(ctx, w, bx, ly + 20, {font: i === best ? BIG_BOLD : BIG});
      text(ctx, lg[i].toFixed(2), bx, ly + 38, {font: i === best ? BIG_BOLD : BIG, colour: i === best ? CHOICE : "#222"});
    });
    text(ctx, t >= T - 1 ? `"${words[t]}" ends the sentence`
         : t < prompt.length - 1 ? `(prompt: token ${t + 1} is given, "${words[t + 1]}")`
         : `largest logit \u2192 token ${t + 1} is "${words[t + 1]}"`,
         left - 50, ly + 60, {font: BIG_BOLD, colour: CHOICE});
    // the caches and the new query
    // one colour scale with the still (figures.plot_generation_step): the largest |entry| of the
    // K and V rows cached so far (tokens 0..t); a larger q entry gets the end colour, its number written
    let maxAbs = 1e-12;
    for (const a of [st.k, st.v]) for (const val of a.subarray(0, (t + 1) * Hkv * dh)) maxAbs = Math.max(maxAbs, Math.abs(val));
    const kvLabel = `(${Hkv} K/V head${Hkv > 1 ? "s" : ""} \u00d7 ${dh})`;
    drawCache(ctx, st.k, kx, `K cache ${kvLabel}`, t, T, Hkv, maxAbs);
    drawCache(ctx, st.v, vx, `V cache ${kvLabel}`, t, T, Hkv, maxAbs);
    drawDivBar(ctx, dbar, top, 12, Tmax * rowH, maxAbs, "entries of K, V");
    const qy = cacheBottom + 64, g = Math.floor(hd / rep);
    text(ctx, `q of "${words[t]}" (${H} query heads; used this step only, never cached)`, kx, qy - 6, {font: SMALL});
    for (let hh = 0; hh < H; hh++)
      for (let c = 0; c < dh; c++) {
        const val = st.q[t * H * dh + hh * dh + c], cx = kx + hh * (block + gap) + c * cw;
        ctx.fillStyle = divColour(val / maxAbs);
        ctx.fillRect(cx, qy, cw - 1, 20);
        if (Math.abs(val) > 1e-9) text(ctx, short(val), cx + cw / 2, qy + 10, {align: "center", base: "middle",
             font: FONT, colour: Math.abs(val) / maxAbs > 0.6 ? "#fff" : "#000"});
      }
    ctx.strokeStyle = "#222";
    ctx.strokeRect(kx + hd * (block + gap) - 1.5, qy - 1.5, block + 2, 23);
    ctx.strokeRect(kx + g * (block + gap) - 1.5, top - 1.5, block + 2, (t + 1) * rowH + 1);
    text(ctx, `query head ${hd} reads K/V head ${g} (outlined)`, kx, qy + 40, {font: SMALL, colour: "#555"});
    // readouts
    const row = Array.from(st.weights.subarray((hd * T + t) * T, (hd * T + t) * T + t + 1));
    const n = cacheNumbers(t, Hkv, dh), full = cacheNumbers(t, H, dh);
    stepOut.textContent = `${t}: "${words[t]}"`;
    next.textContent = t === T - 1 ? "start again \u21ba" : "next token \u25b6";
    readout.textContent =
      `sentence: ${words.map((w, i) => (i === t ? `[${w}]` : w)).join(" ")}\n`
      + `step ${t}${t < prompt.length ? " (prompt: prefill)" : ""}: the query of "${words[t]}" (head ${hd}) meets the keys of ${t ? `tokens 0..${t}` : "token 0"}\n`
      + `weights: ${row.map((w, j) => `${words[j]} ${w.toFixed(3)}`).join(", ")}\n`
      + `cache: 2 (K and V) \u00d7 ${t + 1} token${t ? "s" : ""} \u00d7 ${Hkv} K/V head${Hkv > 1 ? "s" : ""} \u00d7 ${dh} = ${n} numbers`
      + (Hkv < H ? ` (multi-head attention: ${full}, ${rep}\u00d7 more)` : "");
    step.setAttribute("aria-valuetext", `step ${t}: "${words[t]}"`);
    let top1 = 0;
    row.forEach((w, j) => { if (w > row[top1]) top1 = j; });
    const said = t >= T - 1 ? `"${words[t]}" ends the sentence`
      : t < prompt.length - 1 ? `The prompt gives token ${t + 1}, "${words[t + 1]}"`
      : `Its logits choose "${words[t + 1]}" (${lg[best].toFixed(2)}) as token ${t + 1}`;
    describe(pic.canvas, `step ${t}: ${t < prompt.length ? "prompt token" : "generated"} "${words[t]}", ` +
      `cache holds ${t + 1} key${t ? "s" : ""} and ${t + 1} value${t ? "s" : ""} per K/V head (${Hkv} K/V head${Hkv > 1 ? "s" : ""}, ` +
      `${n} numbers). Head ${hd}'s weights for "${words[t]}": most on "${words[top1]}" (${row[top1].toFixed(2)}); ` +
      row.map((w, j) => `${words[j]} ${w.toFixed(2)}`).join(", ") + `. ${said}.`);
    el.qkv = {settings: {step: t, head: hd, n_kv_heads: Hkv}, words, weights: new Float64Array(row),
              logits: new Float64Array(lg), cache_numbers: n, k_cache: st.k.slice(0, (t + 1) * Hkv * dh)};
  }

  const TRAITS = [["step", "step"], ["head", "head"], ["n_kv_heads", "kv"]];
  const send = linkTraits(model, [...TRAITS.map(([name]) => name), "error"], () => attempt(sync));
  const save = () => send(Object.fromEntries(TRAITS.map(([name, key]) => [name, s[key]])));
  const attempt = attempter(message, () => { update(); save(); }, {model});
  // The traits into the controls (checked first: a value the page cannot show changes nothing).
  function sync() {
    const [t, hd, g] = TRAITS.map(([name]) => model.get(name));
    if (!kvChoices.includes(g)) throw new Error(`n_kv_heads must be one of ${kvChoices.join(", ")}, got ${g}`);
    if (!Number.isInteger(hd) || hd < 0 || hd >= H) throw new Error(`head must be 0..${H - 1}, got ${hd}`);
    const T = states[g].T, tt = g !== s.kv && Number.isInteger(t) ? Math.min(t, T - 1) : t;  // a shorter sentence: its last token
    if (!Number.isInteger(tt) || tt < 0 || tt >= T) throw new Error(`step must be 0..${T - 1}, got ${t}`);
    Object.assign(s, {step: tt, head: hd, kv: g});
    [step.value, head.value, kv.value] = [String(tt), String(hd), String(g)];
  }
  step.addEventListener("input", () => attempt(() => { s.step = Number(step.value); }));
  next.addEventListener("click", () => attempt(() => { s.step = (s.step + 1) % states[s.kv].T; step.value = String(s.step); }));
  head.addEventListener("change", () => attempt(() => { s.head = Number(head.value); }));
  kv.addEventListener("change", () => attempt(() => { s.kv = Number(kv.value); }));
  attempt(sync);
}

export default { render };
