"""Chapter 9 exercises: two functions the reader writes (the head that moves the most output
from one token into another; every head's share of a real layer's output).

Every checker takes the reader's answer (``None`` until they give one) and returns a
:class:`~qkv_viz.chapters.feedback.Feedback` that says what is wrong, never the answer.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.core.multihead import MultiHeadParams, split_heads
from qkv_viz.core.softmax import softmax
from qkv_viz.chapters.feedback import Feedback, check_function

# ---------------------------------------------------------------- 1. write moving_head


def _norms(values, W_o) -> np.ndarray:
    """||v_j W_o^h|| for every layer, head, token: values (L, H, T, d_v), W_o (L, H*d_v, d_model) -> (L, H, T)."""
    values, W_o = np.asarray(values), np.asarray(W_o)
    L, H, T, d_v = values.shape
    W_o = W_o.reshape(L, H, d_v, -1)  # (L, H*d_v, d_model) -> (L, H, d_v, d_model)
    return np.linalg.norm(values @ W_o, axis=-1)  # (L, H, T, d_v) @ (L, H, d_v, d_model) -> (L, H, T)


def _moving_head(weights, values, W_o, tokens, query, key) -> np.ndarray:
    i, j = list(tokens).index(query), list(tokens).index(key)
    moved = np.asarray(weights)[:, :, i, j] * _norms(values, W_o)[:, :, j]  # (L, H): w_ij ||v_j W_o^h||
    return np.array(np.unravel_index(int(np.argmax(moved)), moved.shape))  # (layer, head)


def moving_head_cases(model=None, trace=None, seed=None) -> list:
    """Cases (weights (L, H, T, T), values (L, H, T, d_v), W_o (L, H*d_v, d_model), tokens, query,
    key) for the checker.

    The real ``trace`` (if given, with its ``model``) asks for "it" -> "animal"; then random
    attention, values and W_o over made-up tokens, with L != H and query != key, drawn until the
    right head and each common mistake's head differ (so the values, W_o and the key's all matter).
    """
    rng = np.random.default_rng(seed)
    cases = []
    if trace is not None and model is not None:
        H = model.config.n_heads
        values = np.stack([split_heads(x @ layer.attn.W_v + layer.attn.b_v, H)  # (T, d_model) -> (H, T, d_v)
                           for layer, x in zip(model.layers, trace.hidden_states)])
        W_o = np.stack([layer.attn.W_o for layer in model.layers])  # (L, H*d_v, d_model)
        cases.append((np.asarray(trace.weights), values, W_o, list(trace.tokens), "it", "animal"))
    words = ["[CLS]", "a", "fox", "saw", "the", "owl", "and", "it", "ran", "home", "[SEP]"]
    for L, H, T, d_v, d_model in [(3, 5, 7, 2, 6), (4, 2, 9, 3, 5), (2, 6, 11, 2, 8)]:
        tokens = words[:T]
        query, key = (str(t) for t in rng.choice(tokens[1:-1], size=2, replace=False))
        i, j = tokens.index(query), tokens.index(key)
        while True:
            weights = softmax(3 * rng.normal(size=(L, H, T, T)), axis=-1)  # (L, H, T, T), rows sum to 1
            values = rng.normal(size=(L, H, T, d_v)) * rng.uniform(0.2, 3.0, size=(L, H, T, 1))
            W_o = rng.normal(size=(L, H * d_v, d_model)) * rng.uniform(0.2, 3.0, size=(L, H * d_v, 1))
            norms, w = _norms(values, W_o), weights[:, :, i, j]
            wrong = [w, w * norms[:, :, i], weights[:, :, j, i] * norms[:, :, i],
                     w * np.linalg.norm(values, axis=-1)[:, :, j]]
            picks = [int(np.argmax(a)) for a in [w * norms[:, :, j], *wrong]]
            if len(set(picks)) == len(picks):  # right and each mistake name different heads
                break
        cases.append((weights, values, W_o, tokens, query, key))
    return cases


def _diagnose_moving_head(got, want, case) -> str | None:
    """A precise sentence for the common wrong answers."""
    weights, values, W_o, tokens, query, key = case
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
    i, j = tokens.index(query), tokens.index(key)
    norms = _norms(values, W_o)
    w = weights[:, :, i, j]  # (L, H)
    argmax = lambda a: tuple(int(n) for n in np.unravel_index(int(np.argmax(a)), a.shape))
    if (layer, head) == argmax(w):
        return (f"({layer}, {head}) is the head with the most WEIGHT from {query!r} to {key!r}; what it "
                f"moves is that weight times the length of {key!r}'s value after W_o, ||v_j W_o^h||.")
    if (layer, head) == argmax(w * np.linalg.norm(values, axis=-1)[:, :, j]):
        return ("you used the length of v_j alone; what reaches the output is v_j W_o^h, the value "
                "through head h's d_v rows of W_o (W_o[l].reshape(H, d_v, d_model)[h]).")
    if (layer, head) == argmax(w * norms[:, :, i]):
        return (f"you multiplied by the length of {query!r}'s value; what is moved is the KEY's value "
                f"(the token looked at), token j_key.")
    if (layer, head) == argmax(weights[:, :, j, i] * norms[:, :, i]):
        return (f"you found what {key!r} takes from {query!r}. Rows are queries (the token that "
                f"looks), columns keys: use weights[:, :, i_query, j_key].")
    moved = w * norms[:, :, j]
    return (f"head ({layer}, {head}) moves {moved[layer, head]:.3f} from {key!r} into {query!r}'s "
            f"output; another head moves more.")


def check_moving_head(fn, model=None, trace=None, seed=None) -> Feedback:
    """The reader's ``fn(weights, values, W_o, tokens, query, key) -> (layer, head)``, on the real
    ``trace`` (if ``model`` and ``trace`` are given) and on fresh random attention."""
    return check_function(fn, _moving_head, moving_head_cases(model, trace, seed), name="moving_head",
                          diagnose=_diagnose_moving_head, shape_hints=True, atol=0,
                          praise="It finds the head that moves the most, on the real sentence and on "
                                 "random attention.")


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
