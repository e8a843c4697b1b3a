"""Chapter 7 in a real JupyterLab + Chromium: the chapter runs clean (tests/test_browser.py's
checks: no error output, console or page error, outside request or broken widget; pictures
kept), then the reader switches the mask explorer's causal mask off, clicks a cell, and hides
a whole row; each time the page's weights equal the core's masked_softmax of the chapter's
grammar-toy scores, and a hidden row is zeros. (Notebook 7 runs the chapter in test_browser.py.)"""
import os

import numpy as np
import pytest

from browser_harness import REPO, chromium_path, jupyter
from qkv_viz import causal_mask, masked_softmax

pytestmark = pytest.mark.browser

CHAPTER = "07_cross_attention_and_masks.ipynb"
ARTIFACTS = REPO / "artifacts" / "browser"
TOKENS = ["<bos>", "le", "chat", "noir", "<pad>"]   # the decoder's inputs and one <pad>
CELL, LEFT, TOP = 72, 78, 30          # masks.js: cell size and the heatmap's offset in the canvas
READ = "(n) => n.closest('.qkv-figure').parentElement.qkv"


def _scores(tokens=TOKENS):
    """The chapter's explorer head on ``tokens``: its peeking head (each input asks for the next)
    plus its previous-input head (each asks for the one before), strength 8 / sqrt(d_k = 4) = 4
    on each neighbour; <pad> scores 0."""
    n = sum(t != "<pad>" for t in tokens)
    s = np.zeros((len(tokens), len(tokens)))
    s[:n, :n] = 4.0 * np.eye(n, k=1) + 4.0 * np.eye(n, k=-1)
    return s


def _need_browser():
    reason = None
    if chromium_path() is None:
        reason = "no Chromium (looked for /usr/bin/chromium or $QKV_CHROMIUM)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "the playwright Python package is not installed"
    if reason:
        if os.environ.get("QKV_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser test: {reason} (QKV_REQUIRE_BROWSER=1)")
        pytest.skip(f"browser test skipped: {reason}")


def _state(fig, book, expect_causal=None):
    for _ in range(100):
        st = fig.locator(".qkv-mask-map").evaluate(READ)
        if st is not None and (expect_causal is None or st["settings"]["causal"] == expect_causal):
            _state.why = np.array(st["why"]).reshape(5, 5)     # bit 1 causal, 2 padding, 4 clicked
            return np.array(st["mask"], bool).reshape(5, 5), np.array(st["weights"]).reshape(5, 5)
        book.page.wait_for_timeout(50)
    pytest.fail("the mask explorer never reported its state")


def _click(fig, i, j):
    fig.locator(".qkv-mask-map").click(position={"x": LEFT + (j + 0.5) * CELL, "y": TOP + (i + 0.5) * CELL})


def test_mask_explorer_follows_the_reader():
    _need_browser()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    from test_browser import _run_clean
    with jupyter("lab") as book:
        _run_clean(book, CHAPTER)                                  # also the chapter's "runs clean" in Lab
        fig = book.page.locator(".qkv-masks").first
        fig.scroll_into_view_if_needed()
        scores = _scores()
        real = np.broadcast_to(np.arange(5) < 4, (5, 5))              # the chapter opens it with n_real=4: <pad> hidden
        mask, w = _state(fig, book, expect_causal=True)
        np.testing.assert_array_equal(mask, causal_mask(5) & real)
        np.testing.assert_allclose(w, masked_softmax(scores, causal_mask(5) & real), atol=1e-12)
        np.testing.assert_array_equal(_state.why, (~causal_mask(5)) * 1 + (~real) * 2)   # why each cell is hidden
        fig.screenshot(path=ARTIFACTS / "lab_ch07_masks_causal_and_padding.png")

        fig.locator(".qkv-causal-box").click()                     # causal off: le splits between its neighbours
        mask, w = _state(fig, book, expect_causal=False)
        np.testing.assert_array_equal(mask, real)
        np.testing.assert_allclose(w, masked_softmax(scores, mask), atol=1e-12)
        assert w[1, 0] > 0.45 and np.isclose(w[1, 0], w[1, 2])

        _click(fig, 3, 2)                                          # hide chat from noir
        mask, w = _state(fig, book)
        want = real.copy(); want[3, 2] = False
        np.testing.assert_array_equal(mask, want)
        np.testing.assert_allclose(w, masked_softmax(scores, want), atol=1e-12)
        assert w[3, 2] == 0 and np.isclose(w[3].sum(), 1)
        assert _state.why[3, 2] == 4 and _state.why[3, 4] == 2       # clicked, padding

        for j in (0, 1, 3):                                        # hide the rest of noir's row (key 4 is padding)
            _click(fig, 3, j)
        mask, w = _state(fig, book)
        assert not mask[3].any() and np.all(w[3] == 0) and np.all(np.isfinite(w))
        assert "fully masked row(s): noir" in fig.locator(".qkv-message").inner_text()
        fig.screenshot(path=ARTIFACTS / "lab_ch07_masks_noir_hidden.png")
        assert not book.problems(), "\n".join(book.problems())
        book.close()
