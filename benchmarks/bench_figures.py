"""The book's figures as a reader sees them: run every notebook, inspect each figure it displays.

    python benchmarks/bench_figures.py                        # all notebooks/*.ipynb
    python benchmarks/bench_figures.py notebooks/06_*.ipynb   # some
    python benchmarks/bench_figures.py --offenders /tmp/figures_offenders.txt

Prints one line (the issue's keys first, extra keys after):

BENCH figures notebooks=N figures=N heatmaps=N heatmaps_unlabelled=N smallest_text_pt=F
      widest_px=N figures_too_wide=N heatmaps_no_axis_titles=N smallest_at=NB:cell cell_errors=N
      seconds=F

and, on stderr (and in ``--offenders``), every figure that breaks a rule, by notebook and cell.

How: each notebook is executed in memory (nbclient; the committed file is never
written) with an extra first cell that calls :func:`install_hook`. The hook wraps
``FigureCanvasBase.print_figure``, which every displayed matplotlib figure goes
through (the inline backend's ``display(fig)``, ``plt.show()``, a figure drawn into
an ``Output`` or ``Image`` widget), and calls :func:`inspect_figure` on it.

Definitions (``inspect_figure``):
- a **heatmap** is a visible axes (not a colour bar) holding an ``AxesImage`` or
  ``QuadMesh`` of a 2-D array (RGB images are pictures, not heatmaps);
- it is **labelled** when its image has a colour bar, or the figure has a colour bar
  with the same colour map and range (a shared bar), or numbers are written in at
  least half of its cells (text artists inside the axes);
- **text size** is every text the renderer actually draws (visible, non-empty: titles,
  tick labels, axis labels, legends, annotations, colour-bar ticks), in points at the
  DISPLAYED size: ``pt * dpi / style.DPI * min(1, style.COLUMN_PX / width_px)``, where
  ``width_px`` is the width of the PNG the notebook shows (bbox "tight" like the inline
  backend): a figure wider than the column is shrunk by the browser, and its text with it;
- extra: ``heatmaps_no_axis_titles`` counts heatmaps in figures where no heatmap axes has an
  x or y title (nor the figure a supxlabel/supylabel): the reader cannot tell queries from keys.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import pathlib
import struct
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from qkv_viz.viz import style  # noqa: E402  (light: imports no matplotlib)

_busy = False  # True while inspect_figure renders (its own print_figure must not be inspected)


# -- inspecting one figure ---------------------------------------------------------
@contextlib.contextmanager
def _recording_text():
    """Record (size_pt, string) of every text the Agg renderer draws inside the block."""
    from matplotlib.backends.backend_agg import RendererAgg

    drawn, original = [], RendererAgg.draw_text

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if s and str(s).strip() and gc.get_alpha() != 0:
            drawn.append((float(prop.get_size_in_points()), str(s)))
        return original(self, gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    RendererAgg.draw_text = draw_text
    try:
        yield drawn
    finally:
        RendererAgg.draw_text = original


def _png_size(data: bytes) -> tuple[int, int]:
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    return struct.unpack(">II", data[16:24])


def _colorbars(fig) -> list:
    return [ax._colorbar for ax in fig.axes if hasattr(ax, "_colorbar")]


def _has_shared_bar(mappable, bars) -> bool:
    for cb in bars:
        same_map = cb.cmap.name == mappable.get_cmap().name
        same_range = (math.isclose(cb.norm.vmin, mappable.norm.vmin, abs_tol=1e-9)
                      and math.isclose(cb.norm.vmax, mappable.norm.vmax, abs_tol=1e-9))
        if same_map and same_range:
            return True
    return False


def _cell_texts(ax) -> int:
    """Visible, non-empty texts whose anchor lies inside the axes (numbers written in cells)."""
    box = ax.get_window_extent()
    n = 0
    for t in ax.texts:
        if t.get_visible() and t.get_text().strip():
            x, y = t.get_transform().transform(t.get_position())
            n += box.x0 <= x <= box.x1 and box.y0 <= y <= box.y1
    return n


def _heatmaps(fig) -> list[dict]:
    """Every heatmap of ``fig``: {"title", "cells", "labelled"} (the figure must have been drawn)."""
    import numpy as np
    from matplotlib.collections import QuadMesh

    bars = _colorbars(fig)
    found = []
    for ax in fig.axes:
        if not ax.get_visible() or hasattr(ax, "_colorbar"):
            continue
        mappables = list(ax.images) + [c for c in ax.collections if isinstance(c, QuadMesh)]
        for m in mappables:
            arr = m.get_array()
            if not m.get_visible() or arr is None or np.ndim(arr) != 2 or np.size(arr) < 2:
                continue
            labelled = (getattr(m, "colorbar", None) is not None or _has_shared_bar(m, bars)
                        or _cell_texts(ax) >= 0.5 * np.size(arr))
            title = ax.get_title() or fig.get_suptitle() or f"axes {fig.axes.index(ax)}"
            named = bool(ax.get_xlabel().strip() or ax.get_ylabel().strip())
            found.append({"title": title, "cells": int(np.size(arr)), "labelled": bool(labelled),
                          "named": named})
    if any(h["named"] for h in found) or _sup_labels(fig):  # a grid names its axes once
        for h in found:
            h["named"] = True
    return found


def _sup_labels(fig) -> bool:
    return any(t is not None and t.get_text().strip()
               for t in (getattr(fig, "_supxlabel", None), getattr(fig, "_supylabel", None)))


def inspect_figure(fig, dpi=None, bbox_inches="tight") -> dict:
    """Render ``fig`` as a notebook shows it and measure it.

    Returns {"width_px", "height_px", "scale", "smallest_pt", "smallest_text",
    "small_texts" [(pt, text), ...] under ``style.MIN_FONT_PT``, "heatmaps",
    "unlabelled" [titles], "unnamed" [titles of heatmaps in a figure where no heatmap has an
    axis title]}; sizes are at the displayed size (see the module doc).
    """
    global _busy
    dpi = float(dpi or fig.dpi)
    buf = io.BytesIO()
    _busy = True
    try:
        with _recording_text() as drawn:
            fig.canvas.print_figure(buf, format="png", dpi=dpi, bbox_inches=bbox_inches,
                                    facecolor=fig.get_facecolor())
    finally:
        _busy = False
    width, height = _png_size(buf.getvalue())
    scale = dpi / style.DPI * style.displayed_scale(width)
    sizes = sorted({(round(pt * scale, 2), text) for pt, text in drawn})
    heat = _heatmaps(fig)
    smallest = sizes[0] if sizes else (math.inf, "")
    return {"width_px": width, "height_px": height, "scale": round(scale, 3),
            "smallest_pt": smallest[0], "smallest_text": smallest[1][:40],
            "small_texts": [(pt, t[:40]) for pt, t in sizes if pt < style.MIN_FONT_PT][:8],
            "heatmaps": len(heat), "unlabelled": [h["title"] for h in heat if not h["labelled"]],
            "unnamed": [h["title"] for h in heat if not h["named"]]}


# -- the hook, inside the notebook's kernel ----------------------------------------------
def install_hook(records_path: str) -> None:
    """Inspect every figure the kernel displays; append one JSON line per display to ``records_path``."""
    import matplotlib
    from IPython import get_ipython
    from matplotlib.backend_bases import FigureCanvasBase

    state = {"cell": -1, "head": ""}

    def pre_run_cell(info):
        state["cell"] += 1  # the n-th executed code cell after this one (nbclient skips empty cells)
        lines = (info.raw_cell or "").strip().splitlines()
        state["head"] = lines[0][:70] if lines else ""

    get_ipython().events.register("pre_run_cell", pre_run_cell)
    original = FigureCanvasBase.print_figure
    counter = [0]

    def print_figure(self, filename, *args, **kwargs):
        if not _busy and not isinstance(filename, (str, os.PathLike)):  # displayed, not saved to disk
            fig = self.figure
            if not hasattr(fig, "_bench_id"):
                counter[0] += 1
                fig._bench_id = counter[0]
            dpi = kwargs.get("dpi")  # a number, "figure" or None (both: the figure's dpi)
            bbox = kwargs.get("bbox_inches", matplotlib.rcParams["savefig.bbox"])
            try:
                record = inspect_figure(fig, dpi=dpi if isinstance(dpi, (int, float)) else None,
                                        bbox_inches=bbox)
            except Exception as exc:  # a measurement must never break the chapter
                record = {"error": repr(exc)}
            record.update(figure=fig._bench_id, cell=state["cell"], head=state["head"])
            with open(records_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
        return original(self, filename, *args, **kwargs)

    FigureCanvasBase.print_figure = print_figure


# -- running the notebooks ---------------------------------------------------------
HOOK_CELL = """\
import sys as _bench_sys
_bench_sys.path.insert(0, {bench_dir!r})
import bench_figures as _bench_figures
_bench_sys.path.remove({bench_dir!r})
_bench_figures.install_hook({records!r})
del _bench_sys, _bench_figures"""


def run_notebook(path: pathlib.Path, records: pathlib.Path, keep=None) -> tuple[list, list]:
    """Execute ``path`` in memory with the hook, every cell even after an error.

    Returns (the indices of its non-empty code cells, ["cell i: error", ...]). ``keep``: a
    directory to write the executed copy to (the hook cell removed), to look at its figures.
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    code_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.source.strip()]
    hook = HOOK_CELL.format(bench_dir=str(pathlib.Path(__file__).resolve().parent), records=str(records))
    nb.cells.insert(0, nbformat.v4.new_code_cell(hook))
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except Exception as exc:  # the kernel died or timed out: measure what was displayed before
        return code_cells, [f"kernel: {type(exc).__name__}: {str(exc)[:160]}"]
    nb.cells.pop(0)
    if keep:
        nbformat.write(nb, pathlib.Path(keep) / path.name)
    errors = [f"cell {i}: {o.get('ename')}: {str(o.get('evalue'))[:160]}"
              for i, c in enumerate(nb.cells) if c.cell_type == "code"  # (hook cell gone: i is the index)
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    return code_cells, errors


def _last_per_figure(records: pathlib.Path) -> list[dict]:
    """One record per figure: the last time it was displayed (a widget redraws the same figure)."""
    if not records.exists():
        return []
    by_fig = {}
    for line in records.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        by_fig[r["figure"]] = r
    return list(by_fig.values())


def _problems(r: dict) -> list[str]:
    if "error" in r:
        return [f"could not be measured: {r['error']}"]
    out = []
    if r["unlabelled"]:
        names = ", ".join(repr(t) for t in r["unlabelled"][:6])
        out.append(f"{len(r['unlabelled'])} heatmap(s) without colour bar or numbers in the cells: {names}")
    if r.get("unnamed"):
        out.append(f"{len(r['unnamed'])} heatmap(s) whose axes have no titles (which is queries, which keys?)")
    if r["small_texts"]:
        texts = ", ".join(f"{pt:g} pt {t!r}" for pt, t in r["small_texts"][:5])
        out.append(f"text under {style.MIN_FONT_PT:g} pt at displayed size: {texts}")
    if r["width_px"] > style.COLUMN_PX:
        out.append(f"{r['width_px']} px wide > {style.COLUMN_PX} px column: the browser shrinks it "
                   f"x{style.displayed_scale(r['width_px']):.2f}")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", help="default: notebooks/*.ipynb")
    parser.add_argument("--offenders", help="also write the offender list to this file")
    parser.add_argument("--keep", help="write the executed copies here (never over the committed notebooks)")
    args = parser.parse_args(argv)
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    paths = [pathlib.Path(p) for p in args.notebooks] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    if args.keep:
        keep = pathlib.Path(args.keep).resolve()
        if any(p.resolve().parent == keep for p in paths):
            parser.error(f"--keep {args.keep} would overwrite the notebooks themselves")
        keep.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    figures, errors, report = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for n, path in enumerate(paths):
            records = pathlib.Path(tmp) / f"{n}.jsonl"
            code_cells, cell_errors = run_notebook(path.resolve(), records, args.keep)
            name = os.path.relpath(path.resolve(), ROOT)
            errors += cell_errors
            report += [f"{name} {e} (the notebook raised; figures after it may be missing)" for e in cell_errors]
            for r in _last_per_figure(records):
                r["notebook"] = name
                r["cell_index"] = code_cells[r["cell"]] if 0 <= r["cell"] < len(code_cells) else -1
                figures.append(r)
                problems = _problems(r)
                if problems:
                    report.append(f"{name} cell {r['cell_index']} (figure {r['figure']}, {r['head']!r}): "
                                  + "; ".join(problems))
    measured = [r for r in figures if "error" not in r]
    heatmaps = sum(r["heatmaps"] for r in measured)
    unlabelled = sum(len(r["unlabelled"]) for r in measured)
    unnamed = sum(len(r.get("unnamed", [])) for r in measured)
    worst = min(measured, key=lambda r: r["smallest_pt"], default=None)
    smallest = worst["smallest_pt"] if worst else float("nan")
    widest = max((r["width_px"] for r in measured), default=0)
    too_wide = sum(r["width_px"] > style.COLUMN_PX for r in measured)
    where = f"{pathlib.Path(worst['notebook']).stem}:{worst['cell_index']}" if worst else "-"
    print(f"BENCH figures notebooks={len(paths)} figures={len(figures)} heatmaps={heatmaps} "
          f"heatmaps_unlabelled={unlabelled} smallest_text_pt={smallest:.1f} "
          f"widest_px={widest} figures_too_wide={too_wide} heatmaps_no_axis_titles={unnamed} "
          f"smallest_at={where} "
          f"cell_errors={len(errors)} seconds={time.perf_counter() - start:.1f}", flush=True)
    text = "\n".join(report) if report else "no figure breaks a rule"
    print(text, file=sys.stderr)
    if args.offenders:
        header = (f"# bench_figures.py {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: "
                  f"notebook, cell index (0-based, in the .ipynb's cells list), what is wrong\n")
        pathlib.Path(args.offenders).write_text(header + text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
