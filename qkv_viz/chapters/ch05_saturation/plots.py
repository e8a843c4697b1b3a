"""Figures for the saturation experiment (chapter 5): curves, gradient spread, attention panels.

Every function takes the runs as ``{name: SaturationResult}`` (or one result),
draws on given axes or a new small figure, returns the artists (or the figure) and
never calls ``plt.show()``. Colours and sizes come from :mod:`qkv_viz.viz.style`,
heatmaps from :mod:`qkv_viz.viz.plots`, each grid with one shared colour bar.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from qkv_viz.core.diagnostics import score_std
from qkv_viz.viz import style
from qkv_viz.viz.plots import attention_heatmap, scores_heatmap

COLORS = {"scaled": style.SCALED_COLOR, "unscaled": style.UNSCALED_COLOR, "over-scaled": style.CONTROL_COLOR,
          "small init": style.OKABE_ITO[7], "unscaled, small lr": style.UNSCALED_COLOR}
LINESTYLES = {"small init": "--", "unscaled, small lr": ":"}
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
                          color=COLORS.get(name), ls=LINESTYLES.get(name, "-"), lw=1.5)
        lines.append(line)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("training step")
    ax.set_ylabel(CURVES[key])
    return lines


def training_panel(runs: dict, keys=("loss", "acc"), window: int = 5,
                   baselines: dict | None = None):
    """Small multiples of the training curves (gradient norms on a log axis). Returns the figure.

    ``baselines``: ``{label: accuracy}`` drawn as dotted lines on the accuracy panel, each
    labelled "label NN%" (e.g. the accuracy of attending to one random key).
    """
    width = min(style.COLUMN_WIDTH - 0.3, 2.9 * len(keys))  # room for the tight bbox's margin
    fig, axes = plt.subplots(1, len(keys), figsize=(width, 2.6), constrained_layout=True)
    for ax, key in zip(np.atleast_1d(axes), keys):
        plot_curve(runs, key, ax=ax, window=1 if key.startswith("grad") else window,
                   log=key.startswith("grad"))
        if key == "acc":
            for label, level in (baselines or {}).items():
                ax.axhline(level, color="gray", lw=0.8, ls=":")
                ax.text(ax.get_xlim()[1], level - 0.02, f"{label} {level:.0%}", ha="right", va="top",
                        color="dimgray", fontsize=style.MIN_FONT_PT)
    fig.legend(*np.atleast_1d(axes)[0].get_legend_handles_labels(), loc="outside lower center",
               ncols=len(runs), frameon=False)
    return fig


def grad_histogram(per_query: dict, ax=None, bins=None):
    """Histogram of log10 per-query gradient norms on W_q, one per run.

    ``per_query``: ``{run name: (n_queries,) norms}``, e.g. computed with one
    ``backward()`` per query, or a run's ``init_grad_per_query``. Returns the bar containers.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3))
    logs = {n: np.log10(np.maximum(np.asarray(v, dtype=float), 1e-30)) for n, v in per_query.items()}
    if bins is None:
        lo = min(v.min() for v in logs.values())
        hi = max(v.max() for v in logs.values())
        bins = np.linspace(np.floor(lo), np.ceil(hi), 40)
    artists = [ax.hist(v, bins=bins, alpha=0.55, label=n, color=COLORS.get(n))[2] for n, v in logs.items()]
    ax.set_xlabel(r"$\log_{10}\,|\partial \ell_i / \partial W_q|$ (one query's loss)")
    ax.set_ylabel("queries")
    ax.legend()
    return artists


def _sparse_ticks(ax, shape, every: int = 5):
    """Tick every ``every``-th query and key, so 16 labels never crowd a small panel."""
    T, S = shape
    ax.set_yticks(range(0, T, every), [str(i) for i in range(0, T, every)], fontsize=style.MIN_FONT_PT)
    ax.set_xticks(range(0, S, every), [str(i) for i in range(0, S, every)], fontsize=style.MIN_FONT_PT)


