import numpy as np
import pytest

from qkv_viz.chapters.ch03_toy.toy import toy_steps
from qkv_viz.chapters.ch03_toy.widget import steps_html, toy_widget


def _set_scores(w, values):
    for box, value in zip(w.score_boxes, values):
        box.value = value


def test_initial_table_shows_the_articles_row():
    w = toy_widget()
    expected = toy_steps([2.0, 5.0, 1.0]).weights
    for x in expected:
        assert f"{x:.3f}" in w.table.value
    assert w.message.value == ""


def test_typing_scores_updates_every_intermediate():
    w = toy_widget()
    _set_scores(w, ["0", "1", "3"])
    steps = toy_steps([0.0, 1.0, 3.0])
    assert w.table.value == steps_html(steps)
    w.scale_box.value = False
    assert w.table.value == steps_html(toy_steps([0.0, 1.0, 3.0], scale=False))


@pytest.mark.parametrize("bad", ["abc", "", "nan", "inf"])
def test_bad_input_shows_message_and_widget_survives(bad):
    w = toy_widget()
    before = w.table.value
    w.score_boxes[1].value = bad
    assert "q1.k2" in w.message.value
    assert w.table.value == before  # last good table kept
    w.score_boxes[1].value = "4"
    assert w.message.value == ""
    assert f"{toy_steps([2.0, 4.0, 1.0]).weights[1]:.3f}" in w.table.value


def test_html_has_no_script():
    assert "<script" not in steps_html(toy_steps()).lower()
    assert np.isfinite(toy_steps().total)
