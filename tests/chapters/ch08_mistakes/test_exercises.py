"""Chapter 8 exercise checkers: each worked solution passes, each placeholder is "no answer yet",
and wrong answers get a precise message that does not give the answer away."""
import inspect
import json
import pathlib

import numpy as np
import pytest

from qkv_viz.chapters.ch08_mistakes import exercises as ch08
from qkv_viz.chapters.ch08_mistakes import solutions as sol


def _stub(*args):
    return None  # the answer cell as the reader first sees it


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_solutions_pass_their_checkers(seed):
    assert ch08.check_diagnose(sol.diagnose, seed=seed)
    assert ch08.check_attention_fixed(sol.attention_fixed, seed=seed)


@pytest.mark.parametrize("checker", [ch08.check_diagnose, ch08.check_attention_fixed])
def test_none_and_stub_are_pending_not_wrong(checker):
    for answer in (None, _stub):
        fb = checker(answer)
        assert not fb and fb.pending and "No answer yet" in fb.message


# ---------------------------------------------------------------- exercise 1
def test_every_diagnose_case_is_told_apart_by_the_solution_over_many_seeds():
    """The bugs must be distinguishable on every generated map, not only on seed 0."""
    for seed in range(40):
        for w, mask, bug in ch08.diagnose_cases(seed):
            assert sol.diagnose(w, mask) == ("no mask" if bug == "scores * mask" else bug), (seed, bug)


def test_the_mystery_map_is_the_first_case_and_its_rows_do_not_sum_to_1():
    w, mask = ch08.mystery_map()
    w0, mask0, _ = ch08.diagnose_cases(0)[0]
    np.testing.assert_array_equal(w, w0)
    assert (w.sum(axis=-1)[:-1] < 0.95).all() and w[~mask].sum() == 0   # visible by eye in the figure


@pytest.mark.parametrize("answer,words", [("right", "row sums"), ("no mask", "row sums"),
                                          ("softmax over axis 0", "row sums")])
def test_a_constant_answer_fails_on_the_mystery_map_with_a_hint(answer, words):
    fb = ch08.check_diagnose(lambda w, m: answer, seed=0)
    assert not fb and "mystery map" in fb.message and words in fb.message, fb.message
    assert "mask after softmax" not in fb.message                    # a hint, never the answer


def test_a_diagnose_that_ignores_columns_is_caught_with_a_column_hint():
    def rows_only(w, mask):
        if np.allclose(w[mask], 0):
            return "mask inverted"
        if w[~mask].sum() > 1e-4:
            return "no mask"
        return "right" if np.allclose(w.sum(-1), 1) else "mask after softmax"
    fb = ch08.check_diagnose(rows_only, seed=0)
    assert not fb and "columns" in fb.message and "softmax over axis 0" not in fb.message, fb.message


def test_scores_times_mask_and_no_mask_accept_either_name():
    def swapped(w, mask):
        name = sol.diagnose(w, mask)
        return "scores * mask" if name == "no mask" else name
    assert ch08.check_diagnose(swapped, seed=0)


def test_unknown_names_and_errors_are_feedback():
    fb = ch08.check_diagnose(lambda w, m: "bad mask", seed=0)
    assert not fb and "not one of the names" in fb.message
    fb = ch08.check_diagnose(lambda w, m: w[10, 10], seed=0)
    assert not fb and "raised IndexError" in fb.message


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
