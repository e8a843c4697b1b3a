"""What every chapter shares for talking to the reader: checked claims and exercise feedback.

- :func:`check` prints one readable line for a claim the page makes (a tick and
  the claim) and raises when the claim is false, so nbval catches a book that
  stopped telling the truth. Use it instead of ``assert`` in notebooks.
- Exercise checkers return a :class:`Feedback`. One convention for every
  exercise: the answer cell holds ``None`` until the reader fills it in, and
  ``None`` gives "No answer yet" (never an error, never "NaN"). A function whose
  body still returns ``None`` (or raises ``NotImplementedError``) is "no answer
  yet" too; :func:`check_function` handles both, so no chapter needs to.
- :func:`check_close`, :func:`check_exact` and :func:`check_function` are the
  shared checkers: a number or array, an exact integer/tuple, and a function the
  reader wrote, run on fresh random cases against the package's reference.

What :func:`check_function` promises the reader:

- every honest form of a right answer is accepted: numpy float64, float32 or
  float16 (compared at the precision of the answer, and the message says
  which), torch tensors (also ones that require grad or come out of a graph),
  nested lists, numpy scalars, tuples of those;
- the reader's function gets deep copies of the inputs and the reference runs
  on pristine ones, so a function that changes its arguments is judged on what
  it returns (a side note says it changed them);
- it never raises: whatever the reader's code raises, or converting its result
  raises, becomes feedback naming the case; a reference that raises is reported
  as a bug of the checker (and warned about), never as the reader's mistake;
- a function running past ``time_limit`` seconds (in all) is stopped with a
  message; interrupting the kernel still works.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import signal
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np

NO_ANSWER = "No answer yet: replace None with your answer, then run the cell again."
RETURNS_NONE = ("No answer yet: your function still returns None. Replace `return None` by your code "
                "(and end it with `return`), then run the cell again.")
NOT_IMPLEMENTED = ("No answer yet: write your code in place of `raise NotImplementedError`, "
                   "then run the cell again.")
TIME_LIMIT = 10.0  # seconds of the reader's code per checker (all cases together)

# Tolerances per precision of the reader's answer: (relative, absolute relative to the largest
# expected entry). float64 keeps the caller's ``atol`` (default 1e-8) with 1e-6 relative.
_PRECISION = {"float64": (1e-6, 0.0), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3),
              "bfloat16": (2e-2, 1e-2)}


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


# ---------------------------------------------------------------- turning any answer into numbers
class AnswerError(ValueError):
    """An answer that is not an array of numbers; the message says what it is instead."""


def _is_torch_tensor(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and hasattr(x, "detach")


def _precision_of(dtype: np.dtype) -> str:
    if dtype == np.float32:
        return "float32"
    if dtype == np.float16:
        return "float16"
    return "float64"  # float64, longdouble, ints and bools (exact)


def _lowest(precisions) -> str:
    order = ("bfloat16", "float16", "float32", "float64")
    return min(precisions, key=order.index, default="float64")


def as_array(x) -> tuple[np.ndarray, str]:
    """``x`` as a float64 array plus the precision it was given in ("float64", "float32", ...).

    Accepts numpy arrays and scalars, Python numbers, torch tensors (detached and
    moved to the CPU first, so tensors that require grad or come out of a graph
    work), and (nested) lists and tuples of any of these. Raises :class:`AnswerError`
    with a readable reason for anything else (None, strings, ragged lists,
    complex numbers, objects).
    """
    if _is_torch_tensor(x):
        t = x.detach().cpu()
        name = str(t.dtype).replace("torch.", "")
        if t.is_complex():
            raise AnswerError("is a complex tensor; the answer is real")
        precision = name if name in ("float16", "bfloat16", "float32") else "float64"
        if t.is_floating_point() and name != "float64":
            t = t.float()  # float16/bfloat16 have no numpy twin
        try:
            return np.asarray(t.numpy(), dtype=np.float64), precision
        except Exception as exc:  # noqa: BLE001 - a tensor subclass, a meta tensor, ...
            raise AnswerError(f"is a tensor that cannot be read ({type(exc).__name__}: {exc})") from None
    if isinstance(x, (list, tuple)):
        parts = [as_array(e) for e in x]
        shapes = {p[0].shape for p in parts}
        if len(shapes) > 1:
            raise AnswerError(f"is a ragged list (its elements have shapes {sorted(shapes)})")
        if not parts:
            return np.zeros((0,)), "float64"
        return np.stack([p[0] for p in parts]), _lowest(p[1] for p in parts)
    if x is None or isinstance(x, (str, bytes, dict, set)):
        raise AnswerError(f"is {'None' if x is None else 'a ' + type(x).__name__}, not numbers")
    try:
        a = np.asarray(x)
    except Exception as exc:  # noqa: BLE001 - whatever a foreign object raises
        raise AnswerError(f"cannot be read as numbers ({type(exc).__name__}: {exc})") from None
    if a.dtype.kind == "c":
        raise AnswerError("has complex numbers; the answer is real")
    if a.dtype.kind not in "fiub":
        raise AnswerError(f"is a {type(x).__name__} of {a.dtype}, not numbers")
    return a.astype(np.float64), _precision_of(a.dtype)


def _tolerance(precision: str, atol: float, expected: np.ndarray) -> tuple[float, float]:
    """(rtol, atol) for an answer given in ``precision``; never tighter than the float64 one."""
    rtol, atol_scale = _PRECISION[precision]
    finite = expected[np.isfinite(expected)]
    scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
    return rtol, max(atol, atol_scale * scale)


def _precision_note(precision: str, rtol: float, atol: float) -> str:
    return f"compared at {precision} precision: within {atol:.1g} + {rtol:.1g} x |expected|"


# ---------------------------------------------------------------- the two simple checkers
def check_close(answer, expected, hint: str, *, rtol: float = 1e-2, atol: float = 1e-3,
                praise: str = "That matches.") -> Feedback:
    """Compare a numeric answer (scalar or array, numpy, torch or a list) with the expected value.

    ``None`` is "no answer yet"; wrong shapes, non-numbers and values outside the
    tolerance give a hint, never the answer.
    """
    if answer is None:
        return no_answer()
    try:
        a, _ = as_array(answer)
    except AnswerError:
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
    if _is_torch_tensor(answer):
        answer = answer.detach().cpu().tolist()
    try:
        got = tuple(int(a) for a in answer) if want_tuple else answer
    except (TypeError, ValueError, RuntimeError):
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


# ---------------------------------------------------------------- running the reader's code
class TimeLimitExceeded(BaseException):
    """Raised inside the reader's function when its time is up.

    A ``BaseException`` (like ``KeyboardInterrupt``) so that a reader's
    ``except Exception:`` cannot swallow it.
    """


def _can_use_alarm() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def time_limit(seconds: float):
    """Raise :class:`TimeLimitExceeded` in the block after ``seconds`` of wall time.

    Uses ``SIGALRM`` (a timer in the main thread; any earlier timer and handler
    are put back afterwards). Kernel interrupts (``SIGINT``) are untouched. Where
    no alarm is possible (another thread, Windows) the block runs without a limit.
    """
    if seconds is None or not _can_use_alarm():
        yield
        return

    def _alarm(signum, frame):
        raise TimeLimitExceeded

    start = time.monotonic()
    old_handler = signal.signal(signal.SIGALRM, _alarm)
    old_delay, _ = signal.setitimer(signal.ITIMER_REAL, max(float(seconds), 1e-3))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old_handler)
        if old_delay:  # someone else's timer was running: let it go off as it would have
            signal.setitimer(signal.ITIMER_REAL, max(old_delay - (time.monotonic() - start), 1e-3))


def _same(a, b) -> bool:
    """Whether an argument still equals its pristine copy (arrays, tensors, containers, dataclasses)."""
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray) or _is_torch_tensor(a):
            a_, b_ = (np.asarray(v.detach().cpu() if _is_torch_tensor(v) else v) for v in (a, b))
            return a_.shape == b_.shape and bool(np.array_equal(a_, b_, equal_nan=a_.dtype.kind == "f"))
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
        if type(a).__eq__ is object.__eq__ and hasattr(a, "__dict__") and hasattr(b, "__dict__"):
            return _same(vars(a), vars(b))  # a plain object (a callable loss, say): its fields, not its identity
        if callable(a):  # a function handed to the reader's code: not data it edits
            return True
        return bool(a == b)
    except Exception:  # noqa: BLE001 - cannot tell: say nothing rather than something wrong
        return True


def _arg_names(fn, n: int) -> list[str]:
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"argument {i + 1}" for i in range(n)]


def _shape(x) -> str:
    if hasattr(x, "shape") or isinstance(x, (list, tuple)):
        try:
            return str(tuple(np.shape(x)))
        except Exception:  # noqa: BLE001 - a ragged list
            return type(x).__name__
    return type(x).__name__


def _checker_bug(what: str, where: str, exc: BaseException) -> Feedback:
    text = (f"This is a bug in the exercise's checker, not in your code: {what} raised "
            f"{type(exc).__name__}: {exc} on {where}. Please report it.")
    warnings.warn(text, RuntimeWarning, stacklevel=3)
    return Feedback(False, text)


def _values(x, n: int):
    """The reader's result as a tuple of ``n`` values (a list of n items counts as n values)."""
    if isinstance(x, tuple):
        return x
    if n > 1 and isinstance(x, list) and len(x) == n:
        return tuple(x)
    return (x,)


