"""Run every benchmarks/bench_*.py; each prints one `BENCH name key=value ...` line per case.

    python benchmarks/run.py            # all
    python benchmarks/run.py widget     # only files whose name contains "widget"
    python benchmarks/run.py figures    # the book's figures (runs every notebook, ~2-4 min; offenders on stderr)
    python benchmarks/run.py book       # the whole book executed as `make notebooks` does (BENCH book seconds=...)

New files named bench_*.py are picked up by the glob below.
"""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys


def main(argv: list) -> int:
    here = pathlib.Path(__file__).resolve().parent
    files = sorted(here.glob("bench_*.py"))
    if argv:
        files = [f for f in files if any(a in f.stem for a in argv)]
    failed = 0
    env = dict(os.environ)
    for f in files:
        print(f"# {f.name}", file=sys.stderr, flush=True)
        proc = subprocess.Popen([sys.executable, str(f)], cwd=here.parent, env=env,
                                stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:  # pass every line through, and remember the browser's step
            print(line, end="", flush=True)
            m = re.match(r"BENCH browser_slider frontend=lab n=16 median_ms=([0-9.]+)", line)
            if m:  # bench_widget.py compares the naive Python step with it
                env["QKV_BENCH_BROWSER_MS"] = m.group(1)
        rc = proc.wait()
        if rc:
            print(f"# {f.name} failed with exit code {rc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
