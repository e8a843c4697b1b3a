"""One update of chapter 1's library widget.

Prints one line per case:

    BENCH library_widget plot=0 median_ms=... p95_ms=...
    BENCH library_widget plot=1 median_ms=... p95_ms=...

Timed (wall clock) from setting a control's value until its callback returns:
weights and table recomputed and, with plot=1, the reused two-panel figure
redrawn and rendered to the PNG bytes of its Image widget.
No browser here, so sending and painting are not included. The machine is
shared, so the numbers are noisy: compare within one run.
"""
from __future__ import annotations

import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from qkv_viz.chapters.ch01_library.widget import library_widget  # noqa: E402

STEPS = 30


def _stats(times_s) -> str:
    ms = np.array(times_s) * 1e3
    return f"median_ms={np.median(ms):.1f} p95_ms={np.percentile(ms, 95):.1f}"


def _time_steps(control, values) -> list:
    times = []
    for v in values:
        start = time.perf_counter()
        control.value = v
        times.append(time.perf_counter() - start)
    return times


def bench_library(plot: bool) -> None:
    w = library_widget(show_plot=plot)
    times = _time_steps(w.temperature, np.geomspace(0.01, 100, STEPS))
    print(f"BENCH library_widget plot={int(plot)} {_stats(times)}", flush=True)


if __name__ == "__main__":
    bench_library(plot=False)
    bench_library(plot=True)
