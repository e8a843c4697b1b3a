"""What a ``%%torch`` cell hands back, as a reader editing chapters 6 to 8 would rely on it.

A ``%%torch`` cell runs in its own process: only the names after ``--out`` reach the
notebook. Running the notebook catches a kernel cell that reads a name no cell defined
(NameError), but not the quiet case: a torch cell assigns a name the notebook already
has (without ``--out``), and a later notebook cell reads it, getting the OLD value while
the text reads as if the torch cell had changed it.
"""
from __future__ import annotations

import pathlib

import nbformat
import pytest

from qkv_viz.bridges.torch_cell import names_defined, names_used, out_names

NOTEBOOKS = pathlib.Path(__file__).resolve().parents[2] / "notebooks"
CHAPTERS = ["06_multi_head.ipynb", "07_cross_attention_and_masks.ipynb", "08_common_mistakes.ipynb"]


def _stale_reads(index, code, stale, kernel) -> list[str]:
    """Names the cell reads (and does not set itself) that a torch cell set without ``--out``."""
    found = []
    for name in sorted((set(names_used(code)) - names_defined(code)) & stale.keys()):  # loop variables are set
        kind = "still holds its old value" if name in kernel else "does not exist here"
        found.append(f"cell {index} reads {name!r}, which the %%torch cell {stale[name]} set "
                     f"without --out: in the notebook it {kind}")
    return found


def handoff_problems(nb) -> list[str]:
    """One sentence per cell that reads a name a ``%%torch`` cell set but did not hand back."""
    kernel: set[str] = set()          # names the notebook holds so far
    stale: dict[str, int] = {}        # name -> index of the torch cell that assigned it without --out
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if cell.source.startswith("%%torch"):
            first, _, body = cell.source.partition("\n")
            outs = set(out_names(first[len("%%torch"):]))
            problems += _stale_reads(index, body, stale, kernel)
            for name in names_defined(body) - outs - {"_"}:
                stale[name] = index
            kernel |= outs
            for name in outs:
                stale.pop(name, None)
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith("%"))
        problems += _stale_reads(index, code, stale, kernel)
        mine = names_defined(code)
        kernel |= mine
        for name in mine:
            stale.pop(name, None)
    return problems


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_name_a_notebook_cell_takes_from_a_torch_cell_comes_back_with_out(chapter):
    assert handoff_problems(nbformat.read(NOTEBOOKS / chapter, as_version=4)) == []


def _nb(*sources):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])


def test_the_check_sees_a_name_left_behind_in_the_torch_process():
    nb = _nb("%%torch\nimport torch\nw = torch.ones(2)", "print(w)")
    assert handoff_problems(nb) == ["cell 1 reads 'w', which the %%torch cell 0 set without --out: "
                                    "in the notebook it does not exist here"]


def test_the_check_sees_an_old_value_read_after_a_torch_cell_reassigned_it():
    nb = _nb("x = 1", "%%torch\nx = 2", "print(x + 1)")
    assert len(handoff_problems(nb)) == 1 and "still holds its old value" in handoff_problems(nb)[0]


def test_the_check_sees_a_later_torch_cell_relying_on_an_earlier_ones_name():
    nb = _nb("%%torch\nn_heads = 4", "%%torch\nprint(n_heads)")
    assert handoff_problems(nb) == ["cell 1 reads 'n_heads', which the %%torch cell 0 set without --out: "
                                    "in the notebook it does not exist here"]


def test_the_check_accepts_out_names_and_names_the_notebook_sets_again():
    nb = _nb("%%torch --out w\nimport torch\nw = torch.ones(2)\ni = 3", "print(w)",
             "i = 0\nprint(i)", "print([k for k in range(3)])")
    assert handoff_problems(nb) == []
