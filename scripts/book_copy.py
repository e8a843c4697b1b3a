"""The reader's own copy of the book: ``python scripts/book_copy.py [SRC] [DEST]``.

``make lab`` opens ``book/`` (git-ignored), not the committed ``notebooks/``:
a reader's filled-in exercises then never dirty the repository, never make
``make test`` fail and never collide with ``git pull``.

Each run brings the copy up to date without losing the reader's work:

- a chapter missing from the copy is added;
- a chapter the reader has not changed since it was copied is replaced by the
  new version when the book changed it;
- a chapter the reader changed is kept as it is (never overwritten); the
  message says a newer version exists. To get the fresh version of one
  chapter, delete or rename your copy (``book/04_....ipynb``) and run
  ``make lab`` again.

What was copied is remembered in ``DEST/.qkv-book.json`` (file name -> SHA-256
of the version copied), which is how "changed by the reader" is told apart
from "changed by the book".
"""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

MANIFEST = ".qkv-book.json"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sync(src: Path, dest: Path) -> dict:
    """Bring ``dest`` up to date with the notebooks of ``src``. Returns lists of file names:
    ``added``, ``updated`` (unchanged by the reader, new version copied), ``kept`` (changed by
    the reader while the book has a newer version), ``current`` (nothing to do)."""
    src, dest = Path(src), Path(dest)
    if not src.is_dir():
        raise ValueError(f"src must be a folder of notebooks, got {src}")
    dest.mkdir(parents=True, exist_ok=True)
    manifest_path = dest / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    report = {"added": [], "updated": [], "kept": [], "current": []}
    for nb in sorted(src.glob("*.ipynb")):
        mine = dest / nb.name
        new = digest(nb)
        if not mine.exists():
            shutil.copy2(nb, mine)
            manifest[nb.name] = new
            report["added"].append(nb.name)
            continue
        have = digest(mine)
        if have == new:
            manifest[nb.name] = new
            report["current"].append(nb.name)
        elif manifest.get(nb.name) == have:  # untouched by the reader: take the book's new version
            shutil.copy2(nb, mine)
            manifest[nb.name] = new
            report["updated"].append(nb.name)
        else:  # the reader's work: never overwritten
            report["kept"].append(nb.name)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return report


def trust(dest: Path, names, notary=None) -> list:
    """Mark the book's own notebooks in ``dest`` as trusted (Jupyter's notebook signatures).

    JupyterLab shows an untrusted notebook's live figures as their still PNGs until each cell
    is run again; the chapters as the book ships them (``names``: files equal to ``notebooks/``)
    are signed, so they open with working controls. A reader's own edits are not signed here
    (JupyterLab signs what the reader saves). Returns the names signed.
    """
    import nbformat
    from nbformat.sign import NotebookNotary

    notary = notary or NotebookNotary()
    signed = []
    for name in names:
        nb = nbformat.read(Path(dest) / name, as_version=4)
        if not notary.check_signature(nb):
            notary.sign(nb)
        signed.append(name)
    return signed


def describe(report: dict, dest: Path) -> str:
    lines = []
    if report["added"]:
        lines.append(f"added to {dest}/: {', '.join(report['added'])}")
    if report["updated"]:
        lines.append(f"updated (you had not changed them): {', '.join(report['updated'])}")
    for name in report["kept"]:
        lines.append(f"kept your version of {name}; the book has a newer one "
                     f"(delete or rename {dest}/{name} and run make lab again to get it)")
    return "\n".join(lines) or f"{dest}/ is up to date"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path(__file__).resolve().parents[1]
    src = Path(argv[0]) if argv else root / "notebooks"
    dest = Path(argv[1]) if len(argv) > 1 else root / "book"
    print(describe(sync(src, dest), dest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
