"""Our RoPE equals Hugging Face transformers' (Llama: LlamaRotaryEmbedding + apply_rotary_pos_emb,
the "half" pairing) to 1e-6, built from a tiny config with no weights; and the adjacent pairing does not.

transformers computes the angles m * theta_i in float32 (whatever the input's dtype), so the two agree
to float32's rounding of the angle: ~1e-7 per radian. The cases keep m * theta_i below ~12 rad."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
llama = pytest.importorskip("transformers.models.llama.modeling_llama")
from transformers import LlamaConfig  # noqa: E402

from qkv_viz.core.positions import apply_rope  # noqa: E402


def hf_rope(q, k, base):
    """q, k (H, T, d_k) numpy -> transformers' rotated q, k (H, T, d_k), positions 0..T-1."""
    H, T, d_k = q.shape
    config = LlamaConfig(hidden_size=H * d_k, num_attention_heads=H, num_key_value_heads=H,
                         intermediate_size=8, num_hidden_layers=1, vocab_size=8,
                         max_position_embeddings=64,
                         rope_parameters={"rope_type": "default", "rope_theta": float(base)})
    rotary = llama.LlamaRotaryEmbedding(config)
    qt, kt = (torch.tensor(a)[None] for a in (q, k))         # (1, H, T, d_k) float64
    cos, sin = rotary(qt, torch.arange(T)[None])             # (1, T, d_k) each
    q_rot, k_rot = llama.apply_rotary_pos_emb(qt, kt, cos, sin)
    return q_rot[0].numpy(), k_rot[0].numpy()


@pytest.mark.parametrize("d_k, T, base", [(8, 6, 10000.0), (16, 12, 10000.0), (4, 9, 100.0), (64, 8, 500000.0)])
def test_half_pairing_equals_transformers(d_k, T, base):
    rng = np.random.default_rng(d_k + T)
    q, k = rng.normal(size=(2, 2, T, d_k))
    hq, hk = hf_rope(q, k, base)
    np.testing.assert_allclose(apply_rope(q, base=base, pairing="half"), hq, rtol=0, atol=1e-6)
    np.testing.assert_allclose(apply_rope(k, base=base, pairing="half"), hk, rtol=0, atol=1e-6)
    assert np.abs(apply_rope(q, base=base, pairing="adjacent") - hq).max() > 1e-2


def test_the_scores_agree_too():
    rng = np.random.default_rng(5)
    q, k = np.repeat(rng.normal(size=(2, 1, 1, 8)), 10, axis=2)   # the same q (and k) at positions 0..9
    hq, hk = hf_rope(q, k, 10000.0)
    ours = apply_rope(q, pairing="half")[0] @ apply_rope(k, pairing="half")[0].T  # (10, 8) @ (8, 10)
    np.testing.assert_allclose(ours, hq[0] @ hk[0].T, rtol=0, atol=1e-5)
    diffs = [abs(ours[m, m + 3] - ours[0, 3]) for m in range(7)]
    assert max(diffs) < 1e-9  # relative: same offset, same score
