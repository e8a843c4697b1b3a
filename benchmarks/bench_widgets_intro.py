"""Chapter 1's library figure: what Python still does for it.

Prints:

    BENCH library_widget what=build median_ms=... p95_ms=...
    BENCH library_widget what=display median_ms=... p95_ms=...

Temperature and query steps are computed and drawn in the browser
(``qkv_viz/viz/js/library.js``): no Python runs for them (``bench_browser.py`` times
a browser step for the scaling explorer, the same renderer). What Python does is
``build``: the figure object with the books as binary buffers, and ``display``: its mime
bundle (matplotlib's static PNG of the initial state and the self-contained HTML),
once per display. Wall clock; the machine is shared, so compare within one run.
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

STEPS = {"build": 30, "display": 5}


def _stats(times_s) -> str:
    ms = np.array(times_s) * 1e3
    return f"median_ms={np.median(ms):.1f} p95_ms={np.percentile(ms, 95):.1f}"


def _timed(fn, steps: int) -> list:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def bench_library() -> None:
    build = _timed(lambda: library_widget().close(), STEPS["build"])
    print(f"BENCH library_widget what=build {_stats(build)}", flush=True)
    w = library_widget()
    display = _timed(w._repr_mimebundle_, STEPS["display"])
    print(f"BENCH library_widget what=display {_stats(display)}", flush=True)


if __name__ == "__main__":
    bench_library()
