"""Chapter 7 exercises: each worked solution passes its checker; each placeholder is
"no answer yet"; typical mistakes get a message that names them, never the answer."""
import numpy as np
import pytest
import torch

from qkv_viz import causal_mask, masked_softmax, padding_mask
from qkv_viz.chapters.ch07_masks import exercises as ch07
from qkv_viz.chapters.ch07_masks import solutions as sol


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_function_solutions_pass(seed):
    for check, fn in [(ch07.check_masked_softmax, sol.masked_softmax),
                      (ch07.check_cross_attention, sol.cross_attention),
                      (ch07.check_decoder_mask, sol.decoder_mask),
                      (ch07.check_key_padding_mask, sol.key_padding_mask)]:
        fb = check(fn, seed=seed)
        assert fb.correct, fb.message


@pytest.mark.parametrize("check", [ch07.check_masked_softmax, ch07.check_cross_attention,
                                   ch07.check_decoder_mask, ch07.check_key_padding_mask])
def test_placeholder_is_pending(check):
    fb = check(None)
    assert not fb.correct and fb.pending


def test_stub_returning_none_is_not_right():
    assert not ch07.check_masked_softmax(lambda *a: None)
    assert not ch07.check_cross_attention(lambda *a: None)
    assert not ch07.check_decoder_mask(lambda *a: None)
    assert not ch07.check_key_padding_mask(lambda *a: None)


