import numpy as np
import pytest
import torch

from qkv_viz.core.projections import (fuse_qkv, fused_qkv_projections, init_projection, project,
                                 qkv_projections)


def test_projection_matches_torch_linear():
    torch.manual_seed(0)
    lin = torch.nn.Linear(6, 3, dtype=torch.float64)
    x = np.random.default_rng(0).normal(size=(4, 6))
    ours = project(x, lin.weight.detach().numpy().T, lin.bias.detach().numpy())
    np.testing.assert_allclose(ours, lin(torch.tensor(x)).detach().numpy(), atol=1e-12)


def test_d_k_and_d_v_may_differ():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(5, 16))
    q, k, v = qkv_projections(x, init_projection(16, 4, rng), init_projection(16, 4, rng), init_projection(16, 7, rng))
    assert (q.shape, k.shape, v.shape) == ((5, 4), (5, 4), (5, 7))


def test_fused_projection_equals_three_separate_ones():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(10, 32))
    W = [init_projection(32, 8, rng), init_projection(32, 8, rng), init_projection(32, 12, rng)]
    fused = fused_qkv_projections(x, fuse_qkv(*W), d_k=8, d_v=12)
    for a, b in zip(fused, qkv_projections(x, *W)):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_init_weight_variance_and_seeding():
    W = init_projection(256, 512, seed=3)
    assert W.std() == pytest.approx(1 / 16, rel=0.02)
    np.testing.assert_array_equal(W, init_projection(256, 512, seed=np.random.default_rng(3)))


def test_bias_of_wrong_length_is_named():
    with pytest.raises(ValueError, match="bias of W"):
        project(np.ones((2, 3)), np.ones((3, 4)), np.ones(5))
