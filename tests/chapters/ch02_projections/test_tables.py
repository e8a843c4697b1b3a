"""Chapter 2's labelled tables print what they are given, under both axes' names."""
import numpy as np
import pytest

from qkv_viz.chapters.ch02_projections.tables import print_table


def test_the_table_names_both_axes_and_prints_the_numbers(capsys):
    M = np.array([[0, 4.0, -2.5], [1, 0, 0]])
    assert print_table("M = W_q W_k^T", ["animate", "action"], ["a", "bb", "determiner"], M,
                       "query feature", "key feature") is None   # a cell ending with it shows no value
    out = capsys.readouterr().out
    assert out.endswith("\n\n")
    lines = out.rstrip("\n").split("\n")
    assert lines[0].startswith("M = W_q W_k^T") and lines[0].endswith("key feature →")
    assert lines[1].startswith("query feature ↓") and lines[1].split()[-3:] == ["a", "bb", "determiner"]
    for line, name, row in zip(lines[2:], ["animate", "action"], M):
        assert line.split()[0] == name
        np.testing.assert_array_equal([float(v) for v in line.split()[1:]], row)
    assert len({len(line) for line in lines[1:]}) == 1        # the columns line up
    assert "-0" not in " ".join(lines)


def test_the_table_refuses_names_that_do_not_fit():
    with pytest.raises(ValueError, match=r"\(2, 2\).*\(2, 3\)"):
        print_table("W", ["a", "b"], ["c", "d"], np.zeros((2, 3)), "rows", "columns")
