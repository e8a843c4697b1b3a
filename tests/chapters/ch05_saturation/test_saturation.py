"""Tests for qkv_viz.chapters.ch05_saturation.saturation (the chapter 5 experiment), its plots and exercises."""
from dataclasses import replace

import matplotlib
import numpy as np
import pytest
import torch
import torch.nn.functional as F

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from qkv_viz import attention_scores, entropy, score_std, softmax  # noqa: E402
from qkv_viz.chapters.ch05_saturation import exercises as ch05  # noqa: E402
from qkv_viz.chapters.ch05_saturation.saturation import (SaturationConfig, diagnose, forward, init_qk_params,  # noqa: E402
                                make_batch, per_query_grad_norms, run_three, seed_sweep,
                                summary_table, train_retrieval)
from qkv_viz.chapters.ch05_saturation import plots as sp  # noqa: E402

TINY = SaturationConfig(d_k=4, d_model=8, seq_len=5, n_classes=3, batch_size=2, steps=6)


@pytest.fixture(scope="module")
def three():
    """The chapter's three runs at d_k = 512, seed 0, on a 60-step budget."""
    return run_three(512, seed=0, steps=60)


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="d_k"):
        SaturationConfig(d_k=0)
    with pytest.raises(ValueError, match="steps"):
        SaturationConfig(steps=2)
    with pytest.raises(ValueError, match="scale"):
        SaturationConfig(scale=-1.0)


def test_factor_matches_core_resolve_scale():
    from qkv_viz import resolve_scale
    for scale in (True, False, 0.25):
        assert SaturationConfig(d_k=64, scale=scale).factor == pytest.approx(resolve_scale(scale, 64))


def test_batch_queries_are_the_keys_at_the_targets():
    x, labels, queries, targets = make_batch(torch.Generator().manual_seed(1), TINY)
    assert x.shape == queries.shape == (2, 5, 8) and labels.shape == targets.shape == (2, 5)
    for b in range(2):
        assert sorted(targets[b].tolist()) == list(range(5))  # a permutation
        assert torch.equal(queries[b], x[b, targets[b]])


def test_forward_scores_match_numpy_core():
    cfg = replace(TINY, scale=True)
    W_q, W_k = init_qk_params(cfg)
    batch = make_batch(torch.Generator().manual_seed(2), cfg)
    out = forward(W_q, W_k, batch, cfg)
    x, _, queries, _ = (t.double().numpy() for t in batch)
    q = queries[0] @ W_q.detach().double().numpy()  # (T, d_model) @ (d_model, d_k)
    k = x[0] @ W_k.detach().double().numpy()
    expected = attention_scores(q, k, scale=True)
    np.testing.assert_allclose(out["scores"][0].detach().numpy(), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["weights"][0].detach().numpy(), softmax(expected), atol=1e-6)


@pytest.mark.parametrize("scale", [True, False])
def test_per_query_grad_norms_match_autograd(scale):
    cfg = replace(TINY, scale=scale)
    W_q, W_k = init_qk_params(cfg)
    batch = make_batch(torch.Generator().manual_seed(3), cfg)
    out = forward(W_q, W_k, batch, cfg)
    out["scores"].retain_grad()
    out["loss"].backward(retain_graph=True)
    fast = per_query_grad_norms(out, batch[2], cfg)
    losses = F.cross_entropy(out["logits"].reshape(-1, cfg.n_classes), out["answer"].reshape(-1),
                             reduction="none")  # (B*T,)
    slow = [torch.autograd.grad(l, W_q, retain_graph=True)[0].norm() for l in losses]
    np.testing.assert_allclose(fast.numpy(), torch.stack(slow).numpy(), rtol=1e-4, atol=1e-7)


def test_runs_are_bit_reproducible_and_prefix_stable():
    cfg = replace(TINY, steps=12)
    a, b = train_retrieval(cfg), train_retrieval(cfg)
    short = train_retrieval(replace(cfg, steps=7))
    for key in ("loss", "acc", "grad_norm_q", "grad_norm_k", "grad_q_median", "entropy"):
        assert np.array_equal(getattr(a, key), getattr(b, key)), key
        assert np.array_equal(getattr(a, key)[:7], getattr(short, key)), key


def test_result_records_shapes_and_snapshots():
    r = train_retrieval(TINY)
    assert r.loss.shape == r.acc.shape == r.entropy.shape == (6,)
    assert sorted(r.snapshots) == [0, 3, 5]
    scores, weights = r.snapshots[0]
    assert scores.shape == weights.shape == (5, 5)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(r.entropy[0], entropy(weights).mean(), rtol=0.5)  # same scale
    assert r.init_grad_per_query.shape == (10,)
    assert r.acc_at(6, window=3) == pytest.approx(r.acc[3:].mean())
    with pytest.raises(ValueError):
        r.acc_at(7)


