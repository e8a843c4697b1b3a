"""Tests for qkv_viz.chapters.ch05_saturation.saturation: the retrieval experiment benchmarks/bench_saturation.py runs."""
from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv_viz import attention_scores, entropy, score_std, softmax  # noqa: E402
from qkv_viz import resolve_scale, summarize  # noqa: E402
from qkv_viz.chapters.ch05_saturation.saturation import (RUNS, SaturationConfig, config_for,  # noqa: E402
                                                         control_init_std, forward, init_qk_params,
                                                         make_batch, matched_lr, per_query_grad_norms, run_named,
                                                         seed_sweep, train_retrieval)

TINY = SaturationConfig(d_k=4, d_model=8, seq_len=5, n_classes=3, batch_size=2, steps=6)


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="d_k"):
        SaturationConfig(d_k=0)
    with pytest.raises(TypeError, match="d_k"):
        SaturationConfig(d_k=True)  # a bool is not a width (the old copy accepted it)
    with pytest.raises(ValueError, match="steps"):
        SaturationConfig(steps=2)
    for bad in (-1.0, 0.0, float("inf"), float("nan"), np.inf):
        with pytest.raises(ValueError, match="scale"):
            SaturationConfig(scale=bad)
    with pytest.raises(ValueError, match="lr"):
        SaturationConfig(lr=0.0)
    with pytest.raises(ValueError, match="init_std"):
        SaturationConfig(init_std=-0.1)
    with pytest.raises(ValueError, match="seed"):
        SaturationConfig(seed=-1)
    with pytest.raises(TypeError, match="seed"):
        SaturationConfig(seed=1.5)
    for bad in ("adamw", "SGD", None, ["sgd"]):
        with pytest.raises(ValueError, match="optimizer"):
            SaturationConfig(optimizer=bad)


def _core_factor(scale, d_k):
    try:
        return float(resolve_scale(scale, d_k))
    except (TypeError, ValueError):
        return None


def _config_factor(scale, d_k):
    try:
        return SaturationConfig(d_k=d_k, scale=scale).factor
    except (TypeError, ValueError):
        return None


@pytest.mark.parametrize("scale", [True, False, None, 0.25, 3, np.float32(0.5), np.float64(2.0), np.int64(2),
                                   float("inf"), -np.float32(1.0), 0, "0.5", np.bool_(True), 1e-300])
@pytest.mark.parametrize("d_k", [1, 7, 64, 512])
def test_factor_agrees_with_core_resolve_scale(scale, d_k):
    """The training config accepts exactly what the core accepts, with the same factor."""
    assert _config_factor(scale, d_k) == _core_factor(scale, d_k)


@settings(max_examples=200, deadline=None)
@given(scale=st.one_of(st.booleans(), st.none(), st.integers(-5, 5),
                       st.floats(allow_nan=True, allow_infinity=True)),
       d_k=st.integers(1, 4096))
def test_factor_agrees_with_core_on_random_inputs(scale, d_k):
    assert _config_factor(scale, d_k) == _core_factor(scale, d_k)


def test_control_init_std_gives_unit_score_spread():
    """Measured: with control_init_std and no factor, q . k has std about 1 (theory exactly 1)."""
    gen = torch.Generator().manual_seed(0)
    for d_model, d_k in ((64, 512), (32, 16)):
        std = control_init_std(d_model, d_k)
        x = torch.randn(4000, d_model, generator=gen, dtype=torch.float64)
        W_q = torch.randn(d_model, d_k, generator=gen, dtype=torch.float64) * std
        W_k = torch.randn(d_model, d_k, generator=gen, dtype=torch.float64) * std
        dots = ((x[:2000] @ W_q) * (x[2000:] @ W_k)).sum(-1)  # (2000,) independent pairs
        assert dots.std().item() == pytest.approx(1.0, rel=0.15)
    assert control_init_std(64, 512) == pytest.approx(1 / 8 / 512 ** 0.25)
    with pytest.raises(ValueError, match="d_k"):
        control_init_std(64, 0)


def test_config_for_names():
    base = SaturationConfig(d_k=64)
    assert [config_for(n, base).factor for n in RUNS] == [pytest.approx(1 / 8), 1.0, pytest.approx(1 / 64)]
    assert [config_for(n, base).lr for n in RUNS] == [pytest.approx(1e-3), pytest.approx(1e-3 / 64 ** 0.25),
                                                      pytest.approx(1e-3 * 64 ** 0.25)]
    assert config_for("small init", base).init_std == pytest.approx(control_init_std(64, 64))
    assert config_for("small init", base).lr == pytest.approx(1e-3 / 64 ** 0.25)
    assert all(config_for(n, base, matched=False).lr == base.lr for n in RUNS + ("small init",))
    with pytest.raises(ValueError, match="run name"):
        config_for("nope", base)


def test_matched_lr_values_and_errors():
    assert matched_lr(1e-3, 1 / np.sqrt(512), 512) == pytest.approx(1e-3)
    assert matched_lr(1e-3, 1.0, 512) == pytest.approx(1e-3 / 512 ** 0.25)
    assert matched_lr(2e-3, 1 / 512, 512) == pytest.approx(2e-3 * 512 ** 0.25)
    for bad in (dict(lr=0, factor=1, d_k=4), dict(lr=1e-3, factor=-1, d_k=4), dict(lr=1e-3, factor=1, d_k=0)):
        with pytest.raises(ValueError):
            matched_lr(**bad)


