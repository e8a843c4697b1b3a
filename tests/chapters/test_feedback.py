"""The shared exercise helpers: None is 'no answer yet', right answers in any honest form pass,
wrong ones get precise messages, and no checker raises or runs forever."""
import signal
import threading
import time

import numpy as np
import pytest
import torch

from qkv_viz.chapters.feedback import (RETURNS_NONE, Feedback, as_array, check, check_close, check_exact,
                                       check_function, no_answer, time_limit)
from qkv_viz.core.softmax import softmax


def _cases(n=3, seed=0, shape=(3, 4)):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=shape),) for _ in range(n)]


def _ref(x):
    return softmax(x, axis=-1)


def _attention_ref(q, k, v):
    w = softmax(q @ k.T / np.sqrt(q.shape[-1]), axis=-1)  # (T, d_k) @ (d_k, S) -> (T, S)
    return w @ v, w  # (T, S) @ (S, d_v) -> (T, d_v)


def _attention_cases(seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))) for _ in range(3)]


def test_check_prints_a_tick_and_raises_on_a_false_claim(capsys):
    check("rows sum to 1", np.isclose(softmax(np.ones((2, 3))).sum(-1), 1))
    assert capsys.readouterr().out == "✔ rows sum to 1\n"
    with pytest.raises(AssertionError, match="✘ two is three"):
        check("two is three", 2 == 3)


def test_none_is_pending_not_wrong():
    for fb in (check_close(None, 1.0, "h"), check_exact(None, (1, 2), "h"),
               check_function(None, softmax, [(np.ones(3),)]), no_answer()):
        assert fb.pending and not fb and repr(fb).startswith("… No answer yet")


def test_a_stub_is_pending_once_for_every_chapter():
    def returns_none(x):
        return None

    def not_implemented(x):
        raise NotImplementedError

    fb = check_function(returns_none, _ref, _cases())
    assert fb.pending and not fb and fb.message == RETURNS_NONE
    fb = check_function(not_implemented, _ref, _cases())
    assert fb.pending and not fb and "NotImplementedError" in fb.message
    # None only on a later case is a real mistake (a `return` missing on one path), not a stub
    calls = []
    fb = check_function(lambda x: calls.append(1) or (None if len(calls) > 1 else _ref(x)), _ref, _cases())
    assert not fb and not fb.pending and "case 2 of 3" in fb.message and "forget `return`" in fb.message


def test_check_exact_tuples_and_ints():
    assert check_exact((4, 5, 9), (4, 5, 9), "h")
    assert "wrong order" in check_exact((9, 5, 4), (4, 5, 9), "h").message
    assert not check_exact(True, 1, "h") and not check_exact(1.0, 1, "h")
    assert check_exact(np.int64(21), 21, "h")
    assert check_exact(torch.tensor([4, 5, 9]), (4, 5, 9), "h")


def test_check_close_reads_tensors_and_lists():
    assert check_close(torch.tensor([0.5, 0.25], requires_grad=True) * 1, [0.5, 0.25], "h")
    assert check_close([[0.5], [0.25]], np.array([[0.5], [0.25]]), "h")
    assert not check_close(torch.tensor([0.9, 0.25]), [0.5, 0.25], "h")
    assert "Give a number" in check_close("half", 0.5, "h").message


def test_check_function_names_what_is_wrong():
    cases = _cases()
    assert check_function(_ref, softmax, cases)
    fb = check_function(lambda x: softmax(x, axis=0), softmax, cases)
    assert not fb and "differs" in fb.message and "index" in fb.message and "float64" in fb.message
    assert "shape (4, 3)" in check_function(lambda x: softmax(x).T, softmax, cases).message
    assert "raised ZeroDivisionError" in check_function(lambda x: 1 / 0, softmax, cases).message
    fb = check_function(lambda x: np.exp(x), softmax, cases,
                        diagnose=lambda g, w, c: "rows do not sum to 1" if not np.allclose(g.sum(-1), 1) else None)
    assert "rows do not sum to 1" in fb.message
    assert isinstance(check_function(1, softmax, cases), Feedback)


