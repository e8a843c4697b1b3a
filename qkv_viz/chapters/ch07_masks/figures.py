"""Chapter 7 pictures: hidden (masked) cells drawn as hatched, so "hidden" and "weight near 0"
look different on a heatmap."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

HATCH = "////"
HATCH_COLOR = "0.75"


def hatch_masked(ax, mask):
    """Hatch every cell of a heatmap on ``ax`` where ``mask`` (T, S) is False (hidden), and
    remove the number written in such a cell (its weight is 0 by construction).

    The heatmap is expected in ``imshow`` cell coordinates (cell (i, j) centred on
    (j, i)), as ``qkv_viz.viz.plots`` draws it. Returns the rectangles drawn.
    """
    mask = np.asarray(mask)
    if mask.dtype != bool:
        raise TypeError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
    if mask.ndim != 2:
        raise ValueError(f"mask must be 2-D (T, S), got shape {mask.shape}")
    T, S = mask.shape
    for text in list(ax.texts):  # cell numbers sit at the cell centres
        x, y = (int(round(v)) for v in text.get_position())
        if 0 <= y < T and 0 <= x < S and not mask[y, x]:
            text.remove()
    return [ax.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch=HATCH,
                                       edgecolor=HATCH_COLOR, lw=0))
            for i, j in np.argwhere(~mask)]
