import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from qkv_viz.core.diagnostics import (effective_tokens, entropy, max_weight, score_std,
                                 softmax_grad_norm, summarize)
from qkv_viz.core.softmax import softmax


def test_uniform_and_one_hot_extremes():
    S = 8
    uniform, one_hot = np.full(S, 1 / S), np.eye(S)[3]
    assert entropy(uniform) == pytest.approx(np.log(S))
    assert effective_tokens(uniform) == pytest.approx(S)
    assert entropy(one_hot) == 0 and effective_tokens(one_hot) == 1
    assert max_weight(uniform) == pytest.approx(1 / S) and max_weight(one_hot) == 1
    assert softmax_grad_norm(one_hot) == 0


def test_entropy_matches_torch_distribution():
    p = softmax(np.random.default_rng(0).normal(size=(4, 6)))
    expected = torch.distributions.Categorical(probs=torch.tensor(p)).entropy().numpy()
    np.testing.assert_allclose(entropy(p), expected, atol=1e-12)


@given(st.integers(0, 2**31 - 1), st.floats(0.1, 20))
@settings(max_examples=40, deadline=None)
def test_grad_norm_equals_frobenius_norm_of_autograd_jacobian(seed, spread):
    s = torch.tensor(np.random.default_rng(seed).normal(size=5) * spread)
    jac = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), s)
    p = torch.softmax(s, -1).numpy()
    assert softmax_grad_norm(p) == pytest.approx(torch.linalg.norm(jac).item(), abs=1e-10)


def test_saturation_shrinks_the_gradient():
    s = np.random.default_rng(1).normal(size=(16, 16))
    small, large = softmax_grad_norm(softmax(s)), softmax_grad_norm(softmax(30 * s))
    assert large.mean() < 0.2 * small.mean()


def test_summarize_reports_means():
    s = np.random.default_rng(2).normal(size=(3, 5))
    w = softmax(s)
    m = summarize(s, w)
    assert m["score_std"] == pytest.approx(score_std(s).mean())
    assert m["effective_tokens"] == pytest.approx(effective_tokens(w).mean())
    assert set(m) == {"score_std", "max_weight", "entropy", "effective_tokens", "grad_norm"}


def test_scores_passed_as_weights_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        entropy([-1.0, 2.0])
