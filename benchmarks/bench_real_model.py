"""Chapter 9 speed goal: load all-MiniLM-L6-v2 and compute every head for a 32-token
sentence in <= 3 s, with our numpy forward pass (no transformers import).

Prints one line: BENCH real_model load_s=... attention_ms=... tokens=... value_norms_ms=...
transformers_check_s=... transformers_max_abs=...
(medians of a few repeats; load_s is a full load_model() from disk). The last two are
chapter 9's comparison cell, measured once in this process as the notebook runs it
(importing torch and transformers included: the chapter's most expensive cell);
``transformers_check_s=skipped`` when transformers is not installed.
"""
from __future__ import annotations

import statistics
import time

from qkv_viz.bridges.real_forward import compare_with_transformers, run, value_output_norms
from qkv_viz.bridges.real_model import bundled_model_dir, load_model

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
    norms_s, _ = median_time(lambda: value_output_norms(model, trace), repeats=5)
    try:
        check_s, hf = median_time(lambda: compare_with_transformers(bundled_model_dir(), trace), repeats=1)
        check = f"transformers_check_s={check_s:.2f} transformers_max_abs={hf['max_abs_weights'].max():.1e}"
    except ImportError:
        check = "transformers_check_s=skipped"
    print(f"BENCH real_model load_s={load_s:.2f} attention_ms={run_s * 1e3:.1f} "
          f"tokens={len(trace.tokens)} value_norms_ms={norms_s * 1e3:.1f} {check}")


if __name__ == "__main__":
    main()
