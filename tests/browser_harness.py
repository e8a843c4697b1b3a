"""Drive the book in a real JupyterLab or Jupyter Notebook 7 + Chromium (used by
tests/test_browser.py and benchmarks/bench_browser.py).

    with lab_server(src_dir) as lab, lab_browser(lab, frontend="notebook7") as book:
        book.open("04_scaling_and_saturation.ipynb")
        book.run_all()
        assert book.problems() == []

One server serves both front ends (Notebook 7 is a server extension next to Lab):
``frontend="lab"`` opens notebooks as JupyterLab tabs, ``"notebook7"`` navigates to
``/notebooks/<path>``, the page of Notebook 7. ``static_page(html)`` serves a plain
page (the figures' self-contained text/html, no Jupyter at all).

``lab_server`` starts JupyterLab through the project's launcher (scripts/lab.py:
127.0.0.1, a free port, a random token) on a temporary copy of a notebook folder and
always stops it. ``lab_browser`` opens Debian's Chromium through Playwright and records
every console error, page error and request to a host other than the loopback address
(those requests are also blocked: the book must work offline).

The test suite shares the expensive parts within one pytest process (one xdist worker):
one Chromium (``shared_browser``), and ``jupyter(frontend)``: one Jupyter server per front
end on a copy of notebooks/ (tests write their one-cell notebooks into its root) with one
page, handed from test to test with its notebook closed and its error lists cleared.
``close_shared()`` (tests/conftest.py, at the end of the session) stops them.
"""
from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
# No sandbox (CI runs as root), no GPU, and none of Chromium's own calls home.
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-default-apps", "--disable-extensions", "--disable-features=Translate,MediaRouter",
    "--disable-dev-shm-usage", "--metrics-recording-only", "--no-default-browser-check",
]
LOOPBACK_HOSTS = {"127.0.0.1"}
LOCAL_SCHEMES = {"data", "blob", "about"}
# Lab user settings for the test: render every cell (no virtual scrolling), so every
# widget output is in the page and can be checked.
LAB_USER_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"checkForUpdates": False, "fetchNews": "false"},
    # No autosave on the shared servers: on a loaded machine a test that ran a chapter for more
    # than two minutes had its copy saved mid-test, and the next test opening that file saw
    # another state than the committed one. Tests that check saving save explicitly.
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
}


# Notebook 7.6 (with JupyterLab 4.6) throws this from its own bundle (notebook_core) while
# loading settings, on the file browser page already, before any notebook or widget exists
# (reported upstream by other projects' Playwright tests too). Ignored for notebook7 only
# when the stack is Notebook's core; kept in Book.known_errors.
KNOWN_NB7_ERRORS = ("Cannot read properties of undefined (reading 'schema')",)
# Notebook 7's widget manager logs this when a chapter opened with saved figures is run: an old
# output still rendering meets the new kernel's empty model registry (seen in loaded runs only).
# A figure that really fails still shows "Error displaying widget", which problems() reports.
KNOWN_NB7_CONSOLE = ("Error: widget model not found",)
WIDGET_MANAGER = "@jupyter-widgets/jupyterlab-manager"  # the source of that line
# Notebook 7's debugger (in its own bundle, notebook_core) asks each new kernel for its debug
# state; when a test closes the notebook and its kernel before the reply, it logs this. It is
# the front end's own bookkeeping, not the book's (seen once in a loaded CI run, 2026-12-02).
KNOWN_NB7_DEBUGGER = ("Could not restore the debugger state: Canceled future for debug_request",)
# jupyterlab_widgets 3.0's restore race, on opening a notebook with saved figures: its manager
# restores from the kernel, then from the notebook's saved state; a kernel "connected" event
# while the second is still waiting for the kernel's comm list starts a kernel-only restore that
# marks the manager restored before the saved models exist, and an output asking for its model
# then shows "Error displaying widget: model not found" for good (seen on loaded CI runs).
# open_saved() reopens once when every model an output names IS in the saved state (so the
# file is sound and only the race failed); a file without the state still fails.
SAVED_STATE_JS = """() => {
  const w = window.__qkv.widget;
  const meta = w.context.model.getMetadata('widgets') || {};
  const state = (meta['application/vnd.jupyter.widget-state+json'] || {}).state || {};
  const ids = [];
  w.content.widgets.forEach((cell) => {
    if (cell.model.type !== 'code') return;
    for (const o of cell.model.outputs.toJSON()) {
      const v = o.data && o.data['application/vnd.jupyter.widget-view+json'];
      if (v && v.model_id) ids.push(v.model_id);
    }
  });
  const broken = [...w.node.querySelectorAll('.jp-OutputArea-output')]
    .filter((n) => n.textContent.includes('model not found')).length;
  return {broken, named: ids.length, saved: ids.filter((id) => id in state).length};
}"""
# JupyterLab 4.6's own theme manager, when the theme is switched twice in quick succession
# with outputs on screen (issue 24's "removeChild" after a theme switch): thrown from its core
# bundle alone (every frame in jlab_core), never from a figure's module. Ignored only then.
KNOWN_LAB_ERRORS = ("Failed to execute 'removeChild' on 'Node'",)
# JupyterLab 4.6 opens a kernel subshell for the widgets' comms (jlab_core's
# _maybeStartSubshell); when a test closes the notebook and its kernel before the kernel has
# answered (open_saved's reopen after the restore race), the pending request is disposed and
# its promise rejects with this, with no stack. Lab's own bookkeeping (seen once in a loaded CI
# run, 2026-12-03); ignored only with no frame outside jlab_core.
KNOWN_LAB_SUBSHELL = ("Canceled future for create_subshell_request message before replies were done",)


