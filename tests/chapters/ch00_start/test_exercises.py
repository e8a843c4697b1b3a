"""Chapter 0's exercises: the worked solution passes, the placeholder waits, each mistake is named,
and the "What happened" text is what the numbers say."""
import numpy as np
import pytest

from qkv_viz.chapters.ch00_start import exercises as ch00
from qkv_viz.chapters.ch00_start import solutions as sol

def test_the_solution_passes_and_the_placeholder_waits():
    fb = ch00.check_money_key(sol.GUESS, sol.W_K_NO_MONEY)
    assert fb.correct, fb.message
    for pending in (ch00.check_money_key(None, None), ch00.check_money_key("bank", None),
                    ch00.check_money_key(None, sol.W_K_NO_MONEY)):
        assert pending.pending and not pending.correct


@pytest.mark.parametrize("W, words", [
    (np.array([[1, 0], [1, 0], [0, 1]]), "money still counts"),
    (np.array([[1, 0], [0, 1], [0, 1]]), "money still counts"),
    (np.ones((3, 2)), "Change only the money row"),
    (np.array([[0, 0], [0, 0], [0, 1]]), "Change only the money row"),
    (np.zeros((3, 3)), "(3, 2)"),
    (np.array([[1, 0], [np.nan, 0], [0, 1]]), "NaN"),
    ("two", "array of numbers"),
])
def test_each_wrong_matrix_is_named(W, words):
    fb = ch00.check_money_key("bank", W)
    assert not fb and not fb.pending and words in fb.message, fb.message


def test_a_wrong_guess_with_a_right_matrix_gets_a_hint_not_the_answer():
    """Chapter 1 promises checkers say what is wrong without giving the answer: a wrong guess gets the guessed
    word's weight and a pointer to the water column, not the whole row of weights nor the word read most."""
    w, out = ch00.bank_row(sol.W_K_NO_MONEY)
    for wrong in ("rates", "the", "raised"):
        fb = ch00.check_money_key(wrong, sol.W_K_NO_MONEY)
        assert not fb and "is not" in fb.message and "water column" in fb.message, fb.message
        assert f"{w[ch00.RATES.index(wrong)]:.2f}" in fb.message
        assert '"bank" reads' not in fb.message and str(np.round(out[:2], 2).tolist()) not in fb.message
        assert '"bank" gives it' in fb.message and "another word more" in fb.message
    right = ch00.check_money_key("bank", sol.W_K_NO_MONEY)
    assert right and '"bank" reads ' + ", ".join(f'"{t}" {x:.2f}' for t, x in zip(ch00.RATES, w)) in right.message
    assert not ch00.check_money_key("river", sol.W_K_NO_MONEY)  # not a word of the sentence
    assert "one of the sentence's words" in ch00.check_money_key("river", sol.W_K_NO_MONEY).message


def test_what_happened():
    """bank reads itself most, "rates" (the other noun) next; it still gathers more money than water."""
    w, out = ch00.bank_row(sol.W_K_NO_MONEY)
    b = ch00.RATES.index("bank")
    assert w.argmax() == b
    assert ch00.RATES[int(np.argsort(w)[-2])] == "rates"
    assert out[1] > out[0]
    # with the page's W_k, "bank" reads "rates" most: the change is what moves it
    assert ch00.bank_row(ch00.PAGE_W_K)[0].argmax() == ch00.RATES.index("rates")


def test_a_guess_is_read_whatever_its_case_and_quotes():
    assert ch00.check_money_key(" Bank ", sol.W_K_NO_MONEY)
    assert ch00.check_money_key('"bank"', sol.W_K_NO_MONEY)



def test_attend_other_the_solution_passes_and_the_placeholder_waits():
    fb = ch00.check_attend_other(sol.attend_other)
    assert fb.correct, fb.message
    assert ch00.check_attend_other(None).pending

    def todo(X_q, X_kv, W_q, W_k, W_v):
        raise NotImplementedError

    assert ch00.check_attend_other(todo).pending


def test_attend_other_praise_is_what_bank_gathers_by_the_river():
    """The praise: "bank" of the rates sentence reading the river sentence gathers what it gathered in the
    river sentence itself (same query, same keys and values)."""
    out, _ = sol.attend_other(ch00.RATES_X, ch00.RIVER_X, ch00.PAGE_W_Q, ch00.PAGE_W_K, ch00.PAGE_W_V)
    own, _ = sol.attend_other(ch00.RIVER_X, ch00.RIVER_X, ch00.PAGE_W_Q, ch00.PAGE_W_K, ch00.PAGE_W_V)
    np.testing.assert_allclose(out[ch00.RATES.index("bank")], own[ch00.RIVER.index("bank")])
    assert str(np.round(out[ch00.RATES.index("bank"), :2], 2).tolist()) in ch00.check_attend_other(sol.attend_other).message


def _sm(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _self(X_q, X_kv, W_q, W_k, W_v):
    return sol.attend_other(X_q, X_q, W_q, W_k, W_v)


def _swapped(X_q, X_kv, W_q, W_k, W_v):
    return sol.attend_other(X_kv, X_q, W_q, W_k, W_v)


def _q_from_kv(X_q, X_kv, W_q, W_k, W_v):
    return sol.attend_other(X_kv, X_kv, W_q, W_k, W_v)


def _scaled_by(width):
    def fn(X_q, X_kv, W_q, W_k, W_v):
        Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
        w = _sm(Q @ K.T / np.sqrt(width(Q, V, X_q)))
        return w @ V, w
    return fn


def _axis0(X_q, X_kv, W_q, W_k, W_v):
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
    w = _sm(Q @ K.T / np.sqrt(K.shape[1]), axis=0)
    return w @ V, w


def _whole_table(X_q, X_kv, W_q, W_k, W_v):
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
    e = np.exp(Q @ K.T / np.sqrt(K.shape[1]))
    w = e / e.sum()                           # one sum over all T x S scores, not one per row
    return w @ V, w


def _no_wv(X_q, X_kv, W_q, W_k, W_v):
    _, w = sol.attend_other(X_q, X_kv, W_q, W_k, W_v)
    return w @ X_kv, w


def _unnormalised(X_q, X_kv, W_q, W_k, W_v):
    Q, K, V = X_q @ W_q, X_kv @ W_k, X_kv @ W_v
    w = np.exp(Q @ K.T / np.sqrt(K.shape[1]))
    return w @ V, w


def _transposed(X_q, X_kv, W_q, W_k, W_v):
    out, w = sol.attend_other(X_q, X_kv, W_q, W_k, W_v)
    return out, w.T


def _bad_output(X_q, X_kv, W_q, W_k, W_v):
    out, w = sol.attend_other(X_q, X_kv, W_q, W_k, W_v)
    return out + 1, w


@pytest.mark.parametrize("fn, words", [
    (_self, "keys and values come from X_q"),
    (_swapped, "swapped"),
    (_q_from_kv, "your queries come from X_kv"),
    (_scaled_by(lambda Q, V, X: 1), "unscaled"),
    (_scaled_by(lambda Q, V, X: V.shape[1]), "sqrt(d_v)"),
    (_scaled_by(lambda Q, V, X: X.shape[1]), "sqrt(d_model)"),
    (_axis0, "down the columns"),
    (_whole_table, "sum over the whole table"),
    (_no_wv, "mixes the rows of X_kv"),
    (_unnormalised, "do not sum to 1"),
    (_transposed, "one row per query"),
    (_bad_output, "weights are right"),
])
def test_attend_other_each_slip_is_named(fn, words):
    fb = ch00.check_attend_other(fn)
    assert not fb and not fb.pending and words in fb.message, fb.message
