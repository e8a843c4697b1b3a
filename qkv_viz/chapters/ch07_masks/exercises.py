"""Chapter 7 exercises: a NaN-free masked softmax for whole batches, batched cross-attention
with padded keys, a decoder's causal-and-padding mask for a left-padded batch, and torch's
key_padding_mask.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never the
answer. ``None`` is "no answer yet".
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_exact, check_function, no_answer
from qkv_viz.core.attention import causal_mask, masked_softmax, padding_mask

PAD_LENGTHS, PAD_S = (3, 5), 5     # exercise 4


# ---------------------------------------------------------------- exercise 1: the masked softmax
def masked_softmax_cases(seed=None) -> list:
    """(scores, mask) pairs: a (T, S) map with one fully hidden row, a batch (B, T, S) with a
    (B, 1, S) padding mask and an empty sentence, and a map whose second row lies far below the
    first (scores near 800 and near 0: subtracting the global max underflows that row to 0/0)."""
    rng = np.random.default_rng(seed)
    m1 = rng.random((4, 5)) < 0.7
    m1[:, 0] = True
    m1[2] = False                                            # query 2 may look at nothing
    m2 = (np.arange(6)[None, :] < np.array([6, 3, 0])[:, None])[:, None, :]   # (3, 1, 6); sentence 2 empty
    far = np.array([[800.0, 799.0, 798.0], [0.0, 1.0, 2.0]]) + 0.1 * rng.normal(size=(2, 3))
    m3 = np.array([[True, True, False], [True, True, True]])
    return [(rng.normal(size=(4, 5)), m1), (3 * rng.normal(size=(3, 4, 6)), m2), (far, m3)]


def _diagnose_masked_softmax(got, want, case):
    scores, mask = case
    mask = np.broadcast_to(mask, scores.shape)
    empty = ~mask.any(axis=-1)                               # rows with no allowed key
    live = ~empty
    if np.any(np.abs(got[~mask & live[..., None]]) > 1e-12):
        return ("a hidden key got weight; every hidden key must get exactly 0 (a hidden score of 0 is "
                "an ordinary score: e^0 = 1).")
    if np.any(empty) and not np.all(np.isfinite(got[empty])):
        return ("a row whose keys are all hidden gives NaN (0/0): exp(-inf - (-inf)). "
                "Subtract the row max only where the row has an allowed key, and divide only where "
                "the sum is positive; such a row gets all zeros.")
    if np.any(empty) and np.allclose(got[empty], 1.0 / scores.shape[-1]):
        return ("a fully hidden row got uniform weights: that is what -1e9 in place of -inf gives. "
                "The exercise asks for all zeros there: no key may be read, so none gets weight.")
    sums = got.sum(axis=-1)
    if np.any(live & (np.abs(sums) < 1e-12)) or not np.all(np.isfinite(got)):
        return ("a row with allowed keys came out all zero (or NaN): its scores lie far below the largest "
                "score of the whole array, so exp underflows. Subtract each row's own max "
                "(axis=-1, keepdims=True), not one max for everything.")
    if not np.allclose(sums[live], 1.0):
        return "the rows with an allowed key must sum to 1: normalise over the keys (the last axis)."
    return None


def check_masked_softmax(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(scores, mask)`` -> weights of scores' shape; mask (True = may look)
    broadcasts to scores; hidden keys get 0, a fully hidden row all zeros, never NaN."""
    with np.errstate(all="ignore"):
        return check_function(fn, masked_softmax, masked_softmax_cases(seed), name="your masked_softmax",
                              diagnose=_diagnose_masked_softmax, atol=1e-10,
                              praise="Hidden keys get 0, empty rows zeros, far-apart rows stay finite: "
                                     "a masked softmax that survives every row.")


# ---------------------------------------------------------------- exercise 2: batched cross-attention
def cross_attention_reference(y, x, W_q, W_k, W_v, lengths):
    """y (B, T, d_model), x (B, S, d_model), lengths (B,) -> output (B, T, d_v), weights (B, T, S).

    Queries from ``y``, keys and values from ``x``; keys at positions >= lengths[b] are hidden.
    """
    q = y @ W_q                                          # (B, T, d_model) @ (d_model, d_k) -> (B, T, d_k)
    k, v = x @ W_k, x @ W_v                              # (B, S, d_k), (B, S, d_v)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])   # (B, T, d_k) @ (B, d_k, S) -> (B, T, S)
    weights = masked_softmax(scores, padding_mask(np.asarray(lengths), x.shape[1]))
    return weights @ v, weights                          # (B, T, S) @ (B, S, d_v) -> (B, T, d_v)


