"""Start JupyterLab on the book, safely and offline.

Used by ``make lab`` (on the reader's working copy ``book/``, see
``book_copy.py``) and by the browser test. Listens on 127.0.0.1 only,
keeps token authentication on (Jupyter's own random token, printed in the
URL it logs, unless a token is given), turns off JupyterLab's news feed,
update check and PyPI extension search, and adds ``--allow-root`` only when
run as root (JupyterLab refuses root otherwise).
"""
from __future__ import annotations

import os
import sys


def lab_argv(notebook_dir: str, port: int | None = None, token: str | None = None,
             open_browser: bool = True) -> list:
    """The ``jupyter lab`` command line for the book.

    ``token=None`` lets Jupyter generate a random one and print it; tests pass
    their own (e.g. ``secrets.token_hex(24)``) to log in.
    """
    argv = [sys.executable, "-m", "jupyterlab",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.root_dir={notebook_dir}",
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly"]
    if token is not None:
        if not token:
            raise ValueError("token must not be empty: the book never runs without authentication")
        argv.append(f"--IdentityProvider.token={token}")
    if port is not None:
        argv += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if not open_browser:
        argv.append("--ServerApp.open_browser=False")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")
    return argv


def main() -> None:
    """Open the reader's working copy ``book/`` (created or updated from ``notebooks/`` first)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import book_copy

    root = os.path.dirname(here)
    book = os.path.join(root, "book")
    report = book_copy.sync(os.path.join(root, "notebooks"), book)
    print(book_copy.describe(report, "book"), flush=True)
    book_copy.trust(book, report["added"] + report["updated"] + report["current"])  # live figures on opening
    argv = lab_argv(book, open_browser=os.environ.get("QKV_NO_BROWSER") is None)
    print("Starting JupyterLab on", book, "(127.0.0.1, token auth on)", flush=True)
    os.execv(argv[0], argv)


if __name__ == "__main__":
    main()
