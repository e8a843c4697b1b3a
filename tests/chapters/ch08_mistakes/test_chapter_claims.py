"""What chapter 8 claims beside its four visible checks (they were checks in the chapter):
the right line is the package's attention, W_k moves the weights, the package's softmax is
the stable line, the naive one gives NaN in numpy and torch while torch.softmax does not."""
import numpy as np
import pytest
import torch

from qkv_viz import init_projection, naive_softmax, scaled_dot_product_attention, softmax
from qkv_viz.chapters.ch08_mistakes import mistakes


def top_weight(c):
    """Section 4's lines: the top score's weight in [c, c-1, c-2] in float32, naive and stable."""
    scores = (c[:, None] + np.array([0.0, -1.0, -2.0])).astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        naive = np.exp(scores) / np.exp(scores).sum(axis=-1, keepdims=True)
    return naive[:, 0], softmax(scores)[:, 0]


def test_the_right_line_is_the_package_attention_and_q_at_v_is_not():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 8))
    q, k, v = (x @ init_projection(8, 4, seed=s) for s in (1, 2, 3))
    right = softmax(q @ k.T / np.sqrt(4)) @ v
    np.testing.assert_allclose(scaled_dot_product_attention(q, k, v)[0], right, atol=1e-12)
    assert np.linalg.norm(right - q @ v) > np.linalg.norm(right)


def test_nudging_w_k_moves_the_weights_w_v_does_not():
    x = np.random.default_rng(3).normal(size=(4, 8))
    W_q, W_k, W_v = (init_projection(8, 4, seed=s) for s in (1, 2, 3))
    nudge = 0.5 * np.random.default_rng(4).normal(size=W_k.shape)
    w = scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v)[1]
    w_k = scaled_dot_product_attention(x @ W_q, x @ (W_k + nudge), x @ W_v)[1]
    w_v = scaled_dot_product_attention(x @ W_q, x @ W_k, x @ (W_v + nudge))[1]
    assert np.abs(w_k - w).max() > 0.01 and np.array_equal(w_v, w)


def test_package_softmax_is_the_stable_line_and_naive_gives_nan():
    s = np.array([1000.0, 999.0, 998.0])
    e = np.exp(s - s.max())
    np.testing.assert_allclose(softmax(s), e / e.sum())
    with np.errstate(all="ignore"):
        assert np.all(np.isnan(naive_softmax(s)))


def test_torch_softmax_handles_large_float32_logits_hand_written_torch_does_not():
    s = torch.tensor([1000.0, 999.0, 998.0], dtype=torch.float32)
    e = np.exp(np.array([0.0, -1.0, -2.0]))
    np.testing.assert_allclose(torch.softmax(s, dim=0).numpy(), e / e.sum(), rtol=1e-6)
    assert torch.isnan(torch.exp(s) / torch.exp(s).sum()).all()


def test_stable_softmax_is_the_same_for_every_shift():
    c = np.linspace(60, 120, 601)
    naive, stable = top_weight(c)
    np.testing.assert_allclose(stable, stable[0], atol=1e-4)   # float32 rounds the gaps c - (c-1)
    assert np.isnan(naive[-1]) and not np.isnan(naive[0])
    assert np.isnan(naive[c > np.log(np.finfo(np.float32).max)]).all()
    assert not np.isnan(naive[c < 88.0]).any()


def test_scaled_toy_scores_give_chapter_3s_weights():
    np.testing.assert_allclose(softmax(np.array([2.0, 5.0, 1.0]) / np.sqrt(2)), [0.10, 0.85, 0.05], atol=0.005)
    np.testing.assert_allclose(softmax(np.array([2.0, 5.0, 1.0])), [0.047, 0.936, 0.017], atol=0.0005)


def test_adding_a_constant_to_every_score_changes_nothing():
    dots = np.array([2.0, 5.0, 1.0])
    np.testing.assert_allclose(softmax(dots), softmax(dots + 100))


def test_torch_stores_bert_sized_fused_weights_out_by_in():
    assert tuple(torch.nn.MultiheadAttention(768, 12).in_proj_weight.shape) == (2304, 768)


