"""The calculator's self-contained HTML (no kernel): the page computes size_report's numbers."""
import pytest

from qkv_viz.chapters.ch06_multi_head.calculator import config_calculator, static_html
from qkv_viz.chapters.ch06_multi_head.sizes_figures import size_report
from qkv_viz.core.config import AttentionConfig

pytestmark = pytest.mark.browser

SET_JS = """(el, v) => {
  for (const [k, x] of Object.entries(v)) {
    const i = el.querySelector(`[name=${k}]`);
    if (i.type === 'checkbox') i.checked = x; else i.value = String(x);
    i.dispatchEvent(new Event('input', {bubbles: true}));
  }
  return {rows: el.qkv.rows, message: el.querySelector('.qkv-calc-message').textContent};
}"""


def test_the_bundle_carries_the_static_calculator():
    data = config_calculator(d_model=512, n_heads=8)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert "qkv-static" in data["text/html"] and "value='512'" in data["text/html"]


def test_static_calculator_equals_size_report_and_refuses_bad_shapes():
    from browser_harness import chromium_path, static_page
    if chromium_path() is None:
        pytest.skip("no Chromium")
    page_html = f"<!doctype html><meta charset='utf-8'><body>{static_html()}</body>"
    with static_page(page_html) as (page, problems):
        el = page.locator(".qkv-calculator-static")
        el.wait_for()
        for d_model, n_heads, d_k, d_v, T, bias in [(768, 12, 0, 0, 512, True), (512, 8, 0, 0, 128, False),
                                                  (768, 8, 96, 32, 7, True), (1024, 16, 0, 0, 4096, True),
                                                  (10, 3, 4, 5, 1, False)]:
            out = el.evaluate(SET_JS, dict(d_model=d_model, n_heads=n_heads, d_k=d_k, d_v=d_v, T=T, bias=bias))
            cfg = AttentionConfig(d_model, n_heads, d_k=d_k or None, d_v=d_v or None, bias=bias)
            assert [tuple(r) for r in out["rows"]] == size_report(cfg, T)
        good = el.evaluate(SET_JS, dict(d_model=768, n_heads=12, d_k=0, d_v=0, T=512))["rows"]
        out = el.evaluate(SET_JS, dict(n_heads=7))
        assert "not divisible" in out["message"] and out["rows"] == good  # last good table kept
        out = el.evaluate(SET_JS, dict(n_heads=12, T=0))
        assert "T must be" in out["message"]
        assert not problems, problems
