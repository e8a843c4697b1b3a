"""The package's layers, kept: core <- bridges, viz <- chapters; no chapter imports another.

The rules (README, "How the package is built"):
- ``qkv_viz.core`` imports only numpy and the standard library (no matplotlib, ipywidgets, torch);
- ``qkv_viz.bridges`` and ``qkv_viz.viz`` import the core, not each other, not a chapter;
- a chapter (``qkv_viz.chapters.chNN_*``) imports core, bridges, viz and ``chapters.feedback``,
  never a sibling chapter.
"""
from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "qkv_viz"
HEAVY = ("matplotlib", "ipywidgets", "torch")

# layer -> the qkv_viz layers it may import (itself included)
ALLOWED = {
    "core": {"core"},
    "bridges": {"core", "bridges"},
    "viz": {"core", "viz"},
    "chapters": {"core", "bridges", "viz", "chapters"},
}


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: pathlib.Path) -> set[str]:
    """Absolute names of the qkv_viz modules that ``path`` imports (relative imports resolved)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            found.add(mod)
            found |= {f"{mod}.{a.name}" for a in node.names}  # "from pkg import module"
    return {m for m in found if m.split(".")[0] == "qkv_viz"}


def violations(paths) -> list[str]:
    """Every import that breaks the layer rules, as 'importer -> imported (why)'."""
    bad = []
    for path in paths:
        me = module_name(path).split(".")
        if len(me) < 2 or me[1] not in ALLOWED:
            continue  # qkv_viz/__init__.py is the package's face: it re-exports the core
        for mod in sorted(imported_modules(path)):
            parts = mod.split(".")
            if len(parts) < 2:
                continue
            layer = parts[1]
            if layer in ALLOWED and layer not in ALLOWED[me[1]]:
                bad.append(f"{module_name(path)} -> {mod} ({me[1]} may not import {layer})")
            mine = me[2] if me[1] == "chapters" and len(me) > 2 else None
            theirs = parts[2] if layer == "chapters" and len(parts) > 2 else None
            if (mine and theirs and mine != theirs and theirs.startswith("ch")
                    and mine.startswith("ch")):
                bad.append(f"{module_name(path)} -> {mod} (a chapter never imports another chapter)")
    return bad


def package_files():
    return sorted(PACKAGE.rglob("*.py"))


def test_every_module_sits_in_a_layer():
    loose = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    assert loose == [], f"modules outside core/, bridges/, viz/, chapters/: {loose}"


def test_imports_follow_the_layers():
    assert violations(package_files()) == []


def test_the_checker_catches_a_sibling_chapter_and_an_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "qkv_viz"
    (fake / "chapters" / "ch02_x").mkdir(parents=True)
    (fake / "core").mkdir()
    sibling = fake / "chapters" / "ch02_x" / "figures.py"
    sibling.write_text("from qkv_viz.chapters.ch01_library import library\n")
    upward = fake / "core" / "maths.py"
    upward.write_text("from ..viz import plots\nimport qkv_viz.chapters.ch04_scaling\n")
    own = fake / "chapters" / "ch02_x" / "widget.py"
    own.write_text("from .figures import x\nfrom qkv_viz.chapters.feedback import Feedback\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    found = violations([sibling, upward, own])
    assert any("ch02_x.figures -> qkv_viz.chapters.ch01_library" in v and "another chapter" in v
               for v in found), found
    assert any("core.maths -> qkv_viz.viz" in v for v in found), found
    assert any("core.maths -> qkv_viz.chapters" in v for v in found), found
    assert not any("widget" in v for v in found), found


@pytest.mark.parametrize("module", ["qkv_viz", "qkv_viz.core"])
def test_the_core_loads_no_plotting_widgets_or_torch(module):
    code = (f"import sys, {module}\n"
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing {module} loaded: {out.stdout.strip()}"


def test_the_heavy_import_check_can_fail():
    code = "import sys, qkv_viz.viz.plots\nprint('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"  # the probe above sees a heavy import when there is one


def test_the_bridges_import_torch_only_when_called():
    """``qkv_viz.bridges`` docstring: torch is imported inside the functions that need it."""
    code = ("import sys, qkv_viz.bridges.torch_mha, qkv_viz.bridges.real_model, qkv_viz.bridges.real_forward\n"
            "print(','.join(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"importing the bridges loaded: {out.stdout.strip()}"