def test_control_at_the_matched_rate_is_the_scaled_run():
    """Adam: no factor, W_q, W_k and lr each d_k^(1/4) smaller trains like the scaled run (the chapter's check)."""
    base = SaturationConfig(d_k=512, steps=40)
    s, c = train_retrieval(config_for("scaled", base)), train_retrieval(config_for("small init", base))
    np.testing.assert_allclose(c.snapshots[0][0], s.snapshots[0][0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(c.loss, s.loss, atol=1e-4)
    np.testing.assert_allclose(c.acc, s.acc)
    # at the same nominal lr the control is the scaled run at lr * d_k^(1/4): faster, not a different model
    c_nominal = train_retrieval(config_for("small init", base, matched=False))
    s_fast = train_retrieval(replace(config_for("scaled", base), lr=base.lr * 512 ** 0.25))
    np.testing.assert_allclose(c_nominal.loss, s_fast.loss, atol=1e-4)
    assert np.abs(c_nominal.loss - s.loss).max() > 0.1  # the check above can fail


def test_unscaled_at_the_matched_rate_is_a_large_init_scaled_run():
    """Unscaled at lr / d_k^(1/4) = scaled with W_q, W_k started d_k^(1/4) larger at lr: only the start differs."""
    base = SaturationConfig(d_k=64, steps=30)
    u = train_retrieval(config_for("unscaled", base))
    big = train_retrieval(replace(config_for("scaled", base), init_std=64 ** 0.25 / np.sqrt(base.d_model)))
    np.testing.assert_allclose(u.loss, big.loss, rtol=1e-3, atol=1e-4)


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
    assert r.init_grad_per_query.shape == (10,)
    assert r.acc_at(6, window=3) == pytest.approx(r.acc[3:].mean())
    with pytest.raises(ValueError):
        r.acc_at(7)


def test_recorded_diagnostics_are_the_cores_on_the_first_batch():
    """Step 0's recorded entropy, max weight and score spread are the core's numbers on that very batch."""
    cfg = replace(TINY, steps=3)
    r = train_retrieval(cfg)
    W_q, W_k = init_qk_params(cfg)
    batch = make_batch(torch.Generator().manual_seed(10_000 + cfg.seed), cfg)  # the first training batch
    out = forward(W_q, W_k, batch, cfg)
    want = summarize(out["scores"].detach().double().numpy(), out["weights"].detach().double().numpy())
    assert r.entropy[0] == pytest.approx(want["entropy"], rel=1e-6)
    assert r.max_weight[0] == pytest.approx(want["max_weight"], rel=1e-6)
    assert r.score_std[0] == pytest.approx(want["score_std"], rel=1e-6)
    assert r.loss[0] == pytest.approx(out["loss"].item(), rel=1e-6)
    # and the probe snapshot's weights are the core's entropy input: one-row check by hand
    scores, weights = r.snapshots[0]
    np.testing.assert_allclose(entropy(weights), -(weights * np.log(weights)).sum(-1), rtol=1e-9)


def test_seed_sweep_rows_hold_the_runs_numbers():
    small = dict(d_model=8, seq_len=4, batch_size=2)
    rows = seed_sweep(seeds=(0, 3), d_k=8, steps=25, **small)
    assert [r["seed"] for r in rows] == [0, 3]
    runs = run_named(("scaled", "unscaled", "small init"), 8, seed=3, matched=False, steps=25, **small)
    s, u, c = runs["scaled"], runs["unscaled"], runs["small init"]
    r = rows[1]
    assert r["scaled_acc"] == s.final_acc() and r["unscaled_acc"] == u.final_acc()
    assert r["small_init_acc"] == c.final_acc()
    assert (r["scaled_to_90"], r["unscaled_to_90"], r["small_init_to_90"]) == (s.steps_to(0.9), u.steps_to(0.9),
                                                                              c.steps_to(0.9))
    assert r["grad_ratio"] == pytest.approx(s.grad_norm_q[0] / u.grad_norm_q[0])
    assert r["median_grad_ratio"] == pytest.approx(s.grad_q_median[0] / u.grad_q_median[0])


def test_training_is_a_plain_torch_adam_loop():
    """train_retrieval's loss curve is the chapter's loop: sat.forward, loss.backward, torch.optim.Adam."""
    cfg = replace(TINY, steps=8)
    W_q, W_k = init_qk_params(cfg)
    opt = torch.optim.Adam([W_q, W_k], lr=cfg.lr)
    data = torch.Generator().manual_seed(10_000 + cfg.seed)
    losses = []
    for _ in range(cfg.steps):
        loss = forward(W_q, W_k, make_batch(data, cfg), cfg)["loss"]
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.testing.assert_allclose(train_retrieval(cfg).loss, losses, rtol=1e-6)
    with pytest.raises(AssertionError):  # the comparison can fail: another learning rate differs
        np.testing.assert_allclose(train_retrieval(replace(cfg, lr=1e-1)).loss, losses, rtol=1e-6)


