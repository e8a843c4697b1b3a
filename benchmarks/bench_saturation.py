"""Chapter 5's training loop (``toy.train``), its four runs over 3 seeds, as the page trains them.

Prints one line:
BENCH saturation seeds=3 d_k=256 steps=100 seconds=... scaled_steps_to_90=a,b,c unscaled_steps_to_90=...
      small_start_steps_to_90=... lr_4_steps_to_90=... scaled_final_acc=... ... seconds_per_run=...

steps_to_90: per seed, the first step whose 10-step running mean of the accuracy reaches 0.9
('-': not within the 100 steps). final_acc: mean accuracy over the last 10 steps, averaged over seeds.
The runs: scaled (c = 1/sqrt(d_k)); unscaled (c = 1); small start (c = 1, W_q, W_k started
d_k^(1/4) times smaller); lr / 4 (c = 1, learning rate d_k^(1/4) times smaller).
"""
from __future__ import annotations

import time

import numpy as np
import torch

from qkv_viz.chapters.ch05_saturation import toy

SEEDS = (0, 1, 2)
RUNS = {"scaled": dict(c=toy.D_K ** -0.5), "unscaled": dict(c=1.0),
        "small_start": dict(c=1.0, init=toy.D_K ** -0.25), "lr_4": dict(c=1.0, lr=toy.LR * toy.D_K ** -0.25)}


def _steps(values) -> str:
    return ",".join("-" if v is None else str(v) for v in values)


def main() -> None:
    torch.set_num_threads(1)
    start = time.perf_counter()
    acc = {name: [toy.train(**kw, seed=s) for s in SEEDS] for name, kw in RUNS.items()}
    seconds = time.perf_counter() - start
    to_90 = " ".join(f"{name}_steps_to_90={_steps(toy.steps_to(a) for a in runs)}" for name, runs in acc.items())
    final = " ".join(f"{name}_final_acc={np.mean([a[-10:].mean() for a in runs]):.3f}" for name, runs in acc.items())
    n_runs = len(RUNS) * len(SEEDS)
    print(f"BENCH saturation seeds={len(SEEDS)} d_k={toy.D_K} steps={toy.STEPS} seconds={seconds:.2f} "
          f"{to_90} {final} seconds_per_run={seconds / n_runs:.3f}")


if __name__ == "__main__":
    main()
