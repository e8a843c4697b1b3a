"""Chapter 11's page of the web edition (scripts/build_site.py), read in Chromium with no kernel:
it loads offline with typeset maths, its generation stepper answers every control with the
math core's numbers, and it ends by pointing back to the book's start."""
from __future__ import annotations

import pytest

import build_site
from browser_harness import REPO
from test_browser_ch11 import FIG, drive
from test_site import browser, open_page, server  # noqa: F401 - fixtures

pytestmark = pytest.mark.browser
CHAPTER = REPO / "notebooks" / "11_generating_text.ipynb"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site11")
    return out, build_site.build(out, [CHAPTER])


def test_the_page_is_built_with_one_live_figure(site):
    out, info = site
    assert info["pages"] == 2 and info["live_figures"] == 1, info
    html = (out / "11_generating_text.html").read_text()
    assert 'href="00_start_here.html"' in html  # the book's last chapter points back to its start


def test_the_stepper_works_without_a_kernel(site, server, browser):  # noqa: F811
    page = open_page(browser, f"{server}/11_generating_text.html")
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")
    assert page.locator("mjx-container").count() > 0
    fig = page.locator(f".qkv-static {FIG}").first
    fig.wait_for()
    drive(page, fig)
    (REPO / "artifacts").mkdir(exist_ok=True)
    fig.screenshot(path=REPO / "artifacts" / "site_11_generating_text_figure1.png")
    assert page.qkv_foreign == [] and page.qkv_errors == [], (page.qkv_foreign, page.qkv_errors)
    page.close()
