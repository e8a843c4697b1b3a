"""One d_k slider step of the scaling explorer, and the naive interact + inline-PNG way.

Prints one line per sequence length n:

    BENCH widget_step n=16 median_ms=... p95_ms=... naive_median_ms=... ratio=... png_median_ms=...
    BENCH widget_step n=128 median_ms=... p95_ms=... png_median_ms=...

What is timed (wall clock, ``time.perf_counter``), per step:

* ``median_ms`` / ``p95_ms`` - the explorer on the ipympl backend, the one a
  notebook gets: from ``explorer.d_k.value = x`` until the callback returns,
  i.e. weights computed, readouts updated, the figure re-rendered by blitting
  (restore background, draw image + marker) and the PNG diff frame encoded and
  handed to the widget comm (``canvas.blit`` -> ``refresh_all`` ->
  ``send_binary``). Everything is synchronous, no ``draw_idle``. There is no
  browser here, so sending and painting are not included (the browser test
  measures key press -> pixels). ``syncing_data_url`` is switched off, as
  ipympl does once a front end has connected.
* ``png_median_ms`` - the same step on the "png" fallback backend (frame
  encoded as a PNG into an ``ipywidgets.Image``).
* ``naive_median_ms`` (n = 16 only) - ``ipywidgets.interactive`` on a function
  that re-creates the same figure with pyplot (same size, same plots) and
  renders it the way the inline backend does
  (``IPython.core.pylabtools.print_figure``, PNG, bbox_inches="tight"), then
  closes it. It reuses the explorer's cached weights and d_k curves, so only
  the drawing differs. ``ratio = median_ms / naive_median_ms``.

Steps sweep d_k over 1, 2, ..., 1024 and back, ``SWEEPS`` times; the one-off
setup (drawing q, k and the d_k curves for a new n) is not timed. The machine
is shared, so the numbers are noisy: compare within one run.
"""
from __future__ import annotations

import contextlib
import io
import pathlib
import sys
import time

import matplotlib

matplotlib.use("Agg")

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from IPython.core.pylabtools import print_figure  # noqa: E402

from qkv_viz.chapters.ch04_scaling.explorer import D_KS, head_attention  # noqa: E402
from qkv_viz.chapters.ch04_scaling.explorer_view import DPI, FIGSIZE, METRIC_LABELS  # noqa: E402
from qkv_viz.viz.plots import attention_heatmap, metric_vs_dk  # noqa: E402
from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer  # noqa: E402

NS = (16, 128, 512, 1024)
SWEEPS = {16: 4, 128: 4, 512: 3, 1024: 2}
NAIVE_SWEEPS = 1


def _sweep_values(sweeps: int) -> list:
    one = list(D_KS[1:]) + list(D_KS[-2::-1])  # up 2..1024, then down 512..1
    return one * sweeps


def _time_steps(set_value, values) -> np.ndarray:
    times = []
    for v in values:
        t0 = time.perf_counter()
        set_value(v)
        times.append(time.perf_counter() - t0)
    return np.array(times) * 1e3  # ms


def time_explorer(n: int, backend: str) -> np.ndarray:
    explorer = scaling_explorer(n=n, d_k=1, backend=backend)
    if backend == "ipympl":
        explorer.canvas.syncing_data_url = False  # as after the browser says "initialized"
    assert explorer.backend == backend
    frames = explorer.view.draws
    values = _sweep_values(SWEEPS[n])
    times = _time_steps(lambda v: setattr(explorer.d_k, "value", v), values)
    assert explorer.view.draws == frames + len(values), "every step must produce a frame"
    assert explorer.message.value == ""
    explorer.close()
    return times


def _naive_show(d_k, n, curves):
    """What a first notebook version does on every slider move: a brand-new figure."""
    _, weights, _ = head_attention(0, 1, n, d_k, True, 1.0)
    fig, (ax_w, ax_m) = plt.subplots(1, 2, figsize=FIGSIZE, dpi=DPI)
    attention_heatmap(weights, ax=ax_w, annotate=False, title="weights")
    metric_vs_dk(D_KS, curves["max_weight"]["scaled"], curves["max_weight"]["unscaled"],
                 ax=ax_m, label=METRIC_LABELS["max_weight"], current=d_k)
    png = print_figure(fig, "png")  # what the inline backend sends for the cell
    plt.close(fig)
    return len(png)


def time_naive(n: int) -> np.ndarray:
    explorer = scaling_explorer(n=n, backend="png")  # only to fill the same caches
    slider = widgets.SelectionSlider(options=list(D_KS), value=1)
    # without a kernel, interactive's clear_output prints terminal escapes: hide them
    with contextlib.redirect_stdout(io.StringIO()):
        widgets.interactive(_naive_show, d_k=slider, n=widgets.fixed(n),
                            curves=widgets.fixed(explorer.curves))
        times = _time_steps(lambda v: setattr(slider, "value", v), _sweep_values(NAIVE_SWEEPS))
    explorer.close()
    return times


def main() -> None:
    for n in NS:
        fast = time_explorer(n, "ipympl")
        png = time_explorer(n, "png")
        line = f"BENCH widget_step n={n} median_ms={np.median(fast):.2f} p95_ms={np.percentile(fast, 95):.2f}"
        if n == 16:
            naive = np.median(time_naive(n))
            line += f" naive_median_ms={naive:.2f} ratio={np.median(fast) / naive:.3f}"
        print(f"{line} png_median_ms={np.median(png):.2f}", flush=True)  # the keys first, extras after


if __name__ == "__main__":
    main()
