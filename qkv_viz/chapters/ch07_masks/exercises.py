"""Chapter 7 exercises: a masked softmax written by the reader, cross-attention shapes,
causal and padding masks, torch's key_padding_mask.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never the
answer. ``None`` (or a function that still returns ``None``) is "no answer yet".
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_close, check_exact, check_function, no_answer
from qkv_viz.core.attention import causal_mask, masked_softmax

STUB = ("No answer yet: your function still returns None. Replace the None with your code, "
        "then run the cell again.")
CAUSAL_T = 9                       # exercise 3
PAD_LENGTHS, PAD_S = (3, 5), 5     # exercise 4


# ---------------------------------------------------------------- exercise 1: masked softmax
def masked_softmax_cases(n: int = 6, seed=None):
    """(scores, mask) pairs: random sizes and masks; from case 2 on one row is fully masked;
    the last case has scores in the hundreds (a plain exp overflows)."""
    rng = np.random.default_rng(seed)
    cases = []
    for c in range(n):
        T, S = (int(a) for a in rng.choice(np.arange(2, 8), size=2, replace=False))
        scores = rng.normal(scale=3.0, size=(T, S))
        if c == n - 1:
            scores = scores + 800.0
        mask = rng.random((T, S)) < 0.7
        mask[np.arange(T), rng.integers(0, S, size=T)] = True  # every row sees at least one key ...
        if c >= 1:
            mask[rng.integers(0, T)] = False                    # ... except one fully masked row
        cases.append((scores, mask))
    return cases


def _diagnose_masked(got, want, case):
    scores, mask = case
    got = np.asarray(got, dtype=float)
    if got.shape != want.shape:
        return None
    empty = ~mask.any(axis=-1)
    for r in np.flatnonzero(empty):
        if not np.all(np.isfinite(got[r])):
            return (f"row {r} is fully masked (it may attend to no key) and your weights there are NaN: "
                    f"exp(-inf) / sum(exp(-inf)) is 0/0. The book's convention for such a row is all "
                    f"zeros; handle it separately.")
    live = ~empty
    if not np.all(np.isfinite(got[live])):
        big = np.abs(scores).max()
        return (f"your weights contain NaN or inf in rows that do have allowed keys (scores go up to "
                f"{big:.0f}): exp overflows. Subtract each row's largest allowed score before exp.")
    if np.allclose(got, masked_softmax(scores, ~mask)):
        return "your weights sit on the masked keys: in this book True means 'may attend', False means hidden."
    leak = (~mask) & (np.abs(got) > 1e-12)
    if np.any(leak):
        r, j = (int(a) for a in np.argwhere(leak)[0])
        return (f"row {r}, key {j} is masked (mask[{r}, {j}] is False) but got weight {got[r, j]:.3g}; "
                f"masked keys must get exactly 0.")
    if np.any(empty) and np.any(got[empty] != 0):
        r = int(np.flatnonzero(empty)[0])
        return f"row {r} is fully masked; the book's convention gives it all-zero weights."
    sums = got[live].sum(axis=-1)
    if not np.allclose(sums, 1.0):
        r = int(np.flatnonzero(live)[np.argmax(np.abs(sums - 1))])
        return (f"row {r}'s weights sum to {got[r].sum():.4g}; the weights over the allowed keys must "
                f"sum to 1 (softmax over the allowed keys only).")
    return None


def check_masked_softmax(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(scores, mask)`` -> weights (T, S): softmax over the keys where mask is
    True, exactly 0 where it is False, all zeros in a fully masked row."""
    cases = masked_softmax_cases(seed=seed)
    if fn is None:
        return no_answer()
    try:
        if callable(fn) and fn(*cases[0]) is None:
            return Feedback(False, STUB, pending=True)
    except Exception:  # noqa: BLE001 - check_function reports the reader's error precisely
        pass
    return check_function(fn, masked_softmax, cases, name="your masked softmax",
                          diagnose=_diagnose_masked, atol=1e-9)


# ---------------------------------------------------------------- exercises 2-5
def check_cross_weights_shape(answer) -> Feedback:
    """Exercise 2: a decoder with T=5 target tokens cross-attends over S=9 encoder tokens with
    4 heads. The shape of the attention weights, (heads, rows, columns)."""
    return check_exact(answer, (4, 5, 9),
                       hint="each head has its own map; rows are queries (which side asks?), "
                            "columns are keys (which side is looked at?).",
                       praise="Queries come from the decoder, keys from the encoder: a rectangular map per head.")


def check_causal_allowed(answer) -> Feedback:
    """Exercise 3: how many (query, key) pairs may attend under ``causal_mask(9)``?"""
    return check_exact(answer, int(causal_mask(CAUSAL_T).sum()),
                       hint="query i sees keys 0..i; add up how many keys each of the 9 rows sees.")


def check_key_padding_mask(answer) -> Feedback:
    """Exercise 4: the boolean ``key_padding_mask`` that ``nn.MultiheadAttention`` needs for a
    batch of two sentences of lengths 3 and 5, padded to S = 5."""
    if answer is None:
        return no_answer()
    lengths = np.array(PAD_LENGTHS)
    expected = np.arange(PAD_S)[None, :] >= lengths[:, None]  # (B, S): True = padding, ignore
    try:
        a = np.asarray(answer)
    except (TypeError, ValueError):
        return Feedback(False, "Give a nested list or an array of True/False.")
    hint = "torch's key_padding_mask has one row per sentence and one column per key position."
    if a.shape != expected.shape:
        return Feedback(False, f"Shape {a.shape}; {hint} (no query axis: it applies to every query).")
    if a.dtype != bool:
        return Feedback(False, "Give booleans (True/False): a float mask is added to the scores instead.")
    if np.array_equal(a, expected):
        return Feedback(True, "True marks padding, which nn.MultiheadAttention ignores.")
    if np.array_equal(a, ~expected):
        return Feedback(False, "That is the book's convention (True = may attend). torch's key_padding_mask "
                               "means the opposite: True = this key is padding, ignore it.")
    return Feedback(False, f"Not yet. Hint: {hint} Which positions of a 3-token sentence are padding?")


def check_padded_weights(answer) -> Feedback:
    """Exercise 5: scores [1, 2, 3, 4] for one query; the last two keys are padding.
    The four attention weights (no scaling)."""
    expected = masked_softmax(np.array([[1.0, 2.0, 3.0, 4.0]]), np.array([[True, True, False, False]]))[0]
    return check_close(answer, expected, atol=2e-3,
                       hint="padded keys get weight exactly 0; softmax runs over the real keys only, "
                            "so the remaining weights still add up to 1.")
