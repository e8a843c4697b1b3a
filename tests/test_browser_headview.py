"""The head view (qkv_viz/viz/headview.py + js/headview.js) in Chromium, as a reader uses it.

* Its self-contained text/html alone in a plain page (the web edition, no kernel):
  every line as wide as MAX_LINE * weight; hovering a query token shows only its
  lines (the others faint) and lists its weights; hovering a key shows who reads it;
  Tab focus does the same from the keyboard; a click pins a token; pixels follow.
* The live widget in JupyterLab, from a one-cell notebook: it renders, hovering works,
  no error anywhere.

Skipped without Chromium / Playwright (QKV_REQUIRE_BROWSER=1 turns the skip into a failure).
"""
from __future__ import annotations

import numpy as np
import pytest

from browser_harness import jupyter, static_page
from test_browser import _need_browser

pytestmark = pytest.mark.browser

TOKENS = ["the", "river", "bank", "flooded"]
W = np.array([[0.40, 0.30, 0.20, 0.10],
              [0.10, 0.50, 0.30, 0.10],
              [0.05, 0.70, 0.15, 0.10],
              [0.20, 0.20, 0.50, 0.10]])
MAX_LINE, FAINT = 7.0, 0.06
STATE_JS = "(e) => e.closest('.qkv-figure').parentElement.qkv"
PIXELS_JS = "(c) => c.toDataURL()"


def _figure(focus=None):
    from qkv_viz.viz.headview import head_view
    return head_view(TOKENS, W, focus=focus, title="who reads whom")


def _expected_alphas(side, index):
    strong = np.zeros_like(W, dtype=bool)
    if side is None:
        strong[:] = True
    elif side == "q":
        strong[index] = True
    else:
        strong[:, index] = True
    return np.where(strong, 0.2 + 0.8 * W, FAINT * W)


def _assert_drawn(state, side, index):
    assert (state["selected"] or {}).get("side") == side and (side is None or state["selected"]["index"] == index)
    np.testing.assert_allclose(np.reshape(state["widths"], W.shape), MAX_LINE * W, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.reshape(state["alphas"], W.shape), _expected_alphas(side, index),
                               rtol=0, atol=1e-12)


def test_static_head_view_hover_focus_and_pin():
    _need_browser()
    from qkv_viz.viz.canvas import static_html
    page_html = ("<!doctype html><html><head><meta charset='utf-8'><title>hv</title></head><body>"
                 + static_html(_figure()) + "</body></html>")
    with static_page(page_html) as (page, problems):
        fig = page.locator(".qkv-headview")
        fig.wait_for()
        state = lambda: fig.evaluate(STATE_JS)  # noqa: E731
        canvas = fig.locator(".qkv-hv-lines")
        _assert_drawn(state(), None, None)
        pictures = {canvas.evaluate(PIXELS_JS)}

        fig.locator(".qkv-hv-q-2").hover()                       # "bank" as a query
        _assert_drawn(state(), "q", 2)
        readout = fig.locator(".qkv-hv-readout").inner_text()
        assert readout.startswith("bank (query 2) reads: the 0.05, river 0.70, bank 0.15"), readout
        pictures.add(canvas.evaluate(PIXELS_JS))

        fig.locator(".qkv-hv-k-1").hover()                       # "river" as a key
        _assert_drawn(state(), "k", 1)
        assert "river (key 1) is read by: the 0.30, river 0.50, bank 0.70" in fig.locator(".qkv-hv-readout").inner_text()
        pictures.add(canvas.evaluate(PIXELS_JS))
        assert len(pictures) == 3, "hovering a token must redraw the lines"

        page.mouse.move(0, 0)                                     # away: all lines again
        _assert_drawn(state(), None, None)
        fig.locator(".qkv-hv-q-0").focus()                        # the keyboard
        _assert_drawn(state(), "q", 0)
        page.keyboard.press("Tab")                                # next token: query 1
        _assert_drawn(state(), "q", 1)
        fig.locator(".qkv-hv-q-3").click()                        # pin "flooded"
        fig.locator(".qkv-hv-q-3").blur()
        page.mouse.move(0, 0)
        _assert_drawn(state(), "q", 3)
        assert "qkv-hv-selected" in fig.locator(".qkv-hv-q-3").get_attribute("class")
        fig.locator(".qkv-hv-q-3").click()                        # unpin
        fig.locator(".qkv-hv-q-3").blur()
        page.mouse.move(0, 0)
        _assert_drawn(state(), None, None)
        assert not problems, problems


def test_static_head_view_starts_on_its_focus_token():
    _need_browser()
    from qkv_viz.viz.canvas import static_html
    page_html = "<!doctype html><html><body>" + static_html(_figure(focus="bank")) + "</body></html>"
    with static_page(page_html) as (page, problems):
        fig = page.locator(".qkv-headview")
        fig.wait_for()
        _assert_drawn(fig.evaluate(STATE_JS), "q", 2)
        assert not problems, problems


SOURCE = ("import numpy as np\nfrom qkv_viz.viz.headview import head_view\n"
          f"head_view({TOKENS!r}, np.array({W.tolist()!r}), focus='bank')")


def test_live_head_view_in_jupyterlab():
    _need_browser()
    with jupyter("lab") as book:          # closes the notebook (and its kernel) on exit
        book.run_new(SOURCE, "headview.ipynb")
        fig = book.page.locator(".qkv-headview")
        fig.wait_for(timeout=60_000)
        _assert_drawn(fig.evaluate(STATE_JS), "q", 2)
        fig.locator(".qkv-hv-k-0").hover()
        _assert_drawn(fig.evaluate(STATE_JS), "k", 0)
        assert not book.problems(), book.problems()
