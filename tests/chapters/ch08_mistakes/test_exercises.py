"""Chapter 8 exercise checkers: each worked solution passes, each placeholder is "no answer yet",
and wrong answers get a precise message that does not give the answer away."""
import numpy as np
import pytest

from qkv_viz.chapters.ch08_mistakes import exercises as ch08
from qkv_viz.chapters.ch08_mistakes import solutions as sol
from qkv_viz.core.softmax import naive_softmax


def _stub(*args):
    return None  # the answer cell as the reader first sees it


def test_solutions_pass_their_checkers():
    assert ch08.check_fused_shape(sol.FUSED_SHAPE)
    assert ch08.check_overflow_limit(sol.OVERFLOW_LIMIT_FLOAT16)
    for seed in (0, 1, 2):
        assert ch08.check_stable_softmax(sol.stable_softmax, seed=seed)
        assert ch08.check_attention_fixed(sol.attention_fixed, seed=seed)


@pytest.mark.parametrize("checker", [ch08.check_fused_shape, ch08.check_overflow_limit,
                                     ch08.check_stable_softmax, ch08.check_attention_fixed])
def test_none_is_pending_not_wrong(checker):
    fb = checker(None)
    assert not fb and fb.pending and "No answer yet" in fb.message


@pytest.mark.parametrize("checker", [ch08.check_stable_softmax, ch08.check_attention_fixed])
def test_untouched_stub_is_pending(checker):
    fb = checker(_stub)
    assert not fb and fb.pending and "return None" in fb.message


def test_fused_shape_wrong_answers():
    assert "torch's (out, in)" in ch08.check_fused_shape((1536, 512)).message
    for wrong in [(512, 512), (512, 192), "x"]:
        fb = ch08.check_fused_shape(wrong)
        assert not fb and not fb.pending and "1536" not in fb.message


def test_overflow_limit_wrong_answers():
    for wrong in [709.78, 88.72, float("nan"), "x"]:
        fb = ch08.check_overflow_limit(wrong)
        assert not fb and f"{sol.OVERFLOW_LIMIT_FLOAT16:.2f}" not in fb.message


def test_naive_softmax_is_told_it_overflows():
    fb = ch08.check_stable_softmax(lambda s: naive_softmax(s, axis=-1), seed=0)
    assert not fb and "overflow" in fb.message and "around 1000" in fb.message
    assert "subtract each row's max" in fb.message.lower()


def test_softmax_over_the_wrong_axis_or_unnormalised():
    fb = ch08.check_stable_softmax(lambda s: sol.stable_softmax(np.swapaxes(s, 0, -1)).swapaxes(0, -1)
                                   if np.ndim(s) == 2 else sol.stable_softmax(s), seed=0)
    assert not fb and "columns sum to 1" in fb.message
    fb = ch08.check_stable_softmax(lambda s: np.exp(s - np.max(s, axis=-1, keepdims=True)), seed=0)
    assert not fb and "not 1" in fb.message


def test_buggy_attention_is_refused_with_the_axis_hint():
    fb = ch08.check_attention_fixed(ch08.attention_buggy, seed=0)
    assert not fb and "which axis" in fb.message and "axis=-1" not in fb.message


def test_buggy_attention_really_differs_and_columns_sum_to_one():
    q, k, v = ch08.attention_cases(seed=3)[0]
    assert not np.allclose(ch08.attention_buggy(q, k, v), sol.attention_fixed(q, k, v))
    v_eye = np.eye(k.shape[0])  # with V = I the output IS the weight matrix
    np.testing.assert_allclose(ch08.attention_buggy(q, k, v_eye).sum(axis=0), 1.0)


def test_unscaled_fix_is_named():
    def unscaled(q, k, v):
        s = q @ k.T
        w = np.exp(s - s.max(-1, keepdims=True))
        return (w / w.sum(-1, keepdims=True)) @ v
    fb = ch08.check_attention_fixed(unscaled, seed=0)
    assert not fb and "1/sqrt(d_k)" in fb.message


def test_errors_in_the_readers_code_are_feedback():
    fb = ch08.check_attention_fixed(lambda q, k, v: q @ v, seed=0)
    assert not fb and "raised ValueError" in fb.message


def test_notebook_shows_the_same_buggy_function_the_checker_uses():
    import inspect
    import json
    import pathlib

    nb = pathlib.Path(__file__).resolve().parents[3] / "notebooks" / "08_common_mistakes.ipynb"
    text = "".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "markdown")
    body = inspect.getsource(ch08.attention_buggy).splitlines()
    for line in [body[0]] + body[2:]:  # skip the docstring line
        assert line in text, line


def test_missing_keepdims_gets_a_hint_and_no_warning(recwarn):
    def no_keepdims(s):
        e = np.exp(s - s.max(axis=-1))
        return e / e.sum(axis=-1)
    fb = ch08.check_stable_softmax(no_keepdims, seed=0)
    assert not fb and "could not be broadcast" in fb.message and "keepdims=True" in fb.message
    ch08.check_stable_softmax(lambda s: np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True), seed=0)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]