def one_cell_notebook(folder: pathlib.Path, source: str, name: str) -> str:
    """Write a notebook of one code cell holding ``source`` into ``folder``; return its name."""
    nb = {"cells": [{"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {}, "outputs": [],
                     "source": source}],
          "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
          "nbformat": 4, "nbformat_minor": 5}
    (folder / name).write_text(json.dumps(nb))
    return name


def chromium_path() -> str | None:
    """Path of the Chromium executable, or None. QKV_CHROMIUM, when set, is the only
    candidate (so QKV_CHROMIUM=/nonexistent simulates a machine without Chromium)."""
    env = os.environ.get("QKV_CHROMIUM")
    for path in ((env,) if env else CHROMIUM_CANDIDATES):
        if os.access(path, os.X_OK):
            return path
    return None


def _lab_argv_function():
    """scripts/lab.py's lab_argv, imported from its file path (scripts/ is no package)."""
    spec = importlib.util.spec_from_file_location("qkv_lab_launcher", REPO / "scripts" / "lab.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.lab_argv


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LabServer:
    """A running JupyterLab: ``url`` (with token), ``root`` (the notebook copy), ``log``."""

    def __init__(self, root: pathlib.Path, port: int, token: str, proc, log_path):
        self.root, self.port, self.token, self.proc, self.log_path = root, port, token, proc, log_path
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/lab?token={token}"

    def log(self) -> str:
        return pathlib.Path(self.log_path).read_text(errors="replace")


def _write_user_settings(settings_dir: pathlib.Path) -> None:
    for rel, value in LAB_USER_SETTINGS.items():
        path = settings_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))


