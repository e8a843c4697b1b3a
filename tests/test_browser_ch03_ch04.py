"""Chapters 3 and 4's live figures in Chromium, from their self-contained text/html
(what the web edition shows; no kernel): chapter 3's "vector moved by the values"
follows a mouse drag and the arrow keys with numbers equal to the math core's, and
the explorer's bars take the scaled / unscaled colour of the switch.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

from browser_harness import static_page
from test_browser import ARTIFACTS, TOGGLE, _need_browser

pytestmark = pytest.mark.browser

NUMBERS_JS = "(node) => node.closest('.qkv-figure').parentElement.qkv"



def _plane_px(box, x, y):
    """Page pixels of the point (x, y) of the query plane (its box at (30, 26), 256 px square): the
    plane spans the query's range 3 or the longest key coordinate, plus a margin (vector_move.py, .js)."""
    from qkv_viz.chapters.ch03_toy.toy import TOY_K
    lim = max(3.0, float(np.abs(TOY_K).max())) + 0.35
    return box["x"] + 30 + 256 * (x + lim) / (2 * lim), box["y"] + 26 + 256 * (lim - y) / (2 * lim)

def _page(*figures) -> str:
    from qkv_viz.viz.canvas import static_html
    body = "\n".join(static_html(f) for f in figures)
    return f"<!doctype html><html><head><meta charset='utf-8'><title>qkv</title></head><body>{body}</body></html>"


def _core(q, scale=True):
    from qkv_viz.chapters.ch03_toy.toy import TOY_K, TOY_V
    from qkv_viz.core.attention import scaled_dot_product_attention
    out, w = scaled_dot_product_attention(np.array([q], dtype=float), TOY_K, TOY_V, scale=scale)
    return out[0], w[0]


def _assert_core(got, scale=True):
    out, w = _core(got["settings"]["q"], scale)
    np.testing.assert_allclose(got["weights"], w, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["output"], out, rtol=0, atol=1e-12)


def test_vector_move_follows_drag_and_keys():
    _need_browser()
    from qkv_viz.chapters.ch03_toy.figures import barycentric
    from qkv_viz.chapters.ch03_toy.toy import TOY_Q, TOY_V
    from qkv_viz.chapters.ch03_toy.vector_move import vector_move
    with static_page(_page(vector_move())) as (page, problems):
        fig = page.locator(".qkv-vector-move")
        fig.wait_for()
        first = fig.evaluate(NUMBERS_JS)
        assert first["settings"]["q"] == list(TOY_Q[0])
        assert first["sameAsKey"] is None, "q0 equals no key: the label must not say it does"
        _assert_core(first)
        # drag the query's tip from (1, 2) to about (-2, 0.5): the plane spans -PLANE..PLANE over 256 px
        box = fig.locator(".qkv-query-plane").bounding_box()
        px = lambda x, y: _plane_px(box, x, y)  # noqa: E731
        page.mouse.move(*px(1, 2))
        page.mouse.down()
        for t in np.linspace(0, 1, 6)[1:]:
            page.mouse.move(*px(1 - 3 * t, 2 - 1.5 * t))
        page.mouse.up()
        dragged = fig.evaluate(NUMBERS_JS)
        assert dragged["settings"]["q"] == pytest.approx([-2.0, 0.5], abs=0.11)
        assert dragged["sameAsKey"] is None
        _assert_core(dragged)
        assert dragged["weights"][0] > 0.5 > first["weights"][0], "dragging towards k0 must move weight to v0"
        # the output is inside the triangle: its barycentric coordinates are the weights, all >= 0
        np.testing.assert_allclose(barycentric(dragged["output"], TOY_V), dragged["weights"], atol=1e-9)
        # arrow keys move the focused plane's query by 0.1
        fig.locator(".qkv-query-plane").focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowUp")
        keyed = fig.evaluate(NUMBERS_JS)
        assert keyed["settings"]["q"] == pytest.approx([dragged["settings"]["q"][0] + 0.1,
                                                        dragged["settings"]["q"][1] + 0.1], abs=1e-9)
        _assert_core(keyed)
        # another token's query; scaling off
        fig.locator(".qkv-token").select_option("2")
        assert fig.evaluate(NUMBERS_JS)["settings"]["q"] == list(TOY_Q[2])
        fig.locator(".qkv-scale-box").click()
        off = fig.evaluate(NUMBERS_JS)
        assert off["settings"]["scale"] is False
        _assert_core(off, scale=False)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        fig.screenshot(path=str(ARTIFACTS / "ch03_vector_move.png"))
        assert not problems, problems


