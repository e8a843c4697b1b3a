"""Chapter 5's figures: rows of weights, each query's gradient against its largest weight,
the learning curves and one sequence's weights over training.

Each function draws on a given axis (or a new one), returns the artists and never calls
``plt.show()``. Colours and sizes come from :mod:`qkv_viz.viz.style`.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.viz import style

# divided twice (green) must not look like scaled (dark blue): the two curves nearly overlap.
COLORS = {"scaled": style.SCALED_COLOR, "unscaled": style.UNSCALED_COLOR, "divided twice": style.CONTROL_COLOR,
          "small start": style.OKABE_ITO[7], "lr / 4": style.OKABE_ITO[1]}


LINESTYLES = {"divided twice": "--"}   # dashed, so it shows where it runs on top of scaled


def _color(name: str, i: int) -> str:
    return COLORS.get(name, style.OKABE_ITO[(i + 2) % len(style.OKABE_ITO)])


def smooth(values, window: int = 10) -> np.ndarray:
    """Trailing running mean (the first points average what exists so far)."""
    values = np.asarray(values, dtype=float)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    csum = np.cumsum(np.insert(values, 0, 0.0))  # (n+1,)
    idx = np.arange(1, values.size + 1)
    lo = np.maximum(idx - window, 0)
    return (csum[idx] - csum[lo]) / (idx - lo)


def distance_from_one_hot(weights) -> np.ndarray:
    """1 - each row's largest weight, (...,), summed from the other weights so that it stays exact near 0."""
    w = np.sort(np.asarray(weights, dtype=float), axis=-1)
    return w[..., :-1].sum(-1)


def gradient_vs_largest_weight(weights: dict, norms: dict, ax=None, saturated: float = 0.99,
                               floor: float = 1e-20):
    """Each query's |d loss_i / d scores_i| against 1 - its largest weight, log-log, one colour per run.

    ``weights``: ``{run name: (..., T, T) weights}``; ``norms``: ``{run name: one norm per row}``, in the
    same order as the rows. The band left of ``1 - saturated`` marks the saturated rows (largest weight
    above ``saturated``). Values below ``floor`` are drawn at ``floor``. Returns the scatters, run by run.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.7, 0.45), layout="constrained")
    points = []
    for i, (name, w) in enumerate(weights.items()):
        x = np.maximum(distance_from_one_hot(w).ravel(), floor)
        y = np.maximum(np.asarray(norms[name], dtype=float).ravel(), floor)
        if x.shape != y.shape:
            raise ValueError(f"{name!r}: {x.size} rows of weights but {y.size} norms")
        points.append(ax.scatter(x, y, s=14, color=_color(name, i), alpha=0.7, lw=0, label=name))
    ax.set_xscale("log")
    ax.set_yscale("log")
    lo = ax.get_xlim()[0]
    ax.axvspan(lo, 1 - saturated, color="0.88", zorder=0, lw=0)
    ax.text(np.sqrt(lo * (1 - saturated)), 0.04, f"saturated rows\n(largest weight > {saturated:g})",
            transform=ax.get_xaxis_transform(), ha="center", va="bottom", color="0.3")
    ax.set_xlim(lo, 1)
    ax.set_xlabel("1 − the row's largest weight (0: one-hot)")
    ax.set_ylabel(r"$|\partial \ell_i / \partial\,\mathrm{scores}_i|$")
    ax.legend(frameon=False, loc="upper left")
    return points


def learning_curves(acc: dict, chance: float, ax=None, window: int = 10, target: float | None = 0.9,
                    ylabel: str = "accuracy", legend: bool = True):
    """Training accuracy against the step, running mean over ``window`` steps, one line per run.

    ``acc``: ``{run name: (steps,) or (n_seeds, steps) accuracies}``. With several seeds the line is
    their mean and a band spans the lowest to the highest seed. A dashed line marks ``target`` (the
    accuracy the chapter's "steps to 90 %" count to; ``None``: no line), a dotted one ``chance``.
    Returns the lines: the runs', then the target's (if any), then chance's. Any other per-step
    quantity between 0 and 1 (such as the mean weight on the own key) can be drawn the same way,
    with its own ``ylabel``; ``legend=False`` leaves the legend to another panel.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.7, 0.45), layout="constrained")
    lines = []
    for i, (name, a) in enumerate(acc.items()):
        runs = np.atleast_2d(np.asarray(a, dtype=float))             # (n_seeds, steps)
        smoothed = np.stack([smooth(r, window) for r in runs])        # (n_seeds, steps)
        steps = np.arange(runs.shape[1])
        (line,) = ax.plot(steps, smoothed.mean(0), color=_color(name, i), lw=2, label=name,
                          ls=LINESTYLES.get(name, "-"))
        if len(runs) > 1:
            ax.fill_between(steps, smoothed.min(0), smoothed.max(0), color=line.get_color(), alpha=0.25, lw=0)
        lines.append(line)
    if target is not None:
        lines.append(ax.axhline(target, color="black", lw=1, ls="--",
                                label=f"{round(100 * target)} % (steps counted to here)"))
    lines.append(ax.axhline(chance, color="gray", lw=1, ls=":", label=f"chance (1 key in {round(1 / chance)})"))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("training step")
    ax.set_ylabel(ylabel)
    if legend:
        ax.legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return lines