def _server_env(tmp: pathlib.Path) -> dict:
    env = dict(os.environ)
    env.pop("MPLBACKEND", None)  # `make test` sets Agg; the notebooks pick their own backend
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env["JUPYTERLAB_SETTINGS_DIR"] = str(tmp / "user-settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(tmp / "workspaces")
    env["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    _write_user_settings(tmp / "user-settings")
    return env


def _wait_until_up(server: LabServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    url = f"{server.base}/api/status?token={server.token}"
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early:\n{server.log()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s:\n{server.log()[-3000:]}")


def _stop(proc) -> None:
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGTERM)  # the server and its kernels (own process group)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextlib.contextmanager
def lab_server(src_dir, timeout: float = 60.0):
    """Start JupyterLab on a temporary copy of ``src_dir``; stop it on exit, whatever happens."""
    import secrets
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="qkv-lab-"))
    root = tmp / "notebooks"
    shutil.copytree(src_dir, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    port, token = free_port(), secrets.token_hex(24)
    argv = _lab_argv_function()(str(root), port=port, token=token, open_browser=False)
    argv += ["--LabApp.expose_app_in_browser=True",  # window.jupyterapp for the commands
             "--JupyterNotebookApp.expose_app_in_browser=True"]
    log_path = tmp / "lab.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, cwd=root, env=_server_env(tmp), stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    server = LabServer(root, port, token, proc, log_path)
    try:
        _wait_until_up(server, timeout)
        yield server
    finally:
        _stop(proc)
        shutil.rmtree(tmp, ignore_errors=True)


def is_loopback(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme in LOCAL_SCHEMES or parts.hostname in LOOPBACK_HOSTS


# --- what one pytest process shares: Chromium, and one Jupyter server + page per front end ---
# (Playwright's sync API runs once per thread: every page of the process comes from here.)
_SHARED: dict = {}
NOTEBOOKS = pathlib.Path(os.environ.get("QKV_BROWSER_NOTEBOOKS", REPO / "notebooks"))


def shared_browser():
    """The process's Chromium through Playwright (headless, offline flags), launched on first
    use and closed by :func:`close_shared` (or at exit)."""
    browser = _SHARED.get("browser")
    if browser is not None and browser.is_connected():
        return browser
    exe = chromium_path()
    if exe is None:
        raise RuntimeError("Chromium not found (apt-get install chromium, or set QKV_CHROMIUM)")
    if "playwright" not in _SHARED:
        from playwright.sync_api import sync_playwright
        _SHARED["playwright"] = sync_playwright().start()
        atexit.register(close_shared)
    _SHARED["browser"] = _SHARED["playwright"].chromium.launch(executable_path=exe, args=CHROMIUM_ARGS,
                                                               headless=True)
    return _SHARED["browser"]


@contextlib.contextmanager
def chromium():
    """The shared Chromium (see :func:`shared_browser`); it stays open after the block."""
    yield shared_browser()


def shared_server(frontend: str):
    """The process's Jupyter server for ``frontend`` on a temporary copy of NOTEBOOKS, started
    on first use. One per front end: with both on one server, jupyter_server's static-file
    cache, shared by Lab's and Notebook's handlers, answers Notebook 7's font requests with
    403 once Lab has asked for a font of the same (hashed) name."""
    key = ("server", frontend)
    if key in _SHARED and _SHARED[key][1].proc.poll() is not None:
        _SHARED.pop(key)[0].__exit__(None, None, None)      # it died: start another
    if key not in _SHARED:
        manager = lab_server(NOTEBOOKS)
        _SHARED[key] = (manager, manager.__enter__())
    return _SHARED[key][1]


@contextlib.contextmanager
def jupyter(frontend: str = "lab", viewport=(1280, 1000)):
    """A :class:`Book` on the process's shared server and page for ``frontend`` (both started
    on first use; ``book.startup_problems`` keeps what the page logged while the application
    started). On exit the open notebook is closed (its kernel shut down), the error lists are
    cleared and the viewport is restored, so the next test starts from the same page."""
    if frontend not in FRONTENDS:
        raise ValueError(f"frontend must be one of {FRONTENDS}, got {frontend!r}")
    server = shared_server(frontend)
    key = ("book", frontend)
    book = _SHARED.get(key)
    if book is None or book.page.is_closed() or book.server is not server:
        if book is not None:
            book.page.context.close()
        context = shared_browser().new_context(viewport={"width": 1280, "height": 1000})
        book = Book(context.new_page(), server, frontend)
        book.start()
        _SHARED[key] = book
    book.clear()
    book.page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
    try:
        yield book
    finally:
        try:
            book.close()
            book.clear()
            book.page.set_viewport_size({"width": 1280, "height": 1000})
        except Exception:               # a page left broken: the next test gets a new one
            _SHARED.pop(key, None)
            with contextlib.suppress(Exception):
                book.page.context.close()


def close_shared() -> None:
    """Stop the shared servers and Chromium (tests/conftest.py calls it when the session ends)."""
    for key in [k for k in _SHARED if isinstance(k, tuple) and k[0] == "server"]:
        with contextlib.suppress(Exception):
            _SHARED.pop(key)[0].__exit__(None, None, None)
    for key in [k for k in _SHARED if isinstance(k, tuple)]:
        _SHARED.pop(key, None)
    for name in ("browser", "playwright"):
        thing = _SHARED.pop(name, None)
        with contextlib.suppress(Exception):
            thing.close() if name == "browser" else thing.stop()


FRONTENDS = ("lab", "notebook7")


@contextlib.contextmanager
def lab_browser(server: LabServer, viewport=(1280, 1000), frontend: str = "lab"):
    """Chromium on ``server``: JupyterLab (``frontend="lab"``) or Notebook 7
    (``"notebook7"``); yields a :class:`Book` once the application has started."""
    if frontend not in FRONTENDS:
        raise ValueError(f"frontend must be one of {FRONTENDS}, got {frontend!r}")
    context = shared_browser().new_context(viewport={"width": viewport[0], "height": viewport[1]})
    try:
        book = Book(context.new_page(), server, frontend)
        book.start()
        yield book
    finally:
        context.close()


@contextlib.contextmanager
def static_page(html: str, viewport=(1000, 1000)):
    """``html`` served from 127.0.0.1 (a plain http.server, nothing else) and opened in
    Chromium with every other host blocked; yields (page, problems) where problems is
    the live list of console errors, page errors and outside requests."""
    import functools
    import http.server
    import threading
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="qkv-static-"))
    (tmp / "index.html").write_text(html)
    (tmp / "favicon.ico").write_bytes(b"")
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(tmp))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        context = shared_browser().new_context(viewport={"width": viewport[0], "height": viewport[1]})
        try:
            page = context.new_page()
            problems = []
            page.on("console", lambda m: m.type == "error" and problems.append(f"console error: {m.text[:300]}"))
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.context.on("request", lambda r: is_loopback(r.url) or problems.append(f"request: {r.url}"))
            page.context.route(lambda url: not is_loopback(url), lambda route: route.abort())
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/index.html")
            yield page, problems
        finally:
            context.close()
    finally:
        server.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)


