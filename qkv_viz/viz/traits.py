"""Figure traits that refuse what the figure cannot show.

A reader moves a figure from Python (``figure.query = 3``). A value the figure cannot
show (an index past the tokens, a choice it does not offer, NaN, a float where a count
goes) is refused with a ``traitlets.TraitError`` naming the trait, the value and what
is allowed::

    query = 99, but there are 8 tokens: choose 0..7

and the trait keeps its old value, so the picture stays as it was. The helpers below
raise that error. :class:`CheckedFigure`, the base of the book's interactive figures,
adds two things: traits fixed when the figure is built (its data: vectors, tokens of a
model run, sizes) refuse any change, and a bad value arriving from the browser is
refused the same way without killing the figure: the message goes to ``error`` (shown
in the figure) and the browser gets the last good value back.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import reprlib

import numpy as np
import traitlets

from qkv_viz.viz.canvas import CanvasFigure

_short = reprlib.Repr()
_short.maxstring, _short.maxother, _short.maxlist = 40, 40, 6


def refuse(name: str, value, allowed: str):
    """Raise the TraitError of a refused value: ``"<name> = <value>, but <allowed>"``."""
    raise traitlets.TraitError(f"{name} = {_short.repr(value)}, but {allowed}")


def _span(lo: int, hi: int, why: str | None) -> str:
    span = f"choose {lo}..{hi}" if lo <= hi else "there is nothing to choose"
    return f"{why}: {span}" if why else span


def _is_whole(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def integer(name: str, value, lo: int, hi: int, why: str | None = None) -> int:
    """``value`` as an int in ``lo..hi`` (numpy integers too, never bool), else refused.

    ``why`` says where the bounds come from: ``integer("query", 99, 0, 7, "there are 8
    tokens")`` refuses with "query = 99, but there are 8 tokens: choose 0..7".
    """
    if not _is_whole(value):
        refuse(name, value, f"it must be a whole number ({_span(lo, hi, why)})")
    if not lo <= value <= hi:
        refuse(name, value, _span(lo, hi, why))
    return int(value)


def one_of(name: str, value, choices, why: str | None = None):
    """``value`` if it is one of ``choices`` (compared with ==, bools never count as numbers)."""
    choices = tuple(choices)
    same_kind = not isinstance(value, (bool, np.bool_)) or all(isinstance(c, bool) for c in choices)
    if not same_kind or value not in choices:
        listed = ", ".join(f"{c:g}" if isinstance(c, float) else str(c) for c in choices)
        refuse(name, value, f"{why + ': ' if why else ''}choose one of {listed}")
    return value


def number(name: str, value, lo: float = -math.inf, hi: float = math.inf, *,
           above: float | None = None) -> float:
    """``value`` as a finite float in ``lo..hi`` (and ``> above`` if given), else refused."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        refuse(name, value, "it must be a finite number")
    if above is not None and not value > above:
        refuse(name, value, f"it must be > {above:g}")
    if not lo <= value <= hi:
        refuse(name, value, f"it must lie in {lo:g}..{hi:g}")
    return float(value)


def numbers_list(name: str, value, n: int, lo: float = -math.inf, hi: float = math.inf) -> list:
    """``value`` as a list of ``n`` finite floats in ``lo..hi``, else refused."""
    span = "" if (lo, hi) == (-math.inf, math.inf) else f" in {lo:g}..{hi:g}"
    values = list(value)
    if len(values) != n or not all(
            not isinstance(x, (bool, np.bool_)) and isinstance(x, numbers.Real) and math.isfinite(x)
            and lo <= x <= hi for x in values):
        refuse(name, value, f"it must be {n} finite numbers{span}")
    return [float(x) for x in values]


def labels(name: str, value, n: int, one: str = "token") -> list:
    """``value`` as a list of ``n`` strings (one label per ``one``), else refused."""
    values = list(value)
    if len(values) != n or not all(isinstance(x, str) for x in values):
        refuse(name, value, f"it must be {n} strings, one per {one}")
    return values


class Whole(traitlets.Int):
    """An integer trait that also takes numpy integers (``np.argmax(...)``), never a bool or a float."""

    def validate(self, obj, value):
        if not _is_whole(value):
            refuse(self.name, value, "it must be a whole number")
        return int(value)


class Number(traitlets.Float):
    """A float trait that takes any finite real number (numpy's too), never a bool, NaN or inf."""

    def validate(self, obj, value):
        return number(self.name, value)


class CheckedFigure(CanvasFigure):
    """A :class:`~qkv_viz.viz.canvas.CanvasFigure` whose traits refuse what it cannot show.

    ``_fixed``: the traits set when the figure is built (its data); afterwards they
    refuse any other value ("build a new figure"), except while the figure itself
    updates them inside ``with self._updating():``. Subclasses validate their controls
    with ``@traitlets.validate`` and the helpers of this module. A refused value from
    the browser sets ``error`` and sends the last good values back.
    """

    _fixed: tuple = ()
    _builder = "a new figure"  # what to call for other data, named in the message

    def __init__(self, **kwargs):
        self._built, self._inside = False, False
        self._register_validator(CheckedFigure._keep_fixed, self._fixed_names())
        super().__init__(**kwargs)
        self._built = True
        self._remember_fixed()

    def _fixed_names(self) -> tuple:
        return ("lut",) + tuple(self._fixed)

    def _remember_fixed(self):
        # the values built (kept apart: in a message from the browser, traitlets checks a value
        # after setting it, so getattr would already give the new one)
        self._fixed_values = {name: getattr(self, name) for name in self._fixed_names()}

    @contextlib.contextmanager
    def _updating(self):
        """The figure changes its own data (a new draw, a model run): fixed traits may move."""
        old, self._inside = self._inside, True
        try:
            yield
        finally:
            self._inside = old
            if not old:
                self._remember_fixed()

    def _keep_fixed(self, proposal):
        name, value = proposal["trait"].name, proposal["value"]
        if self._built and not self._inside and value != self._fixed_values[name]:
            refuse(name, value, f"it is fixed when the figure is built: call {self._builder} for another")
        return value

    def set_state(self, sync_data):
        """Values from the browser: one the figure refuses leaves every trait as it was
        (``error`` says why) and the browser is sent the last good values."""
        try:
            super().set_state(sync_data)
        except traitlets.TraitError as exc:
            self.error = f"{exc}. Showing the last good picture."
            self._refused = True
            self.send_state([name for name in sync_data if name in self.keys])
        else:
            if getattr(self, "_refused", False):
                self._refused = False
                self.error = ""