def test_the_shape_keeping_bugs_keep_the_shape_and_change_the_weights():
    """Section 5: the previous-word toy (one head of 4 in d_model = 16) and its five bugs."""
    from qkv_viz import causal_mask, masked_softmax, softmax
    k = 2 * np.eye(4)
    q = k[[0, 0, 1, 2]]                                    # query i asks for token i-1 (token 0 for itself)
    causal = causal_mask(4)
    scores = q @ k.T / np.sqrt(4)
    right = masked_softmax(scores, causal)
    rows, before = np.arange(1, 4), np.arange(3)
    np.testing.assert_array_equal(right.argmax(-1), [0, 0, 1, 2])        # each word reads the one before
    assert right[rows, before].min() > 0.7 and right[~causal].sum() == 0
    filled = np.where(causal, scores, -np.inf)
    e0 = np.exp(filled - filled.max(axis=0))
    wrong = {"axis 0": e0 / e0.sum(axis=0),
             "after": np.where(causal, softmax(scores), 0),
             "d_model": masked_softmax(q @ k.T / np.sqrt(16), causal),
             "forgotten": softmax(scores),
             "inverted": masked_softmax(scores, ~causal)}
    for name, w in wrong.items():
        assert w.shape == right.shape and np.abs(w - right).max() > 0.09, name
    np.testing.assert_allclose(wrong["axis 0"].sum(axis=0), 1)              # columns sum to 1,
    assert np.abs(wrong["axis 0"].sum(axis=-1) - 1).max() > 0.3             # rows do not
    assert np.all(wrong["after"].sum(-1)[:3] < 0.95)                         # rows sum to less than 1
    # sqrt(d_model) = sqrt(H) * sqrt(d_k): every row flatter (less weight on the word before)
    assert np.all(wrong["d_model"][rows, before] < right[rows, before] - 0.1)
    np.testing.assert_allclose(q @ k.T / np.sqrt(16), scores / np.sqrt(4))
    assert wrong["forgotten"][~causal].sum() > 0.5                           # the future gets weight
    assert wrong["forgotten"][rows, before].min() > 0.7                      # yet the past still wins
    assert wrong["inverted"][causal].sum() == 0 and np.all(wrong["inverted"][3] == 0)
    # the decoder test of the text: change the last word's value; only the forgotten mask moves earlier outputs
    v = np.random.default_rng(0).normal(size=(4, 3))
    v2 = v.copy(); v2[3] += 1
    assert np.abs((right @ v2 - right @ v)[:3]).max() == 0
    assert np.abs((wrong["forgotten"] @ v2 - wrong["forgotten"] @ v)[:3]).max() > 0.05


def test_the_inline_per_head_reorder_is_the_package_one():
    from qkv_viz import fuse_qkv, init_projection
    from qkv_viz.chapters.ch08_mistakes import mistakes

    d_model, n_heads = 12, 3
    W_qkv = fuse_qkv(*(init_projection(d_model, d_model, seed=s) for s in (1, 2, 3)))
    inline = W_qkv.reshape(d_model, 3, n_heads, d_model // n_heads).transpose(0, 2, 1, 3).reshape(d_model, -1)
    qkv = np.random.default_rng(0).normal(size=(5, d_model)) @ inline
    q, _, _ = mistakes.split_per_head(qkv, n_heads)
    np.testing.assert_allclose(q.transpose(1, 0, 2).reshape(5, d_model),
                               np.random.default_rng(0).normal(size=(5, d_model)) @ W_qkv[:, :d_model])


def test_row_5_only_differences_count_and_big_gaps_kill_the_gradient():
    s = np.array([2.0, 1.0, 0.0])
    np.testing.assert_allclose(softmax(s + 998), softmax(s))
    np.testing.assert_allclose(softmax(s + 100), softmax(s))
    assert softmax(10 * s)[0] > 0.9999
    jac = lambda p: np.linalg.norm(np.diag(p) - np.outer(p, p))  # noqa: E731
    assert jac(softmax(10 * s)) < 1e-3 < 0.3 < jac(softmax(s))
    from qkv_viz.core.diagnostics import softmax_grad_norm
    assert jac(softmax(s)) == pytest.approx(float(softmax_grad_norm(softmax(s))))


def test_the_naive_softmax_returns_a_silent_0_just_below_the_overflow():
    limit = np.log(np.finfo(np.float32).max)
    window = (limit - np.log(1 + np.exp(-1) + np.exp(-2)), limit)
    c_fine = np.linspace(88.0, 89.0, 1001)
    naive, _ = top_weight(c_fine)
    zero = c_fine[naive == 0]
    assert zero.size > 0 and zero.min() >= window[0] - 1e-3 and zero.max() <= window[1]
    assert np.all(np.isnan(naive[c_fine > window[1]])) and np.all(naive[c_fine < window[0]] > 0.6)


def test_changing_the_last_word_moves_no_earlier_output_only_under_the_causal_mask():
    from qkv_viz import causal_mask, masked_softmax
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 16))
    W = [init_projection(16, 4, seed=s) for s in (4, 5, 6)]

    def head(x, mask):
        q, k, v = (x @ w for w in W)
        return masked_softmax(q @ k.T / 2.0, mask) @ v

    x_last = x.copy()
    x_last[-1] = rng.normal(size=16)
    for mask, earlier_moves in ((causal_mask(4), False), (np.ones((4, 4), dtype=bool), True)):
        moved = np.abs(head(x_last, mask) - head(x, mask)).max(axis=1)
        assert (moved[:-1].max() > 0.1) == earlier_moves and moved[-1] > 0.1
        if not earlier_moves:
            assert moved[:-1].max() == 0.0