def cross_attention_cases(seed=None) -> list:
    """(y, x, W_q, W_k, W_v, lengths) with T != S, d_k != d_v; the last case has an empty
    sentence (length 0: every key hidden)."""
    rng = np.random.default_rng(seed)
    cases = []
    for B, T, S, d_model, d_k, d_v, lengths in [(2, 3, 5, 6, 4, 3, [5, 2]), (3, 4, 7, 8, 6, 5, [7, 1, 4]),
                                                 (2, 2, 4, 5, 3, 2, [3, 0])]:
        cases.append((rng.normal(size=(B, T, d_model)), rng.normal(size=(B, S, d_model)),
                      rng.normal(size=(d_model, d_k)), rng.normal(size=(d_model, d_k)),
                      rng.normal(size=(d_model, d_v)), np.array(lengths)))
    return cases


def _diagnose_cross(got, want, case):
    y, x, W_q, W_k, W_v, lengths = case
    if not isinstance(got, tuple) or len(got) != 2:
        return None
    out, w = got
    B, T, S = w.shape
    real = np.arange(S)[None, None, :] < np.asarray(lengths)[:, None, None]   # (B, 1, S)
    real = np.broadcast_to(real, w.shape)
    for b in range(B):
        if lengths[b] == 0 and not np.all(np.isfinite(w[b])):
            return (f"sentence {b} has length 0, so every key is padding and your weights there are NaN "
                    f"(0/0). The exercise asks for all-zero weights there: your masked_softmax "
                    f"from exercise 1 gives them.")
    if not np.all(np.isfinite(w)):
        return "your weights contain NaN or inf in sentences that do have real tokens."
    leak = ~real & (np.abs(w) > 1e-12)
    if np.any(leak):
        b, i, j = (int(a) for a in np.argwhere(leak)[0])
        if np.allclose(w, cross_attention_reference(y, x, W_q, W_k, W_v, np.full(B, S))[1]):
            return "your weights ignore `lengths`: no key is hidden. Build the padding mask from the lengths."
        return (f"sentence {b} has {lengths[b]} real tokens, but query {i} gives key {j} weight {w[b, i, j]:.3g}; "
                f"padded keys (positions >= the length) must get exactly 0.")
    q, k = y @ W_q, x @ W_k
    unscaled = masked_softmax(q @ k.swapaxes(-1, -2), np.broadcast_to(real, w.shape))
    if np.allclose(w, unscaled):
        return "your weights are right except for the scale: divide the scores by sqrt(d_k)."
    sums = w.sum(axis=-1)
    live = np.asarray(lengths)[:, None] > 0
    if not np.allclose(sums[np.broadcast_to(live, sums.shape)], 1.0):
        return ("some rows of your weights do not sum to 1: softmax runs over the keys (the last axis), "
                "one row per query.")
    if np.allclose(w, want[1]):
        return ("your weights are right but the output is not: it is weights @ V, with V computed from x "
                "(the encoder).")
    return None


