"""Chapter 0's printed tables: one line per row name, numbers under their column names."""
import numpy as np
import pytest

from qkv_viz.chapters.ch00_start.tables import print_table


def test_print_table_prints_each_row_under_its_columns(capsys):
    print_table("W", ("water", "noun"), ("a", "b"), np.array([[2.0, 0.5], [0, 1]]))
    lines = capsys.readouterr().out.split("\n")
    assert lines[0].split() == ["W", "a", "b"]
    assert lines[1].split() == ["water", "2", "0.5"]
    assert lines[2].split() == ["noun", "0", "1"]
    assert lines[3] == ""


def test_print_table_refuses_names_that_do_not_fit_the_matrix():
    with pytest.raises(ValueError, match=r"\(2, 3\)"):
        print_table("W", ("x", "y"), ("a", "b", "c"), np.zeros((2, 2)))
