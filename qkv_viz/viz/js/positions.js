// qkv-viz in-browser renderer, part 2: chapter 10's rotary positions (RoPE) figure.
//
// From Python (once): a query q and a key k (64 numbers each; the first d_k are used).
// Here, for every slider step, with the formulas of qkv_viz/core/positions.py (adjacent
// pairing): theta_i = base^(-2i/d_k); q turned to position m and k to position n, pair
// (2i, 2i+1) by the angle m * theta_i (apply_rope); their dot product q_m . k_n (rope_dot);
// the same number from the offset n - m alone (rope_dots_by_offset); the picture.
// Python may set m, n, d_k, base, pair and lock (fig.m = 3): sync() moves the controls and
// redraws; the lock moves n with m only for the sliders.

const ROPE_D_KS = [2, 4, 8, 16, 32, 64];
const ROPE_BASES = [10, 100, 1000, 10000, 100000, 1000000];
const LABEL = "13px sans-serif", LABEL_BOLD = "bold 13px sans-serif";   // this figure's text: >= 12 px

function ropeFrequencies(dK, base) {            // (dK/2): theta_i = base^(-2i/dK)
  const theta = new Float64Array(dK / 2);
  for (let i = 0; i < dK / 2; i++) theta[i] = base ** (-(2 * i) / dK);
  return theta;
}

function ropeRotate(x, pos, dK, base) {        // x's first dK entries turned to position pos
  const theta = ropeFrequencies(dK, base), out = new Float64Array(dK);
  for (let i = 0; i < dK / 2; i++) {
    const c = Math.cos(pos * theta[i]), s = Math.sin(pos * theta[i]);
    const a = x[2 * i], b = x[2 * i + 1];
    out[2 * i] = a * c - b * s;
    out[2 * i + 1] = a * s + b * c;
  }
  return out;
}

function dotFirst(a, b, n) {
  let s = 0;
  for (let i = 0; i < n; i++) s += a[i] * b[i];
  return s;
}

function ropeDot(q, k, m, n, dK, base) {       // q_m . k_n, both vectors turned
  return dotFirst(ropeRotate(q, m, dK, base), ropeRotate(k, n, dK, base), dK);
}

function ropeDotsByOffset(q, k, offsets, dK, base) {   // q_0 . k_d for each d: from the offset alone
  const theta = ropeFrequencies(dK, base), out = new Float64Array(offsets.length);
  offsets.forEach((d, j) => {
    let s = 0;
    for (let i = 0; i < dK / 2; i++) {
      const a = 2 * i, b = a + 1;
      const dot = q[a] * k[a] + q[b] * k[b], cross = q[a] * k[b] - q[b] * k[a];
      s += Math.cos(d * theta[i]) * dot - Math.sin(d * theta[i]) * cross;
    }
    out[j] = s;
  });
  return out;
}

