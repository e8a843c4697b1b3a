"""The shared exercise helpers: None is 'no answer yet', wrong answers get precise messages."""
import numpy as np
import pytest

from qkv_viz.chapters.feedback import (Feedback, check, check_close, check_exact, check_function,
                                       no_answer)
from qkv_viz.core.softmax import softmax


def test_check_prints_a_tick_and_raises_on_a_false_claim(capsys):
    check("rows sum to 1", np.isclose(softmax(np.ones((2, 3))).sum(-1), 1))
    assert capsys.readouterr().out == "✔ rows sum to 1\n"
    with pytest.raises(AssertionError, match="✘ two is three"):
        check("two is three", 2 == 3)


def test_none_is_pending_not_wrong():
    for fb in (check_close(None, 1.0, "h"), check_exact(None, (1, 2), "h"),
               check_function(None, softmax, [(np.ones(3),)]), no_answer()):
        assert fb.pending and not fb and repr(fb).startswith("… No answer yet")


def test_check_exact_tuples_and_ints():
    assert check_exact((4, 5, 9), (4, 5, 9), "h")
    assert "wrong order" in check_exact((9, 5, 4), (4, 5, 9), "h").message
    assert not check_exact(True, 1, "h") and not check_exact(1.0, 1, "h")
    assert check_exact(np.int64(21), 21, "h")


def test_check_function_names_what_is_wrong():
    rng = np.random.default_rng(0)
    cases = [(rng.normal(size=(3, 4)),) for _ in range(3)]
    assert check_function(lambda x: softmax(x, axis=-1), softmax, cases)
    fb = check_function(lambda x: softmax(x, axis=0), softmax, cases)
    assert not fb and "differs" in fb.message and "index" in fb.message
    assert "shape (4, 3)" in check_function(lambda x: softmax(x).T, softmax, cases).message
    assert "raised ZeroDivisionError" in check_function(lambda x: 1 / 0, softmax, cases).message
    assert "returned None" in check_function(lambda x: None, softmax, cases).message
    fb = check_function(lambda x: np.exp(x), softmax, cases,
                        diagnose=lambda g, w, c: "rows do not sum to 1" if not np.allclose(g.sum(-1), 1) else None)
    assert "rows do not sum to 1" in fb.message

    def stub(x):
        raise NotImplementedError
    assert check_function(stub, softmax, cases).pending
    assert isinstance(check_function(1, softmax, cases), Feedback)
