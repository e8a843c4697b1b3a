"""Issue 24, figures part B: the head view (chapters 0, 7, 9), chapter 10's RoPE figure, chapter 3's
"vector moved by the values" and chapter 11's generation stepper, used without a mouse and
without sight of the canvas, in Chromium.

For each figure's self-contained text/html (the web edition; no kernel):
* axe-core's WCAG 2.1 A/AA rules on the figure: no serious or critical violation, on a light
  page and on a dark one (the figure carries its own light page; canvases draw on white or
  transparent, never on the page's colour);
* Tab from before the figure reaches every control, in order, each with an accessible name,
  ``data-lm-suppress-shortcuts`` and a visible focus outline; no empty table header; the
  changing readouts are live regions;
* a key press changes the figure, and each canvas's text alternative (its aria-label, set by
  ``describe``) changes with it, carrying the math core's new number.
The head view also live, from a one-cell notebook, in JupyterLab and in Notebook 7.

Skipped without Chromium / Playwright (QKV_REQUIRE_BROWSER=1 turns the skip into a failure).
"""
from __future__ import annotations

import contextlib

import numpy as np
import pytest

from browser_harness import jupyter, run_axe, serious, static_page
from test_browser import _need_browser
from test_browser_headview import TOKENS, W  # the head view's toy: river bank, four tokens

pytestmark = pytest.mark.browser

DARK = "background:#111;color:#ddd;color-scheme:dark"   # what JupyterLab Dark puts around an output

# The figure's controls in document order, and what Tab reaches from #before until #after.
CONTROLS_JS = """(root) => [...root.querySelectorAll('input, select, button, [tabindex]')]
    .filter((n) => n.tabIndex >= 0 && !n.disabled)"""
NAME_JS = """(n) => (n.getAttribute('aria-label') || (n.labels && n.labels.length ? n.labels[0].textContent : '')
    || n.textContent || '').trim()"""
FOCUSED_JS = f"""() => {{ const n = document.activeElement, st = getComputedStyle(n);
  return {{id: n.id, cls: n.className, pos: [...document.querySelectorAll('*')].indexOf(n), name: ({NAME_JS})(n), suppress: n.getAttribute('data-lm-suppress-shortcuts'),
          outline: st.outlineStyle === 'none' ? 0 : parseFloat(st.outlineWidth) || (st.outlineStyle === 'auto' ? 1 : 0)}}; }}"""
LABELS_JS = "(root) => [...root.querySelectorAll('canvas')].map((c) => c.getAttribute('aria-label'))"
# A canvas's corner pixels: transparent or white (the figure's light page shows through).
CORNERS_JS = """(root) => [...root.querySelectorAll('canvas')].map((c) => {
  const ctx = c.getContext('2d'), out = [];
  for (const [x, y] of [[1, 1], [c.width - 2, 1], [1, c.height - 2], [c.width - 2, c.height - 2]]) {
    const d = ctx.getImageData(x, y, 1, 1).data;
    out.push(d[3] === 0 || (d[0] > 245 && d[1] > 245 && d[2] > 245));
  }
  return out.every(Boolean);
})"""
TABLES_JS = """(root) => ({empty: [...root.querySelectorAll('th')].filter((t) => !t.textContent.trim()).length,
  silent: [...root.querySelectorAll('.qkv-readouts, [class*=readout]')].filter((n) =>
    !n.closest('[aria-live], [role=status]')).map((n) => n.className)})"""


def _page(widget, dark=False) -> str:
    from qkv_viz.viz.canvas import static_html
    body = f" style='{DARK}'" if dark else ""
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>figure</title></head>"
            f"<body{body}><main><button id='before'>before</button>{static_html(widget)}"
            "<button id='after'>after</button></main></body></html>")


def _labels(fig) -> list:
    return fig.evaluate(LABELS_JS)


def _tab_through(page, fig) -> list:
    """Tab from #before to #after; every stop inside the figure, in order."""
    page.locator("#before").focus()
    stops = []
    for _ in range(60):
        page.keyboard.press("Tab")
        now = page.evaluate(FOCUSED_JS)
        if now["id"] == "after":
            return stops
        stops.append(now)
    pytest.fail(f"Tab never left the figure: {stops[-3:]}")


def _check_keyboard_and_names(page, fig) -> list:
    """Every control is a Tab stop with a name, the suppress flag and a visible outline."""
    controls = fig.evaluate(f"(root) => ({CONTROLS_JS})(root).map((n) => [...document.querySelectorAll('*')].indexOf(n))")
    stops = _tab_through(page, fig)
    assert [s["pos"] for s in stops] == controls, ("Tab order", [s["cls"] for s in stops])
    for s in stops:
        assert s["name"], f"{s['cls']}: no accessible name"
        assert s["suppress"] == "true", f"{s['cls']}: no data-lm-suppress-shortcuts (Jupyter takes its keys)"
        assert s["outline"] > 0, f"{s['cls']}: no visible focus outline"
    return stops


