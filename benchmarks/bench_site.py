"""The static web edition: build time and size, and a slider step on a page with no kernel.

    BENCH site build_s=... pages=... bytes=...
    BENCH browser_slider frontend=static n=16 median_ms=... p95_ms=... steps=...

The slider case opens chapter 4's page, served on 127.0.0.1, and presses the
right arrow on the scaling explorer's d_k slider; each step is timed inside the
page from the keydown event's timestamp to the first animation frame whose
heatmap pixels differ (so the time includes the browser's softmax, the drawing
and the wait for the frame). Goal: median <= 16 ms (one frame at 60 Hz).
"""
from __future__ import annotations

import functools
import http.server
import pathlib
import sys
import tempfile
import threading

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "tests")]

import build_site  # noqa: E402
from browser_harness import CHROMIUM_ARGS, chromium_path  # noqa: E402

STEPS = 40
ARM_JS = """(root) => {
  const slider = root.querySelector('input.qkv-dk-slider') || root.querySelector('input[type=range]');
  const canvas = root.querySelector('canvas');
  window.__qkvStep = null;
  slider.addEventListener('keydown', (e) => {
    const t0 = e.timeStamp, before = canvas.toDataURL();
    const poll = () => {
      if (canvas.toDataURL() !== before) { window.__qkvStep = performance.now() - t0; return; }
      requestAnimationFrame(poll);
    };
    requestAnimationFrame(poll);
  }, {capture: true});
  slider.focus();
  return [slider.min, slider.max, slider.value];
}"""


def serve(directory):
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    handler.log_message = lambda *a, **k: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def main() -> int:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        out = pathlib.Path(tmp) / "site"
        info = build_site.build(out, sorted((ROOT / "notebooks").glob("*.ipynb")))
        print(f"BENCH site build_s={info['build_s']:.1f} pages={info['pages']} bytes={info['bytes']} "
              f"live_figures={info['live_figures']}", flush=True)
        if chromium_path() is None:
            print("# no Chromium: browser_slider frontend=static skipped", file=sys.stderr)
            return 0
        httpd = serve(out)
        page_name = next(out.glob("04_*.html")).name
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(f"http://127.0.0.1:{httpd.server_address[1]}/{page_name}")
            root = page.locator(".qkv-static").first
            root.locator("canvas").first.wait_for()
            root.scroll_into_view_if_needed()
            lo, hi, value = (int(v) for v in root.evaluate(ARM_JS))
            times, direction = [], "ArrowRight"
            for _ in range(STEPS):
                value = int(page.evaluate("() => document.activeElement.value"))
                if value >= hi:
                    direction = "ArrowLeft"
                elif value <= lo:
                    direction = "ArrowRight"
                page.evaluate("() => { window.__qkvStep = null; }")
                page.keyboard.press(direction)
                page.wait_for_function("() => window.__qkvStep !== null", timeout=10_000)
                times.append(page.evaluate("() => window.__qkvStep"))
            browser.close()
        httpd.shutdown()
    ms = np.array(times)
    print(f"BENCH browser_slider frontend=static n=16 median_ms={np.median(ms):.1f} "
          f"p95_ms={np.percentile(ms, 95):.1f} steps={len(ms)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