def _tied_toy():
    """Section 2's toy: contents (N, 3, 3), tokens x (N, 3, 6) = [type one-hot | content],
    queries (3, 3) = each type's label, W_label = 4 x the type columns, W_content = the content columns (6, 3)."""
    content = np.random.default_rng(0).normal(size=(500, 3, 3))
    x = np.concatenate([np.broadcast_to(np.eye(3), (500, 3, 3)), content], axis=-1)
    W_label = np.vstack([4 * np.eye(3), np.zeros((3, 3))])
    W_content = np.vstack([np.zeros((3, 3)), np.eye(3)])
    return content, x, np.eye(3, 6) @ W_label, W_label, W_content


def _lookup(x, q, content, W_k, W_v, reads_content=None):
    """reads_content (d_v, 3): where the value keeps the content; zeros when it holds none."""
    w = softmax(q @ (x @ W_k).swapaxes(-1, -2) / np.sqrt(W_k.shape[1]))   # (N, 3, 3)
    out = w @ (x @ W_v)
    got = out if reads_content is None else out @ reads_content
    return np.diagonal(w, axis1=-2, axis2=-1).mean(), np.linalg.norm(got - content, axis=-1).mean()


def test_tying_k_and_v_at_the_same_width_loses_the_match_or_the_content():
    """Section 2: separate W_k, W_v do both jobs exactly; tied to the label the query finds the
    token and gets the label; tied to the content it cannot find the token and does worse than
    no lookup. No tied W of the same width comes near separate's 0: blends of the two, with
    random W_q at every gain, and random tied W."""
    content, x, q, W_label, W_content = _tied_toy()
    match, error = _lookup(x, q, content, W_label, W_content)
    assert match > 0.999 and error < 1e-3
    guess = np.linalg.norm(content.mean(axis=1, keepdims=True) - content, axis=-1).mean()
    match, error = _lookup(x, q, content, W_label, W_label, reads_content=np.zeros((3, 3)))
    assert match > 0.999 and error > guess + 0.2            # found, but the value holds no content
    np.testing.assert_allclose(error, np.linalg.norm(content, axis=-1).mean())   # = returning zeros
    match, error = _lookup(x, q, content, W_content, W_content)
    assert match < 0.35 and error > guess + 0.2             # lost: worse than no lookup
    rng = np.random.default_rng(1)
    for t in np.linspace(0, 1, 11):
        W = (1 - t) * W_label + t * W_content
        errors = [_lookup(x, g * rng.normal(size=(3, 3)), content, W, W)[1] for g in (0.1, 1, 10, 100) for _ in range(10)]
        assert min(errors + [_lookup(x, q, content, W, W)[1]]) > 1.0, t
    for _ in range(50):
        W = rng.normal(size=(6, 3))
        assert _lookup(x, rng.normal(size=(3, 3)), content, W, W)[1] > 1.0


def test_merging_heads_without_the_transpose_keeps_the_shape_and_mixes_tokens():
    H, T, d_v = 2, 3, 2
    out = 10 * np.arange(H)[:, None, None] + np.arange(T)[None, :, None] + np.zeros((H, T, d_v))
    merged = out.transpose(1, 0, 2).reshape(T, H * d_v)
    bug = out.reshape(T, H * d_v)
    assert bug.shape == merged.shape
    np.testing.assert_array_equal(merged[0], [0, 0, 10, 10])
    np.testing.assert_array_equal(bug[0], [0, 0, 1, 1])       # token 1's head-0 output in token 0's row
    np.testing.assert_array_equal(merged % 10, np.arange(T)[:, None] + np.zeros((1, H * d_v)))


