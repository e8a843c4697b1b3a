"""Our own numpy forward pass through a real BERT encoder, using the book's attention.

Per layer (post-LayerNorm BERT):
    A = multi_head_attention(X, X, W_q, W_k, W_v, W_o)        # the book's code
    X = LayerNorm(X + A)
    X = LayerNorm(X + GELU(X W_1 + b_1) W_2 + b_2)
The input of layer l is ``hidden_states[l]``; ``hidden_states[0]`` is the
embedding output LayerNorm(word + position + token-type embedding).
"""
from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass

import numpy as np

try:  # optional (the ``real`` extra): one BLAS thread for the small matrices of one sentence
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None

from qkv_viz.core.diagnostics import effective_tokens, entropy, score_std
from qkv_viz.core.multihead import multi_head_attention, split_heads
from qkv_viz.core.projections import project
from qkv_viz.bridges.real_model import LayerParams, RealModel

# Abramowitz & Stegun 7.1.26: erf to 1.5e-7 absolute error, numpy only.
_ERF_P = 0.3275911
_ERF_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x) -> np.ndarray:
    """The error function, elementwise, to about 1.5e-7 (numpy has no erf)."""
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    t = 1.0 / (1.0 + _ERF_P * z)
    poly = t * (_ERF_A[0] + t * (_ERF_A[1] + t * (_ERF_A[2] + t * (_ERF_A[3] + t * _ERF_A[4]))))
    return np.sign(x) * (1.0 - poly * np.exp(-z * z))


def gelu(x, approximate: bool = False) -> np.ndarray:
    """GELU: x * Phi(x) (BERT's "gelu"); ``approximate=True`` gives the tanh form ("gelu_new")."""
    x = np.asarray(x, dtype=np.float64)
    if approximate:
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))


def layer_norm(x, gamma, beta, eps: float) -> np.ndarray:
    """Normalize each row of x (..., d) to mean 0, variance 1, then scale by gamma and shift by beta."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., d) -> (..., 1)
    var = x.var(axis=-1, keepdims=True)  # (..., 1), biased like torch
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def one_blas_thread(fn):
    """Run ``fn`` with numpy's BLAS on one thread, then restore the previous setting.

    A sentence gives matrices of a few dozen rows: a second BLAS thread has no
    work to share, and on a busy machine waiting for it costs more than the
    product itself (measured: a forward pass 5 times slower with two threads).
    Without ``threadpoolctl`` nothing changes.
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        limit = threadpool_limits(1, user_api="blas") if threadpool_limits else contextlib.nullcontext()
        with limit:
            return fn(*args, **kwargs)
    return wrapper


@dataclass
class Trace:
    """Everything one forward pass produced for one sentence.

    tokens: T strings; ids: (T,); hidden_states: (L+1, T, d_model), entry l is
    the input of layer l; weights: (L, H, T, T) attention probabilities.
    """

    tokens: tuple
    ids: np.ndarray
    hidden_states: np.ndarray
    weights: np.ndarray


def embed(model: RealModel, ids) -> np.ndarray:
    """Embedding output for token ids (T,): LayerNorm(word + position + type 0) -> (T, d_model)."""
    ids = np.asarray(ids)
    T = ids.shape[0]
    x = model.word_emb[ids].astype(np.float64)  # (T, d_model)
    x = x + model.pos_emb[:T] + model.type_emb[0]  # (T, d_model) + (T, d_model) + (d_model,)
    return layer_norm(x, *model.emb_ln, model.config.eps)


def encoder_layer(layer: LayerParams, x, n_heads: int, eps: float, approximate: bool = False):
    """One post-LN encoder layer. x (T, d_model) -> (out (T, d_model), weights (H, T, T))."""
    attn_out, weights = multi_head_attention(x, x, layer.attn, n_heads)  # (T, d), (H, T, T)
    x = layer_norm(x + attn_out, *layer.ln1, eps)
    hidden = gelu(project(x, layer.W_1, layer.b_1, name="W_1"), approximate)  # (T, d) @ (d, d_ff) -> (T, d_ff)
    ffn = project(hidden, layer.W_2, layer.b_2, name="W_2")  # (T, d_ff) @ (d_ff, d) -> (T, d)
    return layer_norm(x + ffn, *layer.ln2, eps), weights


