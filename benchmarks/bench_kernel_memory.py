"""Each chapter's kernel memory after running it in its own kernel (issue 20: <= 700 MiB per chapter).

Prints one line per chapter,
``BENCH kernel_memory chapter=NN rss_mib=... peak_mib=... torch=0|1 seconds=... goal_mib=700 within_goal=0|1``:
the resident memory of the kernel process right after the chapter ran top to bottom
(nothing saved: a temporary copy is executed), its peak while running, and whether
torch was imported into the kernel. A reader's kernel of at most 700 MiB fits in a
JupyterHub's default 2 GB per reader. ``python benchmarks/bench_kernel_memory.py
notebooks/05_*.ipynb`` measures only the chapters named.
"""
from __future__ import annotations

import os
import pathlib
import sys
import time

import nbformat
import psutil
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).resolve().parents[1]
GOAL_MIB = 700
PROBE = ("import sys as _s, os as _o, resource as _r; print(int('torch' in _s.modules), _o.getpid(), "
         "_r.getrusage(_r.RUSAGE_SELF).ru_maxrss)")  # ru_maxrss: KiB, the kernel's peak


def measure(path: pathlib.Path) -> tuple[float, float, int, float]:
    """(rss MiB, peak MiB, torch imported 0/1, seconds) of a fresh kernel that ran ``path``."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        seconds = time.perf_counter() - start
        torch_loaded, pid, peak_kib = (int(x) for x in nb.cells[-1].outputs[0]["text"].split())
        rss = psutil.Process(pid).memory_info().rss / 2**20
    return rss, peak_kib / 1024, torch_loaded, seconds


def main() -> int:
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")  # as scripts/run_notebooks.py runs the book
    failed = 0
    paths = [pathlib.Path(a).resolve() for a in sys.argv[1:]] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        try:
            rss, peak, torch_loaded, seconds = measure(path)
        except Exception as exc:  # a chapter that fails to run is reported, the others still measured
            failed += 1
            print(f"# {path.name} failed: {type(exc).__name__}: {str(exc).splitlines()[-1][:200]}",
                  file=sys.stderr)
            continue
        print(f"BENCH kernel_memory chapter={path.name[:2]} rss_mib={rss:.0f} peak_mib={peak:.0f} "
              f"torch={torch_loaded} seconds={seconds:.1f} goal_mib={GOAL_MIB} "
              f"within_goal={int(max(rss, peak) <= GOAL_MIB)}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
