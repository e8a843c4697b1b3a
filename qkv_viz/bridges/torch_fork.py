"""A warm parent for ``%%torch`` cells: torch imported once, one forked child per cell (opt-in).

Starting a Python process and importing torch takes about 1.5 s; a chapter run top
to bottom has up to eight torch cells. So with ``QKV_TORCH_CELL_FORK=1`` (Linux)
the first torch cell starts a small parent process that imports torch (and numpy and this package) and then
waits. Each cell runs in a child *forked* from it: a new process with nothing in it
but those imports, exactly as if it had just started, ready in milliseconds. The
parent runs no cell code itself, and it exits after ``idle`` seconds without a
cell (``QKV_TORCH_CELL_IDLE``, default 30), so torch's memory leaves with it while
the reader reads. It is off by default until it has been through a 20-reader
``make classroom`` run (the runs tried with it hung, but so did one without it:
the cause was the classroom script's race with JupyterLab's focus, since fixed).

Protocol on the parent's stdin/stdout: the kernel writes one line, a work folder;
the parent answers ``\\0QKV:ACK`` and ``\\0QKV:CHILD <pid>``, the child's output
comes (around them), then ``\\0QKV:DONE <exit code>``. A cell that times out or is
interrupted is killed by pid and reaped by the parent, which stays warm. Markers start with a NUL byte, which printed text
never holds.
"""
from __future__ import annotations

import atexit
import codecs
import os
import select
import signal
import subprocess
import sys
import time

MARK = b"\0QKV:"


class ParentGone(RuntimeError):
    """The warm parent exited (idle, or killed) before taking the cell."""


class WarmTorch:
    """The kernel's handle on one warm parent process."""

    def __init__(self, env: dict, idle: float):
        self.env, self.cwd = env, os.getcwd()  # a cell sees them as they were when the parent started
        self.proc = subprocess.Popen([sys.executable, "-m", "qkv_viz.bridges.torch_fork", str(idle)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env, cwd=self.cwd, start_new_session=True)
        self._buf = b""
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        atexit.register(self.kill)
        self._expect("READY", timeout=300, echo=True)  # torch's import errors, if any, are shown

    def alive(self) -> bool:
        return self.proc.poll() is None

    def fits(self, env: dict) -> bool:
        """Alive, and started with this environment and working folder (else a fresh process would differ)."""
        return self.alive() and env == self.env and os.getcwd() == self.cwd

    def run(self, work: str, timeout: float | None) -> int:
        """Run the job in ``work`` in a forked child; echo its output; return its exit code."""
        try:
            self.proc.stdin.write(work.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise ParentGone("the warm torch process has exited") from exc
        self._expect("ACK", timeout=60)
        child = int(self._expect("CHILD", timeout=60, echo=True))
        try:
            return int(self._expect("DONE", timeout, echo=True))
        except BaseException:  # timed out or interrupted: stop the cell, let the parent reap it
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self._expect("DONE", timeout=10)
            except BaseException:
                self.kill()
            raise

    def kill(self) -> None:
        """Stop the parent and any child it is running (one process group)."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        atexit.unregister(self.kill)  # a replaced parent is not kept alive until exit

    def _expect(self, word: str, timeout: float | None, echo: bool = False) -> str:
        """Read up to the marker ``word``; print the text before it if ``echo``; return what follows it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            nul = self._buf.find(b"\0")
            text, self._buf = (self._buf, b"") if nul < 0 else (self._buf[:nul], self._buf[nul:])
            if text and echo:
                print(self._decoder.decode(text), end="", flush=True)
            end = self._buf.find(b"\n")
            if self._buf.startswith(MARK) and end >= 0:
                line, self._buf = self._buf[len(MARK):end].decode(), self._buf[end + 1:]
                name, _, rest = line.partition(" ")
                if name != word:
                    raise RuntimeError(f"warm torch process: expected {word}, got {line!r}")
                return rest
            chunk = read_some(fd, deadline, timeout)
            if not chunk:
                self.proc.wait()
                raise ParentGone(f"the warm torch process exited (code {self.proc.returncode}) before {word}")
            self._buf += chunk


def read_some(fd: int, deadline: float | None, timeout: float | None) -> bytes:
    """The next bytes from ``fd`` (b"" once it is closed); TorchCellError after ``deadline``."""
    from qkv_viz.bridges.torch_cell import TorchCellError

    while True:
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            raise TorchCellError(f"the %%torch cell did not finish within timeout={timeout} s; it was stopped")
        if select.select([fd], [], [], left)[0]:
            return os.read(fd, 65536)


def _mark(word: str) -> None:
    sys.stdout.buffer.write(MARK + word.encode() + b"\n")
    sys.stdout.buffer.flush()


def _parent(idle: float) -> int:
    """The warm parent: import the slow things once, then fork one child per job line."""
    import numpy  # noqa: F401  (imported before any fork: the children find them loaded)
    import torch  # noqa: F401
    import torch.nn.functional  # noqa: F401

    from qkv_viz.bridges.torch_cell import _worker

    _mark("READY")
    stdin = sys.stdin.buffer
    while True:
        if not select.select([stdin], [], [], idle)[0]:
            return 0  # nobody needed torch for a while: give its memory back
        line = stdin.readline()
        if not line:
            return 0  # the kernel has gone
        _mark("ACK")
        pid = os.fork()
        if pid == 0:  # the cell's own process
            code = 1
            try:
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the next job line is not the cell's
                code = _worker(line.decode().strip())
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _mark(f"CHILD {pid}")
        _, status = os.waitpid(pid, 0)
        _mark(f"DONE {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    sys.exit(_parent(float(sys.argv[1])))