def check_function(fn, reference: Callable, cases: Iterable[tuple], *, name: str = "your function",
                   diagnose: Callable | None = None, atol: float = 1e-8,
                   praise: str = "It agrees with the package on every case.",
                   returns: Sequence[str] | None = None, shape_hints: bool = False,
                   time_limit_s: float | None = TIME_LIMIT) -> Feedback:
    """Run the reader's ``fn(*case)`` and ``reference(*case)`` on each case and compare.

    ``fn`` may return an array or a tuple of arrays (compared element by
    element), in any form :func:`as_array` reads. The first disagreement is
    described precisely: an exception, a wrong type or shape, NaN/inf, the
    wrong order of the values, or the largest difference and where it is.

    ``diagnose(result, expected, case)`` may return a chapter-specific sentence
    (rows that do not sum to 1, a masked key that got weight, ...); it is asked
    only when the result is wrong (its shapes right), gets the result as
    float64 array(s), and is shown before the generic sentence. With
    ``shape_hints=True`` it is also asked when a shape is wrong.
    ``returns`` names the values of a tuple result (e.g. ``("output", "weights")``).
    ``time_limit_s``: seconds the reader's code may run in all (None: no limit).
    """
    if fn is None:
        return no_answer()
    if not callable(fn):
        return Feedback(False, f"{name} should be a function (def ...), got {type(fn).__name__}.")
    try:
        cases = list(cases)
    except Exception as exc:  # noqa: BLE001
        return _checker_bug("making the test cases", "the first case", exc)
    budget = time_limit_s
    changed: set[str] = set()
    for i, case in enumerate(cases):
        shapes = ", ".join(_shape(a) for a in case)
        where = f"case {i + 1} of {len(cases)} (inputs of shape {shapes})"
        args = copy.deepcopy(case)
        start = time.monotonic()
        try:
            with time_limit(budget):
                got = fn(*args)
        except TimeLimitExceeded:
            return Feedback(False, f"On {where}, {name} was still running after {time_limit_s:g} s (the "
                                   f"time this checker gives it for all its cases) and was stopped. Is "
                                   f"there a loop that never ends, or a loop over every entry where one "
                                   f"array operation would do? (If it only imported a library for the "
                                   f"first time, run the cell again.)")
        except NotImplementedError:
            return Feedback(False, NOT_IMPLEMENTED, pending=True)
        except Exception as exc:  # the reader's code: any error is feedback, not a crash
            return Feedback(False, f"On {where}, {name} raised {type(exc).__name__}: {exc}")
        if budget is not None:
            budget = max(budget - (time.monotonic() - start), 1e-3)
        changed.update(n for n, a, b in zip(_arg_names(fn, len(case)), args, case) if not _same(a, b))
        try:
            want = reference(*copy.deepcopy(case))
        except Exception as exc:  # noqa: BLE001 - the package's fault, said so plainly
            return _checker_bug("the package's reference", where, exc)
        if got is None:
            if i == 0:
                return Feedback(False, RETURNS_NONE, pending=True)
            return Feedback(False, f"On {where}, {name} returned None: did you forget `return`?")
        fb = _compare(got, want, case, where=where, name=name, diagnose=diagnose, atol=atol,
                      returns=returns, shape_hints=shape_hints)
        if isinstance(fb, Feedback):
            return _with_side_note(fb, changed)
    precisions = fb  # the last case's precisions (the same for every case, in practice)
    note = ""
    if any(p != "float64" for p in precisions):
        note = f" (Your result is {_lowest(precisions)}; it was compared at {_lowest(precisions)} precision.)"
    return _with_side_note(Feedback(True, praise + note), changed)