def test_a_tied_k_v_twice_as_wide_finds_the_token_and_returns_its_content_and_its_label():
    """Section 2: tied at width 6, W = [W_label | W_content], label and content fit side by side
    (the third panel: weight 0.997, content error 0.006): tying costs width."""
    content, x, q, W_label, W_content = _tied_toy()
    q = np.hstack([q, np.zeros((3, 3))])
    kv = x @ np.hstack([W_label, W_content])
    w = softmax(q @ kv.swapaxes(-1, -2) / np.sqrt(6))
    out = w @ kv
    assert np.diagonal(w, axis1=-2, axis2=-1).mean() > 0.99
    assert np.linalg.norm(out[..., 3:] - content, axis=-1).mean() < 0.01
    np.testing.assert_allclose(out[..., :3], np.broadcast_to(q[:, :3], out[..., :3].shape), atol=0.1)


def test_minus_1e9_is_minus_inf_in_float16_and_a_fully_hidden_row_gives_nan():
    """Section 4: -1e9 overflows float16 to -inf, so an all-hidden row is NaN; finfo.min gives a
    uniform row and overflows when added; the package's masked_softmax gives 0."""
    from qkv_viz import masked_softmax
    with np.errstate(over="ignore", invalid="ignore"):
        row = np.full(3, -1e9).astype(np.float16)
        assert np.all(np.isneginf(row))
        assert np.all(np.isnan(np.exp(row - row.max())))
    row = np.full(3, np.finfo(np.float16).min).astype(np.float16)
    e = np.exp(row - row.max())
    np.testing.assert_allclose(e / e.sum(), 1 / 3, atol=1e-3)       # no NaN, but uniform over hidden keys
    with np.errstate(over="ignore"):
        assert np.isneginf(np.finfo(np.float16).min + np.float16(-100))   # added as a mask, it overflows
    assert np.isfinite(np.float32(-1e9))
    np.testing.assert_array_equal(masked_softmax(np.zeros(3, np.float16), np.zeros(3, dtype=bool)), 0)


def test_a_b_1_s_padding_mask_on_b_h_t_s_scores_masks_head_h_with_sentence_h():
    from qkv_viz import masked_softmax
    pad = np.arange(3) < np.array([3, 1])[:, None]                 # (B, S)
    scores = np.zeros((2, 2, 3, 3))                                 # (B, H, T, S), B = H
    right = masked_softmax(scores, pad[:, None, None, :])
    bug = masked_softmax(scores, np.broadcast_to(pad[:, None, :], scores.shape))
    np.testing.assert_allclose(right[1, :, 0, 1:].sum(-1), [0, 0])
    np.testing.assert_allclose(bug[1, :, 0, 1:].sum(-1), [2 / 3, 0])
    with pytest.raises(ValueError):                                 # B != H: numpy refuses
        np.broadcast_to(np.ones((2, 1, 3), dtype=bool), (2, 4, 3, 3))
    with pytest.raises(ValueError, match=r"\(B, 1, 1, S\)"):          # the package refuses (B, 1, S) outright
        masked_softmax(scores, pad[:, None, :])
    filled = np.where(pad[:, None, :], scores, -np.inf)             # hand-written: broadcasts without a word
    e = np.exp(filled - filled.max(-1, keepdims=True))
    np.testing.assert_allclose((e / e.sum(-1, keepdims=True))[1, :, 0, 1:].sum(-1), [2 / 3, 0])