def _audit(page, selector) -> None:
    fig = page.locator(selector)
    found = serious(run_axe(page, selector))
    assert not found, f"{selector}:\n" + "\n".join(found)
    assert all(fig.evaluate(CORNERS_JS)), "a canvas paints its own background over the figure's light page"
    tables = fig.evaluate(TABLES_JS)
    assert tables["empty"] == 0, "an empty table header cell"
    assert not tables["silent"], f"readouts that change but are no live region: {tables['silent']}"
    labels = _labels(fig)
    assert labels and all(labels), f"a canvas without a text alternative: {labels}"


@contextlib.contextmanager
def _static(widget, selector, dark=False):
    """A static page with the figure, audited (light, or dark around it); yields (page, fig, problems)."""
    with static_page(_page(widget, dark)) as (page, problems):
        page.locator(selector).wait_for()
        _audit(page, selector)
        yield page, page.locator(selector), problems


def _head_view(focus=None):
    from qkv_viz.viz.headview import head_view
    return head_view(TOKENS, W, focus=focus, title="layer 2 head 0")


def _rope():
    from qkv_viz.chapters.ch10_positions.widget import rope_widget
    return rope_widget()


def _vector_move():
    from qkv_viz.chapters.ch03_toy.vector_move import vector_move
    return vector_move()


def _stepper():
    from qkv_viz.chapters.ch11_generation.widget import generation_widget
    return generation_widget(step=4, head=1, n_kv_heads=2)


@pytest.mark.parametrize("make, selector", [(_head_view, ".qkv-headview"), (_rope, ".qkv-rope"),
                                            (_vector_move, ".qkv-vector-move"), (_stepper, ".qkv-generation")],
                         ids=["headview", "rope", "vector_move", "stepper"])
def test_figure_passes_axe_on_a_dark_page_too(make, selector):
    _need_browser()
    with _static(make(), selector, dark=True) as (page, fig, problems):
        colour = fig.evaluate("(n) => getComputedStyle(n).backgroundColor")
        assert colour == "rgb(255, 255, 255)", f"the figure's own page is {colour}, not white"
        assert not problems, problems


def _assert_head_view_keys(page, fig) -> None:
    """From the keyboard: Tab to 'bank', Enter pins it, its lines and words follow."""
    label = lambda: _labels(fig)[0]  # noqa: E731
    assert label().startswith("layer 2 head 0: lines from 4 queries to 4 keys"), label()
    assert "'bank' attends most to 'river' (0.70)" in label() and "'flooded' attends most to 'bank' (0.50)" in label()
    bank = fig.locator(".qkv-hv-q-2")
    fig.locator(".qkv-hv-q-1").focus()
    page.keyboard.press("Tab")                                       # to "bank"
    assert page.evaluate("() => document.activeElement.className").endswith("qkv-hv-q-2 qkv-hv-selected")
    assert label() == ("layer 2 head 0: query 2 only: 'bank' attends most to 'river' (0.70); "
                       "'the' 0.05, 'river' 0.70, 'bank' 0.15, 'flooded' 0.10."), label()
    page.keyboard.press("Enter")                                     # pin
    assert bank.get_attribute("aria-pressed") == "true"
    style = bank.evaluate("(b) => { const s = getComputedStyle(b); return [s.fontWeight, s.borderTopColor, s.borderTopWidth]; }")
    assert int(style[0]) >= 600 and style[1] not in ("rgba(0, 0, 0, 0)", "transparent") and style[2] == "2px", \
        f"the pinned token is marked by colour only: {style}"
    page.keyboard.press("Tab")                                       # focus moves on: its lines
    assert "query 3 only: 'flooded' attends most to 'bank' (0.50)" in label(), label()
    page.evaluate("() => document.activeElement.blur()")             # away: the pinned token again
    assert "query 2 only: 'bank'" in label(), label()
    key = fig.locator(".qkv-hv-k-1")
    key.focus()
    assert "key 1 only: 'river' is read most by 'bank' (0.70)" in label(), label()
    page.keyboard.press("Space")                                         # Space pins the key
    assert key.get_attribute("aria-pressed") == "true" and bank.get_attribute("aria-pressed") == "false"


def test_head_view_by_keyboard_and_in_words():
    _need_browser()
    with _static(_head_view(), ".qkv-headview") as (page, fig, problems):
        stops = _check_keyboard_and_names(page, fig)
        assert [s["name"] for s in stops][:2] == ["query 0: the", "query 1: river"]
        _assert_head_view_keys(page, fig)
        assert not problems, problems


