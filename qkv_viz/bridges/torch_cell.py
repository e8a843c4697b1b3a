"""Run one notebook cell's torch code in a fresh Python process: the ``%%torch`` cell magic.

Importing torch costs a kernel about 200 MiB, for as long as the kernel lives;
on a class server that is 200 MiB per reader per open chapter. A chapter that
only *checks* a few things against torch does not need to pay it:

    %load_ext qkv_viz.bridges.torch_cell        # once, with the chapter's imports

    %%torch --out out_torch
    import torch
    out_torch = torch.nn.functional.scaled_dot_product_attention(torch.tensor(Q), ...)

The cell runs, top to bottom, in a new Python process that exits when the cell
ends. With ``QKV_TORCH_CELL_FORK=1`` (Linux, opt-in) that process is forked from
a warm parent that has imported torch once and leaves 30 s after the last torch
cell (``torch_fork``), so only a chapter's first torch cell waits for torch. It
sees the notebook's names that it uses (arrays, numbers, strings, imported
modules and functions, the package's dataclasses), copied in by pickle;
nothing it creates comes back except the names after ``--out`` (torch tensors
arrive as numpy arrays). Its printed lines appear under the cell as they come,
with the notebook's numpy print options (``np.set_printoptions``).
A function or class defined in the notebook itself cannot be copied: define it
inside the cell. An error in the cell raises :class:`TorchCellError` here with
the torch process's traceback.
"""
from __future__ import annotations

import ast
import builtins
import codecs
import os
import pickle
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])  # the folder holding qkv_viz/


class TorchCellError(RuntimeError):
    """The code of a ``%%torch`` cell raised; the message holds its traceback."""


def names_used(code: str) -> list[str]:
    """Names the code reads at any depth (sorted); SyntaxError for code that does not parse."""
    tree = ast.parse(code)
    return sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
                   and isinstance(node.ctx, ast.Load)})


def names_defined(code: str) -> set[str]:
    """Names the code binds anywhere: assignments, ``def``, ``class``, imports, loop targets."""
    bound = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return bound


def _portable(name: str, value):
    """``value`` in a form another process can rebuild, or raise ValueError saying why not."""
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if getattr(value, "__module__", None) == "__main__" and isinstance(value, (types.FunctionType, type)):
        raise ValueError(f"{name!r} is defined in this notebook, so the torch process cannot import it: "
                         f"define it inside the %%torch cell")
    try:
        return ("value", pickle.dumps(value))
    except Exception as exc:
        raise ValueError(f"{name!r} ({type(value).__name__}) cannot be copied to the torch process: {exc}") from exc


def run_in_torch_process(code: str, namespace: dict, outputs=(), *, timeout: float | None = None) -> dict:
    """Run ``code`` in a fresh Python process; return ``{name: value}`` for each name in ``outputs``.

    Inputs are the names ``code`` reads that ``namespace`` holds (builtins excepted).
    Output tensors come back as numpy arrays. Printed lines are echoed as they come.
    Raises ValueError naming an input that cannot be copied or an output the code
    did not define, TorchCellError if the code raised.
    """
    outputs = list(outputs)
    bad = [o for o in outputs if not o.isidentifier()]
    if bad:
        raise ValueError(f"outputs must be Python names, got {bad}")
    defined = names_defined(code)
    inputs = {}
    for n in names_used(code):
        if n not in namespace or hasattr(builtins, n) or n.startswith("_"):
            continue
        try:
            inputs[n] = _portable(n, namespace[n])
        except ValueError:
            if n not in defined:  # the cell reads it and cannot make it: say so
                raise
            # the cell defines its own ``n`` (say a function of the same name): use that one
    with tempfile.TemporaryDirectory(prefix="qkv-torch-cell-") as work:  # job in, answer out
        job, result = Path(work) / "job.pkl", Path(work) / "result.pkl"
        numpy = sys.modules.get("numpy")  # the notebook's print options, if it uses numpy
        printoptions = numpy.get_printoptions() if numpy is not None else None
        job.write_bytes(pickle.dumps({"code": code, "inputs": inputs, "outputs": outputs,
                                      "printoptions": printoptions}))
        exit_code = _run_job(work, timeout)
        if not result.exists():
            raise TorchCellError(f"the torch process ended without an answer (exit code {exit_code})")
        answer = pickle.loads(result.read_bytes())
    if "error" in answer:
        raise TorchCellError(answer["error"])
    return answer["outputs"]


_WARM = None  # the warm parent (torch_fork.WarmTorch) of this process's torch cells, if any


def _env() -> dict:
    return dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(
        p for p in (_PACKAGE_ROOT, os.environ.get("PYTHONPATH")) if p))


