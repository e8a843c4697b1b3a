"""Chapter 6 exercises: each worked solution passes its checker, each placeholder and each
typical mistake is refused with a message that names the mistake (never the answer)."""
import numpy as np
import pytest
import torch

from qkv_viz.chapters.ch06_multi_head import exercises as ch06
from qkv_viz.chapters.ch06_multi_head import solutions as sol


def _stub(*args):
    return None


def _merge(heads):
    """(H, T, d_v) -> (T, H*d_v), the heads side by side."""
    H, T, d_v = heads.shape
    return heads.transpose(1, 0, 2).reshape(T, H * d_v)


CODE = [(ch06.check_batched_mha, sol.batched_mha),
        (ch06.check_head_contributions, sol.head_contributions),
        (ch06.check_fold_ov, sol.fold_ov),
        (ch06.check_head_from_in_proj, sol.head_from_in_proj)]


@pytest.mark.parametrize("seed", [None, 0, 1, 2])
@pytest.mark.parametrize("check,solution", CODE)
def test_code_solutions_pass(check, solution, seed):
    fb = check(solution, seed=seed)
    assert fb.correct, fb.message


@pytest.mark.parametrize("check,solution", CODE)
def test_code_placeholders_are_pending_not_errors(check, solution):
    for placeholder in (None, _stub):
        fb = check(placeholder)
        assert not fb.correct and fb.pending, fb.message


def test_head_from_in_proj_is_what_torchs_forward_uses_for_that_head():
    """The reference cut equals the package's head_columns of torch's own weights (read by the bridge),
    and the heads it gives reproduce torch's per-head attention maps."""
    from qkv_viz import head_columns
    from qkv_viz.bridges.torch_mha import params_from_torch_mha
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(24, 4, bias=False, batch_first=True, dtype=torch.float64)
    W = mha.in_proj_weight.detach().numpy()
    p = params_from_torch_mha(mha)
    x = np.random.default_rng(0).normal(size=(5, 24))
    _, maps = mha(*[torch.from_numpy(x)[None]] * 3, need_weights=True, average_attn_weights=False)
    for h in range(4):
        W_q, W_k, W_v = ch06.head_from_in_proj_reference(W, 4, h)
        for mine, theirs in zip((W_q, W_k, W_v), (p.W_q, p.W_k, p.W_v)):
            np.testing.assert_array_equal(mine, head_columns(theirs, h, 4))
        s = (x @ W_q) @ (x @ W_k).T / np.sqrt(6)
        w = np.exp(s - s.max(-1, keepdims=True)); w /= w.sum(-1, keepdims=True)
        np.testing.assert_allclose(w, maps[0, h].detach().numpy(), atol=1e-12)


def test_head_from_in_proj_mistakes_are_named():
    def untransposed(W, H, h):
        return tuple(m.T for m in sol.head_from_in_proj(W, H, h))

    def queries_thrice(W, H, h):
        q = sol.head_from_in_proj(W, H, h)[0]
        return q, q, q

    def per_head_packing(W, H, h):
        d_k = W.shape[1] // H
        return tuple(W[3 * h * d_k + i * d_k: 3 * h * d_k + (i + 1) * d_k].T for i in range(3))

    def counted_from_1(W, H, h):
        return sol.head_from_in_proj(W, H, h - 1)

    for fn, says in [(untransposed, "transpose"), (queries_thrice, "three times"),
                     (per_head_packing, "head by head"), (counted_from_1, "counted from 0")]:
        fb = ch06.check_head_from_in_proj(fn, seed=1)
        assert not fb.correct and says in fb.message, (says, fb.message)


def test_head_contribution_mistakes_are_named():
    def interleaved(heads, W_o):
        H = heads.shape[0]
        return np.stack([heads[h] @ W_o[h::H] for h in range(H)])

    def summed(heads, W_o):
        return _merge(heads) @ W_o

    def shuffled(heads, W_o):
        return sol.head_contributions(heads, W_o)[::-1]  # right parts, given to the wrong heads

    for fn, words in ((interleaved, "consecutive block"), (summed, "summed output"), (shuffled, "sum over heads")):
        fb = ch06.check_head_contributions(fn, seed=6)
        assert not fb.correct and words in fb.message, fb.message


def test_head_contributions_sum_to_concat_times_W_o():
    rng = np.random.default_rng(0)
    heads, W_o = rng.normal(size=(3, 4, 5)), rng.normal(size=(15, 7))
    parts = ch06.head_contributions_reference(heads, W_o)
    assert parts.shape == (3, 4, 7)
    np.testing.assert_allclose(parts.sum(0), _merge(heads) @ W_o, atol=1e-12)
    np.testing.assert_allclose(parts[1], heads[1] @ W_o[5:10], atol=1e-12)


def test_fold_ov_mistakes_are_named():
    def summed(W_v, W_o, H):
        return W_v @ W_o

    def interleaved(W_v, W_o, H):
        return np.stack([W_v[:, h::H] @ W_o[h::H] for h in range(H)])

    def mismatched(W_v, W_o, H):  # right sum, wrong pairing
        parts = sol.fold_ov(W_v, W_o, H)
        return np.concatenate([parts[:1] + parts[1:2], parts[1:2] * 0, parts[2:]]) if H > 1 else parts + 1

    for fn, words in ((summed, "the sum over heads"), (interleaved, "consecutive block"),
                      (mismatched, "pair head h")):
        fb = ch06.check_fold_ov(fn, seed=5)
        assert not fb.correct and words in fb.message, fb.message


