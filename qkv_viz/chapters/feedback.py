"""What every chapter shares for talking to the reader: checked claims and exercise feedback.

- :func:`check` prints one readable line for a claim the page makes (a tick and
  the claim) and raises when the claim is false, so nbval catches a book that
  stopped telling the truth. Use it instead of ``assert`` in notebooks.
- Exercise checkers return a :class:`Feedback`. One convention for every
  exercise: the answer cell holds ``None`` until the reader fills it in, and
  ``None`` gives "No answer yet" (never an error, never "NaN").
- :func:`check_close`, :func:`check_exact` and :func:`check_function` are the
  shared checkers: a number or array, an exact integer/tuple, and a function the
  reader wrote, run on fresh random cases against the package's reference.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

NO_ANSWER = "No answer yet: replace None with your answer, then run the cell again."


@dataclass(frozen=True)
class Feedback:
    """Outcome of one exercise check: truthy when right. ``pending`` when no answer was given."""

    correct: bool
    message: str
    pending: bool = False

    def __bool__(self) -> bool:
        return self.correct

    def __repr__(self) -> str:
        if self.pending:
            return "… " + self.message
        return ("✔ Right! " if self.correct else "✘ Not yet. ") + self.message

    def _repr_pretty_(self, p, cycle):  # IPython shows this instead of the dataclass fields
        p.text(repr(self))


def no_answer() -> Feedback:
    """The feedback for an answer cell still holding ``None``."""
    return Feedback(False, NO_ANSWER, pending=True)


def check(claim: str, ok) -> None:
    """Print ``✔ claim`` when ``ok`` is true; raise ``AssertionError('✘ claim')`` otherwise.

    ``ok`` is a bool or anything numpy can reduce with ``all`` (an array of comparisons).
    """
    if not bool(np.all(ok)):
        raise AssertionError(f"✘ {claim}")
    print(f"✔ {claim}")


def check_close(answer, expected, hint: str, *, rtol: float = 1e-2, atol: float = 1e-3,
                praise: str = "That matches.") -> Feedback:
    """Compare a numeric answer (scalar or array) with the expected value.

    ``None`` is "no answer yet"; wrong shapes, non-numbers and values outside the
    tolerance give a hint, never the answer.
    """
    if answer is None:
        return no_answer()
    try:
        a = np.asarray(answer, dtype=float)
    except (TypeError, ValueError):
        return Feedback(False, f"Give a number or an array of numbers. Hint: {hint}")
    e = np.asarray(expected, dtype=float)
    if a.shape != e.shape:
        return Feedback(False, f"Expected shape {e.shape}, got {a.shape}. Hint: {hint}")
    if not np.all(np.isfinite(a)):
        return Feedback(False, f"Your answer contains NaN or inf. Hint: {hint}")
    if np.allclose(a, e, rtol=rtol, atol=atol):
        return Feedback(True, praise)
    return Feedback(False, f"Hint: {hint}")


def check_exact(answer, expected, hint: str, *, praise: str = "That matches.") -> Feedback:
    """An integer, or a tuple of integers (a shape), that must match exactly."""
    if answer is None:
        return no_answer()
    want_tuple = isinstance(expected, tuple)
    try:
        got = tuple(int(a) for a in answer) if want_tuple else answer
    except (TypeError, ValueError):
        return Feedback(False, f"Give a tuple of {len(expected)} integers. Hint: {hint}")
    if not want_tuple:
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            return Feedback(False, f"Give a whole number (an int), got {type(answer).__name__}. Hint: {hint}")
        got = int(got)
    if got == expected:
        return Feedback(True, praise)
    if want_tuple and sorted(got) == sorted(expected):
        return Feedback(False, f"Right numbers, wrong order. Hint: {hint}")
    return Feedback(False, f"Hint: {hint}")


def _shape(x) -> str:
    return str(np.shape(x)) if hasattr(x, "shape") or isinstance(x, (list, tuple)) else type(x).__name__


def check_function(fn, reference: Callable, cases: Iterable[tuple], *, name: str = "your function",
                   diagnose: Callable | None = None, atol: float = 1e-8,
                   praise: str = "It agrees with the package on every case.") -> Feedback:
    """Run the reader's ``fn(*case)`` and ``reference(*case)`` on each case and compare.

    ``fn`` may return an array or a tuple of arrays (compared element by
    element). The first disagreement is described precisely: an exception, a
    wrong type or shape, NaN/inf, or the largest difference and where it is.
    ``diagnose(result, expected, case)`` may return a chapter-specific sentence
    (rows that do not sum to 1, a masked key that got weight, ...) that is shown
    before the generic one.
    """
    if fn is None:
        return no_answer()
    if not callable(fn):
        return Feedback(False, f"{name} should be a function (def ...), got {type(fn).__name__}.")
    cases = list(cases)
    for i, case in enumerate(cases):
        shapes = ", ".join(_shape(a) for a in case)
        where = f"case {i + 1} of {len(cases)} (inputs of shape {shapes})"
        try:
            got = fn(*case)
        except NotImplementedError:
            return no_answer()
        except Exception as exc:  # the reader's code: any error is feedback, not a crash
            return Feedback(False, f"On {where}, {name} raised {type(exc).__name__}: {exc}")
        want = reference(*case)
        if got is None:
            return Feedback(False, f"On {where}, {name} returned None: did you forget `return`?")
        wants = want if isinstance(want, tuple) else (want,)
        gots = got if isinstance(got, tuple) else (got,)
        if len(gots) != len(wants):
            return Feedback(False, f"On {where}, {name} returned {len(gots)} value(s); "
                                   f"expected {len(wants)}.")
        for j, (g, w) in enumerate(zip(gots, wants)):
            label = name if len(wants) == 1 else f"value {j + 1} of {name}"
            try:
                g = np.asarray(g, dtype=float)
            except (TypeError, ValueError):
                return Feedback(False, f"On {where}, {label} is not an array of numbers.")
            w = np.asarray(w, dtype=float)
            if g.shape != w.shape:
                return Feedback(False, f"On {where}, {label} has shape {g.shape}; expected {w.shape}.")
            if diagnose is not None:
                note = diagnose(g if len(wants) == 1 else gots, w if len(wants) == 1 else wants, case)
                if note:
                    return Feedback(False, f"On {where}: {note}")
            if not np.all(np.isfinite(g)):
                return Feedback(False, f"On {where}, {label} contains NaN or inf.")
            diff = np.abs(g - w)
            if not np.all(diff <= atol + 1e-6 * np.abs(w)):
                at = np.unravel_index(int(np.argmax(diff)), diff.shape)
                return Feedback(False, f"On {where}, {label} differs from the package's result by up to "
                                       f"{diff.max():.3g} (at index {tuple(int(a) for a in at)}: "
                                       f"yours {g[at]:.4g}, expected {w[at]:.4g}).")
    return Feedback(True, praise)
