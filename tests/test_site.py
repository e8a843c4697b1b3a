"""The static web edition (scripts/build_site.py), built in a temporary folder and read in Chromium.

Served on 127.0.0.1 with every other host blocked: no page may ask another host,
none may log a console error, pages with maths must show typeset maths, the
previous/next links must lead through the book, and every interactive figure
must answer its controls without a kernel.
"""
from __future__ import annotations

import functools
import http.server
import json
import threading
from urllib.parse import urlparse

import pytest

from browser_harness import CHROMIUM_ARGS, REPO, chromium_path

import build_site  # scripts/ is on sys.path via the fixture below

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    info = build_site.build(out, sorted((REPO / "notebooks").glob("*.ipynb")))
    return out, info


@pytest.fixture(scope="module")
def server(site):
    out, _ = site
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.log_message = lambda *a, **k: None
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium not found (apt-get install chromium)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def open_page(browser, url):
    """A page that records console errors and requests to any host but 127.0.0.1 (then blocked)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.qkv_errors, page.qkv_foreign = [], []
    page.on("console", lambda m: m.type == "error" and page.qkv_errors.append(m.text))
    page.on("pageerror", lambda e: page.qkv_errors.append(str(e)))

    def route(r):
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            return r.continue_()
        page.qkv_foreign.append(r.request.url)
        return r.abort()

    page.route("**/*", route)
    page.goto(url, wait_until="load")
    return page


def test_the_site_has_an_index_and_one_page_per_chapter(site):
    out, info = site
    chapters = sorted((REPO / "notebooks").glob("*.ipynb"))
    assert info["pages"] == len(chapters) + 1
    index = (out / "index.html").read_text()
    for nb in chapters:
        assert (out / f"{nb.stem}.html").is_file()
        assert f"href='{nb.stem}.html'" in index
    for page in out.glob("*.html"):
        text = page.read_text()
        assert "cdnjs" not in text and "unpkg" not in text and "jsdelivr" not in text, page.name
        assert ".ipynb'" not in text and '.ipynb"' not in text, f"{page.name} links a notebook"


def test_every_character_the_site_prints_has_a_shipped_font(site):
    from fontTools.ttLib import TTFont

    out, _ = site
    covered = set()
    for f in (out / "static" / "fonts").iterdir():
        covered |= set(TTFont(str(f)).getBestCmap())
    import re
    text = "".join(re.sub(r"<[^>]+>", " ", p.read_text()) for p in out.glob("*.html"))
    text = re.sub(r"data:[^\"' )]+", "", text)  # embedded images and data are not printed
    missing = sorted({c for c in text if ord(c) > 127 and ord(c) not in covered})
    assert missing == [], (f"characters without a font in site/static/fonts: {''.join(missing)}; "
                           "run scripts/build_site.py --refresh-cjk-font (needs fonts-wqy-microhei)")


def test_pages_load_offline_with_maths_and_navigation(site, server, browser):
    out, _ = site
    pages = sorted(p.name for p in out.glob("[0-9]*.html"))
    page = open_page(browser, f"{server}/index.html")
    assert page.qkv_foreign == [] and page.qkv_errors == []
    page.click(f"a[href='{pages[0]}']")
    seen = []
    for i, name in enumerate(pages):
        page.wait_for_load_state("load")
        assert page.url.endswith(name), (page.url, name)
        source = (out / name).read_text()
        if "$" in source:
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            page.evaluate("() => MathJax.startup.promise")
            assert page.locator("mjx-container").count() > 0, f"{name}: no typeset maths"
            raw = page.evaluate("() => document.querySelector('main').innerText.match(/\\$\\\\(sqrt|frac)/g)")
            assert raw is None, f"{name}: raw LaTeX left: {raw}"
        seen.append(name)
        if i + 1 < len(pages):
            page.locator("nav.qkv-nav a.qkv-next").first.click()
    assert seen == pages
    page.locator("nav.qkv-nav a.qkv-prev").first.click()
    page.wait_for_load_state("load")
    assert page.url.endswith(pages[-2])
    assert page.qkv_foreign == [], page.qkv_foreign
    assert page.qkv_errors == [], page.qkv_errors
    page.close()


CANVASES_JS = "(root) => [...root.querySelectorAll('canvas')].map(c => c.toDataURL()).join('|')"
FIGURES_JS = "() => [...document.querySelectorAll('.qkv-static')].map(e => e.id)"


def test_every_interactive_figure_moves_without_a_kernel(site, server, browser):
    out, info = site
    figures = {}
    for html_page in sorted(out.glob("[0-9]*.html")):
        page = open_page(browser, f"{server}/{html_page.name}")
        page.wait_for_timeout(300)
        names = page.evaluate(FIGURES_JS)
        if names:
            figures[html_page.name] = names
        for k in range(len(names)):
            root = page.locator(".qkv-static").nth(k)
            root.scroll_into_view_if_needed()
            slider = root.locator("input[type=range]").first
            if slider.count() == 0:
                continue
            before = root.evaluate(CANVASES_JS)
            value, lo, hi = slider.evaluate("s => [s.value, s.min, s.max].map(Number)")
            slider.focus()
            key = "ArrowLeft" if value >= hi else "ArrowRight"
            page.keyboard.press(key)
            page.keyboard.press(key)
            page.wait_for_timeout(150)
            assert slider.evaluate("s => Number(s.value)") != value, f"{html_page.name}: slider did not move"
            after = root.evaluate(CANVASES_JS)
            assert after != before, f"{html_page.name}: figure {names[k]} did not redraw"
        assert page.qkv_foreign == [] and page.qkv_errors == [], (html_page.name, page.qkv_errors)
        page.close()
    assert sum(len(v) for v in figures.values()) == info["live_figures"], (figures, info)
    (REPO / "artifacts").mkdir(exist_ok=True)
    (REPO / "artifacts" / "site_figures.json").write_text(json.dumps(figures, indent=1))


def test_the_scaling_explorer_page_computes_the_cores_numbers(site, server, browser):
    """Chapter 4's page (no kernel): over d_k x scaling x temperature the explorer's weights and
    readouts equal the math core's, and unscaled d_k = 1024 rows are (nearly) one-hot."""
    from test_browser import D_KS, SET_RANGE_JS, SLIDER, TOGGLE, assert_equals_core, browser_numbers

    out_dir, _ = site
    page = open_page(browser, f"{server}/{next(out_dir.glob('04_*.html')).name}")
    fig = page.locator(".qkv-static .qkv-explorer").first
    fig.wait_for()
    fig.scroll_into_view_if_needed()
    seed = browser_numbers(fig)["settings"].get("seed", 0)  # the chapter's explorer uses seed 0
    for temperature in ("1", "0.5"):
        fig.locator(".qkv-temperature").fill(temperature)
        for scale in (True, False):
            if fig.locator(TOGGLE).is_checked() != scale:
                fig.locator(TOGGLE).click()
            for t in (0, 3, 6, len(D_KS) - 1):
                fig.locator(SLIDER).evaluate(SET_RANGE_JS, t)
                assert_equals_core(browser_numbers(fig), seed)
    out = browser_numbers(fig)  # the last setting: d_k = 1024, unscaled
    assert (out["settings"]["dk"], out["settings"]["scale"]) == (1024, False)
    assert out["metrics"]["max_weight"] > 0.9
    assert page.qkv_foreign == [] and page.qkv_errors == [], page.qkv_errors
    page.close()
