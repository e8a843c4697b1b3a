"""Chapter 11 exercises: a sliding-window cached step, a grouped-query cached step, a cache size,
and what a cache needs from the mask.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never the answer.
``None`` (or a function that still returns ``None``) is "no answer yet". The code checkers run
the reader's function on fresh random cases (seeded when ``seed`` is given) against the package.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_function, no_answer
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.kv_cache import grouped_query_attention, kv_cache_bytes

# Exercise 3: Llama-2-70B's config.json (Hugging Face Hub, meta-llama/Llama-2-70b-hf):
# num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, hidden_size 8192 (head width 128).
LLAMA2_70B = {"n_layers": 80, "n_heads": 64, "n_kv_heads": 8, "head_dim": 128}
EX3_TOKENS, EX3_BYTES = 4096, 2
CHOICES = ("a", "b", "c")


def _check_code(fn, cases, diagnose, describe, reference, name, praise) -> Feedback:
    """``check_function`` against ``reference``, with the chapter's precise diagnosis of a wrong
    answer (``diagnose(case, result)``; ``describe(case)`` says which kind of case it was)."""
    def note(got, want, case):
        found = diagnose(case, got)
        return f"({describe(case)}) {found}" if found else None
    return check_function(fn, reference, cases, name=name, atol=1e-9, praise=praise,
                          diagnose=note, shape_hints=True,
                          returns=("output", "K", "V"))


# ---------------------------------------------------------------- exercise 1: a sliding-window cache
def window_step_reference(q, k_new, v_new, K_cache, V_cache, window):
    """One head. q, k_new (d_k,), v_new (d_v,), K_cache (t, d_k), V_cache (t, d_v), t <= window ->
    (output (d_v,), K, V) with K, V the last min(t+1, window) rows after appending."""
    K = np.concatenate([K_cache, k_new[None]])[-int(window):]   # (t, d_k) -> (t+1, d_k) -> last window rows
    V = np.concatenate([V_cache, v_new[None]])[-int(window):]
    out, _ = scaled_dot_product_attention(q[None], K, V)  # (1, d_k), (S, d_k), (S, d_v) -> (1, d_v)
    return out[0], K, V


def window_step_cases(n: int = 6, seed=None):
    """(q, k_new, v_new, K_cache, V_cache, window): an empty cache first, then caches below and at
    the window (where the oldest row must leave)."""
    rng = np.random.default_rng(seed)
    cases = []
    for c in range(n):
        window = int(rng.integers(2, 6))
        t = 0 if c == 0 else (int(rng.integers(1, window)) if c == 1 else window)
        d_k, d_v = int(rng.integers(2, 7)), int(rng.integers(2, 6))
        cases.append((rng.normal(size=d_k), rng.normal(size=d_k), rng.normal(size=d_v),
                      rng.normal(size=(t, d_k)), rng.normal(size=(t, d_v)), window))
    return cases


def _as_float(got, i):
    try:
        return np.asarray(got[i], dtype=float)
    except (TypeError, ValueError, IndexError):
        return None


def _diagnose_window(case, got) -> str | None:
    q, k_new, v_new, K_cache, V_cache, window = case
    if not isinstance(got, tuple) or len(got) != 3:
        return None
    out, K = _as_float(got, 0), _as_float(got, 1)
    if out is None or K is None:
        return None
    t, keep = len(K_cache), min(len(K_cache) + 1, window)
    if K.shape == K_cache.shape and t < window:
        return f"the cache you return still holds {t} token(s): append this token's k_new and v_new first."
    if K.ndim == 2 and len(K) == t + 1 and t + 1 > window:
        return (f"your cache holds {t + 1} rows, but the window is {window}: drop the oldest row, "
                f"keeping the last {window} (the new token's included).")
    if K.ndim == 2 and len(K) == keep and keep > 1 and np.allclose(K[0], k_new):
        return "k_new went in as the first row: the cache keeps tokens in order, so the new row goes last."
    if K.ndim == 2 and len(K) == keep and t == window and np.allclose(K, np.vstack([K_cache, k_new])[:keep]):
        return "you dropped the new token's row: keep the LAST window rows, the oldest one leaves."
    if t > 0 and out.shape == v_new.shape:
        old, _ = scaled_dot_product_attention(q[None], K_cache[-window:], V_cache[-window:])
        if np.allclose(out, old[0]):
            return "your output ignores the new token: its query must also meet its own key (append, then attend)."
        if t + 1 > window:
            wide, _ = scaled_dot_product_attention(q[None], np.vstack([K_cache, k_new]), np.vstack([V_cache, v_new]))
            if np.allclose(out, wide[0]):
                return f"the output attends over all {t + 1} tokens: only the last {window} may be seen."
    return None


def check_window_step(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(q, k_new, v_new, K_cache, V_cache, window)`` -> ``(output, K, V)``: append the
    new token's key and value, keep the last ``window`` rows, let its query attend over them."""
    return _check_code(fn, window_step_cases(seed=seed), _diagnose_window,
                       lambda case: f"a cache of {len(case[3])} token(s), window {case[5]}", window_step_reference,
                       "your sliding-window step",
                       "Append, drop what left the window, attend: the cache never holds more than window rows.")


