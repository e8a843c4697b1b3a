"""Build the book as a static website: ``python scripts/build_site.py [--out site]``.

The engine is nbconvert (its "lab" HTML template, extended in
``site_src/templates/qkv`` so that no page asks a CDN for anything). Pages are
built from the committed, executed notebooks; nothing is re-executed.

What happens to each notebook (on a copy, the committed file is never changed):

- the saved widget state is dropped, and every widget output that also carries
  a self-contained ``text/html`` fragment loses its widget view, so nbconvert
  shows the fragment: the interactive figure's own renderer with its data
  embedded, which runs in the page without a kernel;
- a widget output without such a fragment keeps its static ``image/png`` (or a
  sentence saying the figure needs the notebook);
- a navigation bar (index, previous, next) is added at the top and bottom;
- a link to a file of the project (``../qkv_viz/.../solutions.py``, ``../README.md``) points at the
  copy of that file the site ships under ``source/``;
- every matplotlib picture gets alt text (figure_alt): its figure number, chapter and section,
  and what the code says it draws (the cell's ``alt`` metadata if it has one, else the titles
  and axis labels in the code and the first sentence of the book's plotting function it calls).

Each page is built to pass axe-core's WCAG 2.1 A/AA rules (tests/test_site.py): lang and a title,
a skip link to the one ``main`` landmark, two named navs, colours of prompts and code that meet
4.5:1 and underlined links (``site_src/site.css``).

Maths is typeset by MathJax 3 (``tex-svg``) copied from the
``sphinx-mathjax-offline`` package into ``site/static/mathjax``; fonts are
DejaVu (from matplotlib) plus a subset of WenQuanYi Micro Hei for the few
Chinese characters the book prints (``site_src/fonts``). Serve the folder with
any static server, e.g. ``python -m http.server -d site``.
"""
from __future__ import annotations

import argparse
import ast
import copy
import html
import re
import shutil
import sys
import time
from importlib import metadata
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "site_src"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
TITLE = "qkv-viz: Query, Key and Value, computed and drawn"
BLURB = ("An interactive visual textbook on how Transformer self-attention works through "
         "Query, Key and Value. Every number is computed on the page; every slider still moves "
         "here, in your browser, without Python.")
CJK_FONT = SRC / "fonts" / "qkv-cjk-subset.woff"
CJK_SOURCE = Path("/usr/share/fonts/truetype/wqy/wqy-microhei.ttc")
NOTEBOOK_LINK = re.compile(r"(?<![/\w])(\d\d_\w+)\.ipynb")
# A Markdown link from a chapter to a file of the project outside notebooks/ (a solutions.py, the
# README): the site ships a copy of that file under source/, and the link points at the copy.
REPO_LINK = re.compile(r"\]\(\.\./([\w./-]+)\)")
SOURCE_DIR = "source"
NEEDS_NOTEBOOK = ("<p class='qkv-needs-notebook'><em>This interactive figure needs the notebook "
                  "(run the chapter in JupyterLab to use it).</em></p>")


# ------------------------------------------------------------------ notebooks -> pages
def chapter_title(nb) -> str:
    """The first Markdown heading of the notebook, without the '#'."""
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return "Untitled"


def chapter_line(nb) -> str:
    """One line about the chapter (Markdown): its '**Goal:**' paragraph, else its first one;
    a bulleted goal becomes one sentence."""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for para in re.split(r"\n\s*\n", cell.source):
            para = para.strip()
            if para and not para.startswith("#"):
                para = re.sub(r"^\*\*Goal:?\*\*:?\s*", "", para)
                items = [line.strip()[2:].strip() for line in para.splitlines() if line.strip().startswith("- ")]
                if items:
                    para = "; ".join(i.rstrip(";.") for i in items) + "."
                return para.replace("\n", " ")
    return ""


