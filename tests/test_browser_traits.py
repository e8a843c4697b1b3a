"""Live figures follow their traits when a reader sets them from Python (issue 23, item 7).

In JupyterLab + Chromium, one notebook builds the head view, chapter 10's RoPE figure and
chapter 11's stepper; then code run in the same kernel sets their traits (``hv.focus = 0``,
``rope.m = 7``, ``gen.step = 4``), as a reader's next cell does. Each time the page's
controls, its numbers (``el.qkv``, compared with the math core's) and the canvases' text
alternatives follow. A value the figure refuses (a ``TraitError`` in the cell) leaves
the picture, its text and the page's numbers as they were.

Skipped without Chromium / Playwright (QKV_REQUIRE_BROWSER=1 turns the skip into a failure).
"""
from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from browser_harness import jupyter
from test_browser import _need_browser
from test_browser_headview import TOKENS, W, _expected_alphas

pytestmark = pytest.mark.browser

CELLS = [
    "import numpy as np\nfrom qkv_viz.viz.headview import head_view\n"
    f"hv = head_view({TOKENS!r}, np.array({W.tolist()!r}), focus='bank', title='who reads whom')\nhv",
    "from qkv_viz.chapters.ch10_positions.widget import rope_widget\nrope = rope_widget()\nrope",
    "from qkv_viz.chapters.ch11_generation.widget import generation_widget\ngen = generation_widget()\ngen",
]
READ_JS = "(e) => { const q = e.closest('.qkv-figure').parentElement.qkv; return JSON.parse(JSON.stringify(q, " \
          "(k, v) => (ArrayBuffer.isView(v) ? Array.from(v) : v))); }"
# Code run in the notebook's kernel, as a next cell would; the reply's status, and the
# kernel errors it caused (forgotten when expected, so book.problems() stays clean).
RUN_JS = """async ([code, refused]) => {
  const seen = window.__qkv.kernelErrors.length;
  const reply = await window.__qkv.widget.sessionContext.session.kernel.requestExecute({code}).done;
  const c = reply.content, added = window.__qkv.kernelErrors.slice(seen);
  if (refused) window.__qkv.kernelErrors.splice(seen);
  return {status: c.status, error: c.status === 'error' ? c.ename + ': ' + c.evalue : '', added};
}"""


def _notebook(folder: pathlib.Path) -> str:
    """A notebook of one code cell per figure (one_cell_notebook's shape)."""
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [],
                     "source": src} for i, src in enumerate(CELLS)],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    (folder / "traits.ipynb").write_text(json.dumps(nb))
    return "traits.ipynb"


@pytest.fixture(scope="module")
def book():
    _need_browser()
    with jupyter("lab") as page_book:
        name = _notebook(page_book.server.root)
        try:
            page_book.open(name)
            page_book.run_all()
            for sel in (".qkv-headview", ".qkv-rope", ".qkv-generation"):
                page_book.page.locator(sel).wait_for(timeout=60_000)
            assert not page_book.problems(), page_book.problems()
            yield page_book
        finally:
            page_book.close()


def _set(book, code: str) -> None:
    """Run ``code`` in the kernel; it must succeed."""
    got = book.page.evaluate(RUN_JS, [code, False])
    assert got["status"] == "ok" and not got["added"], (code, got)


def _refused(book, code: str, trait: str) -> None:
    """Run ``code`` in the kernel; it must raise the TraitError that names ``trait``."""
    got = book.page.evaluate(RUN_JS, [code, True])
    assert got["status"] == "error" and got["error"].startswith(f"TraitError: {trait} = "), (code, got)


def _until(book, fig, ok, what: str) -> dict:
    """The page's numbers once ``ok(state)`` holds (the change travels kernel -> page)."""
    for _ in range(200):
        state = fig.evaluate(READ_JS)
        if state is not None and ok(state):
            return state
        book.page.wait_for_timeout(50)
    pytest.fail(f"the figure never showed {what}; it shows {fig.evaluate(READ_JS)}")


def _picture(book, fig, selector: str) -> dict:
    """What a reader sees and hears: the canvases' pixels and text alternatives, the page's numbers."""
    return {"pixels": book.pixels(selector), "state": fig.evaluate(READ_JS),
            "labels": fig.locator("canvas").evaluate_all("(cs) => cs.map((c) => c.getAttribute('aria-label'))"),
            "message": fig.locator(".qkv-message").first.inner_text()}


def _unchanged(book, fig, selector: str, before: dict) -> None:
    book.page.wait_for_timeout(1000)            # time for a wrong redraw to arrive
    after = _picture(book, fig, selector)
    for key in ("pixels", "state", "labels"):
        assert after[key] == before[key], f"a refused value changed the {key}"
    assert not book.problems(), book.problems()


