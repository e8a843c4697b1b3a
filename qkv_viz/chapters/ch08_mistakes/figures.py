"""Chapter 8's pictures: where the columns of a fused Q|K|V result end up after a split."""
from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap

from qkv_viz.core.validate import positive_int
from qkv_viz.viz import style

ROLE_NAMES = ("Q", "K", "V")


def split_origin(d: int, wrong: bool) -> np.ndarray:
    """Which fused column each split output reads: (3, d) integer column indices.

    Row 0 is what becomes q, row 1 k, row 2 v. The fused result has columns
    0..d-1 from W_q, d..2d-1 from W_k, 2d..3d-1 from W_v.
    """
    d = positive_int("d", d)
    columns = np.arange(3 * d)[None, :]  # (1, 3d): one row whose entries are column indices
    if wrong:
        return columns.reshape(1, d, 3).transpose(2, 0, 1)[:, 0, :]  # reshape(n, d, 3) bug -> (3, d)
    return np.stack(np.split(columns[0], 3))  # three blocks -> (3, d)


def plot_split(d: int = 4, wrong: bool = False, ax=None, title: str | None = None):
    """Draw the (3, d) split as cells coloured by where each column really came from.

    Each cell shows the fused column index; its colour is Q, K or V (the book's
    QUERY/KEY/VALUE colours). A right split gives three single-coloured rows.
    Returns the image and the text artists.
    """
    import matplotlib.pyplot as plt

    origin = split_origin(d, wrong)  # (3, d) column indices
    role = origin // d  # (3, d): 0 = came from W_q, 1 = W_k, 2 = W_v
    if ax is None:
        _, ax = plt.subplots(figsize=style.figsize(0.45, 0.45))
    cmap = ListedColormap([style.QUERY_COLOR, style.KEY_COLOR, style.VALUE_COLOR])
    im = ax.imshow(role, cmap=cmap, vmin=-0.5, vmax=2.5, aspect="auto")
    texts = [ax.text(j, i, f"{ROLE_NAMES[role[i, j]]}{origin[i, j]}", ha="center", va="center",
                     color="white", fontsize=style.ANNOTATION_PT, fontweight="bold")
             for (i, j), _ in np.ndenumerate(origin)]
    ax.set_yticks(range(3), ["q", "k", "v"])
    ax.set_xticks(range(d), [str(j) for j in range(d)])
    ax.set_xlabel("column of the split result")
    ax.set_ylabel("split output")
    for spine in ax.spines.values():
        spine.set_visible(False)
    if title is not None:
        ax.set_title(title)
    return im, texts
