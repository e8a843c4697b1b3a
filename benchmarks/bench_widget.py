"""The Python side of a scaling-explorer step that needs Python: a new seed.

Prints one line per sequence length n:

    BENCH widget_step n=16 median_ms=... p95_ms=... what=new_seed
    BENCH widget_display n=16 median_ms=...

``widget_step``: wall clock (``time.perf_counter``) from ``explorer.seed = s`` until the
callback returns: q, k drawn for the seed (float32, (n, 1024) each) and handed to the
widget as binary buffers. d_k, scaling, temperature and query steps never reach Python
(the browser computes them; ``bench_browser.py`` times those, key press to pixels).
No browser here, so sending is not included.

``widget_step_naive`` (n = 16): what a first notebook version does on every d_k move,
a brand-new matplotlib figure of the weights and the metric curve rendered to PNG in
Python (the old baseline). A d_k step of the explorer is now computed and drawn in the
browser (``bench_browser.py``: key press to pixels); ``ratio`` divides that browser
median (``benchmarks/run.py`` hands it over in ``QKV_BENCH_BROWSER_MS`` when both run
in one ``make bench``; without it no ratio is printed) by the naive Python-only step,
which does not even include sending and painting the PNG.

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


def time_naive(n: int = 16, steps: int = 20) -> np.ndarray:
    import matplotlib.pyplot as plt
    from IPython.core.pylabtools import print_figure

    from qkv_viz.chapters.ch04_scaling.explorer import D_KS, dk_curves, head_attention
    from qkv_viz.viz.plots import attention_heatmap, metric_vs_dk

    curves = dk_curves(0, 1, n, 1.0)
    times = []
    for i in range(steps):
        d_k = D_KS[i % len(D_KS)]
        t0 = time.perf_counter()
        _, weights, _ = head_attention(0, 1, n, d_k, True, 1.0)
        fig, (ax_w, ax_m) = plt.subplots(1, 2, figsize=(8.4, 3.4))
        attention_heatmap(weights, ax=ax_w)
        metric_vs_dk(D_KS, curves["max_weight"]["scaled"], curves["max_weight"]["unscaled"], ax=ax_m,
                     label="max weight", current=d_k)
        print_figure(fig, "png")
        plt.close(fig)
        times.append(time.perf_counter() - t0)
    return np.array(times) * 1e3


def main() -> None:
    import os

    naive = np.median(time_naive())
    line = f"BENCH widget_step_naive n=16 naive_median_ms={naive:.1f}"
    if os.environ.get("QKV_BENCH_BROWSER_MS"):
        browser_ms = float(os.environ["QKV_BENCH_BROWSER_MS"])
        line += f" browser_median_ms={browser_ms:.1f} ratio={browser_ms / naive:.3f}"
    print(line, flush=True)
    for n in NS:
        ms = time_new_seed(n)
        print(f"BENCH widget_step n={n} median_ms={np.median(ms):.2f} "
              f"p95_ms={np.percentile(ms, 95):.2f} what=new_seed", flush=True)
    print(f"BENCH widget_display n=16 median_ms={np.median(time_display(16)):.0f}", flush=True)


if __name__ == "__main__":
    main()