def check_cross_attention(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(y, x, W_q, W_k, W_v, lengths)`` -> ``(output, weights)``, batched
    cross-attention with the padded keys of each sentence hidden."""
    return check_function(fn, cross_attention_reference, cross_attention_cases(seed), name="your cross_attention",
                          diagnose=_diagnose_cross, atol=1e-8,
                          praise="Queries from y, keys and values from x, padding hidden: batched cross-attention.")


# ---------------------------------------------------------------- exercise 3: causal & padding
def _left_real(lengths, T):
    """(B, 1, T) bool: with left padding, sentence b's real tokens are the last lengths[b] positions."""
    return (np.arange(T)[None, :] >= T - np.asarray(lengths)[:, None])[:, None, :]


def decoder_mask_reference(lengths, T):
    """(B, T, T) bool for a LEFT-padded batch: query i may look at key j when j <= i and key j
    is one of the last lengths[b] positions (a real token)."""
    return causal_mask(T)[None] & _left_real(lengths, T)   # (1, T, T) & (B, 1, T)


def decoder_mask_cases(seed=None) -> list:
    rng = np.random.default_rng(seed)
    cases = [(np.array([4, 2]), 4)]
    for B, T in [(3, 6), (4, 5)]:
        lengths = rng.integers(1, T, size=B)
        lengths[0] = T                                   # one sentence without padding
        cases.append((lengths, T))
    return cases


def _diagnose_decoder_mask(got, want, case):
    lengths, T = case
    causal = causal_mask(T)[None]
    left = _left_real(lengths, T)
    right = padding_mask(np.asarray(lengths), T)         # (B, 1, T): real tokens first
    g = got.astype(bool) if np.all(np.isin(got, (0, 1))) else None
    if g is None:
        return "give a boolean mask (True/False, or 1/0)."
    if np.array_equal(g, ~np.asarray(want)):
        return "your mask is the opposite one: here True means 'may look'."
    if np.array_equal(g, np.broadcast_to(causal & right, g.shape)):
        return ("that is the mask for right padding (real tokens first); here the filler comes first: "
                "sentence b's real tokens are positions T - lengths[b] .. T - 1.")
    if np.array_equal(g, np.broadcast_to(causal, g.shape)):
        return "that is the causal mask alone; filler keys (the first T - lengths[b] positions) must be hidden too."
    if np.array_equal(g, np.broadcast_to(left, g.shape)):
        return "that is the padding mask alone; keys after the query (j > i) must be hidden too."
    if np.array_equal(g, np.broadcast_to(causal.swapaxes(-1, -2) & left, g.shape)):
        return "your triangle is the upper one: query i (row) may look at keys j <= i (columns up to the diagonal)."
    if np.array_equal(g, np.broadcast_to(causal & left.swapaxes(-1, -2), g.shape)):
        return "you hid filler queries (rows) instead of filler keys (columns)."
    return None


def check_decoder_mask(fn, seed=None) -> Feedback:
    """Exercise 3: ``fn(lengths, T)`` -> (B, T, T) bool for a left-padded batch, causal AND real key."""
    return check_function(fn, decoder_mask_reference, decoder_mask_cases(seed), name="your decoder_mask",
                          diagnose=_diagnose_decoder_mask, atol=0,
                          praise="Causal and left padding in one mask. Its filler queries' rows are all False: "
                                 "the fully masked rows of the last section.")


# ---------------------------------------------------------------- exercise 4
def key_padding_mask_reference(lengths, S):
    """(B, S) bool, torch's convention: True = padding key, ignored. Real tokens come first."""
    return np.arange(S)[None, :] >= np.asarray(lengths)[:, None]


def key_padding_mask_cases(seed=None) -> list:
    rng = np.random.default_rng(seed)
    cases = [(np.array(PAD_LENGTHS), PAD_S), (np.array([6, 0, 2]), 6)]   # one empty sentence
    lengths = rng.integers(0, 8, size=4)
    lengths[0] = 7                                        # one sentence without padding
    cases.append((lengths, 7))
    return cases


def _diagnose_key_padding_mask(got, want, case):
    lengths, S = case
    if got.ndim == 3 and got.shape[1] == 1 and got.shape[::2] == want.shape:
        return ("that has the book's query axis, (B, 1, S); torch's key_padding_mask is (B, S): one row "
                "per sentence, applied to every query.")
    if got.shape != want.shape:
        return None
    if not np.all(np.isin(got, (0, 1))):
        return "give a boolean mask (True/False)."
    g = got.astype(bool)
    if np.array_equal(g, ~want):
        return ("that is our masks' convention (True = may look). torch's key_padding_mask means the "
                "opposite: True = this key is padding, ignore it.")
    pos = np.arange(S)[None, :]
    lengths = np.asarray(lengths)[:, None]
    if np.array_equal(g, pos > lengths) or np.array_equal(g, pos >= lengths - 1):
        return ("one position off: positions count from 0, so a sentence of length n has real tokens "
                "0 .. n - 1 and its first padding key is position n.")
    return None


def check_key_padding_mask(fn, seed=None) -> Feedback:
    """Exercise 4: ``fn(lengths, S)`` -> the (B, S) boolean ``key_padding_mask`` that
    ``nn.MultiheadAttention`` needs for a right-padded batch (True = padding, ignored)."""
    cases = key_padding_mask_cases(seed)
    fb = check_function(fn, key_padding_mask_reference, cases, name="your key_padding_mask",
                        diagnose=_diagnose_key_padding_mask, atol=0, shape_hints=True,
                        praise="True marks padding, which nn.MultiheadAttention ignores: "
                               "the book's mask, inverted, without its query axis.")
    if fb.correct:
        got = np.asarray(fn(*cases[0]))
        if got.dtype != bool:
            return Feedback(False, f"The right positions, but of dtype {got.dtype}: give booleans "
                                   "(True/False). torch reads only a boolean mask this way; a float one is "
                                   "added to the scores, so 1.0 would hide nothing.")
    return fb
