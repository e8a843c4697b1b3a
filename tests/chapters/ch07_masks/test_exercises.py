"""Chapter 7 exercises: each worked solution passes its checker; each placeholder is
"no answer yet"; typical mistakes get a message that names them, never the answer."""
import numpy as np
import pytest
import torch

from qkv_viz.chapters.ch07_masks import exercises as ch07
from qkv_viz.chapters.ch07_masks import solutions as sol

VALUES = [(ch07.check_cross_weights_shape, sol.cross_weights_shape),
          (ch07.check_causal_allowed, sol.causal_allowed),
          (ch07.check_key_padding_mask, sol.key_padding_mask),
          (ch07.check_padded_weights, sol.padded_weights)]


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3])
def test_masked_softmax_solution_passes(seed):
    fb = ch07.check_masked_softmax(sol.masked_softmax, seed=seed)
    assert fb.correct, fb.message


@pytest.mark.parametrize("check,solution", VALUES)
def test_value_solutions_pass(check, solution):
    fb = check(solution())
    assert fb.correct, fb.message


@pytest.mark.parametrize("check", [c for c, _ in VALUES] + [ch07.check_masked_softmax])
def test_placeholder_is_pending(check):
    fb = check(None)
    assert not fb.correct and fb.pending
    if check is ch07.check_masked_softmax:
        fb = check(lambda scores, mask: None)
        assert not fb.correct and fb.pending


def _naive(scores, mask):  # the textbook recipe: NaN on a fully masked row
    s = np.where(mask, scores, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _leaky(scores, mask):  # forgets the mask
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _overflowing(scores, mask):  # no max subtraction
    e = np.where(mask, np.exp(scores), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def _reversed(scores, mask):  # True read as "hide"
    return sol.masked_softmax(scores, ~mask)


@pytest.mark.parametrize("fn,words", [(_naive, "fully masked"), (_leaky, "is masked"),
                                      (_overflowing, "overflows"), (_reversed, "True means")])
def test_masked_softmax_mistakes_are_named(fn, words):
    with np.errstate(all="ignore"):
        fb = ch07.check_masked_softmax(fn, seed=7)
    assert not fb.correct and words in fb.message, fb.message


def test_masked_softmax_leak_names_row_and_key():
    scores, mask = ch07.masked_softmax_cases(seed=11)[0]
    fb = ch07.check_masked_softmax(_leaky, seed=11)
    r, j = np.argwhere(~mask)[0]
    assert f"row {r}, key {j}" in fb.message, fb.message


def test_key_padding_mask_is_what_torch_wants():
    # torch ignores the keys marked True: the solution's mask must give the same output as
    # attending to the first `length` keys only.
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = torch.randn(2, ch07.PAD_S, 8)
    kpm = torch.tensor(sol.key_padding_mask())
    with torch.no_grad():
        out = mha(x, x, x, key_padding_mask=kpm)[0]
        short = mha(x[:1], x[:1, :3], x[:1, :3])[0]
    assert torch.allclose(out[0], short[0], atol=1e-6)
    fb = ch07.check_key_padding_mask((~np.array(sol.key_padding_mask())).tolist())
    assert not fb.correct and "book's convention" in fb.message


def test_causal_and_padded_numbers_follow_the_package():
    from qkv_viz import causal_mask, masked_softmax
    assert sol.causal_allowed() == causal_mask(9).sum()
    w = masked_softmax(np.array([[1.0, 2, 3, 4]]), np.array([[True, True, False, False]]))[0]
    assert np.allclose(sol.padded_weights(), w)
    for wrong in ([0.25] * 4, [0.5, 0.5], "x"):
        fb = ch07.check_padded_weights(wrong)
        assert not fb.correct and f"{w[0]:.3f}" not in fb.message
