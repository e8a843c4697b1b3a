import importlib.util
import pathlib

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

_BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_figures.py"


@pytest.fixture(scope="session")
def bench():
    """benchmarks/bench_figures.py as a module (its ``inspect_figure`` is the book's figure measure)."""
    spec = importlib.util.spec_from_file_location("bench_figures", _BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")