function render({model, el}) {
  const q = asF64(model.get("q")), k = asF64(model.get("k"));
  const tMax = model.get("t_max");
  const s = {m: model.get("m"), n: model.get("n"), dK: model.get("d_k"), base: model.get("base"),
             pair: model.get("pair"), lock: model.get("lock")};          // checked by sync()
  const slider = (cls, max, value, label) => rangeInput(cls, 0, max, 1, value, label);
  const mSlider = slider("qkv-rope-m", tMax - 1, s.m, "query position m");
  const nSlider = slider("qkv-rope-n", tMax - 1, s.n, "key position n");
  const dkSlider = slider("qkv-rope-dk", ROPE_D_KS.length - 1, Math.max(0, ROPE_D_KS.indexOf(s.dK)), "d_k");
  const baseSlider = slider("qkv-rope-base", ROPE_BASES.length - 1, Math.max(0, ROPE_BASES.indexOf(s.base)), "base");
  const pairSlider = slider("qkv-rope-pair", s.dK / 2 - 1, s.pair, "pair drawn");
  const lock = checkbox("qkv-rope-lock", s.lock);
  const out = (cls) => h("output", {class: cls});
  const [mOut, nOut, dkOut, baseOut, pairOut] = ["qkv-rope-m-value", "qkv-rope-n-value", "qkv-rope-dk-value",
                                                  "qkv-rope-base-value", "qkv-rope-pair-value"].map(out);
  const message = h("div", {class: "qkv-message", role: "status"});
  const table = h("table", {class: "qkv-readouts qkv-rope-readouts", "aria-live": "polite"});
  const cells = Array.from({length: 5}, () => [h("th", {scope: "row"}), h("td")]);   // updated in place
  table.append(...cells.map((c) => h("tr", {}, c)));
  const plane = makeCanvas("qkv-rope-plane", 300, 360);
  const curve = makeCanvas("qkv-rope-curve", 440, 240);
  const parts = makeCanvas("qkv-rope-parts", 440, 150);
  const labelledOut = (text, control, output) => h("label", {class: "qkv-control"}, [h("span", {text}), control, output]);
  const root = h("div", {class: "qkv-figure qkv-rope"}, [
    h("div", {class: "qkv-row"}, [labelledOut("query position m", mSlider, mOut), labelledOut("key position n", nSlider, nOut),
                                  tickLabel("keep n \u2212 m fixed", lock)]),
    h("div", {class: "qkv-row"}, [labelledOut("d_k", dkSlider, dkOut), labelledOut("base", baseSlider, baseOut),
                                  labelledOut("pair drawn", pairSlider, pairOut)]),
    message,
    h("div", {class: "qkv-row qkv-top"}, [plane.canvas, h("div", {class: "qkv-side"}, [curve.canvas, parts.canvas, table])])]);
  el.append(root);

  function arrow(ctx, x0, y0, x1, y1, colour, width, dashed) {
    ctx.save();
    ctx.strokeStyle = colour; ctx.fillStyle = colour; ctx.lineWidth = width;
    ctx.globalAlpha = dashed ? 0.4 : 1;
    if (dashed) ctx.setLineDash([4, 3]);
    ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
    ctx.setLineDash([]);
    const a = Math.atan2(y1 - y0, x1 - x0), L = 9;
    ctx.beginPath(); ctx.moveTo(x1, y1);
    ctx.lineTo(x1 - L * Math.cos(a - 0.4), y1 - L * Math.sin(a - 0.4));
    ctx.lineTo(x1 - L * Math.cos(a + 0.4), y1 - L * Math.sin(a + 0.4));
    ctx.closePath(); ctx.fill();
    ctx.restore();
  }

  function drawPlane(r) {                 // labels in darker q / k hues: >= 4.5:1 on white
    const {ctx, width, height} = plane, cx = width / 2, cy = height / 2 + 30;
    ctx.clearRect(0, 0, width, height);
    const a = 2 * s.pair, b = a + 1;
    const radius = Math.max(Math.hypot(q[a], q[b]), Math.hypot(k[a], k[b]), 1e-12);
    const px = 100 / radius;
    ctx.strokeStyle = "#ccc"; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(cx - 130, cy); ctx.lineTo(cx + 130, cy); ctx.moveTo(cx, cy - 130); ctx.lineTo(cx, cy + 130); ctx.stroke();
    for (const [vec, colour] of [[[q[a], q[b]], "#D55E00"], [[k[a], k[b]], "#0072B2"]]) {
      ctx.strokeStyle = "#ddd"; ctx.setLineDash([2, 3]);
      ctx.beginPath(); ctx.arc(cx, cy, Math.hypot(...vec) * px, 0, 2 * Math.PI); ctx.stroke(); ctx.setLineDash([]);
      arrow(ctx, cx, cy, cx + vec[0] * px, cy - vec[1] * px, colour, 1, true);
    }
    const qm = [r.qm[a], r.qm[b]], kn = [r.kn[a], r.kn[b]];
    arrow(ctx, cx, cy, cx + qm[0] * px, cy - qm[1] * px, "#D55E00", 2.5, false);
    arrow(ctx, cx, cy, cx + kn[0] * px, cy - kn[1] * px, "#0072B2", 2.5, false);
    const aq = Math.atan2(qm[1], qm[0]), ak = Math.atan2(kn[1], kn[0]);
    let between = (ak - aq) * 180 / Math.PI;            // from q to k, wrapped to -180..180
    between = ((between % 360) + 540) % 360 - 180;
    // labels 20 px past the arrowheads, along the arrows, pushed apart when the arrows are close
    const spread = Math.max(0, (0.9 - Math.abs(between) * Math.PI / 180) / 2) * (between >= 0 ? 1 : -1);
    const label = (str, v, angle, colour) => {
      const dist = Math.hypot(...v) * px + 20;
      text(ctx, str, cx + dist * Math.cos(angle), cy - dist * Math.sin(angle), {colour, font: LABEL_BOLD, align: "center", base: "middle"});
    };
    label(`q at ${s.m}`, qm, aq - spread, "#A04000");
    label(`k at ${s.n}`, kn, ak + spread, "#005A8C");
    ctx.strokeStyle = "#444"; ctx.lineWidth = 1;        // the screen's y points down: angles flip
    ctx.beginPath(); ctx.arc(cx, cy, 28, -aq, -aq - between * Math.PI / 180, between > 0); ctx.stroke();
    text(ctx, `pair ${s.pair} (coordinates ${a}, ${b})`, 6, 16, {font: LABEL_BOLD});
    text(ctx, `\u03b8 = ${fmt(r.theta[s.pair])} rad per position`, 6, 34, {font: LABEL});
    text(ctx, `angle from q to k: ${between.toFixed(1)}\u00b0`, 6, 52, {font: LABEL});
    text(ctx, "dashed: both at position 0", 6, 70, {font: LABEL, colour: "#555"});
    r.angle = between;
    describe(plane.canvas, `pair ${s.pair} (coordinates ${a}, ${b}) of q at position ${s.m} and k at position ${s.n}, ` +
      `each turned by its position \u00d7 \u03b8 = ${fmt(r.theta[s.pair])} rad: the angle from q to k is ` +
      `${between.toFixed(1)} degrees; this pair's part of q_m \u00b7 k_n is ${r.pairDot.toFixed(3)}.`);
  }

  function drawCurve(r) {
    const {ctx, width, height} = curve;
    ctx.clearRect(0, 0, width, height);
    const box = {x: 52, y: 26, w: width - 66, h: height - 64};
    const bound = Math.sqrt(dotFirst(q, q, s.dK) * dotFirst(k, k, s.dK)) || 1;
    const xOf = (d) => box.x + (d + tMax - 1) / (2 * tMax - 2) * box.w;
    const yOf = (v) => box.y + box.h * (bound - v) / (2 * bound);
    text(ctx, "q_m \u00b7 k_n against the offset n \u2212 m", box.x - 40, 15, {font: LABEL_BOLD});
    ctx.strokeStyle = "#bbb"; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(box.x, yOf(0)); ctx.lineTo(box.x + box.w, yOf(0)); ctx.moveTo(xOf(0), box.y); ctx.lineTo(xOf(0), box.y + box.h); ctx.stroke();
    ctx.strokeStyle = "#555"; ctx.lineWidth = 1.5;
    ctx.beginPath();
    r.offsets.forEach((d, j) => (j ? ctx.lineTo(xOf(d), yOf(r.curve[j])) : ctx.moveTo(xOf(d), yOf(r.curve[j]))));
    ctx.stroke();
    yAxis(ctx, box, yOf, [-bound, 0, bound], fmt, LABEL);
    for (const d of [-(tMax - 1), 0, tMax - 1]) text(ctx, String(d), xOf(d), box.y + box.h + 15, {align: "center", font: LABEL});
    text(ctx, "offset n \u2212 m", box.x + box.w / 2, box.y + box.h + 32, {align: "center", font: LABEL});
    ctx.fillStyle = "#D55E00";
    ctx.beginPath(); ctx.arc(xOf(s.n - s.m), yOf(r.dot), 5, 0, 2 * Math.PI); ctx.fill();
    let hi = 0;
    r.curve.forEach((v, j) => { if (v > r.curve[hi]) hi = j; });
    describe(curve.canvas, `q_m \u00b7 k_n against the offset n \u2212 m from ${-(tMax - 1)} to ${tMax - 1}: ` +
      `position offset ${s.n - s.m} (m = ${s.m}, n = ${s.n}): score ${r.dot.toFixed(3)} (dot); ` +
      `the curve peaks at ${r.curve[hi].toFixed(3)} at offset ${r.offsets[hi]}.`);
  }

  function drawParts(r) {                 // each pair's part of q_m . k_n; they add up to the dot
    const {ctx, width, height} = parts;
    ctx.clearRect(0, 0, width, height);
    const box = {x: 52, y: 24, w: width - 66, h: height - 62};
    const big = Math.max(...r.parts.map(Math.abs), 1e-12);
    const yOf = (v) => box.y + box.h * (big - v) / (2 * big);
    text(ctx, `each pair's part (they add up to ${r.dot.toFixed(3)})`, box.x - 40, 14, {font: LABEL_BOLD});
    const w = box.w / r.parts.length;
    r.parts.forEach((v, i) => {
      ctx.fillStyle = i === s.pair ? "#D55E00" : "#999";
      const y0 = yOf(Math.max(v, 0)), y1 = yOf(Math.min(v, 0));
      ctx.fillRect(box.x + i * w + w * 0.15, y0, w * 0.7, Math.max(y1 - y0, 1));
      if (i !== s.pair) return;
      ctx.strokeStyle = "#222"; ctx.lineWidth = 1.5;     // the drawn pair: outlined, not only orange
      ctx.strokeRect(box.x + i * w + w * 0.15 - 1, y0 - 1, w * 0.7 + 2, Math.max(y1 - y0, 1) + 2);
    });
    ctx.strokeStyle = "#bbb"; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(box.x, yOf(0)); ctx.lineTo(box.x + box.w, yOf(0)); ctx.stroke();
    yAxis(ctx, box, yOf, [-big, 0, big], fmt, LABEL);
    const last = r.parts.length - 1;
    for (const i of last ? [0, last] : [0]) text(ctx, String(i), box.x + (i + 0.5) * w, box.y + box.h + 15, {align: "center", font: LABEL});
    text(ctx, "pair i (outlined, orange: drawn)", box.x + box.w / 2, box.y + box.h + 32, {align: "center", font: LABEL});
    const order = r.parts.map((_, i) => i).sort((i, j) => Math.abs(r.parts[j]) - Math.abs(r.parts[i]));
    describe(parts.canvas, `each pair's part of q_m \u00b7 k_n (they add up to ${r.dot.toFixed(3)}): ` +
      `pair ${order[0]} contributes most (${r.parts[order[0]].toFixed(3)}); ` +
      `pair ${s.pair}, drawn: ${r.parts[s.pair].toFixed(3)}; largest parts: ` +
      order.slice(0, 4).map((i) => `pair ${i} ${r.parts[i].toFixed(3)}`).join(", ") + ".");
  }

  function update() {
    const offsets = Array.from({length: 2 * tMax - 1}, (_, j) => j - (tMax - 1));
    const r = {theta: ropeFrequencies(s.dK, s.base), qm: ropeRotate(q, s.m, s.dK, s.base),
               kn: ropeRotate(k, s.n, s.dK, s.base), offsets,
               curve: ropeDotsByOffset(q, k, offsets, s.dK, s.base)};
    r.dot = dotFirst(r.qm, r.kn, s.dK);
    r.dotOffset = ropeDotsByOffset(q, k, [s.n - s.m], s.dK, s.base)[0];
    r.plain = dotFirst(q, k, s.dK);
    const a = 2 * s.pair, b = a + 1;
    r.parts = Array.from({length: s.dK / 2}, (_, i) => r.qm[2 * i] * r.kn[2 * i] + r.qm[2 * i + 1] * r.kn[2 * i + 1]);
    r.pairDot = r.parts[s.pair];
    mOut.textContent = String(s.m); nOut.textContent = String(s.n);
    dkOut.textContent = String(s.dK); baseOut.textContent = String(s.base); pairOut.textContent = String(s.pair);
    drawPlane(r);
    drawCurve(r);
    drawParts(r);
    [["m, n, offset n \u2212 m", `${s.m}, ${s.n}, ${s.n - s.m}`],
     ["q_m \u00b7 k_n (both turned)", r.dot.toFixed(4)],
     ["q_0 \u00b7 k_(n\u2212m) (offset only)", r.dotOffset.toFixed(4)],
     [`pair ${s.pair}'s part of q_m \u00b7 k_n (drawn)`, r.pairDot.toFixed(4)],
     ["q \u00b7 k without positions", r.plain.toFixed(4)]].forEach(([name, value], i) => {
      if (cells[i][0].textContent !== name) cells[i][0].textContent = name;    // only changed text is announced
      if (cells[i][1].textContent !== value) cells[i][1].textContent = value;
    });
    dkSlider.setAttribute("aria-valuetext", `d_k = ${s.dK}`);
    baseSlider.setAttribute("aria-valuetext", `base ${s.base}`);
    el.qkv = {settings: {...s, tMax}, dot: r.dot, dotOffset: r.dotOffset, plain: r.plain, pairDot: r.pairDot,
              parts: r.parts.slice(), curve: Array.from(r.curve), offsets, angle: r.angle};
  }

  const TRAITS = [["m", "m"], ["n", "n"], ["d_k", "dK"], ["base", "base"], ["pair", "pair"], ["lock", "lock"]];
  const send = linkTraits(model, [...TRAITS.map(([name]) => name), "error"], () => attempt(sync));
  const save = () => send(Object.fromEntries(TRAITS.map(([name, key]) => [name, s[key]])));

  const attempt = attempter(message, () => { update(); save(); }, {model});

  // The traits into the controls (checked first: a value the page cannot show changes nothing).
  function sync() {
    const v = Object.fromEntries(TRAITS.map(([name, key]) => [key, model.get(name)]));
    for (const key of ["m", "n"])
      if (!Number.isInteger(v[key]) || v[key] < 0 || v[key] >= tMax) throw new Error(`${key} must be 0..${tMax - 1}, got ${v[key]}`);
    if (!ROPE_D_KS.includes(v.dK)) throw new Error(`d_k must be one of ${ROPE_D_KS.join(", ")}, got ${v.dK}`);
    if (q.length < v.dK || k.length < v.dK) throw new Error(`q and k need ${v.dK} numbers, got ${q.length} and ${k.length}`);
    if (!ROPE_BASES.includes(v.base)) throw new Error(`base must be one of ${ROPE_BASES.join(", ")}, got ${v.base}`);
    if (v.dK !== s.dK) v.pair = Math.min(v.pair, v.dK / 2 - 1);          // fewer pairs: the last one, as Python does
    if (!Number.isInteger(v.pair) || v.pair < 0 || v.pair >= v.dK / 2) throw new Error(`pair must be 0..${v.dK / 2 - 1}, got ${v.pair}`);
    Object.assign(s, v, {lock: Boolean(v.lock)});
    [mSlider.value, nSlider.value] = [String(s.m), String(s.n)];
    [dkSlider.value, baseSlider.value] = [String(ROPE_D_KS.indexOf(s.dK)), String(ROPE_BASES.indexOf(s.base))];
    pairSlider.max = String(s.dK / 2 - 1);
    pairSlider.value = String(s.pair);
    lock.checked = s.lock;
  }

  function move(which, value) {          // a new m or n; with the lock, the other follows
    const offset = s.n - s.m;
    if (!s.lock) { s[which] = value; return; }
    const lo = Math.max(0, -offset), hi = Math.min(tMax - 1, tMax - 1 - offset);  // range of m
    const m = which === "m" ? value : value - offset;
    s.m = Math.min(hi, Math.max(lo, m));
    s.n = s.m + offset;
    mSlider.value = String(s.m); nSlider.value = String(s.n);
  }

  mSlider.addEventListener("input", () => attempt(() => move("m", parseNumber(mSlider.value, "m", {integer: true, min: 0, max: tMax - 1}))));
  nSlider.addEventListener("input", () => attempt(() => move("n", parseNumber(nSlider.value, "n", {integer: true, min: 0, max: tMax - 1}))));
  lock.addEventListener("change", () => attempt(() => { s.lock = lock.checked; }));
  dkSlider.addEventListener("input", () => attempt(() => {
    s.dK = ROPE_D_KS[Number(dkSlider.value)];
    pairSlider.max = String(s.dK / 2 - 1);
    s.pair = Math.min(s.pair, s.dK / 2 - 1);
    pairSlider.value = String(s.pair);
  }));
  baseSlider.addEventListener("input", () => attempt(() => { s.base = ROPE_BASES[Number(baseSlider.value)]; }));
  pairSlider.addEventListener("input", () => attempt(() => { s.pair = Math.min(Number(pairSlider.value), s.dK / 2 - 1); }));
  attempt(sync);
}

export default { render };
