"""The Python side of a scaling-explorer step that needs Python: a new seed.

Prints one line per sequence length n:

    BENCH widget_step n=16 median_ms=... p95_ms=... what=new_seed
    BENCH widget_display n=16 median_ms=...

``widget_step``: wall clock (``time.perf_counter``) from ``explorer.seed = s`` until the
callback returns: q, k drawn for the seed (float32, (n, 1024) each) and handed to the
widget as binary buffers. d_k, scaling, temperature and query steps never reach Python
(the browser computes them; ``bench_browser.py`` times those, key press to pixels).
No browser here, so sending is not included.

``widget_display``: building the output's mime bundle (the static PNG of the initial
state, drawn by matplotlib, and the self-contained HTML fragment), once per display.
The machine is shared, so the numbers are noisy: compare within one run.
"""
from __future__ import annotations

import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer  # noqa: E402

NS = (16, 128, 512, 1024)
STEPS = {16: 30, 128: 30, 512: 15, 1024: 10}


def time_new_seed(n: int) -> np.ndarray:
    explorer = scaling_explorer(n=n)
    times = []
    for seed in range(1, STEPS[n] + 1):
        t0 = time.perf_counter()
        explorer.seed = seed
        times.append(time.perf_counter() - t0)
        assert explorer.error == "" and len(explorer.q) == n * 1024 * 4
    explorer.close()
    return np.array(times) * 1e3  # ms


def time_display(n: int, repeats: int = 3) -> np.ndarray:
    explorer = scaling_explorer(n=n)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        data, _ = explorer._repr_mimebundle_()
        times.append(time.perf_counter() - t0)
        assert "text/html" in data and "image/png" in data
    explorer.close()
    return np.array(times) * 1e3


def main() -> None:
    for n in NS:
        ms = time_new_seed(n)
        print(f"BENCH widget_step n={n} median_ms={np.median(ms):.2f} "
              f"p95_ms={np.percentile(ms, 95):.2f} what=new_seed", flush=True)
    print(f"BENCH widget_display n=16 median_ms={np.median(time_display(16)):.0f}", flush=True)


if __name__ == "__main__":
    main()
