"""Chapter 6's claims that left the page: the numpy lines equal the package, torch stores what the
page says, and the cost numbers of its Going further section are torch's own."""
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import qkv_viz as qv
from qkv_viz import BERT_BASE, AttentionConfig, head_columns, init_multihead_params, merge_heads, split_heads
from qkv_viz.bridges.torch_mha import params_from_torch_mha
from qkv_viz.chapters.ch06_multi_head.sizes_figures import size_report

CONFIG = AttentionConfig(d_model=512, n_heads=8)


@pytest.fixture(scope="module")
def page():
    """The page's X, params and its head-by-head loop."""
    H, d_k = CONFIG.n_heads, CONFIG.d_k
    X = np.random.default_rng(0).normal(size=(6, CONFIG.d_model))
    params = init_multihead_params(CONFIG, seed=1)
    rng = np.random.default_rng(2)  # random biases, so forgetting one shows
    params = replace(params, **{f"b_{n}": rng.normal(size=CONFIG.d_model) for n in "qkvo"})
    outs, maps = [], []
    for i in range(H):
        block = slice(i * d_k, (i + 1) * d_k)
        q_i = X @ params.W_q[:, block] + params.b_q[block]
        k_i = X @ params.W_k[:, block] + params.b_k[block]
        v_i = X @ params.W_v[:, block] + params.b_v[block]
        s = q_i @ k_i.T / np.sqrt(d_k)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        outs.append(w @ v_i)
        maps.append(w)
    return X, params, outs, np.stack(maps)


def page_multi_head(X, p, n_heads):
    """The page's multi_head, line for line."""
    T, d_k, d_v = X.shape[0], p.W_q.shape[1] // n_heads, p.W_v.shape[1] // n_heads
    Q = (X @ p.W_q + p.b_q).reshape(T, n_heads, d_k).transpose(1, 0, 2)
    K = (X @ p.W_k + p.b_k).reshape(T, n_heads, d_k).transpose(1, 0, 2)
    V = (X @ p.W_v + p.b_v).reshape(T, n_heads, d_v).transpose(1, 0, 2)
    scores = Q @ K.transpose(0, 2, 1) / np.sqrt(d_k)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    heads = weights @ V
    concat = heads.transpose(1, 0, 2).reshape(T, n_heads * d_v)
    return concat @ p.W_o + p.b_o, weights


def test_pages_multi_head_equals_the_head_loop_and_the_package(page):
    X, params, outs, maps = page
    by_slices = np.concatenate(outs, axis=-1) @ params.W_o + params.b_o
    out, weights = page_multi_head(X, params, CONFIG.n_heads)
    np.testing.assert_allclose(out, by_slices, atol=1e-10, rtol=0)
    np.testing.assert_allclose(weights, maps, atol=1e-10, rtol=0)
    pkg_out, pkg_w = qv.multi_head_attention(X, X, params, CONFIG.n_heads)
    np.testing.assert_allclose(out, pkg_out, atol=1e-10, rtol=0)
    np.testing.assert_allclose(weights, pkg_w, atol=1e-10, rtol=0)


def test_pages_multi_head_with_d_v_different_from_d_k():
    """d_v may differ from d_k: the page's function reads both from the shapes, like the package."""
    rng = np.random.default_rng(3)
    d_model, H, d_k, d_v = 8, 2, 3, 5
    W = dict(W_q=rng.normal(size=(d_model, H * d_k)), W_k=rng.normal(size=(d_model, H * d_k)),
             W_v=rng.normal(size=(d_model, H * d_v)), W_o=rng.normal(size=(H * d_v, d_model)))
    b = dict(b_q=rng.normal(size=H * d_k), b_k=rng.normal(size=H * d_k), b_v=rng.normal(size=H * d_v),
             b_o=rng.normal(size=d_model))
    p = qv.MultiHeadParams(**W, **b)
    x = rng.normal(size=(4, d_model))
    out, maps = page_multi_head(x, p, H)
    want, want_w = qv.multi_head_attention(x, x, p, H)
    np.testing.assert_allclose(out, want, atol=1e-10)
    np.testing.assert_allclose(maps, want_w, atol=1e-10)