def weights_over_training(snaps: dict, steps, axes=None):
    """One sequence's (T, T) weights at several training steps: a row of heatmaps per run (viridis, 0..1).

    ``snaps``: ``{run name: (len(steps), T, T) weights}``. Returns the images, run by run.
    """
    n = len(steps)
    if axes is None:
        fig, axes = plt.subplots(len(snaps), n, figsize=style.figsize(1.0, 0.2 * len(snaps) + 0.1),
                                 sharex=True, sharey=True, layout="constrained", squeeze=False)
    axes = np.asarray(axes).reshape(len(snaps), n)
    images = []
    for row, (name, w) in zip(axes, snaps.items()):
        w = np.asarray(w, dtype=float)
        if w.shape[0] != n or w.ndim != 3:
            raise ValueError(f"snaps[{name!r}] must be (len(steps), T, T) = ({n}, T, T), got shape {w.shape}")
        for ax, step, m in zip(row, steps, w):
            images.append(ax.imshow(m, vmin=0, vmax=1, cmap=style.WEIGHTS_CMAP))
            ax.set_title(f"{name}, step {step}")
            ticks = np.arange(0, m.shape[0], 4)                  # token indices, from 0
            ax.set_xticks(ticks)
            ax.set_yticks(ticks)
        row[0].set_ylabel("query (token)")
    for ax in axes[-1]:
        ax.set_xlabel("key (token)")
    axes[0, 0].figure.colorbar(images[0], ax=axes, label="weights", shrink=0.9)
    return images


def weight_rows(rows: dict, axes=None):
    """One bar chart per row of weights, ``{name: (S,) weights}``, side by side on a shared 0..1 axis.

    Returns the bar containers.
    """
    if axes is None:
        _, axes = plt.subplots(1, len(rows), figsize=style.figsize(1.0, 0.26), sharey=True, layout="constrained")
    axes = np.atleast_1d(axes)
    if len(axes) != len(rows):
        raise ValueError(f"need one axis per row: {len(rows)} rows, {len(axes)} axes")
    bars = []
    for i, (ax, (name, w)) in enumerate(zip(axes, rows.items())):
        w = np.asarray(w, dtype=float)
        bars.append(ax.bar(np.arange(w.size), w, color=_color(name, i)))
        ax.set_title(name)
        ax.set_ylim(0, 1)
        ax.set_xlabel("key")
    axes[0].set_ylabel(style.WEIGHTS_LABEL)
    return bars

