import pytest
import torch

from qkv_viz import BERT_BASE, AttentionConfig, attention_flops, model_param_count, param_count
from qkv_viz import projection_flops


def _torch_count(module):
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize("bias", [True, False])
def test_bert_base_layer_matches_torch_mha(bias):
    mha = torch.nn.MultiheadAttention(768, 12, bias=bias)
    assert param_count(BERT_BASE, bias=bias) == _torch_count(mha)


def test_without_output_projection_matches_torch_linears():
    qkv = [torch.nn.Linear(768, 768) for _ in range(3)]
    assert param_count(BERT_BASE, include_output=False) == sum(map(_torch_count, qkv))


def test_per_head_matches_one_heads_linears():
    per_head = [torch.nn.Linear(768, 64, bias=False) for _ in range(3)]
    assert param_count(BERT_BASE, bias=False, per_head=True) == sum(map(_torch_count, per_head))


def test_whole_model_counts_every_layer():
    layer = torch.nn.MultiheadAttention(768, 12)
    assert model_param_count(BERT_BASE) == 12 * _torch_count(layer)


def test_different_d_v_matches_torch_linears():
    cfg = AttentionConfig(d_model=64, n_heads=4, d_k=8, d_v=32)
    mods = [torch.nn.Linear(64, 32), torch.nn.Linear(64, 32), torch.nn.Linear(64, 128),
            torch.nn.Linear(128, 64)]
    assert param_count(cfg) == sum(map(_torch_count, mods))


def test_projection_flops_is_six_n_d_squared_for_bert():
    assert projection_flops(BERT_BASE, 512) == 6 * 512 * 768 ** 2


def test_attention_flops_parts_add_up_and_scale():
    f1, f2 = attention_flops(BERT_BASE, 128), attention_flops(BERT_BASE, 256)
    assert f1["total"] == sum(v for k, v in f1.items() if k != "total")
    assert f2["projections"] == 2 * f1["projections"]  # linear in n
    assert f2["scores"] == 4 * f1["scores"]  # quadratic in n


def test_bad_n_is_named():
    with pytest.raises(ValueError, match="T must be >= 1"):
        projection_flops(BERT_BASE, 0)
