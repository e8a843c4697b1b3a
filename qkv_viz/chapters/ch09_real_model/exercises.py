"""Chapter 9 exercises: two functions the reader writes (find the head that links two tokens;
every head's share of a real layer's output), the score spread at initialisation, and
BERT-large's attention size.

Every checker takes the reader's answer (``None`` until they give one) and returns a
:class:`~qkv_viz.chapters.feedback.Feedback` that says what is wrong, never the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.multihead import MultiHeadParams, split_heads
from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.feedback import Feedback, check_close, check_function, no_answer

BERT_LARGE = {"d_model": 1024, "n_heads": 16, "n_layers": 24}


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


# ---------------------------------------------------------------- 1. write find_head


def _find_head(weights, tokens, query, key) -> np.ndarray:
    i, j = list(tokens).index(query), list(tokens).index(key)
    w = np.asarray(weights)[:, :, i, j]  # (L, H, T, T) -> (L, H)
    return np.array(np.unravel_index(int(np.argmax(w)), w.shape))  # (layer, head)


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


def _diagnose_find_head(got, want, case) -> str | None:
    """A precise sentence for the common wrong answers."""
    weights, tokens, query, key = case
    L, H = weights.shape[:2]
    got = np.asarray(got, dtype=float)
    if got.shape == ():
        return "you returned one number (a flat index?); np.unravel_index turns it into (layer, head)."
    if got.shape != (2,):
        return f"return a pair (layer, head) of integers, got an array of shape {got.shape}."
    layer, head = (int(a) for a in got)
    if (head, layer) == tuple(int(a) for a in want):
        return f"you returned (head, layer) = {(layer, head)}; the order asked for is (layer, head)."
    if not (0 <= layer < L and 0 <= head < H):
        return f"({layer}, {head}) is not a head: layers run 0..{L - 1}, heads 0..{H - 1}."
    if (layer, head) == tuple(_find_head(weights.swapaxes(-1, -2), tokens, query, key)):
        return (f"you found the head where {key!r} looks at {query!r}. Rows are queries (the token that "
                f"looks), columns keys: use weights[:, :, i_query, j_key].")
    w = weights[:, :, tokens.index(query), tokens.index(key)]  # (L, H)
    if np.isclose(w[layer, head], w.min()):
        return f"({layer}, {head}) is the head with the LEAST weight from {query!r} to {key!r}."
    return (f"head ({layer}, {head}) puts {w[layer, head]:.3f} of {query!r}'s weight on {key!r}; "
            f"another head puts more.")


def check_find_head(fn, trace=None, seed=None) -> Feedback:
    """The reader's ``fn(weights, tokens, query, key) -> (layer, head)``, on the real ``trace``
    (if given) and on fresh random attention."""
    return check_function(fn, _find_head, find_head_cases(trace, seed), name="find_head",
                          diagnose=_diagnose_find_head, shape_hints=True, atol=0,
                          praise="It finds the right head on the real sentence and on random attention.")


# ---------------------------------------------------------------- 2. write head_outputs


def _head_outputs(x, p: MultiHeadParams, n_heads: int, scale: bool = True, torch_layout: bool = False,
                  bias: bool = True) -> np.ndarray:
    """Each head's part of the layer's output, sum_j w_ij v_j W_o^h: (H, T, d_model).

    The flags build the common mistakes for the diagnosis.
    """
    W_q, W_k, W_v = (W.T if torch_layout else W for W in (p.W_q, p.W_k, p.W_v))
    b_q, b_k, b_v = (b if bias else 0.0 for b in (p.b_q, p.b_k, p.b_v))
    q = split_heads(x @ W_q + b_q, n_heads)  # (T, d_model) @ (d_model, H*d_k) -> (H, T, d_k)
    k = split_heads(x @ W_k + b_k, n_heads)  # (H, T, d_k)
    v = split_heads(x @ W_v + b_v, n_heads)  # (H, T, d_v)
    d_k = q.shape[-1]
    scores = q @ k.swapaxes(-1, -2) / (np.sqrt(d_k) if scale else 1.0)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)
    W_o = p.W_o.reshape(n_heads, v.shape[-1], -1)  # (H*d_v, d_model) -> (H, d_v, d_model)
    return softmax(scores, axis=-1) @ v @ W_o  # (H, T, T) @ (H, T, d_v) @ (H, d_v, d_model) -> (H, T, d_model)


def head_outputs_cases(model=None, trace=None, seed=None) -> list:
    """Cases (x (T, d_model), params, n_heads): a real layer of ``model`` on ``trace`` if given,
    then small random layers with non-zero biases (T != d_k != H, so swapped axes show)."""
    rng = np.random.default_rng(seed)
    cases = []
    if model is not None and trace is not None:
        cases.append((np.asarray(trace.hidden_states[2]), model.layers[2].attn, model.config.n_heads))
    for T, H, d_k in [(5, 3, 4), (7, 2, 3)]:
        d = H * d_k
        W_q, W_k, W_v, W_o = rng.normal(0, 0.5, size=(4, d, d))
        b_q, b_k, b_v, b_o = rng.normal(0, 0.5, size=(4, d))
        cases.append((rng.normal(size=(T, d)), MultiHeadParams(W_q, W_k, W_v, W_o, b_q, b_k, b_v, b_o, H), H))
    return cases


def _diagnose_head_outputs(got, want, case) -> str | None:
    x, p, H = case
    got = np.asarray(got, dtype=float)
    if got.shape == want.shape[1:]:
        return ("you returned one (T, d_model) array: the heads already summed? Keep one slice per head, "
                "shape (H, T, d_model).")
    if got.shape == (want.shape[0], want.shape[1], want.shape[1]):
        return "you returned the attention weights (H, T, T); the question asks for what each head adds."
    if got.shape != want.shape:
        return None
    for shift, what in [(p.b_o, "b_o"), (p.b_o / H, "b_o / H")]:
        if shift is not None and np.allclose(got, want + shift, atol=1e-6):
            return (f"you added {what} to each head; b_o belongs to the layer: it is added once, to the sum "
                    "of the heads, not to any one head.")
    mistakes = [(dict(scale=False), "the scores were not divided by sqrt(d_k)."),
                (dict(torch_layout=True), "you transposed W_q, W_k, W_v: in the book's layout they are "
                                          "already (in, out), x @ W."),
                (dict(bias=False), "you left out b_q, b_k, b_v: the real model has biases on every projection.")]
    for flags, note in mistakes:
        if np.allclose(got, _head_outputs(x, p, H, **flags), atol=1e-6):
            return note
    return None


def check_head_outputs(fn, model=None, trace=None, seed=None) -> Feedback:
    """The reader's ``fn(x, p, n_heads) -> (H, T, d_model)``: each head's part of the attention
    output, on a real layer (if ``model`` and ``trace`` are given) and on random layers."""
    return check_function(fn, _head_outputs, head_outputs_cases(model, trace, seed), name="head_outputs",
                          diagnose=_diagnose_head_outputs, shape_hints=True, atol=1e-6,
                          praise="Every head's part is right: added up, with b_o, they are the layer's output.")


# ---------------------------------------------------------------- 3. spread at initialisation


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


# ---------------------------------------------------------------- 4. BERT-large


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