# ---------------------------------------------------------------- exercise 2: a grouped-query step
def gqa_step_reference(q, k_new, v_new, K_cache, V_cache):
    """q (H, d_k), k_new (H_kv, d_k), v_new (H_kv, d_v), K_cache (H_kv, t, d_k), V_cache (H_kv, t, d_v) ->
    (output (H, d_v), K (H_kv, t+1, d_k), V (H_kv, t+1, d_v))."""
    K = np.concatenate([K_cache, k_new[:, None]], axis=1)  # (H_kv, t, d_k) -> (H_kv, t+1, d_k)
    V = np.concatenate([V_cache, v_new[:, None]], axis=1)
    out, _ = grouped_query_attention(q[:, None], K, V)     # (H, 1, d_k) over (H_kv, t+1, .) -> (H, 1, d_v)
    return out[:, 0], K, V


def gqa_step_cases(n: int = 5, seed=None):
    """(q, k_new, v_new, K_cache, V_cache) with H_kv < H on every case after the first (H_kv = H);
    the first grouped case has an empty cache."""
    rng = np.random.default_rng(seed)
    cases = []
    for c, (H, H_kv) in enumerate([(4, 4), (4, 2), (8, 2), (6, 3), (4, 1)][:n]):
        t, d_k, d_v = (0 if c == 1 else int(rng.integers(1, 7))), int(rng.integers(2, 6)), int(rng.integers(2, 6))
        cases.append((rng.normal(size=(H, d_k)), rng.normal(size=(H_kv, d_k)), rng.normal(size=(H_kv, d_v)),
                      rng.normal(size=(H_kv, t, d_k)), rng.normal(size=(H_kv, t, d_v))))
    return cases


def _diagnose_gqa_step(case, got) -> str | None:
    q, k_new, v_new, K_cache, V_cache = case
    H, H_kv, t = q.shape[0], k_new.shape[0], K_cache.shape[1]
    if not isinstance(got, tuple) or len(got) != 3:
        return None
    out, K = _as_float(got, 0), _as_float(got, 1)
    if out is None or K is None:
        return None
    if K.shape == K_cache.shape:
        return f"the cache you return still holds {t} token(s): append k_new and v_new along the token axis (axis 1)."
    if K.shape == (H, t + 1, q.shape[1]) and H != H_kv:
        return f"your cache holds {H} heads: it keeps only the {H_kv} K/V heads; repeat them for the attention only."
    if out.shape == (H_kv, v_new.shape[1]) and H_kv != H:
        return f"your output has {H_kv} heads (one per K/V head); it needs one per query head: {H}."
    if out.shape != (H, v_new.shape[1]):
        return None
    rep = H // H_kv
    Kf, Vf = np.concatenate([K_cache, k_new[:, None]], 1), np.concatenate([V_cache, v_new[:, None]], 1)
    tiled, _ = scaled_dot_product_attention(q[:, None], np.tile(Kf, (rep, 1, 1)), np.tile(Vf, (rep, 1, 1)))
    if H_kv not in (1, H) and np.allclose(out, tiled[:, 0]):
        return (f"query head 1 read K/V head 1, but heads 0..{rep - 1} share K/V head 0: the copies of a "
                f"K/V head must sit next to each other (np.repeat along the head axis, not np.tile).")
    if t > 0:
        old, _ = grouped_query_attention(q[:, None], K_cache, V_cache)
        if np.allclose(out, old[:, 0]):
            return "your output ignores the new token: append its key and value first, then attend."
    return None