def _with_side_note(fb: Feedback, changed: set[str]) -> Feedback:
    if not changed or fb.pending:
        return fb
    names = ", ".join(f"`{n}`" for n in sorted(changed))
    return Feedback(fb.correct, fb.message + f" Side note: your function changes its input {names} in "
                                             "place; the checker gave it copies, but a caller would "
                                             "see its own arrays change.")


ORDINALS = ("first", "second", "third", "fourth", "fifth")


def _label(j: int, name: str, returns) -> str:
    """How feedback names value ``j`` of a tuple: "`weights` (the second value attention
    returned)". Words, not numbers: the book counts from 0, Python's tuples too."""
    nth = ORDINALS[j] if j < len(ORDINALS) else f"number {j}"
    what = f"the {nth} value {name} returned"
    return f"`{returns[j]}` ({what})" if returns and j < len(returns) else what


def _compare(got, want, case, *, where, name, diagnose, atol, returns, shape_hints):
    """A Feedback for the first problem in ``got``, or the list of precisions when it is right."""
    wants = want if isinstance(want, tuple) else (want,)
    gots = _values(got, len(wants))
    labels = [name] if len(wants) == 1 else [_label(j, name, returns) for j in range(len(wants))]
    if len(wants) == 1 and len(gots) > 1:  # a tuple where one array is expected: maybe its rows
        gots = (got,)
    if len(gots) != len(wants):
        return Feedback(False, f"On {where}, {name} returned {len(gots)} value(s); expected {len(wants)}"
                               + (f": return {', '.join(returns)}." if returns else "."))
    try:
        ws = [as_array(w)[0] for w in wants]
    except AnswerError as exc:
        return _checker_bug("the package's reference", where, exc)
    gs, precisions = [], []
    for g, label in zip(gots, labels):
        try:
            a, p = as_array(g)
        except AnswerError as exc:
            return Feedback(False, f"On {where}, {label} {exc}.")
        except Exception as exc:  # noqa: BLE001 - converting the reader's object raised
            return Feedback(False, f"On {where}, reading {label} as numbers raised "
                                   f"{type(exc).__name__}: {exc}")
        gs.append(a)
        precisions.append(p)
    arg = (lambda xs: xs[0] if len(wants) == 1 else tuple(xs))

    def _note():
        if diagnose is None:
            return None
        try:
            with np.errstate(all="ignore"):
                return diagnose(arg(gs), want, case)
        except Exception as exc:  # noqa: BLE001 - a diagnosis that fails must not hide the verdict
            warnings.warn(f"the checker's diagnose raised {type(exc).__name__}: {exc}", RuntimeWarning)
            return None

    for g, w, label in zip(gs, ws, labels):
        if g.shape != w.shape:
            note = _note() if shape_hints else None
            if note:
                return Feedback(False, f"On {where}: {note}")
            order = _order_hint(gs, ws, returns)
            return Feedback(False, f"On {where}, {label} has shape {g.shape}; expected {w.shape}."
                                   + (f" {order}" if order else ""))
    verdicts = [_judge(g, w, p, atol) for g, w, p in zip(gs, ws, precisions)]
    if all(v is None for v in verdicts):
        return precisions
    note = _note()
    if note:
        return Feedback(False, f"On {where}: {note}")
    order = _order_hint(gs, ws, returns)
    if order:
        return Feedback(False, f"On {where}: {order}")
    j = next(j for j, v in enumerate(verdicts) if v is not None)
    return Feedback(False, f"On {where}, {labels[j]} {verdicts[j]}")


