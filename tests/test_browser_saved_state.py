"""A notebook a reader runs and saves keeps its figures: the book's JupyterLab settings
(jupyter/overrides.json, installed by `make lab`) turn on the widget manager's "save widget
state", so a saved notebook reopened later (kernel gone) rebuilds its live figures instead of
"Error displaying widget: model not found". JupyterLab autosaves every two minutes, so without
the setting any chapter that ran that long came back broken.

Skipped without Chromium / Playwright (QKV_REQUIRE_BROWSER=1 turns the skip into a failure).
"""
from __future__ import annotations

import json

import pytest

from browser_harness import jupyter, one_cell_notebook
from test_browser import REOPEN_JS, _need_browser

pytestmark = pytest.mark.browser

SOURCE = ("import numpy as np\nfrom qkv_viz.viz.headview import head_view\n"
          "head_view(['the', 'river', 'bank'], np.array([[.6, .3, .1], [.2, .5, .3], [.1, .7, .2]]))")
STATE_MIME = "application/vnd.jupyter.widget-state+json"
VIEW_MIME = "application/vnd.jupyter.widget-view+json"


def test_a_saved_notebook_keeps_its_figures_state_and_reopens_with_them():
    _need_browser()
    with jupyter("lab") as book:
        name = one_cell_notebook(book.server.root, SOURCE, "saved.ipynb")
        book.open(name)
        book.run_all()
        assert not book.problems(), book.problems()
        book.page.evaluate("async () => { await window.__qkv.widget.context.save(); }")
        book.close()  # the kernel is shut down: only the file remains

        saved = json.loads((book.server.root / name).read_text())
        views = [o["data"][VIEW_MIME]["model_id"] for o in saved["cells"][0]["outputs"]
                 if VIEW_MIME in o.get("data", {})]
        state = saved["metadata"].get("widgets", {}).get(STATE_MIME, {}).get("state", {})
        assert views and all(v in state for v in views), \
            f"saved without the figure's widget state (views {views}, {len(state)} models saved)"

        book.clear()
        book.open_saved(name)
        assert not book.page.evaluate(REOPEN_JS), book.page.evaluate(REOPEN_JS)
        assert book.page.locator(".qkv-figure").count() >= 1, "the reopened figure was not rebuilt"
        assert not book.page_problems(), book.page_problems()
        book.close()