# --- JavaScript run in the page (window.jupyterapp is exposed by the server flag above) ---
OPEN_JS = """async (path) => {
  const app = window.jupyterapp;
  const w = await app.commands.execute('docmanager:open',
      {path, factory: 'Notebook', kernel: {name: 'python3'}});
  await w.context.ready;
  await w.sessionContext.ready;
  const kernel = w.sessionContext.session.kernel;
  await kernel.info;
  window.__qkv = {widget: w, kernelErrors: []};
  kernel.iopubMessage.connect((_, msg) => {   // errors from widget callbacks too
    const c = msg.content, t = msg.header.msg_type;
    if (t === 'error') window.__qkv.kernelErrors.push(c.ename + ': ' + c.evalue);
    if (t === 'stream' && c.name === 'stderr' && c.text.includes('Traceback'))
      window.__qkv.kernelErrors.push(c.text.slice(-500));
  });
  app.shell.activateById(w.id);
}"""
RUN_ALL_JS = """async () => {
  const app = window.jupyterapp, w = window.__qkv.widget;
  app.shell.activateById(w.id);
  await app.commands.execute('notebook:run-all-cells');
}"""
BUSY_JS = """() => {
  const w = window.__qkv.widget;
  const running = w.content.widgets.some(c => c.model.type === 'code'
      && c.model.executionState === 'running');
  return running || w.sessionContext.session.kernel.status !== 'idle';
}"""
LOADING_JS = """() => [...window.__qkv.widget.node.querySelectorAll('.jp-OutputArea-output')]
    .filter(n => n.textContent.trim() === 'Loading widget...').length"""
UNSETTLED_JS = """() => [...window.__qkv.widget.node.querySelectorAll('.jp-OutputArea-output')]
    .some((n) => n.textContent.trim() === 'Loading widget...'
      || [...n.querySelectorAll('img')].some((i) => !i.complete))"""
