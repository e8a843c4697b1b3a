"""The committed chapter 9 notebook shows the pictures its prose describes. The figure helpers return closed
figures, which appear only when the call is the cell's last expression: a cell that draws one must have an
image/png output."""
import json
import re
from pathlib import Path

NB = Path(__file__).parents[3] / "notebooks" / "09_real_model.ipynb"
DRAWS = re.compile(r"\b\w+_(figure|diagram)\(")


def _cells():
    return [c for c in json.loads(NB.read_text())["cells"] if c["cell_type"] == "code"]


def _has_png(cell):
    return any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))


def test_the_value_side_cell_displays_its_figure():
    cells = [c for c in _cells() if "value_side_figure(" in "".join(c["source"])]
    assert len(cells) == 1, f"expected one cell calling value_side_figure, found {len(cells)}"
    assert _has_png(cells[0]), "the value_side_figure cell has no image/png output: the figure is not displayed"


def test_every_cell_that_draws_a_helper_figure_shows_it():
    missing = ["".join(c["source"]).splitlines()[0] for c in _cells()
               if DRAWS.search("".join(c["source"])) and not _has_png(c)]
    assert not missing, f"cells that draw a figure but show no image: {missing}"
