"""Chapter 10's computations and the claims its text makes about them."""
import ast

import numpy as np
import pytest

import qkv_viz as qv
from qkv_viz.chapters.ch10_positions import toy
from qkv_viz.core.attention import scaled_dot_product_attention
from qkv_viz.core.positions import apply_rope, rope_dots_by_offset, sinusoidal_positions

W = toy.constructed()  # the chapter's hand-built projections (the page builds them cell by cell)
X1, X2 = toy.sentence("dog bites man"), toy.sentence("man bites dog")
P3 = toy.positions(3)
# the page writes the same vectors as a dict; keep the two in step
PAGE_EMB = {"dog": [1, 1, 0, 0, 0, 0], "bites": [0, 0, 0, 1, 0, 0], "man": [1, 0, 1, 0, 0, 0]}
ORDER = [2, 1, 0]
SENTENCES = (("dog bites man", X1), ("man bites dog", X2))


def rope_weights(X):
    return scaled_dot_product_attention(apply_rope(X @ W[0]), apply_rope(X @ W[1]), X @ W[2])


def test_the_pages_projections_are_the_toys():
    """The page builds W_q, W_k in fresh arrays per section (word part; plus position rows for X + P;
    plus RoPE's place part), so no later cell changes an earlier one's; together they are the toy's."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[3] / "notebooks" / "10_order_and_positions.ipynb").read_text())
    ns = {"np": np}
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        src = "".join(c["source"])
        for node in ast.parse(src).body:              # whole statements, also those over several lines
            stmt = ast.get_source_segment(src, node)
            if stmt.startswith(("F = ", "W_q", "W_k", "W_v", "c, s = ", "S = ")):
                exec(stmt, ns)
    np.testing.assert_allclose(ns["W_v"], W[2])
    for j, name in enumerate(("W_q", "W_k")):
        word, sin, rope = (W[j].copy() for _ in range(3))
        word[:, :2] = word[4:, 4:] = sin[:, :2] = rope[4:, 4:] = 0
        np.testing.assert_allclose(ns[name], word)
        np.testing.assert_allclose(ns[name + "_sin"], sin)
        np.testing.assert_allclose(ns[name + "_rope"], rope)
    word_only = [w.copy() for w in W[:2]]
    for w in word_only:
        w[:, :2] = 0                                                    # without RoPE's place part
    for X in (X1, X2, X1 + P3):
        np.testing.assert_allclose(X @ W[0] @ (X @ W[1]).T, X @ word_only[0] @ (X @ word_only[1]).T)


def test_the_verb_splits_without_positions_and_takes_the_noun_before_it_with_either():
    for words, X in SENTENCES:
        names = words.split()
        before = names[names.index("bites") - 1]
        plain = toy.self_attention(X, *W)[1][1]
        np.testing.assert_allclose(plain[0], plain[2])                  # the two nouns alike
        for out, w in (toy.self_attention(X + P3, *W), rope_weights(X)):
            assert w[1].argmax() == names.index(before) and w[1].max() > 0.8
            feature = 1 if before == "dog" else 2                       # animal or person: the biter
            assert out[1][feature] > 0.8 > 0.1 > out[1][3 - feature]
        w_add, w_rope = toy.self_attention(X + P3, *W)[1], rope_weights(X)[1]
        np.testing.assert_allclose(w_rope[[0, 2]], 1 / 3)              # RoPE: nouns ask for nothing
        assert not np.allclose(w_add[[0, 2]], 1 / 3)                    # X + P pulls every word


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


def test_the_four_terms_add_up_word_word_is_the_nouns_and_position_position_one_token_back():
    for words, X in SENTENCES:
        t = toy.score_terms(X, P3, W[0], W[1])
        Q, K = (X + P3) @ W[0], (X + P3) @ W[1]
        np.testing.assert_allclose(sum(t.values()), Q @ K.T)
        np.testing.assert_allclose(t["word-word"][1, [0, 2]], toy.STRENGTH ** 2)   # the verb asks for a noun
        np.testing.assert_allclose(t["word-position"], 0, atol=1e-12)                # by construction
        np.testing.assert_allclose(t["position-word"], 0, atol=1e-12)
        np.testing.assert_allclose(t["position-position"][1, [0, 2]], toy.STRENGTH ** 2 * np.cos([0, 2]))
    assert toy.score_terms(X1, P3, W[0], W[1])["word-word"][1, 0] == toy.score_terms(X2, P3, W[0], W[1])["word-word"][1, 2]
    with pytest.raises(ValueError, match="same shape"):
        toy.score_terms(X1, sinusoidal_positions(3, 4), W[0], W[1])


def test_ropes_place_part_scores_minus_s2_sin_of_the_offset():
    q, k = (X1 @ W[0])[1], (X1 @ W[1])[0]                              # the verb's query, a noun's key
    q0, k0 = q.copy(), k.copy()
    q0[2:], k0[2:] = 0, 0                                                # pair 0 only
    assert q0 @ k0 == 0
    d = np.arange(-3, 4)
    np.testing.assert_allclose(rope_dots_by_offset(q0, k0, d), -toy.STRENGTH ** 2 * np.sin(d), atol=1e-12)
    full = rope_dots_by_offset(q, k, [-1, 1])                            # the whole q, k: before beats after
    assert full[0] > full[1] + 2 * toy.STRENGTH ** 2 * 0.8


def test_dot_grid_is_constant_along_diagonals_and_decay_is_as_described():
    q, k = (X1 @ W[0])[1], (X1 @ W[1])[0]
    grid = toy.dot_grid(q, k, 16)
    for d in range(-15, 16):
        np.testing.assert_allclose(np.diagonal(grid, d), np.diagonal(grid, d)[0], atol=1e-12)
    d = np.arange(0, 513)
    expected = toy.expected_decay(64, d)
    assert expected[0] == pytest.approx(1.0) and expected[0] == expected.max()
    assert expected[16] < 0.8 * expected[0] and expected[512] < expected[16]
    assert 0 < expected[128:].min() < expected[128:].max() < 0.6        # wanders, never reaches 0
    # "from 128 to 512 it swings by more than it fell from 16 to 128"
    assert np.ptp(expected[128:]) > expected[16] - expected[128] > 0
    # falls fastest over the first positions
    assert (expected[0] - expected[16]) / 16 > 10 * (expected[16] - expected[512]) / 496
    assert np.any(np.diff(expected[16:]) > 0.05)
    assert expected[16] > expected[128:].max() and expected[16] == pytest.approx(0.605, abs=5e-4)


def test_expected_decay_is_the_mean_over_random_queries():
    rng = np.random.default_rng(0)
    d = np.array([0, 3, 40, 300])
    q = rng.normal(size=(4000, 16))                                     # many random queries, k = q
    sampled = np.mean([rope_dots_by_offset(x, x, d) for x in q], axis=0) / 16
    np.testing.assert_allclose(sampled, toy.expected_decay(16, d), atol=0.03)
    theta = 10000.0 ** (-np.arange(0, 64, 2) / 64)        # the page's line, d_k = 64
    np.testing.assert_allclose(np.cos(d[:, None] * theta[None, :]).mean(axis=1), toy.expected_decay(64, d))


def test_weights_line_lists_words_alphabetically_and_rejects_unknown_words():
    w = np.array([[0.5, 0.2, 0.3], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4]])
    assert toy.weights_line("dog bites man", w, "dog") == "dog bites man: dog's weights on bites 0.200, dog 0.500, man 0.300"
    assert toy.weights_line("dog bites man", w, "bites").startswith("dog bites man: bites' weights on bites 0.100")
    with pytest.raises(ValueError, match="word must be one of"):
        toy.weights_line("dog bites man", w, "cat")


def test_causal_mask_breaks_the_symmetry_and_turning_v_stamps_absolute_positions():
    causal = np.tril(np.ones((3, 3), dtype=bool))
    o1, _ = scaled_dot_product_attention(X1 @ W[0], X1 @ W[1], X1 @ W[2], mask=causal)
    o2, _ = scaled_dot_product_attention(X2 @ W[0], X2 @ W[1], X2 @ W[2], mask=causal)
    assert not np.allclose(o1[1], o2[1])                                # "bites" differs under the mask
    Q, K, V = X1 @ W[0], X1 @ W[1], X1 @ W[2]
    outs = {}
    for start in (0, 5):
        pos = np.arange(start, start + 3)
        outs[start] = [scaled_dot_product_attention(apply_rope(Q, pos), apply_rope(K, pos), v)[0]
                       for v in (V, apply_rope(V, pos))]
    np.testing.assert_allclose(outs[0][0], outs[5][0], atol=1e-12)      # q, k turned: shift-invariant
    assert not np.allclose(outs[0][1], outs[5][1])                       # v turned too: not


def test_the_two_pairings_differ_except_at_offset_0():
    rng = np.random.default_rng(1)
    q8, k8 = rng.normal(size=(2, 8))
    Qs, Ks = np.tile(q8, (8, 1)), np.tile(k8, (8, 1))
    half = apply_rope(Qs, pairing="half") @ apply_rope(Ks, pairing="half").T
    adj = apply_rope(Qs, pairing="adjacent") @ apply_rope(Ks, pairing="adjacent").T
    np.testing.assert_allclose(np.diag(half), np.diag(adj))             # offset 0 agrees
    assert np.abs(half - adj).max() > np.abs(half).max()                # the error beats the scores


def test_widget_key_is_the_query_so_the_curve_peaks_at_offset_0():
    q, k = toy.widget_vectors()
    assert q.shape == k.shape == (64,) and q is not k
    np.testing.assert_array_equal(q, k)
    for d_k in (8, 64):
        d = np.arange(-31, 32)
        assert d[rope_dots_by_offset(q[:d_k], k[:d_k], d).argmax()] == 0

def test_chapter9s_learned_positions_are_alike_near_and_unlike_far():
    from qkv_viz.bridges.real_model import bundled_model_dir, load_model
    if bundled_model_dir() is None:
        pytest.skip("the bundled all-MiniLM-L6-v2 is not installed")
    model = load_model()
    U = model.pos_emb / np.linalg.norm(model.pos_emb, axis=1, keepdims=True)
    near, far = (np.mean(np.sum(U[:-d] * U[d:], axis=1)) for d in (1, 32))
    assert near > 0.8 > 0.3 > far


def test_the_pages_vectors_are_the_toys():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).parents[3] / "notebooks" / "10_order_and_positions.ipynb").read_text())
    srcs = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    stmt = next(ast.get_source_segment(src, node) for src in srcs for node in ast.parse(src).body
                if ast.get_source_segment(src, node).startswith("EMB = "))
    assert eval(stmt.split("=", 1)[1]) == PAGE_EMB
    assert {w: list(v) for w, v in toy.EMBEDDINGS.items()} == PAGE_EMB


def test_shuffling_the_pages_sentence_only_shuffles_its_outputs():
    """The page's first claim (printed there, checked here): each word's output is the same in both orders."""
    out1, w1 = toy.self_attention(X1, *W)
    out2, w2 = toy.self_attention(X2, *W)
    np.testing.assert_allclose(out2, out1[ORDER])
    np.testing.assert_allclose(w2, w1[np.ix_(ORDER, ORDER)])


def test_minilm_with_its_position_table_zeroed_permutes_its_outputs():
    """The page, after X + P: zero MiniLM's position table and the two sentences' outputs are a permutation of
    each other; with the table, each token's output changes (cosines below 1) but stays close (> 0.6),
    the words closer than any two different tokens of one sentence."""
    from dataclasses import replace
    from qkv_viz.bridges.real_model import bundled_model_dir, load_model
    from qkv_viz.bridges.real_forward import run
    if bundled_model_dir() is None:
        pytest.skip("the bundled all-MiniLM-L6-v2 is not installed")
    model = load_model()
    no_pos = replace(model, pos_emb=np.zeros_like(model.pos_emb))
    swap = [0, 3, 2, 1, 4]
    for m, zeroed in ((model, False), (no_pos, True)):
        h1 = run(m, "dog bites man").hidden_states[-1]
        h2 = run(m, "man bites dog").hidden_states[-1][swap]
        cos = np.sum(h1 * h2, axis=1) / np.linalg.norm(h1, axis=1) / np.linalg.norm(h2, axis=1)
        if zeroed:
            np.testing.assert_allclose(h1, h2, atol=1e-5)
        else:
            assert np.all(cos < 0.999) and np.all(cos > 0.6)
            assert np.all(cos[1:4] > 0.85)                # the words: barely changed
            U = h1 / np.linalg.norm(h1, axis=1, keepdims=True)
            others = (U @ U.T)[~np.eye(5, dtype=bool)]     # the page's baseline: two different tokens
            assert cos[1:4].min() > others.max()