PROBLEMS_JS = """() => {
  const w = window.__qkv.widget, found = [...window.__qkv.kernelErrors];
  w.content.widgets.forEach((cell, i) => {
    if (cell.model.type !== 'code') return;
    if (cell.model.executionCount === null && cell.model.sharedModel.getSource().trim())
      found.push(`cell ${i}: not executed`);
    for (const o of cell.model.outputs.toJSON())
      if (o.output_type === 'error') found.push(`cell ${i}: ${o.ename}: ${o.evalue}`);
    for (const n of cell.node.querySelectorAll('.jp-OutputArea-output')) {
      const text = n.textContent.trim();
      if (text.includes('Error displaying widget') || text.startsWith('Javascript Error'))
        found.push(`cell ${i}: ${text.slice(0, 200)}`);
      if (text === 'Loading widget...') found.push(`cell ${i}: widget still "Loading widget..."`);
    }
    for (const n of cell.node.querySelectorAll('.jupyter-widgets-error-widget'))
      found.push(`cell ${i}: widget error view: ${n.textContent.trim().slice(0, 200)}`);
  });
  return found;
}"""
CLOSE_JS = """async (dispose) => {
  if (!window.__qkv) return;   // nothing opened (open() failed)
  const w = window.__qkv.widget;
  window.__qkv = undefined;
  await w.sessionContext.shutdown();
  w.context.model.dirty = false;
  if (dispose) w.dispose();    // Lab: close the tab; Notebook 7: the next open() navigates away
}"""
# Notebook 7: the page of /notebooks/<path> holds one notebook, the shell's current widget.
NB7_OPEN_JS = """async () => {
  const app = window.jupyterapp;
  let w = app.shell.currentWidget;
  for (let i = 0; i < 600 && !(w && w.sessionContext && w.content); i++) {
    await new Promise((r) => setTimeout(r, 100));
    w = app.shell.currentWidget;
  }
  await w.context.ready;
  await w.sessionContext.ready;
  let kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  for (let i = 0; i < 600 && !kernel; i++) {
    await new Promise((r) => setTimeout(r, 100));
    kernel = w.sessionContext.session && w.sessionContext.session.kernel;
  }
  await kernel.info;
  window.__qkv = {widget: w, kernelErrors: []};
  kernel.iopubMessage.connect((_, msg) => {
    const c = msg.content, t = msg.header.msg_type;
    if (t === 'error') window.__qkv.kernelErrors.push(c.ename + ': ' + c.evalue);
    if (t === 'stream' && c.name === 'stderr' && c.text.includes('Traceback'))
      window.__qkv.kernelErrors.push(c.text.slice(-500));
  });
}"""
# The notebook's scrolling element and its full height (for a whole-chapter screenshot).
SCROLLER_JS = """() => {
  const app = window.jupyterapp;
  if (app.shell.collapseLeft) app.shell.collapseLeft();     // Lab: the file browser away
  if (app.shell.collapseRight) app.shell.collapseRight();
  const w = window.__qkv.widget.content.node;
  const all = [w, ...w.querySelectorAll('*')].filter((n) => n.scrollHeight > n.clientHeight + 4
      && getComputedStyle(n).overflowY !== 'visible');
  const s = all[0] || w;
  s.scrollTop = 0;                                          // from the chapter's first cell
  return [s.scrollHeight, s.clientHeight];
}"""
# Pixel watch on a widget: the element if it is a <canvas>, else the biggest <canvas> inside
# it, else its <img>. Looked up in the open notebook, or in the whole page without one.
PIXELS_JS = """() => { window.__qkvPixels = (sel) => {
  const scope = window.__qkv ? window.__qkv.widget.node : document;
  const root = scope.querySelector(sel);
  if (!root) throw new Error('no element ' + sel + ' in the notebook');
  const canvases = root.tagName === 'CANVAS' ? [root] : [...root.querySelectorAll('canvas')];
  if (!canvases.length) { const img = root.querySelector('img'); return () => img ? img.src : ''; }
  const c = canvases.reduce((a, b) => (b.width * b.height > a.width * a.height ? b : a));
  const ctx = c.getContext('2d');
  return () => {            // a strided hash of the pixels: cheap enough for every frame
    const d = new Uint32Array(ctx.getImageData(0, 0, c.width, c.height).data.buffer);
    let h = 2166136261;
    for (let i = 0; i < d.length; i += 7) h = Math.imul(h ^ d[i], 16777619);
    return c.width + 'x' + c.height + ':' + (h >>> 0);
  };
}; }"""
HASH_JS = "(sel) => window.__qkvPixels(sel)()"
# Arm before a key press: resolves with ms from the keydown to the first animation frame
# whose pixels differ (null after timeout_ms).
WATCH_JS = """([sel, timeoutMs]) => {
  const pixels = window.__qkvPixels(sel), before = pixels();
  let tKey = null;
  const onKey = (e) => { if (tKey === null) tKey = e.timeStamp; };
  document.addEventListener('keydown', onKey, true);
  window.__qkvWatch = new Promise((resolve) => {
    const t0 = performance.now();
    const done = (v) => { document.removeEventListener('keydown', onKey, true); resolve(v); };
    const tick = () => {          // performance.now(), not the frame's start time: a long
      const now = performance.now();  // step delays the frame after it, and counts
      if (tKey !== null && pixels() !== before) return done(now - tKey);
      if (performance.now() - t0 > timeoutMs) return done(null);
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}"""


