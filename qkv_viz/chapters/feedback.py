"""Self-check exercises: each chapter's ``chNN`` module has ``check_*`` functions.

A check says right or wrong and, when wrong, gives a hint, never the answer.
It returns a :class:`Feedback` (truthy when right) so notebooks can print it
and tests can assert on it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Feedback:
    """Outcome of one exercise check."""

    correct: bool
    message: str

    def __bool__(self) -> bool:
        return self.correct

    def __repr__(self) -> str:
        return ("Right! " if self.correct else "Not yet. ") + self.message

    _repr_pretty_ = lambda self, p, cycle: p.text(repr(self))  # noqa: E731 (IPython display)


def check_close(answer, expected, hint: str, *, rtol: float = 1e-2, atol: float = 1e-3,
                praise: str = "That matches.") -> Feedback:
    """Compare a numeric answer (scalar or array) with the expected value.

    Wrong shapes, non-numbers and values outside the tolerance all give a hint.
    """
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
