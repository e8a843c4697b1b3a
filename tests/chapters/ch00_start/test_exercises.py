"""Chapter 0's exercise: the worked solution passes, the placeholder waits, each mistake is named,
and the "What happened" text is what the numbers say."""
import numpy as np
import pytest

from qkv_viz.chapters.ch00_start import exercises as ch00
from qkv_viz.chapters.ch00_start import solutions as sol


def test_the_solution_passes_and_the_placeholder_waits():
    fb = ch00.check_water_query(sol.GUESS, sol.W_Q_NO_MONEY)
    assert fb.correct, fb.message
    for pending in (ch00.check_water_query(None, None), ch00.check_water_query("bank", None),
                    ch00.check_water_query(None, sol.W_Q_NO_MONEY)):
        assert pending.pending and not pending.correct


@pytest.mark.parametrize("W, words", [
    (np.array([[0, 0, 1], [0, 0, 1], [2, 2, 1]]), "asks for money"),
    (np.ones((3, 3)), "Change only the last row"),
    (np.array([[0, 0, 1], [0, 0, 1], [-1, 0, 1]]), "keep its water column 2"),
    (np.array([[0, 0, 1], [0, 0, 1], [5, 0, 1]]), "keep its water column 2"),
    (np.array([[0, 0, 1], [0, 0, 1], [2, 0, 0]]), "keep its last column 1"),
    (np.zeros((3, 2)), "(3, 3)"),
    (np.array([[0, 0, 1], [0, 0, 1], [np.nan, 0, 1]]), "NaN"),
    ("two", "array of numbers"),
])
def test_each_wrong_matrix_is_named(W, words):
    fb = ch00.check_water_query("bank", W)
    assert not fb and not fb.pending and words in fb.message, fb.message


def test_a_wrong_guess_with_a_right_matrix_gets_a_hint_not_the_answer():
    """Chapter 1 promises checkers say what is wrong without giving the answer: a wrong guess gets the guessed
    word's weight and a pointer to the water column, not the whole row of weights nor the word read most."""
    w, out = ch00.bank_row(sol.W_Q_NO_MONEY)
    for wrong in ("rates", "the", "raised"):
        fb = ch00.check_water_query(wrong, sol.W_Q_NO_MONEY)
        assert not fb and "is not" in fb.message and "water column" in fb.message, fb.message
        assert f"{w[ch00.RATES.index(wrong)]:.2f}" in fb.message
        assert '"bank" reads' not in fb.message and str(np.round(out, 2).tolist()) not in fb.message
        assert '"bank" gives it' in fb.message and "another word more" in fb.message
    right = ch00.check_water_query("bank", sol.W_Q_NO_MONEY)
    assert right and '"bank" reads ' + ", ".join(f'"{t}" {x:.2f}' for t, x in zip(ch00.RATES, w)) in right.message
    assert not ch00.check_water_query("river", sol.W_Q_NO_MONEY)  # not a word of the sentence
    assert "one of the sentence's words" in ch00.check_water_query("river", sol.W_Q_NO_MONEY).message


def test_what_happened():
    """bank reads itself most, "rates" (the other noun) next; it still gathers more money than water."""
    w, out = ch00.bank_row(sol.W_Q_NO_MONEY)
    b = ch00.RATES.index("bank")
    assert w.argmax() == b
    assert ch00.RATES[int(np.argsort(w)[-2])] == "rates"
    assert out[1] > out[0]
    assert not ch00.check_water_query(sol.GUESS, np.array([[0, 0, 1], [0, 0, 1], [5, 0, 1]]))  # only (2, 0, 1)


def test_a_guess_is_read_whatever_its_case_and_quotes():
    assert ch00.check_water_query(" Bank ", sol.W_Q_NO_MONEY)
    assert ch00.check_water_query('"bank"', sol.W_Q_NO_MONEY)


def test_attend_one_the_solution_passes_and_the_placeholder_waits():
    fb = ch00.check_attend_one(sol.attend_one)
    assert fb.correct, fb.message
    assert ch00.check_attend_one(None).pending


def test_attend_one_unscaled_and_unnormalised_answers_are_named():
    def unscaled(q, K, V):
        e = np.exp(K @ q)
        w = e / e.sum()
        return w @ V, w, int(w.argmax())

    def unnormalised(q, K, V):
        w = np.exp(K @ q / np.sqrt(q.shape[0]))
        return w @ V, w, int(w.argmax())

    fb = ch00.check_attend_one(unscaled)
    assert not fb and "sqrt(d_k)" in fb.message, fb.message
    fb = ch00.check_attend_one(unnormalised)
    assert not fb and "sum to" in fb.message, fb.message


def test_attend_one_a_wrong_top_is_named():
    def smallest(q, K, V):
        out, w, _ = sol.attend_one(q, K, V)
        return out, w, int(w.argmin())

    fb = ch00.check_attend_one(smallest)
    assert not fb and "top should be" in fb.message, fb.message
    fb = ch00.check_attend_one(lambda q, K, V: sol.attend_one(q, K, V)[:2])
    assert not fb, fb.message
