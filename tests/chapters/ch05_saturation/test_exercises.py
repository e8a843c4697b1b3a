"""Chapter 5 exercises: each worked solution passes its checker, each placeholder is "no answer yet",
and typical mistakes get a precise message."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qkv_viz.chapters.ch05_saturation import exercises as ch05
from qkv_viz.chapters.ch05_saturation import solutions as sol
from qkv_viz.chapters.ch05_saturation.saturation import (SaturationConfig, diagnose, forward, init_qk_params,
                                                         make_batch, per_query_grad_norms)


def test_solutions_pass_their_checkers():
    for _ in range(3):  # fresh random cases on every call
        assert ch05.check_query_grad_norms(sol.query_grad_norms)
        assert ch05.check_control_std(sol.control_std)
        assert ch05.check_matched_lr(sol.matched_lr)


@pytest.mark.parametrize("check", [ch05.check_query_grad_norms, ch05.check_control_std, ch05.check_matched_lr])
def test_placeholder_is_pending(check):
    fb = check(None)
    assert not fb.correct and fb.pending and "No answer yet" in fb.message


def test_closed_form_is_one_backward_per_query():
    """Exercise 1's reference on a real batch equals the chapter's loop of loss_i.backward()."""
    cfg = SaturationConfig(d_k=16, d_model=8, seq_len=5, n_classes=3, batch_size=1, steps=3, scale=True)
    W_q, W_k = init_qk_params(cfg)
    batch = make_batch(torch.Generator().manual_seed(0), cfg)
    out = forward(W_q, W_k, batch, cfg)
    losses = F.cross_entropy(out["logits"].reshape(-1, cfg.n_classes), out["answer"].reshape(-1),
                             reduction="none")  # (T,)
    loop = [torch.autograd.grad(l, W_q, retain_graph=True)[0].norm().item() for l in losses]
    d_scores = torch.stack([torch.autograd.grad(l, out["scores"], retain_graph=True)[0][0, i]
                            for i, l in enumerate(losses)])  # (T, S): row i = d loss_i / d scores_i
    got = ch05.query_grad_norms_reference(batch[2][0].double().numpy(), out["k"][0].detach().double().numpy(),
                                          d_scores.double().numpy(), cfg.factor)
    np.testing.assert_allclose(got, loop, rtol=1e-4)
    out["scores"].retain_grad()
    out["loss"].backward()
    np.testing.assert_allclose(per_query_grad_norms(out, batch[2], cfg).numpy(), loop, rtol=1e-4)


@pytest.mark.parametrize("wrong, says", [
    (lambda x, k, d, c: sol.query_grad_norms(x, k, d, 1.0), "factor c"),
    (lambda x, k, d, c: np.linalg.norm(c * d @ k, axis=-1), "gradient on q_i"),
    (lambda x, k, d, c: sol.query_grad_norms(x, k, d, c) ** 2, "squared"),
    (lambda x, k, d, c: sol.query_grad_norms(x, k, d, c).sum(), "shape"),
])
def test_query_grad_mistakes_are_named(wrong, says):
    fb = ch05.check_query_grad_norms(wrong, seed=0)
    assert not fb.correct and not fb.pending
    assert says in fb.message, fb.message


@pytest.mark.parametrize("wrong, says", [
    (lambda d_model, d_k, x_std: 1 / (np.sqrt(d_model) * d_k ** 0.25), "inputs of std 1"),
    (lambda d_model, d_k, x_std: 1 / (x_std * np.sqrt(d_model) * np.sqrt(d_k)), "d_k ** 0.25"),
    (lambda d_model, d_k, x_std: 1 / np.sqrt(d_model), "would start with std"),
])
def test_control_std_mistakes_are_named(wrong, says):
    fb = ch05.check_control_std(wrong, seed=0)
    assert not fb.correct and not fb.pending
    assert says in fb.message, fb.message


def test_control_init_std_for_gives_unit_spread():
    """Measured: with that init and inputs of std 2, unscaled scores have std about 1."""
    rng = np.random.default_rng(0)
    d_model, d_k, x_std = 64, 128, 2.0
    std = ch05.control_init_std_for(d_model, d_k, x_std)
    x = rng.normal(scale=x_std, size=(512, d_model))
    q = x @ rng.normal(scale=std, size=(d_model, d_k))
    k = x @ rng.normal(scale=std, size=(d_model, d_k))
    assert (q @ k.T).std() == pytest.approx(1.0, rel=0.1)


@pytest.mark.parametrize("wrong, says", [
    (lambda lr, c, d_k: lr / d_k ** 0.25, "ignores c"),
    (lambda lr, c, d_k: lr * np.sqrt(np.sqrt(d_k) * c), "wrong way round"),
    (lambda lr, c, d_k: lr / (np.sqrt(d_k) * c), "square root"),
])
def test_matched_lr_mistakes_are_named(wrong, says):
    fb = ch05.check_matched_lr(wrong, seed=0)
    assert not fb.correct and not fb.pending
    assert says in fb.message, fb.message


def test_matched_lr_trains_like_the_scaled_run():
    """The reference's rate makes a run with another factor train exactly like the scaled run (Adam)."""
    from dataclasses import replace
    from qkv_viz.chapters.ch05_saturation.saturation import train_retrieval
    base = SaturationConfig(d_k=64, steps=20)
    s = train_retrieval(replace(base, scale=True))
    c = 0.5  # scores = 0.5 q.k; W_q, W_k each sqrt(c0 / c) smaller give the scaled run's scores
    std = np.sqrt((1 / np.sqrt(base.d_k)) / c) / np.sqrt(base.d_model)
    other = train_retrieval(replace(base, scale=c, init_std=std, lr=ch05.matched_lr_reference(base.lr, c, 64)))
    np.testing.assert_allclose(other.loss, s.loss, atol=1e-4)