def markdown_inline(text: str) -> str:
    """Markdown of one line as HTML (nbconvert's renderer; $maths$ is left for MathJax)."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    out = markdown2html_mistune(text).strip()
    return out[3:-4] if out.startswith("<p>") and out.endswith("</p>") else out


TITLE_CALLS = {"set_title", "suptitle", "title"}  # a call whose first argument names a plot
LABEL_CALLS = {"set_xlabel": "x", "set_ylabel": "y", "xlabel": "x", "ylabel": "y"}


def parse_cell(source: str) -> ast.Module | None:
    """A code cell's Python (IPython's % and ! lines left out), None if it does not parse."""
    try:
        return ast.parse("\n".join(line for line in source.splitlines()
                                   if not line.lstrip().startswith(("%", "!"))))
    except SyntaxError:
        return None


def calls_in_order(tree: ast.Module) -> list[ast.Call]:
    return sorted((n for n in ast.walk(tree) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset))


def _strings(node) -> list[str]:
    """The text of a string literal (an f-string keeps its literal parts, an ellipsis for each field),
    or of a list/tuple of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "\u2026" for v in node.values)]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [t for elt in node.elts for t in _strings(elt)]
    return []


def figure_texts(source: str) -> tuple[list[str], list[str]]:
    """The titles (``title=``, ``titles=``, ``set_title``, ``suptitle``) and the axis labels
    (``set_xlabel``, ``set_ylabel``) a code cell gives its figure, in the order written."""
    tree = parse_cell(source)
    if tree is None:
        return [], []
    titles, labels = [], []
    for call in calls_in_order(tree):
        name = getattr(call.func, "attr", getattr(call.func, "id", ""))
        if name in TITLE_CALLS and call.args:
            titles += _strings(call.args[0])
        elif name in LABEL_CALLS and call.args:
            labels += [f"{LABEL_CALLS[name]} axis: {t}" for t in _strings(call.args[0]) if t.strip()]
        for kw in call.keywords:
            if kw.arg in ("title", "titles"):
                titles += _strings(kw.value)
    clean = lambda texts: list(dict.fromkeys(" ".join(t.split()) for t in texts if t.strip()))
    return clean(titles), clean(labels)


def first_comment(source: str) -> str:
    """The cell's first comment line that stands on its own (not after code), without the '#'."""
    for line in source.splitlines():
        if line.lstrip().startswith("#") and not line.lstrip().startswith("#!"):
            text = line.lstrip().lstrip("#").strip()
            if text:
                return text
    return ""


