"""What a ``%%torch`` cell costs before it does anything (issue: a class of readers).

Prints ``BENCH torch_cell fresh_ms=... first_warm_ms=... warm_ms=... repeats=...``, medians
of ``run_in_torch_process("import torch")``: in a fresh interpreter per cell (the
default), and with the opt-in warm parent (``QKV_TORCH_CELL_FORK=1``) for a chapter's
first cell (which also starts the parent) and for the cells after it (forked from it).
"""
from __future__ import annotations

import os
import statistics
import sys
import time

from qkv_viz.bridges import torch_cell


def once_ms() -> float:
    start = time.perf_counter()
    torch_cell.run_in_torch_process("import torch", {})
    return (time.perf_counter() - start) * 1e3


def main(repeats: int = 7) -> int:
    os.environ["QKV_TORCH_CELL_FORK"] = "0"
    fresh = statistics.median(once_ms() for _ in range(repeats))
    os.environ["QKV_TORCH_CELL_FORK"] = "1"
    first = []
    for _ in range(repeats):
        if torch_cell._WARM is not None:  # start from no parent, as a chapter's first torch cell does
            torch_cell._WARM.kill()
            torch_cell._WARM = None
        first.append(once_ms())
    warm = statistics.median(once_ms() for _ in range(repeats))
    print(f"BENCH torch_cell fresh_ms={fresh:.0f} first_warm_ms={statistics.median(first):.0f} "
          f"warm_ms={warm:.0f} repeats={repeats}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