def test_the_toy_one_head_averages_two_heads_keep_both():
    """The page's hand-built toy (features animal, place, verb, colour, who, where): one head's row
    splits and the colours cancel; two heads fetch one each, into the "who" and "where" slots."""
    X = np.array([[1., 0, 0, 1, 0, 0], [0., 0, 1, 0, 0, 0], [0., 1, 0, -1, 0, 0]])
    z = np.zeros
    W_q = z((6, 2)); W_q[2] = 5
    W_k = z((6, 2)); W_k[0, 0] = W_k[1, 1] = 1
    W_v = z((6, 2)); W_v[3] = 1
    W_o = z((2, 6)); W_o[0, 4] = W_o[1, 5] = 1
    one = qv.MultiHeadParams(W_q, W_k, W_v, W_o, z(2), z(2), z(2), z(6))
    two = qv.MultiHeadParams(W_q, W_k, W_v, W_o, z(2), z(2), z(2), z(6))
    out1, w1 = page_multi_head(X, one, 1)
    out2, w2 = page_multi_head(X, two, 2)
    assert w1[0, 1, 0] == pytest.approx(w1[0, 1, 2]) and w1[0, 1, 0] > 0.45
    assert np.abs(out1[1]).max() < 1e-12  # red and blue cancel, in every slot
    assert w2[0, 1, 0] > 0.95 and w2[1, 1, 2] > 0.95
    assert out2[1, 4] > 0.95 and out2[1, 5] < -0.95  # who: red (+1), where: blue (-1)
    assert np.abs(out2[1, :4]).max() < 1e-12 and np.abs(out2[[0, 2]]).max() < 1e-12  # nothing else written


def test_torch_packs_in_proj_only_when_kdim_and_vdim_equal_embed_dim():
    packed = torch.nn.MultiheadAttention(embed_dim=16, num_heads=2)
    separate = torch.nn.MultiheadAttention(embed_dim=16, num_heads=2, kdim=8, vdim=8)
    assert packed.in_proj_weight is not None and packed.q_proj_weight is None
    assert separate.in_proj_weight is None
    assert tuple(separate.k_proj_weight.shape) == (16, 8) and tuple(separate.v_proj_weight.shape) == (16, 8)


def test_heads_from_slices_equal_multi_head_attention(page):
    X, params, outs, maps = page
    by_slices = np.concatenate(outs, axis=-1) @ params.W_o + params.b_o
    out, weights = qv.multi_head_attention(X, X, params, CONFIG.n_heads)
    np.testing.assert_allclose(by_slices, out, atol=1e-10, rtol=0)
    np.testing.assert_allclose(maps, weights, atol=1e-10, rtol=0)
    d_v = CONFIG.d_v
    as_sum = sum(outs[i] @ params.W_o[i * d_v:(i + 1) * d_v] for i in range(CONFIG.n_heads)) + params.b_o
    np.testing.assert_allclose(as_sum, by_slices, atol=1e-10, rtol=0)


def test_split_and_merge_are_the_pages_reshape_and_transpose(page):
    X, params, _, _ = page
    H, d_k = CONFIG.n_heads, CONFIG.d_k
    Q = X @ params.W_q
    Q_heads = Q.reshape(6, H, d_k).transpose(1, 0, 2)
    assert np.array_equal(split_heads(Q, H), Q_heads)
    assert np.array_equal(merge_heads(Q_heads), Q)
    assert Q.reshape(H, 6, d_k).shape == Q_heads.shape and not np.allclose(Q.reshape(H, 6, d_k)[3], Q_heads[3])
    assert np.array_equal(torch.tensor(Q).view(6, H, d_k).transpose(0, 1).numpy(), Q_heads)


