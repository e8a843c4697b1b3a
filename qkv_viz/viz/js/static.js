// qkv-viz static pages: a stand-in for the widget model, built from the data that
// qkv_viz.viz.canvas.static_html embeds (bytes arrive as {"__b64__": "..."}).
// get / set / save_changes / on / off / send as anywidget's model has them; nothing
// answers a change that would need Python (those controls are disabled).
function staticModel(state) {
  const decode = (v) => {
    if (!v || typeof v !== "object" || v.__b64__ === undefined) return v;
    const raw = atob(v.__b64__), bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    return new DataView(bytes.buffer);
  };
  const values = Object.fromEntries(Object.entries(state).map(([k, v]) => [k, decode(v)]));
  const handlers = {};
  return {
    get: (k) => values[k],
    set: (k, v) => {
      const old = values[k];
      values[k] = v;
      if (old !== v) for (const f of handlers[`change:${k}`] || []) f();
    },
    save_changes: () => {},
    on: (event, f) => { (handlers[event] = handlers[event] || []).push(f); },
    off: () => {},
    send: () => {},
  };
}
