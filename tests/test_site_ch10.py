"""Chapter 10's page of the web edition (scripts/build_site.py), no kernel: the RoPE figure
answers its controls, its numbers equal the math core's to 1e-6, no console error, no request
to another host; chapter 10 sits between 09 and 11 in the navigation."""
from __future__ import annotations

import pytest

from browser_harness import REPO, chromium_path, static_page
from rope_figure_driver import exercise_figure

import build_site  # scripts/ is on sys.path (pyproject's pythonpath)

pytestmark = pytest.mark.browser
NOTEBOOK = REPO / "notebooks" / "10_order_and_positions.ipynb"


@pytest.fixture(scope="module")
def page_html(tmp_path_factory):
    if chromium_path() is None:
        pytest.skip("Chromium not found (apt-get install chromium)")
    out = tmp_path_factory.mktemp("site10")
    info = build_site.build(out, [NOTEBOOK])
    assert info["live_figures"] == 1, info
    return (out / "10_order_and_positions.html").read_text()


def test_the_page_is_in_the_books_order():
    pages = sorted(p.stem for p in (REPO / "notebooks").glob("*.ipynb"))
    i = pages.index("10_order_and_positions")
    assert pages[i - 1].startswith("09_")
    import nbformat
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert "11_generating_text.ipynb" in nb.cells[-1].source
    assert build_site.NOTEBOOK_LINK.sub(r"\1.html", nb.cells[-1].source).count("11_generating_text.html") == 1


def test_rope_figure_moves_and_computes_the_cores_numbers(page_html):
    # The page without its static/ folder: MathJax and fonts do not load, the figure needs neither.
    html = page_html.replace('src="static/mathjax/tex-svg.js"', "")
    with static_page(html, viewport=(1280, 1000)) as (page, problems):
        fig = page.locator(".qkv-static .qkv-rope").first
        fig.wait_for()
        fig.scroll_into_view_if_needed()
        exercise_figure(page, fig)
        problems = [p for p in problems if "static/" not in p and "404" not in p]
        assert problems == [], problems
