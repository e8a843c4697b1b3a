"""The whole book, executed as ``make notebooks`` does (issue 20: S <= 45 s).

Every notebook in notebooks/, in order, each in a fresh kernel, with
``scripts/run_notebooks.py``'s own ``run`` and environment, but nothing is
written back. Prints one line per chapter and then the total:
``BENCH book_chapter chapter=NN seconds=...`` and
``BENCH book seconds=S notebooks=N slowest=NN goal_s=45 within_goal=0|1``.
``python benchmarks/bench_book.py notebooks/09_*.ipynb`` times only the chapters named.
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
GOAL_S = 45.0


def load_runner():
    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list) -> int:
    runner = load_runner()
    runner.setup_environment()
    paths = [pathlib.Path(a).resolve() for a in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    seconds = {}
    for path in paths:
        seconds[path.name[:2]] = runner.run(str(path), write=False)
        print(f"BENCH book_chapter chapter={path.name[:2]} seconds={seconds[path.name[:2]]:.1f}", flush=True)
    total = sum(seconds.values())
    slowest = max(seconds, key=seconds.get)
    print(f"BENCH book seconds={total:.1f} notebooks={len(paths)} slowest={slowest} goal_s={GOAL_S:.0f} "
          f"within_goal={int(total <= GOAL_S)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