@one_blas_thread
def run(model: RealModel, sentence: str) -> Trace:
    """Tokenize ``sentence`` and run every layer; ValueError for an empty or too long sentence."""
    enc = model.encode(sentence)
    c = model.config
    approximate = c.act != "gelu"
    x = embed(model, enc.ids)
    states, weights = [x], []
    for layer in model.layers:
        x, layer_weights = encoder_layer(layer, x, c.n_heads, c.eps, approximate)  # (T, d), (H, T, T)
        states.append(x)
        weights.append(layer_weights)
    return Trace(tokens=enc.tokens, ids=enc.ids, hidden_states=np.stack(states),
                 weights=np.stack(weights))  # (L+1, T, d), (L, H, T, T)


def _layer_index(model: RealModel, layer: int) -> int:
    L = model.config.n_layers
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)) or not 0 <= layer < L:
        raise ValueError(f"layer must be an integer in 0..{L - 1}, got {layer!r}")
    return int(layer)


@one_blas_thread
def layer_qk(model: RealModel, trace: Trace, layer: int):
    """Per-head queries and keys of ``layer`` for the traced sentence: q, k each (H, T, d_k)."""
    layer = _layer_index(model, layer)
    p, x = model.layers[layer].attn, trace.hidden_states[layer]  # parameters; x (T, d_model)
    H = model.config.n_heads
    q = split_heads(project(x, p.W_q, p.b_q, name="W_q"), H)  # (T, H*d_k) -> (H, T, d_k)
    k = split_heads(project(x, p.W_k, p.b_k, name="W_k"), H)  # (T, H*d_k) -> (H, T, d_k)
    return q, k


def raw_scores(model: RealModel, trace: Trace, layer: int) -> np.ndarray:
    """q . k of every query/key pair of ``layer``, NOT divided by sqrt(d_k): (H, T, T)."""
    q, k = layer_qk(model, trace, layer)
    return q @ k.swapaxes(-1, -2)  # (H, T, d_k) @ (H, d_k, T) -> (H, T, T)


def head_sharpness(trace: Trace) -> dict:
    """Mean over queries of each head's entropy (nats) and effective tokens: (L, H) arrays."""
    return {"entropy": entropy(trace.weights).mean(axis=-1),  # (L, H, T) -> (L, H)
            "effective_tokens": effective_tokens(trace.weights).mean(axis=-1)}


def score_spread(model: RealModel, trace: Trace) -> dict:
    """Std of q . k along each query row, averaged over rows, per layer and head.

    Returns ``raw`` and ``scaled`` (divided by sqrt(d_k)), each (L, H).
    """
    raw = np.stack([score_std(raw_scores(model, trace, l)).mean(axis=-1)  # (H, T) -> (H,)
                    for l in range(model.config.n_layers)])  # (L, H)
    return {"raw": raw, "scaled": raw / np.sqrt(model.config.d_k)}


def head_patterns(trace: Trace) -> dict:
    """Where each head's weight goes, averaged over queries: (L, H) arrays.

    ``special``: on [CLS] and [SEP] (first and last token); ``previous`` /
    ``self`` / ``next``: on the key one before / at / one after the query.
    """
    weights = trace.weights  # (L, H, T, T)
    T = weights.shape[-1]
    return {"special": (weights[..., 0] + weights[..., -1]).mean(axis=-1),  # (L, H, T) -> (L, H)
            "previous": np.diagonal(weights, offset=-1, axis1=-2, axis2=-1).sum(axis=-1) / T,
            "self": np.diagonal(weights, axis1=-2, axis2=-1).mean(axis=-1),
            "next": np.diagonal(weights, offset=1, axis1=-2, axis2=-1).sum(axis=-1) / T}


def token_index(trace: Trace, token: str) -> int:
    """Position of the first token equal to ``token`` (case-insensitive); ValueError listing the tokens."""
    wanted = str(token).lower()
    for i, t in enumerate(trace.tokens):
        if t.lower() == wanted:
            return i
    raise ValueError(f"token {token!r} is not in the sentence; its tokens are {list(trace.tokens)}")


