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



def test_the_rope_papers_bound_holds_and_its_distance_factor_is_the_pages():
    """|q_m . k_n| <= max_i |h_(i+1) - h_i| * sum_j |S_j(d)| (h_(d_k/2) = 0), on random q, k and
    distances; the page's factor (cumsum of e^{i d theta_i}) is the one that bounds."""
    rng = np.random.default_rng(3)
    d_k = 64
    theta = 10000.0 ** (-np.arange(0, d_k, 2) / d_k)
    distances = np.array([0, 1, 7, 50, 300, 511])
    S_j = np.cumsum(np.exp(1j * distances[:, None] * theta[None, :]), axis=1)   # as on the page
    factor = np.abs(S_j).sum(axis=1)                                            # (6,)
    for _ in range(50):
        q, k = rng.normal(size=(2, d_k))
        h = (q[0::2] + 1j * q[1::2]) * np.conj(k[0::2] + 1j * k[1::2])          # (d_k/2,)
        step = np.abs(np.diff(np.append(h, 0))).max()
        dots = np.array([q @ apply_rope(k[None], [d])[0] for d in distances])   # query at 0, key at d
        assert np.all(np.abs(dots) <= step * factor + 1e-9)
    assert factor[0] == pytest.approx(np.arange(1, d_k // 2 + 1).sum())        # |S_j(0)| = j