def test_torch_stores_one_packed_projection_and_nothing_per_head():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(embed_dim=512, num_heads=8, batch_first=True)
    assert {n for n, _ in mha.named_parameters()} == {"in_proj_weight", "in_proj_bias",
                                                       "out_proj.weight", "out_proj.bias"}
    assert mha.q_proj_weight is None
    assert sum(p.numel() for p in mha.parameters()) == qv.param_count(CONFIG, bias=True)
    rows = mha.in_proj_weight[3 * 64:4 * 64].detach().double().numpy()  # head 3's query rows
    assert np.array_equal(head_columns(params_from_torch_mha(mha).W_q, 3, 8), rows.T)


def _torch_flops(mha, x):
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        mha(x, x, x, need_weights=True)
    return counter.get_total_flops()


def test_heads_are_free_by_torchs_flop_counter():
    x = torch.randn(1, 128, 512)
    counted = {H: _torch_flops(torch.nn.MultiheadAttention(512, H, batch_first=True), x) for H in (8, 1)}
    assert counted[8] == counted[1] == qv.attention_flops(CONFIG, 128)["total"]
    assert qv.param_count(CONFIG) == qv.param_count(AttentionConfig(512, 1))
    assert qv.attention_flops(CONFIG, 128) == qv.attention_flops(AttentionConfig(512, 1), 128)


def test_bert_base_table_is_torchs_count():
    table = dict(size_report(BERT_BASE, T=512))
    mha = torch.nn.MultiheadAttention(768, 12, batch_first=True)
    assert sum(p.numel() for p in mha.parameters()) == table["whole layer, with biases"] == 2_362_368
    assert tuple(mha.in_proj_weight.shape) == (2304, 768)
    assert _torch_flops(mha, torch.randn(1, 512, 768)) == table["FLOPs total, T=512"]
    assert table["FLOPs Q, K, V projections, T=512"] == 6 * 512 * 768 ** 2
    assert round(1 - 1.5e9 / table["FLOPs Q, K, V projections, T=512"], 2) == 0.17


def test_quadratic_part_overtakes_the_projections_just_above_1_5_d_model():
    def quadratic(T):
        f = qv.attention_flops(BERT_BASE, T)
        return f["scores"] + f["weighted_sum"]
    crossover = next(T for T in range(1, 10_000) if quadratic(T) > qv.attention_flops(BERT_BASE, T)["projections"])
    assert crossover == 1.5 * BERT_BASE.d_model + 1


def test_the_pages_cost_formulas_are_the_packages_counts():
    """Going further counts parameters and FLOPs by hand (layer_cost); the package's counts agree."""
    from qkv_viz import AttentionConfig, attention_flops, param_count
    for d_model, n_heads, T in [(512, 8, 128), (512, 1, 128), (768, 12, 512), (1024, 16, 7)]:
        c = AttentionConfig(d_model=d_model, n_heads=n_heads)
        d_k = d_model // n_heads
        assert param_count(c, bias=False, per_head=True) == 3 * d_model * d_k
        assert param_count(c, bias=False) == 4 * d_model * n_heads * d_k
        assert param_count(c, bias=True) == 4 * d_model * n_heads * d_k + 4 * d_model
        f = attention_flops(c, T)
        assert f["projections"] == 6 * T * d_model * n_heads * d_k
        assert f["scores"] == f["weighted_sum"] == 2 * n_heads * T * T * d_k
        assert f["output"] == 2 * T * n_heads * d_k * d_model
        assert f["total"] == f["projections"] + f["scores"] + f["weighted_sum"] + f["output"]
    assert 4 * 768 * 768 == 2_359_296 and round((4 * 768 * 768 + 4 * 768) / 1e6, 2) == 2.36


