"""Chapter 6's kernel stays torch-free: torch runs only in its ``%%torch`` cells (a process per cell).

The imports of every ordinary code cell of the notebook, and every module of the chapter's
package, are run in a fresh interpreter that must not end up holding torch.
"""
from __future__ import annotations

import ast
import pathlib
import pkgutil
import subprocess
import sys

import nbformat

import qkv_viz.chapters.ch06_multi_head as chapter

NOTEBOOK = pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "06_multi_head.ipynb"


def kernel_imports(nb) -> list[str]:
    """The import statements of the code cells that run in the kernel (``%%torch`` cells excluded)."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or cell.source.lstrip().startswith("%%"):
            continue
        code = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith("%"))
        found += [ast.unparse(node) for node in ast.walk(ast.parse(code))
                  if isinstance(node, (ast.Import, ast.ImportFrom))]
    return found


def modules_loaded_by(statements: list[str]) -> set[str]:
    code = "\n".join(statements + ["import sys", "print(' '.join(sorted(sys.modules)))"])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_notebook_has_torch_cells_and_loads_their_magic():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    torch_cells = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%torch")]
    assert len(torch_cells) >= 5, "the chapter checks its torch claims in %%torch cells"
    assert all("import torch" in c.source for c in torch_cells), "each %%torch cell imports torch itself"
    assert any("%load_ext qkv_viz.bridges.torch_cell" in c.source for c in nb.cells if c.cell_type == "code")


def test_the_kernel_cells_and_the_chapter_package_load_no_torch():
    statements = kernel_imports(nbformat.read(NOTEBOOK, as_version=4))
    assert any("ch06_multi_head" in s for s in statements)  # the probe sees the chapter's own imports
    statements += [f"import {m.name}" for m in pkgutil.iter_modules(chapter.__path__, chapter.__name__ + ".")]
    loaded = modules_loaded_by(statements)
    assert "qkv_viz.chapters.ch06_multi_head.real_heads" in loaded
    assert "torch" not in loaded, "a kernel cell or a ch06 module imports torch"


def test_the_probe_sees_torch_when_a_kernel_cell_imports_it():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("%%torch\nimport numpy"),
                                         nbformat.v4.new_code_cell("import torch  # in the kernel")])
    statements = kernel_imports(nb)
    assert statements == ["import torch"]
    assert "torch" in modules_loaded_by(statements)
