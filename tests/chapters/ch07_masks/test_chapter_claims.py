"""What chapter 7 says about torch's masks, checked (these were visible checks in the chapter).

The chapter's toy claims (cross-attention map, causal cut, padding) are printed outputs that
nbval compares; here: the renormalisation, and torch's three boolean conventions, the float
mask, and what torch's code paths give for a fully masked row (the text names torch 2.13).
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qkv_viz import causal_mask, masked_softmax, multi_head_attention, padding_mask, scaled_dot_product_attention, softmax
from qkv_viz.bridges.torch_mha import params_from_torch_mha

D, H, T, S = 8, 2, 3, 5


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True, dtype=torch.float64)
    with torch.no_grad():                      # torch starts out_proj.bias at 0: make it visible
        torch.nn.init.normal_(mha.out_proj.bias, std=0.1)
    return rng.normal(size=(2, T, D)), rng.normal(size=(2, S, D)), mha


def test_a_masked_row_is_the_unmasked_row_cut_and_renormalised():
    scores = np.random.default_rng(1).normal(size=(6, 6))
    full, cut = masked_softmax(scores, np.ones((6, 6), bool)), masked_softmax(scores, causal_mask(6))
    kept = np.where(causal_mask(6), full, 0)
    np.testing.assert_allclose(cut, kept / kept.sum(-1, keepdims=True))
    assert cut[0, 0] == 1.0
    assert np.all(cut[~causal_mask(6)] == 0)                         # nothing from the future, exactly


def test_only_v_gets_nan_gradients_from_a_fully_masked_row():
    rng = np.random.default_rng(0)
    q, k, v = (torch.tensor(rng.normal(size=s), requires_grad=True) for s in [(4, 3), (6, 3), (6, 2)])
    allowed = torch.ones(4, 6, dtype=torch.bool); allowed[2] = False
    w = torch.softmax((q @ k.T).masked_fill(~allowed, float("-inf")), dim=-1)
    (w @ v).sum().backward()
    assert torch.isnan(v.grad).all()
    assert not torch.isnan(q.grad).any() and not torch.isnan(k.grad).any()


def test_key_padding_mask_true_means_padding(data):
    y, x, mha = data
    mask = padding_mask([5, 3], S)                                   # (B, 1, S), True = real
    ours, _ = multi_head_attention(y, x, params_from_torch_mha(mha), H, mask=mask)
    with torch.no_grad():
        right = mha(torch.tensor(y), torch.tensor(x), torch.tensor(x), key_padding_mask=torch.tensor(~mask[:, 0]))[0]
        wrong = mha(torch.tensor(y), torch.tensor(x), torch.tensor(x), key_padding_mask=torch.tensor(mask[:, 0]))[0]
    np.testing.assert_allclose(right.numpy(), ours, atol=1e-10)
    assert torch.isnan(wrong[0]).all()                               # sentence 0 has no padding: all keys "ignored"


def test_mha_bool_attn_mask_true_means_hidden_and_sdpa_true_means_may_look(data):
    y, x, mha = data
    mask = np.random.default_rng(2).random((T, S)) < 0.6
    mask[:, 0] = True                                                # every row sees a key
    ours_mha, _ = multi_head_attention(y[0], x[0], params_from_torch_mha(mha), H, mask=mask)
    with torch.no_grad():
        blocked = mha(torch.tensor(y[0]), torch.tensor(x[0]), torch.tensor(x[0]), attn_mask=torch.tensor(~mask))[0]
        additive = torch.zeros(T, S, dtype=torch.float64).masked_fill(torch.tensor(~mask), float("-inf"))
        blocked_add = mha(torch.tensor(y[0]), torch.tensor(x[0]), torch.tensor(x[0]), attn_mask=additive)[0]
    np.testing.assert_allclose(blocked.numpy(), ours_mha, atol=1e-10)
    np.testing.assert_allclose(blocked_add.numpy(), ours_mha, atol=1e-10)
    q, k, v = (torch.tensor(a) for a in (y[0], x[0], x[0]))
    sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(mask))
    sdpa_add = F.scaled_dot_product_attention(q, k, v, attn_mask=additive)
    ours = scaled_dot_product_attention(y[0], x[0], x[0], mask=mask)[0]
    np.testing.assert_allclose(sdpa.numpy(), ours, atol=1e-12)
    np.testing.assert_allclose(sdpa_add.numpy(), ours, atol=1e-12)


def test_fully_masked_row_in_torch_2_13(data):
    if not torch.__version__.startswith("2.13"):
        pytest.skip(f"chapter 7 describes torch 2.13; this is {torch.__version__}: re-measure and update the text")
    y, x, mha = data
    mask = np.ones((T, S), bool); mask[1] = False                   # query 1 may look at nothing
    q, k = torch.tensor(y[0]), torch.tensor(x[0])
    sdpa = F.scaled_dot_product_attention(q, k, k, attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(sdpa.numpy(), scaled_dot_product_attention(y[0], x[0], x[0], mask=mask)[0], atol=1e-12)
    assert torch.all(sdpa[1] == 0)
    with torch.no_grad():
        o_w = mha(q[None], k[None], k[None], attn_mask=torch.tensor(~mask))[0]
        o_nw = mha(q[None], k[None], k[None], attn_mask=torch.tensor(~mask), need_weights=False)[0]
    assert torch.isnan(o_w[0, 1]).any()
    assert torch.allclose(o_nw[0, 1], mha.out_proj.bias)
    ours, _ = multi_head_attention(y[0], x[0], params_from_torch_mha(mha), H, mask=mask)
    np.testing.assert_allclose(o_nw[0].numpy(), ours, atol=1e-10)


def test_minus_1e9_gives_uniform_weights_and_minus_inf_nan_gradients():
    scores = torch.randn(3, 4, dtype=torch.float64)
    allowed = torch.ones(3, 4, dtype=torch.bool); allowed[1] = False
    uniform = torch.softmax(scores.masked_fill(~allowed, -1e9), dim=-1)
    assert torch.allclose(uniform[1], torch.full((4,), 0.25, dtype=torch.float64))
    v = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
    (torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ v).sum().backward()
    assert torch.isnan(v.grad).all()
    np.testing.assert_array_equal(masked_softmax(scores.numpy(), allowed.numpy())[1], 0)


def _empty_sentence_outputs(train, need_weights):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    with torch.no_grad():
        mha.out_proj.bias.normal_()                                 # so "the bias" differs from zeros
    mha.train(train)
    x = torch.randn(2, 3, 8)
    empty = torch.tensor([[False] * 3, [True] * 3])
    with torch.no_grad():
        return mha(x, x, x, key_padding_mask=empty, need_weights=need_weights)[0][1], mha.out_proj.bias


def test_mha_self_attention_fast_path_gives_nan_for_an_empty_sentence():
    if not torch.__version__.startswith("2.13"):
        pytest.skip(f"chapter 7 prints torch 2.13's behaviour; this is {torch.__version__}")
    o, bias = _empty_sentence_outputs(train=False, need_weights=False)   # eval + no_grad: the fast path
    assert torch.isnan(o).all()
    o, bias = _empty_sentence_outputs(train=True, need_weights=False)
    assert torch.allclose(o, bias.expand_as(o))
    o, _ = _empty_sentence_outputs(train=True, need_weights=True)
    assert torch.isnan(o).all()


def test_the_books_mask_as_key_padding_mask_puts_all_weight_on_padding(data):
    y, x, mha = data
    mask = np.ones((2, S), bool); mask[1, S - 2:] = False           # sentence 2: last two keys are padding
    q, k = torch.tensor(y), torch.tensor(x)
    with torch.no_grad():
        _, w = mha(q, k, k, key_padding_mask=torch.tensor(mask))    # the book's mask, not inverted
    np.testing.assert_allclose(w[1, :, S - 2:].sum(-1).numpy(), 1.0, atol=1e-12)


def test_sdpa_gives_zeros_and_a_clean_gradient_for_an_empty_row():
    """The page: F.scaled_dot_product_attention on a row that may look at nothing: zero output, no NaN
    in any gradient; the same row by hand with -inf: NaN output and a NaN gradient for V only."""
    rng = np.random.default_rng(0)
    allowed = torch.ones(4, 6, dtype=torch.bool); allowed[2] = False
    for by_hand in (False, True):
        q, k, v = (torch.tensor(rng.normal(size=s), requires_grad=True) for s in [(4, 6), (6, 6), (6, 4)])
        if by_hand:
            out = torch.softmax((q @ k.T / np.sqrt(6)).masked_fill(~allowed, float("-inf")), dim=-1) @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        out.sum().backward()
        if by_hand:
            assert torch.isnan(out[2]).all() and torch.isnan(v.grad).all()
            assert not torch.isnan(q.grad).any() and not torch.isnan(k.grad).any()
        else:
            assert torch.all(out[2] == 0)
            assert not any(torch.isnan(t.grad).any() for t in (q, k, v))


def test_a_head_that_reads_the_next_word_holds_its_target_unless_masked():
    """The causal section: W_q sends input t to input t+1's axis, W_k each input to its own
    (the page's one-hot inputs, strength 8, scaled by sqrt(d_k = 4)); with one-hot values the
    output holds word t+1 unless masked."""
    from qkv_viz import causal_mask, masked_softmax, softmax
    Y = np.eye(4)                                          # (T, T): one-hot decoder inputs
    W_q, W_k = 8.0 * np.eye(4, k=1), np.eye(4)             # input t -> axis t + 1; input -> its own axis
    peek, V = (Y @ W_q) @ (Y @ W_k).T / np.sqrt(4), np.eye(4)
    leaked = softmax(peek) @ V
    masked = masked_softmax(peek, causal_mask(4)) @ V
    t = np.arange(3)
    assert leaked[t, t + 1].min() > 0.9                   # the answer is in the output (0.95)
    assert np.all(masked[t, t + 1] == 0)                  # exactly none of it with the mask
    assert np.all(masked[np.triu_indices(4, 1)] == 0)     # nor of any later word


def test_a_mask_with_a_head_axis_of_1_masks_every_head_alike():
    """The multi-head cell: a (B, 1, T, T) mask over (B, H, T, T) scores = each head under the (B, T, T) mask."""
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(2, 3, 4, 4))                                   # (B, H, T, T)
    mask = causal_mask(4) & (np.arange(4) < np.array([4, 2])[:, None])[:, None, :]   # (B, T, T)
    weights = masked_softmax(scores, mask[:, None])
    for h in range(3):
        np.testing.assert_allclose(weights[:, h], masked_softmax(scores[:, h], mask))
    assert np.all(weights[np.broadcast_to(~mask[:, None], weights.shape)] == 0)


def test_changing_the_last_input_moves_no_earlier_output_under_the_causal_mask():
    """Chapter 7's causality claim, on random self-attention: change the last token's key and value;
    with the causal mask outputs 0..T-2 are unchanged exactly, without it they all move."""
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(size=(3, 6, 4))
    k2, v2 = k.copy(), v.copy()
    k2[-1], v2[-1] = rng.normal(size=(2, 4))
    for mask, moves in ((causal_mask(6), False), (None, True)):
        before, _ = scaled_dot_product_attention(q, k, v, mask=mask)
        after, _ = scaled_dot_product_attention(q, k2, v2, mask=mask)
        change = np.abs(after[:-1] - before[:-1]).max(axis=-1)       # (T-1,): earlier outputs
        assert np.all(change > 1e-6) if moves else np.all(change == 0)


def test_the_pages_two_heads_under_one_mask():
    """Going further's many-heads cell: the peeking head and a previous-input head stacked, on the padded
    batch <bos> le chat noir / <bos> le, under a (B, 1, T, T) mask. Each head equals itself run alone;
    the peeking head's rows are uniform (its targets are hidden), the previous-input head keeps its target."""
    Y = np.eye(4)                                          # (T, d_model = 4 here): one-hot decoder inputs
    W_peek, W_prev = 8.0 * np.eye(4, k=1), 8.0 * np.eye(4, k=-1)
    real = np.arange(4)[None, :] < np.array([4, 2])[:, None]            # (B, T)
    mask = causal_mask(4) & real[:, None, :]                            # (B, T, T)
    Y_b = Y * real[:, :, None]                                          # (B, T, d_model)
    K = Y_b                                                             # W_k = I
    heads = masked_softmax((Y_b[:, None] @ np.stack([W_peek, W_prev])) @ K[:, None].swapaxes(-1, -2) / 2,
                           mask[:, None])                                           # (B, H, T, T)
    for h, W in enumerate((W_peek, W_prev)):
        np.testing.assert_allclose(heads[:, h], masked_softmax((Y_b @ W) @ K.swapaxes(-1, -2) / 2, mask))
    np.testing.assert_allclose(heads[0, 0], np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None])  # uniform rows
    t = np.arange(1, 4)
    assert heads[0, 1][t, t - 1].min() > 0.9                            # previous input found (0.95..0.98)


