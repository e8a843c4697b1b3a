"""Every chapter's code checker accepts its worked solution in every honest form.

Discovered, not listed: each function ``check_*`` in ``qkv_viz/chapters/*/exercises.py``
whose first parameter is ``fn`` is a code checker, and the chapter's ``solutions.py``
holds the right answer under the checker's name without ``check_`` (``check_project``
-> ``project``). A code checker without such a solution fails here.

The solution is wrapped to return its results as float32, as torch tensors (plain,
and requiring grad), as nested lists, and as a function that scrambles its inputs in
place after computing: each must be accepted. The float32 form computes in float64 and
rounds at the end; "float32 throughout" casts the inputs to float32 first, so every
step of the solution runs in float32.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
from pathlib import Path

import numpy as np
import pytest
import torch

CHAPTERS = Path(__file__).resolve().parents[2] / "qkv_viz" / "chapters"


def _discover():
    found = []
    for path in sorted(CHAPTERS.glob("ch*/exercises.py")):
        chapter = path.parent.name
        try:
            exercises = importlib.import_module(f"qkv_viz.chapters.{chapter}.exercises")
        except Exception as exc:  # noqa: BLE001 - a chapter that does not import fails its own case
            found.append(pytest.param(chapter, None, exc, id=f"{chapter}-import"))
            continue
        for name, fn in inspect.getmembers(exercises, inspect.isfunction):
            if not name.startswith("check_") or fn.__module__ != exercises.__name__:
                continue
            params = list(inspect.signature(fn).parameters)
            if params and params[0] == "fn":
                found.append(pytest.param(chapter, name, None, id=f"{chapter}-{name}"))
    return found


CHECKERS = _discover()


def _float32(x):
    if isinstance(x, tuple):
        return tuple(_float32(v) for v in x)
    a = np.asarray(x)
    return a.astype(np.float32) if a.dtype.kind == "f" else x


def _tensor(x, grad=False):
    if isinstance(x, tuple):
        return tuple(_tensor(v, grad) for v in x)
    a = np.asarray(x)
    if a.dtype.kind not in "fiub":  # a string answer ("adjacent") stays a string
        return x
    if grad and a.dtype.kind == "f":  # an output of a graph, as chapter 5's style produces
        return torch.tensor(a, requires_grad=True) * 1.0
    return torch.tensor(a)


def _as_list(x):
    if isinstance(x, tuple):
        return tuple(_as_list(v) for v in x)
    return np.asarray(x).tolist()


def _scramble(x):
    """Change ``x`` in place, whatever it holds (arrays, lists, dataclasses of arrays)."""
    if isinstance(x, np.ndarray) and x.flags.writeable:
        if x.dtype.kind == "f":
            x *= -3.0
            x += 7.0
        elif x.dtype.kind == "b":
            x[...] = ~x
        elif x.dtype.kind in "iu" and x.size:
            x[...] = x[::-1].copy() if x.ndim else x + 1
    elif isinstance(x, list):
        x.reverse()
        for v in x:
            _scramble(v)
    elif isinstance(x, dict):
        for v in x.values():
            _scramble(v)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        for f in dataclasses.fields(x):
            _scramble(getattr(x, f.name))


def _inputs_float32(x):
    """``x`` with its float64 arrays (also inside a dataclass such as MultiHeadParams) in float32."""
    if isinstance(x, np.ndarray) and x.dtype == np.float64:
        return x.astype(np.float32)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return dataclasses.replace(x, **{f.name: _inputs_float32(getattr(x, f.name))
                                         for f in dataclasses.fields(x) if f.init})
    return x


FORMS = {
    "float32": lambda sol: lambda *a: _float32(sol(*a)),
    "float32 throughout": lambda sol: lambda *a: _float32(sol(*(_inputs_float32(v) for v in a))),
    "torch": lambda sol: lambda *a: _tensor(sol(*a)),
    "torch requires_grad": lambda sol: lambda *a: _tensor(sol(*a), grad=True),
    "lists": lambda sol: lambda *a: _as_list(sol(*a)),
}


def _mutating(sol):
    def fn(*args):
        out = sol(*args)
        out = tuple(np.array(v, copy=True) if isinstance(v, np.ndarray) else v for v in out) \
            if isinstance(out, tuple) else (np.array(out, copy=True) if isinstance(out, np.ndarray) else out)
        for a in args:
            _scramble(a)
        return out
    return fn


FORMS["mutates its inputs"] = _mutating


def _run(chapter, checker_name, error, wrap):
    if error is not None:
        pytest.fail(f"qkv_viz.chapters.{chapter}.exercises does not import: {error!r}")
    exercises = importlib.import_module(f"qkv_viz.chapters.{chapter}.exercises")
    solutions = importlib.import_module(f"qkv_viz.chapters.{chapter}.solutions")
    target = checker_name.removeprefix("check_")
    solution = getattr(solutions, target, None)
    assert callable(solution), (f"{chapter}: {checker_name} has no solution `{target}` in solutions.py "
                                f"(name the worked solution after its checker)")
    checker = getattr(exercises, checker_name)
    kwargs = {"seed": 0} if "seed" in inspect.signature(checker).parameters else {}
    return checker(wrap(solution), **kwargs)


@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("chapter, checker_name, error", CHECKERS)
def test_every_code_checker_accepts_its_solution_in_every_form(chapter, checker_name, error, form):
    fb = _run(chapter, checker_name, error, FORMS[form])
    assert fb.correct and not fb.pending, f"{chapter}.{checker_name} refused its solution as {form}: {fb.message}"


def _off(v):
    """A wrong version of one result: floats 3 % off, integers off by one, booleans flipped."""
    a = np.asarray(v)
    if a.dtype.kind in "US":
        return str(v)[::-1] + "?"
    if a.dtype.kind == "b":
        return ~a
    if a.dtype.kind in "iu":
        return a + 1
    return a * 1.03 + 0.01


@pytest.mark.parametrize("chapter, checker_name, error", CHECKERS)
def test_every_code_checker_refuses_a_wrong_answer_without_raising(chapter, checker_name, error):
    def wrong(sol):
        def fn(*args):
            out = sol(*args)
            return tuple(_off(v) for v in out) if isinstance(out, tuple) else _off(out)
        return fn
    fb = _run(chapter, checker_name, error, wrong)
    assert not fb.correct and not fb.pending and fb.message, f"{chapter}.{checker_name} accepted: {fb.message}"
    fb = _run(chapter, checker_name, error, lambda sol: lambda *a: 1 / 0)
    assert not fb.correct and "ZeroDivisionError" in fb.message, fb.message


def test_the_discovery_finds_the_chapters_code_checkers():
    found = {(p.values[0], p.values[1]) for p in CHECKERS}
    # Chapter 0's exercise is a prediction (a word), not a function: code exercises start at 1.
    chapters = {path.parent.name for path in CHAPTERS.glob("ch*/exercises.py")} - {"ch00_start"}
    without = sorted(c for c in chapters if not any(ch == c for ch, _ in found))
    assert not without, f"chapters whose exercises.py has no check_*(fn, ...): {without}"
    assert len(found) >= 10, sorted(found)
