"""Chapter 9's widget: type a sentence, pick a layer, see the real model's 12 heads.

``real_attention_widget(model)`` builds and returns the widget; the notebook
displays it. An empty or too long sentence shows the message and leaves the
widget alive with its last good picture.
"""
from __future__ import annotations

import html

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import display

from qkv_viz.viz.plots import head_grid
from qkv_viz.bridges.real_forward import head_sharpness, run


def head_grid_figure(trace, layer: int, ncols: int = 6):
    """A closed matplotlib figure of every head of ``layer`` (H small heatmaps, token labels)."""
    weights = trace.weights[layer]  # (H, T, T)
    H = weights.shape[0]
    eff = head_sharpness(trace)["effective_tokens"][layer]  # (H,)
    nrows = -(-H // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(1.6 * ncols + 0.6, 1.6 * nrows + 0.8), squeeze=False)
    titles = [f"head {h}: {eff[h]:.1f} tok" for h in range(H)]
    head_grid(weights, tokens_q=trace.tokens, tokens_k=trace.tokens, axes=axes, titles=titles)
    for (row, col), ax in np.ndenumerate(axes):  # token labels on the outer panels only
        ax.tick_params(labelsize=6, labelleft=col == 0, labelbottom=row == nrows - 1)
        ax.title.set_fontsize(8)
        ax.set_xlabel("")
        ax.set_ylabel("")
    fig.suptitle(f"layer {layer}: attention weights of every head (rows: queries, columns: keys)",
                 fontsize=9)
    fig.subplots_adjust(left=0.06, right=0.99, bottom=0.14, top=0.88, wspace=0.08, hspace=0.25)
    plt.close(fig)
    return fig


def real_attention_widget(model, sentence: str = "The cat sat on the mat because it was tired.",
                          layer: int = 0):
    """A Text box (press Enter to apply) and a layer slider above the layer's head grid.

    Returns a ``VBox`` with attributes ``text``, ``layer_slider``, ``message``,
    ``output`` and ``trace`` (the last good ``Trace``) so tests can drive it.
    """
    text = widgets.Text(value=sentence, description="sentence", continuous_update=False,
                        layout=widgets.Layout(width="95%"))
    slider = widgets.IntSlider(value=layer, min=0, max=model.config.n_layers - 1,
                               description="layer", continuous_update=False)
    message, output = widgets.HTML(), widgets.Output()
    box = widgets.VBox([text, slider, message, output])
    box.text, box.layer_slider, box.message, box.output, box.trace = text, slider, message, output, None

    def redraw(_=None):
        try:
            trace = run(model, text.value)
        except (TypeError, ValueError) as exc:
            message.value = f"<span style='color:#b00'>{html.escape(str(exc))}</span>"
            return
        message.value = f"{len(trace.tokens)} tokens"
        box.trace = trace
        output.clear_output(wait=True)
        with output:
            display(head_grid_figure(trace, slider.value))

    text.observe(redraw, names="value")
    slider.observe(redraw, names="value")
    redraw()
    return box