def test_the_previous_input_head_keeps_its_target_under_the_causal_mask():
    """The causal section's previous-input head: under the causal mask each word puts most of its weight
    on the word before it (0.98, 0.96, 0.95 on the page); <bos>, with no word before it, reads itself."""
    Y = np.eye(4)
    w = masked_softmax((Y @ (8.0 * np.eye(4, k=-1))) @ Y.T / 2, causal_mask(4))
    t = np.arange(1, 4)
    assert w[t, t - 1].min() > 0.9
    np.testing.assert_allclose(w[t, t - 1], np.exp(4) / (np.exp(4) + t))   # e^4 against t keys scoring 0
    assert w[0, 0] == 1.0


def test_the_combined_masks_picture_previous_input_head():
    """'Both masks at once': the previous-input head on the padded batch reads the previous word in the real
    rows, and its filler queries (zero vectors, scores 0) spread evenly over the keys causal & padding allow."""
    Y = np.eye(4)
    real = np.arange(4)[None, :] < np.array([4, 2])[:, None]
    mask = causal_mask(4) & real[:, None, :]
    Y_b = Y * real[:, :, None]
    w = masked_softmax((Y_b @ (8.0 * np.eye(4, k=-1))) @ Y_b.swapaxes(-1, -2) / 2, mask)
    assert w[1, 1, 0] > 0.9                                             # le reads <bos> in the short sentence
    np.testing.assert_allclose(w[1, 2:], mask[1, 2:] / mask[1, 2:].sum(-1, keepdims=True))   # filler rows
    assert np.all(w[~mask] == 0)


