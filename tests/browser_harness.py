"""Drive the book in a real JupyterLab + Chromium (used by tests/test_browser.py and
benchmarks/bench_browser.py).

    with lab_server(src_dir) as lab, lab_browser(lab) as book:
        book.open("04_scaling_and_saturation.ipynb")
        book.run_all()
        assert book.problems() == []

``lab_server`` starts JupyterLab through the project's launcher (scripts/lab.py:
127.0.0.1, a free port, a random token) on a temporary copy of a notebook folder and
always stops it. ``lab_browser`` opens Debian's Chromium through Playwright and records
every console error, page error and request to a host other than the loopback address
(those requests are also blocked: the book must work offline).
"""
from __future__ import annotations

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
}


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
    env.pop("MPLBACKEND", None)  # `make test` sets Agg; the book's widgets need ipympl
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
    argv += ["--LabApp.expose_app_in_browser=True"]  # window.jupyterapp for the commands
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


@contextlib.contextmanager
def lab_browser(server: LabServer, viewport=(1280, 1000)):
    """Chromium on ``server``'s JupyterLab; yields a :class:`Book` once Lab has started."""
    from playwright.sync_api import sync_playwright
    exe = chromium_path()
    if exe is None:
        raise RuntimeError("Chromium not found (apt-get install chromium, or set QKV_CHROMIUM)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
            book = Book(context.new_page(), server)
            book.start()
            yield book
        finally:
            browser.close()


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
CLOSE_JS = """async () => {
  if (!window.__qkv) return;   // nothing opened (open() failed)
  const w = window.__qkv.widget;
  window.__qkv = undefined;
  await w.sessionContext.shutdown();
  w.context.model.dirty = false;
  w.dispose();
}"""
# Pixel watch on a widget: the biggest <canvas> inside the element (ipympl), else its <img>.
PIXELS_JS = """() => { window.__qkvPixels = (sel) => {
  const root = window.__qkv.widget.node.querySelector(sel);
  if (!root) throw new Error('no element ' + sel + ' in the notebook');
  const canvases = [...root.querySelectorAll('canvas')];
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
    const tick = (now) => {
      if (tKey !== null && pixels() !== before) return done(now - tKey);
      if (performance.now() - t0 > timeoutMs) return done(null);
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}"""


class Book:
    """One JupyterLab page: open a notebook, run it, collect what went wrong."""

    def __init__(self, page, server: LabServer):
        self.page, self.server = page, server
        self.console_errors, self.page_errors, self.external_requests = [], [], []

    def start(self, timeout_ms: int = 60_000) -> None:
        page = self.page
        page.on("console", lambda m: m.type == "error" and self.console_errors.append(
            f"{m.text[:300]} ({m.location.get('url', '')[:200]})"))
        page.on("pageerror", lambda e: self.page_errors.append(str(e)))
        page.on("websocket", lambda ws: self._check_url(ws.url))
        page.context.on("request", lambda r: self._check_url(r.url))
        page.context.route(lambda url: not is_loopback(url), lambda route: route.abort())
        page.set_default_timeout(timeout_ms)
        page.goto(self.server.url)
        page.wait_for_function("() => window.jupyterapp !== undefined", timeout=timeout_ms)
        page.evaluate("async () => { await window.jupyterapp.restored; }")
        page.evaluate(PIXELS_JS)

    def clear(self) -> None:
        """Forget console errors, page errors and requests seen so far."""
        for seen in (self.console_errors, self.page_errors, self.external_requests):
            seen.clear()

    def _check_url(self, url: str) -> None:
        if not is_loopback(url):
            self.external_requests.append(url)

    def open(self, path: str) -> None:
        self.page.evaluate(OPEN_JS, path)

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

    def close(self) -> None:
        """Shut the notebook's kernel down and close its tab."""
        self.page.evaluate(CLOSE_JS)


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
