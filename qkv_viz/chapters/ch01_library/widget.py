"""Chapter 1's interactive figure: the library search with a temperature slider.

Drawn in the browser by the book's renderer (``qkv_viz/viz/js/library.js``):
Python sends the books (titles, keys, values) once; every temperature or query
step (the softmax of ``keys @ query / temperature``, the blended value, the
arrows and bars) is computed in the page, at each slider move or arrow-key press.
"""
from __future__ import annotations

from matplotlib.figure import Figure
import numpy as np
import traitlets

from qkv_viz.chapters.ch01_library.figures import library_and_weights
from qkv_viz.chapters.ch01_library.library import (DEMO_QUERY, KEY_AXES, VALUE_AXES, demo_library,
                                                   soft_lookup)
from qkv_viz.core.validate import positive_number
from qkv_viz.viz import style
from qkv_viz.viz.canvas import f64_bytes, figure_png, module_source
from qkv_viz.viz.traits import CheckedFigure, Number, number, numbers_list


class LibraryFigure(CheckedFigure):
    """Temperature slider (log scale, 0.01..100) and query sliders over the library.

    Traits: ``temperature`` (> 0), ``query`` (list of d_k floats); the books as
    ``titles``, ``book_keys``, ``book_values`` (float64 buffers). ``weights`` and
    ``output`` are the math core's numbers for what is on screen. CSS classes:
    ``qkv-library``, ``qkv-temperature`` (range input: log10 of the temperature),
    ``qkv-query-0``, ``qkv-query-1``, ``qkv-figure-plane``, ``qkv-weights-bars``
    (canvases), ``qkv-weights`` (table), ``qkv-message``. ``temperature`` and ``query``
    refuse what cannot be shown (a ``TraitError`` naming the trait); the books are fixed
    when the figure is built.
    """

    _esm = module_source("library.js")
    _fixed = ("titles", "book_keys", "book_values", "key_axes", "value_axes")
    _builder = "library_widget(...)"
    temperature = Number(1.0).tag(sync=True)
    query = traitlets.List().tag(sync=True)  # the validator checks the d_k numbers
    titles = traitlets.List(traitlets.Unicode()).tag(sync=True)
    book_keys = traitlets.Bytes(b"").tag(sync=True)    # (n_books, d_k) float64
    book_values = traitlets.Bytes(b"").tag(sync=True)  # (n_books, d_v) float64
    key_axes = traitlets.List(traitlets.Unicode()).tag(sync=True)
    value_axes = traitlets.List(traitlets.Unicode()).tag(sync=True)

    def __init__(self, library=None, query=None, temperature: float = 1.0):
        self.library = demo_library() if library is None else library
        query = DEMO_QUERY if query is None else np.asarray(query, dtype=float)
        soft_lookup(query, self.library, temperature)  # validates query and temperature
        d_v = self.library.values.shape[1]
        super().__init__(temperature=positive_number("temperature", temperature),
                         query=[float(x) for x in query], titles=list(self.library.titles),
                         book_keys=f64_bytes(self.library.keys), book_values=f64_bytes(self.library.values),
                         key_axes=list(KEY_AXES) if self.library.keys.shape[1] == 2 else [],
                         value_axes=list(VALUE_AXES) if d_v == len(VALUE_AXES) else [])

    @traitlets.validate("temperature")
    def _valid_temperature(self, proposal):
        return number("temperature", proposal["value"], above=0)

    @traitlets.validate("query")
    def _valid_query(self, proposal):
        return numbers_list("query", proposal["value"], self.library.keys.shape[1])

    @property
    def weights(self) -> np.ndarray:
        """Weights over the books (n_books,), from the math core."""
        return soft_lookup(self.query, self.library, self.temperature)[1]

    @property
    def output(self) -> np.ndarray:
        """The blended value (d_v,), from the math core."""
        return soft_lookup(self.query, self.library, self.temperature)[0]

    def static_controls(self) -> list[tuple]:
        """The live figure's controls (library.js) with this still's values."""
        log_t = float(np.clip(np.log10(self.temperature), -2, 2))
        names = [f"query[{i}] ({a})" if a else f"query[{i}]"
                 for i, a in enumerate(self.key_axes or [""] * len(self.query))]
        return ([("slider", "temperature", ((log_t + 2) / 4, f"{self.temperature:g}"))]
                + [("slider", name, ((float(np.clip(x, -2.5, 2.5)) + 2.5) / 5, f"{x:.1f}"))
                   for name, x in zip(names, self.query)])

    def static_png(self) -> bytes:
        fig = Figure(figsize=style.figsize(1.0, 0.42), dpi=style.DPI, layout="constrained")
        axes = fig.subplots(1, 2, gridspec_kw=dict(width_ratios=[1, 1.25]))
        library_and_weights(self.library, np.asarray(self.query), self.temperature, axes=axes)
        output = self.output
        best = int(np.argmax(self.library.keys @ np.asarray(self.query)))
        names = VALUE_AXES if len(output) == len(VALUE_AXES) else [f"value[{c}]" for c in range(len(output))]
        # one short line per panel: the hard pick above the keys, the soft blend above the bars
        axes[0].set_title(f"hard lookup picks {self.library.titles[best]}", fontsize=style.TITLE_PT)
        axes[1].set_title("")  # the centred one library_and_weights wrote: replaced by the right-aligned one
        axes[1].set_title(f"τ = {self.temperature:.3g}, output: "
                          + ", ".join(f"{a} {x:.2f}" for x, a in zip(output, names)), fontsize=style.TITLE_PT,
                          loc="right")  # wider than the bars: it extends left, over the titles' column
        return figure_png(fig)


def library_widget(library=None, query=None, show_plot: bool = True, temperature: float = 1.0):
    """The library figure (see :class:`LibraryFigure`); end a notebook cell with it.

    ``show_plot`` is kept for old calls: the figure always has its pictures.
    """
    return LibraryFigure(library, query, temperature)
