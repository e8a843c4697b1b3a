"""The browser harness ignores exactly the front ends' own known console errors, nothing else
(no browser needed: Book._console_error is fed messages as Playwright would)."""
from types import SimpleNamespace

from browser_harness import Book

NB_CORE = "http://127.0.0.1:1/static/notebook/notebook_core.c9a6.js"
DEBUGGER = ("Could not restore the debugger state: Canceled future for debug_request message "
            "before replies were done")


def _book(frontend):
    book = Book.__new__(Book)
    book.frontend, book.known_errors, book.console_errors = frontend, [], []
    return book


def _say(book, text, url):
    book._console_error(SimpleNamespace(text=text, location={"url": url}))


def test_notebook7_debugger_bookkeeping_is_known_only_from_notebooks_core():
    book = _book("notebook7")
    _say(book, DEBUGGER, NB_CORE)
    assert book.known_errors and not book.console_errors
    _say(book, DEBUGGER, "http://127.0.0.1:1/files/qkv_viz/viz/js/attention.js")
    assert len(book.console_errors) == 1, "the same words from the book's own code are a problem"


def test_other_errors_and_other_front_ends_are_problems():
    book = _book("notebook7")
    _say(book, "TypeError: cannot read 'qkv'", NB_CORE)
    lab = _book("lab")
    _say(lab, DEBUGGER, NB_CORE)
    assert len(book.console_errors) == 1 and len(lab.console_errors) == 1


def test_a_reopened_restore_race_forgives_only_its_own_line_and_only_since_the_open():
    lab = _book("lab")
    manager = "http://127.0.0.1:1/lab/extensions/@jupyter-widgets/jupyterlab-manager/static/1.js"
    _say(lab, "Error: widget model not found", manager)           # before this open: kept
    since = len(lab.console_errors)
    _say(lab, "Error: widget model not found\n    at x.get_model", manager)
    _say(lab, "Error: widget model not found", "http://127.0.0.1:1/files/qkv_viz/viz/js/a.js")
    _say(lab, "TypeError: qkv", manager)
    lab._forgive_restore_race(since)
    assert len(lab.known_errors) == 1 and "get_model" in lab.known_errors[0]
    assert len(lab.console_errors) == 3, lab.console_errors


SUBSHELL = "Error: Canceled future for create_subshell_request message before replies were done"


class _Error(Exception):
    def __init__(self, message, stack):
        super().__init__(message)
        self.stack = stack


def _throw(book, message, stack):
    book.page_errors = []
    book._page_error(_Error(message, stack))


def test_lab_subshell_bookkeeping_is_known_only_without_a_frame_outside_lab_core():
    lab = _book("lab")
    _throw(lab, SUBSHELL, "")                                              # no stack: lab's own
    assert lab.known_errors and not lab.page_errors
    _throw(lab, SUBSHELL, f"{SUBSHELL}\n    at f (http://127.0.0.1:1/static/lab/jlab_core.1.js:1:1)")
    assert not lab.page_errors
    _throw(lab, SUBSHELL, f"{SUBSHELL}\n    at f (http://127.0.0.1:1/files/qkv_viz/viz/js/a.js:1:1)")
    assert len(lab.page_errors) == 1, "the same words from the book's own code are a problem"
    nb7 = _book("notebook7")
    _throw(nb7, SUBSHELL, "")
    assert len(nb7.page_errors) == 1, "only JupyterLab's subshell start is known"