def test_folded_matrices_give_the_layer_output():
    """The page's claim: output = sum_h maps_h X (W_v^(h) W_o^(h)) + b_v W_o + b_o (rows of maps sum to 1)."""
    from qkv_viz import AttentionConfig, init_multihead_params, multi_head_attention
    cfg = AttentionConfig(d_model=12, n_heads=3)
    p = init_multihead_params(cfg, seed=0)
    rng = np.random.default_rng(1)
    p.b_v, p.b_o = rng.normal(size=12), rng.normal(size=12)
    x = rng.normal(size=(5, 12))
    out, maps = multi_head_attention(x, x, p, 3)
    folded = ch06.fold_ov_reference(p.W_v, p.W_o, 3)  # (H, d_model, d_model)
    np.testing.assert_allclose((maps @ x @ folded).sum(0) + p.b_v @ p.W_o + p.b_o, out, atol=1e-10)


def test_batched_mistakes_are_named():
    def unmerged(x, W_q, W_k, W_v, W_o, H):
        B, T, d = x.shape
        q = (x @ W_q).reshape(B, T, H, d // H).transpose(0, 2, 1, 3)
        return q                                                    # (B, H, T, d_k)

    def by_d_model(x, W_q, W_k, W_v, W_o, H):
        return ch06._batched_variant(x, W_q, W_k, W_v, W_o, H, scale=1 / np.sqrt(x.shape[-1]))

    def straight(x, W_q, W_k, W_v, W_o, H):
        B, T, d = x.shape
        return ch06._batched_variant(x, W_q, W_k, W_v, W_o, H, split=lambda a: a.reshape(B, H, T, d // H))

    for fn, says in [(unmerged, "(B, H, T, d_k)"), (by_d_model, "sqrt(d_model)"), (straight, "reshaped straight")]:
        fb = ch06.check_batched_mha(fn, seed=1)
        assert not fb.correct and says in fb.message, fb.message


def test_batched_reference_is_torch_and_batch_matters():
    """The reference is torch's module; rows of a batch do not see each other."""
    x, W_q, W_k, W_v, W_o, H = ch06.batched_cases(n=1, seed=0)[0]
    want = ch06.batched_mha_reference(x, W_q, W_k, W_v, W_o, H)
    assert x.shape[0] >= 2 and want.shape == x.shape
    np.testing.assert_allclose(sol.batched_mha(x, W_q, W_k, W_v, W_o, H), want, atol=1e-10)
    np.testing.assert_allclose(sol.batched_mha(x[1:2], W_q, W_k, W_v, W_o, H), want[1:2], atol=1e-10)


def test_batched_mha_praise_names_torch():
    fb = ch06.check_batched_mha(sol.batched_mha, seed=0)
    assert fb.correct and "torch.nn.MultiheadAttention" in fb.message, fb.message


def test_one_head_for_the_cat_solution_passes_and_loses_the_mat():
    fb = ch06.check_one_head_for_the_cat(sol.one_head_for_the_cat())
    assert fb.correct and "lost" in fb.message, fb.message
    w, out = ch06.one_head_sat(sol.one_head_for_the_cat())
    assert w[0] >= 0.9 and out[4] == pytest.approx(out[5]) and out[4] > 0.9   # red in both slots
    # "no W_o does better": the least-squares W_o (and bias) over the four colourings misses "where" by the
    # printed amount, close to 1 (knowing nothing)
    X4 = []
    for c_cat in (1, -1):
        for c_mat in (1, -1):
            X = ch06.TOY_X.copy(); X[0, 3], X[2, 3] = c_cat, c_mat
            X4.append((c_mat, w @ (X @ ch06.TOY_W_V)))   # the keys read no colour: the same row w
    A = np.array([[*v, 1] for _, v in X4]); y = np.array([c for c, _ in X4], float)
    fit = A @ np.linalg.lstsq(A, y, rcond=None)[0]
    miss = np.sqrt(((fit - y) ** 2).mean())
    assert miss == pytest.approx(ch06.best_where_miss(w[0], w[2])) and miss > 0.99
    assert f"by {miss:.2f}" in fb.message
    assert ch06.check_one_head_for_the_cat(None).pending


def test_one_head_for_the_cat_matches_the_pages_toy_and_names_each_mistake():
    W_q = np.zeros((6, 2)); W_q[2] = 5                       # the page's W_q: one head splits its row
    w, out = ch06.one_head_sat(W_q)
    assert w[0] == pytest.approx(w[2]) and np.abs(out).max() < 1e-12
    z = np.zeros((6, 2))
    cases = {"row 2": z, "the same": W_q, "prefers the mat": z + np.eye(6, 2, -2)[:, ::-1] * 5,
             "only 0.50": z + np.eye(6, 2, -2), "shape (2, 6)": np.zeros((2, 6)), "not numbers": "abc"}
    for words, answer in cases.items():
        fb = ch06.check_one_head_for_the_cat(answer)
        assert not fb.correct and words in fb.message, (words, fb.message)
    assert ch06.check_one_head_for_the_cat(torch.tensor(sol.one_head_for_the_cat())).correct
