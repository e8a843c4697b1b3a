"""The strip of controls under a figure's still (qkv_viz.viz.canvas.with_controls)."""
from __future__ import annotations

import io
import re

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.image import imread

from qkv_viz.viz.canvas import check_controls, figure_png, with_controls


def _png(width=4.0, height=2.0) -> bytes:
    fig = Figure(figsize=(width, height))
    fig.add_subplot().plot([0, 1], [1, 0])
    return figure_png(fig)


def test_no_controls_leave_the_picture_as_it_is():
    png = _png()
    assert with_controls(png, []) == png


def test_more_controls_than_a_row_holds_wrap_onto_more_rows():
    png = _png(width=3.0)
    one = imread(io.BytesIO(with_controls(png, [("check", "causal mask", True)])))
    many = imread(io.BytesIO(with_controls(png, [("slider", f"slider number {i}", (0.5, "1.0"))
                                                 for i in range(6)])))
    assert many.shape[0] > one.shape[0] and many.shape[1] == one.shape[1] == 300


def test_a_ticked_box_differs_from_an_empty_one():
    png = _png()
    assert with_controls(png, [("check", "scale", True)]) != with_controls(png, [("check", "scale", False)])


@pytest.mark.parametrize("bad, words", [
    (("dial", "d_k", 3), "controls[0] must be (kind, label, value)"),
    (("slider", "d_k", 0.5), "a slider's value is (fraction in 0..1, text)"),
    (("slider", "d_k", (1.5, "64")), "a slider's value is (fraction in 0..1, text)"),
    (("check", "scale", "yes"), "a check box's value is a bool"),
    (["check", "scale", True], "controls[0] must be"),
])
def test_a_control_it_cannot_draw_is_refused_by_name(bad, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        check_controls([bad])


def test_no_control_runs_past_the_pictures_right_edge():
    """Widths are measured as drawn: a long bold value (chapter 9's sentence box) pushes the
    next control onto a new row instead of past the edge (a guess of 6.3 px a character did)."""
    png = _png(width=8.25)                                                      # 825 px, as chapter 9's still
    sentence = "The animal didn't cross the street because it was too tired."
    shown = imread(io.BytesIO(with_controls(png, [("box", "sentence (Enter to run the model)", sentence),
                                                  ("slider", "layer", (0.0, "0"))])))
    height = imread(io.BytesIO(png)).shape[0]
    strip = shown[height:, :, :3]                                               # (strip rows, 825, 3)
    inked = np.where((strip < 0.8).any(axis=(0, 2)))[0]                          # columns with dark ink
    assert inked.max() < strip.shape[1] - 4, f"ink at column {inked.max()} of {strip.shape[1]}"
    assert shown.shape[0] - height > 3 * 30, "the slider should have wrapped onto a second row"
