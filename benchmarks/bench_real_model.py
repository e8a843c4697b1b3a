"""Chapter 9 speed goal: load all-MiniLM-L6-v2 and compute every head for a 32-token
sentence in <= 3 s, with our numpy forward pass (no transformers import).

Prints one line: BENCH real_model load_s=... attention_ms=... tokens=...
(medians of a few repeats; load_s is a full load_model() from disk).
"""
from __future__ import annotations

import statistics
import time

from qkv_viz.bridges.real_forward import run
from qkv_viz.bridges.real_model import load_model

SENTENCE = ("Attention lets every token look at every other token, and the query, key and "
            "value projections decide who looks at whom and what they take from it.")
REPEATS = 3


def median_time(fn, repeats: int = REPEATS):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main():
    load_s, model = median_time(load_model)
    run_s, trace = median_time(lambda: run(model, SENTENCE), repeats=5)
    print(f"BENCH real_model load_s={load_s:.2f} attention_ms={run_s * 1e3:.1f} "
          f"tokens={len(trace.tokens)}")


if __name__ == "__main__":
    main()
