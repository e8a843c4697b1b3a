"""Re-execute notebooks in place, in order, from a fresh kernel each.

    python scripts/run_notebooks.py notebooks/*.ipynb

Prints one line per notebook with its run time and the total at the end.
Stops at the first failure. ``benchmarks/bench_book.py`` times the whole book
with the same :func:`run`, without writing the notebooks back.

The widgets' state is saved into each notebook (``store_widget_state``), so a
notebook opened without running it rebuilds its interactive figures from that
state (never "Error displaying widget: model not found").
"""
from __future__ import annotations

import os
import sys
import time

import nbformat
from nbclient import NotebookClient


def run(path: str, write: bool = True) -> float:
    """Execute the notebook at ``path`` in a fresh kernel; save it back if ``write``. Returns seconds."""
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    client = NotebookClient(nb, timeout=600, kernel_name="python3", store_widget_state=True,
                            coalesce_streams=True,  # lines printed one by one are saved as one block
                            resources={"metadata": {"path": os.path.dirname(path) or "."}})
    client.execute()
    elapsed = time.perf_counter() - start
    if write:
        nbformat.write(nb, path)
    return elapsed


# One BLAS/OpenMP thread per kernel: the book's matrices are small, and on a shared 2-core
# machine two threads per product made small cells up to 10x slower (measured on chapters 4, 9).
# The Makefile's test target sets the same, so nbval runs the notebooks as they were executed.
ONE_THREAD = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def setup_environment() -> None:
    """The environment every notebook is executed in: inline figures, one BLAS thread."""
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for name, value in ONE_THREAD.items():
        os.environ.setdefault(name, value)


def main(paths: list) -> int:
    setup_environment()
    total = 0.0
    for i, path in enumerate(paths, 1):
        print(f"[{i}/{len(paths)}] {path} ...", end=" ", flush=True)
        elapsed = run(path)
        total += elapsed
        print(f"{elapsed:.1f} s", flush=True)
    print(f"all {len(paths)} notebooks executed in {total:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
