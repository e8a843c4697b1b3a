"""Chapter 8 exercise checkers: each worked solution passes, each placeholder is "no answer yet",
and wrong answers get a precise message that does not give the answer away."""
import inspect
import json
import pathlib

import numpy as np
import pytest

from qkv_viz.chapters.ch08_mistakes import exercises as ch08
from qkv_viz.chapters.ch08_mistakes import mistakes
from qkv_viz.chapters.ch08_mistakes import solutions as sol


def _stub(*args):
    return None  # the answer cell as the reader first sees it


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_solutions_pass_their_checkers(seed):
    assert ch08.check_split_per_head(sol.split_per_head, seed=seed)
    assert ch08.check_attention_fixed(sol.attention_fixed, seed=seed)


@pytest.mark.parametrize("checker", [ch08.check_split_per_head, ch08.check_attention_fixed])
def test_none_and_stub_are_pending_not_wrong(checker):
    for answer in (None, _stub):
        fb = checker(answer)
        assert not fb and fb.pending and "No answer yet" in fb.message


# ---------------------------------------------------------------- exercise 1
def _reshape_without_transpose(qkv, H):
    n = qkv.shape[0]
    d = qkv.shape[1] // (3 * H)
    per_head = qkv.reshape(n, H, 3, d)
    return tuple(per_head[:, :, r].reshape(H, n, d) for r in range(3))


def _q_k_swapped(qkv, H):
    q, k, v = sol.split_per_head(qkv, H)
    return k, q, v


@pytest.mark.parametrize("fn,words", [(mistakes.split_per_head_as_blocks, "three blocks"),
                                      (_reshape_without_transpose, "not a transpose"),
                                      (_q_k_swapped, "swapped")])
def test_split_mistakes_are_named(fn, words):
    fb = ch08.check_split_per_head(fn, seed=0)
    assert not fb and words in fb.message and "transpose(2, 1, 0, 3)" not in fb.message, fb.message


def test_split_tokens_last_is_a_shape_message():
    fb = ch08.check_split_per_head(lambda qkv, H: tuple(a.swapaxes(0, 1) for a in sol.split_per_head(qkv, H)), seed=0)
    assert not fb and "shape" in fb.message


# ---------------------------------------------------------------- exercise 2
def _scale_fixed_only(q, k, v):               # keeps the global max
    s = q @ k.T / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max())
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def _max_fixed_only(q, k, v):                 # keeps d_k = T
    s = q @ k.T / np.sqrt(q.shape[0])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def _scaled_by_s(q, k, v):                    # d_k read from k's first axis: S
    s = q @ k.T / np.sqrt(k.shape[0])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ v


def _columns_sum(q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=0)) @ v


def _unscaled(q, k, v):
    s = q @ k.T
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("fn,words", [(ch08.attention_buggy, "wrong size"), (_max_fixed_only, "wrong size"),
                                      (_scaled_by_s, "wrong size"), (_scale_fixed_only, "which maximum"),
                                      (_columns_sum, "which axis"), (_unscaled, "1/sqrt(d_k)")])
def test_attention_mistakes_are_named(fn, words):
    fb = ch08.check_attention_fixed(fn, seed=0)
    assert not fb and words in fb.message, fb.message
    for fix in ("axis=-1", "keepdims=True", "shape[-1]", "shape[1]"):     # a hint, never the fix
        assert fix not in fb.message, fb.message


def test_the_global_max_survives_every_case_but_the_far_row():
    cases = ch08.attention_cases(seed=0)
    for q, k, v in cases[:-1]:
        np.testing.assert_allclose(_scale_fixed_only(q, k, v), sol.attention_fixed(q, k, v), atol=1e-10)
    q, k, v = cases[-1]
    with np.errstate(all="ignore"):
        assert not np.all(np.isfinite(_scale_fixed_only(q, k, v)))


def test_errors_in_the_readers_code_are_feedback():
    fb = ch08.check_attention_fixed(lambda q, k, v: q @ v, seed=0)
    assert not fb and "raised ValueError" in fb.message


def test_missing_keepdims_gets_a_hint():
    def no_keepdims(q, k, v):
        s = q @ k.T / np.sqrt(q.shape[-1])
        e = np.exp(s - s.max(axis=-1))
        return (e / e.sum(axis=-1)) @ v
    fb = ch08.check_attention_fixed(no_keepdims, seed=0)
    assert not fb and "drops that axis" in fb.message and "keepdims=True" not in fb.message


def test_notebook_shows_the_same_buggy_function_the_checker_uses():
    nb = pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "08_common_mistakes.ipynb"
    text = "".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "markdown")
    body = inspect.getsource(ch08.attention_buggy).splitlines()
    for line in [body[0]] + body[2:]:  # skip the docstring line
        assert line in text, line


# ---------------------------------------------------------------- exercise 3
def _log_of_softmax(s):
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.log(e / e.sum(axis=-1, keepdims=True))        # the weight underflows to 0 first


def _naive_log_softmax(s):
    return s - np.log(np.exp(s).sum(axis=-1, keepdims=True))  # exp(1000) overflows


def _log_softmax_axis0(s):
    return sol.log_softmax(s.swapaxes(0, -1)).swapaxes(0, -1)


@pytest.mark.parametrize("seed", [None, 0, 1])
def test_log_softmax_solution_passes_and_stub_is_pending(seed):
    assert ch08.check_log_softmax(sol.log_softmax, seed=seed)
    for answer in (None, _stub):
        fb = ch08.check_log_softmax(answer)
        assert not fb and fb.pending


@pytest.mark.parametrize("fn,words", [(_log_of_softmax, "underflows to 0"), (_naive_log_softmax, "overflowed"),
                                      (_log_softmax_axis0, "first axis")])
def test_log_softmax_mistakes_are_named(fn, words):
    fb = ch08.check_log_softmax(fn, seed=0)
    assert not fb and words in fb.message and "- m -" not in fb.message, fb.message


def test_the_buggy_attention_passes_the_square_small_test_most_people_try_first():
    """Exercise 2's text: on square q (T == d_k) with small random numbers it gives the right answer."""
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(4, 4)), rng.normal(size=(6, 4)), rng.normal(size=(6, 3))
    np.testing.assert_allclose(ch08.attention_buggy(q, k, v), sol.attention_fixed(q, k, v), atol=1e-12)
    q = rng.normal(size=(5, 4))                                  # T != d_k: the bug shows
    assert not np.allclose(ch08.attention_buggy(q, k, v), sol.attention_fixed(q, k, v))
