"""Chapter 5 experiment over 3 seeds: scaled vs unscaled vs the small-init control at d_k = 512.

Prints one line:
BENCH saturation seeds=3 d_k=512 steps=60 scaled_final_acc=... unscaled_final_acc=...
      init_grad_ratio=... seconds=... d_k=512 steps=60 init_median_grad_ratio=... scaled_steps_to_90=...
      unscaled_steps_to_90=... small_init_unscaled_final_acc=... small_init_unscaled_steps_to_90=...

final_acc: mean training accuracy over the last 20 of the 60 steps, averaged over seeds.
init_grad_ratio: norm of the batch gradient on W_q at step 0, scaled over unscaled
(geometric mean over seeds); init_median_grad_ratio: the same for the median query's
own gradient. steps_to_90: per seed, '-' when not reached within the budget.
small_init_unscaled: the control run, no 1/sqrt(d_k) factor but W_q, W_k initialised
small enough that the scores start with std about 1 (``control_init_std``).
"""
from __future__ import annotations

import time

import numpy as np

from qkv_viz.chapters.ch05_saturation.saturation import seed_sweep

SEEDS, D_K, STEPS = (0, 1, 2), 512, 60


def _geo(values) -> float:
    return float(np.exp(np.mean(np.log(values))))


def _steps(values) -> str:
    return ",".join("-" if v is None else str(v) for v in values)


def main() -> None:
    start = time.perf_counter()
    rows = seed_sweep(SEEDS, d_k=D_K, steps=STEPS)
    seconds = time.perf_counter() - start
    # The keys first, in its order; extra keys after them.
    print(f"BENCH saturation seeds={len(SEEDS)} "
          f"scaled_final_acc={np.mean([r['scaled_acc'] for r in rows]):.3f} "
          f"unscaled_final_acc={np.mean([r['unscaled_acc'] for r in rows]):.3f} "
          f"init_grad_ratio={_geo([r['grad_ratio'] for r in rows]):.3g} "
          f"seconds={seconds:.2f} d_k={D_K} steps={STEPS} "
          f"init_median_grad_ratio={_geo([r['median_grad_ratio'] for r in rows]):.3g} "
          f"scaled_steps_to_90={_steps(r['scaled_to_90'] for r in rows)} "
          f"unscaled_steps_to_90={_steps(r['unscaled_to_90'] for r in rows)} "
          f"small_init_unscaled_final_acc={np.mean([r['small_init_acc'] for r in rows]):.3f} "
          f"small_init_unscaled_steps_to_90={_steps(r['small_init_to_90'] for r in rows)}")


if __name__ == "__main__":
    main()
