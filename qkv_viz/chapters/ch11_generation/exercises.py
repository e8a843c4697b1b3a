"""Chapter 11 exercises: the cached step, grouped-query attention by repeating K/V heads, a cache
size, and what a cache needs from the mask.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never the answer.
``None`` (or a function that still returns ``None``) is "no answer yet". The code checkers run
the reader's function on fresh random cases (seeded when ``seed`` is given) against the package.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.feedback import Feedback, check_function, no_answer
from qkv_viz.core.attention import causal_mask, scaled_dot_product_attention
from qkv_viz.core.kv_cache import grouped_query_attention, kv_cache_bytes

STUB = ("No answer yet: your function still returns None. Replace the None with your code, "
        "then run the cell again.")
# Exercise 3: Llama-2-70B's config.json (Hugging Face Hub, meta-llama/Llama-2-70b-hf):
# num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, hidden_size 8192 (head width 128).
LLAMA2_70B = {"n_layers": 80, "n_heads": 64, "n_kv_heads": 8, "head_dim": 128}
EX3_TOKENS, EX3_BYTES = 4096, 2
CHOICES = ("a", "b", "c")


def _stub(fn, case) -> bool:
    try:
        return callable(fn) and fn(*case) is None
    except Exception:  # noqa: BLE001 - check_function reports the reader's error precisely
        return False


def _quiet(fn, case):
    """fn(*case), or None when it raises (check_function then reports the error)."""
    try:
        with np.errstate(all="ignore"):
            return fn(*(np.array(a, copy=True) for a in case))
    except Exception:  # noqa: BLE001
        return None


# ---------------------------------------------------------------- exercise 1: the cached step
def cached_step_reference(q, k_new, v_new, K_cache, V_cache):
    """One head. q, k_new (d_k,), v_new (d_v,), K_cache (t, d_k), V_cache (t, d_v) ->
    (output (d_v,), K (t+1, d_k), V (t+1, d_v))."""
    K = np.concatenate([K_cache, k_new[None]])   # (t, d_k) -> (t+1, d_k)
    V = np.concatenate([V_cache, v_new[None]])   # (t, d_v) -> (t+1, d_v)
    out, _ = scaled_dot_product_attention(q[None], K, V)  # (1, d_k), (t+1, d_k), (t+1, d_v) -> (1, d_v)
    return out[0], K, V


def cached_step_cases(n: int = 5, seed=None):
    """(q, k_new, v_new, K_cache, V_cache): the first case has an empty cache (token 0)."""
    rng = np.random.default_rng(seed)
    cases = []
    for c in range(n):
        t, d_k, d_v = (0 if c == 0 else int(rng.integers(1, 9))), int(rng.integers(2, 9)), int(rng.integers(2, 7))
        cases.append((rng.normal(size=d_k), rng.normal(size=d_k), rng.normal(size=d_v),
                      rng.normal(size=(t, d_k)), rng.normal(size=(t, d_v))))
    return cases


def _diagnose_step(case, got) -> str | None:
    q, k_new, v_new, K_cache, V_cache = case
    if not isinstance(got, tuple) or len(got) != 3:
        return None
    try:
        K, V = np.asarray(got[1], dtype=float), np.asarray(got[2], dtype=float)
        out = np.asarray(got[0], dtype=float)
    except (TypeError, ValueError):
        return None
    t = len(K_cache)
    if K.shape == K_cache.shape or V.shape == V_cache.shape:
        return (f"the cache you return still holds {t} token(s): append this token's k_new and v_new, "
                f"one new row each, so the next step can read them.")
    if K.shape == (t + 1, len(q)) and np.allclose(K[0], k_new) and t > 0:
        return "k_new went in as the first row: the cache keeps tokens in order, so the new token's row goes last."
    if t > 0 and out.shape == v_new.shape:
        old, _ = scaled_dot_product_attention(q[None], K_cache, V_cache)
        if np.allclose(out, old[0]):
            return ("your output ignores the new token: its query must also meet its own key "
                    "(attend over the cache after appending k_new and v_new).")
        unscaled, _ = scaled_dot_product_attention(q[None], np.vstack([K_cache, k_new]),
                                                   np.vstack([V_cache, v_new]), scale=False)
        if np.allclose(out, unscaled[0]) and len(q) > 1:
            return f"the scores are not scaled: divide q . k by sqrt(d_k) = sqrt({len(q)})."
    return None


def _check_code(fn, cases, diagnose, describe, reference, name, praise) -> Feedback:
    """No answer / stub -> pending; then the chapter's precise diagnosis of each case (``describe``
    says which case it was); then ``check_function`` against ``reference``."""
    if fn is None or _stub(fn, cases[1]):
        return no_answer() if fn is None else Feedback(False, STUB, pending=True)
    for i, case in enumerate(cases if callable(fn) else []):
        note = diagnose(case, _quiet(fn, case))
        if note:
            return Feedback(False, f"On case {i + 1} of {len(cases)} ({describe(case)}): {note}")
    return check_function(fn, reference, cases, name=name, atol=1e-9, praise=praise)


def check_cached_step(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(q, k_new, v_new, K_cache, V_cache)`` -> ``(output, K, V)``: append the new
    token's key and value to the caches, then let its query attend over every cached token."""
    return _check_code(fn, cached_step_cases(seed=seed), _diagnose_step,
                       lambda case: f"a cache of {len(case[3])} token(s)", cached_step_reference,
                       "your cached step", "Append, then attend: one row of K and V more, and no mask needed.")


