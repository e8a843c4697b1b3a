"""Claims chapter 1 makes on the page, checked against the package (moved out of the reading flow)."""
import numpy as np

from qkv_viz import scaled_dot_product_attention
from qkv_viz.chapters.ch01_library.library import (DEMO_QUERY, VALUE_AXES, demo_library, hard_lookup,
                                                   soft_lookup, toy_sentence)


def _by_hand(query, keys, values, tau):
    scores = keys @ query
    e = np.exp((scores - scores.max()) / tau)
    w = e / e.sum()
    return w @ values, w


def test_the_pages_four_lines_equal_the_package_and_read_as_shares():
    lib = demo_library()
    np.testing.assert_allclose(lib.values.sum(axis=1), 1.0)  # every value: shares of the content
    out, w = _by_hand(DEMO_QUERY, lib.keys, lib.values, 1.0)
    out_pkg, w_pkg = soft_lookup(DEMO_QUERY, lib, temperature=1.0)
    np.testing.assert_allclose(w_pkg, w, atol=1e-12)
    np.testing.assert_allclose(out_pkg, out, atol=1e-12)
    assert hard_lookup(DEMO_QUERY, lib) == int(np.argmax(lib.keys @ DEMO_QUERY)) == 0
    np.testing.assert_allclose(out.sum(), 1.0)


def test_most_of_the_recipes_come_from_robot_chefs():
    lib = demo_library()
    _, w = soft_lookup(DEMO_QUERY, lib, 1.0)
    contributions = w[:, None] * lib.values  # (5, 3)
    recipes = VALUE_AXES.index("recipes")
    assert lib.titles[int(contributions[:, recipes].argmax())] == "Robot Chefs"
    assert contributions[:, recipes].max() > 0.5 * contributions[:, recipes].sum()


def test_dividing_by_sqrt_dk_is_a_temperature_of_sqrt_dk():
    lib = demo_library()
    d_k = lib.keys.shape[1]
    _, w = scaled_dot_product_attention(DEMO_QUERY[None, :], lib.keys, lib.values, scale=True)
    np.testing.assert_allclose(w[0], soft_lookup(DEMO_QUERY, lib, temperature=np.sqrt(d_k))[1])


def test_the_toy_sentence_tells_its_story():
    tokens, X, W_q, W_k, W_v = toy_sentence()
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    scores = Q @ K.T / np.sqrt(Q.shape[1])
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    out = weights @ V
    out_pkg, w_pkg = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(w_pkg, weights)
    np.testing.assert_allclose(out_pkg, out)
    i = tokens.index
    assert tokens[int(weights[i("sat")].argmax())] == "cat"
    assert tokens[int(weights[i("cat")].argmax())] == "sat"
    assert tokens[int(weights[i("the")].argmax())] == "cat"  # a poor book, a keen reader
    assert min(X.min(), W_q.min(), W_k.min()) >= 0 and np.all(scores >= 0)
    np.testing.assert_allclose(K[i("the")], 0)
    np.testing.assert_allclose(weights[:, i("the")], weights.min(axis=1))  # "the" is read least
    assert X[i("sat"), 1] == 1 and out[i("sat"), 0] > 0.5  # "sat" goes in a verb, comes out mostly noun
