"""`make lab` opens the chapters with their figures live, before anything is run.

JupyterLab renders a widget output only in a trusted notebook; an untrusted one shows
each figure's still PNG with no controls. `scripts/lab.py` signs the shipped chapters of the
reader's copy (`book_copy.trust`). Here: chapter 1 as `make lab` prepares it opens with the
library figure's three sliders; the same chapter changed by one byte (so unsigned) opens with
the still only, which shows the check can fail.

Skipped without Chromium / Playwright (QKV_REQUIRE_BROWSER=1 turns the skip into a failure).
"""
from __future__ import annotations

import json
import pathlib

import pytest

from browser_harness import jupyter
from test_browser import _need_browser

pytestmark = pytest.mark.browser

import book_copy  # scripts/book_copy.py (scripts/ is on pytest's pythonpath)

ROOT = pathlib.Path(__file__).resolve().parents[1]

CHAPTER = "01_library_analogy.ipynb"
SLIDERS_JS = """() => [...window.__qkv.widget.node.querySelectorAll('.qkv-figure input[type=range]')].length"""
STILLS_JS = """() => [...window.__qkv.widget.node.querySelectorAll('.jp-OutputArea-output img')].length"""


def _sliders(book, name):
    book.open_saved(name)  # opens, settles, and reopens once after the widget restore race
    book.page.wait_for_function("() => !!window.__qkv.widget.node.querySelector('.jp-OutputArea-output')")
    book.page.wait_for_timeout(1500)
    found = book.page.evaluate(SLIDERS_JS), book.page.evaluate(STILLS_JS)
    book.close()
    return found


def test_the_shipped_chapters_open_with_live_figures():
    _need_browser()
    with jupyter("lab") as book:
        root = book.server.root / "trusted"                       # the shared server's own copy
        report = book_copy.sync(ROOT / "notebooks", root)
        book_copy.trust(root, report["added"] + report["current"])  # what make lab does
        changed = json.loads((root / CHAPTER).read_text())
        changed["metadata"]["reader_note"] = "changed"            # not the shipped file: unsigned
        (root / "01_changed.ipynb").write_text(json.dumps(changed))
        sliders, _ = _sliders(book, f"trusted/{CHAPTER}")
        assert sliders >= 3, f"{CHAPTER} opened without its live figure's sliders ({sliders} found)"
        sliders, stills = _sliders(book, "trusted/01_changed.ipynb")
        assert sliders == 0 and stills >= 1, (sliders, stills)   # untrusted: the still only
        assert not book.page_problems(), book.page_problems()