def _judge(g: np.ndarray, w: np.ndarray, precision: str, atol: float) -> str | None:
    """None when ``g`` equals ``w`` to the answer's precision, else the end of a sentence saying how not."""
    rtol, atol_p = _tolerance(precision, atol, w)
    bad_w = ~np.isfinite(w)  # a reference may hold inf/NaN on purpose (masked scores): match exactly
    if np.any(bad_w):
        same = (np.isnan(g) & np.isnan(w)) | (g == w)
        if not np.all(same[bad_w]):
            at = tuple(int(a) for a in np.argwhere(bad_w & ~same)[0])
            return f"has {g[at]:.4g} at index {at} where {w[at]} is expected."
    if not np.all(np.isfinite(g[~bad_w])):
        return "contains NaN or inf."
    diff = np.where(bad_w, 0.0, np.abs(g - np.where(bad_w, 0.0, w)))
    if np.all(diff <= atol_p + rtol * np.abs(np.where(bad_w, 0.0, w))):
        return None
    at = np.unravel_index(int(np.argmax(diff)), diff.shape)
    return (f"differs from the package's result by up to {diff.max():.3g} (at index "
            f"{tuple(int(a) for a in at)}: yours {g[at]:.4g}, expected {w[at]:.4g}; "
            f"{_precision_note(precision, rtol, atol_p)}).")


def _order_hint(gs, ws, returns) -> str | None:
    """A sentence when the values are all right but returned in another order."""
    n = len(ws)
    if n < 2:
        return None
    from itertools import permutations
    for perm in permutations(range(n)):
        if perm == tuple(range(n)):
            continue
        if all(gs[k].shape == ws[perm[k]].shape and _judge(gs[k], ws[perm[k]], "float32", 1e-8) is None
               for k in range(n)):
            order = ", ".join(returns) if returns else "them in the order the exercise asks for"
            return f"the values are right but in the wrong order: return {order}."
    return None
