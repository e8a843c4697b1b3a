"""benchmarks/bench_book.py times the book with scripts/run_notebooks.py's own ``run``: it must
execute every notebook and, for the benchmark, leave the files as they are."""
import importlib.util
import pathlib

import nbformat

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _load(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _notebook(tmp_path, marker):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran'); print('hello')")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "00_tiny.ipynb"
    nbformat.write(nb, path)
    return path


def test_run_without_writing_executes_and_leaves_the_file(tmp_path):
    bench = _load(ROOT / "benchmarks" / "bench_book.py", "bench_book")
    runner = bench.load_runner()
    marker = tmp_path / "marker.txt"
    path = _notebook(tmp_path, marker)
    before = path.read_bytes()
    seconds = runner.run(str(path), write=False)
    assert marker.read_text() == "ran" and seconds > 0
    assert path.read_bytes() == before
    runner.run(str(path))  # make notebooks: the outputs are saved
    saved = nbformat.read(path, as_version=4)
    assert saved.cells[0].outputs[0]["text"] == "hello\n"


def test_bench_book_prints_one_line_per_chapter_and_the_total(tmp_path, capsys):
    bench = _load(ROOT / "benchmarks" / "bench_book.py", "bench_book")
    path = _notebook(tmp_path, tmp_path / "marker.txt")
    assert bench.main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("BENCH book_chapter chapter=00 seconds=")
    assert lines[1].startswith("BENCH book seconds=") and "notebooks=1" in lines[1] and "goal_s=45" in lines[1]


def test_two_at_a_time_runs_every_notebook_in_its_own_kernel(tmp_path):
    runner = _load(ROOT / "scripts" / "run_notebooks.py", "run_notebooks")
    paths, markers = [], []
    for name in ("00_a", "01_b", "02_c"):
        folder = tmp_path / name
        folder.mkdir()
        markers.append(folder / "marker.txt")
        paths.append(str(_notebook(folder, markers[-1])))
    seconds, wall = runner.run_all(paths, jobs=2, write=True, report=lambda line: None)
    assert list(seconds) == paths and all(s > 0 for s in seconds.values()) and wall > 0
    assert all(m.read_text() == "ran" for m in markers)
    assert all(nbformat.read(p, as_version=4).cells[0].outputs[0]["text"] == "hello\n" for p in paths)


def test_a_failing_notebook_is_reported_with_its_error(tmp_path):
    runner = _load(ROOT / "scripts" / "run_notebooks.py", "run_notebooks")
    good = _notebook(tmp_path, tmp_path / "marker.txt")
    bad = tmp_path / "01_bad.ipynb"
    nb = nbformat.read(good, as_version=4)
    nb.cells[0].source = "raise ValueError('d_k must be positive')"
    nbformat.write(nb, bad)
    import pytest
    with pytest.raises(RuntimeError, match="d_k must be positive"):
        runner.run_all([str(good), str(bad)], jobs=2, write=False, report=lambda line: None)


def test_figures_are_kept_when_a_non_inline_backend_is_exported(tmp_path, monkeypatch):
    """MPLBACKEND=Agg (exported for pytest) must not execute the chapters without figures."""
    runner = _load(ROOT / "scripts" / "run_notebooks.py", "run_notebooks")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0]);")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "00_figure.ipynb"
    nbformat.write(nb, path)
    runner.run_all([str(path)], jobs=1, write=True, report=lambda line: None)
    outputs = nbformat.read(path, as_version=4).cells[0].outputs
    assert any("image/png" in o.get("data", {}) for o in outputs), outputs


def test_the_longest_notebooks_start_first(tmp_path, monkeypatch):
    """With two at a time, the notebook that took longest last time starts first (last_seconds reads
    the cell times nbclient recorded), so no long chapter is left to run alone at the end."""
    runner = _load(ROOT / "scripts" / "run_notebooks.py", "run_notebooks")
    paths = []
    for name, took in (("00_short", 0.5), ("01_long", 9.0), ("02_mid", 3.0)):
        folder = tmp_path / name
        folder.mkdir()
        path = _notebook(folder, folder / "marker.txt")
        nb = nbformat.read(path, as_version=4)
        nb.cells[0].metadata["execution"] = {"iopub.execute_input": "2026-12-01T10:00:00.000000Z",
                                             "shell.execute_reply": f"2026-12-01T10:00:{took:09.6f}Z"}
        nbformat.write(nb, path)
        paths.append(str(path))
    assert [runner.last_seconds(p) for p in paths] == [0.5, 9.0, 3.0]
    started = []
    monkeypatch.setattr(runner, "run", lambda path, write=True: started.append(path) or 1.0)
    seconds, _ = runner.run_all(paths, jobs=2, write=False, report=lambda line: None)
    assert set(started[:2]) == {paths[1], paths[2]} and started[2] == paths[0]   # the shortest waits
    assert list(seconds) == paths                                   # reported in the order given
