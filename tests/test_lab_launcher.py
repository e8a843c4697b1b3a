"""`make lab`'s launcher: loopback only, token auth on, offline, --allow-root only for root."""
import importlib.util
import json
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("lab", ROOT / "scripts" / "lab.py")
lab = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lab)


def _opt(argv, name):
    return [a.split("=", 1)[1] for a in argv if a.startswith(f"--{name}=")]


def test_listens_on_loopback_with_token_auth():
    argv = lab.lab_argv("/tmp/nb")
    assert _opt(argv, "ServerApp.ip") == ["127.0.0.1"]
    assert not any("token=" in a and a.endswith("token=") for a in argv)
    assert _opt(lab.lab_argv("/tmp/nb", token="abc"), "IdentityProvider.token") == ["abc"]
    with pytest.raises(ValueError, match="token"):
        lab.lab_argv("/tmp/nb", token="")


def test_news_update_check_and_extension_search_off():
    argv = lab.lab_argv("/tmp/nb")
    assert _opt(argv, "LabApp.news_url") == ["None"]
    assert _opt(argv, "LabApp.extension_manager") == ["readonly"]
    settings = json.loads((ROOT / "jupyter" / "overrides.json").read_text())
    notif = settings["@jupyterlab/apputils-extension:notification"]
    assert notif["fetchNews"] == "false" and notif["checkForUpdates"] is False


@pytest.mark.parametrize("uid, expected", [(0, True), (1000, False)])
def test_allow_root_only_for_root(monkeypatch, uid, expected):
    monkeypatch.setattr(lab.os, "geteuid", lambda: uid)
    assert ("--allow-root" in lab.lab_argv("/tmp/nb")) is expected


# ---------------------------------------------------------------- the reader's working copy
import book_copy  # noqa: E402  (scripts/ is on pytest's pythonpath)


def _chapter(path, text):
    path.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": text}]}))


def test_the_working_copy_keeps_the_readers_edit_and_adds_new_chapters(tmp_path):
    book, mine = tmp_path / "notebooks", tmp_path / "book"
    book.mkdir()
    _chapter(book / "01_a.ipynb", "one")
    _chapter(book / "02_b.ipynb", "two")
    assert book_copy.sync(book, mine)["added"] == ["01_a.ipynb", "02_b.ipynb"]
    _chapter(mine / "01_a.ipynb", "one, with my answer")          # the reader fills in an exercise
    _chapter(book / "01_a.ipynb", "one, improved by the authors")  # the book changes both chapters
    _chapter(book / "02_b.ipynb", "two, improved")
    _chapter(book / "03_c.ipynb", "three")                         # and adds a chapter
    report = book_copy.sync(book, mine)
    assert report == {"added": ["03_c.ipynb"], "updated": ["02_b.ipynb"], "kept": ["01_a.ipynb"],
                      "current": []}
    assert "with my answer" in (mine / "01_a.ipynb").read_text()
    assert "improved" in (mine / "02_b.ipynb").read_text()
    assert "newer one" in book_copy.describe(report, mine)
    (mine / "01_a.ipynb").unlink()                                  # how to get a fresh chapter
    assert book_copy.sync(book, mine)["added"] == ["01_a.ipynb"]
    assert "improved by the authors" in (mine / "01_a.ipynb").read_text()
    assert book_copy.sync(book, mine)["current"] == ["01_a.ipynb", "02_b.ipynb", "03_c.ipynb"]


def test_make_lab_opens_the_working_copy_not_the_committed_notebooks(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(lab.os, "execv", lambda path, argv: seen.update(argv=argv))
    monkeypatch.setattr(book_copy, "sync", lambda src, dest: seen.update(src=src, dest=dest) or
                        {"added": [], "updated": [], "kept": [], "current": []})
    monkeypatch.setitem(__import__("sys").modules, "book_copy", book_copy)
    lab.main()
    assert seen["dest"].endswith("/book") and seen["src"].endswith("/notebooks")
    assert _opt(seen["argv"], "ServerApp.root_dir") == [seen["dest"]]


def test_the_books_own_chapters_are_trusted_so_their_figures_open_live(tmp_path):
    """JupyterLab renders an untrusted notebook's widget outputs as their still PNGs; the
    chapters as shipped are signed, the reader's changed copy is left to JupyterLab."""
    import nbformat
    from nbformat.sign import NotebookNotary

    book, mine = tmp_path / "notebooks", tmp_path / "book"
    book.mkdir()
    for name in ("01_a.ipynb", "02_b.ipynb"):
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), book / name)
    report = book_copy.sync(book, mine)
    (tmp_path / "jupyter-data").mkdir()
    notary = NotebookNotary(data_dir=str(tmp_path / "jupyter-data"))
    read = lambda name: nbformat.read(mine / name, as_version=4)  # noqa: E731
    assert not notary.check_signature(read("01_a.ipynb"))
    mine_changed = read("02_b.ipynb")
    mine_changed.cells[0].source = "2  # my answer"
    nbformat.write(mine_changed, mine / "02_b.ipynb")
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("3")]), book / "02_b.ipynb")
    report = book_copy.sync(book, mine)
    assert report["kept"] == ["02_b.ipynb"]
    signed = book_copy.trust(mine, report["added"] + report["updated"] + report["current"], notary)
    assert signed == ["01_a.ipynb"]
    assert notary.check_signature(read("01_a.ipynb"))
    assert not notary.check_signature(read("02_b.ipynb"))
