import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from qkv_viz.core.softmax import naive_softmax, softmax, softmax_jacobian

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


def test_matches_torch_softmax_along_each_axis():
    x = np.random.default_rng(0).normal(size=(3, 4, 5)) * 4
    for axis in (0, 1, 2, -1):
        expected = torch.softmax(torch.tensor(x), dim=axis).numpy()
        np.testing.assert_allclose(softmax(x, axis=axis), expected, atol=1e-12)


def test_temperature_divides_the_logits():
    x = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(softmax(x, temperature=0.5), softmax(2 * x), atol=1e-15)
    assert np.ptp(softmax(x, temperature=1e6)) < 1e-5  # hot -> uniform


def test_huge_logits_give_finite_one_hot():
    p = softmax([1e6, 0.0, -1e6])
    np.testing.assert_array_equal(p, [1.0, 0.0, 0.0])
    assert np.all(np.isnan(naive_softmax([1e6, 0.0, -1e6])[:1]))  # the naive one overflows


@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=finite))
@settings(max_examples=60, deadline=None)
def test_rows_sum_to_one_and_are_positive(x):
    p = softmax(x)
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-12)
    assert np.all(p >= 0)


@given(arrays(np.float64, 5, elements=finite), finite)
@settings(max_examples=60, deadline=None)
def test_adding_a_constant_changes_nothing(x, c):
    np.testing.assert_allclose(softmax(x + c), softmax(x), atol=1e-12)


def test_jacobian_matches_torch_autograd():
    s = torch.tensor([0.3, -1.2, 2.0, 0.5], dtype=torch.float64)
    expected = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), s).numpy()
    np.testing.assert_allclose(softmax_jacobian(softmax(s.numpy())), expected, atol=1e-12)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_bad_temperature_is_named(bad):
    with pytest.raises(ValueError, match="temperature"):
        softmax([1.0, 2.0], temperature=bad)


def test_non_numeric_input_is_a_type_error():
    with pytest.raises(TypeError, match="x"):
        softmax(["a", "b"])


def test_tiny_temperature_gives_one_hot_not_nan():
    p = softmax([1.0, 3.0, 2.0], temperature=1e-308)
    np.testing.assert_array_equal(p, [0.0, 1.0, 0.0])
