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
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype} with shape {arr.shape}")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got complex dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if arr.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimensions, got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty (shape {arr.shape}): every axis needs at least one entry")
    if not np.all(np.isfinite(arr)):
        bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"{name} contains {bad} NaN or inf value(s) (shape {arr.shape})")
    return arr


def positive_number(name: str, value, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, raising if it is not a finite positive number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}: {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return value


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int, raising unless it is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}: {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def as_rng(seed) -> np.random.Generator:
    """A ``numpy.random.Generator`` from a seed, a Generator, or None (seed 0)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        seed = 0
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int or numpy.random.Generator, got {type(seed).__name__}")
    return np.random.default_rng(int(seed))
