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

NOTEBOOKS = REPO / "notebooks"
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
        _skip_or_fail("browser test skipped: no Chromium at /usr/bin/chromium "
                      "(apt-get install chromium, or set QKV_CHROMIUM)")
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


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_runs_clean_in_jupyterlab(book, name):
    try:
        _run_clean(book, name)
    finally:
        book.close()