def _run_job(work: str, timeout: float | None) -> int:
    """Run the job in ``work`` in a new process, echoing its output; return its exit code.

    With ``QKV_TORCH_CELL_FORK=1`` (Linux, opt-in) the process is forked from a warm
    parent that has already imported torch (``torch_fork``); otherwise it is a fresh
    interpreter. Either way it starts with nothing from earlier cells.
    """
    global _WARM
    if sys.platform.startswith("linux") and os.environ.get("QKV_TORCH_CELL_FORK", "0") == "1":
        from qkv_viz.bridges.torch_fork import ParentGone, WarmTorch

        env = _env()
        for _ in range(2):  # a parent that just left for being idle is replaced once
            if _WARM is None or not _WARM.fits(env):
                if _WARM is not None:
                    _WARM.kill()
                _WARM = WarmTorch(env, float(os.environ.get("QKV_TORCH_CELL_IDLE", "30")))
            try:
                return _WARM.run(work, timeout)
            except ParentGone:
                _WARM = None
            except BaseException:  # interrupted or timed out: the cell was stopped (WarmTorch.run)
                if not _WARM.alive():
                    _WARM = None
                raise
        raise TorchCellError("the warm torch process could not be started twice in a row")
    proc = subprocess.Popen([sys.executable, "-m", "qkv_viz.bridges.torch_cell", work], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _echo(proc, timeout)
    finally:
        if proc.poll() is None:  # interrupted or timed out: leave nothing behind
            proc.kill()
        proc.wait()
    return proc.returncode


def _echo(proc, timeout: float | None) -> None:
    """Print the process's output as it arrives until it closes it; TorchCellError after ``timeout`` s."""
    from qkv_viz.bridges.torch_fork import read_some

    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    deadline = None if timeout is None else time.monotonic() + timeout
    while chunk := read_some(proc.stdout.fileno(), deadline, timeout):  # b"": the process has ended
        print(decoder.decode(chunk), end="", flush=True)
    print(decoder.decode(b"", final=True), end="", flush=True)


def _worker(work: str) -> int:
    """The torch process: run the job in ``work``/job.pkl, write ``work``/result.pkl."""
    import importlib
    import linecache
    import traceback

    job = pickle.loads((Path(work) / "job.pkl").read_bytes())
    namespace = {"__name__": "__torch_cell__"}
    try:
        if job.get("printoptions") is not None:
            import numpy

            numpy.set_printoptions(**job["printoptions"])
        for name, (kind, payload) in job["inputs"].items():
            namespace[name] = importlib.import_module(payload) if kind == "module" else pickle.loads(payload)
        source = job["code"]
        linecache.cache["<%%torch cell>"] = (len(source), None, source.splitlines(True), "<%%torch cell>")
        exec(compile(source, "<%%torch cell>", "exec"), namespace)
        missing = [o for o in job["outputs"] if o not in namespace]
        if missing:
            raise NameError(f"--out names {missing} were not defined by the cell")
        answer = {"outputs": {o: _to_numpy(namespace[o]) for o in job["outputs"]}}
        data = pickle.dumps(answer)
    except BaseException:  # the notebook shows the whole story, whatever went wrong
        frames = traceback.format_exc().splitlines()
        cell = next((i for i, f in enumerate(frames) if "<%%torch cell>" in f), 1)  # skip this function's frame
        data = pickle.dumps({"error": "in the %%torch cell:\n" + "\n".join(frames[cell:])})
    sys.stdout.flush()
    (Path(work) / "result.pkl").write_bytes(data)
    return 0


def _to_numpy(value):
    """torch tensors (also inside tuples, lists and dicts) -> numpy; anything else unchanged."""
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    if isinstance(value, (tuple, list)):
        return type(value)(_to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    return value


def out_names(line: str) -> list[str]:
    """The names after ``--out`` (or ``-o``) on a ``%%torch`` line (the text after ``%%torch``)."""
    words = line.split("#", 1)[0].split()  # a comment may follow the options
    if words and words[0] not in ("--out", "-o"):
        raise ValueError(f"%%torch takes only --out NAME ..., got {line.strip()!r}")
    return words[1:]


def torch_magic(line: str, cell: str):
    """``%%torch [--out NAME ...]``: run the cell in a fresh Python process (see the module doc)."""
    from IPython import get_ipython

    shell = get_ipython()
    outputs = run_in_torch_process(cell, shell.user_ns, out_names(line))
    shell.user_ns.update(outputs)


def load_ipython_extension(ipython) -> None:
    """``%load_ext qkv_viz.bridges.torch_cell`` registers ``%%torch``."""
    ipython.register_magic_function(torch_magic, magic_kind="cell", magic_name="torch")


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1]))