def test_gradient_steps_on_w_q_learn_the_hand_written_alignment():
    """'Learning the table': from W_q = 0, gradient steps on the squared miss between output and the
    wanted kind find each step's English word(s); the analytic gradient matches finite differences."""
    X, Y = np.eye(10)[:6], np.eye(10)[6:]
    W_k = np.zeros((10, 6)); W_k[:6] = np.eye(6)
    W_v = np.zeros((10, 4))
    for en, kind in {0: 0, 1: 2, 2: 1, 3: 3, 4: 3}.items():            # the, black, cat, sat, down
        W_v[en, kind] = 1.0
    K, V, want = X @ W_k, X @ W_v, np.eye(4)

    def loss_grad(W_q):
        w = softmax((Y @ W_q) @ K.T / np.sqrt(6))
        miss = w @ V - want
        d_w = miss @ V.T
        d_s = w * (d_w - (d_w * w).sum(-1, keepdims=True))
        return (miss ** 2).sum() / 2, Y.T @ (d_s @ K) / np.sqrt(6), w

    W0 = np.random.default_rng(0).normal(size=(10, 6))
    _, g, _ = loss_grad(W0)
    n = np.zeros((10, 6)); n[7, 2] = 1e-6                               # the row of le, the key cat
    fd = (loss_grad(W0 + n)[0] - loss_grad(W0 - n)[0]) / 2e-6
    assert abs(fd - g[7, 2]) < 1e-6
    W_q = np.zeros((10, 6))
    for _ in range(61):
        loss, g, w = loss_grad(W_q)
        W_q -= 10 * g
    assert loss < 0.02
    assert list(w[:3].argmax(-1)) == [0, 2, 1]                          # <bos> -> the, le -> cat, chat -> black
    assert w[3, 3] > 0.4 and w[3, 4] > 0.4                              # noir -> sat and down


