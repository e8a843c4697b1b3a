"""Chapter 11's trained writer, its random layers, the published model configurations, and timing.

Everything numeric the chapter prints comes from here or from ``qkv_viz.core.kv_cache``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from qkv_viz.core.kv_cache import GQAParams, causal_self_attention, group_kv_heads, init_gqa_params, kv_cache_bytes
from qkv_viz.core.validate import as_array, as_rng, positive_int

SENTENCE = ("the", "cat", "sat", "on", "the", "mat")
D_MODEL, N_HEADS = 16, 4
SENTENCES = ("the cat sat on the mat .", "the dog sat on the rug .")
VOCAB = ("the", "cat", "dog", "sat", "on", "mat", "rug", ".")
PROMPT = ("the", "dog")


def trained_writer(steps: int = 300, seed: int = 3, d_model: int = 6, n_heads: int = 2, d_k: int = 4,
                   n_kv_heads: int | None = None):
    """The chapter's writer (its training cell does the same on the page): embeddings E (V, d_model)
    = (8, 6) and one causal attention layer of ``n_heads`` heads of width ``d_k`` (``GQAParams``),
    trained together by torch (Adam, lr 0.03, float64, every weight started at 0.3 times a seeded
    normal draw: the same weights every run) so that each
    token of SENTENCES predicts the next: logits = output @ E.T. From "the cat" it writes
    "the cat sat on the mat .", from "the dog" "the dog sat on the rug .".

    ``n_kv_heads`` (default ``n_heads``): train a grouped-query writer instead, W_k and W_v of
    ``n_kv_heads * d_k`` columns, each K/V head read by ``n_heads // n_kv_heads`` query heads."""
    import torch
    import torch.nn.functional as F

    ID = {w: i for i, w in enumerate(VOCAB)}
    ids = torch.tensor([[ID[w] for w in s.split()] for s in SENTENCES])  # (2, 7)
    torch.manual_seed(seed)
    n_kv = positive_int("n_kv_heads", n_heads if n_kv_heads is None else n_kv_heads)
    if n_heads % n_kv:
        raise ValueError(f"n_kv_heads must divide n_heads, got n_kv_heads={n_kv}, n_heads={n_heads}")
    V, D = len(VOCAB), n_heads * d_k
    new = lambda *shape: (0.3 * torch.randn(*shape, dtype=torch.float64)).requires_grad_()  # small start
    E = new(V, d_model)
    W = [new(d_model, D), new(d_model, n_kv * d_k), new(d_model, n_kv * d_k), new(D, d_model)]
    opt = torch.optim.Adam([E, *W], lr=0.03)
    for _ in range(positive_int("steps", steps)):
        x = E[ids]                                           # (2, 7, d_model)
        q, k, v = ((x @ W_).unflatten(-1, (-1, d_k)).transpose(1, 2) for W_ in W[:3])  # (2, H or H_kv, 7, d_k)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=n_kv < n_heads)  # (2, H, 7, d_k)
        logits = out.transpose(1, 2).flatten(2) @ W[3] @ E.T            # (2, 7, V)
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
        opt.zero_grad()
        loss.backward()
        opt.step()
    E, W_q, W_k, W_v, W_o = (w.detach().numpy().copy() for w in (E, *W))
    return E, GQAParams(W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=n_heads, n_kv_heads=n_kv)