class Book:
    """One JupyterLab or Notebook 7 page: open a notebook, run it, collect what went wrong."""

    def __init__(self, page, server: LabServer, frontend: str = "lab"):
        self.page, self.server, self.frontend = page, server, frontend
        self.console_errors, self.page_errors, self.external_requests = [], [], []
        self.known_errors = []

    def start(self, timeout_ms: int = 60_000) -> None:
        page = self.page
        page.on("console", lambda m: m.type == "error" and self._console_error(m))
        page.on("pageerror", self._page_error)
        page.on("websocket", lambda ws: self._check_url(ws.url))
        page.context.on("request", lambda r: self._check_url(r.url))
        page.context.route(lambda url: not is_loopback(url), lambda route: route.abort())
        page.set_default_timeout(timeout_ms)
        self._goto(self.server.url if self.frontend == "lab"
                   else f"{self.server.base}/tree?token={self.server.token}", timeout_ms)
        self.startup_problems = self.page_problems()   # the application's own start, kept

    def _goto(self, url: str, timeout_ms: int = 60_000) -> None:
        page = self.page
        page.goto(url)
        for attempt in range(3):  # a page that reloads itself while starting: wait again
            try:
                page.wait_for_function("() => window.jupyterapp !== undefined", timeout=timeout_ms)
                page.evaluate("async () => { await window.jupyterapp.restored; }")
                break
            except Exception:
                if attempt == 2:
                    raise
                page.wait_for_timeout(1000)
        page.evaluate(PIXELS_JS)

    def _console_error(self, message) -> None:
        text, url = message.text, message.location.get("url", "")
        known = ((KNOWN_NB7_CONSOLE, WIDGET_MANAGER),   # see KNOWN_NB7_CONSOLE
                 (KNOWN_NB7_DEBUGGER, "static/notebook/notebook_core"))        # see KNOWN_NB7_DEBUGGER
        if self.frontend == "notebook7" and any(text.startswith(t) and src in url for t, src in known):
            self.known_errors.append(text[:300])
            return
        self.console_errors.append(f"{text[:300]} ({url[:200]})")

    def _page_error(self, error) -> None:
        stack = getattr(error, "stack", "") or ""
        if self.frontend == "notebook7" and any(k in str(error) for k in KNOWN_NB7_ERRORS) \
                and "static/notebook/notebook_core" in stack:
            self.known_errors.append(str(error))  # Notebook 7's own, before any cell runs
            return
        frames = [line for line in stack.splitlines() if line.strip().startswith("at ")]
        if any(k in str(error) for k in KNOWN_LAB_ERRORS) and frames \
                and all("/static/lab/jlab_core." in f for f in frames):
            self.known_errors.append(str(error))  # JupyterLab's own theme switch
            return
        if self.frontend == "lab" and any(k in str(error) for k in KNOWN_LAB_SUBSHELL) \
                and all("/static/lab/jlab_core." in f for f in frames):
            self.known_errors.append(str(error))  # see KNOWN_LAB_SUBSHELL
            return
        self.page_errors.append(str(error) + (f" [stack: {stack[:600]}]" if stack else ""))

    def clear(self) -> None:
        """Forget console errors, page errors and requests seen so far."""
        for seen in (self.console_errors, self.page_errors, self.external_requests):
            seen.clear()

    def _check_url(self, url: str) -> None:
        if not is_loopback(url):
            self.external_requests.append(url)

    def open(self, path: str) -> None:
        if self.frontend == "lab":
            self.page.evaluate(OPEN_JS, path)
            return
        self._goto(f"{self.server.base}/notebooks/{urllib.parse.quote(path)}?token={self.server.token}")
        self.page.evaluate(NB7_OPEN_JS)

    def run_new(self, source: str, name: str, timeout: float = 120.0) -> str:
        """Write a notebook of one cell holding ``source`` into the server's folder, open it
        and run it; return its name."""
        self.open(one_cell_notebook(self.server.root, source, name))
        self.run_all(timeout)
        return name

    def run_all(self, timeout: float = 120.0) -> None:
        """Run every cell and wait for the kernel to be idle and widgets to have loaded."""
        self.page.evaluate(RUN_ALL_JS)
        self._wait(BUSY_JS, timeout, "cells still running")
        self._wait(LOADING_JS, 20.0, None)  # widgets still loading are reported by problems()

    def _wait(self, js: str, timeout: float, message: str | None) -> None:
        deadline = time.monotonic() + timeout
        while self.page.evaluate(js):
            if time.monotonic() > deadline:
                if message:
                    raise TimeoutError(f"{message} after {timeout:.0f} s")
                return
            time.sleep(0.2)

    def page_problems(self) -> list:
        """Console errors, page errors and non-loopback requests seen so far."""
        found = [f"console error: {e}" for e in self.console_errors]
        found += [f"page error: {e}" for e in self.page_errors]
        found += [f"request to a non-loopback host: {u}" for u in self.external_requests]
        return found

    def problems(self) -> list:
        """``page_problems()`` plus the open notebook's error outputs, kernel errors and
        broken or still-loading widgets (empty when all is well)."""
        return list(self.page.evaluate(PROBLEMS_JS)) + self.page_problems()

    def pixels(self, selector: str) -> str:
        """A hash of the pixels shown by the widget ``selector`` (canvas or image)."""
        return self.page.evaluate(HASH_JS, selector)

    def key_to_pixels_ms(self, selector: str, key: str, timeout_ms: int = 5000):
        """Press ``key`` (focus must be set) and return the ms until ``selector``'s
        pixels change on screen, or None if they did not change within timeout_ms."""
        self.page.evaluate(WATCH_JS, [selector, timeout_ms])
        self.page.keyboard.press(key)
        return self.page.evaluate("() => window.__qkvWatch")

    def wait_settled(self, timeout: float = 60.0) -> None:
        """A notebook opened, not run: wait (at most ``timeout`` s) until no output says
        "Loading widget..." (each saved figure is drawn or has failed) and every output
        picture has loaded; what is still wrong then is for the caller's checks to report."""
        self._wait(UNSETTLED_JS, timeout, None)

    def open_saved(self, path: str, timeout: float = 60.0) -> None:
        """Open a notebook with saved outputs, not run, and wait until it settles. If an
        output shows "model not found" although the file holds every model its outputs name
        (jupyterlab_widgets' restore race, see SAVED_STATE_JS), note it in known_errors and
        open the notebook once more; what is still wrong then is for the caller to report."""
        since = len(self.console_errors)
        self.open(path)
        self.wait_settled(timeout)
        found = self.page.evaluate(SAVED_STATE_JS)
        if found["broken"] and found["named"] and found["saved"] == found["named"]:
            self.known_errors.append(f"{path}: widget restore race, reopened ({found})")
            self.close()
            if self.frontend == "lab":
                self.page.wait_for_timeout(500)
            self._forgive_restore_race(since)
            self.open(path)
            self.wait_settled(timeout)

    def _forgive_restore_race(self, since: int) -> None:
        """The race's own console line ("widget model not found" from the widget manager),
        logged since console_errors[since], moves to known_errors; anything else stays."""
        race = [e for e in self.console_errors[since:]
                if e.startswith(KNOWN_NB7_CONSOLE) and WIDGET_MANAGER in e]
        self.console_errors[since:] = [e for e in self.console_errors[since:] if e not in race]
        self.known_errors += race

    def close(self) -> None:
        """Shut the notebook's kernel down and close its tab (Lab)."""
        self.page.evaluate(CLOSE_JS, self.frontend == "lab")

    def screenshot_notebook(self, path, max_height: int = 15000) -> None:
        """The whole open notebook in one picture: the viewport is made as tall as the
        notebook (at most ``max_height`` px) for the shot, then restored."""
        size = self.page.viewport_size
        full, visible = self.page.evaluate(SCROLLER_JS)
        height = min(max_height, size["height"] + max(0, full - visible))
        self.page.set_viewport_size({"width": size["width"], "height": height})
        try:
            self.page.wait_for_timeout(800)
            self.page.evaluate(SCROLLER_JS)  # scroll to the top again at the new size
            self.page.wait_for_timeout(300)
            self.page.screenshot(path=str(path))
        finally:
            self.page.set_viewport_size(size)


