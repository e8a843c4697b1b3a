"""The %%torch cell magic: a cell's torch code runs in a fresh process, the kernel stays torch-free."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from qkv_viz.bridges.torch_cell import TorchCellError, names_used, run_in_torch_process
from qkv_viz.chapters.feedback import check
import qkv_viz as qv


def test_a_torch_result_comes_back_as_numpy_and_equals_ours():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(3, 4, 8))
    code = textwrap.dedent("""
        import torch
        out_t = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(a) for a in (Q, K, V)))
        ours = qv.scaled_dot_product_attention(Q, K, V)[0]   # a module passed in by name
    """)
    got = run_in_torch_process(code, {"Q": Q, "K": K, "V": V, "qv": qv}, ["out_t", "ours"])
    assert isinstance(got["out_t"], np.ndarray) and got["out_t"].dtype == np.float64
    np.testing.assert_allclose(got["out_t"], qv.scaled_dot_product_attention(Q, K, V)[0], atol=1e-12)
    np.testing.assert_array_equal(got["ours"], qv.scaled_dot_product_attention(Q, K, V)[0])


def test_printed_lines_and_package_functions_pass_through(capsys):
    run_in_torch_process("check('two is two', 2 == 2)\nprint('from torch land')", {"check": check})
    out = capsys.readouterr().out
    assert "✔ two is two" in out and "from torch land" in out


def test_an_error_in_the_cell_names_the_line_and_the_exception():
    with pytest.raises(TorchCellError) as err:
        run_in_torch_process("x = 1\ny = x / 0\n", {})
    assert "ZeroDivisionError" in str(err.value) and "y = x / 0" in str(err.value)


def test_a_failed_check_is_reported_with_its_claim():
    with pytest.raises(TorchCellError, match="✘ one is two"):
        run_in_torch_process("check('one is two', 1 == 2)", {"check": check})


def test_a_function_defined_in_the_notebook_is_refused_by_name():
    ns = {}
    exec("def forward(x):\n    return x", ns)
    ns["forward"].__module__ = "__main__"
    with pytest.raises(ValueError, match="'forward' is defined in this notebook"):
        run_in_torch_process("y = forward(1)", ns, ["y"])


def test_an_output_the_cell_did_not_define_is_named():
    with pytest.raises(TorchCellError, match=r"\['z'\] were not defined"):
        run_in_torch_process("y = 1", {}, ["z"])
    with pytest.raises(ValueError, match="must be Python names"):
        run_in_torch_process("y = 1", {}, ["y-1"])


def test_only_names_the_cell_reads_are_copied():
    assert names_used("a = b + c\nfor i in d: print(i)") == ["b", "c", "d", "i", "print"]
    # an unpicklable value the cell does not read is never touched
    run_in_torch_process("y = 2", {"lock": __import__("threading").Lock()}, ["y"])


def test_the_calling_process_never_imports_torch():
    code = textwrap.dedent("""
        import sys
        from qkv_viz.bridges.torch_cell import run_in_torch_process
        got = run_in_torch_process("import torch\\nn = torch.ones(3).sum()", {}, ["n"])
        assert float(got["n"]) == 3.0
        print("torch" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_magic_in_an_ipython_shell():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("%load_ext qkv_viz.bridges.torch_cell", store_history=False).raise_error()
        shell.user_ns["a"] = np.arange(4.0)
        shell.run_cell("%%torch --out b\nimport torch\nb = torch.tensor(a) * 2", store_history=False).raise_error()
        np.testing.assert_array_equal(shell.user_ns["b"], np.arange(4.0) * 2)
        shell.run_cell("%%torch --out c  # a comment\nc = 3", store_history=False).raise_error()
        assert shell.user_ns["c"] == 3
        bad = shell.run_cell("%%torch b\nx = 1", store_history=False)
        assert isinstance(bad.error_in_exec, ValueError)
    finally:
        InteractiveShell.clear_instance()


def test_numpy_print_options_travel_with_the_cell(capsys):
    old = np.get_printoptions()
    try:
        np.set_printoptions(precision=2)
        run_in_torch_process("import numpy as np\nprint(np.array([1 / 3]))", {})
        assert capsys.readouterr().out.strip() == "[0.33]"
    finally:
        np.set_printoptions(**old)


def test_a_cell_may_define_a_name_the_notebook_also_defines():
    """The reader wrote ``attention`` in the notebook; a %%torch cell defining its own must still run."""
    ns = {}
    exec("def attention(x):\n    return -x", ns)
    ns["attention"].__module__ = "__main__"
    got = run_in_torch_process("def attention(x):\n    return 2 * x\ny = attention(3)", ns, ["y"])
    assert got["y"] == 6
    got = run_in_torch_process("from math import sqrt as attention\ny = attention(9)", ns, ["y"])
    assert got["y"] == 3.0


@pytest.mark.parametrize("fork", ["1", "0"])  # forked from the warm parent / a fresh interpreter
def test_a_timeout_stops_a_hung_cell_and_its_process(fork, monkeypatch):
    import time
    monkeypatch.setenv("QKV_TORCH_CELL_FORK", fork)
    start = time.monotonic()
    code = "import os, time\nopen(os.environ['QKV_PID_FILE'], 'w').write(str(os.getpid()))\ntime.sleep(60)"
    import os
    import tempfile
    pid_file = tempfile.mktemp()
    os.environ["QKV_PID_FILE"] = pid_file
    try:
        with pytest.raises(TorchCellError, match="timeout=2"):
            run_in_torch_process(code, {}, timeout=2)
    finally:
        del os.environ["QKV_PID_FILE"]
    assert time.monotonic() - start < 20
    pid = int(open(pid_file).read())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the process is gone (killed, and reaped by its parent)


def test_output_without_a_newline_still_arrives(capsys):
    run_in_torch_process("import sys\nsys.stdout.write('é no newline')", {})
    assert capsys.readouterr().out == "é no newline"


# --- the opt-in warm parent (torch_fork): one torch import, a forked child per cell ----
PIDS = "import os\nme, parent = os.getpid(), os.getppid()"


@pytest.fixture
def warm(monkeypatch):
    """The opt-in warm parent (QKV_TORCH_CELL_FORK=1)."""
    monkeypatch.setenv("QKV_TORCH_CELL_FORK", "1")


def test_cells_are_forked_from_one_warm_parent_and_start_clean(warm):
    a = run_in_torch_process(PIDS + "\nimport torch, qkv_viz\ntorch.set_num_threads(1)\nqkv_viz._left_behind = 1",
                             {}, ["me", "parent"])
    b = run_in_torch_process(PIDS + "\nimport torch, qkv_viz\nthreads = torch.get_num_threads()\n"
                             "left = hasattr(qkv_viz, '_left_behind')", {}, ["me", "parent", "threads", "left"])
    assert a["parent"] == b["parent"] != os.getpid() and a["me"] != b["me"]
    assert b["left"] is False  # nothing of the first cell reached the second
    os.environ["QKV_TORCH_CELL_FORK"] = "0"  # a fresh interpreter per cell gives the same starting state
    fresh = run_in_torch_process(PIDS + "\nimport torch\nthreads = torch.get_num_threads()", {},
                                 ["parent", "threads"])
    assert fresh["parent"] == os.getpid() and fresh["threads"] == b["threads"]


def test_the_warm_parent_leaves_when_idle_and_is_replaced(warm):
    import time
    os.environ["QKV_TORCH_CELL_IDLE"] = "1"
    try:
        first = run_in_torch_process(PIDS, {}, ["parent"])["parent"]
        time.sleep(2.5)  # the parent waits 1 s for another cell, then exits
        psutil = pytest.importorskip("psutil")
        try:  # exited: gone, or a zombie (no memory) until the next cell reaps it
            assert psutil.Process(first).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            pass
        second = run_in_torch_process(PIDS, {}, ["parent"])["parent"]
    finally:
        del os.environ["QKV_TORCH_CELL_IDLE"]
    assert second != first


def test_a_stopped_cell_leaves_the_parent_warm_and_no_zombie(warm):
    parent = run_in_torch_process(PIDS, {}, ["parent"])["parent"]
    with pytest.raises(TorchCellError, match="timeout=1"):
        run_in_torch_process("import time\ntime.sleep(60)", {}, timeout=1)
    assert run_in_torch_process(PIDS, {}, ["parent"])["parent"] == parent
    children = [p for p in __import__("psutil").Process(parent).children()]
    assert children == []  # the killed cell was reaped