# ---------------------------------------------------------------- every honest form of a right answer
RIGHT_FORMS = {
    "float64": lambda x: _ref(x),
    "float32": lambda x: _ref(x).astype(np.float32),
    "float32 computed throughout": lambda x: _ref(x.astype(np.float32)),
    "float16": lambda x: _ref(x).astype(np.float16),
    "torch float32": lambda x: torch.softmax(torch.tensor(x, dtype=torch.float32), dim=-1),
    "torch float64": lambda x: torch.softmax(torch.from_numpy(x), dim=-1),
    "torch requires_grad": lambda x: torch.softmax(torch.tensor(x, requires_grad=True), dim=-1),
    "torch graph leaf": lambda x: torch.tensor(_ref(x), requires_grad=True),
    "nested list": lambda x: _ref(x).tolist(),
    "list of tensors": lambda x: [torch.tensor(r) for r in _ref(x)],
    "list of float32 arrays": lambda x: [r.astype(np.float32) for r in _ref(x)],
    "tuple of rows": lambda x: tuple(_ref(x).tolist()),
}


@pytest.mark.parametrize("form", sorted(RIGHT_FORMS))
def test_every_honest_form_of_a_right_array_is_accepted(form):
    fb = check_function(RIGHT_FORMS[form], _ref, _cases())
    assert fb and not fb.pending, fb.message
    if "float32" in form or "torch float32" == form or "torch graph" in form:
        assert "float32" in fb.message or "float64" not in fb.message


def test_the_praise_says_which_precision_was_assumed():
    assert "float32 precision" in check_function(RIGHT_FORMS["float32"], _ref, _cases()).message
    assert "float16 precision" in check_function(RIGHT_FORMS["float16"], _ref, _cases()).message
    assert "precision" not in check_function(_ref, _ref, _cases()).message


def test_scalars_in_numpy_torch_and_python_form():
    cases = _cases(shape=(5,))
    ref = lambda x: float(np.max(x))  # noqa: E731
    for fn in (lambda x: np.max(x), lambda x: np.float32(np.max(x)), lambda x: torch.tensor(x).max(),
               lambda x: torch.tensor(x, requires_grad=True).max(), lambda x: max(x.tolist())):
        fb = check_function(fn, ref, cases)
        assert fb, fb.message
    assert not check_function(lambda x: np.min(x), ref, cases)


@pytest.mark.parametrize("form", ["tuple", "list", "tensors with grad", "float32"])
def test_tuples_of_values_in_any_form(form):
    def fn(q, k, v):
        out, w = _attention_ref(q, k, v)
        if form == "list":
            return [out.tolist(), w.tolist()]
        if form == "tensors with grad":
            return torch.tensor(out, requires_grad=True) * 1.0, torch.tensor(w, requires_grad=True) * 1.0
        if form == "float32":
            return out.astype(np.float32), w.astype(np.float32)
        return out, w
    fb = check_function(fn, _attention_ref, _attention_cases(), returns=("output", "weights"))
    assert fb, fb.message


def test_a_function_that_changes_its_inputs_is_judged_on_what_it_returns():
    def scales_in_place(q, k, v):
        q /= np.sqrt(q.shape[-1])  # changes the caller's q
        w = softmax(q @ k.T, axis=-1)
        v *= 1.0
        return w @ v, w

    cases = _attention_cases()
    pristine = [tuple(a.copy() for a in c) for c in cases]
    fb = check_function(scales_in_place, _attention_ref, cases)
    assert fb, fb.message
    assert "Side note" in fb.message and "`q`" in fb.message and "`v`" not in fb.message
    assert all(np.array_equal(a, b) for c, p in zip(cases, pristine) for a, b in zip(c, p))

    def zeroes_input_then_wrong(x):
        x[:] = 0
        return softmax(x, axis=-1)  # uniform: wrong against the pristine input
    fb = check_function(zeroes_input_then_wrong, _ref, _cases())
    assert not fb and "differs" in fb.message and "Side note" in fb.message


class Loss:
    """A callable object (no __eq__ of its own): its deepcopy is another object."""
    def __init__(self, target):
        self.target = target

    def __call__(self, x):
        return float(((x - self.target) ** 2).sum())