# --- the renderer's JavaScript without a browser (Node), for fast unit tests ---------
def node_path() -> str | None:
    return shutil.which("node")


def run_js(module_source: str, body: str):
    """Run ``body`` (JavaScript, ending in ``return <json-able value>``) after a figure's ES
    module (``qkv_viz.viz.canvas.module_source``) in Node; return the decoded value.
    The figures' maths (softmaxRows, summarize, allDots, ...) are in scope."""
    code = module_source + "\nconst __out = (() => {\n" + body + "\n})();\n" \
        + "process.stdout.write(JSON.stringify(__out));\n"
    done = subprocess.run([node_path(), "--input-type=module", "-"], input=code, text=True,
                          capture_output=True, timeout=120)
    if done.returncode:
        raise RuntimeError(f"node failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


# --- accessibility: axe-core (npm, `make browser-deps`) in the page ----------------------
AXE_JS = REPO / ".axe" / "node_modules" / "axe-core" / "axe.min.js"
# The WCAG 2.0/2.1 A and AA rules (axe's tags), as issue 24 asks.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def run_axe(page, context: str | None = None, tags=WCAG_TAGS) -> list:
    """Run axe-core on the page (or on the elements matching the CSS selector ``context``)
    and return its violations: dicts with ``id``, ``impact``, ``help`` and ``nodes`` (each
    with ``target`` and ``failureSummary``). Raises if axe-core is not installed."""
    if not AXE_JS.exists():
        raise RuntimeError(f"axe-core is missing at {AXE_JS}: run `make browser-deps`")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=AXE_JS.read_text())
    return page.evaluate(
        """async ([context, tags]) => {
             const r = await axe.run(context || document,
                                     {runOnly: {type: "tag", values: tags}, resultTypes: ["violations"]});
             return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
               nodes: v.nodes.map(n => ({target: n.target, html: n.html.slice(0, 200),
                                          failureSummary: n.failureSummary}))}));
           }""", [context, tags])


def serious(violations) -> list:
    """The serious and critical ones, as short lines a failing assertion can print."""
    return [f"{v['id']} ({v['impact']}): {v['help']} x{len(v['nodes'])}, e.g. "
            f"{v['nodes'][0]['target']} {v['nodes'][0]['html'][:120]}"
            for v in violations if v["impact"] in ("serious", "critical")]
