"""Chapter 3's toy and chapter 7's mask explorer follow their traits set from Python (issue 23, item 7).

In JupyterLab + Chromium, one cell shows both figures; then code run in the same kernel sets
their traits (``toy.scores = [...]``, ``masks.n_real = 2``), as a reader's next cell does. Each
time the page's controls, its numbers (``el.qkv``, compared with the math core's) and the
canvas's text alternative follow. A value the figure refuses (a ``TraitError`` in the cell)
leaves the picture, its text and the page's numbers as they were.

Skipped without Chromium / Playwright (QKV_REQUIRE_BROWSER=1 turns the skip into a failure).
"""
from __future__ import annotations

import numpy as np
import pytest

from browser_harness import jupyter, one_cell_notebook
from test_browser_ch07 import _need_browser
from test_browser_ch07 import _scores as _ch07_scores

TOKENS = ["<bos>", "le", "chat", "noir"]   # the chapter's explorer head without padding: 4 keys


def _scores():
    return _ch07_scores(TOKENS)            # (4, 4)
from test_browser_traits import RUN_JS, _picture, _refused, _set, _unchanged, _until

pytestmark = pytest.mark.browser

CELL = ("import numpy as np\nfrom IPython.display import display\n"
        "from qkv_viz.chapters.ch03_toy.widget import toy_widget\n"
        "from qkv_viz.chapters.ch07_masks.widget import mask_widget\n"
        "toy = toy_widget()\n"
        f"masks = mask_widget(np.array({_scores().tolist()!r}), {TOKENS!r}, {TOKENS!r}, causal=True)\n"
        "display(toy, masks)")


@pytest.fixture(scope="module")
def book():
    _need_browser()
    with jupyter("lab") as page_book:
        name = one_cell_notebook(page_book.server.root, CELL, "traits_b.ipynb")   # before the server starts
        page_book.open(name)
        page_book.run_all()
        page_book.page.locator(".qkv-toy, .qkv-masks").nth(1).wait_for(timeout=60_000)  # both drawn
        assert not page_book.problems(), page_book.problems()
        yield page_book


def _refuses(book, fig, selector: str, *cases) -> None:
    """Each (code, trait) of ``cases`` is refused in the kernel; the picture stays as it was."""
    before = _picture(book, fig, selector)
    for code, trait in cases:
        _refused(book, code, trait)
    _unchanged(book, fig, selector, before)


def test_toy_follows_scores_and_scale(book):
    from qkv_viz.chapters.ch03_toy.widget import toy_widget
    fig = book.page.locator(".qkv-toy")
    core = toy_widget()                          # the same figure in this process: the core's numbers
    label = lambda: fig.locator(".qkv-toy-bars").get_attribute("aria-label")  # noqa: E731
    boxes = lambda: [fig.locator(f".qkv-score-{j}").input_value() for j in range(3)]  # noqa: E731

    def matches_core(state):
        st = core.steps
        assert state["settings"] == {"scores": core.scores, "scale": core.scale}, state["settings"]
        for name in ("weights", "output", "exp", "scaled"):
            np.testing.assert_allclose(state[name], getattr(st, name), rtol=1e-12, atol=1e-12, err_msg=name)
        assert abs(state["factor"] - st.factor) < 1e-12
        assert label().endswith(", ".join(f"key {j} {w:.3f}" for j, w in enumerate(st.weights))
                                + f"; largest: key {int(np.argmax(st.weights))}"), label()

    _until(book, fig, lambda s: s["settings"]["scores"] == core.scores, "its first scores")
    pictures = {book.pixels(".qkv-toy-bars")}
    _set(book, "toy.scores = [4.0, -1.0, 0.5]")
    core.scores = [4.0, -1.0, 0.5]
    matches_core(_until(book, fig, lambda s: s["settings"]["scores"] == core.scores, "the new scores"))
    assert boxes() == ["4", "-1", "0.5"], boxes()
    assert "scaled by 1/\u221a2 = 0.707" in label(), label()
    pictures.add(book.pixels(".qkv-toy-bars"))

    _set(book, "toy.scale = False")
    core.scale = False
    matches_core(_until(book, fig, lambda s: not s["settings"]["scale"], "no scaling"))
    assert not fig.locator(".qkv-scale-box").is_checked()
    assert "3 keys, not scaled: " in label(), label()
    pictures.add(book.pixels(".qkv-toy-bars"))
    assert len(pictures) == 3, "setting traits from Python must redraw the bars"
    assert fig.locator(".qkv-steps").inner_text().count("4.000") >= 2  # the table follows too

    # a reader typing "2." keeps the dot (the kernel's echo of 2.0 does not rewrite the box)
    fig.locator(".qkv-score-1").fill("2.")
    core.scores = [4.0, 2.0, 0.5]
    _until(book, fig, lambda s: s["settings"]["scores"] == core.scores, "the typed score")
    book.page.wait_for_timeout(1000)
    assert fig.locator(".qkv-score-1").input_value() == "2."
    assert book.page.evaluate(RUN_JS, ["assert toy.scores == [4.0, 2.0, 0.5], toy.scores", False])["status"] == "ok"

    _refuses(book, fig, ".qkv-toy-bars", ("toy.scores = [1.0, 2.0]", "scores"),
             ("toy.scores = [1.0, float('nan'), 3.0]", "scores"))
    assert boxes() == ["4", "2.", "0.5"], boxes()


