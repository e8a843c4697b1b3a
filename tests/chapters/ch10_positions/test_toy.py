"""Chapter 10's computations and the claims its text makes about them."""
import numpy as np
import pytest

import qkv_viz as qv
from qkv_viz.chapters.ch10_positions import toy
from qkv_viz.core.positions import apply_rope, sinusoidal_positions

W = toy.projections(seed=4)  # the chapter's projections
X1, X2 = toy.sentence("dog bites man"), toy.sentence("man bites dog")
ORDER = [2, 1, 0]


def test_sentences_are_the_same_rows_reordered():
    np.testing.assert_array_equal(X2, X1[ORDER])
    with pytest.raises(ValueError, match="words must be some of"):
        toy.sentence("cat bites man")


@pytest.mark.parametrize("seed", range(5))
def test_without_positions_order_is_invisible_for_any_projection(seed):
    Wr = toy.projections(seed=seed)
    out1, w1 = toy.self_attention(X1, *Wr)
    out2, w2 = toy.self_attention(X2, *Wr)
    np.testing.assert_allclose(out2, out1[ORDER])
    np.testing.assert_allclose(w2, w1[np.ix_(ORDER, ORDER)])


def test_sinusoids_and_rope_make_dog_attend_differently():
    P = sinusoidal_positions(3, 4)
    for turn in (lambda X: toy.self_attention(X + P, *W)[1],
                 lambda X: qv.scaled_dot_product_attention(apply_rope(X @ W[0]), apply_rope(X @ W[1]), X @ W[2])[1]):
        w1, w2 = turn(X1), turn(X2)
        dog1, dog2 = w1[0], w2[2][ORDER]          # dog's weights on (dog, bites, man)
        assert np.abs(dog1 - dog2).max() > 0.05


def test_the_four_terms_add_up_and_word_word_is_the_same_in_both_sentences():
    P = sinusoidal_positions(3, 4)
    t1, t2 = toy.score_terms(X1, P, W[0], W[1]), toy.score_terms(X2, P, W[0], W[1])
    Q, K = (X1 + P) @ W[0], (X1 + P) @ W[1]
    np.testing.assert_allclose(sum(t1.values()), Q @ K.T)
    assert t1["word-word"][0, 2] == pytest.approx(t2["word-word"][2, 0])
    assert t1["position-position"][0, 2] != pytest.approx(t2["position-position"][2, 0])


def test_position_terms_after_the_projections_are_not_relative():
    """The text: p_m . p_n depends on n - m only, p_m A p_n^T does not."""
    P = sinusoidal_positions(16, 4)
    A = W[0] @ W[1].T
    G, PAP = P @ P.T, P @ A @ P.T
    assert all(np.allclose(np.diagonal(G, d), np.diagonal(G, d)[0]) for d in range(-15, 16))
    assert not all(np.allclose(np.diagonal(PAP, d), np.diagonal(PAP, d)[0]) for d in range(-15, 16))


def test_dot_grid_is_constant_along_diagonals_and_decay_is_as_described():
    q, k = (X1 @ W[0])[0], (X1 @ W[1])[2]
    grid = toy.dot_grid(q, k, 16)
    for d in range(-15, 16):
        np.testing.assert_allclose(np.diagonal(grid, d), np.diagonal(grid, d)[0], atol=1e-12)
    d = np.arange(0, 513)
    matching, unrelated = toy.decay_curves(64, d, n_samples=500, seed=0)
    assert matching[0] == pytest.approx(1.0, abs=0.05) and matching[0] == matching.max()
    assert matching[16] < 0.8 * matching[0] and matching[512] < matching[16]
    assert np.abs(unrelated).max() < 0.05


def test_widget_key_mostly_matches_its_query():
    q, k = toy.widget_vectors()
    assert q.shape == k.shape == (64,)
    assert q @ k / (np.linalg.norm(q) * np.linalg.norm(k)) > 0.6
