"""A class of readers on one machine: ``python scripts/classroom.py --readers 20``.

Starts a real JupyterHub (``classroom/jupyterhub_config.py``, local spawner,
test authenticator, configurable-http-proxy from npm) on 127.0.0.1, creates N
users and starts their servers through the hub's REST API, has each pull the
book with nbgitpuller and run chapters through its own kernel (the server's
session and kernel websocket API, as JupyterLab does), while a few readers
drive the scaling explorer in headless Chromium through the hub and one reader
misbehaves (an endless loop, then an allocation over the memory limit). Then it
stops everything it started and prints

    BENCH classroom readers=N servers_started=N chapters_run=N failures=N p95_slider_ms=...
          rss_per_reader_mib=... hub_rss_mib=... seconds=...

``tests/test_classroom.py`` runs the same with 2 readers and one chapter.
"""
from __future__ import annotations

import argparse
import asyncio
import faulthandler
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from urllib.parse import urlencode

import nbformat
import psutil
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "classroom" / "jupyterhub_config.py"
PROXY = ROOT / ".classroom" / "node_modules" / ".bin" / "configurable-http-proxy"
BOOK = "qkv-viz"  # the folder nbgitpuller clones the book into, in each home
HUB_START_S = 180  # seconds the hub may take to answer (a loaded 2-core cold start took ~60 s)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chapter_path(chapter: str) -> str:
    """'04' -> 'notebooks/04_scaling_and_saturation.ipynb' (relative to the book)."""
    found = sorted((ROOT / "notebooks").glob(f"{chapter}_*.ipynb"))
    if not found:
        raise ValueError(f"no chapter {chapter!r} in notebooks/")
    return f"notebooks/{found[0].name}"


