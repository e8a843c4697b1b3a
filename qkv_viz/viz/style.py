"""The book's one visual style: colours, fonts and sizes every figure uses.

- Attention **weights** (probabilities) use a sequential map on a fixed 0..1
  range, so the same colour means the same weight in every figure of the book.
- Raw **scores** (before softmax) use a diverging map centred on 0.
- Series colours are the Okabe-Ito palette (safe for colour-blind readers).
- Sizes fit JupyterLab's default notebook column (about 900 CSS px): a figure
  is at most ``COLUMN_WIDTH`` inches wide at ``DPI`` dots per inch, so it is never
  scaled down, and no text is smaller than ``MIN_FONT_PT``.
"""
from __future__ import annotations

WEIGHTS_CMAP = "viridis"      # sequential, perceptually uniform, colour-blind safe; 0..1
WEIGHTS_RANGE = (0.0, 1.0)
SCORES_CMAP = "RdBu_r"        # diverging: blue negative, white 0, red positive

# Okabe-Ito: black, orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple
OKABE_ITO = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
SERIES = OKABE_ITO[1:]        # for lines and bars; black is kept for text and reference lines
# Fixed roles, so a colour means the same thing in every chapter.
QUERY_COLOR = "#D55E00"       # vermillion: queries, "the one asking"
KEY_COLOR = "#0072B2"         # blue: keys, "the ones looked at"
VALUE_COLOR = "#009E73"       # bluish green: values, "what is handed back"
SCALED_COLOR = "#0072B2"      # with 1/sqrt(d_k)
UNSCALED_COLOR = "#D55E00"    # without it
CONTROL_COLOR = "#009E73"     # a third run (over-scaled, small init, ...)

DPI = 100                     # the inline backend's default: 1 inch = 100 CSS px at 100 % zoom
COLUMN_WIDTH = 8.8            # inches: 880 px, inside JupyterLab's ~900 px column
MIN_FONT_PT = 8.0             # nothing smaller, ever (a test and `make bench` measure it)
FONT_PT = 10.0                # body text, tick labels
TITLE_PT = 11.0
ANNOTATION_PT = 9.0           # numbers written in heatmap cells
MAX_GRID_COLUMNS = 4          # head grids wrap to at most 4 panels a row
ANNOTATE_MAX_CELLS = 64       # write the numbers in the cells up to 8 x 8
COLUMN_PX = 900               # JupyterLab's notebook column: wider figures are scaled down
TOKEN_PITCH_IN = 0.13         # a row/column of token labels needs ~9.4 pt so 8 pt labels do not touch

# Words, so every figure names its axes and colours the same way.
QUERY_AXIS = "queries (attending)"
KEY_AXIS = "keys (attended to)"
WEIGHTS_LABEL = "weights"
SCORES_LABEL = "score q·k"

RC = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "font.size": FONT_PT,
    "axes.titlesize": TITLE_PT,
    "axes.labelsize": FONT_PT,
    "xtick.labelsize": FONT_PT,
    "ytick.labelsize": FONT_PT,
    "legend.fontsize": 9.0,
    "figure.titlesize": 12.0,
    "axes.prop_cycle": None,  # set in rc() (needs matplotlib's cycler)
    "axes.spines.top": False,
    "axes.spines.right": False,
}


def rc() -> dict:
    """The matplotlib rcParams of the book's style (use with ``matplotlib.rc_context`` or ``use``)."""
    from cycler import cycler

    params = dict(RC)
    params["axes.prop_cycle"] = cycler(color=list(SERIES))
    return params


def use() -> None:
    """Apply the book's style to matplotlib globally (each chapter's first cell calls it)."""
    import matplotlib

    matplotlib.rcParams.update(rc())


def displayed_scale(width_px: float) -> float:
    """How much the browser shrinks a figure ``width_px`` wide to fit the column (1.0 = not at all)."""
    return min(1.0, COLUMN_PX / float(width_px)) if width_px > 0 else 1.0


def figsize(width_fraction: float = 1.0, aspect: float = 0.4) -> tuple[float, float]:
    """(width, height) in inches: a fraction of the notebook column, height = width * aspect."""
    w = COLUMN_WIDTH * float(width_fraction)
    return (w, w * float(aspect))