def check_gqa_step(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(q, k_new, v_new, K_cache, V_cache)`` -> ``(output, K, V)``: one generation step
    of grouped-query attention; the cache keeps H_kv heads, query head h reads K/V head h // (H / H_kv)."""
    return _check_code(fn, gqa_step_cases(seed=seed), _diagnose_gqa_step,
                       lambda case: f"{case[0].shape[0]} query heads, {case[1].shape[0]} K/V heads, "
                                    f"a cache of {case[3].shape[1]} token(s)",
                       gqa_step_reference, "your grouped-query step",
                       "The cache keeps H_kv heads; each is read by its group of query heads.")


# ---------------------------------------------------------------- exercise 3: a cache size
def check_llama2_70b_cache(answer) -> Feedback:
    """Exercise 3: bytes of Llama-2-70B's K/V cache for one sequence of 4,096 tokens, 16-bit numbers."""
    if answer is None:
        return no_answer()
    c = LLAMA2_70B
    right = kv_cache_bytes(c["n_layers"], c["n_kv_heads"], c["head_dim"], EX3_TOKENS, EX3_BYTES)
    if isinstance(answer, bool) or not isinstance(answer, (int, np.integer, float, np.floating)):
        return Feedback(False, f"Give a number of bytes (an int), got {type(answer).__name__}.")
    if answer == right:
        return Feedback(True, f"{right / 2 ** 30:.2f} GiB per 4,096-token sequence; with 64 K/V heads it would be 8 times more.")
    ratio = answer / right
    wrong = {8.0: "you used the 64 query heads; the cache holds only the K/V heads (num_key_value_heads).",
             0.5: "K and V are both cached: the formula starts with 2.",
             2.0: "16-bit numbers are 2 bytes each, not 4.",
             1 / 80: "every one of the 80 layers has its own cache."}
    for r, hint in wrong.items():
        if np.isclose(ratio, r):
            return Feedback(False, hint[0].upper() + hint[1:])
    if any(np.isclose(answer * f, right, rtol=0.08) for f in (2 ** 30, 1e9, 2 ** 20, 1e6)):
        return Feedback(False, "Give the answer in bytes, not in GB or MB.")
    return Feedback(False, "Hint: 2 (K and V) x layers x K/V heads x head width x tokens x bytes per number.")


# ---------------------------------------------------------------- exercise 4: the mask and the cache
def check_bidirectional_cache(answer) -> Feedback:
    """Exercise 4: a bidirectional encoder (BERT: no causal mask) gets one more token. Which of the
    old tokens' keys and values are still right? "a" all layers', "b" only layer 0's (layers numbered from 0), "c" none."""
    if answer is None:
        return no_answer()
    a = str(answer).strip().lower().strip("()")
    if a not in CHOICES:
        return Feedback(False, f"Answer with one of {CHOICES}.")
    if a == "b":
        return Feedback(True, "Layer 0 projects each token's own input vector, which the new token does not "
                              "touch. Without the causal mask every old token's layer-0 output now mixes in the "
                              "new token, so from layer 1 on its keys and values change: an encoder must run "
                              "the whole sequence again.")
    if a == "a":
        return Feedback(False, "An old token's layer-0 output is a weighted sum over the tokens it may "
                               "see. Without a causal mask, which tokens are those now?")
    return Feedback(False, "Layer 0's keys and values are x W_k and x W_v of each token's own input. "
                           "Does appending a token change an old token's input vector?")


# ---------------------------------------------------------------- exercise 5: train with one K/V head
EX5_SHAPES = {"E": (8, 6), "W_q": (6, 8), "W_k": (6, 4), "W_v": (6, 4), "W_o": (8, 6)}


def check_train_one_kv(fn) -> Feedback:
    """Exercise 5: the page's ``train`` with one K/V head. ``fn()`` -> ``(loss, (E, W_q, W_k, W_v, W_o))``.
    Checked by the shapes, by the loss recomputed from the returned weights (it must reach the floor
    ln 2 / 6) and by what the writer then writes from "the cat" and "the dog"."""
    from qkv_viz.chapters.feedback import NOT_IMPLEMENTED, as_array
    from qkv_viz.chapters.ch11_generation.generation import SENTENCES, VOCAB, write, writer_loss
    from qkv_viz.core.kv_cache import GQAParams
    if fn is None:
        return no_answer()
    try:
        got = fn()
    except NotImplementedError:
        return Feedback(False, NOT_IMPLEMENTED, pending=True)
    except Exception as exc:  # noqa: BLE001 - the reader's code
        return Feedback(False, f"train_one_kv() raised {type(exc).__name__}: {exc}")
    if got is None:
        return Feedback(False, NOT_IMPLEMENTED, pending=True)
    try:
        loss, weights = got
        loss = float(np.asarray(as_array(loss)[0]).reshape(()))
        arrays = [np.asarray(as_array(w)[0], dtype=float) for w in weights]
    except Exception:  # noqa: BLE001 - any other shape of answer
        return Feedback(False, "Return what train() returns: the loss (a number) and the five weights, "
                               "loss, (E, W_q, W_k, W_v, W_o).")
    if len(arrays) != 5:
        return Feedback(False, f"Return five weights, (E, W_q, W_k, W_v, W_o); got {len(arrays)}.")
    for (name, shape), a in zip(EX5_SHAPES.items(), arrays):
        if a.shape != shape:
            if name in ("W_k", "W_v") and a.shape == (6, 8):
                return Feedback(False, f"{name} is still (6, 8), two heads wide. One K/V head has d_k = 4 "
                                       f"columns: weight(d_model, d_k).")
            return Feedback(False, f"{name} has shape {a.shape}; in the one-K/V-head writer it is {shape}.")
    E, W_q, W_k, W_v, W_o = arrays
    params = GQAParams(W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=2, n_kv_heads=1)
    true_loss, floor = writer_loss(E, params), float(np.log(2) / 6)
    if not np.isfinite(true_loss) or true_loss > floor + 0.01:
        return Feedback(False, f"These weights' loss is {true_loss:.3f}, above the floor ln 2 / 6 = {floor:.3f}. "
                               "Are k and v split into one head of d_k (to_heads(..., n_heads=1)), does "
                               "scaled_dot_product_attention get enable_gqa=True, and did every step run?")
    if abs(loss - true_loss) > 0.01:
        return Feedback(False, f"The loss you return ({loss:.3f}) is not the returned weights' loss "
                               f"({true_loss:.3f}): return the last step's loss with the trained weights.")
    for s in SENTENCES:
        start = s.split()[:2]
        words = write(E, params, VOCAB, start)[0]
        if words != s.split():
            return Feedback(False, f"From {' '.join(start)!r} the writer writes {' '.join(words)!r}, "
                                   f"not {s!r}.")
    return Feedback(True, f"Loss {true_loss:.3f}, at the floor, with W_k and W_v (6, 4): half the cache, "
                          "both query heads reading one K/V head, and the writer writes both sentences.")
