"""The book in a real browser: every chapter run in JupyterLab + Chromium, and the
scaling explorer driven with the keyboard and the mouse, as a reader would.

Needs Debian's ``chromium`` (/usr/bin/chromium, or set QKV_CHROMIUM) and the
Playwright Python package; skipped without them, unless QKV_REQUIRE_BROWSER=1
(CI), which turns the skip into a failure. Screenshots go to artifacts/browser/.
"""
from __future__ import annotations

import io
import os
import pathlib

import numpy as np
import pytest

from browser_harness import REPO, chromium_path, lab_browser, lab_server

pytestmark = pytest.mark.browser

NOTEBOOKS = pathlib.Path(os.environ.get("QKV_BROWSER_NOTEBOOKS", REPO / "notebooks"))
SCALING = "04_scaling_and_saturation.ipynb"
ARTIFACTS = REPO / "artifacts" / "browser"
CHAPTERS = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb") if p.name != SCALING)
HEATMAP, SLIDER, TOGGLE, READOUTS = ".qkv-heatmap", ".qkv-dk-slider", ".qkv-scale-toggle", ".qkv-readouts"
HEATMAP_CMAP = "viridis"  # the explorer's colormap for weights, range 0..1


def _skip_or_fail(reason: str):
    if os.environ.get("QKV_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (QKV_REQUIRE_BROWSER=1 requires the browser test)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def book():
    """One JupyterLab (on a temporary copy of notebooks/) and one Chromium page."""
    if chromium_path() is None:
        _skip_or_fail("browser test skipped: no Chromium (looked for /usr/bin/chromium or $QKV_CHROMIUM; "
                      "apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("browser test skipped: the playwright Python package is not installed")
    with lab_server(NOTEBOOKS) as lab, lab_browser(lab) as page_book:
        yield page_book


def _run_clean(book, name: str) -> None:
    """Open ``name``, run all cells, fail on any problem the page shows."""
    book.clear()
    book.open(name)
    book.run_all()
    problems = book.problems()
    assert not problems, f"{name} in JupyterLab:\n" + "\n".join(problems)


def test_jupyterlab_starts_clean(book):
    """Lab itself (its extensions: widgets, ipympl) loads without errors or outside requests."""
    problems = book.page_problems()
    assert not problems, "JupyterLab start-up:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_runs_clean_in_jupyterlab(book, name):
    try:
        _run_clean(book, name)
    finally:
        book.close()


# --- the scaling explorer ---------------------------------------------------------

def _weight_pixels(png: bytes) -> np.ndarray:
    """Colormap value (0..1) of every pixel of a screenshot, NaN where the colour is
    not on the colormap (background, text, axes)."""
    import matplotlib
    import matplotlib.image as mpimg
    rgb = mpimg.imread(io.BytesIO(png), format="png")[::2, ::2, :3].astype(np.float32)
    table = matplotlib.colormaps[HEATMAP_CMAP](np.linspace(0, 1, 256))[:, :3].astype(np.float32)
    flat = rgb.reshape(-1, 3)  # (P, 3)
    d2 = (flat ** 2).sum(1)[:, None] - 2 * flat @ table.T + (table ** 2).sum(1)[None]  # (P, 3) @ (3, 256) -> (P, 256)
    values = d2.argmin(1) / 255.0
    values[d2.min(1) > 0.03 ** 2 * 3] = np.nan
    return values.reshape(rgb.shape[:2])


def _widest_run(mask: np.ndarray) -> slice:
    """The longest run of True in a 1-D mask."""
    best, start = (0, 0), None
    for i, m in enumerate(np.append(mask, False)):
        if m and start is None:
            start = i
        elif not m and start is not None:
            best, start = max(best, (i - start, start)), None
    return slice(best[1], best[1] + best[0])


def heatmap_region(png: bytes) -> np.ndarray:
    """Colormap values inside the heatmap image (the widest block of colormap pixels:
    a colorbar beside it is narrower, lines and text are sparse)."""
    values = _weight_pixels(png)
    on_map = ~np.isnan(values)
    cols = _widest_run(on_map.sum(0) >= 0.5 * on_map.sum(0).max())
    rows = _widest_run(on_map[:, cols].sum(1) >= 0.5 * (cols.stop - cols.start))
    region = values[rows, cols]
    assert region.size >= 100, "no heatmap found in the explorer's screenshot"
    return region


def one_hot_share(region: np.ndarray) -> float:
    """Share of heatmap pixels that are neither ~0 nor ~1 (0 for a one-hot map)."""
    seen = region[~np.isnan(region)]
    return float(np.mean((seen > 0.1) & (seen < 0.9)))


def expected_share(box, scale: bool) -> float:
    """``one_hot_share`` of the weights the math core gives for the explorer's settings
    as shown in the page (every cell is drawn with the same number of pixels)."""
    from qkv_viz.chapters.ch04_scaling.explorer import head_attention
    field = lambda cls: box.locator(f".{cls} input").input_value()  # noqa: E731
    d_k = int(box.locator(f"{SLIDER} .widget-readout").inner_text())
    _, weights, _ = head_attention(int(field("qkv-seed")), 1, int(field("qkv-n")), d_k, scale,
                                   float(field("qkv-temperature")))
    return one_hot_share(weights)


def _click_toggle(toggle) -> bool:
    """Flip the scaling ToggleButton with the mouse; return the new state (True = scaled)."""
    was_on = "mod-active" in (toggle.get_attribute("class") or "")
    toggle.click()
    return not was_on


def _changed(book, readouts, what: str, act) -> None:
    """Do ``act()``; fail unless the heatmap's pixels and the readouts both change."""
    pixels, text = book.pixels(HEATMAP), readouts.inner_text()
    act()
    for _ in range(100):
        if book.pixels(HEATMAP) != pixels and readouts.inner_text() != text:
            return
        book.page.wait_for_timeout(100)
    pytest.fail(f"{what}: heatmap pixels changed: {book.pixels(HEATMAP) != pixels}, "
                f"readouts changed: {readouts.inner_text() != text}")


def _explorer(book):
    """Locators of the (first) scaling explorer in the open notebook."""
    page = book.page
    box = page.locator(".jp-OutputArea-output").filter(has=page.locator(HEATMAP)).first
    box.scroll_into_view_if_needed()
    return (box, box.locator(f"{SLIDER} .noUi-handle"), box.locator(TOGGLE),
            box.locator(READOUTS), box.locator(HEATMAP))


def test_scaling_explorer_in_jupyterlab(book):
    """Keyboard on the d_k slider, mouse on the scaling toggle: pixels and readouts move;
    at the largest d_k without scaling the map is one-hot, with scaling it is not."""
    if not (NOTEBOOKS / SCALING).exists():
        _skip_or_fail(f"notebooks/{SCALING} not written yet")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    key = book.page.keyboard
    try:
        _run_clean(book, SCALING)
        box, handle, toggle, readouts, heatmap = _explorer(book)
        box.screenshot(path=ARTIFACTS / "explorer_before.png")
        handle.focus()
        _changed(book, readouts, "d_k slider, ArrowRight key", lambda: key.press("ArrowRight"))
        box.screenshot(path=ARTIFACTS / "explorer_after_slider.png")
        state = {}
        _changed(book, readouts, "scaling toggle, mouse click",
                 lambda: state.update(on=_click_toggle(toggle)))
        handle.focus()
        _changed(book, readouts, "d_k slider, End key", lambda: key.press("End"))
        share = {state["on"]: one_hot_share(heatmap_region(heatmap.screenshot()))}
        box.screenshot(path=ARTIFACTS / f"explorer_largest_dk_scaled_{state['on']}.png")
        _changed(book, readouts, "scaling toggle at the largest d_k",
                 lambda: state.update(on=_click_toggle(toggle)))
        share[state["on"]] = one_hot_share(heatmap_region(heatmap.screenshot()))
        box.screenshot(path=ARTIFACTS / f"explorer_largest_dk_scaled_{state['on']}.png")
        assert share[False] < 0.05, f"unscaled map at the largest d_k is not one-hot: {share}"
        assert share[True] > 0.05, f"scaled map at the largest d_k looks one-hot too: {share}"
        for on in (False, True):  # the pixels show the math core's weights
            assert share[on] == pytest.approx(expected_share(box, on), abs=0.04), (on, share)
        problems = book.problems()
        assert not problems, "while using the explorer:\n" + "\n".join(problems)
    finally:
        book.close()
