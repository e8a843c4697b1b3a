"""Fused QKV projection (one (768, 2304) matmul) vs three (768, 768) matmuls, numpy on CPU.

Prints one line: BENCH fused_qkv n=512 d_model=768 fused_median_ms=... separate_median_ms=... ratio=...
ratio = separate / fused (> 1 means the fused matmul was faster in this run). Medians over
``REPEATS`` alternating runs; the machine may be shared, so read it as a rough measurement.
"""
from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from qkv_viz.chapters.ch08_mistakes.mistakes import time_fused_vs_separate  # noqa: E402

N, D_MODEL, REPEATS = 512, 768, 15


def main() -> None:
    r = time_fused_vs_separate(n=N, d_model=D_MODEL, repeats=REPEATS, seed=0)
    print(f"BENCH fused_qkv n={N} d_model={D_MODEL} fused_median_ms={r['fused_ms']:.2f} "
          f"separate_median_ms={r['separate_ms']:.2f} ratio={r['ratio']:.2f}")


if __name__ == "__main__":
    main()