def test_rope_figure_by_keyboard_and_in_words():
    _need_browser()
    py = _rope()
    with _static(py, ".qkv-rope") as (page, fig, problems):
        stops = _check_keyboard_and_names(page, fig)
        assert [s["name"] for s in stops] == ["query position m", "key position n", "keep n \u2212 m fixed",
                                              "d_k", "base", "pair drawn"]
        plane, curve, parts = _labels(fig)
        assert f"position offset 3 (m = 2, n = 5): score {py.dot:.3f}" in curve, curve
        assert f"they add up to {py.dot:.3f}" in parts and f"pair {py.pair}, drawn" in parts, parts
        fig.locator(".qkv-rope-n").focus()
        page.keyboard.press("ArrowRight")                            # n = 6
        py.n = 6
        after = _labels(fig)
        assert f"position offset 4 (m = 2, n = 6): score {py.dot:.3f}" in after[1], after[1]
        assert "k at position 6" in after[0] and after[0] != plane
        assert f"they add up to {py.dot:.3f}" in after[2]
        dk = fig.locator(".qkv-rope-dk")
        dk.focus()
        page.keyboard.press("ArrowRight")                            # d_k 8 -> 16
        assert dk.get_attribute("aria-valuetext") == "d_k = 16"
        py.d_k = 16
        assert f"score {py.dot:.3f}" in _labels(fig)[1]
        fig.locator(".qkv-rope-lock").focus()
        page.keyboard.press("Space")                                     # Space ticks the lock
        assert fig.locator(".qkv-rope-lock").is_checked()
        assert not problems, problems


def test_vector_move_by_keyboard_and_in_words():
    _need_browser()
    from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_V
    from qkv_viz.core.attention import scaled_dot_product_attention
    with _static(_vector_move(), ".qkv-vector-move") as (page, fig, problems):
        stops = _check_keyboard_and_names(page, fig)
        assert [s["cls"] for s in stops] == ["qkv-token", "qkv-scale-box", "qkv-query-plane"]
        left, right, shares = _labels(fig)
        assert left.startswith("the query q = (1.0, 2.0), among the keys") and "arrow keys" in left, left
        fig.locator(".qkv-query-plane").focus()
        for _ in range(10):
            page.keyboard.press("ArrowLeft")                         # q = (0.0, 2.0)
        out, w = scaled_dot_product_attention(np.array([[0.0, 2.0]]), TOY_K, TOY_V, scale=True)
        left2, right2, shares2 = _labels(fig)
        assert left2.startswith("the query q = (0.0, 2.0), among the keys"), left2
        assert f"output = \u03a3 w\u2c7c v\u2c7c = ({out[0, 0]:.2f}, {out[0, 1]:.2f})" in right2 and right2 != right, right2
        want = ", ".join(f"v{j} {100 * x:.0f} %" for j, x in enumerate(w[0]))
        assert shares2 == f"the weights, each value's share of the output: {want}.", shares2
        fig.locator(".qkv-scale-box").focus()
        page.keyboard.press("Space")                                     # scaling off
        out, w = scaled_dot_product_attention(np.array([[0.0, 2.0]]), TOY_K, TOY_V, scale=False)
        assert f"= ({out[0, 0]:.2f}, {out[0, 1]:.2f})" in _labels(fig)[1]
        headers = fig.locator(".qkv-move-table th").all_inner_texts()
        assert headers[0] == "key and value" and "scores (not scaled)" in headers, headers
        assert not problems, problems


def test_stepper_by_keyboard_and_in_words():
    _need_browser()
    from qkv_viz.chapters.ch11_generation.widget import generation_widget
    with _static(_stepper(), ".qkv-generation") as (page, fig, problems):
        stops = _check_keyboard_and_names(page, fig)
        assert [s["name"] for s in stops] == ["step: the new token", "next token \u25b6", "query head", "K/V heads"]
        for step in (5, 6):
            if step == 5:
                fig.locator(".qkv-gen-step").focus()
                page.keyboard.press("ArrowRight")
            else:
                fig.locator(".qkv-gen-next").focus()
                page.keyboard.press("Enter")
            py = generation_widget(step=step, head=1, n_kv_heads=2)
            word, weights = py.words[step], py.weights
            label = _labels(fig)[0]
            assert label.startswith(f'step {step}: generated "{word}", cache holds {step + 1} keys'), label
            assert f"{py.cache_numbers} numbers" in label, label
            top = int(np.argmax(weights))
            assert f'most on "{py.words[top]}" ({weights[top]:.2f})' in label, label
            assert fig.locator(".qkv-gen-step").get_attribute("aria-valuetext") == f'step {step}: "{word}"'
        assert label.endswith('"." ends the sentence.'), label
        assert not problems, problems


SOURCE = ("import numpy as np\nfrom qkv_viz.viz.headview import head_view\n"
          f"head_view({TOKENS!r}, np.array({W.tolist()!r}), title='layer 2 head 0')")


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_live_head_view_by_keyboard(frontend):
    _need_browser()
    with jupyter(frontend) as book:
        book.run_new(SOURCE, "headview_a11y.ipynb")
        fig = book.page.locator(".qkv-headview")
        fig.wait_for(timeout=60_000)
        found = serious(run_axe(book.page, ".qkv-headview"))
        assert not found, "\n".join(found)
        flags = fig.evaluate(f"(root) => ({CONTROLS_JS})(root).map((n) => "
                             "n.getAttribute('data-lm-suppress-shortcuts'))")
        assert len(flags) == 2 * len(TOKENS) and set(flags) == {"true"}, flags
        _assert_head_view_keys(book.page, fig)
        mode = book.page.evaluate("() => window.__qkv.widget.content.mode")
        assert mode == "command", f"Enter on a token opened the cell editor ({mode})"
        assert not book.problems(), book.problems()