def test_a_callable_or_plain_object_argument_is_not_called_changed():
    def grad(loss, x):  # finite differences: uses loss, changes nothing
        return np.array([(loss(x + e) - loss(x - e)) / 2e-6 for e in 1e-6 * np.eye(len(x))])
    cases = [(Loss(np.ones(3)), np.zeros(3))]
    fb = check_function(grad, grad, cases, name="grad")
    assert fb and "Side note" not in fb.message, fb.message

    def grad_and_edit(loss, x):
        loss.target += 1.0  # a real in-place change of a plain object's field
        return grad(Loss(loss.target - 1.0), x)
    fb = check_function(grad_and_edit, grad, [(Loss(np.ones(3)), np.zeros(3))], name="grad")
    assert fb and "Side note" in fb.message and "`loss`" in fb.message, fb.message


def test_a_reference_that_mutates_cannot_fool_the_reader():
    def ref_mutating(x):
        out = _ref(x)
        x[:] = 99.0
        return out
    assert check_function(_ref, ref_mutating, _cases())


# ---------------------------------------------------------------- a wrong answer is never accepted
WRONG = {
    "float32 wrong axis": lambda x: softmax(x, axis=0).astype(np.float32),
    "torch wrong axis": lambda x: torch.softmax(torch.tensor(x, requires_grad=True), dim=0),
    "list off by 1e-3": lambda x: (_ref(x) + 1e-3).tolist(),
    "float64 off by 1e-5": lambda x: _ref(x) + 1e-5,
    "float32 off by 1e-3": lambda x: (_ref(x) + 1e-3).astype(np.float32),
    "float16 off by 5e-2": lambda x: (_ref(x) + 5e-2).astype(np.float16),
    "NaN": lambda x: np.full_like(x, np.nan),
    "transposed": lambda x: _ref(x).T,
    "one row": lambda x: _ref(x)[0],
    "string": lambda x: "softmax",
    "ragged list": lambda x: [[1.0, 2.0], [3.0]],
    "dict": lambda x: {"w": _ref(x)},
    "complex": lambda x: _ref(x) + 0j,
    "object array": lambda x: np.array([object()]),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_answers_are_refused_with_a_message(name):
    fb = check_function(WRONG[name], _ref, _cases())
    assert not fb and not fb.pending and fb.message.startswith("On case 1 of 3"), fb.message


def test_values_in_the_wrong_order_are_named():
    rng = np.random.default_rng(1)
    square = [(rng.normal(size=(3, 4)), rng.normal(size=(3, 4)), rng.normal(size=(3, 3)))]  # out, w (3, 3)
    for cases in (square, _attention_cases()):
        fb = check_function(lambda q, k, v: _attention_ref(q, k, v)[::-1], _attention_ref, cases,
                            returns=("output", "weights"))
        assert not fb and "wrong order" in fb.message and "output, weights" in fb.message, fb.message
    fb = check_function(lambda q, k, v: _attention_ref(q, k, v)[0], _attention_ref, _attention_cases())
    assert not fb and "returned 1 value(s); expected 2" in fb.message



def test_a_wrong_second_value_is_named_in_words_not_a_count_from_one():
    def half_right(q, k, v):
        out, w = _attention_ref(q, k, v)
        return out, w.tolist() + [["not", "numbers"]]
    fb = check_function(half_right, _attention_ref, _attention_cases(), name="attention",
                        returns=("output", "weights"))
    assert not fb and "`weights` (the second value attention returned)" in fb.message, fb.message
    fb = check_function(half_right, _attention_ref, _attention_cases(), name="attention")
    assert not fb and "the second value attention returned" in fb.message, fb.message


# ---------------------------------------------------------------- a checker never raises
class Unreadable:
    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("no numbers here")


class Boom(Exception):
    pass


@pytest.mark.parametrize("fn, words", [
    (lambda x: Unreadable(), "RuntimeError"),
    (lambda x: [Unreadable()], "RuntimeError"),
    (lambda x: (_ for _ in ()).throw(Boom("bang")), "raised Boom: bang"),
    (lambda x: x.reshape(7, 7), "raised ValueError"),
    (lambda x: torch.tensor(x) @ torch.tensor(x), "raised RuntimeError"),
    (lambda x: torch.tensor(x, device="meta"), "tensor"),
    (lambda x: (_ref(x), _ref(x)), "has shape"),
])
def test_nothing_the_reader_does_escapes_the_checker(fn, words):
    fb = check_function(fn, _ref, _cases())
    assert not fb and words in fb.message and "case 1 of 3" in fb.message, fb.message


def test_a_reference_that_raises_is_reported_as_a_bug_of_the_checker():
    with pytest.warns(RuntimeWarning, match="bug in the exercise's checker"):
        fb = check_function(_ref, lambda x: 1 / 0, _cases())
    assert not fb and "not in your code" in fb.message and "ZeroDivisionError" in fb.message


def test_a_diagnose_that_raises_does_not_hide_the_verdict():
    def diagnose(g, w, c):
        raise KeyError("oops")
    with pytest.warns(RuntimeWarning):
        fb = check_function(lambda x: softmax(x, axis=0), _ref, _cases(), diagnose=diagnose)
    assert not fb and "differs" in fb.message
    assert check_function(_ref, _ref, _cases(), diagnose=diagnose)  # right answers never reach it


def test_diagnose_sees_float64_arrays_only_when_the_answer_is_wrong():
    seen = []

    def diagnose(g, w, c):
        seen.append(type(g))
        return "a precise hint"
    assert check_function(RIGHT_FORMS["torch requires_grad"], _ref, _cases(), diagnose=diagnose)
    assert seen == []
    fb = check_function(WRONG["torch wrong axis"], _ref, _cases(), diagnose=diagnose)
    assert fb.message == "On case 1 of 3 (inputs of shape (3, 4)): a precise hint" and seen == [np.ndarray]


# ---------------------------------------------------------------- the time limit
def test_a_function_that_sleeps_gets_the_time_limit_message():
    t0 = time.monotonic()
    fb = check_function(lambda x: time.sleep(30), _ref, _cases(), time_limit_s=0.5)
    assert time.monotonic() - t0 < 5
    assert not fb and "still running after 0.5 s" in fb.message and "stopped" in fb.message


def test_the_time_limit_is_for_all_cases_together():
    def slowish(x):
        time.sleep(0.3)
        return _ref(x)
    fb = check_function(slowish, _ref, _cases(n=5), time_limit_s=1.0)
    assert not fb and "still running" in fb.message and "case 4 of 5" in fb.message
    assert check_function(slowish, _ref, _cases(n=2), time_limit_s=1.0)


def test_a_reader_catching_every_exception_is_still_stopped():
    def stubborn(x):
        while True:
            try:
                time.sleep(10)
            except Exception:  # noqa: BLE001 - the point: this must not swallow the time limit
                pass
    fb = check_function(stubborn, _ref, _cases(), time_limit_s=0.3)
    assert "still running" in fb.message


def test_the_timer_is_cleaned_up_and_an_earlier_handler_restored():
    def mine(signum, frame):
        pass
    old = signal.signal(signal.SIGALRM, mine)
    try:
        assert check_function(_ref, _ref, _cases(), time_limit_s=2)
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    finally:
        signal.signal(signal.SIGALRM, old)


def test_interrupting_the_kernel_still_works():
    def interrupted(x):
        raise KeyboardInterrupt  # what SIGINT (the kernel's interrupt button) raises
    with pytest.raises(KeyboardInterrupt):
        check_function(interrupted, _ref, _cases())
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_outside_the_main_thread_it_runs_without_a_limit():
    results = []
    thread = threading.Thread(target=lambda: results.append(
        check_function(lambda x: time.sleep(0.2) or _ref(x), _ref, _cases(n=1), time_limit_s=0.05)))
    thread.start()
    thread.join(10)
    assert results and results[0], results  # no alarm there: the slow but right answer passes
    with time_limit(None):
        time.sleep(0.01)


def test_as_array_reports_precision():
    assert as_array(np.ones(2, dtype=np.float32))[1] == "float32"
    assert as_array(torch.ones(2, dtype=torch.bfloat16))[1] == "bfloat16"
    assert as_array([np.float32(1), 2.0])[1] == "float32"
    assert as_array(3)[1] == "float64" and as_array(3)[0].dtype == np.float64