def writer_loss(E, params: GQAParams) -> float:
    """The writer's training loss, in numpy: the mean cross-entropy of each next word of both SENTENCES,
    with logits = output @ E.T of the causal layer ``params`` (any number of K/V heads)."""
    E = as_array("E", E, ndim=2)
    ids = {w: i for i, w in enumerate(VOCAB)}
    losses = []
    for s in SENTENCES:
        tok = [ids[w] for w in s.split()]                          # (7,)
        logits = causal_self_attention(E[tok], params)[0] @ E.T    # (7, d_model) @ (d_model, V) -> (7, V)
        logits = logits - logits.max(axis=1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        losses += [-logp[t, tok[t + 1]] for t in range(len(tok) - 1)]
    return float(np.mean(losses))


def write(E, params: GQAParams, vocab, prompt, stop: str = ".", max_tokens: int = 10):
    """Generate greedily: tokens so far -> causal layer -> last output @ E.T -> argmax, appended,
    until ``stop`` or ``max_tokens``. Returns (words, weights (H, T, T), logits (T, V)); row t of
    logits is token t's output @ E.T (its choice of token t+1). The causal pass over the prefix
    equals the cached steps (the chapter checks it), so each row is what its step computed."""
    E = as_array("E", E, ndim=2)
    if len(vocab) != len(E):
        raise ValueError(f"E has {len(E)} rows but vocab has {len(vocab)} words")
    ids = {w: i for i, w in enumerate(vocab)}
    words = [str(w) for w in prompt]
    if not words or any(w not in ids for w in words):
        raise ValueError(f"prompt must be a non-empty list of words of vocab {list(vocab)}, got {list(prompt)}")
    while True:
        out, weights = causal_self_attention(E[[ids[w] for w in words]], params)  # (T, d_model), (H, T, T)
        logits = out @ E.T                                   # (T, d_model) @ (d_model, V) -> (T, V)
        if words[-1] == stop or len(words) >= max_tokens:
            return words, weights, logits
        words.append(vocab[int(np.argmax(logits[-1]))])


def toy_layer(d_model: int = D_MODEL, n_heads: int = N_HEADS, seed: int = 11):
    """The sentence's token vectors x (T, d_model) and a multi-head layer (``GQAParams``).

    The vectors are seeded random stand-ins for a trained model's hidden states: the
    chapter is about the bookkeeping of generation, which holds for any numbers.
    """
    rng = as_rng(seed)
    x = rng.normal(size=(len(SENTENCE), d_model))  # (T, d_model)
    return x, init_gqa_params(d_model, n_heads, seed=rng)


def shared_kv(params: GQAParams, n_kv_heads: int) -> GQAParams:
    """The same layer with ``n_kv_heads`` K/V heads: each group's W_k, W_v columns averaged."""
    H = params.n_heads
    return GQAParams(W_q=params.W_q, W_k=group_kv_heads(params.W_k, H, n_kv_heads),
                     W_v=group_kv_heads(params.W_v, H, n_kv_heads), W_o=params.W_o,
                     n_heads=H, n_kv_heads=n_kv_heads)


@dataclass(frozen=True)
class ModelConfig:
    """The attention numbers of a published model's config.json (Hugging Face Hub).

    n_layers = ``n_layer`` / ``num_hidden_layers``; n_heads = ``n_head`` /
    ``num_attention_heads``; n_kv_heads = ``num_key_value_heads`` (= n_heads when the
    file has none); head_dim = hidden size / n_heads; max_tokens = ``n_positions`` /
    ``max_position_embeddings``; params = the model's parameter count (from its model card:
    config.json has none).
    """

    name: str
    source: str
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    max_tokens: int
    params: float

    def cache_bytes(self, n_tokens: int = 1, bytes_per_number: int = 2) -> int:
        return kv_cache_bytes(self.n_layers, self.n_kv_heads, self.head_dim, n_tokens, bytes_per_number)


def cache_table(models, n_tokens: int = 4096, bytes_per_number: int = 2) -> list:
    """One row per model: name, K/V heads, bytes per token, and bytes for ``tokens`` = n_tokens or the
    model's own context if shorter (GPT-2 small stops at 1,024), with the weights' bytes beside."""
    rows = []
    for m in models:
        per_token, tokens = m.cache_bytes(1, bytes_per_number), min(positive_int("n_tokens", n_tokens), m.max_tokens)
        rows.append({"model": m.name, "layers": m.n_layers, "heads": m.n_heads, "kv_heads": m.n_kv_heads,
                     "head_dim": m.head_dim, "per_token": per_token, "tokens": tokens,
                     "context": m.cache_bytes(tokens, bytes_per_number),
                     "weights": m.params * bytes_per_number, "max_tokens": m.max_tokens})
    return rows


def _softmax_rows(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def uncached_step(x_prefix, W_q, W_k, W_v, W_o, n_heads: int) -> np.ndarray:
    """Token t's output with no cache: the whole prefix x_prefix (t+1, d_model) run again under the
    causal mask, the last row kept (plain numpy, the chapter's lines)."""
    n, d_model = x_prefix.shape
    d_k = W_q.shape[1] // n_heads
    q, k, v = (split(x_prefix @ W, n_heads) for W in (W_q, W_k, W_v))  # each (H, t+1, d_k)
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(d_k)         # (H, t+1, d_k) @ (H, d_k, t+1) -> (H, t+1, t+1)
    scores = np.where(np.tri(n, dtype=bool), scores, -np.inf)  # causal mask
    out = _softmax_rows(scores) @ v                         # (H, t+1, t+1) @ (H, t+1, d_k) -> (H, t+1, d_k)
    return out[:, -1].reshape(-1) @ W_o                     # (H d_k,) @ (H d_k, d_model) -> (d_model,)


def split(y, n_heads: int) -> np.ndarray:
    """(n, H d) -> (H, n, d)."""
    return y.reshape(y.shape[0], n_heads, -1).swapaxes(0, 1)


def cached_step(x_t, K_buf, V_buf, t: int, W_q, W_k, W_v, W_o, n_heads: int) -> np.ndarray:
    """Token t's output with the cache: K_buf, V_buf (H, T_max, d_k) hold tokens 0..t-1; row t is
    written here, then only the new query attends (plain numpy, no mask)."""
    d_k = W_q.shape[1] // n_heads
    q = (x_t @ W_q).reshape(n_heads, 1, d_k)             # (d_model,) @ (d_model, H d_k) -> (H, 1, d_k)
    K_buf[:, t] = (x_t @ W_k).reshape(n_heads, d_k)      # the cache grows by one row of K ...
    V_buf[:, t] = (x_t @ W_v).reshape(n_heads, d_k)      # ... and one row of V
    K, V = K_buf[:, :t + 1], V_buf[:, :t + 1]             # (H, t+1, d_k): tokens 0..t
    weights = _softmax_rows(q @ K.swapaxes(-1, -2) / np.sqrt(d_k))  # (H, 1, d_k) @ (H, d_k, t+1) -> (H, 1, t+1)
    return (weights @ V).reshape(-1) @ W_o               # (H, 1, d_k) -> (H d_k,) @ (H d_k, d_model)


def time_generation(T: int, d_model: int = 64, n_heads: int = 4, repeats: int = 3, seed: int = 0,
                    uncached_steps: int | None = None) -> dict:
    """Generate T tokens of one layer (plain numpy) with and without the cache; ms per token.

    Cached: all T steps, writing into preallocated (H, T, d_k) caches. Uncached: step t runs the
    whole prefix again; ``uncached_steps`` (default: all T) evenly spaced steps are timed and their
    mean is the ms per token (the cost grows smoothly with t, so a sample keeps the mean). Each is
    the median over ``repeats`` runs. Returns cached_ms_per_token, uncached_ms_per_token, ratio
    (uncached / cached) and max_diff, the largest difference between the two ways' outputs on the
    timed steps."""
    T, repeats = positive_int("T", T), positive_int("repeats", repeats)
    n = T if uncached_steps is None else min(T, positive_int("uncached_steps", uncached_steps))
    sample = np.unique(np.linspace(0, T - 1, n).round().astype(int))  # the timed uncached steps
    rng = as_rng(seed)
    x = rng.normal(size=(T, d_model))  # (T, d_model)
    p = init_gqa_params(d_model, n_heads, seed=rng)
    W = (p.W_q, p.W_k, p.W_v, p.W_o)
    cached, uncached = [], []
    for _ in range(repeats):
        K_buf, V_buf = np.zeros((n_heads, T, p.d_k)), np.zeros((n_heads, T, p.d_v))
        start = time.perf_counter()
        out_c = [cached_step(x[t], K_buf, V_buf, t, *W, n_heads) for t in range(T)]
        cached.append((time.perf_counter() - start) * 1e3 / T)
        start = time.perf_counter()
        out_u = [uncached_step(x[:t + 1], *W, n_heads) for t in sample]
        uncached.append((time.perf_counter() - start) * 1e3 / len(sample))
    a, b = float(np.median(cached)), float(np.median(uncached))
    return {"cached_ms_per_token": a, "uncached_ms_per_token": b, "ratio": b / a,
            "max_diff": float(np.abs(np.array(out_c)[sample] - np.array(out_u)).max())}