def test_sdpa_gives_zeros_and_a_clean_gradient_for_a_fully_masked_row():
    """Going further: F.scaled_dot_product_attention on the page's 2-d tensors returns zeros for a row that
    may look at nothing, and backward() leaves no NaN in any gradient (masked_fill(-inf) does: V's)."""
    q, k, v = (torch.randn(*s, dtype=torch.float64, requires_grad=True) for s in [(4, 6), (6, 6), (6, 4)])
    allowed = torch.ones(4, 6, dtype=torch.bool); allowed[3] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    assert torch.all(out[3] == 0)
    out.sum().backward()
    assert not any(torch.isnan(t.grad).any() for t in (q, k, v))


def test_is_causal_equals_the_books_causal_mask():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    out = F.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), is_causal=True)
    np.testing.assert_allclose(out.numpy(), masked_softmax(q @ k.T / 2, causal_mask(5)) @ v, atol=1e-12)


def test_mha_default_batch_first_false_attends_across_sentences_without_an_error():
    """c47: the default reads (T, B, .); given (B, T, .) arrays and no mask it runs, with weights over the
    batch axis (B x B per "position"), not over the words, and a different output from batch_first=True."""
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(6, 1, dtype=torch.float64)     # batch_first=False, the default
    x = torch.randn(2, 4, 6, dtype=torch.float64)                    # (B=2, T=4, d_model)
    with torch.no_grad():
        out, w = mha(x, x, x)
        mha.batch_first = True
        out_bf, w_bf = mha(x, x, x)
    assert out.shape == out_bf.shape == (2, 4, 6)
    assert w.shape == (4, 2, 2) and w_bf.shape == (2, 4, 4)          # the default mixes the 2 sentences
    assert not torch.allclose(out, out_bf)