def _mark_targets(ax, targets):
    """A red square with a white halo on the key each query should attend to (visible on dark red too)."""
    rows = np.arange(len(targets))
    ax.scatter(targets, rows, marker="s", s=30, facecolors="none", edgecolors="white", lw=2.4)
    return ax.scatter(targets, rows, marker="s", s=30, facecolors="none", edgecolors="red", lw=1.1)


def attention_snapshots(runs: dict, names=None):
    """Grid of attention weights: one row per run (``names``, default all), one column per snapshot step;
    one shared colour bar.

    The step heads each column (top row), the run's name each row (its y label). Red squares
    mark the key each query must find. Returns the figure.
    """
    names = list(runs) if names is None else list(names)
    n_cols = len(runs[names[0]].snapshots)
    fig, axes = plt.subplots(len(names), n_cols, figsize=(min(style.COLUMN_WIDTH, 2.4 * n_cols + 1.2),
                                                          2.1 * len(names)),
                             squeeze=False, constrained_layout=True, sharex=True, sharey=True)
    im = None
    for i, (row, name) in enumerate(zip(axes, names)):
        r = runs[name]
        for j, (ax, (step, (_, weights))) in enumerate(zip(row, sorted(r.snapshots.items()))):
            im = attention_heatmap(weights, ax=ax, annotate=False, colorbar=False,
                                   title=f"step {step}" if i == 0 else None)
            _mark_targets(ax, r.targets)
            if j:
                ax.set_ylabel("")
            else:
                ax.set_ylabel(f"{name}\nqueries", fontweight="bold")
    for ax in axes[:-1].ravel():
        ax.set_xlabel("")
    fig.colorbar(im, ax=axes, shrink=0.6, label=style.WEIGHTS_LABEL, ticks=np.linspace(0, 1, 5))
    return fig


def debug_grid(runs: dict, names=None, step: int = 0, limit: float = 5.0):
    """Debug like the article: for each run (a row) the scores before softmax, the weights after, a histogram.

    Scores share one diverging colour bar on the fixed range [-limit, limit] (saturated runs hit
    the ends, flat runs stay white), weights one 0..1 bar. Red squares mark the keys to find.
    Returns the figure.
    """
    names = list(runs) if names is None else list(names)
    for name in names:
        if step not in runs[name].snapshots:
            raise ValueError(f"no snapshot at step {step} for {name!r}; have {sorted(runs[name].snapshots)}")
    fig, axes = plt.subplots(len(names), 3, figsize=(style.COLUMN_WIDTH, 2.5 * len(names)), squeeze=False,
                             constrained_layout=True, gridspec_kw=dict(width_ratios=(1, 1, 0.9)))
    for (a, b, c), name in zip(axes, names):
        r = runs[name]
        scores, weights = r.snapshots[step]
        im_s = scores_heatmap(scores, ax=a, annotate=False, colorbar=False, limit=limit,
                              title=f"{name}: scores, step {step}")
        im_w = attention_heatmap(weights, ax=b, annotate=False, colorbar=False, title="weights after softmax")
        for ax in (a, b):
            _mark_targets(ax, r.targets)
            _sparse_ticks(ax, scores.shape)
        c.hist(scores.ravel(), bins=30, color=COLORS.get(name, "gray"))
        c.set_xlabel(f"all {scores.size} scores")
        c.set_ylabel("count")
        c.set_title(f"this sequence: row std {score_std(scores).mean():.3g}")
    fig.colorbar(im_s, ax=axes[:, 0], location="bottom", shrink=0.8, aspect=25,
                 label=f"scores (colours clipped at ±{limit:g})")
    fig.colorbar(im_w, ax=axes[:, 1], location="bottom", shrink=0.8, aspect=25, label=style.WEIGHTS_LABEL,
                 ticks=np.linspace(0, 1, 5))
    return fig
