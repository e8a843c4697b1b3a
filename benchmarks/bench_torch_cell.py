"""What a ``%%torch`` cell costs before it does anything (issue: a class of readers).

Prints ``BENCH torch_cell empty_ms=... import_torch_ms=... repeats=...``: the median
wall time of ``run_in_torch_process`` for a cell that does nothing, and for one that
only imports torch (a fresh process each time, as in the book).
"""
from __future__ import annotations

import statistics
import sys
import time

from qkv_viz.bridges.torch_cell import run_in_torch_process


def median_ms(code: str, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run_in_torch_process(code, {})
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main(repeats: int = 7) -> int:
    empty = median_ms("pass", repeats)
    with_torch = median_ms("import torch", repeats)
    print(f"BENCH torch_cell empty_ms={empty:.0f} import_torch_ms={with_torch:.0f} repeats={repeats}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
