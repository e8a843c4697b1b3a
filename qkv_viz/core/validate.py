"""Input checks shared by the maths modules.

Every public function validates its arguments here, so a learner who passes
the wrong thing gets a message naming the argument and its shape instead of
a NaN three cells later.
"""
from __future__ import annotations

import numbers

import numpy as np


def as_array(name: str, x, *, min_ndim: int = 1, ndim: int | None = None) -> np.ndarray:
    """Return ``x`` as a finite float64 array, or raise a helpful error.

    Raises ``TypeError`` for non-numeric input and ``ValueError`` for a wrong
    rank, an empty axis, or NaN/inf entries. ``name`` is used in messages.
    """
    try:
        arr = np.asarray(x)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be a numeric array, could not convert it: {exc}") from exc
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number):
        hint = {"b": " (True/False are not numbers here; use .astype(float) if you mean 0/1)",
                "O": " (mixed or oversized entries; use np.asarray(..., dtype=float))"}.get(arr.dtype.kind, "")
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype} with shape {arr.shape}{hint}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if arr.ndim < min_ndim:
        hint = f"; one vector is one row: {name}[None, :] has shape (1, {arr.shape[-1]})" if (
            arr.ndim == 1 and min_ndim == 2) else ""
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {arr.shape}{hint}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}): every axis needs at least one entry")
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or inf value(s) (shape {arr.shape}); they would spread "
                         f"through every sum. np.argwhere(~np.isfinite({name})) shows where they are")
    return arr


def positive_number(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, raising if it is not a finite positive number."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}: {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return value


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, raising unless it is an integer >= 1."""
    value = index_int(name, value)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def index_int(name: str, value) -> int:
    """Return ``value`` as a Python int (any integer, numpy ones included; not bool or float)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}: {value!r}")
    return int(value)


def as_bool(name: str, value) -> bool:
    """Return ``value`` as a Python bool; only ``True``/``False`` (numpy's too) are accepted.

    A string such as ``"False"`` is truthy in Python, so it is refused rather than guessed.
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}: {value!r}")
    return bool(value)


def axis_index(name: str, axis, ndim: int) -> int:
    """Return ``axis`` as an index into ``ndim`` axes (negative counts from the end)."""
    axis = index_int(name, axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of range for an array with {ndim} dimension(s): "
                         f"use -1 (the last axis) .. {ndim - 1}")
    return axis % ndim


def finite_result(name: str, arr: np.ndarray, cause: str) -> np.ndarray:
    """Return ``arr``, or raise if a computation on finite inputs overflowed float64."""
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} overflows float64 (|value| > 1.8e308) even though every input is finite: "
            f"{cause}. Rescale the inputs (e.g. divide them by their largest entry).")
    return arr


def as_distribution(name: str, w) -> np.ndarray:
    """Return ``w`` (..., S) as float64 if every row is a probability distribution.

    Entries must be >= 0 and each row must sum to 1, up to the rounding of the
    input's dtype (``max(1e-5, 8 S eps)``). An all-zero row (a query whose keys
    were all masked) is not a distribution and is refused too.
    """
    arr = as_array(name, w)
    dtype = np.asarray(w).dtype  # before the cast to float64: its rounding sets the tolerance
    if np.any(arr < -1e-12):
        raise ValueError(f"{name} must be non-negative (shape {arr.shape}); did you pass scores? "
                         f"Apply softmax first.")
    eps = np.finfo(dtype).eps if np.issubdtype(dtype, np.floating) else np.finfo(float).eps
    tol = max(1e-5, 8 * arr.shape[-1] * float(eps))
    sums = arr.sum(axis=-1)
    bad = np.abs(sums - 1.0) > tol
    if np.any(bad):
        example = np.round(sums[bad].ravel()[:3], 6).tolist()
        raise ValueError(
            f"each row (last axis) of {name} must sum to 1, a probability distribution over keys; "
            f"{int(bad.sum())} of {sums.size} row(s) of shape {arr.shape} do not (row sums {example}). "
            f"Did you pass scores? Apply softmax first. A fully masked row (all zeros) has no "
            f"distribution: leave it out.")
    return arr


def as_rng(seed) -> np.random.Generator:
    """A ``numpy.random.Generator`` from a seed, a Generator, or None (seed 0)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        seed = 0
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int or numpy.random.Generator, got {type(seed).__name__}")
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    return np.random.default_rng(int(seed))