def _module_file(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _function_doc(module: str, name: str, depth: int = 0) -> str | None:
    """The docstring of ``module.name`` read from the source (nothing is imported), following
    one ``from .x import name`` re-export; None if it is not a plotting function (no ``ax`` /
    ``axes`` parameter, not in a figures/plots module, 'plot' or 'figure' not in its name)."""
    path = _module_file(module)
    if path is None or depth > 1:
        return None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            params = {a.arg for a in node.args.args + node.args.kwonlyargs}
            plotting = (params & {"ax", "axes"} or path.stem in ("figures", "plots")
                        or "plot" in name or "figure" in name)
            return (ast.get_docstring(node) or "") if plotting else None
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            source = node.module or ""
            if node.level:
                parent = module.split(".")[: len(module.split(".")) - node.level + (path.stem == "__init__")]
                source = ".".join(parent + ([source] if source else []))
            real = next(a.name for a in node.names if (a.asname or a.name) == name)
            return _function_doc(source, real, depth + 1)
    return None


def notebook_imports(nb) -> dict[str, str]:
    """Names the notebook imports from qkv_viz: local name -> dotted path (module.attr)."""
    names = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tree = parse_cell(cell.source)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("qkv_viz"):
                names.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
            elif isinstance(node, ast.Import):
                names.update({a.asname or a.name: a.name for a in node.names if a.name.startswith("qkv_viz")})
    return names


def plotting_docs(source: str, imports: dict[str, str]) -> list[str]:
    """First sentences of the docstrings of the book's plotting functions the cell calls
    (``figures.variance_figure(...)``, ``head_grid(...)``), in the order called."""
    tree = parse_cell(source)
    if tree is None:
        return []
    docs = []
    for call in calls_in_order(tree):
        func = call.func
        if isinstance(func, ast.Name) and func.id in imports:
            dotted = imports[func.id]
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in imports:
            dotted = f"{imports[func.value.id]}.{func.attr}"
        else:
            continue
        module, _, name = dotted.rpartition(".")
        doc = _function_doc(module, name)
        if doc:
            para = " ".join(doc.split("\n\n")[0].split())
            para = re.sub(r"``([^`]*)``", r"\1", para)
            sentences = re.split(r"(?<=[.?!])\s+(?=[A-Z])", para)
            first = " ".join(sentences[:2]) if sentences[0].endswith("?") else sentences[0]
            docs.append(first.rstrip("."))
    return list(dict.fromkeys(docs))


def figure_alt(cell, n: int, chapter: str, section: str, imports: dict | None = None) -> str:
    """Alt text for the n-th picture of a chapter, from what the notebook says about it: the
    code cell's ``alt`` metadata if its author wrote one, else the titles and axis labels the
    code gives the figure and the first sentence of each book plotting function it calls
    (plotting_docs), else the code's first comment; always with the chapter and section."""
    number, _, name = chapter.partition(". ")
    where = (f"Figure {n} of chapter {number}, {name}" if number.isdigit() and name
             else f"Figure {n} of {chapter}") + (f", section \u201c{section}\u201d" if section else "")
    own = cell.get("metadata", {}).get("alt")
    if isinstance(own, list):
        own = own[(n - 1) % len(own)] if own else ""
    titles, labels = figure_texts(cell.source)
    docs = plotting_docs(cell.source, imports or {})[: 1 if titles or labels else 2]
    parts = ([own] if own else
             (["; ".join(titles) + (f" ({'; '.join(labels)})" if labels else "")] if titles else
              ["a plot with " + "; ".join(labels)] if labels else []) + docs)
    if not parts and first_comment(cell.source):
        parts = [first_comment(cell.source)]
    text = " ".join(p if p.endswith(("?", "!")) else p.rstrip(".") + "." for p in parts)
    return f"{where}: {plain_text(text)}" if parts else where


TEX_WORDS = {r"\cdot": "\u00b7", r"\top": "\u1d40", r"\sqrt": "\u221a", r"\neq": "\u2260", r"\times": "\u00d7",
             r"\operatorname": "", r"\mathrm": "", r"\text": "", r"\tau": "tau", r"\theta": "theta"}


def plain_text(text: str) -> str:
    """Markdown, a plot label or a docstring as plain text for an alt attribute: no $, braces
    or backquotes, no bold marks, common TeX commands as characters, other backslashes dropped."""
    for tex, char in TEX_WORDS.items():
        text = re.sub(re.escape(tex) + r"(?![A-Za-z])", char, text)
    text = re.sub(r"\*\*|[`${}]", "", text)
    return " ".join(re.sub(r"\\(?=[A-Za-z])", "", text).split())


def plain_heading(line: str) -> str:
    """A Markdown heading as plain text (plain_text, without its '#')."""
    return plain_text(line.lstrip("#").strip())


def repo_links(nb) -> list[str]:
    """The project files (paths from the repository's root) the notebook's Markdown links to."""
    return sorted({m.group(1) for cell in nb.cells if cell.cell_type == "markdown"
                   for m in REPO_LINK.finditer(cell.source)})


def static_copy(nb):
    """The notebook as the site shows it: no widget state; widget views replaced by their
    fallbacks; links to project files pointed at the site's copies (repo_links); every
    picture given alt text (figure_alt)."""
    nb = copy.deepcopy(nb)
    nb.metadata.pop("widgets", None)
    chapter = chapter_title(nb)
    section, pictures, imports = "", 0, notebook_imports(nb)
    kept = dropped = 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":  # links between chapters point at pages, not notebooks
            cell.source = _html_links(cell.source)
            cell.source = REPO_LINK.sub(rf"]({SOURCE_DIR}/\1)", cell.source)
            headings = [line for line in cell.source.splitlines() if re.match(r"#{2,6} ", line)]
            section = plain_heading(headings[-1]) if headings else section
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                del data[WIDGET_VIEW]
                if "text/html" in data:
                    kept += 1
                else:
                    dropped += 1
                    if "image/png" not in data:
                        data["text/html"] = NEEDS_NOTEBOOK
                data.pop("text/plain", None)  # never show 'VBox(children=(...' on a web page
            if "image/png" in data and "text/html" not in data:
                pictures += 1
                out.setdefault("metadata", {})["qkv_alt"] = figure_alt(cell, pictures, chapter, section, imports)
    return nb, kept, dropped


def nav_html(pages: list[dict], i: int, where: str = "top") -> str:
    """The previous / contents / next bar; ``where`` ("top" or "bottom") names the landmark, so a
    screen reader's list of landmarks tells the two bars apart."""
    prev_link = (f"<a rel='prev' class='qkv-prev' href='{pages[i - 1]['file']}'>&larr; "
                 f"{html.escape(pages[i - 1]['title'])}</a>" if i > 0 else "<span></span>")
    next_link = (f"<a rel='next' class='qkv-next' href='{pages[i + 1]['file']}'>"
                 f"{html.escape(pages[i + 1]['title'])} &rarr;</a>" if i + 1 < len(pages) else "<span></span>")
    label = "Chapters" if where == "top" else "Chapters, end of page"
    return (f"<nav class='qkv-nav' aria-label='{label}'>{prev_link}<a class='qkv-home' "
            f"href='index.html'>Contents</a>{next_link}</nav>")


def _html_links(text: str) -> str:
    """``text`` with every link to a chapter notebook pointed at its page of the site."""
    return NOTEBOOK_LINK.sub(r"\1.html", text)


def index_html(pages: list[dict]) -> str:
    items = "\n".join(
        f"<li><a href='{p['file']}'>{html.escape(p['title'])}</a><br>"
        f"<span class='qkv-line'>{markdown_inline(_html_links(p['line']))}</span></li>" for p in pages)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(TITLE)}</title>
