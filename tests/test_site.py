"""The static web edition (scripts/build_site.py), built in a temporary folder and read in Chromium.

Served on 127.0.0.1 with every other host blocked: no page may ask another host,
none may log a console error, pages with maths must show typeset maths, the
previous/next links must lead through the book, and every interactive figure
must answer its controls without a kernel. Accessibility (issue 24): axe-core's WCAG 2.0/2.1
A and AA rules find no serious or critical violation on any page, figures included; every page
has one main landmark, named navs, a skip link, lang, a title, and alt text on every picture.
"""
from __future__ import annotations

import functools
import html.parser
import http.server
import json
import threading
from urllib.parse import unquote, urlparse

import pytest

from browser_harness import REPO, chromium_path, shared_browser

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
    """The process's Chromium, shared with the other browser tests (browser_harness)."""
    if chromium_path() is None:
        pytest.skip("Chromium not found (apt-get install chromium)")
    return shared_browser()


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


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.targets = []

    def handle_starttag(self, tag, attrs):
        self.targets += [v for k, v in attrs if k in ("href", "src") and v]


def test_every_link_of_every_page_leads_to_a_file_of_the_site(site):
    """Chapters link to each other, to their solutions.py and to the README: on the site each
    relative link must resolve to a file it ships (a link to ../qkv_viz/... would 404)."""
    out, _ = site
    checked, dead = 0, []
    for page in sorted(out.glob("*.html")):
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for target in parser.targets:
            if target.startswith(("#", "http:", "https:", "data:", "mailto:", "javascript:", "blob:")):
                continue
            checked += 1
            path = unquote(target.split("#")[0].split("?")[0])
            if path and not (out / path).resolve().is_file():
                dead.append(f"{page.name}: {target}")
    assert checked > 50, f"only {checked} relative links found: the parser missed the pages' links"
    assert not dead, "links that lead nowhere on the site:\n" + "\n".join(dead)
    assert (out / "source" / "README.md").is_file()


