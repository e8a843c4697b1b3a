"""A class on one machine: a real JupyterHub with two readers, and nbgitpuller keeping their edits.

``make classroom`` runs the full-size version (20 readers, chapters 4 and 5,
Chromium readers, a misbehaving reader) and prints its BENCH line.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import json
import shutil
import subprocess

import pytest

import classroom  # scripts/classroom.py

pytestmark = pytest.mark.slow


def test_two_readers_run_a_chapter_through_the_hub(tmp_path):
    if not classroom.PROXY.exists():
        pytest.skip("configurable-http-proxy not installed: make classroom-deps")
    # In its own thread: a browser test earlier in this worker leaves Playwright's event loop
    # running in the main thread, where asyncio.run() refuses to start another.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        r = pool.submit(asyncio.run, classroom.run_class(readers=2, chapters=["00"], browsers=0,
                                                         workdir=tmp_path, misbehaving=False)).result()
    assert r["errors"] == []
    assert (r["servers_started"], r["chapters_run"], r["failures"]) == (2, 2, 0)
    assert r["hub_stopped_cleanly"], (tmp_path / "hub.log").read_text()[-3000:]
    assert r["rss_per_reader_mib"] > 20  # the server and a kernel were measured, not nothing
    log = (tmp_path / "hub.log").read_text()
    assert "reader00" in log and "reader01" in log


def test_the_hub_config_limits_memory_per_process(tmp_path, monkeypatch):
    """The local spawner's preexec caps the address space at mem_limit (what the README promises)."""
    import resource
    import runpy

    monkeypatch.setenv("QKV_HUB_STATE", str(tmp_path))
    monkeypatch.setenv("QKV_HUB_SPAWNER", "local")
    monkeypatch.setenv("QKV_HUB_AUTH", "dummy")
    monkeypatch.setenv("QKV_HUB_PASSWORD", "x")
    monkeypatch.setenv("QKV_HUB_MEM_LIMIT", "1G")

    class Config(dict):
        def __getattr__(self, name):
            return self.setdefault(name, Config())

        def __setattr__(self, name, value):
            self[name] = value

    c = Config()
    ns = runpy.run_path(str(classroom.CONFIG), init_globals={"get_config": lambda: c})
    spawner_cls = c.JupyterHub.spawner_class
    assert spawner_cls is ns["BookLocalSpawner"]
    assert c.Spawner.default_url.startswith("/git-pull?") and "lab%2Ftree" in c.Spawner.default_url
    assert any("jupyterhub_idle_culler" in " ".join(s["command"]) for s in c.JupyterHub.services
               if "command" in s)
    code = ("import resource, sys\n"
            "print(resource.getrlimit(resource.RLIMIT_AS)[0])\n"
            "try:\n    bytearray(2 * 2**30)\nexcept MemoryError:\n    print('MemoryError')\n")
    spawner = spawner_cls(mem_limit=2**30, home_dir=str(tmp_path / "home"))
    preexec = spawner.make_preexec_fn("reader")
    out = subprocess.run(["python3", "-c", code], preexec_fn=preexec, capture_output=True, text=True)
    assert out.stdout.split() == [str(2**30), "MemoryError"], out
    assert resource.getrlimit(resource.RLIMIT_AS)[0] != 2**30  # the test process itself untouched


def _git(cwd, *args):
    subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": "/tmp"})


def _nb(text):
    return json.dumps({"cells": [{"cell_type": "code", "source": text, "metadata": {}, "outputs": [],
                                  "execution_count": None}], "metadata": {}, "nbformat": 4,
                       "nbformat_minor": 5}, indent=1) + "\n"


def test_nbgitpuller_keeps_a_students_edit_and_brings_a_new_chapter(tmp_path, monkeypatch):
    if shutil.which("git") is None:
        pytest.skip("git missing")
    from nbgitpuller.pull import GitPuller

    monkeypatch.setenv("HOME", str(tmp_path))
    upstream = tmp_path / "book"
    (upstream / "notebooks").mkdir(parents=True)
    (upstream / "notebooks" / "01_a.ipynb").write_text(_nb("answer = None"))
    (upstream / "notebooks" / "02_b.ipynb").write_text(_nb("x = 1"))
    _git(upstream, "init", "-q", "-b", "main")
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-qm", "book v1")
    student = tmp_path / "home" / "qkv-viz"

    def pull():
        for _ in GitPuller(str(upstream), str(student), branch="main").pull():
            pass

    pull()  # first visit: clone
    (student / "notebooks" / "01_a.ipynb").write_text(_nb("answer = 42  # my work"))
    (upstream / "notebooks" / "02_b.ipynb").write_text(_nb("x = 2  # the authors fixed this"))
    (upstream / "notebooks" / "03_c.ipynb").write_text(_nb("new chapter"))
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-qm", "book v2: a fix and a new chapter")
    pull()  # second visit: merge
    assert "my work" in (student / "notebooks" / "01_a.ipynb").read_text()
    assert "the authors fixed this" in (student / "notebooks" / "02_b.ipynb").read_text()
    assert (student / "notebooks" / "03_c.ipynb").is_file()


def test_the_hub_starts_from_the_configuration_with_its_own_defaults(tmp_path):
    """The README's one-machine command, with every other setting at its default (the systemd
    spawner, PAM): the hub must start and load its spawner. Only where the hub keeps its state
    and which ports it takes are moved, so this test touches nothing outside tmp_path."""
    if not classroom.PROXY.exists():
        pytest.skip("configurable-http-proxy not installed: make classroom-deps")
    import os
    import sys
    import time
    import urllib.request
    from pathlib import Path

    port = classroom.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("QKV_")}
    env.update(QKV_BOOK_PYTHON=sys.executable, QKV_HUB_PROXY=str(classroom.PROXY),  # the README's two
               QKV_HUB_STATE=str(tmp_path / "state"), QKV_HUB_PORT=str(port),
               QKV_HUB_INTERNAL_PORT=str(classroom.free_port()),
               QKV_HUB_PROXY_API_PORT=str(classroom.free_port()))
    log_path = tmp_path / "hub.log"
    with open(log_path, "w") as log:
        hub = subprocess.Popen([str(Path(sys.executable).parent / "jupyterhub"), "-f", str(classroom.CONFIG)],
                               cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
        try:
            deadline, version = time.monotonic() + 90, None
            while time.monotonic() < deadline and hub.poll() is None and version is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/hub/api/", timeout=5) as r:
                        version = json.loads(r.read())["version"]
                except OSError:
                    time.sleep(0.5)
            text = log_path.read_text()
            assert version, f"the hub did not come up with its default configuration:\n{text[-3000:]}"
            assert "Using Spawner: systemdspawner" in text, text[-3000:]
            assert "Using Authenticator: jupyterhub.auth.PAMAuthenticator" in text, text[-3000:]
        finally:
            hub.terminate()
            try:
                code = hub.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(hub.pid, 9)
                code = hub.wait()
    assert code == 0, log_path.read_text()[-3000:]