# ---------------------------------------------------------------- exercise 2: grouped-query attention
def gqa_reference(q, k, v):
    """q (H, T, d_k), k (H_kv, T, d_k), v (H_kv, T, d_v) -> output (H, T, d_v), causal."""
    return grouped_query_attention(q, k, v, mask=causal_mask(q.shape[1]))[0]


def gqa_cases(n: int = 5, seed=None):
    """(q, k, v) with H_kv < H on every case after the first (where H_kv = H)."""
    rng = np.random.default_rng(seed)
    cases = []
    for c, (H, H_kv) in enumerate([(4, 4), (4, 2), (8, 2), (6, 3), (4, 1)][:n]):
        T, d_k, d_v = int(rng.integers(3, 8)), int(rng.integers(2, 6)), int(rng.integers(2, 6))
        cases.append((rng.normal(size=(H, T, d_k)), rng.normal(size=(H_kv, T, d_k)), rng.normal(size=(H_kv, T, d_v))))
    return cases


def _diagnose_gqa(case, got) -> str | None:
    q, k, v = case
    H, T, H_kv = q.shape[0], q.shape[1], k.shape[0]
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return None
    if got.shape == (H_kv, T, v.shape[2]) and H_kv != H:
        return f"your output has {H_kv} heads (one per K/V head); it needs one per query head: {H}."
    if got.shape != (H, T, v.shape[2]):
        return None
    rep = H // H_kv
    tiled, _ = scaled_dot_product_attention(q, np.tile(k, (rep, 1, 1)), np.tile(v, (rep, 1, 1)), mask=causal_mask(T))
    if H_kv not in (1, H) and np.allclose(got, tiled):
        return (f"query head 1 read K/V head 1, but heads 0..{rep - 1} share K/V head 0: the copies of a "
                f"K/V head must sit next to each other (np.repeat along the head axis, not np.tile).")
    free, _ = scaled_dot_product_attention(q, np.repeat(k, rep, 0), np.repeat(v, rep, 0))
    if np.allclose(got, free):
        return "no causal mask: token 0 sees later tokens. Hide key j > query i (np.tril) before the softmax."
    return None


def check_gqa(fn, seed=None) -> Feedback:
    """Exercise 2: ``fn(q, k, v)`` -> output (H, T, d_v): causal attention where each group of
    H / H_kv query heads reads one K/V head (repeat the K/V heads, then ordinary attention)."""
    return _check_code(fn, gqa_cases(seed=seed), _diagnose_gqa,
                       lambda case: f"{case[0].shape[0]} query heads, {case[1].shape[0]} K/V heads",
                       gqa_reference, "your grouped-query attention",
                       "Each K/V head serves its group; with H_kv = H it is ordinary multi-head attention.")


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
    old tokens' keys and values are still right? "a" all layers', "b" only layer 1's, "c" none."""
    if answer is None:
        return no_answer()
    a = str(answer).strip().lower().strip("()")
    if a not in CHOICES:
        return Feedback(False, f"Answer with one of {CHOICES}.")
    if a == "b":
        return Feedback(True, "Layer 1 projects each token's own input vector, which the new token does not "
                              "touch. Without the causal mask every old token's layer-1 output now mixes in the "
                              "new token, so from layer 2 on its keys and values change: an encoder must run "
                              "the whole sequence again.")
    if a == "a":
        return Feedback(False, "An old token's layer-1 output is a weighted sum over the tokens it may "
                               "see. Without a causal mask, which tokens are those now?")
    return Feedback(False, "Layer 1's keys and values are x W_k and x W_v of each token's own input. "
                           "Does appending a token change an old token's input vector?")
