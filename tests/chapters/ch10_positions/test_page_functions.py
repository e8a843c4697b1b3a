"""The functions chapter 10 writes on the page equal the package's, which the rest of the page uses.

The page's ``sinusoids``, ``rope`` and ``rope_complex`` are read from the notebook's code cells
(only their ``def`` blocks, not the cells around them) and run against
``sinusoidal_positions`` and ``apply_rope`` on widths and lengths the page does not use.
"""
import ast
import json
from pathlib import Path

import numpy as np
import pytest

from qkv_viz.core.positions import apply_rope, sinusoidal_positions

NOTEBOOK = Path(__file__).parents[3] / "notebooks" / "10_order_and_positions.ipynb"


def page_function(name):
    """The page's ``def name(...)``, compiled alone, with numpy as ``np``."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        tree = ast.parse("".join(cell["source"]))
        defs = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]
        if defs:
            namespace = {"np": np}
            exec(compile(ast.Module(body=defs, type_ignores=[]), str(NOTEBOOK), "exec"), namespace)
            return namespace[name]
    raise AssertionError(f"chapter 10 has no `def {name}` in a code cell")


@pytest.mark.parametrize("T, d_model, base", [(3, 4, 10000.0), (50, 384, 10000.0), (7, 10, 500.0)])
def test_the_pages_sinusoids_are_the_packages(T, d_model, base):
    np.testing.assert_allclose(page_function("sinusoids")(T, d_model, base=base),
                               sinusoidal_positions(T, d_model, base=base), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["rope", "rope_complex"])
@pytest.mark.parametrize("T, d_k, base", [(3, 4, 10000.0), (20, 64, 10000.0), (5, 6, 100.0)])
def test_the_pages_rope_is_the_packages(name, T, d_k, base):
    x = np.random.default_rng(T + d_k).normal(size=(T, d_k))
    np.testing.assert_allclose(page_function(name)(x, base=base), apply_rope(x, base=base), rtol=0, atol=1e-12)
