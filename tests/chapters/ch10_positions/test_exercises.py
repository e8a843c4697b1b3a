"""Chapter 10 checkers: each worked solution passes, None is "no answer yet", the usual mistakes
are named precisely; the conceptual answer's claim (concatenation = adding a projected p) holds."""
import numpy as np
import pytest

from qkv_viz.chapters.ch10_positions import exercises as ex
from qkv_viz.chapters.ch10_positions import solutions as sol
from qkv_viz.core.positions import apply_rope, rope_dot, rope_frequencies

SOLVED = [(ex.check_rope_half, sol.rope_half), (ex.check_relative_dot, sol.relative_dot),
          (ex.check_which_pairing, sol.which_pairing), (ex.check_concat_terms, sol.concat_terms)]


@pytest.mark.parametrize("check, answer", SOLVED)
@pytest.mark.parametrize("seed", [None, 0, 1, 2])
def test_solution_passes(check, answer, seed):
    fb = check(answer, seed=seed)
    assert fb.correct, fb.message


@pytest.mark.parametrize("check", [c for c, _ in SOLVED])
def test_placeholder_is_pending(check):
    fb = check(None)
    assert not fb.correct and fb.pending and "No answer yet" in repr(fb)


def _half(x, angle):
    h = x.shape[1] // 2
    a, b = x[:, :h], x[:, h:]
    return np.concatenate([a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)], 1)


def _theta(x, base):
    return rope_frequencies(x.shape[1], base)[None, :]


ROPE_MISTAKES = {
    "ADJACENT pairs": lambda x, base: apply_rope(x, base=base),
    "the wrong way": lambda x, base: _half(x, -np.arange(len(x))[:, None] * _theta(x, base)),
    "positions start at 1": lambda x, base: _half(x, (np.arange(len(x))[:, None] + 1) * _theta(x, base)),
    "base ** (-i / d_k)": lambda x, base: _half(x, np.arange(len(x))[:, None]
                                                * base ** (-np.arange(x.shape[1] // 2)[None, :] / x.shape[1])),
    "x unchanged": lambda x, base: x.copy(),
    "has shape": lambda x, base: sol.rope_half(x, base)[:, :-1],
    "raised ZeroDivisionError": lambda x, base: 1 / 0,
}


@pytest.mark.parametrize("phrase", list(ROPE_MISTAKES))
def test_rope_mistakes_are_named(phrase):
    fb = ex.check_rope_half(ROPE_MISTAKES[phrase], seed=3)
    assert not fb.correct and phrase in fb.message, fb.message


OFFSET_MISTAKES = {
    "AFTER the query": lambda q, k, offset, base: sol.relative_dot(q, k, -offset, base),
    "without any turning": lambda q, k, offset, base: float(q @ k),
    "differs": lambda q, k, offset, base: sol.relative_dot(q, k, offset, base) + 0.01,
}


@pytest.mark.parametrize("phrase", list(OFFSET_MISTAKES))
def test_offset_mistakes_are_named(phrase):
    fb = ex.check_relative_dot(OFFSET_MISTAKES[phrase], seed=4)
    assert not fb.correct and phrase in fb.message, fb.message


def test_offset_reference_is_the_dot_of_both_turned_at_any_m():
    for q, k, offset, base in ex.offset_cases(seed=0):
        for m in (0, 3, 250):
            assert sol.relative_dot(q, k, offset, base) == pytest.approx(rope_dot(q, k, m, m + offset, base))


@pytest.mark.parametrize("answer, phrase", [
    (lambda x, r: "adjacent", 'said "adjacent"'), (lambda x, r: "half", 'said "half"'),
    (lambda x, r: 3, "returned 3"), (lambda x, r: "rotate_half", "'rotate_half'"),
])
def test_pairing_mistakes_are_named(answer, phrase):
    fb = ex.check_which_pairing(answer, seed=5)
    assert not fb.correct and phrase in fb.message, fb.message


def test_pairing_cases_use_both_pairings_and_unknown_bases():
    codes = [ex._true_pairing(x, r) for x, r in ex.pairing_cases(seed=0)]
    assert sorted(set(codes)) == [0.0, 1.0]
    for x, r in ex.pairing_cases(seed=1):
        assert not np.allclose(x, r)


def test_concatenation_is_adding_a_projected_position():
    rng = np.random.default_rng(0)
    x, p = rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    W = rng.normal(size=(7, 6))                       # rows for [x, p]
    A, B = W[:4], W[4:]
    np.testing.assert_allclose(np.concatenate([x, p], 1) @ W, x @ A + p @ B)
    assert "p B" in sol.CONCATENATE


def test_concat_terms_names_the_usual_slips_and_its_praise_answers_the_question():
    fb = ex.check_concat_terms(sol.concat_terms)
    assert fb.correct and "x_m A + p_m B" in fb.message
    swapped = lambda *a: sol.concat_terms(*a)[[0, 2, 1, 3]]
    assert "swapped" in ex.check_concat_terms(swapped).message
    whole = lambda *a: np.array([sol.concat_terms(*a).sum(), 0.0, 0.0, 0.0])
    fb = ex.check_concat_terms(whole)
    assert not fb.correct and "whole score" in fb.message
    spread = lambda *a: np.full(4, sol.concat_terms(*a).sum() / 4)
    fb = ex.check_concat_terms(spread)
    assert not fb.correct and "add up to the whole score" in fb.message
    # a split at the wrong row (p's rows taken for x's) is wrong, and the checker says so
    def off_by_one(x_m, p_m, x_n, p_n, W_q, W_k):
        d = len(x_m) - 1
        A, B, C, D = W_q[:d], W_q[d:], W_k[:d], W_k[d:]
        xm, pm = np.r_[x_m, p_m][:d], np.r_[x_m, p_m][d:]
        xn, pn = np.r_[x_n, p_n][:d], np.r_[x_n, p_n][d:]
        return np.array([(xm @ A) @ (xn @ C), (xm @ A) @ (pn @ D), (pm @ B) @ (xn @ C), (pm @ B) @ (pn @ D)])
    assert not ex.check_concat_terms(off_by_one).correct
