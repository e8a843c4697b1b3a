"""Figures for the saturation experiment (chapter 5): curves, gradient spread, attention panels.

Every function takes the runs as ``{name: SaturationResult}`` (or one result),
draws on given axes or a new small figure, returns the artists and never calls
``plt.show()``. Heatmaps come from :mod:`qkv_viz.plots`.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.core.diagnostics import score_std
from qkv_viz.viz.plots import attention_heatmap, scores_heatmap

COLORS = {"scaled": "tab:blue", "unscaled": "tab:red", "over-scaled": "tab:green"}
CURVES = {"loss": "loss", "acc": "accuracy", "grad_norm_q": "|grad W_q| (batch)",
          "grad_norm_k": "|grad W_k| (batch)",
          "grad_q_median": "|grad W_q| (median query)", "entropy": "entropy (nats)",
          "max_weight": "max weight", "score_std": "score std"}


def smooth(values, window: int = 5) -> np.ndarray:
    """Trailing running mean (the first points average what exists so far)."""
    values = np.asarray(values, dtype=float)
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    csum = np.cumsum(np.insert(values, 0, 0.0))  # (n+1,)
    idx = np.arange(1, values.size + 1)
    lo = np.maximum(idx - window, 0)
    return (csum[idx] - csum[lo]) / (idx - lo)


def plot_curve(runs: dict, key: str, ax=None, window: int = 1, log: bool = False):
    """One recorded quantity against the step, one line per run. Returns the lines."""
    if key not in CURVES:
        raise ValueError(f"key must be one of {sorted(CURVES)}, got {key!r}")
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3))
    lines = []
    for name, r in runs.items():
        (line,) = ax.plot(r.steps, smooth(getattr(r, key), window), label=name,
                          color=COLORS.get(name), lw=1.5)
        lines.append(line)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_title(CURVES[key], fontsize=10)
    return lines


def training_panel(runs: dict, keys=("loss", "acc", "grad_norm_q", "grad_q_median"), window: int = 5):
    """Small multiples of the training curves (gradient norms on a log axis). Returns the figure."""
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 2.8), constrained_layout=True)
    for ax, key in zip(np.atleast_1d(axes), keys):
        plot_curve(runs, key, ax=ax, window=1 if key.startswith("grad") else window,
                   log=key.startswith("grad"))
    np.atleast_1d(axes)[0].legend(fontsize=8)
    return fig


def grad_histogram(runs: dict, ax=None, bins=None):
    """Histogram of log10 per-query gradient norms on W_q at step 0, one per run."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    logs = {n: np.log10(np.maximum(r.init_grad_per_query, 1e-30)) for n, r in runs.items()}
    if bins is None:
        lo = min(v.min() for v in logs.values())
        hi = max(v.max() for v in logs.values())
        bins = np.linspace(np.floor(lo), np.ceil(hi), 40)
    artists = [ax.hist(v, bins=bins, alpha=0.55, label=n, color=COLORS.get(n))[2] for n, v in logs.items()]
    ax.set_xlabel("log10 |grad W_q| of one query, step 0")
    ax.set_ylabel("queries")
    ax.legend(fontsize=8)
    return artists


def _mark_targets(ax, targets):
    """A small white-edged square on the key each query should attend to."""
    rows = np.arange(len(targets))
    return ax.scatter(targets, rows, marker="s", s=22, facecolors="none", edgecolors="red", lw=1)


def attention_snapshots(runs: dict, kind: str = "weights"):
    """Grid: one row per run, one column per snapshot step (start, middle, end). Returns the figure.

    ``kind`` is "weights" (0..1 colour range) or "scores" (diverging, per panel).
    Red squares mark the key each query must find.
    """
    if kind not in ("weights", "scores"):
        raise ValueError(f"kind must be 'weights' or 'scores', got {kind!r}")
    names = list(runs)
    n_cols = len(next(iter(runs.values())).snapshots)
    fig, axes = plt.subplots(len(names), n_cols, figsize=(2.6 * n_cols, 2.4 * len(names)),
                             squeeze=False, constrained_layout=True)
    for row, name in zip(axes, names):
        r = runs[name]
        for ax, (step, (scores, weights)) in zip(row, sorted(r.snapshots.items())):
            draw = attention_heatmap if kind == "weights" else scores_heatmap
            draw(weights if kind == "weights" else scores, ax=ax, annotate=False,
                 title=f"{name}, step {step}")
            _mark_targets(ax, r.targets)
            ax.set_xticks([]), ax.set_yticks([])
            ax.title.set_fontsize(9)
    return fig


def debug_panel(result, step: int = 0, name: str = "", limit: float = 5.0):
    """Debug like the article: scores before softmax, weights after, and the scores' spread.

    Three axes: scores heatmap on the fixed range [-limit, limit] (so runs can be
    compared by colour: saturated runs hit the ends, flat runs stay white), weights
    heatmap (0..1), histogram of all scores. Returns the figure.
    """
    if step not in result.snapshots:
        raise ValueError(f"no snapshot at step {step}; have {sorted(result.snapshots)}")
    scores, weights = result.snapshots[step]
    fig, (a, b, c) = plt.subplots(1, 3, figsize=(9.5, 2.7), constrained_layout=True)
    im_s = scores_heatmap(scores, ax=a, annotate=False, limit=limit,
                          title=f"{name}: scores c*QK^T, step {step}")
    im_w = attention_heatmap(weights, ax=b, annotate=False, title="weights after softmax")
    for ax, im in ((a, im_s), (b, im_w)):
        _mark_targets(ax, result.targets)
        fig.colorbar(im, ax=ax, shrink=0.85)
        ax.title.set_fontsize(9)
    c.hist(scores.ravel(), bins=30, color=COLORS.get(name, "gray"))
    c.set_xlabel("score")
    c.set_title(f"all scores: row std {score_std(scores).mean():.2g}", fontsize=9)
    return fig
