import numpy as np
import pytest

from qkv_viz.core.diagnostics import max_weight, softmax_grad_norm
from qkv_viz.chapters.ch04_scaling.scaling import (diagnostics_vs_dk, random_qk,
                                                   weights_at_dk)
from qkv_viz.core.softmax import softmax


def test_the_variance_law_var_q_dot_k_equals_d_k():
    """The page's experiment at other seeds: Var(q . k) = d_k, Var(q . k / sqrt(d_k)) = 1."""
    rng = np.random.default_rng(1)
    d_ks = np.array([1, 4, 16, 64, 256])
    var_u = np.array([np.sum(rng.normal(size=(2, 3000, d)).prod(axis=0), axis=-1).var() for d in d_ks])
    var_s = np.array([(np.sum(rng.normal(size=(2, 3000, d)).prod(axis=0), axis=-1) / np.sqrt(d)).var()
                      for d in d_ks])
    np.testing.assert_allclose(var_u / d_ks, 1.0, rtol=0.15)
    np.testing.assert_allclose(var_s, 1.0, rtol=0.15)
    assert np.polyfit(np.log(d_ks), np.log(var_u), 1)[0] == pytest.approx(1.0, abs=0.05)


def test_even_split_formula_is_the_jacobian_norm():
    """The page's sqrt(m - 1) / m: 0 for one-hot, largest at m = 2."""
    norms = []
    for m in range(1, 9):
        p = np.zeros(8)
        p[:m] = 1 / m
        assert np.sqrt(m - 1) / m == pytest.approx(softmax_grad_norm(p), abs=1e-12)
        norms.append(softmax_grad_norm(p))
    assert np.argmax(norms) == 1


def test_weights_at_dk_matches_softmax_of_scaled_dot_products():
    q, k = random_qk(16, 5, 7, seed=2)
    scores, weights = weights_at_dk(16, T=5, S=7, seed=2, scale=True)
    np.testing.assert_allclose(scores, q @ k.T / 4.0)
    np.testing.assert_allclose(weights, softmax(q @ k.T / 4.0))
    _, unscaled = weights_at_dk(16, T=5, S=7, seed=2, scale=False)
    assert max_weight(unscaled).mean() > max_weight(weights).mean()


def test_diagnostics_vs_dk_unscaled_sharpens_scaled_does_not():
    d_ks = [1, 16, 256]
    s = diagnostics_vs_dk(d_ks, T=16, S=16, seed=0, scale=True)
    u = diagnostics_vs_dk(d_ks, T=16, S=16, seed=0, scale=False)
    assert u["score_std"][-1] > 8 * s["score_std"][-1]
    assert u["max_weight"][-1] > 0.8 and s["max_weight"][-1] < 0.5
    assert u["grad_norm"][-1] < s["grad_norm"][-1]
    np.testing.assert_array_equal(s["d_k"], d_ks)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="d_ks"):
        diagnostics_vs_dk([0, 4])
    with pytest.raises(ValueError, match="d_ks"):
        diagnostics_vs_dk([])
    with pytest.raises(ValueError, match="scale"):
        diagnostics_vs_dk([4], scale=-2.0)


def test_the_pages_table_for_16_keys():
    """The page's maps (16 queries by 16 keys, seed 0): without the factor the max weight climbs to 0.92 at
    d_k = 256 and most rows saturate (max weight > 0.99); with it no row saturates at any width."""
    wide = (64, 256, 1024)
    off = diagnostics_vs_dk(wide, T=16, S=16, seed=0, scale=False)
    on = diagnostics_vs_dk(wide, T=16, S=16, seed=0, scale=True)
    assert [round(float(v), 2) for v in off["max_weight"]] == [0.8, 0.92, 0.96]
    assert all(v < 0.3 for v in on["max_weight"])
    saturated = {s: [(weights_at_dk(d, 16, 16, 0, scale=s)[1].max(axis=1) > 0.99).mean() for d in wide]
                 for s in (True, False)}
    assert saturated[True] == [0, 0, 0]
    assert saturated[False][0] < 0.5 < saturated[False][1] < saturated[False][2]   # "from 256 on most rows"
    assert off["grad_norm"][-1] < on["grad_norm"][-1] / 5


def test_torch_default_init_saturates_only_the_wide_unscaled_head():
    """The page's 'what a real layer starts with' (numpy, nn.Linear's uniform +-1/sqrt(d_model), seed 3)."""
    from qkv_viz.core.softmax import softmax
    rng = np.random.default_rng(3)
    x = rng.normal(size=(16, 768))
    saturated = {}
    for d_head in (64, 768):
        W_q, W_k = rng.uniform(-1, 1, size=(2, 768, d_head)) / np.sqrt(768)
        q, k = x @ W_q, x @ W_k
        for scaled in (True, False):
            scores = q @ k.T / (np.sqrt(d_head) if scaled else 1.0)
            saturated[d_head, scaled] = (softmax(scores).max(axis=1) > 0.99).mean()
            if scaled:
                assert 0.2 < scores.std(axis=1).mean() < 0.45      # "a spread of about 1/3"
    assert saturated[64, True] == saturated[768, True] == saturated[64, False] == 0
    assert saturated[768, False] > 0.1


def test_adding_a_number_to_every_score_changes_no_weight():
    """Moved from the page: only differences within a row matter (chapter 3's toy dot products)."""
    from qkv_viz.core.softmax import softmax
    toy = np.array([2.0, 5.0, 1.0])
    np.testing.assert_allclose(softmax(toy + 100), softmax(toy), rtol=0, atol=1e-15)
    assert not np.allclose(softmax(toy * 2), softmax(toy))  # multiplying does change them


