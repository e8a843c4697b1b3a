"""Chapter 9 exercises: BERT-large's attention size, the score spread at initialisation,
and a function the reader writes to find the head that links two tokens.

Every checker takes the reader's answer (``None`` until they give one) and
returns a :class:`~qkv_viz.chapters.feedback.Feedback` that never reveals the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.feedback import Feedback, check_close, no_answer

BERT_LARGE = {"d_model": 1024, "n_heads": 16, "n_layers": 24}


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


# ---------------------------------------------------------------- 1. BERT-large


def check_bert_large_params(answer) -> Feedback:
    """Attention parameters (W_q, W_k, W_v, W_o and their biases) of ALL 24 layers of
    BERT-large: d_model = 1024, 16 heads."""
    d, L = BERT_LARGE["d_model"], BERT_LARGE["n_layers"]
    per_layer = 4 * d * d + 4 * d
    hint = ("one layer has four d_model x d_model matrices and four bias vectors of length d_model; "
            "the number of heads does not change the count. Then multiply by the layers.")
    if answer is None:
        return no_answer()
    if not _is_number(answer):
        return Feedback(False, f"Give one whole number. Hint: {hint}")
    if answer == L * 4 * d * d:
        return Feedback(False, "Close: you counted the matrices but not the biases. Hint: " + hint)
    if answer == per_layer:
        return Feedback(False, "That is one layer; the question asks for all of them. Hint: " + hint)
    if answer == L * 3 * (d * d + d):
        return Feedback(False, "You left out the output projection W_o. Hint: " + hint)
    return check_close(answer, L * per_layer, rtol=0, atol=0.5, hint=hint,
                       praise="24 layers of four 1024 x 1024 matrices and four biases: about 100.8 M.")


# ---------------------------------------------------------------- 2. spread at initialisation


def check_init_spread(answer) -> Feedback:
    """BERT-base (d_model = 768, 12 heads of d_k = 64), W_q and W_k drawn with std 0.02, no bias,
    inputs with unit-variance entries: the std of q . k / sqrt(d_k) along a row (2 decimals)?"""
    d_model, std = 768, 0.02
    expected = d_model * std ** 2
    hint = ("an entry of q sums d_model products x_m W_mi, so its variance is d_model * std^2; "
            "q . k sums d_k products of two such entries, then 1/sqrt(d_k) cancels the d_k.")
    if _is_number(answer) and abs(answer - 384 * std ** 2) < 0.005:
        return Feedback(False, "That is MiniLM's value (d_model = 384); BERT-base is wider. Hint: " + hint)
    if _is_number(answer) and abs(answer - 1.0) < 0.05:
        return Feedback(False, "1 is chapter 4's case, q and k with unit-variance entries; here the "
                               "projections are much smaller. Hint: " + hint)
    return check_close(answer, expected, rtol=0, atol=0.01, hint=hint,
                       praise="768 x 0.02^2 ≈ 0.31: at initialisation BERT-base's rows are close to uniform.")


# ---------------------------------------------------------------- 3. write find_head

RETURNS_NONE = ("No answer yet: your function returns None. Replace `return None` by your code "
                "(and end it with `return`), then run the cell again.")


def _reference(weights, tokens, query, key):
    i, j = list(tokens).index(query), list(tokens).index(key)
    w = weights[:, :, i, j]  # (L, H, T, T) -> (L, H)
    return tuple(int(a) for a in np.unravel_index(int(np.argmax(w)), w.shape))


def find_head_cases(trace=None, seed=None) -> list:
    """Cases (weights (L, H, T, T), tokens, query, key) for the checker.

    The real ``trace`` (if given) asks for "it" -> "animal"; then random
    attention over made-up tokens, with L != H and query != key, so that a
    swapped (head, layer) or a transposed (key -> query) lookup is caught.
    """
    rng = np.random.default_rng(seed)
    cases = []
    if trace is not None:
        cases.append((np.asarray(trace.weights), list(trace.tokens), "it", "animal"))
    words = ["[CLS]", "a", "fox", "saw", "the", "owl", "and", "it", "ran", "home", "[SEP]"]
    for L, H, T in [(3, 5, 7), (4, 2, 9), (2, 6, 11)]:
        tokens = words[:T]
        weights = softmax(3 * rng.normal(size=(L, H, T, T)), axis=-1)  # (L, H, T, T), rows sum to 1
        query, key = rng.choice(tokens[1:-1], size=2, replace=False)
        cases.append((weights, tokens, str(query), str(key)))
    return cases


def _explain(got, case) -> str | None:
    """A precise sentence for the common wrong answers, or None when ``got`` is right."""
    weights, tokens, query, key = case
    L, H = weights.shape[:2]
    want = _reference(*case)
    if isinstance(got, (int, np.integer)) and not isinstance(got, bool):
        return "you returned one number (a flat index?); np.unravel_index turns it into (layer, head)."
    try:
        layer, head = (int(a) for a in got)
    except (TypeError, ValueError):
        return f"return a pair (layer, head) of integers, got {got!r}."
    if (layer, head) == want:
        return None
    if (head, layer) == want:
        return f"you returned (head, layer) = {(layer, head)}; the order asked for is (layer, head)."
    if not (0 <= layer < L and 0 <= head < H):
        return f"({layer}, {head}) is not a head: layers run 0..{L - 1}, heads 0..{H - 1}."
    i, j = tokens.index(query), tokens.index(key)
    if (layer, head) == _reference(weights.swapaxes(-1, -2), tokens, query, key):
        return (f"you found the head where {key!r} looks at {query!r}. Rows are queries (the token that "
                f"looks), columns keys: use weights[:, :, i_query, j_key].")
    w = weights[:, :, i, j]  # (L, H)
    if np.isclose(w[layer, head], w.min()):
        return f"({layer}, {head}) is the head with the LEAST weight from {query!r} to {key!r}."
    return (f"head ({layer}, {head}) puts {w[layer, head]:.3f} of {query!r}'s weight on {key!r}; "
            f"another head puts more.")


def check_find_head(fn, trace=None, seed=None) -> Feedback:
    """The reader's ``fn(weights, tokens, query, key) -> (layer, head)``, on the real ``trace``
    (if given) and on fresh random attention."""
    if fn is None:
        return no_answer()
    if not callable(fn):
        return Feedback(False, f"find_head should be a function (def ...), got {type(fn).__name__}.")
    cases = find_head_cases(trace, seed)
    for n, case in enumerate(cases, 1):
        weights, tokens, query, key = case
        where = (f"case {n} of {len(cases)} (weights {weights.shape}, {query!r} -> {key!r}"
                 + (", the real sentence)" if trace is not None and n == 1 else ", random attention)"))
        try:
            got = fn(weights.copy(), list(tokens), query, key)
        except Exception as exc:  # the reader's code: any error is feedback
            return Feedback(False, f"On {where}, find_head raised {type(exc).__name__}: {exc}")
        if got is None:
            if n == 1:
                return Feedback(False, RETURNS_NONE, pending=True)
            return Feedback(False, f"On {where}, find_head returned None: did you forget `return`?")
        note = _explain(got, case)
        if note:
            return Feedback(False, f"On {where}: {note}")
    return Feedback(True, "It finds the right head on the real sentence and on random attention.")