class Hub:
    """A running hub with an API token; ``async with Hub(...) as hub``."""

    def __init__(self, workdir: Path, mem_limit: str = "3G"):
        self.workdir = Path(workdir)
        self.port, self.token, self.password = free_port(), secrets.token_hex(24), secrets.token_hex(12)
        self.url = f"http://127.0.0.1:{self.port}"
        self.mem_limit = mem_limit
        self.proc = None
        self.http = AsyncHTTPClient(max_clients=64)

    def env(self) -> dict:
        if not PROXY.exists():
            raise SystemExit(f"{PROXY} missing: run `make classroom-deps` (npm install of the proxy)")
        env = dict(os.environ)
        env.update(QKV_HUB_SPAWNER="local", QKV_HUB_AUTH="dummy", QKV_HUB_PASSWORD=self.password,
                   QKV_HUB_STATE=str(self.workdir / "state"), QKV_HUB_PORT=str(self.port),
                   QKV_HUB_INTERNAL_PORT=str(free_port()), QKV_HUB_PROXY_API_PORT=str(free_port()),
                   QKV_HUB_PROXY=str(PROXY), QKV_BOOK_PYTHON=sys.executable,
                   QKV_BOOK_REPO=str(ROOT), QKV_BOOK_BRANCH=current_branch(),
                   QKV_HUB_API_TOKEN=self.token, QKV_HUB_MEM_LIMIT=self.mem_limit, QKV_HUB_IDLE="3600",
                   QKV_HUB_EXTRA_ARGS="--LabApp.expose_app_in_browser=True")  # the browser readers' handle
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
        return env

    async def __aenter__(self):
        self.log = open(self.workdir / "hub.log", "w")
        self.proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyterhub"), "-f", str(CONFIG)],
                                     cwd=self.workdir, env=self.env(), stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + HUB_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hub exited at start-up; see {self.workdir / 'hub.log'}")
            try:
                await self.api("GET", "/hub/api/")
                return self
            except (OSError, HTTPClientError):
                await asyncio.sleep(0.3)
        raise TimeoutError(f"the hub did not answer within {HUB_START_S} s; see {self.workdir / 'hub.log'}")

    async def __aexit__(self, *exc):
        self.clean_exit = self.stop()

    def stop(self) -> bool:
        """Stop the hub (it stops the proxy and every server); True if everything it started is gone."""
        if self.proc is None:
            return True
        children = []
        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            pass
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            code = None
        _, alive = psutil.wait_procs(children, timeout=20)
        for p in alive:
            p.kill()
        self.log.close()
        return code == 0 and not alive

    async def api(self, method: str, path: str, body=None, raw: bool = False, timeout: float = 120):
        req = HTTPRequest(self.url + path, method=method, request_timeout=timeout,
                          headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
                          body=None if body is None else json.dumps(body),
                          allow_nonstandard_methods=True)
        resp = await self.http.fetch(req)
        return resp.body if raw else (json.loads(resp.body) if resp.body else None)

    async def start_server(self, user: str, timeout: float = 240) -> None:
        await self.api("POST", f"/hub/api/users/{user}/server", timeout=timeout)  # 201, or 202 pending
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            model = await self.api("GET", f"/hub/api/users/{user}")
            server = model.get("servers", {}).get("")
            if server and server.get("ready"):
                return
            await asyncio.sleep(0.5)
        raise TimeoutError(f"{user}'s server not ready after {timeout} s")

    async def pull_book(self, user: str) -> None:
        """nbgitpuller through the user's server: clone the book, or merge its updates."""
        query = urlencode({"repo": str(ROOT), "branch": current_branch(), "targetpath": BOOK})
        body = (await self.api("GET", f"/user/{user}/git-pull/api?{query}", raw=True, timeout=300)).decode()
        events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
        if not events or events[-1].get("phase") != "finished":
            raise RuntimeError(f"nbgitpuller failed for {user}: {events[-3:]}")

    async def run_chapter(self, user: str, chapter: str, keep_kernel: bool = False) -> dict:
        """Run every code cell of a chapter in a new kernel of ``user``'s server; stop at an error."""
        path = f"{BOOK}/{chapter_path(chapter)}"
        session = await self.api("POST", f"/user/{user}/api/sessions",
                                 {"path": path, "type": "notebook", "name": "",
                                  "kernel": {"name": "python3"}})
        kernel = session["kernel"]["id"]
        nb = nbformat.read(ROOT / chapter_path(chapter), as_version=4)
        cells = [c.source for c in nb.cells if c.cell_type == "code"]
        start = time.perf_counter()
        try:
            async with KernelChannel(self, user, kernel) as channel:
                for i, code in enumerate(cells):
                    reply = await channel.execute(code)
                    if reply["status"] != "ok":
                        return dict(ok=False, cell=i, error=f"{reply.get('ename')}: {reply.get('evalue')}",
                                    seconds=time.perf_counter() - start, session=session["id"])
        finally:
            if not keep_kernel:
                await self.api("DELETE", f"/user/{user}/api/sessions/{session['id']}")
        return dict(ok=True, cells=len(cells), seconds=time.perf_counter() - start, session=session["id"])

    def user_rss_mib(self, user: str) -> float:
        """RSS of ``user``'s server and its kernels, in MiB."""
        total = 0
        for p in psutil.process_iter(["cmdline", "pid"]):
            cmd = " ".join(p.info["cmdline"] or [])
            if "jupyterhub-singleuser" not in cmd:
                continue
            try:
                if p.environ().get("JUPYTERHUB_USER") != user:
                    continue
                total += sum(q.memory_info().rss for q in [p, *p.children(recursive=True)])
            except psutil.NoSuchProcess:
                continue
        return total / 2**20

    def hub_rss_mib(self) -> float:
        return psutil.Process(self.proc.pid).memory_info().rss / 2**20


class KernelChannel:
    """The kernel's websocket (``/api/kernels/<id>/channels``), as JupyterLab talks to it."""

    def __init__(self, hub: Hub, user: str, kernel: str):
        self.url = f"ws://127.0.0.1:{hub.port}/user/{user}/api/kernels/{kernel}/channels"
        self.token = hub.token

    async def __aenter__(self):
        req = HTTPRequest(self.url, headers={"Authorization": f"token {self.token}"})
        self.ws = await websocket_connect(req, max_message_size=256 * 2**20)
        return self

    async def __aexit__(self, *exc):
        self.ws.close()

    async def execute(self, code: str, timeout: float = 300) -> dict:
        msg_id = uuid.uuid4().hex
        await self.ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "classroom",
                       "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no execute_reply within {timeout} s")
            raw = await asyncio.wait_for(self.ws.read_message(), left)
            if raw is None:
                raise ConnectionError("the kernel's websocket closed")
            if isinstance(raw, bytes):
                continue  # binary frames: widget buffers
            msg = json.loads(raw)
            if msg.get("parent_header", {}).get("msg_id") == msg_id and msg["msg_type"] == "execute_reply":
                return msg["content"]


def current_branch() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--abbrev-ref", "HEAD"],
                         capture_output=True, text=True)
    return out.stdout.strip() or "main"


# ------------------------------------------------------------------ the misbehaving reader
BAD_LOOP = "import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass"
BAD_ALLOC = ("try:\n    hog = bytearray({nbytes})\n    print('allocated')\nexcept MemoryError:\n"
             "    print('MemoryError')")