def _share_of(png: bytes, colour: str) -> float:
    """Fraction of a screenshot's pixels within a small distance of ``colour`` (#RRGGBB)."""
    import matplotlib.image as mpimg
    rgb = mpimg.imread(io.BytesIO(png), format="png")[..., :3].reshape(-1, 3)
    want = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)]) / 255
    return float(np.mean(np.abs(rgb - want).max(axis=1) < 0.06))


def test_explorer_bars_take_the_colour_of_the_scaling():
    _need_browser()
    from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer
    from qkv_viz.viz import style
    with static_page(_page(scaling_explorer(n=16, d_k=64, scale=True))) as (page, problems):
        fig = page.locator(".qkv-explorer")
        fig.wait_for()
        bars = fig.locator(".qkv-bars")
        on = bars.screenshot()
        assert _share_of(on, style.SCALED_COLOR) > 0.002 and _share_of(on, style.UNSCALED_COLOR) < 0.0005
        fig.locator(TOGGLE).click()
        off = bars.screenshot()
        assert _share_of(off, style.UNSCALED_COLOR) > 0.002 and _share_of(off, style.SCALED_COLOR) < 0.0005
        assert fig.evaluate(NUMBERS_JS)["settings"]["scale"] is False
        readouts = fig.locator(".qkv-readouts").inner_text()
        for name in ("max weight", "effective number of keys", "\u2016J\u2016 Frobenius", "entropy H"):
            assert name in readouts, (name, readouts)  # the page's names
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        fig.screenshot(path=str(ARTIFACTS / "ch04_explorer_unscaled.png"))
        assert not problems, problems


KERNEL_PRINT_JS = """async (code) => {
  const kernel = window.__qkv.widget.sessionContext.session.kernel;
  let out = '';
  const future = kernel.requestExecute({code});
  future.onIOPub = (msg) => { if (msg.header.msg_type === 'stream') out += msg.content.text; };
  await future.done;
  return out;
}"""


def test_live_vector_move_in_jupyterlab_syncs_the_dragged_query_to_python():
    """The live widget: a drag moves the picture and Python's trait; setting it from Python
    moves the picture; a refused value leaves both as they were."""

    from browser_harness import jupyter, one_cell_notebook
    _need_browser()
    with jupyter("lab") as book:
        name = one_cell_notebook(book.server.root, "from qkv_viz.chapters.ch03_toy.vector_move import vector_move\n"
                                  "figure = vector_move()\nfigure", "vm.ipynb")
        try:
            book.open(name)
            book.run_all()
            fig = book.page.locator(".qkv-vector-move")
            fig.wait_for(timeout=60_000)
            fig.scroll_into_view_if_needed()
            box = fig.locator(".qkv-query-plane").bounding_box()
            px = lambda x, y: _plane_px(box, x, y)  # noqa: E731
            book.page.mouse.move(*px(1, 2))
            book.page.mouse.down()
            for t in np.linspace(0, 1, 6)[1:]:
                book.page.mouse.move(*px(1 + 1.5 * t, 2 - 3 * t))
            book.page.mouse.up()
            shown = fig.evaluate(NUMBERS_JS)
            assert shown["settings"]["q"] == pytest.approx([2.5, -1.0], abs=0.11)
            _assert_core(shown)
            book.page.wait_for_timeout(500)
            got = book.page.evaluate(KERNEL_PRINT_JS, "print(figure.q, list(figure.weights.round(12)))")
            q_py = eval(got.split("]")[0] + "]")  # noqa: S307 - our own print of a list of floats
            assert q_py == pytest.approx(shown["settings"]["q"], abs=1e-12), got
            book.page.evaluate(KERNEL_PRINT_JS, "figure.q = [0.0, -2.0]")
            book.page.wait_for_function(f"(n) => {NUMBERS_JS}(n).settings.q[1] === -2",
                                        arg=fig.element_handle())
            _assert_core(fig.evaluate(NUMBERS_JS))
            refused = book.page.evaluate(KERNEL_PRINT_JS, "try:\n    figure.q = [9.0, 0.0]\n"
                                         "except Exception as e:\n    print(type(e).__name__, e)")
            assert refused.startswith("TraitError") and "q must be" in refused, refused
            assert fig.evaluate(NUMBERS_JS)["settings"]["q"] == [0.0, -2.0]
            fig.screenshot(path=str(ARTIFACTS / "lab_ch03_vector_move.png"))
            assert not book.problems(), book.problems()
        finally:
            book.close()
