"""Chapter 5 exercises: each worked solution passes its checker, each placeholder is "no answer yet",
and typical mistakes get a precise message."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from qkv_viz.chapters.ch05_saturation import exercises as ch05
from qkv_viz.chapters.ch05_saturation import solutions as sol
from qkv_viz.chapters.ch05_saturation.toy import score_grads, softmax


def test_solutions_pass_their_checkers():
    for _ in range(3):  # fresh random cases on every call
        assert ch05.check_query_grad_norms(sol.query_grad_norms)
        assert ch05.check_control_std(sol.control_std)
        assert ch05.check_batch_grad_norm(sol.batch_grad_norm)


@pytest.mark.parametrize("check", [ch05.check_query_grad_norms, ch05.check_control_std, ch05.check_batch_grad_norm])
def test_placeholder_is_pending(check):
    fb = check(None)
    assert not fb.correct and fb.pending and "No answer yet" in fb.message


@pytest.mark.parametrize("c", [1 / 16, 1.0])
def test_closed_form_is_one_backward_per_query(c):
    """Exercise 1's reference, fed the page's score_grads, equals a loop of loss_i.backward() on W_q."""
    rng = np.random.default_rng(3)
    T, d_model, d_k = 16, 32, 256
    x = rng.normal(size=(T, d_model))
    W_q = torch.tensor(rng.normal(size=(d_model, d_k)) / np.sqrt(d_model), requires_grad=True)
    W_k = torch.tensor(rng.normal(size=(d_model, d_k)) / np.sqrt(d_model))
    xt = torch.tensor(x)
    k = xt @ W_k                                                       # (T, d_k)
    scores = c * (xt @ W_q) @ k.T                                      # (T, T)
    losses = F.cross_entropy(6.0 * torch.softmax(scores, -1), torch.arange(T), reduction="none")
    loop = [torch.autograd.grad(loss_i, W_q, retain_graph=True)[0].norm().item() for loss_i in losses]
    d_scores = score_grads(softmax(scores.detach().numpy()))          # (T, T)
    got = ch05.query_grad_norms_reference(x, k.numpy(), d_scores, c)
    np.testing.assert_allclose(got, loop, rtol=1e-8)


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


def test_batch_grad_norm_names_the_usual_mistakes():
    def summed(x_q, k, d_scores, c):
        return sol.batch_grad_norm(x_q, k, d_scores, c) * x_q.shape[0]

    def norms_then_mean(x_q, k, d_scores, c):
        return sol.query_grad_norms(x_q, k, d_scores, c).mean()

    fb = ch05.check_batch_grad_norm(summed, seed=0)
    assert not fb.correct and "divide by T" in fb.message
    fb = ch05.check_batch_grad_norm(norms_then_mean, seed=0)
    assert not fb.correct and "partly cancel" in fb.message


def test_batch_gradient_of_the_mean_loss_equals_torch():
    """Exercise 3's reference equals torch's gradient of the mean loss on W_q, scaled and unscaled."""
    rng = np.random.default_rng(4)
    T, d_model, d_k = 16, 32, 256
    x = torch.tensor(rng.normal(size=(T, d_model)))
    W_q = torch.tensor(rng.normal(size=(d_model, d_k)) / np.sqrt(d_model), requires_grad=True)
    k = x @ torch.tensor(rng.normal(size=(d_model, d_k)) / np.sqrt(d_model))   # (T, d_k)
    for c in (1 / 16, 1.0):
        scores = c * (x @ W_q) @ k.T
        loss = F.cross_entropy(6.0 * torch.softmax(scores, -1), torch.arange(T))
        (grad,) = torch.autograd.grad(loss, W_q)
        d_scores = score_grads(softmax(scores.detach().numpy()))
        got = ch05.batch_grad_norm_reference(x.numpy(), k.numpy(), d_scores, c)
        np.testing.assert_allclose(got, grad.norm().item(), rtol=1e-8)


def test_right_batch_grad_norm_reports_the_larger_unscaled_gradient():
    """Exercise 3's feedback, once right, gives both norms; the unscaled one is the larger."""
    import re
    fb = ch05.check_batch_grad_norm(sol.batch_grad_norm, seed=0)
    assert fb.correct
    scaled, unscaled = (float(v) for v in re.findall(r"\|dL/dW_q\| = ([0-9][0-9.e+-]*[0-9])", fb.message))
    assert unscaled > 3 * scaled
    x, k, d_scores = ch05.start_of_training(1.0)
    assert x.shape == (16, 256) and k.shape == (16, 256) and d_scores.shape == (16, 16)


def test_right_batch_grad_norm_says_why_it_is_below_the_mean_of_the_per_query_norms():
    """Exercise 3 states that the batch norm is smaller than the mean of exercise 1's norms; the feedback says why
    (cancellation), and the statement holds on the start sequence, scaled and unscaled."""
    fb = ch05.check_batch_grad_norm(sol.batch_grad_norm, seed=0)
    assert fb.correct and "cancel" in fb.message
    for c in (1 / 16, 1.0):
        x, k, d_scores = ch05.start_of_training(c)
        assert sol.batch_grad_norm(x, k, d_scores, c) < sol.query_grad_norms(x, k, d_scores, c).mean()
    assert "cancel" not in ch05.check_batch_grad_norm(lambda *a: 0.0, seed=0).message