async def misbehave(hub: Hub, user: str, seconds: float, limit_bytes: int) -> dict:
    """An endless loop (bounded so the run ends), then an allocation over the memory limit."""
    session = await hub.api("POST", f"/user/{user}/api/sessions",
                            {"path": f"{BOOK}/scratch.ipynb", "type": "notebook", "name": "",
                             "kernel": {"name": "python3"}})
    async with KernelChannel(hub, user, session["kernel"]["id"]) as ch:
        await ch.execute(BAD_LOOP.format(seconds=seconds), timeout=seconds + 120)
        msg = await ch.execute(BAD_ALLOC.format(nbytes=2 * limit_bytes) + "\nprint('still alive')")
    await hub.api("DELETE", f"/user/{user}/api/sessions/{session['id']}")
    return dict(alloc_status=msg["status"])


# ------------------------------------------------------------------ readers in Chromium
async def drive_explorer(hub: Hub, users: list[str], steps: int = 10) -> list[float]:
    """Log in as each user, open chapter 4 in JupyterLab, run it, press keys on the explorer's
    first slider and time key press -> changed canvas pixels. Returns the times in ms."""
    if not users:
        return []
    return await asyncio.to_thread(_drive_explorer_sync, hub, users, steps)


LANDED_JS = """() => [...window.jupyterapp.shell.widgets('main')].some(
    w => (w.title.label || '').startsWith('00_'))"""  # the landing tab (chapter 0) is open
ACTIVATE_JS = "() => window.jupyterapp.shell.activateById(window.__qkv.widget.id)"  # chapter 4 in front


def _drive_explorer_sync(hub: Hub, users: list[str], steps: int) -> list[float]:
    sys.path.insert(0, str(ROOT / "tests"))
    from browser_harness import BUSY_JS, CHROMIUM_ARGS, OPEN_JS, chromium_path
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        for user in users:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(180_000)
            page.goto(f"{hub.url}/hub/login")
            page.fill("input[name=username]", user)
            page.fill("input[name=password]", hub.password)
            page.click("input[type=submit], button[type=submit]")
            page.wait_for_url("**/lab/**")
            page.wait_for_function("() => window.jupyterapp !== undefined")
            page.evaluate("async () => { await window.jupyterapp.restored; }")
            try:  # the landing page (nbgitpuller's urlpath) opens chapter 0 on its own: let it, first,
                page.wait_for_function(LANDED_JS, timeout=30_000)  # or it takes the focus from chapter 4
            except Exception:
                pass
            page.evaluate(OPEN_JS, f"{BOOK}/{chapter_path('04')}")
            page.evaluate(ACTIVATE_JS)
            # start Run All without awaiting it (its promise waits for the last cell), then poll
            page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
            deadline = time.monotonic() + 420  # the whole class is running chapters meanwhile
            time.sleep(2)
            while page.evaluate(BUSY_JS) and time.monotonic() < deadline:
                time.sleep(0.5)
            page.evaluate(ACTIVATE_JS)
            try:  # a visible, live explorer (an unrun notebook's saved copy may hold a hidden one)
                page.wait_for_selector(".jp-OutputArea-output input.qkv-dk-slider >> visible=true",
                                       timeout=120_000)
            except Exception:
                page.screenshot(path=str(Path(tempfile.gettempdir()) / f"qkv-classroom-{user}.png"))
                raise
            slider = page.locator(".jp-OutputArea-output input.qkv-dk-slider >> visible=true").first
            canvas = page.locator(".jp-OutputArea-output canvas >> visible=true").first
            slider.scroll_into_view_if_needed()
            for i in range(steps):
                before = canvas.evaluate("c => c.toDataURL()")
                slider.focus()
                t0 = time.perf_counter()
                page.keyboard.press("ArrowLeft" if i % 2 else "ArrowRight")
                page.wait_for_function("([c, b]) => c.toDataURL() !== b", arg=[canvas.element_handle(), before],
                                       timeout=10_000, polling="raf")
                times.append((time.perf_counter() - t0) * 1e3)
            page.close()
        browser.close()
    return times