def test_default_linear_projection_gives_entries_of_variance_one_third():
    """The page's claim about nn.Linear's default init (uniform in +-1/sqrt(d_model))."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layer = torch.nn.Linear(768, 64)
    x = torch.randn(4000, 768)
    with torch.no_grad():
        var = layer(x).var().item()
    assert abs(var - 1 / 3) < 0.03
    bound = float(layer.weight.detach().abs().max())
    assert bound <= 1 / np.sqrt(768) + 1e-9 and bound > 0.99 / np.sqrt(768)


def test_the_saturation_maps_sharpen_without_the_factor_only():
    """The maps' printout: a row's largest weight (16 x 16, seed 0) climbs from 0.14 to 0.92 unscaled
    as d_k goes 1 -> 16 -> 256, and stays under 0.3 scaled; at d_k = 1 both are the same."""
    top = {(d_k, s): weights_at_dk(d_k, 16, 16, 0, scale=s)[1].max(axis=1).mean()
           for d_k in (1, 16, 256) for s in (True, False)}
    assert top[1, True] == pytest.approx(top[1, False])
    assert top[1, False] < top[16, False] < top[256, False]
    assert round(float(top[256, False]), 2) == 0.92
    assert max(top[d_k, True] for d_k in (1, 16, 256)) < 0.3


def test_multihead_in_proj_is_xavier_uniform_with_entries_of_variance_one_half():
    """The page's Going further: nn.MultiheadAttention's in_proj_weight (3 d_model, d_model) is uniform in
    +-sqrt(6 / (d_model + 3 d_model)), so an entry of q = x W_q has variance d_model * 2 / (4 d_model) = 1/2."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    W = torch.nn.MultiheadAttention(768, 12).in_proj_weight.detach().double().numpy()  # (2304, 768)
    bound = np.sqrt(6 / (768 + 3 * 768))
    assert W.shape == (3 * 768, 768)
    assert np.abs(W).max() <= bound + 1e-9 and np.abs(W).max() > 0.99 * bound
    x = np.random.default_rng(0).normal(size=(4000, 768))
    assert abs((x @ W[:64].T).var() - 0.5) < 0.05


def test_scaled_row_spread_stays_under_one_for_the_pages_two_reasons():
    """Page c18: the scaled spread of a row of 16 scores is under 1 (the page's 160 rows: 0.79 at d_k = 1,
    0.95 wide) because a std over 16 keys comes out low and a row's spread |q| / sqrt(d_k) averages under 1."""
    S, rows = 16, 1000
    rng = np.random.default_rng(5)
    for d_k, want in ((1, 0.76), (256, 0.95)):       # E|q| = 0.80 at d_k = 1, times about 0.95
        q = rng.normal(size=(rows, d_k))
        k = rng.normal(size=(rows, S, d_k))                              # fresh keys for every row
        scores = np.einsum("rd,rsd->rs", q, k) / np.sqrt(d_k)            # (rows, S)
        spread = scores.std(axis=1).mean()
        assert spread == pytest.approx(want, abs=0.02)
        q_len = (np.linalg.norm(q, axis=1) / np.sqrt(d_k)).mean()        # the row's own spread, on average
        assert spread < q_len <= 1.01                                    # 16 keys: lower still
    q = rng.normal(size=(200, 1))                                        # d_k = 1: with many keys the std is |q|
    many = (q * rng.normal(size=(200, 4000))).std(axis=1)
    np.testing.assert_allclose(many, np.abs(q[:, 0]), rtol=0.06)


def test_the_pages_draw_is_the_explorers_so_page_and_explorer_quote_one_number():
    """Page c7 draws (T + S, 1024) float32 and takes the first d_k columns: the scaling explorer's draw, so
    the max weights the page prints at d_k = 256 (scaled 0.28, unscaled 0.92) are the explorer's readouts."""
    from qkv_viz.chapters.ch04_scaling.explorer import draw_qk, head_attention
    for d_k in (1, 16, 256):
        q, k = draw_qk(0, 1, 16, d_k)
        mine = random_qk(d_k, 16, 16, seed=0)
        np.testing.assert_array_equal(mine[0], q[0])
        np.testing.assert_array_equal(mine[1], k[0])
    for scale, want in ((True, 0.28), (False, 0.92)):
        page = weights_at_dk(256, 16, 16, 0, scale=scale)[1].max(axis=1).mean()
        explorer = head_attention(0, 1, 16, 256, scale, 1.0)[2]["max_weight"]
        assert page == pytest.approx(explorer, abs=1e-12) and round(float(page), 2) == want


def test_at_d_k_1_rows_rank_the_keys_by_k_or_in_reverse_by_the_sign_of_q():
    """Page: at d_k = 1 the score is q_i k_j, so a row with q_i > 0 peaks at the largest k_j and a row with
    q_i < 0 at the smallest; the page's draw has rows of both kinds (7 and 9)."""
    q, k = random_qk(1, 16, 16, seed=0)                                  # (16, 1) each
    peak = softmax(q @ k.T).argmax(axis=1)                       # (16,): each row's top key
    up = q[:, 0] > 0
    assert np.all(peak[up] == k.argmax()) and np.all(peak[~up] == k.argmin())
    assert 0 < up.sum() < 16 and k.argmax() != k.argmin()
