"""One update of chapter 6's size calculator (parameters and FLOPs of one attention layer).

Prints one line:

    BENCH config_calculator median_ms=... p95_ms=...

Timed (wall clock) from setting the T box until its callback returns (table
recomputed and rendered to HTML). No browser here, so sending and painting
are not included. The machine is shared: compare within one run.
"""
from __future__ import annotations

import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from qkv_viz.chapters.ch06_multi_head.calculator import config_calculator  # noqa: E402

STEPS = 30


def bench_calculator() -> None:
    w = config_calculator()
    times = []
    for T in (int(n) for n in np.geomspace(16, 8192, STEPS)):
        start = time.perf_counter()
        w.boxes["T"].value = T
        times.append(time.perf_counter() - start)
    ms = np.array(times) * 1e3
    print(f"BENCH config_calculator median_ms={np.median(ms):.1f} p95_ms={np.percentile(ms, 95):.1f}",
          flush=True)


if __name__ == "__main__":
    bench_calculator()