# ---------------------------------------------------------------- exercise 1's typical mistakes
def _ms_inf(scores, mask):                       # -inf then the plain softmax: NaN in an empty row
    filled = np.where(mask, scores, -np.inf)
    e = np.exp(filled - filled.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _ms_1e9(scores, mask):                       # the Annotated Transformer's -1e9: uniform empty rows
    filled = np.where(mask, scores, -1e9)
    e = np.exp(filled - filled.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _ms_global_max(scores, mask):                # NaN-free, but one max for the whole array
    filled = np.where(mask, scores, -np.inf)
    m = filled.max()
    e = np.exp(filled - (m if np.isfinite(m) else 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _ms_zero_fill(scores, mask):                 # hidden scores set to 0 instead of -inf
    s = np.where(mask, scores, 0.0)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("fn,words", [(_ms_inf, "NaN (0/0)"), (_ms_1e9, "-1e9"),
                                      (_ms_global_max, "each row's own max"), (_ms_zero_fill, "hidden key")])
def test_masked_softmax_mistakes_are_named(fn, words):
    with np.errstate(all="ignore"):
        fb = ch07.check_masked_softmax(fn, seed=0)
    assert not fb.correct and words in fb.message, fb.message


def test_masked_softmax_cases_hold_an_empty_row_and_a_row_far_below_the_max():
    cases = ch07.masked_softmax_cases(seed=0)
    assert any((~np.broadcast_to(m, s.shape).any(axis=-1)).any() for s, m in cases)
    s, m = cases[-1]
    assert s.max() - s[1].max() > 700          # exp(row 1 - global max) underflows to 0 in float64
    assert np.exp(s[1].max() - s.max()) == 0.0



def _no_mask(y, x, W_q, W_k, W_v, lengths):
    return sol.cross_attention(y, x, W_q, W_k, W_v, np.full(len(lengths), x.shape[1]))


def _naive_inf(y, x, W_q, W_k, W_v, lengths):  # -inf then softmax: NaN for an empty sentence
    q, k, v = y @ W_q, x @ W_k, x @ W_v
    s = q @ k.swapaxes(-1, -2) / np.sqrt(q.shape[-1])
    real = (np.arange(x.shape[1])[None, :] < lengths[:, None])[:, None, :]
    s = np.where(real, s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ v, w


def _unscaled(y, x, W_q, W_k, W_v, lengths):
    q = y @ W_q * np.sqrt(W_q.shape[1])          # undoes the 1/sqrt(d_k)
    return sol.cross_attention(q @ np.linalg.pinv(W_q), x, W_q, W_k, W_v, lengths)


def _wrong_output(y, x, W_q, W_k, W_v, lengths):
    out, w = sol.cross_attention(y, x, W_q, W_k, W_v, lengths)
    return w @ (x @ W_k)[..., : W_v.shape[1]], w  # mixes keys instead of values


def _columns_sum_to_one(y, x, W_q, W_k, W_v, lengths):
    out, w = sol.cross_attention(y, x, W_q, W_k, W_v, lengths)
    s = (y @ W_q) @ (x @ W_k).swapaxes(-1, -2) / np.sqrt(W_q.shape[1])
    real = np.broadcast_to((np.arange(x.shape[1])[None, :] < lengths[:, None])[:, None, :], s.shape)
    e = np.where(real, np.exp(s - s.max()), 0.0)
    w2 = e / np.maximum(e.sum(axis=-2, keepdims=True), 1e-300)
    return w2 @ (x @ W_v), w2


@pytest.mark.parametrize("fn,words", [(_no_mask, "ignore `lengths`"), (_naive_inf, "length 0"),
                                      (_unscaled, "sqrt(d_k)"), (_wrong_output, "weights @ V"),
                                      (_columns_sum_to_one, "sum to 1")])
def test_cross_attention_mistakes_are_named(fn, words):
    with np.errstate(all="ignore"):
        fb = ch07.check_cross_attention(fn, seed=3)
    assert not fb.correct and words in fb.message, fb.message


def test_cross_attention_leak_names_sentence_query_key():
    def leak_one(y, x, W_q, W_k, W_v, lengths):
        out, w = sol.cross_attention(y, x, W_q, W_k, W_v, lengths)
        w = w.copy(); w[1, 0, -1] = 0.5           # sentence 1 has 2 real tokens of 5 in case 1
        return out, w
    fb = ch07.check_cross_attention(leak_one, seed=0)
    assert not fb.correct and "sentence 1 has 2 real tokens" in fb.message and "key 4" in fb.message, fb.message


def test_cross_attention_reference_is_the_core_per_sentence():
    y, x, W_q, W_k, W_v, lengths = ch07.cross_attention_cases(seed=5)[1]
    out, w = ch07.cross_attention_reference(y, x, W_q, W_k, W_v, lengths)
    for b in range(len(lengths)):
        n = lengths[b]
        q, k, v = y[b] @ W_q, x[b, :n] @ W_k, x[b, :n] @ W_v     # only the real keys
        s = q @ k.T / np.sqrt(W_q.shape[1])
        ref_w = np.exp(s - s.max(-1, keepdims=True)); ref_w /= ref_w.sum(-1, keepdims=True)
        np.testing.assert_allclose(w[b, :, :n], ref_w, atol=1e-12)
        np.testing.assert_array_equal(w[b, :, n:], 0)
        np.testing.assert_allclose(out[b], ref_w @ v, atol=1e-12)


# ---------------------------------------------------------------- exercise 3's typical mistakes
def _left(lengths, T):                           # (B, 1, T): the last lengths[b] keys are real
    return (np.arange(T)[None, :] >= T - np.asarray(lengths)[:, None])[:, None, :]


@pytest.mark.parametrize("fn,words", [
    (lambda lengths, T: ~sol.decoder_mask(lengths, T), "opposite"),
    (lambda lengths, T: causal_mask(T)[None] & padding_mask(lengths, T), "right padding"),
    (lambda lengths, T: np.broadcast_to(causal_mask(T), (len(lengths), T, T)), "causal mask alone"),
    (lambda lengths, T: np.broadcast_to(_left(lengths, T), (len(lengths), T, T)), "padding mask alone"),
    (lambda lengths, T: np.triu(np.ones((T, T), bool))[None] & _left(lengths, T), "upper one"),
    (lambda lengths, T: causal_mask(T)[None] & _left(lengths, T).swapaxes(-1, -2), "filler queries"),
])
def test_decoder_mask_mistakes_are_named(fn, words):
    fb = ch07.check_decoder_mask(fn, seed=0)
    assert not fb.correct and words in fb.message, fb.message


def test_decoder_mask_reference_by_loops():
    lengths, T = np.array([3, 1, 5]), 5
    got = ch07.decoder_mask_reference(lengths, T)
    want = np.array([[[j <= i and j >= T - n for j in range(T)] for i in range(T)] for n in lengths])
    np.testing.assert_array_equal(got, want)
    assert not got[0, :2].any() and got[0, 2:].any(axis=-1).all()   # filler queries: fully masked rows


# ---------------------------------------------------------------- exercise 4
def test_key_padding_mask_is_what_torch_wants():
    # torch ignores the keys marked True: the solution's mask must give the same output as
    # attending to the first `length` keys only.
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, ch07.PAD_S, 8)
    kpm = torch.tensor(sol.key_padding_mask(np.array(ch07.PAD_LENGTHS), ch07.PAD_S))
    with torch.no_grad():
        out = mha(x, x, x, key_padding_mask=kpm)[0]
        short = mha(x[:1], x[:1, :3], x[:1, :3])[0]
    assert torch.allclose(out[0], short[0], atol=1e-6)


@pytest.mark.parametrize("wrong,says", [
    (lambda lengths, S: np.arange(S)[None, :] < np.asarray(lengths)[:, None], "True = may look"),
    (lambda lengths, S: (np.arange(S)[None, :] >= np.asarray(lengths)[:, None])[:, None, :], "(B, S)"),
    (lambda lengths, S: np.arange(S)[None, :] > np.asarray(lengths)[:, None], "one position off"),
    (lambda lengths, S: (np.arange(S)[None, :] >= np.asarray(lengths)[:, None]).astype(float), "booleans"),
])
def test_key_padding_mask_mistakes_are_named(wrong, says):
    fb = ch07.check_key_padding_mask(wrong)
    assert not fb.correct and not fb.pending and says in fb.message, fb.message


def test_the_book_gives_an_empty_row_zeros():
    assert masked_softmax(np.zeros((1, 3)), np.zeros((1, 3), bool)).sum() == 0
