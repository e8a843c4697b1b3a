"""Chapter 3 checkers: each worked solution passes, each placeholder is "no answer yet",
the usual mistakes in attention(Q, K, V) and weights_from_output are named precisely,
hints never give the answer."""
import numpy as np
import pytest

from qkv_viz import softmax
from qkv_viz.chapters.ch03_toy import exercises as ch03
from qkv_viz.chapters.ch03_toy import solutions as sol

SOLVED = [(ch03.check_attention, sol.attention), (ch03.check_attention_from_x, sol.attention_from_x),
          (ch03.check_weights_from_output, sol.weights_from_output),
          (ch03.check_tie_query, sol.tie_query)]


@pytest.mark.parametrize("check, answer", SOLVED)
def test_solution_passes(check, answer):
    fb = check(answer)
    assert fb.correct, fb.message


@pytest.mark.parametrize("check", [c for c, _ in SOLVED])
def test_placeholder_is_pending_not_an_error(check):
    fb = check(None)
    assert not fb.correct and fb.pending and "No answer yet" in repr(fb)


def test_wrong_queries_are_named_without_the_answer():
    cases = {
        "no tie": (lambda K, a, b: K[a], "q . (k_"),                          # points at key a: no tie
        "wrong sign": (lambda K, a, b: -sol.tie_query(K, a, b), "opposite sign"),
        "zero": (lambda K, a, b: np.zeros(2), "cannot be zero"),
        "bad shape": (lambda K, a, b: np.ones(3), "shape (2,)"),
        "nan": (lambda K, a, b: np.array([np.nan, 1.0]), "finite"),
    }
    for name, (fn, words) in cases.items():
        fb = ch03.check_tie_query(fn, seed=0)
        assert not fb.correct and words in fb.message, (name, fb.message)
        assert "-1, -1" not in fb.message  # never the page's answer


@pytest.mark.parametrize("seed", range(6))
def test_tie_cases_always_have_an_answer_and_any_right_query_passes(seed):
    for K, a, b in ch03.tie_cases(seed=seed):
        q = sol.tie_query(K, a, b)
        np.testing.assert_array_equal(ch03._tie_verdict(K, a, b, q), [1.0, 1.0])
        np.testing.assert_array_equal(ch03._tie_verdict(K, a, b, 7.3 * q), [1.0, 1.0])  # any length
    assert ch03.check_tie_query(lambda K, a, b: 0.01 * sol.tie_query(K, a, b), seed=seed).correct


def test_the_pages_keys_tie_k0_and_k2_below_k1():
    K, a, b = ch03.tie_cases(seed=0)[0]
    assert (a, b) == (0, 2)
    for c in (-0.1, -1.0, -7.5):
        w = softmax(K @ np.array([c, c]) / np.sqrt(2))
        assert np.isclose(w[0], w[2]) and w[1] < w[0]
    assert not ch03.check_tie_query(lambda K, a, b: np.array([0.5, 0.5])).correct    # k1 gets more


def _t(K):
    return K.swapaxes(-1, -2)


def _rows(s):
    return softmax(s, axis=-1)


MISTAKES = {
    "WITHOUT the scaling": lambda Q, K, V: (_rows(Q @ _t(K)) @ V, _rows(Q @ _t(K))),
    "SQUARE ROOT": lambda Q, K, V: (_rows(Q @ _t(K) / Q.shape[-1]) @ V, _rows(Q @ _t(K) / Q.shape[-1])),
    "LAST axis": lambda Q, K, V: (softmax(Q @ _t(K) / np.sqrt(Q.shape[-1]), axis=-2) @ V,
                                  softmax(Q @ _t(K) / np.sqrt(Q.shape[-1]), axis=-2)),
    "swapaxes(-1, -2)": lambda Q, K, V: (_rows(Q @ K.T) @ V, _rows(Q @ K.T)),
    "not weights @ V": lambda Q, K, V: (2 * sol.attention(Q, K, V)[0], sol.attention(Q, K, V)[1]),
    "None": lambda Q, K, V: None,
    "returned 1 value": lambda Q, K, V: sol.attention(Q, K, V)[0],
}


