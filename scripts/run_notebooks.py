"""Re-execute notebooks in place, in order, from a fresh kernel each.

    python scripts/run_notebooks.py [--jobs N] notebooks/*.ipynb

Each notebook runs top to bottom in its own fresh kernel; ``--jobs`` kernels run
at once (default: 2, the cores of the project's machine; ``--jobs 1`` runs them
one after another). Prints one line per notebook with its run time, then the
wall time and the sum of the notebooks' times. Stops at the first failure.
``benchmarks/bench_book.py`` times the whole book with the same :func:`run_all`,
without writing the notebooks back.

The widgets' state is saved into each notebook (``store_widget_state``), so a
notebook opened without running it rebuilds its interactive figures from that
state (never "Error displaying widget: model not found").
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

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
    """The environment every notebook is executed in: inline figures, one BLAS thread.
    The backend is forced: an ``MPLBACKEND=Agg`` left exported for pytest would otherwise
    execute the chapters without a single figure in their outputs."""
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    for name, value in ONE_THREAD.items():
        os.environ.setdefault(name, value)


def run_reported(path: str, write: bool = True) -> float:
    """:func:`run`, with a failure raised as a RuntimeError that names the notebook. Several run at
    once in threads of this process, each notebook in its own kernel (a kernel is its own process:
    the notebooks share nothing; a Python started per notebook only added ~1.5 s to each)."""
    try:
        return run(path, write)
    except Exception as error:
        raise RuntimeError(f"{path} failed:\n{str(error)[-4000:]}") from error


def last_seconds(path: str) -> float:
    """How long the notebook's cells took when it was last executed (the execution times nbclient
    records in each code cell's metadata); 0 if none are recorded."""
    from datetime import datetime

    total = 0.0
    for cell in nbformat.read(path, as_version=4).cells:
        times = cell.get("metadata", {}).get("execution", {})
        if "iopub.execute_input" in times and "shell.execute_reply" in times:
            start, end = (datetime.fromisoformat(times[k].replace("Z", "+00:00"))
                          for k in ("iopub.execute_input", "shell.execute_reply"))
            total += max((end - start).total_seconds(), 0.0)
    return total


def run_all(paths: list, jobs: int = 2, write: bool = True, report=print) -> tuple:
    """Execute every notebook in ``paths``, ``jobs`` at a time, each in a fresh kernel.

    With several at a time the longest notebooks (by :func:`last_seconds`) start first, so that
    no long chapter is left to run alone at the end; each notebook still runs top to bottom.

    Returns ``(seconds, wall)``: each notebook's run time by path, and the wall time of the whole.
    The first failure cancels the notebooks not yet started and is raised.
    """
    setup_environment()
    start, seconds = time.perf_counter(), {}
    if min(jobs, len(paths)) <= 1:
        for i, path in enumerate(paths, 1):
            seconds[path] = run(path, write)
            report(f"[{i}/{len(paths)}] {path} {seconds[path]:.1f} s")
        return seconds, time.perf_counter() - start
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        longest_first = sorted(paths, key=last_seconds, reverse=True)
        futures = {pool.submit(run_reported, path, write): path for path in longest_first}
        try:
            for i, future in enumerate(as_completed(futures), 1):
                path = futures[future]
                seconds[path] = future.result()
                report(f"[{i}/{len(paths)}] {path} {seconds[path]:.1f} s")
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return {p: seconds[p] for p in paths}, time.perf_counter() - start


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at once (default 2)")
    args = parser.parse_args(argv)
    seconds, wall = run_all(args.paths, jobs=args.jobs)
    print(f"all {len(args.paths)} notebooks executed in {wall:.1f} s "
          f"({min(args.jobs, len(args.paths))} at a time; one after another they took {sum(seconds.values()):.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
