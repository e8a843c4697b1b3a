"""qkv_viz.core.positions: sinusoids, RoPE in both pairings, the relative property, bad input."""
import numpy as np
import pytest

from qkv_viz.core.positions import (apply_rope, pair_index, rope_cos_sin, rope_dot, rope_dots_by_offset,
                                    rope_frequencies, rope_matrix, sinusoidal_positions)

rng = np.random.default_rng(0)


def test_sinusoids_by_the_formula():
    P = sinusoidal_positions(7, 6, base=100.0)
    for m in range(7):
        for i in range(3):
            w = 100.0 ** (-2 * i / 6)
            assert P[m, 2 * i] == pytest.approx(np.sin(m * w))
            assert P[m, 2 * i + 1] == pytest.approx(np.cos(m * w))


def test_sinusoid_dot_products_depend_on_the_offset_only():
    P = sinusoidal_positions(20, 16)
    G = P @ P.T  # (20, 16) @ (16, 20) -> (20, 20)
    for d in range(-19, 20):
        diag = np.diagonal(G, d)
        np.testing.assert_allclose(diag, diag[0], atol=1e-12)


def test_frequencies():
    theta = rope_frequencies(8, base=10000.0)
    np.testing.assert_allclose(theta, [1, 0.1, 0.01, 0.001])


@pytest.mark.parametrize("pairing", ["adjacent", "half"])
def test_rope_equals_its_block_rotation_matrix(pairing):
    x = rng.normal(size=(5, 8))
    pos = np.array([0, 1, 2.5, 7, -3])
    out = apply_rope(x, pos, base=50.0, pairing=pairing)
    for t in range(5):
        R = rope_matrix(pos[t], 8, base=50.0, pairing=pairing)
        np.testing.assert_allclose(out[t], x[t] @ R.T, atol=1e-12)
        np.testing.assert_allclose(R @ R.T, np.eye(8), atol=1e-12)  # a rotation


def test_adjacent_by_hand():
    x = np.array([[1.0, 2.0, 3.0, 4.0]] * 2)
    out = apply_rope(x, base=100.0)  # position 1: angles 1 and 0.1
    c0, s0, c1, s1 = np.cos(1), np.sin(1), np.cos(0.1), np.sin(0.1)
    np.testing.assert_allclose(out[0], x[0])
    np.testing.assert_allclose(out[1], [1 * c0 - 2 * s0, 1 * s0 + 2 * c0, 3 * c1 - 4 * s1, 3 * s1 + 4 * c1])


def test_half_is_adjacent_on_permuted_coordinates():
    x = rng.normal(size=(6, 10))
    first, second = pair_index(10, "half")
    perm = np.empty(10, dtype=int)
    perm[0::2], perm[1::2] = first, second  # adjacent slot j holds half-coordinate perm[j]
    via_adjacent = np.empty_like(x)
    via_adjacent[:, perm] = apply_rope(x[:, perm], pairing="adjacent")
    np.testing.assert_allclose(apply_rope(x, pairing="half"), via_adjacent, atol=1e-12)
    assert not np.allclose(apply_rope(x, pairing="half"), apply_rope(x, pairing="adjacent"))


@pytest.mark.parametrize("pairing", ["adjacent", "half"])
def test_relative_property(pairing):
    q, k = rng.normal(size=16), rng.normal(size=16)
    for m, n in [(0, 3), (5, 8), (40, 43), (2.5, 5.5)]:
        assert rope_dot(q, k, m, n, pairing=pairing) == pytest.approx(rope_dot(q, k, 0, 3, pairing=pairing))
    d = np.arange(-20, 21)
    want = [rope_dot(q, k, 7, 7 + int(x), base=500.0, pairing=pairing) for x in d]
    np.testing.assert_allclose(rope_dots_by_offset(q, k, d, base=500.0, pairing=pairing), want, atol=1e-12)
    assert rope_dot(q, k, 0, 0, pairing=pairing) == pytest.approx(q @ k)


def test_lengths_kept_and_batch_axes():
    x = rng.normal(size=(2, 3, 4, 8))  # (B, H, T, d_k)
    out = apply_rope(x)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1))
    np.testing.assert_allclose(out[1, 2], apply_rope(x[1, 2]))


def test_cos_sin_shapes():
    cos, sin = rope_cos_sin(np.arange(4), 6)
    assert cos.shape == sin.shape == (4, 3)
    np.testing.assert_allclose(cos ** 2 + sin ** 2, 1)


@pytest.mark.parametrize("call, pattern, shapes", [
    (lambda: apply_rope(np.ones((4, 5))), r"d_k\) must be even", ["(4, 5)"]),
    (lambda: apply_rope(np.ones((4, 6)), positions=[0, 1, 2]), "one entry per row", ["(3,)", "(4, 6)"]),
    (lambda: apply_rope(np.ones(6)), "x must have at least 2 dimensions", ["(6,)"]),
    (lambda: apply_rope(np.ones((2, 4)), pairing="rotate_half"), "pairing must be one of", []),
    (lambda: apply_rope(np.full((2, 4), np.nan)), "NaN", ["(2, 4)"]),
    (lambda: apply_rope(np.ones((2, 4)), base=-1.0), "base must be", []),
    (lambda: sinusoidal_positions(4, 7), "d_model must be even", []),
    (lambda: rope_dot(np.ones(4), np.ones(6), 0, 1), "same width", ["(4,)", "(6,)"]),
    (lambda: rope_frequencies(3), "d_k must be even", []),
])
def test_bad_input_is_named(call, pattern, shapes):
    with pytest.raises(ValueError, match=pattern) as info:
        call()
    for s in shapes:
        assert s in str(info.value)