def attention_from_to(trace: Trace, query: str, key: str) -> np.ndarray:
    """Weight that token ``query`` puts on token ``key`` in every head: (L, H).

    Uses the first occurrence of each token (see :func:`token_index`).
    """
    i, j = token_index(trace, query), token_index(trace, key)
    return trace.weights[:, :, i, j]  # (L, H, T, T) -> (L, H)


def strongest_head(trace: Trace, query: str, key: str) -> tuple:
    """(layer, head) whose weight from ``query`` to ``key`` is largest, and that weight."""
    weights = attention_from_to(trace, query, key)  # (L, H)
    layer, head = np.unravel_index(int(np.argmax(weights)), weights.shape)
    return (int(layer), int(head)), float(weights[layer, head])


@one_blas_thread
def value_output_norms(model: RealModel, trace: Trace) -> np.ndarray:
    """||v_j W_o^h||: how much token j can change the output through head h, for every layer.

    v_j = x_j W_v + b_v is token j's value; head h's slice (d_k,) goes through
    its rows of W_o, (d_k, d_model). A head's output for query i is
    sum_j w_ij (v_j^h W_o^h), so a token with a small norm here changes the
    output little however much weight it gets. Returns (L, H, T).
    """
    H = model.config.n_heads
    norms = []
    for layer, x in zip(model.layers, trace.hidden_states[:-1]):  # x (T, d_model)
        p = layer.attn
        v = split_heads(project(x, p.W_v, p.b_v, name="W_v"), H)  # (T, H*d_v) -> (H, T, d_v)
        W_o = p.W_o.reshape(H, -1, p.W_o.shape[-1])  # (H*d_v, d_model) -> (H, d_v, d_model)
        moved = v @ W_o  # (H, T, d_v) @ (H, d_v, d_model) -> (H, T, d_model)
        norms.append(np.linalg.norm(moved, axis=-1))  # (H, T)
    return np.stack(norms)  # (L, H, T)


def transformers_outputs(model_dir, ids) -> dict:
    """Hugging Face ``transformers``' BertModel on token ids (T,), from local files only.

    ``model_dir`` is a local model directory (e.g. ``bundled_model_dir()``);
    nothing is downloaded (``local_files_only=True``, ``HF_HUB_OFFLINE`` set
    only while transformers loads). Returns ``weights`` (L, H, T, T) and
    ``hidden_states`` (L+1, T, d_model), converted from float32 to float64,
    and ``version``. ImportError when torch or transformers is missing.
    """
    old = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        import torch
        import transformers

        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
        module = transformers.BertModel.from_pretrained(str(model_dir), local_files_only=True,
                                                        attn_implementation="eager").eval()
    finally:
        if old is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = old
    with torch.no_grad():
        out = module(torch.tensor(np.asarray(ids))[None], output_attentions=True,  # (1, T)
                     output_hidden_states=True)
    return {"weights": np.stack([a[0].double().numpy() for a in out.attentions]),  # (L, H, T, T)
            "hidden_states": np.stack([h[0].double().numpy() for h in out.hidden_states]),  # (L+1, T, d)
            "version": transformers.__version__}


def compare_with_transformers(model_dir, trace: Trace) -> dict:
    """Run Hugging Face ``transformers``' BertModel on ``trace.ids`` from local files only.

    See :func:`transformers_outputs`. Returns ``max_abs_weights`` (L,), the
    largest |ours - theirs| of the attention probabilities in each layer,
    ``max_abs_hidden`` (L+1,) for the hidden states, and ``version``.
    ImportError when torch or transformers is missing.
    """
    theirs = transformers_outputs(model_dir, trace.ids)
    return compare_outputs(theirs, trace)


def compare_outputs(theirs: dict, trace: Trace) -> dict:
    """Largest |ours - theirs| per layer for ``theirs`` from :func:`transformers_outputs`."""
    theirs_weights, theirs_hidden = theirs["weights"], theirs["hidden_states"]
    if theirs_weights.shape != trace.weights.shape:
        raise ValueError(f"transformers gave attention of shape {theirs_weights.shape}, ours is "
                         f"{trace.weights.shape}: is model_dir the model the trace came from?")
    return {"max_abs_weights": np.abs(theirs_weights - trace.weights).max(axis=(1, 2, 3)),  # (L,)
            "max_abs_hidden": np.abs(theirs_hidden - trace.hidden_states).max(axis=(1, 2)),  # (L+1,)
            "version": theirs["version"]}