def test_head_view_follows_focus_tokens_and_title(book):
    fig = book.page.locator(".qkv-headview")
    canvas = fig.locator(".qkv-hv-lines")
    label = lambda: canvas.get_attribute("aria-label")  # noqa: E731
    _until(book, fig, lambda s: s["selected"] == {"side": "q", "index": 2}, "the focus 'bank'")
    pictures = {book.pixels(".qkv-headview")}

    _set(book, "hv.focus = 0")
    state = _until(book, fig, lambda s: (s["selected"] or {}).get("index") == 0, "focus 0")
    np.testing.assert_allclose(np.reshape(state["alphas"], W.shape), _expected_alphas("q", 0), rtol=0, atol=1e-12)
    assert label() == "who reads whom: query 0 only: 'the' attends most to 'the' (0.40); " \
                      "'the' 0.40, 'river' 0.30, 'bank' 0.20, 'flooded' 0.10.", label()
    assert fig.locator(".qkv-hv-q-0").get_attribute("aria-pressed") == "true"
    assert fig.locator(".qkv-hv-q-2").get_attribute("aria-pressed") == "false"
    pictures.add(book.pixels(".qkv-headview"))

    _set(book, "hv.focus = -1")
    state = _until(book, fig, lambda s: s["selected"] is None, "no focus")
    np.testing.assert_allclose(np.reshape(state["alphas"], W.shape), _expected_alphas(None, None), rtol=0, atol=1e-12)
    assert label().startswith("who reads whom: lines from 4 queries to 4 keys"), label()
    pictures.add(book.pixels(".qkv-headview"))
    assert len(pictures) == 3, "setting focus from Python must redraw the lines"

    _set(book, "hv.tokens_k = ['le', 'fleuve', 'rive', 'crue']; hv.title = 'renamed'; hv.focus = 3")
    _until(book, fig, lambda s: (s["selected"] or {}).get("index") == 3, "focus 3")
    book.page.wait_for_function("(c) => c.getAttribute('aria-label').startsWith('renamed: ')", arg=canvas.element_handle())
    assert label() == "renamed: query 3 only: 'flooded' attends most to 'rive' (0.50); " \
                      "'le' 0.20, 'fleuve' 0.20, 'rive' 0.50, 'crue' 0.10.", label()
    assert fig.locator(".qkv-hv-k-2").inner_text() == "rive"
    assert fig.locator(".qkv-hv-k-2").get_attribute("aria-label") == "key 2: rive"
    assert fig.locator(".qkv-hv-title").inner_text() == "renamed"

    before = _picture(book, fig, ".qkv-headview")
    _refused(book, "hv.focus = 4", "focus")
    _refused(book, "hv.tokens_q = ['only one']", "tokens_q")
    _unchanged(book, fig, ".qkv-headview", before)


def test_rope_figure_follows_positions_d_k_base_pair_and_lock(book):
    from qkv_viz.chapters.ch10_positions.widget import rope_widget
    fig = book.page.locator(".qkv-rope")
    core = rope_widget()                         # the same figure in this process: the core's numbers
    label = lambda cls: fig.locator(cls).get_attribute("aria-label")  # noqa: E731
    value = lambda cls: fig.locator(cls).input_value()  # noqa: E731
    start = _until(book, fig, lambda s: s["settings"]["m"] == core.m, "its first state")
    pictures = {book.pixels(".qkv-rope-plane")}

    _set(book, "rope.m = 7; rope.n = 3")
    core.m, core.n = 7, 3
    state = _until(book, fig, lambda s: (s["settings"]["m"], s["settings"]["n"]) == (7, 3), "m = 7, n = 3")
    assert abs(state["dot"] - core.dot) < 1e-9 and abs(state["dot"] - start["dot"]) > 1e-6, (state["dot"], core.dot)
    assert (value(".qkv-rope-m"), value(".qkv-rope-n")) == ("7", "3")
    assert f"(m = 7, n = 3): score {core.dot:.3f}" in label(".qkv-rope-curve"), label(".qkv-rope-curve")
    assert "q at position 7 and k at position 3" in label(".qkv-rope-plane")
    pictures.add(book.pixels(".qkv-rope-plane"))

    _set(book, "rope.pair = 3")
    _until(book, fig, lambda s: s["settings"]["pair"] == 3, "pair 3")
    _set(book, "rope.d_k = 4")                   # two pairs: the drawn one becomes the last, as in Python
    core.d_k = 4
    state = _until(book, fig, lambda s: s["settings"]["dK"] == 4, "d_k = 4")
    assert state["settings"]["pair"] == core.pair == 1, (state["settings"], core.pair)
    assert abs(state["dot"] - core.dot) < 1e-9, (state["dot"], core.dot)
    assert len(state["parts"]) == 2
    assert (value(".qkv-rope-dk"), value(".qkv-rope-pair")) == ("1", "1")
    assert fig.locator(".qkv-rope-pair").get_attribute("max") == "1"
    assert label(".qkv-rope-plane").startswith("pair 1 (coordinates 2, 3)"), label(".qkv-rope-plane")
    pictures.add(book.pixels(".qkv-rope-plane"))

    _set(book, "rope.base = 1000.0; rope.lock = True")
    core.base = 1000.0
    state = _until(book, fig, lambda s: s["settings"]["base"] == 1000 and s["settings"]["lock"], "base 1000, locked")
    assert abs(state["dot"] - core.dot) < 1e-9, (state["dot"], core.dot)
    assert value(".qkv-rope-base") == "2" and fig.locator(".qkv-rope-lock").is_checked()
    assert fig.locator(".qkv-rope-base").get_attribute("aria-valuetext") == "base 1000"
    assert book.page.evaluate("() => window.__qkv.widget.sessionContext.session.kernel.status") == "idle"
    pictures.add(book.pixels(".qkv-rope-plane"))
    assert len(pictures) == 4, "setting traits from Python must redraw the plane"
    assert fig.locator(".qkv-message").inner_text() == ""

    before = _picture(book, fig, ".qkv-rope-plane")
    _refused(book, "rope.m = 99", "m")
    _refused(book, "rope.base = 5.0", "base")
    _refused(book, "rope.pair = 2", "pair")      # d_k = 4 has pairs 0, 1
    _unchanged(book, fig, ".qkv-rope-plane", before)