def test_the_pages_effective_keys_is_the_packages_effective_tokens():
    from qkv_viz.core.diagnostics import effective_tokens
    w = np.random.default_rng(0).dirichlet(np.ones(5), size=(3, 4))
    w[0, 0] = [1, 0, 0, 0, 0]
    mine = np.exp(-(w * np.log(np.maximum(w, 1e-300))).sum(-1))
    np.testing.assert_allclose(mine, effective_tokens(w))


def test_with_the_toys_keys_any_one_head_passes_the_colours_as_one_number():
    """The page's narrowed claim: another W_q tilts the row, but with these keys (they read no colour)
    one head's value for "sat" carries the colours only as a_cat c_cat + a_mat c_mat, times W_v's colour row."""
    X = np.array([[1., 0, 0, 1, 0, 0], [0., 0, 1, 0, 0, 0], [0., 1, 0, -1, 0, 0]])
    W_k = np.zeros((6, 2)); W_k[0, 0] = W_k[1, 1] = 1
    rng = np.random.default_rng(3)
    tilted = 0
    for _ in range(200):
        W_q, W_v = rng.normal(size=(6, 2)) * 3, rng.normal(size=(6, 2))
        for c_cat, c_mat in rng.normal(size=(5, 2)):
            Xc = X.copy(); Xc[0, 3], Xc[2, 3] = c_cat, c_mat
            s = (Xc @ W_q)[1] @ (Xc @ W_k).T / np.sqrt(2)
            a = np.exp(s - s.max()); a /= a.sum()
            X0 = Xc.copy(); X0[:, 3] = 0                                # the same sentence without colours
            colour_part = a @ (Xc @ W_v) - a @ (X0 @ W_v)               # keys read no colour: same weights a
            np.testing.assert_allclose(colour_part, (a[0] * c_cat + a[2] * c_mat) * W_v[3], atol=1e-12)
            tilted += abs(a[0] - a[2]) > 0.1
    assert tilted > 100                                                  # most W_q do tilt the row