def test_q_at_k_without_the_transpose_runs_when_s_equals_d_k_and_changes_the_weights():
    """Section 1: `q @ k` (no .T) keeps the shape when S = d_k, rows still sum to 1, the weights move."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 8))
    q, k = (x @ init_projection(8, 4, seed=s) for s in (1, 2))
    right, bug = softmax(q @ k.T / 2), softmax(q @ k / 2)
    assert bug.shape == right.shape
    np.testing.assert_allclose(bug.sum(axis=-1), 1)
    assert np.abs(bug - right).max() > 0.1
    with pytest.raises(ValueError):
        np.ones((4, 3)) @ np.ones((5, 3))                 # S != d_k: numpy refuses


def test_a_0_1_mask_multiplied_into_the_scores_hides_nothing():
    """Section 5: scores * mask sets hidden scores to 0, not -inf: the future keeps weight. On the
    toy (centred keys, so the hidden scores are below 0) it is not no mask: it gives the future
    more weight, because the hidden scores rise to 0 above the unwanted visible keys'."""
    from qkv_viz import masked_softmax
    k_pos = 2 * (np.eye(4) - 1 / 4)
    scores = k_pos[[0, 0, 1, 2]] @ k_pos.T / 2
    causal = np.tril(np.ones((4, 4), dtype=bool))
    assert np.all(scores != 0) and np.all(scores[~causal] < 0)
    multiplied, unmasked = softmax(scores * causal), softmax(scores)
    assert np.abs(multiplied - unmasked).max() > 0.05               # its own panel, not no mask's
    assert multiplied[~causal].sum() > unmasked[~causal].sum() > 0.5
    np.testing.assert_allclose(masked_softmax(scores, causal)[~causal], 0)
    for i in range(1, 4):                                           # the unwanted visible keys score below the hidden 0
        assert np.all(scores[i, :i][np.arange(i) != i - 1] < 0)
    np.testing.assert_allclose(masked_softmax(scores, causal)[[1, 2, 3], [0, 1, 2]].round(2), [0.88, 0.79, 0.71])
    s = np.array([1.0, -3.0])
    assert softmax(s * np.array([1, 0]))[1] > softmax(s)[1]


def test_float16_fill_table_nan_only_when_every_key_is_hidden_and_unguarded():
    """Section 4's table: -1e9 and finfo.min + a score are stored as -inf in float16; with one key
    visible every fill gives [1, 0, 0]; with all hidden -inf gives NaN, finfo.min a uniform row,
    the guard 0."""
    from qkv_viz import masked_softmax
    f16 = np.float16
    with np.errstate(over="ignore", invalid="ignore"):
        fills = {"-1e9": f16(-1e9), "finfo.min": np.finfo(f16).min, "sum": np.finfo(f16).min + f16(-100)}
        assert np.isneginf(fills["-1e9"]) and np.isneginf(fills["sum"])
        for name, fill in fills.items():
            one, every = np.array([0, fill, fill], f16), np.full(3, fill, f16)
            w_one, w_every = (np.exp(r - r.max()) / np.exp(r - r.max()).sum() for r in (one, every))
            np.testing.assert_array_equal(w_one, [1, 0, 0])
            if name == "finfo.min":
                np.testing.assert_allclose(w_every, 1 / 3, atol=1e-3)
            else:
                assert np.isnan(w_every).all()
    visible = np.array([True, False, False])
    np.testing.assert_array_equal(masked_softmax(np.zeros(3, f16), visible), [1, 0, 0])
    np.testing.assert_array_equal(masked_softmax(np.zeros(3, f16), np.zeros(3, dtype=bool)), 0)


def test_minus_1e9_in_float16_is_harmless_when_a_key_is_visible():
    """Section 4: stored as -inf, -1e9 acts like the right fill unless every key is hidden."""
    with np.errstate(over="ignore"):
        row = np.array([0, -1e9, -1e9]).astype(np.float16)
    e = np.exp(row - row.max())
    np.testing.assert_array_equal(e / e.sum(), [1, 0, 0])


def test_tied_to_the_content_the_weights_follow_the_random_contents_not_the_role():
    """Section 2: with W = W_content the keys are the contents, so query i's weights rank the
    tokens by content[i], whichever role they have; the no-lookup row weights each token 1/3."""
    content, x, q, W_label, W_content = _tied_toy()
    k = x @ W_content                                               # (N, S, 3) = the contents
    w = softmax(q @ k.swapaxes(-1, -2) / np.sqrt(3))                # (N, T, S)
    np.testing.assert_array_equal(w.argmax(-1), content.argmax(axis=1))   # query i -> largest content[i]
    assert abs(np.diagonal(w, axis1=-2, axis2=-1).mean() - 1 / 3) < 0.05  # near chance on the asked-for token


def test_dot_t_on_a_batch_reverses_every_axis():
    """Section 1: on (B, S, d_k), .T gives (d_k, S, B); swapaxes(-1, -2) gives (B, d_k, S)."""
    k = np.zeros((2, 3, 4))
    assert k.T.shape == (4, 3, 2) and k.swapaxes(-1, -2).shape == (2, 4, 3)
