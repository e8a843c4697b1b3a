"""Static matplotlib pictures of attention: weights, scores, head grids, metrics vs d_k.

Every function takes ``ax=None`` (a new figure in the book's style is made when
omitted), returns the artists it drew and never calls ``plt.show()``.

The book's rules (:mod:`qkv_viz.viz.style`), enforced here so chapters get them free:

- weights use ``style.WEIGHTS_CMAP`` on the FIXED range 0..1, so the same colour
  is the same weight in every figure; raw scores use ``style.SCORES_CMAP`` on a
  range symmetric about 0, so white is always 0;
- every heatmap says what its colours mean: a labelled colour bar (one shared bar
  for a grid) and, for small matrices, the numbers written in the cells;
- axis titles say which axis is queries (rows, T) and which keys (columns, S);
- no text under ``style.MIN_FONT_PT`` and no figure wider than ``style.COLUMN_WIDTH``.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import NullLocator

from qkv_viz.core.validate import as_array
from qkv_viz.viz import style

ANNOTATE_MAX_CELLS = style.ANNOTATE_MAX_CELLS  # annotate=None writes the numbers only up to 8 x 8
_PT_PER_IN = 72.0
_CHAR_W = 0.55  # average glyph width of the default sans font, in ems


# -- helpers -------------------------------------------------------------------
def _new_ax(ax, figsize=(4.4, 3.6)):
    if ax is None:
        # No layout engine: a chapter may still call fig.tight_layout() after adding a colour bar.
        fig, ax = plt.subplots(figsize=figsize, dpi=style.DPI)
        fig.subplots_adjust(left=0.22, right=0.97, bottom=0.2, top=0.9)
    return ax


def _heatmap_figsize(T: int, S: int, tokens_q, tokens_k) -> tuple[float, float]:
    """A new heatmap's figure: every row/column of cells >= ``style.TOKEN_PITCH_IN``, room for labels."""
    pitch = style.TOKEN_PITCH_IN
    label_q = (max(map(len, tokens_q)) if tokens_q is not None else 2) * 0.07
    label_k = (max(map(len, tokens_k)) if tokens_k is not None else 2) * 0.07
    width = min(style.COLUMN_WIDTH, max(4.4, (S * pitch + label_q + 0.5) / 0.75 + 0.1))
    height = min(8.0, max(3.6, (T * pitch + label_k + 0.45) / 0.7 + 0.1))
    return width, height


def _check_tokens(name: str, tokens, n: int):
    if tokens is None:
        return None
    tokens = [str(t) for t in tokens]
    if len(tokens) != n:
        raise ValueError(f"{name} has {len(tokens)} labels but the matrix has {n} along that axis")
    return tokens


def _axes_size_pt(ax) -> tuple[float, float]:
    """(width, height) of ``ax`` in points, from its current position (no renderer needed)."""
    fig_w, fig_h = ax.figure.get_size_inches()
    pos = ax.get_position()
    return pos.width * fig_w * _PT_PER_IN, pos.height * fig_h * _PT_PER_IN


def _tick_font(pitch_pt: float) -> float:
    """Font size for labels ``pitch_pt`` apart: FONT_PT when there is room, never below MIN_FONT_PT."""
    return float(np.clip(0.85 * pitch_pt, style.MIN_FONT_PT, style.FONT_PT))


def _thin(n: int, pitch_pt: float, font_pt: float) -> int:
    """Label every k-th cell so labels ``font_pt`` high do not overlap."""
    return max(1, int(np.ceil(1.1 * font_pt / max(pitch_pt, 1e-9)))) if n > 1 else 1


def _set_ticks(axis, n: int, tokens, pitch_pt: float, rotate: bool):
    font = _tick_font(pitch_pt)
    step = _thin(n, pitch_pt, font)
    idx = list(range(0, n, step))
    labels = [tokens[i] for i in idx] if tokens is not None else [str(i) for i in idx]
    kw = {}
    if rotate:
        steep = pitch_pt < 1.6 * font  # no room for slanted labels: stand them up
        kw = dict(rotation=90 if steep else 45, ha="center" if steep else "right",
                  rotation_mode="default" if steep else "anchor")
    axis.set_ticks(idx, labels, fontsize=font, **kw)
    axis.set_minor_locator(NullLocator())