@pytest.mark.parametrize("phrase", list(MISTAKES))
def test_attention_mistakes_are_named(phrase):
    fb = ch03.check_attention(MISTAKES[phrase], seed=1)
    assert not fb.correct
    assert phrase in fb.message, fb.message


@pytest.mark.parametrize("matmul", [lambda a, b: a @ b, np.dot, np.matmul])
def test_the_k_t_hint_fires_on_every_draw(matmul):
    def with_k_t(Q, K, V):
        w = _rows(matmul(Q, K.T) / np.sqrt(Q.shape[-1]))
        return w @ V, w
    for seed in range(40):
        assert "swapaxes(-1, -2)" in ch03.check_attention(with_k_t, seed=seed).message, seed


def test_an_unrelated_error_is_not_blamed_on_k_t():
    def broken(Q, K, V):
        raise ValueError("something else")
    fb = ch03.check_attention(broken, seed=0)
    assert not fb.correct and "something else" in fb.message and "swapaxes" not in fb.message


def test_attention_cases_have_a_batch_axis_t_not_s_and_show_the_scaling():
    a, b = ch03.attention_cases(), ch03.attention_cases()
    assert any(x[0].shape != y[0].shape or not np.allclose(x[0], y[0]) for x, y in zip(a, b))
    cases = ch03.attention_cases(seed=0)
    for Q, K, V in cases:
        assert Q.shape[0] > 1 and Q.shape[-1] not in (Q.shape[0], K.shape[1])  # so Q @ K.T always raises
        assert Q.ndim == K.ndim == V.ndim == 3 and Q.shape[1] != K.shape[1] and K.shape[1] == V.shape[1]
        scaled, unscaled = _rows(Q @ _t(K) / np.sqrt(Q.shape[-1])), _rows(Q @ _t(K))
        assert not np.allclose(scaled, unscaled)  # so "forgot the scaling" can be told apart


WEIGHT_MISTAKES = {
    "add up to": lambda V, o: np.linalg.lstsq(V.T, o, rcond=None)[0],   # two equations only
    "mix the values into": lambda V, o: np.full(3, 1 / 3),
    "has shape": lambda V, o: np.append(sol.weights_from_output(V, o), 0.0),
}


@pytest.mark.parametrize("phrase", list(WEIGHT_MISTAKES))
def test_weights_from_output_mistakes_are_named(phrase):
    fb = ch03.check_weights_from_output(WEIGHT_MISTAKES[phrase], seed=3)
    assert not fb.correct and phrase in fb.message, fb.message




FROM_X_MISTAKES = {
    "mixes the rows of X_kv": lambda Xq, Xkv, Wq, Wk, Wv: sol.attention(Xq @ Wq, Xkv @ Wk, Xkv),
    "WITHOUT the scaling": lambda Xq, Xkv, Wq, Wk, Wv: sol.attention(Xq @ Wq * np.sqrt(Wq.shape[1]), Xkv @ Wk, Xkv @ Wv),
    "swapaxes(-1, -2)": lambda Xq, Xkv, Wq, Wk, Wv: (Xq @ Wq) @ (Xkv @ Wk).T,
}


@pytest.mark.parametrize("phrase", FROM_X_MISTAKES)
def test_attention_from_x_mistakes_are_named(phrase):
    fb = ch03.check_attention_from_x(FROM_X_MISTAKES[phrase], seed=2)
    assert not fb.correct and phrase in fb.message, fb.message


def test_attention_from_x_cases_project_to_batched_t_not_s():
    for X_q, X_kv, W_q, W_k, W_v in ch03.attention_from_x_cases(seed=3):
        (B, T, d_model), (B2, S, d_model2) = X_q.shape, X_kv.shape
        assert B == B2 and d_model == d_model2 and T != S
        assert W_q.shape == W_k.shape and W_q.shape[0] == d_model and d_model not in (W_q.shape[1], W_v.shape[1])


