// qkv-viz in-browser renderer, part 2: the head view (after BertViz), who reads whom.
//
// From Python (once): the query tokens (T), the key tokens (S), the weights (T, S) as
// float64, and the token to focus first (-1: none). Here: one line from query i (left
// column) to key j (right column) for every pair, lineWidth = MAX_LINE * w[i, j] and
// opacity 0.2 + 0.8 * w[i, j] (FAINT * w for the lines of tokens not in focus).
// Hovering or focusing a token shows only its lines and lists its weights; a click (or
// Enter / Space: the tokens are buttons) pins it, a second one unpins. The token in focus
// is bold and boxed, not only tinted; the canvas's text alternative names each query's
// strongest key. Nothing here needs Python; Python may set focus, the token names and the
// title (fig.focus = 2), and sync() redraws for them.

const HV_QUERY = "#D55E00", HV_KEY = "#0072B2", MAX_LINE = 7, FAINT = 0.06, PITCH = 26;
const HV_TEXT = {q: "#A04000", k: "#005A8C"};       // the token names: darker, >= 4.5:1 on the tints
const HV_CSS = `
.qkv-headview .qkv-hv-token { font: 13px sans-serif; background: none; border: 1px solid transparent;
  border-radius: 3px; padding: 0 6px; cursor: pointer; }
.qkv-headview .qkv-hv-token:hover { background: #f7efe9; border-color: #999; }
.qkv-headview .qkv-hv-token.qkv-hv-selected { background: #f7efe9; border-color: #222; font-weight: bold; }
.qkv-headview .qkv-hv-token[aria-pressed="true"] { border-width: 2px; padding: 0 5px; }
.qkv-headview .qkv-hv-token:focus-visible { outline: 3px solid #0072B2; outline-offset: 1px; }
.qkv-headview .qkv-hv-readout { font-size: 12px; color: #333; min-height: 1.4em; margin-top: 4px; }`;