# ------------------------------------------------------------------ the whole run
async def run_class(readers: int, chapters: list[str], browsers: int, workdir: Path,
                    concurrency: int = 4, misbehaving: bool = True) -> dict:
    start = time.perf_counter()
    users = [f"reader{i:02d}" for i in range(readers)]
    result = dict(readers=readers, servers_started=0, chapters_run=0, failures=0, errors=[])
    async with Hub(workdir) as hub:
        await hub.api("POST", "/hub/api/users", {"usernames": users})
        spawning = asyncio.Semaphore(concurrency)  # a class logs in over a minute, not in one instant

        async def arrive(user):
            async with spawning:
                await hub.start_server(user)
                await hub.pull_book(user)

        arrived = await asyncio.gather(*(arrive(u) for u in users), return_exceptions=True)
        result["servers_started"] = sum(not isinstance(a, Exception) for a in arrived)
        result["errors"] += [f"{u}: {a!r}" for u, a in zip(users, arrived) if isinstance(a, Exception)]
        result["failures"] += len(users) - result["servers_started"]
        users = [u for u, a in zip(users, arrived) if not isinstance(a, Exception)]
        gate = asyncio.Semaphore(concurrency)
        rss = {}

        async def reader(user):
            mine = []
            for ch in chapters:
                async with gate:
                    try:
                        out = await hub.run_chapter(user, ch, keep_kernel=True)
                    except Exception as exc:  # a failure of the class, reported, not raised
                        out = dict(ok=False, error=repr(exc))
                if out.get("session"):
                    mine.append(out["session"])
                if out["ok"]:
                    result["chapters_run"] += 1
                else:
                    result["failures"] += 1
                    result["errors"].append(f"{user} chapter {ch}: {out.get('error')} (cell {out.get('cell')})")
            rss[user] = hub.user_rss_mib(user)
            for session in mine:  # only this reader's kernels (a classmate's may still be running)
                await hub.api("DELETE", f"/user/{user}/api/sessions/{session}")

        watchers = users[1:1 + browsers] if misbehaving else users[:browsers]
        limit = _bytes(hub.mem_limit)
        jobs = [reader(u) for u in users]
        bad = misbehave(hub, users[0], seconds=20, limit_bytes=limit) if misbehaving and len(users) > 1 else None
        outcome = await asyncio.gather(drive_explorer(hub, watchers), *(jobs + ([bad] if bad else [])),
                                       return_exceptions=True)
        times = outcome[0]
        if isinstance(times, Exception):  # a reader whose browser failed is a failure of the class
            result["failures"] += 1
            result["errors"].append("browser readers: " + "".join(traceback.format_exception(times))[-1500:])
            times = []
        for o in outcome[1:]:
            if isinstance(o, Exception):
                result["failures"] += 1
                result["errors"].append("".join(traceback.format_exception(o))[-1500:])
        if bad and isinstance(outcome[-1], dict):
            result["misbehaving_alloc"] = outcome[-1]["alloc_status"]
        result["p95_slider_ms"] = float(_percentile(times, 95)) if times else float("nan")
        result["median_slider_ms"] = float(_percentile(times, 50)) if times else float("nan")
        result["rss_per_reader_mib"] = sum(rss.values()) / max(len(rss), 1)
        result["hub_rss_mib"] = hub.hub_rss_mib()
    result["hub_stopped_cleanly"] = hub.clean_exit
    result["seconds"] = time.perf_counter() - start
    return result


def _bytes(spec: str) -> int:
    units = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
    return int(float(spec[:-1]) * units[spec[-1].upper()]) if spec[-1].upper() in units else int(spec)


def _percentile(values, q):
    import numpy as np
    return np.percentile(np.asarray(values, dtype=float), q)


def bench_line(r: dict) -> str:
    return (f"BENCH classroom readers={r['readers']} servers_started={r['servers_started']} "
            f"chapters_run={r['chapters_run']} failures={r['failures']} "
            f"p95_slider_ms={r['p95_slider_ms']:.1f} rss_per_reader_mib={r['rss_per_reader_mib']:.0f} "
            f"hub_rss_mib={r['hub_rss_mib']:.0f} seconds={r['seconds']:.0f} "
            f"median_slider_ms={r['median_slider_ms']:.1f} "
            f"misbehaving_alloc={r.get('misbehaving_alloc', 'none')} "
            f"hub_stopped_cleanly={int(r['hub_stopped_cleanly'])}")


def main(argv=None) -> int:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # `kill -USR1 <pid>`: where is it waiting?
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--readers", type=int, default=20)
    parser.add_argument("--chapters", default="04,05")
    parser.add_argument("--browsers", type=int, default=3, help="readers who drive the explorer in Chromium")
    parser.add_argument("--concurrency", type=int, default=4, help="chapters running at once")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qkv-class-") as tmp:
        r = asyncio.run(run_class(args.readers, args.chapters.split(","), args.browsers, Path(tmp),
                                  concurrency=args.concurrency))
        if r["errors"]:
            print("\n".join(r["errors"][:20]), file=sys.stderr)
        print(bench_line(r), flush=True)
    return 0 if r["failures"] == 0 and r["servers_started"] == r["readers"] else 1


if __name__ == "__main__":
    sys.exit(main())