def _label_axes(ax, T: int, S: int, tokens_q, tokens_k, size_pt=None):
    """Tick labels (token strings when given, else indices, thinned when dense) and axis titles.

    ``size_pt`` is the axes' (width, height) in points once laid out; by default its current size.
    """
    tokens_q = _check_tokens("tokens_q", tokens_q, T)
    tokens_k = _check_tokens("tokens_k", tokens_k, S)
    w_pt, h_pt = size_pt or _axes_size_pt(ax)
    long_keys = tokens_k is not None and max(map(len, tokens_k)) > 2
    _set_ticks(ax.yaxis, T, tokens_q, h_pt / T, rotate=False)
    _set_ticks(ax.xaxis, S, tokens_k, w_pt / S, rotate=long_keys)
    ax.tick_params(length=2, pad=2)
    ax.set_ylabel(style.QUERY_AXIS, fontsize=style.FONT_PT)
    ax.set_xlabel(style.KEY_AXIS, fontsize=style.FONT_PT)
    for spine in ax.spines.values():  # a heatmap is a matrix: all four edges or none
        spine.set_visible(False)


def _cell_font(ax, matrix: np.ndarray, fmt: str) -> float | None:
    """Font size that fits the widest number in a cell, or None when even MIN_FONT_PT does not fit."""
    T, S = matrix.shape
    w_pt, h_pt = _axes_size_pt(ax)
    chars = max(len(format(v, fmt)) for v in matrix.ravel())
    fit = min(0.9 * (w_pt / S) / (_CHAR_W * chars), 0.7 * h_pt / T)
    if fit < style.MIN_FONT_PT:
        return None
    return min(style.ANNOTATION_PT, fit)


def _annotate(ax, im, matrix: np.ndarray, fmt: str, font: float):
    """Write each cell's value, black on light cells and white on dark ones. Returns the Text artists."""
    rgba = im.cmap(im.norm(matrix))  # (T, S, 4)
    luminance = rgba[..., :3] @ np.array([0.299, 0.587, 0.114])  # (T, S, 3) @ (3,) -> (T, S)
    texts = []
    for (i, j), value in np.ndenumerate(matrix):
        color = "black" if luminance[i, j] > 0.5 else "white"
        texts.append(ax.text(j, i, format(value, fmt), ha="center", va="center",
                             fontsize=font, color=color))
    return texts


def _should_annotate(annotate, T: int, S: int) -> bool:
    if annotate is None or annotate == "auto":
        return T * S <= ANNOTATE_MAX_CELLS
    return bool(annotate)


def _colorbar(im, ax, label: str, ticks=None, cax=None):
    """A slim colour bar beside ``ax`` (or beside every axes in the list ``ax``, or in ``cax``), labelled."""
    if cax is not None:
        cbar = im.figure.colorbar(im, cax=cax, ticks=ticks)
    else:
        cbar = im.figure.colorbar(im, ax=ax, fraction=0.05, pad=0.03, aspect=25, ticks=ticks)
    cbar.set_label(label, fontsize=style.FONT_PT)
    cbar.ax.tick_params(labelsize=style.FONT_PT - 1, length=2)
    cbar.outline.set_visible(False)
    return cbar


def _heatmap(matrix, ax, tokens_q, tokens_k, annotate, fmt, title, cmap, vmin, vmax,
             colorbar, colorbar_label, ticks, size_pt=None):
    T, S = matrix.shape
    ax = _new_ax(ax, _heatmap_figsize(T, S, tokens_q, tokens_k))
    im = ax.imshow(matrix, cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest",
                   aspect="auto")
    if colorbar:
        _colorbar(im, ax, colorbar_label, ticks)  # before the labels: it changes the axes' size
    _label_axes(ax, T, S, tokens_q, tokens_k, size_pt)
    if _should_annotate(annotate, T, S):
        font = _cell_font(ax, matrix, fmt)
        if font is not None or annotate is True:
            _annotate(ax, im, matrix, fmt, font or style.MIN_FONT_PT)
    if title is not None:
        ax.set_title(title, fontsize=style.TITLE_PT)
    return im


