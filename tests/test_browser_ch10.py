"""Chapter 10 in a real JupyterLab and Jupyter Notebook 7 + Chromium: the chapter runs clean in
Lab (the figure's cell alone in Notebook 7), and its RoPE figure answers every control (m, n, "keep n - m fixed", d_k, base, pair drawn) with
pictures and readouts that follow and numbers equal to the math core's to 1e-6; with the offset
kept fixed, the dot product does not move. A reopened (not run) chapter shows the figure or its
picture, never an error. Skipped without Chromium/Playwright unless QKV_REQUIRE_BROWSER=1."""
from __future__ import annotations

import os

import pytest

from browser_harness import NOTEBOOKS, REPO, chromium_path, jupyter, one_cell_notebook
from rope_figure_driver import exercise_figure
from test_browser_dark import _notebook_source

pytestmark = pytest.mark.browser

CHAPTER = "10_order_and_positions.ipynb"
ARTIFACTS = REPO / "artifacts" / "browser"


def _skip_or_fail(reason: str):
    if os.environ.get("QKV_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (QKV_REQUIRE_BROWSER=1 requires the browser test)")
    pytest.skip(reason)


@pytest.fixture(scope="module", params=["lab", "notebook7"])
def book(request):
    if chromium_path() is None:
        _skip_or_fail("no Chromium (/usr/bin/chromium or $QKV_CHROMIUM)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("the playwright Python package is not installed")
    if not (NOTEBOOKS / CHAPTER).exists():
        _skip_or_fail(f"notebooks/{CHAPTER} missing")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with jupyter(request.param) as page_book:
        yield page_book


def _run_chapter_or_its_figure(book) -> str:
    """Lab runs the whole chapter; Notebook 7 the figure's cell alone, as the chapter builds it
    (test_browser.py's rule: chapters run in Lab, Notebook 7 runs the figures). Returns the name."""
    name = CHAPTER
    if book.frontend == "notebook7":
        name = one_cell_notebook(book.server.root, _notebook_source(("ch10",)), "ch10_figure.ipynb")
    book.open(name)
    book.run_all(timeout=240)
    return name


def test_rope_figure_in_the_notebook(book):
    try:
        book.clear()
        name = _run_chapter_or_its_figure(book)
        problems = book.problems()
        assert not problems, f"{name} in {book.frontend}:\n" + "\n".join(problems)
        fig = book.page.locator(".qkv-rope").first
        fig.scroll_into_view_if_needed()
        fig.screenshot(path=ARTIFACTS / f"{book.frontend}_ch10_rope_before.png")
        exercise_figure(book.page, fig)
        fig.screenshot(path=ARTIFACTS / f"{book.frontend}_ch10_rope_after.png")
        problems = book.problems()
        assert not problems, "while using the RoPE figure:\n" + "\n".join(problems)
    finally:
        book.close()


def test_reopened_chapter_shows_the_figure_not_errors(book):
    try:
        book.clear()
        book.open_saved(CHAPTER)
        texts = book.page.evaluate("""() => [...window.__qkv.widget.node.querySelectorAll('.jp-OutputArea-output')]
            .map((n) => n.textContent.trim()).filter((t) => t.includes('Error displaying widget')
              || t.includes('model not found'))""")
        assert not texts, texts
        live = book.page.locator(".qkv-rope").count()
        pictures = book.page.locator(".qkv-static img").evaluate_all(
            "(imgs) => imgs.filter((i) => i.complete && i.naturalWidth > 100).length")
        assert live + pictures >= 1, "neither the live figure nor its picture"
        assert not book.page_problems(), book.page_problems()
    finally:
        book.close()