def test_stepper_follows_step_head_and_kv_heads(book):
    from qkv_viz.chapters.ch11_generation.widget import generation_widget
    fig = book.page.locator(".qkv-generation")
    label = lambda: fig.locator(".qkv-gen-map").get_attribute("aria-label")  # noqa: E731

    def matches_core(state, step, head, n_kv):
        core = generation_widget(step=step, head=head, n_kv_heads=n_kv)
        assert state["settings"] == {"step": step, "head": head, "n_kv_heads": n_kv}, state["settings"]
        assert state["words"] == core.words
        np.testing.assert_allclose(state["weights"], core.weights, rtol=0, atol=1e-12)
        np.testing.assert_allclose(state["logits"], core.logits, rtol=0, atol=1e-12)
        assert state["cache_numbers"] == core.cache_numbers
        return core

    _until(book, fig, lambda s: s["settings"]["step"] == 0, "step 0")
    pictures = {book.pixels(".qkv-gen-map")}
    _set(book, "gen.step = 4")
    state = _until(book, fig, lambda s: s["settings"]["step"] == 4, "step 4")
    core = matches_core(state, 4, 0, 2)
    assert fig.locator(".qkv-gen-step").input_value() == "4"
    assert label().startswith(f'step 4: generated "{core.words[4]}"'), label()
    assert f'[{core.words[4]}]' in fig.locator(".qkv-gen-readout").inner_text()
    pictures.add(book.pixels(".qkv-gen-map"))

    _set(book, "gen.head = 1")
    state = _until(book, fig, lambda s: s["settings"]["head"] == 1, "head 1")
    matches_core(state, 4, 1, 2)
    assert fig.locator(".qkv-gen-head").input_value() == "1"
    assert "Head 1's weights" in label(), label()
    pictures.add(book.pixels(".qkv-gen-map"))

    _set(book, "gen.step = 6")                  # the last token of the 2-head sentence
    _until(book, fig, lambda s: s["settings"]["step"] == 6, "step 6")
    _set(book, "gen.n_kv_heads = 1")            # a shorter sentence: the step moves to its end, as in Python
    state = _until(book, fig, lambda s: s["settings"]["n_kv_heads"] == 1, "1 K/V head")
    last = len(generation_widget(step=0, head=1, n_kv_heads=1).words) - 1   # the 1-K/V-head sentence's end
    assert last < 6, "the averaged writer's sentence should be the shorter one"
    core = matches_core(state, last, 1, 1)
    assert book.page.evaluate(RUN_JS, [f"assert (gen.step, gen.n_kv_heads) == ({last}, 1), gen.step", False])["status"] == "ok"
    assert fig.locator(".qkv-gen-kv").input_value() == "1" and fig.locator(".qkv-gen-step").input_value() == str(last)
    assert f", {core.cache_numbers} numbers)" in label() and "(1 K/V head," in label(), label()
    pictures.add(book.pixels(".qkv-gen-map"))
    assert len(pictures) == 4, "setting traits from Python must redraw the stepper"

    before = _picture(book, fig, ".qkv-gen-map")
    _refused(book, "gen.step = 99", "step")
    _refused(book, "gen.head = 2", "head")
    _refused(book, "gen.n_kv_heads = 3", "n_kv_heads")
    _unchanged(book, fig, ".qkv-gen-map", before)