def test_unscaled_large_dk_saturates_at_init(three):
    s, u, o = three["scaled"], three["unscaled"], three["over-scaled"]
    assert u.score_std[0] == pytest.approx(np.sqrt(512), rel=0.2)  # Var(q.k) ~ d_k, measured
    assert s.score_std[0] == pytest.approx(1.0, rel=0.2)
    assert u.max_weight[0] > 0.85 and u.entropy[0] < 0.3
    assert o.entropy[0] > 0.95 * np.log(16)  # near uniform
    assert [diagnose(r.snapshots[0][0]) for r in (s, u, o)] == ["healthy", "saturated", "uniform"]


def test_scaled_learns_faster_than_unscaled_seed0(three):
    s, u, o = three["scaled"], three["unscaled"], three["over-scaled"]
    assert s.final_acc() > 0.9
    assert s.final_acc() > u.final_acc() + 0.2
    assert s.final_acc() > o.final_acc() + 0.2
    assert s.steps_to(0.9) is not None and (u.steps_to(0.9) is None or u.steps_to(0.9) > 2 * s.steps_to(0.9))


def test_gradient_spread_at_init(three):
    s, u, o = three["scaled"], three["unscaled"], three["over-scaled"]
    assert s.grad_q_median[0] > 10 * u.grad_q_median[0]  # the typical query gets far less
    assert np.quantile(u.init_grad_per_query, 0.25) < 1e-3 * np.quantile(s.init_grad_per_query, 0.25)
    assert u.grad_norm_q[0] > s.grad_norm_q[0]  # ...yet the batch gradient is not small
    assert o.grad_norm_q[0] < 0.1 * s.grad_norm_q[0]  # over-scaling shrinks the batch gradient


def test_seed_sweep_rows():
    rows = seed_sweep(seeds=(0,), d_k=8, steps=5, d_model=8, seq_len=4, batch_size=2)
    assert set(rows[0]) >= {"seed", "scaled_acc", "unscaled_acc", "grad_ratio", "median_grad_ratio"}


def test_summary_table_lists_each_run(three):
    text = summary_table(three)
    assert all(name in text for name in three)


def test_diagnose_thresholds():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((8, 8))
    assert diagnose(0.01 * z) == "uniform" and diagnose(z) == "healthy" and diagnose(30 * z) == "saturated"
    assert diagnose(30 * z) == "saturated" and score_std(30 * z).mean() > 3


def test_smooth_matches_running_mean():
    v = np.arange(10.0)
    out = sp.smooth(v, 3)
    assert out[0] == 0 and out[1] == 0.5 and out[5] == pytest.approx(np.mean(v[3:6]))
    with pytest.raises(ValueError):
        sp.smooth(v, 0)


def test_plots_draw(three):
    fig = sp.training_panel(three)
    assert len(fig.axes) == 4 and len(fig.axes[0].lines) == 3
    fig2 = sp.attention_snapshots(three)
    assert len(fig2.axes) == 9 and fig2.axes[0].images[0].get_clim() == (0.0, 1.0)
    fig3 = sp.debug_panel(three["unscaled"], step=0, name="unscaled")
    assert len(fig3.axes) == 5  # scores, weights, histogram + two colour bars
    assert fig3.axes[0].images[0].get_clim() == (-5.0, 5.0)
    assert fig3.axes[1].images[0].get_clim() == (0.0, 1.0)
    artists = sp.grad_histogram(three)
    assert len(artists) == 3
    with pytest.raises(ValueError):
        sp.debug_panel(three["scaled"], step=7)
    with pytest.raises(ValueError):
        sp.plot_curve(three, "nope")
    plt.close("all")


def test_exercises_right_and_wrong():
    assert ch05.check_score_std(np.sqrt(512)) and not ch05.check_score_std(512)
    assert not ch05.check_score_std(None)
    assert ch05.check_symptoms("one-hot", "uniform") and not ch05.check_symptoms("uniform", "one-hot")
    assert not ch05.check_symptoms("flat", "uniform")
    truth = diagnose(ch05.mystery_scores())
    assert ch05.check_mystery(truth)
    assert not any(ch05.check_mystery(v) for v in ch05.VERDICTS if v != truth)
    wrong = ch05.check_mystery("neither")
    assert not wrong and "one of" in wrong.message


def test_adam_matches_torch_adam():
    from qkv_viz.chapters.ch05_saturation.saturation import Adam
    gen = torch.Generator().manual_seed(4)
    a = torch.randn(5, 3, generator=gen).requires_grad_()
    b = a.detach().clone().requires_grad_()
    ours, theirs = Adam([a], lr=1e-2), torch.optim.Adam([b], lr=1e-2)
    for _ in range(5):
        target = torch.randn(5, 3, generator=gen)
        for p, opt in ((a, ours), (b, theirs)):
            opt.zero_grad()
            ((p - target) ** 2).sum().backward()
            opt.step()
    torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