function render({model, el}) {
  let tq = model.get("tokens_q"), tk = model.get("tokens_k");
  const T = tq.length, S = tk.length;
  const w = asF64(model.get("weights"));
  const message = h("div", {class: "qkv-message", role: "status"});
  const readout = h("div", {class: "qkv-hv-readout", "aria-live": "polite"});
  const n = Math.max(T, S), width = 240, height = n * PITCH + 8;
  const lines = makeCanvas("qkv-hv-lines", width, height);
  const button = (side, i, name) => h("button", {
    type: "button", class: `qkv-hv-token qkv-hv-${side} qkv-hv-${side}-${i}`,
    "data-lm-suppress-shortcuts": "true", "aria-label": `${side === "q" ? "query" : "key"} ${i}: ${name}`,
    "aria-pressed": "false", style: `height:${PITCH}px;color:${HV_TEXT[side]}`, text: name});
  const qs = tq.map((t, i) => button("q", i, t)), ks = tk.map((t, j) => button("k", j, t));
  const column = (items, side, count) => h("div", {
    class: `qkv-hv-column qkv-hv-column-${side}`,
    style: `display:flex;flex-direction:column;padding-top:${4 + (n - count) * PITCH / 2}px;` +
           `align-items:${side === "q" ? "flex-end" : "flex-start"}`}, items);
  const head = (txt, align) => h("div", {style: `color:#555;font-size:12px;text-align:${align}`, text: txt});
  let titleText = model.get("title");
  const title = h("div", {class: "qkv-hv-title", style: "font-weight:bold"});
  const root = h("div", {class: "qkv-figure qkv-headview"}, [
    h("style", {text: HV_CSS}), title,
    h("div", {class: "qkv-row qkv-top", style: "gap:0;flex-wrap:nowrap"}, [
      h("div", {}, [head("queries", "right"), column(qs, "q", T)]),
      h("div", {}, [head("\u00a0", "center"), lines.canvas]),
      h("div", {}, [head("keys", "left"), column(ks, "k", S)])]),
    readout, message]);
  el.append(root);

  const s = {pinned: null, hover: null, focus: null};
  const yq = (i) => 4 + ((n - T) / 2 + i + 0.5) * PITCH, yk = (j) => 4 + ((n - S) / 2 + j + 0.5) * PITCH;
  const f2 = (x) => x.toFixed(2);
  const same = (a, b) => Boolean(a) && Boolean(b) && a.side === b.side && a.index === b.index;

  function draw() {
    if (w.length !== T * S) throw new Error(`weights has ${w.length} entries, expected T * S = ${T} * ${S}`);
    const sel = s.hover || s.pinned;
    const {ctx} = lines;
    ctx.clearRect(0, 0, width, height);
    ctx.lineCap = "butt";
    const widths = new Float64Array(T * S), alphas = new Float64Array(T * S);
    for (const strongPass of [false, true]) {           // faint lines first, strong ones on top
      for (let i = 0; i < T; i++) for (let j = 0; j < S; j++) {
        const x = w[i * S + j];
        const strong = !sel || (sel.side === "q" ? i === sel.index : j === sel.index);
        if (strong !== strongPass || x <= 0) continue;
        widths[i * S + j] = MAX_LINE * x;
        alphas[i * S + j] = strong ? 0.2 + 0.8 * x : FAINT * x;  // opacity grows with the weight
        ctx.globalAlpha = alphas[i * S + j];
        ctx.strokeStyle = HV_QUERY;
        ctx.lineWidth = widths[i * S + j];
        ctx.beginPath(); ctx.moveTo(0, yq(i)); ctx.lineTo(width, yk(j)); ctx.stroke();
      }
    }
    ctx.globalAlpha = 1;
    ctx.lineWidth = 1;
    for (const [buttons, side] of [[qs, "q"], [ks, "k"]])
      buttons.forEach((b, i) => {
        b.classList.toggle("qkv-hv-selected", same(sel, {side, index: i}));
        b.setAttribute("aria-pressed", String(same(s.pinned, {side, index: i})));
      });
    if (!sel) readout.textContent = "Hover over or tab to a token to see only its lines.";
    else if (sel.side === "q")
      readout.textContent = `${tq[sel.index]} (query ${sel.index}) reads: ` +
        tk.map((t, j) => `${t} ${f2(w[sel.index * S + j])}`).join(", ");
    else
      readout.textContent = `${tk[sel.index]} (key ${sel.index}) is read by: ` +
        tq.map((t, i) => `${t} ${f2(w[i * S + sel.index])}`).join(", ");
    describe(lines.canvas, summary(sel));
    el.qkv = {selected: sel ? {...sel} : null, widths: Array.from(widths), alphas: Array.from(alphas), T, S};
  }

  // The canvas in words: the focused token's strongest partner, or every query's.
  function summary(sel) {
    const top = (i) => { let b = 0; for (let j = 1; j < S; j++) if (w[i * S + j] > w[i * S + b]) b = j; return b; };
    const reads = (i) => `'${tq[i]}' attends most to '${tk[top(i)]}' (${f2(w[i * S + top(i)])})`;
    const prefix = titleText ? `${titleText}: ` : "";
    if (!sel) return `${prefix}lines from ${T} queries to ${S} keys, as wide as the weight; ` +
      tq.map((_, i) => reads(i)).join("; ") + ".";
    if (sel.side === "q") return `${prefix}query ${sel.index} only: ${reads(sel.index)}; ` +
      tk.map((t, j) => `'${t}' ${f2(w[sel.index * S + j])}`).join(", ") + ".";
    let b = 0;
    for (let i = 1; i < T; i++) if (w[i * S + sel.index] > w[b * S + sel.index]) b = i;
    return `${prefix}key ${sel.index} only: '${tk[sel.index]}' is read most by '${tq[b]}' ` +
      `(${f2(w[b * S + sel.index])}); ` + tq.map((t, i) => `'${t}' ${f2(w[i * S + sel.index])}`).join(", ") + ".";
  }

  const attempt = attempter(message, draw, {model});

  // The traits into the picture (checked first: a value it cannot show changes nothing).
  function sync() {
    const focus = model.get("focus"), q = model.get("tokens_q"), k = model.get("tokens_k");
    if (!Number.isInteger(focus) || focus < -1 || focus >= T) throw new Error(`focus must be -1..${T - 1}, got ${focus}`);
    for (const [name, list, n] of [["tokens_q", q, T], ["tokens_k", k, S]])
      if (!Array.isArray(list) || list.length !== n || !list.every((t) => typeof t === "string"))
        throw new Error(`${name} must be ${n} strings`);
    [tq, tk, titleText] = [q, k, model.get("title")];
    if (focus !== s.focus) s.pinned = focus >= 0 ? {side: "q", index: focus} : null;  // a pinned key stays
    s.focus = focus;
    for (const [buttons, names, side] of [[qs, tq, "query"], [ks, tk, "key"]])
      buttons.forEach((b, i) => { b.textContent = names[i]; b.setAttribute("aria-label", `${side} ${i}: ${names[i]}`); });
    title.textContent = titleText;
    title.hidden = !titleText;
  }
  [[qs, "q"], [ks, "k"]].forEach(([buttons, side]) => buttons.forEach((b, index) => {
    const enter = () => attempt(() => { s.hover = {side, index}; });
    const leave = () => attempt(() => { s.hover = null; });
    b.addEventListener("mouseenter", enter);
    b.addEventListener("focus", enter);
    b.addEventListener("mouseleave", leave);
    b.addEventListener("blur", leave);
    b.addEventListener("click", () => attempt(() => {
      s.pinned = same(s.pinned, {side, index}) ? null : {side, index};
      if (side === "q") { s.focus = s.pinned ? index : -1; model.set("focus", s.focus); model.save_changes(); }
    }));
  }));
  for (const name of ["focus", "tokens_q", "tokens_k", "title", "error"]) model.on(`change:${name}`, () => attempt(sync));
  attempt(sync);
}

export default { render };