<link rel="stylesheet" href="static/site.css"><link rel="icon" href="data:,">
<script>window.MathJax = {{tex: {{inlineMath: [['$', '$']]}}, svg: {{fontCache: 'global'}}}};</script>
<script defer src="static/mathjax/tex-svg.js"></script></head>
<body><main id="main" class="qkv-index">
<h1>qkv-viz</h1>
<p><strong>Query, Key and Value, computed and drawn</strong></p>
<p>{html.escape(BLURB)}</p>
<nav aria-label="Chapters">
<ol start="0">
{items}
</ol>
</nav>
<p>Every page is a chapter notebook, executed. To run the code yourself, clone the
repository and run <code>make lab</code>.</p>
</main></body></html>
"""


# ------------------------------------------------------------------ static files
def mathjax_dir() -> Path:
    dist = metadata.distribution("sphinx-mathjax-offline")
    path = Path(dist.locate_file("sphinx-mathjax-offline/static/mathjax"))
    if not (path / "tex-svg.js").is_file():
        raise SystemExit(f"MathJax not found at {path}: install the 'site' extra (make site does)")
    return path


def copy_static(out: Path) -> None:
    static = out / "static"
    static.mkdir(parents=True, exist_ok=True)
    mj, dest = mathjax_dir(), static / "mathjax"  # build() starts from an empty folder
    dest.mkdir()
    shutil.copy2(mj / "tex-svg.js", dest / "tex-svg.js")
    # extensions that tex-svg's autoload may ask for (\boldsymbol, \textcolor, ...)
    shutil.copytree(mj / "input" / "tex" / "extensions", dest / "input" / "tex" / "extensions")
    fonts = static / "fonts"
    fonts.mkdir(exist_ok=True)
    import matplotlib
    ttf = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    for name in ("DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSansMono.ttf"):
        shutil.copy2(ttf / name, fonts / name)
    shutil.copy2(CJK_FONT, fonts / CJK_FONT.name)
    css = (SRC / "site.css").read_text() + FONT_CSS
    (static / "site.css").write_text(css)


FONT_CSS = """
/* Fonts shipped with the site (no font server). */
@font-face { font-family: "QKV Sans"; src: url("fonts/DejaVuSans.ttf"); }
@font-face { font-family: "QKV Sans"; font-weight: bold; src: url("fonts/DejaVuSans-Bold.ttf"); }
@font-face { font-family: "QKV Sans"; font-style: italic; src: url("fonts/DejaVuSans-Oblique.ttf"); }
@font-face { font-family: "QKV Mono"; src: url("fonts/DejaVuSansMono.ttf"); }
@font-face { font-family: "QKV CJK"; src: url("fonts/qkv-cjk-subset.woff"); }
body, .jp-RenderedHTMLCommon, .qkv-index { font-family: "QKV Sans", "QKV CJK", sans-serif; }
code, pre, .jp-InputArea-editor, .jp-OutputArea-output pre { font-family: "QKV Mono", "QKV CJK", monospace; }
:root { --jp-content-font-family: "QKV Sans", "QKV CJK", sans-serif; --jp-ui-font-family: "QKV Sans", "QKV CJK", sans-serif;
        --jp-code-font-family: "QKV Mono", "QKV CJK", monospace; }