def test_a_collapsed_answer_stays_folded_on_the_page(site):
    """A cell saved with its output collapsed (a "predict first" answer) is folded in a <details>
    on its page, its answer inside it, and no other output is."""
    import json
    out, _ = site
    for nb in sorted((REPO / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        hidden = [c for c in cells if c.get("metadata", {}).get("jupyter", {}).get("outputs_hidden")]
        page = (out / f"{nb.stem}.html").read_text()
        folds = page.split('<details class="qkv-answer">')[1:]
        assert len(folds) == len(hidden), f"{nb.name}: {len(hidden)} collapsed outputs, {len(folds)} folds"
        for cell, fold in zip(hidden, folds):
            inside = fold.split("</details>")[0]
            first = "".join(cell["outputs"][0].get("text", "")).splitlines()[0].strip()
            assert html.escape(first, quote=False) in inside, (nb.name, first)


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


# ------------------------------------------------------------------ accessibility (issue 24)
DRAWN_JS = ("() => [...document.querySelectorAll('.qkv-static')].every("
            "e => !e.querySelector(':scope > img') && e.querySelector('canvas, svg, button, input'))")


def drawn_page(browser, url):
    """open_page, then wait until MathJax has typeset and every interactive figure has drawn."""
    page = open_page(browser, url)
    page.wait_for_function("() => !window.MathJax || (MathJax.startup && MathJax.startup.promise)")
    page.evaluate("() => window.MathJax && MathJax.startup.promise")
    page.wait_for_function(DRAWN_JS, timeout=30_000)
    page.wait_for_timeout(200)
    return page


def test_every_page_passes_axe_core(site, server, browser):
    """axe-core's WCAG 2.0/2.1 A and AA rules on the index and every chapter, figures included,
    after they have drawn: no serious or critical violation. All violations (any impact) are
    kept in artifacts/site_axe.json."""
    from browser_harness import run_axe, serious

    out, _ = site
    found, report = {}, {}
    for html_page in sorted(out.glob("*.html")):
        page = drawn_page(browser, f"{server}/{html_page.name}")
        violations = run_axe(page)
        report[html_page.name] = violations
        if serious(violations):
            found[html_page.name] = serious(violations)
        page.close()
    (REPO / "artifacts").mkdir(exist_ok=True)
    (REPO / "artifacts" / "site_axe.json").write_text(json.dumps(report, indent=1))
    assert len(report) == len(list(out.glob("[0-9]*.html"))) + 1
    assert found == {}, "\n".join(f"{name}: {line}" for name, lines in found.items() for line in lines)


class _Landmarks(html.parser.HTMLParser):
    """What a screen reader lists on a page: lang, title, main and nav landmarks (with their
    names), the first link, images without alt, ids."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lang, self.title, self.mains, self.navs, self.links = None, "", 0, [], []
        self.no_alt, self.ids, self._in_title = [], set(), False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "html":
            self.lang = attrs.get("lang")
        elif tag == "title":
            self._in_title = True
        elif tag == "main" or attrs.get("role") == "main":
            self.mains += 1
        elif tag == "nav":
            self.navs.append(attrs.get("aria-label") or attrs.get("aria-labelledby"))
        elif tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        elif tag == "img":
            alt = (attrs.get("alt") or "").strip()
            if not alt or alt.startswith("No description"):
                self.no_alt.append((attrs.get("src") or "")[:40])

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False

    def handle_data(self, data):
        if self._in_title:
            self.title += data


def landmarks(path) -> _Landmarks:
    reader = _Landmarks()
    reader.feed(path.read_text(encoding="utf-8"))
    return reader


def test_the_index_has_one_main_and_named_navs(site):
    out, _ = site
    index = landmarks(out / "index.html")
    assert index.lang == "en" and index.title.strip()
    assert index.mains == 1, index.mains
    assert index.navs and all(index.navs), index.navs
    assert len(set(index.navs)) == len(index.navs), index.navs


def test_every_chapter_page_has_landmarks_a_skip_link_and_alt_texts(site):
    """One main (the skip link's target, and the first link on the page), a named, unique nav at
    the top and bottom, lang and a title naming the chapter, and alt text on every picture that
    says which figure of which chapter it is (build_site.figure_alt)."""
    out, _ = site
    for path in sorted(out.glob("[0-9]*.html")):
        page = landmarks(path)
        assert page.lang == "en", path.name
        assert page.title.endswith(" - qkv-viz") and len(page.title) > len(" - qkv-viz"), page.title
        assert page.mains == 1, (path.name, page.mains)
        assert len(page.navs) == 2 and all(page.navs) and len(set(page.navs)) == 2, (path.name, page.navs)
        assert page.links[0] == "#main" and "main" in page.ids, (path.name, page.links[:2])
        assert page.no_alt == [], (path.name, page.no_alt)
    text = "".join(p.read_text(encoding="utf-8") for p in out.glob("[0-9]*.html"))
    assert "No description has been provided" not in text
    assert 'alt="Figure 1 of chapter 4, Scaling and saturation' in text


def test_figure_alt_says_what_the_code_draws():
    import nbformat

    cell = nbformat.v4.new_code_cell(
        "fig, axes = plt.subplots(1, 2)\n"
        "attention_heatmap(w, ax=axes[0], title=\"no mask\")\n"
        "axes[1].set_title(f\"layer {l}: causal\")\naxes[1].set_xlabel('keys')\n")
    alt = build_site.figure_alt(cell, 2, "7. Cross-attention and masks", "The causal mask")
    assert alt == ("Figure 2 of chapter 7, Cross-attention and masks, section \u201cThe causal mask\u201d: "
                   "no mask; layer \u2026: causal (x axis: keys).")
    cell.metadata["alt"] = "Two maps: the causal mask hides the future."
    assert build_site.figure_alt(cell, 2, "7. Masks", "").endswith(": Two maps: the causal mask hides the future.")
    bare = nbformat.v4.new_code_cell("# the first batch\nshow(x)")
    assert build_site.figure_alt(bare, 1, "5. Bug", "S") == "Figure 1 of chapter 5, Bug, section \u201cS\u201d: the first batch."
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from qkv_viz.chapters.ch04_scaling import figures\nfigures.variance_figure(d_ks, a, b);")])
    doc = build_site.plotting_docs(nb.cells[0].source, build_site.notebook_imports(nb))
    assert doc and doc[0].startswith("How does Var(q . k) grow with d_k?"), doc


def test_axe_sees_a_violation_when_there_is_one(site, server, browser):
    """The axe test can fail: pale grey text put on the index is found."""
    from browser_harness import run_axe, serious

    page = open_page(browser, f"{server}/index.html")
    page.evaluate("""() => { const p = document.createElement('p'); p.textContent = 'too pale';
                             p.style.color = '#bbbbbb'; document.querySelector('main').append(p); }""")
    found = serious(run_axe(page))
    assert any(line.startswith("color-contrast") for line in found), found
    page.close()


def test_the_skip_link_is_the_first_tab_stop_and_leads_to_the_chapter(site, server, browser):
    out, _ = site
    name = sorted(p.name for p in out.glob("[0-9]*.html"))[1]
    page = open_page(browser, f"{server}/{name}")
    hidden = page.locator("a.qkv-skip").bounding_box()
    assert hidden["y"] + hidden["height"] <= 0, hidden  # off screen until focused
    page.keyboard.press("Tab")
    assert page.evaluate("() => document.activeElement.className") == "qkv-skip"
    shown = page.locator("a.qkv-skip").bounding_box()
    assert shown["y"] >= 0 and shown["height"] > 0, shown  # visible with the focus
    page.keyboard.press("Enter")
    page.wait_for_function("() => location.hash === '#main'")
    assert page.qkv_errors == [], page.qkv_errors
    page.close()