# -- public --------------------------------------------------------------------
def attention_heatmap(weights, ax=None, tokens_q=None, tokens_k=None, annotate=None,
                      colorbar=True, title=None, vmin=0.0, vmax=1.0, cmap=None,
                      colorbar_label=None, fmt=".2f"):
    """Draw attention weights (T, S) as an image, queries on rows, keys on columns.

    Colours: ``style.WEIGHTS_CMAP`` on the fixed range ``vmin..vmax`` (0..1), with a
    colour bar labelled "weights" when ``colorbar`` (its ``Colorbar`` is
    ``im.colorbar``). ``annotate=None`` writes the values in the cells when
    T * S <= 64 and they fit at >= 8 pt; True always, False never.
    Returns the ``AxesImage``.
    """
    weights = as_array("weights", weights, ndim=2)
    custom = (vmin, vmax) != style.WEIGHTS_RANGE
    label = colorbar_label or ("value" if custom else style.WEIGHTS_LABEL)
    ticks = None if custom else np.linspace(0, 1, 5)
    return _heatmap(weights, ax, tokens_q, tokens_k, annotate, fmt, title,
                    cmap or style.WEIGHTS_CMAP, vmin, vmax, colorbar, label, ticks)


def scores_heatmap(scores, ax=None, tokens_q=None, tokens_k=None, annotate=None,
                   colorbar=True, title=None, limit=None, cmap=None, colorbar_label=None,
                   fmt=".1f"):
    """Draw raw scores (T, S) before softmax on a diverging range symmetric about 0.

    ``limit`` fixes the range to [-limit, limit]; by default it is the largest
    absolute score, so 0 is always the middle (white) colour. The colour bar is
    labelled "score q·k" unless ``colorbar_label`` says otherwise (e.g. the scaled
    score). Returns the ``AxesImage``.
    """
    scores = as_array("scores", scores, ndim=2)
    if limit is None:
        limit = float(np.abs(scores[np.isfinite(scores)]).max(initial=0.0)) or 1.0
    return _heatmap(scores, ax, tokens_q, tokens_k, annotate, fmt, title,
                    cmap or style.SCORES_CMAP, -float(limit), float(limit), colorbar,
                    colorbar_label or style.SCORES_LABEL, None)


_GAP_IN, _TITLE_IN, _BAR_IN = 0.1, 0.3, 0.95  # between panels, a panel's title, the shared bar + label


def _label_in(tokens, font_pt: float) -> float:
    """Length in inches of the longest label (index labels when ``tokens`` is None)."""
    chars = max(map(len, tokens)) if tokens else 2
    return chars * 0.6 * font_pt / _PT_PER_IN