"""


def cjk_characters(text: str) -> str:
    return "".join(sorted({c for c in text if ord(c) > 0x2E7F}))


def refresh_cjk_font(notebooks: list[Path]) -> None:
    """Subset the system's WenQuanYi Micro Hei to the CJK characters the book prints."""
    from fontTools import subset
    from fontTools.ttLib import TTCollection

    chars = cjk_characters("".join(p.read_text(encoding="utf-8") for p in notebooks))
    if not CJK_SOURCE.is_file():
        raise SystemExit(f"{CJK_SOURCE} missing: apt-get install fonts-wqy-microhei")
    font = TTCollection(str(CJK_SOURCE)).fonts[0]
    sub = subset.Subsetter(subset.Options(flavor="woff", layout_features=["*"], name_IDs=["*"]))
    sub.populate(text=chars)
    sub.subset(font)
    CJK_FONT.parent.mkdir(parents=True, exist_ok=True)
    font.flavor = "woff"
    font.save(str(CJK_FONT))
    print(f"wrote {CJK_FONT.relative_to(ROOT)} with {len(chars)} characters: {chars}")


# ------------------------------------------------------------------ build
def build(out: Path, notebooks: list[Path]) -> dict:
    from nbconvert import HTMLExporter

    start = time.perf_counter()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    copy_static(out)
    books = [nbformat.read(p, as_version=4) for p in notebooks]
    pages = [dict(file=p.stem + ".html", title=chapter_title(nb), line=chapter_line(nb))
             for p, nb in zip(notebooks, books)]
    exporter = HTMLExporter(template_name="qkv", extra_template_basedirs=[str(SRC / "templates")])
    live = fallback = 0
    for i, (page, nb) in enumerate(zip(pages, books)):
        site_nb, kept, dropped = static_copy(nb)
        for rel in repo_links(nb):
            if not (ROOT / rel).is_file():
                raise ValueError(f"{page['file'][:-5]}.ipynb links to ../{rel}, which is not a file of the project")
            (out / SOURCE_DIR / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, out / SOURCE_DIR / rel)
        live, fallback = live + kept, fallback + dropped
        body, _ = exporter.from_notebook_node(
            site_nb, resources={"qkv_nav_top": nav_html(pages, i, "top"),
                                "qkv_nav_bottom": nav_html(pages, i, "bottom")})
        body = body.replace("<title>Notebook</title>",
                            f"<title>{html.escape(page['title'])} - qkv-viz</title>")
        (out / page["file"]).write_text(body, encoding="utf-8")
    (out / "index.html").write_text(index_html(pages), encoding="utf-8")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return dict(pages=len(pages) + 1, bytes=size, build_s=time.perf_counter() - start,
                live_figures=live, static_figures=fallback)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "site")
    parser.add_argument("--refresh-cjk-font", action="store_true",
                        help="re-subset the Chinese font to the characters the notebooks print")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    notebooks = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.refresh_cjk_font:
        refresh_cjk_font(notebooks)
    info = build(args.out, notebooks)
    print(f"site: {info['pages']} pages, {info['bytes'] / 1e6:.1f} MB, {info['live_figures']} live "
          f"figures, {info['static_figures']} static, in {info['build_s']:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
