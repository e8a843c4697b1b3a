"""Generating T tokens of one small attention layer, with and without the K/V cache (numpy, one thread).

Prints one line per T:
BENCH kv_cache T=<T> d_model=64 n_heads=4 cached_ms_per_token=<a> uncached_ms_per_token=<b> ratio=<b/a>
Cached: each step projects the new token only and its query attends over the cache (no mask).
Uncached: each step runs the whole prefix again under the causal mask and keeps the last row,
as a model without a cache does. Both are the plain numpy lines of chapter 11
(qkv_viz.chapters.ch11_generation.generation). Cached ms per token = a run's time / T. The
uncached cost grows with t, so all T steps would take minutes at T = 1024: only UNCACHED_STEPS
evenly spaced steps t = 0 .. T-1 are timed, and their mean is the uncached ms per token. Both
are medians over REPEATS runs. The two ways' outputs are compared on the timed steps (they must
agree to 1e-12). The machine may be shared: read the numbers as rough measurements; the ratio
grows about linearly with T.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy is imported: one BLAS thread

import pathlib  # noqa: E402
import sys  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from qkv_viz.chapters.ch11_generation.generation import time_generation  # noqa: E402

D_MODEL, N_HEADS, REPEATS, UNCACHED_STEPS = 64, 4, 5, 64
TS = (256, 1024)


def main() -> None:
    for T in TS:
        r = time_generation(T, d_model=D_MODEL, n_heads=N_HEADS, repeats=REPEATS, seed=0,
                            uncached_steps=UNCACHED_STEPS)
        if r["max_diff"] > 1e-12:
            raise SystemExit(f"cached and uncached outputs differ by {r['max_diff']:.3g} at T={T}")
        print(f"BENCH kv_cache T={T} d_model={D_MODEL} n_heads={N_HEADS} "
              f"cached_ms_per_token={r['cached_ms_per_token']:.3f} "
              f"uncached_ms_per_token={r['uncached_ms_per_token']:.3f} ratio={r['ratio']:.1f}", flush=True)


if __name__ == "__main__":
    main()