def test_any_one_head_that_fetches_the_cat_loses_the_mat():
    """The page's argument, on 1,000 random single heads (W_q = 5 * normal, seed 0): one softmax row sums
    to 1, so a head giving the cat >= 0.9 gives the mat <= 0.1, and no head gives both more than half."""
    X = np.array([[1., 0, 0, 1, 0, 0], [0., 0, 1, 0, 0, 0], [0., 1, 0, -1, 0, 0]])
    W_k = np.zeros((6, 2)); W_k[0, 0] = W_k[1, 1] = 1
    W_qs = 5 * np.random.default_rng(0).normal(size=(1000, 6, 2))
    s = np.einsum("nd,td->nt", (X[1] @ W_qs), X @ W_k) / np.sqrt(2)    # (1000, 3): "sat"'s scores
    a = np.exp(s - s.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
    cat = a[:, 0] >= 0.9
    assert cat.sum() > 100 and a[cat, 2].max() <= 0.1 + 1e-12
    assert np.minimum(a[:, 0], a[:, 2]).max() < 0.5


def _sat_concat(X, n_heads, W_q, W_v=None):
    """The page's sat_reads with W_o = identity: "sat"'s heads side by side (2,)."""
    W_k = np.zeros((6, 2)); W_k[0, 0] = W_k[1, 1] = 1
    if W_v is None:
        W_v = np.zeros((6, 2)); W_v[3] = 1
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    outs = []
    for c in np.split(np.arange(2), n_heads):
        s = Q[1, c] @ K[:, c].T / np.sqrt(len(c))
        a = np.exp(s - s.max()); a /= a.sum()
        outs.append(a @ V[:, c])
    return np.concatenate(outs)


def _best_miss(n_heads, W_q, W_v=None):
    """The page's best_miss: RMS error (who, where) of the least-squares W_o and bias over the 4 colourings."""
    X0 = np.array([[1., 0, 0, 1, 0, 0], [0., 0, 1, 0, 0, 0], [0., 1, 0, -1, 0, 0]])
    colourings = [(a, b) for a in (1, -1) for b in (1, -1)]
    rows = []
    for c_cat, c_mat in colourings:
        X = X0.copy(); X[0, 3], X[2, 3] = c_cat, c_mat
        rows.append(_sat_concat(X, n_heads, W_q, W_v))
    A = np.column_stack([np.array(rows), np.ones(4)])
    y = np.array(colourings, dtype=float)
    return np.sqrt(((A @ np.linalg.lstsq(A, y, rcond=None)[0] - y) ** 2).mean(0))


def test_over_four_colourings_one_head_always_misses_and_two_heads_are_exact():
    """The page's argument: keys that read no colour give one row for all four colourings, so one head's
    colours are one number m and the best W_o's squared misses in who and where add to 1, for the toy's
    W_q and for any random W_q and W_v (seed 0); two heads miss by 0. The reviewer's counter-example
    (W_q[2] = (5, 0), exact on the original and the swapped sentence) fails "where" over all four."""
    W_q = np.zeros((6, 2)); W_q[2] = 5
    one = _best_miss(1, W_q)
    assert one == pytest.approx([0.5 ** 0.5] * 2, abs=0.01)
    assert _best_miss(2, W_q).max() < 1e-9
    rng = np.random.default_rng(0)
    for _ in range(100):
        W_q, W_v = 3 * rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
        assert (_best_miss(1, W_q, W_v) ** 2).sum() == pytest.approx(1, abs=1e-6)
        assert _best_miss(2, W_q).max() < 1e-6
    cat = np.zeros((6, 2)); cat[2, 0] = 5
    assert _best_miss(1, cat)[1] > 0.99


def test_the_shared_colour_feature_is_what_stops_one_head():
    """The page's second assumption matters: give the cat's colour and the mat's colour separate features
    (value column 0 reads the first, column 1 the second) and one head of width 2, with the toy's W_q and
    its 0.49 / 0.49 row, writes both colours exactly in all four colourings. With the one shared colour
    feature (the page's toy) the same head misses by 0.71 in each."""
    W_q = np.zeros((7, 2)); W_q[2] = 5                       # features: animal, place, verb, cat-colour,
    W_k = np.zeros((7, 2)); W_k[0, 0] = W_k[1, 1] = 1        # mat-colour, who, where
    rows, colourings = [], [(a, b) for a in (1, -1) for b in (1, -1)]
    for separate in (True, False):
        W_v = np.zeros((7, 2))
        if separate:
            W_v[3, 0] = W_v[4, 1] = 1
        else:
            W_v[3] = 1                                       # one shared colour feature, as on the page
        outs = []
        for c_cat, c_mat in colourings:
            X = np.zeros((3, 7)); X[0, 0] = X[1, 2] = X[2, 1] = 1
            if separate:
                X[0, 3], X[2, 4] = c_cat, c_mat
            else:
                X[0, 3], X[2, 3] = c_cat, c_mat
            s = (X @ W_q)[1] @ (X @ W_k).T / np.sqrt(2)
            a = np.exp(s - s.max()); a /= a.sum()
            assert a[0] == pytest.approx(0.49, abs=0.005) and a[2] == pytest.approx(0.49, abs=0.005)
            outs.append(a @ (X @ W_v))
        A = np.column_stack([np.array(outs), np.ones(4)])
        y = np.array(colourings, dtype=float)
        W_best = np.linalg.lstsq(A, y, rcond=None)[0]
        rows.append((np.sqrt(((A @ W_best - y) ** 2).mean(0)), W_best))
    (miss_sep, W_sep), (miss_shared, _) = rows
    assert miss_sep.max() < 1e-9 and np.diag(W_sep[:2]) == pytest.approx([2.03] * 2, abs=0.01)
    assert miss_shared == pytest.approx([0.5 ** 0.5] * 2, abs=0.01)


def test_the_pages_multi_head_on_minilm_layer_0_is_the_models_own_and_head_2_reads_the_previous_token():
    """The main path runs the page's multi_head on minilm_layer0's input and weights: its 12 maps are
    the model's own, head 2 is a previous-token head (the only one of 12 above 0.5 on that pattern) and
    several heads put much weight on [CLS], heads 0 and 3 most on [SEP], as the text under the grid says."""
    from qkv_viz.bridges.real_forward import run
    from qkv_viz.bridges.real_model import load_model
    from qkv_viz.chapters.ch06_multi_head.trained_layer import minilm_layer0
    tokens, X, p, model_maps = minilm_layer0("The black cat sat on the mat.")
    assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "sat" in tokens and X.shape == (10, 384)
    assert all(getattr(p, n).shape == (384, 384) for n in ("W_q", "W_k", "W_v", "W_o"))
    assert all(getattr(p, n).shape == (384,) for n in ("b_q", "b_k", "b_v", "b_o"))
    model = load_model()
    trace = run(model, "The black cat sat on the mat.")
    np.testing.assert_array_equal(X, trace.hidden_states[0])                 # the input of layer 0, not 1
    np.testing.assert_array_equal(model_maps, trace.weights[0])
    _, w = page_multi_head(X, p, 12)
    assert w.shape == (12, 10, 10)
    np.testing.assert_allclose(w, model_maps, atol=1e-12)
    i = np.arange(1, w.shape[-1])
    previous = w[:, i, i - 1].mean(-1)                    # (12,)
    assert previous[2] > 0.95 and np.sum(previous > 0.5) == 1
    assert np.sum(w[:, :, 0].mean(-1) > 0.3) >= 3         # "several put much of it on [CLS]"
    # "heads 0 and 3 favour [SEP] instead, and head 9 sends [CLS]'s own row to '.' and [SEP]"
    assert list(np.flatnonzero(w.mean(1).argmax(-1) == len(tokens) - 1)) == [0, 3]
    assert tokens[-2] == "." and list(np.flatnonzero(w[:, 0, -2:].sum(-1) > 0.5)) == [3, 9]


def test_the_pages_multi_head_equals_torch_within_1e_5_with_random_biases():
    """The regression check behind the page's printed comparison (c27): torch's packed in_proj_weight,
    cut in three and transposed, gives our layout; outputs and per-head weights agree to 1e-5."""
    X = np.random.default_rng(0).normal(size=(6, CONFIG.d_model))
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(embed_dim=512, num_heads=8, batch_first=True)
    with torch.no_grad():
        torch.nn.init.normal_(mha.in_proj_bias, std=0.1)
        torch.nn.init.normal_(mha.out_proj.bias, std=0.1)
        x = torch.tensor(X, dtype=torch.float32)[None]
        out_t, w_t = mha(x, x, x, need_weights=True, average_attn_weights=False)
        W_in, b_in = mha.in_proj_weight.double().numpy(), mha.in_proj_bias.double().numpy()
        W_out, b_out = mha.out_proj.weight.double().numpy(), mha.out_proj.bias.double().numpy()
    W_q, W_k, W_v = (W.T for W in np.split(W_in, 3))
    p = qv.MultiHeadParams(W_q, W_k, W_v, W_out.T, *np.split(b_in, 3), b_out)
    ours, ours_w = page_multi_head(X, p, 8)
    assert np.abs(ours - out_t[0].numpy()).max() < 1e-5
    assert np.abs(ours_w - w_t[0].numpy()).max() < 1e-5
    swapped = qv.MultiHeadParams(W_k, W_q, W_v, W_out.T, *np.split(b_in, 3), b_out)   # a wrong cut shows
    assert np.abs(page_multi_head(X, swapped, 8)[1] - w_t[0].numpy()).max() > 1e-3
