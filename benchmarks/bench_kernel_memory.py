"""Each chapter's kernel memory after running it in its own kernel (issue: a class of readers).

Prints one line per chapter,
``BENCH kernel_memory chapter=NN rss_mib=... torch=0|1 children_rss_mib=... child_peak_mib=... seconds=...``:
the resident memory of the kernel process right after the chapter ran top to bottom
(nothing saved: a temporary copy is executed); whether torch was imported into the
kernel; the resident memory of the processes the kernel still has at that moment
(the warm torch parent of ``%%torch`` cells, which leaves 30 s after the last one;
pages it shares with a cell's child count in both); and the largest process the
kernel started and already waited for (its own start-up runs one of about 49 MiB). Goals: no chapter over 300 MiB; chapters without
a real torch use under 150 MiB. ``python benchmarks/bench_kernel_memory.py notebooks/05_*.ipynb``
measures only the chapters named.
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
PROBE = ("import sys as _s, os as _o, resource as _r; print(int('torch' in _s.modules), _o.getpid(), "
         "_r.getrusage(_r.RUSAGE_CHILDREN).ru_maxrss)")  # ru_maxrss: KiB, largest child waited for


def measure(path: pathlib.Path) -> tuple[float, int, float, float, float]:
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        seconds = time.perf_counter() - start
        torch_loaded, pid, child_kib = (int(x) for x in nb.cells[-1].outputs[0]["text"].split())
        kernel = psutil.Process(pid)
        rss = kernel.memory_info().rss / 2**20
        children = sum(c.memory_info().rss for c in kernel.children(recursive=True)) / 2**20
    return rss, torch_loaded, children, child_kib / 1024, seconds


def main() -> int:
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    failed = 0
    paths = [pathlib.Path(a).resolve() for a in sys.argv[1:]] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        try:
            rss, torch_loaded, children, child_peak, seconds = measure(path)
        except Exception as exc:  # a chapter that fails to run is reported, the others still measured
            failed += 1
            print(f"# {path.name} failed: {type(exc).__name__}: {str(exc).splitlines()[-1][:200]}",
                  file=sys.stderr)
            continue
        print(f"BENCH kernel_memory chapter={path.name[:2]} rss_mib={rss:.0f} torch={torch_loaded} "
              f"children_rss_mib={children:.0f} child_peak_mib={child_peak:.0f} seconds={seconds:.1f}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
