"""The whole book, executed as ``make notebooks`` does (issue 20: S <= 45 s).

Every notebook in notebooks/, each top to bottom in a fresh kernel, with
``scripts/run_notebooks.py``'s own ``run_all`` and environment (two kernels at
a time, as ``make notebooks`` runs them), but nothing is written back. Prints
one line per chapter and then the total:
``BENCH book_chapter chapter=NN seconds=...`` and
``BENCH book seconds=S sum_s=... jobs=2 notebooks=N slowest=NN goal_s=45 within_goal=0|1``,
where S is the wall time and sum_s what the chapters took one after another.
``python benchmarks/bench_book.py notebooks/09_*.ipynb`` times only the chapters named;
``--jobs 1`` runs them one at a time.
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
    jobs = 2
    if "--jobs" in argv:
        i = argv.index("--jobs")
        jobs, argv = int(argv[i + 1]), argv[:i] + argv[i + 2:]
    runner = load_runner()
    paths = [str(pathlib.Path(a).resolve()) for a in argv] or sorted(str(p) for p in (ROOT / "notebooks").glob("*.ipynb"))
    by_path, wall = runner.run_all(paths, jobs=jobs, write=False, report=lambda line: None)
    seconds = {pathlib.Path(p).name[:2]: s for p, s in by_path.items()}
    for chapter, s in seconds.items():
        print(f"BENCH book_chapter chapter={chapter} seconds={s:.1f}", flush=True)
    slowest = max(seconds, key=seconds.get)
    print(f"BENCH book seconds={wall:.1f} sum_s={sum(seconds.values()):.1f} jobs={min(jobs, len(paths))} "
          f"notebooks={len(paths)} slowest={slowest} goal_s={GOAL_S:.0f} within_goal={int(wall <= GOAL_S)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
