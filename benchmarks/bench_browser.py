"""Browser latency of the scaling explorer: from a d_k slider key press to new heatmap
pixels on screen, in Chromium (the harness of tests/test_browser.py).

Prints, per case:

    BENCH browser_slider frontend=lab n=16 median_ms=... p95_ms=... steps=... missed=...
    BENCH browser_slider frontend=notebook7 n=16 median_ms=... p95_ms=... steps=... missed=...
    BENCH browser_slider frontend=lab n=1024 median_ms=... p95_ms=... steps=... missed=...

Each step is computed in the browser (scores for the d_k, stable softmax, readouts,
drawing): no round trip to Python. At n = 1024 the browser first computes q . k for
every d_k (once, when the data arrives); the timed presses move between d_k values
whose scores are already in the browser. ``missed`` counts presses whose pixels did not
change within 5 s (not in the statistics). Goals (issue 13): lab n=16 median <= 25 ms,
notebook7 n=16 <= 30 ms, lab n=1024 <= 100 ms. Skipped (a note on stderr, exit 0) when
Chromium is missing.
"""
from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from browser_harness import chromium_path, lab_browser, lab_server  # noqa: E402

STEPS, WARMUP = 20, 4
CASES = (("lab", 16), ("notebook7", 16), ("lab", 1024))
HEATMAP, SLIDER = ".qkv-heatmap", ".qkv-dk-slider"


def _write_notebook(folder: pathlib.Path, n: int) -> str:
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        "from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer\n"
        f"scaling_explorer(n={n}, d_k=512)")]
    name = f"bench_explorer_{n}.ipynb"
    nbformat.write(nb, folder / name)
    return name


def measure(book, steps: int) -> list:
    """ms from key press to changed pixels for ``steps`` presses (None = no change)."""
    slider = book.page.locator(SLIDER).first
    slider.scroll_into_view_if_needed()
    book.page.wait_for_function(  # the browser has the data and has drawn it
        "() => { const f = document.querySelector('.qkv-explorer');"
        " return f && f.parentElement.qkv && f.parentElement.qkv.curves; }", timeout=120_000)
    slider.focus()
    times = []
    for i in range(steps):  # right, left, right, ...: d_k 1024 <-> 512
        times.append(book.key_to_pixels_ms(HEATMAP, "ArrowRight" if i % 2 == 0 else "ArrowLeft"))
        book.page.wait_for_timeout(100)
    return times


def run_case(lab, frontend: str, name: str) -> list | None:
    with lab_browser(lab, frontend=frontend) as book:
        book.open(name)
        book.run_all()
        problems = book.problems()
        if problems:
            print(f"# bench_browser {frontend}: the explorer did not render cleanly:\n# "
                  + "\n# ".join(problems), file=sys.stderr)
            return None
        times = measure(book, WARMUP + STEPS)[WARMUP:]
        book.close()
    return times


def main() -> int:
    if chromium_path() is None:
        print("# bench_browser skipped: no Chromium (apt-get install chromium)", file=sys.stderr)
        return 0
    failed = 0
    with tempfile.TemporaryDirectory(prefix="qkv-bench-") as tmp:
        names = {n: _write_notebook(pathlib.Path(tmp), n) for n in {n for _, n in CASES}}
        with lab_server(tmp) as lab:
            for frontend, n in CASES:
                times = run_case(lab, frontend, names[n])
                seen = np.array([t for t in times or [] if t is not None])
                if not seen.size:
                    print(f"# bench_browser {frontend} n={n}: the heatmap never changed", file=sys.stderr)
                    failed += 1
                    continue
                print(f"BENCH browser_slider frontend={frontend} n={n} median_ms={np.median(seen):.1f} "
                      f"p95_ms={np.percentile(seen, 95):.1f} steps={seen.size} "
                      f"missed={len(times) - seen.size}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