def test_the_explorers_both_neighbours_head():
    """The explorer: the peeking and previous-input heads' scores added. Causal on, each real row reads the
    word before it; causal off, it splits between its two neighbours; hiding le from row chat spreads chat's
    weight evenly over <bos> and chat. The <pad> row (a zero vector, scores 0) spreads over the real keys."""
    from qkv_viz.chapters.ch07_masks.widget import mask_widget
    tokens = ["<bos>", "le", "chat", "noir", "<pad>"]
    scores = np.pad(4.0 * np.eye(4, k=1) + 4.0 * np.eye(4, k=-1), (0, 1))
    fig = mask_widget(scores, tokens, tokens, causal=True, n_real=4)
    t = np.arange(1, 4)
    assert fig.weights[t, t - 1].min() > 0.9
    np.testing.assert_allclose(fig.weights[4], [0.25, 0.25, 0.25, 0.25, 0.0])
    fig.causal = False
    np.testing.assert_allclose(fig.weights[1, 0], fig.weights[1, 2])  # le: <bos> and chat alike
    assert fig.weights[1, 0] > 0.45
    fig.causal = True
    clicked = [False] * 25; clicked[2 * 5 + 1] = True                 # row chat, key le
    fig.clicked = clicked
    np.testing.assert_allclose(fig.weights[2, :3], [0.5, 0.0, 0.5])
    np.testing.assert_allclose(fig.weights[:4, 4], 0.0)                 # no real query reads <pad>