def test_mask_explorer_follows_causal_padding_clicks_and_labels(book):
    from qkv_viz.chapters.ch07_masks.widget import mask_widget
    fig = book.page.locator(".qkv-masks")
    core = mask_widget(_scores(), TOKENS, TOKENS, causal=True)
    label = lambda: fig.locator(".qkv-mask-map").get_attribute("aria-label")  # noqa: E731

    def matches_core(state):
        assert state["settings"] == {"causal": core.causal, "n_real": core.n_real}, state["settings"]
        np.testing.assert_array_equal(np.reshape(state["mask"], (4, 4)), core.mask)
        np.testing.assert_allclose(np.reshape(state["weights"], (4, 4)), core.weights, rtol=0, atol=1e-12)
        assert fig.locator(".qkv-real-slider").input_value() == str(core.n_real)
        assert fig.locator(".qkv-causal-box").is_checked() == core.causal
        assert f"(causal mask {'on' if core.causal else 'off'}, {core.n_real} real keys of 4)" in label(), label()

    _until(book, fig, lambda s: s["settings"]["n_real"] == 4, "its first state")
    pictures = {book.pixels(".qkv-mask-map")}
    _set(book, "masks.n_real = 2")
    core.n_real = 2
    matches_core(_until(book, fig, lambda s: s["settings"]["n_real"] == 2, "2 real keys"))
    assert label().endswith("Hidden cells: 6 by the causal mask, 8 padding, 0 clicked"), label()
    pictures.add(book.pixels(".qkv-mask-map"))

    _set(book, "masks.causal = False; masks.clicked = [i == 5 for i in range(16)]")
    core.causal, core.clicked = False, [i == 5 for i in range(16)]
    state = _until(book, fig, lambda s: not s["settings"]["causal"] and s["why"][5] == 4, "no causal mask, a click")
    matches_core(state)
    row = lambda i: ", ".join(f"{TOKENS[j]} {core.weights[i, j]:.2f}" for j in range(4) if core.mask[i, j])  # noqa: E731
    assert f"{TOKENS[2]}: {row(2)};" in label() and label().endswith("0 by the causal mask, 8 padding, 1 clicked"), label()
    pictures.add(book.pixels(".qkv-mask-map"))

    _set(book, "masks.tokens_q = ['the', 'cat', 'black', 'sat']")                 # row 1 is now "cat"
    book.page.wait_for_function("([c, want]) => c.getAttribute('aria-label').includes(want)",
                                arg=[fig.locator(".qkv-mask-map").element_handle(), f"; cat: {row(1)};"])
    pictures.add(book.pixels(".qkv-mask-map"))
    assert len(pictures) == 4, "setting traits from Python must redraw the mask map"

    _refuses(book, fig, ".qkv-mask-map", ("masks.n_real = 5", "n_real"), ("masks.clicked = [True]", "clicked"),
             ("masks.tokens_k = ['one']", "tokens_k"))
    matches_core(fig.evaluate("(e) => JSON.parse(JSON.stringify(e.closest('.qkv-figure').parentElement.qkv))"))