def _grid_layout(H: int, T: int, S: int, ncols: int, tokens_q, tokens_k) -> dict:
    """Geometry (inches) of a head grid that fits the column with >= 8 pt token labels.

    Every row/column of cells gets >= ``style.TOKEN_PITCH_IN`` so labels never touch;
    as many panels a row as fit (at most ``style.MAX_GRID_COLUMNS`` and ``ncols``).
    """
    pitch = style.TOKEN_PITCH_IN
    panel_w, panel_h = max(1.5, S * pitch), max(1.3, T * pitch)
    font_q = _tick_font(min(panel_h / T, 1.0) * _PT_PER_IN)
    font_k = _tick_font(min(panel_w / S, 1.0) * _PT_PER_IN)
    left = _label_in(tokens_q, font_q) + 0.4                 # y tick labels + "queries" title
    room = style.COLUMN_WIDTH - left - _BAR_IN - 0.05
    fit = max(1, int((room + _GAP_IN) // (panel_w + _GAP_IN)))
    ncols = max(1, min(int(ncols), style.MAX_GRID_COLUMNS, H, fit))
    panel_w = min(panel_w, (room + _GAP_IN) / ncols - _GAP_IN)
    if T == S:
        panel_h = max(panel_h, 0.8 * panel_w)
    nrows = -(-H // ncols)
    below = (_label_in(tokens_k, font_k) if tokens_k else 0.15) + 0.12  # x tick labels, every row
    return {"ncols": ncols, "nrows": nrows, "panel_w": panel_w, "panel_h": panel_h,
            "left": left, "below": below, "bottom": below + 0.25, "top": _TITLE_IN}


def _grid_figure(geo: dict, H: int, suptitle):
    """The empty grid: panels placed by hand (no layout engine, so a later tight_layout() is harmless)."""
    ncols, nrows = geo["ncols"], geo["nrows"]
    top = geo["top"] + (0.35 if suptitle else 0.0)
    grid_w = ncols * geo["panel_w"] + (ncols - 1) * _GAP_IN
    grid_h = nrows * geo["panel_h"] + (nrows - 1) * (geo["below"] + _TITLE_IN)
    width = geo["left"] + grid_w + _BAR_IN
    height = top + grid_h + geo["bottom"]
    fig, grid = plt.subplots(nrows, ncols, figsize=(width, height), dpi=style.DPI, squeeze=False)
    fig.subplots_adjust(left=geo["left"] / width, right=(geo["left"] + grid_w) / width,
                        bottom=geo["bottom"] / height, top=1 - top / height,
                        wspace=_GAP_IN / geo["panel_w"],
                        hspace=(geo["below"] + _TITLE_IN) / geo["panel_h"])
    if suptitle:
        fig.suptitle(suptitle, fontsize=style.TITLE_PT, y=1 - 0.08 / height, va="top")
    bar_h = min(grid_h, 3.5)  # the shared bar: beside the grid, centred, at most 3.5 in tall
    cax = fig.add_axes([(geo["left"] + grid_w + 0.15) / width, (geo["bottom"] + (grid_h - bar_h) / 2) / height,
                        0.14 / width, bar_h / height])
    axes = list(grid.ravel())
    for ax in axes[H:]:
        ax.set_visible(False)
    return fig, axes, cax


def head_grid(weights, tokens_q=None, tokens_k=None, axes=None, ncols=4, titles=None,
              colorbar=True, suptitle=None):
    """Small multiples: one weights heatmap per head, weights (H, T, S), one shared colour bar.

    When ``axes`` is None a figure at most ``style.COLUMN_WIDTH`` wide is created
    with at most 4 panels a row (fewer when the token labels need room: every
    row of tokens gets >= ``style.TOKEN_PITCH_IN``, so 8 pt labels never touch);
    unused cells are hidden. ``axes`` is otherwise a sequence of at least H axes
    (the bar then takes room from them). Query labels go on the first column, key
    labels under every panel. Returns the H images; the shared bar is ``images[0].colorbar``.
    """
    weights = as_array("weights", weights, ndim=3)
    H, T, S = weights.shape
    if titles is not None and len(titles) != H:
        raise ValueError(f"titles has {len(titles)} entries but weights has H={H} heads")
    panel_pt = cax = None
    if axes is None:
        geo = _grid_layout(H, T, S, ncols, tokens_q, tokens_k)
        ncols = geo["ncols"]
        fig, axes, cax = _grid_figure(geo, H, suptitle)
        panel_pt = (geo["panel_w"] * _PT_PER_IN, geo["panel_h"] * _PT_PER_IN)
    axes = list(np.ravel(axes))
    if len(axes) < H:
        raise ValueError(f"got {len(axes)} axes for H={H} heads")
    images = []
    for h in range(H):
        ax = axes[h]
        first_col = _is_first_col(ax, h, ncols)
        title = titles[h] if titles is not None else f"head {h}"
        im = _heatmap(weights[h], ax, tokens_q, tokens_k, False, ".2f", title,
                      style.WEIGHTS_CMAP, 0.0, 1.0, False, style.WEIGHTS_LABEL, None, panel_pt)
        ax.set_ylabel(style.QUERY_AXIS if first_col else "")
        ax.set_xlabel(style.KEY_AXIS if _is_last_row(ax, h, H, ncols) else "")
        if not first_col:
            ax.tick_params(labelleft=False)
        ax.title.set_fontsize(style.FONT_PT)
        images.append(im)
    if colorbar:
        _colorbar(images[0], axes[:H], style.WEIGHTS_LABEL, np.linspace(0, 1, 5), cax=cax)
    elif cax is not None:
        cax.remove()
    return images


def _is_first_col(ax, h: int, ncols: int) -> bool:
    spec = ax.get_subplotspec()
    return spec.is_first_col() if spec is not None else h % ncols == 0


def _is_last_row(ax, h: int, H: int, ncols: int) -> bool:
    """True for the lowest panel of each column (so a ragged last row still gets its title above)."""
    spec = ax.get_subplotspec()
    if spec is None:
        return h + ncols >= H
    ncols = spec.get_gridspec().ncols
    return h + ncols >= H


def metric_vs_dk(d_ks, values_scaled, values_unscaled, ax=None, label="metric", current=None):
    """Plot one metric against d_k (log2 axis): scaled and unscaled curves in the style's colours.

    ``d_ks`` (K,), ``values_scaled`` (K,), ``values_unscaled`` (K,). ``current``
    (a d_k in ``d_ks``) gets a black ring on both curves (listed in the legend).
    Returns ``[scaled_line, unscaled_line]`` plus the marker line when ``current`` is set.
    """
    d_ks = as_array("d_ks", d_ks, ndim=1)
    scaled = as_array("values_scaled", values_scaled, ndim=1)
    unscaled = as_array("values_unscaled", values_unscaled, ndim=1)
    if not (d_ks.shape == scaled.shape == unscaled.shape):
        raise ValueError(f"d_ks {d_ks.shape}, values_scaled {scaled.shape} and "
                         f"values_unscaled {unscaled.shape} must have the same shape")
    ax = _new_ax(ax, figsize=(4.4, 3.2))
    (line_s,) = ax.plot(d_ks, scaled, "o-", ms=4, color=style.SCALED_COLOR,
                        label=r"scaled by $1/\sqrt{d_k}$")
    (line_u,) = ax.plot(d_ks, unscaled, "s--", ms=4, color=style.UNSCALED_COLOR, label="unscaled")
    ax.set_xscale("log", base=2)
    ticks = d_ks[::2] if d_ks.size > 6 else d_ks
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])  # plain 1, 4, 16 ... rather than 2^k
    ax.xaxis.set_minor_locator(NullLocator())
    ax.tick_params(labelsize=style.FONT_PT)
    ax.set_xlabel("$d_k$ (dimension of queries and keys)", fontsize=style.FONT_PT)
    ax.set_ylabel(label, fontsize=style.FONT_PT)
    ax.grid(alpha=0.25, lw=0.6)
    artists = [line_s, line_u]
    if current is not None:
        artists.append(_current_marker(ax, d_ks, scaled, unscaled, current))
    ax.legend(fontsize=style.FONT_PT - 1, frameon=False)
    return artists


def _current_marker(ax, d_ks, scaled, unscaled, current):
    idx = np.flatnonzero(d_ks == current)
    if idx.size == 0:
        raise ValueError(f"current={current!r} is not one of d_ks {d_ks.astype(int).tolist()}")
    i = int(idx[0])
    (marker,) = ax.plot([current, current], [scaled[i], unscaled[i]], "o", ms=10, mfc="none",
                        mec=style.OKABE_ITO[0], mew=1.6, label="current $d_k$", zorder=5)
    return marker