# ---------------------------------------------------------------- the new query's row, by hand
def test_row_by_hand_right_answers_pass_rounded_or_not():
    for answer in (sol.WEIGHTS_Q, sol.WEIGHTS_Q.tolist(), np.round(sol.WEIGHTS_Q, 2), [0.07, 0.62, 0.31]):
        fb = ch03.check_row_by_hand(answer)
        assert fb.correct, fb.message
    assert "length beats direction" in ch03.check_row_by_hand(sol.WEIGHTS_Q).message
    np.testing.assert_allclose(sol.WEIGHTS_Q, softmax(ch03.HAND_Q @ ch03.TOY_K.T / np.sqrt(2)))
    np.testing.assert_allclose(sol.WEIGHTS_Q, [0.0743, 0.6200, 0.3057], atol=1e-4)   # the solution's comment


def test_row_by_hand_query_is_not_a_row_the_page_shows():
    page_queries = np.vstack([ch03.TOY_Q, [[0.0, -3.0], [-2.0, 0.5]], ch03.TOY_Q[0] / 4])  # Q, Q_new, q0 / 4
    assert not np.any(np.all(np.isclose(page_queries, ch03.HAND_Q), axis=1))


def test_row_by_hand_placeholder_waits():
    fb = ch03.check_row_by_hand(None)
    assert not fb.correct and fb.pending


def _slip(q=None, scale=1 / np.sqrt(2), normalise=True, exp=True):
    q = ch03.HAND_Q if q is None else q
    s = ch03.TOY_K @ q * scale                                   # (3,): this slip's scores
    e = np.exp(s) if exp else s
    return e / e.sum() if normalise else e


_Q4 = np.vstack([ch03.TOY_Q, ch03.HAND_Q])                       # the page's queries and the new one


@pytest.mark.parametrize("answer, words", [
    (_slip(scale=1.0), "UNSCALED"),                              # forgot sqrt(d_k)
    (_slip(scale=1 / 2), "SQUARE ROOT"),                         # divided by d_k
    (_slip(scale=np.sqrt(2)), "do not multiply"),
    (_slip(normalise=False), "not yet normalised"),              # forgot to normalise
    (_slip(scale=1.0, normalise=False), "unscaled dot products, not normalised"),
    (_slip(exp=False), "without the exponential"),
    (softmax((_Q4 @ ch03.TOY_K.T / np.sqrt(2)).T)[:, -1], "wrong axis"),  # softmax over the queries
    (_slip(q=-ch03.HAND_Q), "check the signs"),                  # -q is token 1's query
    (softmax(ch03.TOY_Q @ ch03.TOY_K.T / np.sqrt(2))[0], "token 0's row"),
    (np.round(softmax(ch03.TOY_Q @ ch03.TOY_K.T / np.sqrt(2))[2], 2), "token 2's row"),
    ([0.5, 0.3, 0.2], "add up to 1 but are not q's"),
    ([0.5, 0.5, 0.5], "add up to 1.5"),
    ([0.7, 0.1], "three weights"),
    ("0.7, 0.1, 0.2", "three numbers"),
    ([np.nan, 0.5, 0.5], "NaN"),
])
def test_row_by_hand_names_each_slip_without_the_answer(answer, words):
    fb = ch03.check_row_by_hand(answer)
    assert not fb.correct and words in fb.message, fb.message
    for digits in ("0.07", "0.074", "0.62", "0.306", "0.31"):
        assert digits not in fb.message, (digits, fb.message)


def test_row_by_hand_slips_are_told_apart():
    wrongs = [w for _, w in ch03._hand_mistakes()] + [sol.WEIGHTS_Q]
    for i, a in enumerate(wrongs):
        for b in wrongs[i + 1:]:
            assert np.abs(np.asarray(a) - np.asarray(b)).max() > 2 * ch03.HAND_ATOL
