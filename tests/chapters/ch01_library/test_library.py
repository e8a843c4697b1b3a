"""The library analogy: lookups agree with the attention core and with the limits."""
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from qkv_viz import scaled_dot_product_attention, softmax
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, Library, demo_library, soft_lookup


def weights_vs_temperature(query, lib, temperatures):
    return np.stack([soft_lookup(query, lib, t)[1] for t in temperatures])  # (len(temperatures), n_books)


def hard_weights(query, lib):
    return np.eye(lib.n_books)[int(np.argmax(lib.keys @ query))]  # one-hot on the best dot product


def test_soft_lookup_matches_softmax_by_hand():
    lib = demo_library()
    for t in (0.3, 1.0, 4.0):
        out, w = soft_lookup(DEMO_QUERY, lib, t)
        w_hand = softmax(lib.keys @ DEMO_QUERY / t)
        np.testing.assert_allclose(w, w_hand, atol=1e-12)
        np.testing.assert_allclose(out, w_hand @ lib.values, atol=1e-12)


def test_cold_limit_is_hard_lookup_and_hot_limit_is_uniform():
    lib = demo_library()
    cold, hot = weights_vs_temperature(DEMO_QUERY, lib, [1e-3, 1e6])
    np.testing.assert_allclose(cold, hard_weights(DEMO_QUERY, lib), atol=1e-9)
    np.testing.assert_allclose(hot, 1 / lib.n_books, atol=1e-5)


def test_weights_sharpen_monotonically_as_temperature_falls():
    lib = demo_library()
    top = weights_vs_temperature(DEMO_QUERY, lib, [10, 3, 1, 0.3, 0.1]).max(axis=1)
    assert np.all(np.diff(top) > 0)


def test_bad_inputs_name_the_argument():
    lib = demo_library()
    with pytest.raises(ValueError, match="query"):
        soft_lookup([1.0, 2.0, 3.0], lib)
    with pytest.raises(ValueError, match="temperature"):
        soft_lookup(DEMO_QUERY, lib, 0.0)
    with pytest.raises(ValueError, match="titles"):
        Library(("a", "b"), np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="unique"):
        Library(("a", "a"), np.zeros((2, 2)), np.zeros((2, 1)))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_random_libraries_respect_both_limits(seed):
    rng = np.random.default_rng(seed)
    n_books, d_k = rng.integers(2, 7), rng.integers(1, 4)
    lib = Library([f"b{i}" for i in range(n_books)], rng.normal(size=(n_books, d_k)),
                  rng.normal(size=(n_books, 2)))
    q = rng.normal(size=d_k)
    s = np.sort(lib.keys @ q)
    assume(s[-1] - s[-2] > 1e-2)  # a unique best book
    cold, hot = weights_vs_temperature(q, lib, [1e-4, 1e8])
    np.testing.assert_allclose(cold, hard_weights(q, lib), atol=1e-6)
    np.testing.assert_allclose(hot, 1 / lib.n_books, atol=1e-6)
    out, w = soft_lookup(q, lib, 1.0)
    np.testing.assert_allclose(w.sum(), 1.0)
    np.testing.assert_allclose(out, w @ lib.values)
