"""Chapter 11's numbers: the moved checks (the package's generate equals the page's numpy and
the causal layer), the model table's formula, the timing helper's two ways, the step costs."""
import numpy as np
import pytest

from qkv_viz.chapters.ch11_generation.generation import (SENTENCE, ModelConfig, cache_table, cached_step,
                                                         shared_kv, time_generation, toy_layer, uncached_step)
from qkv_viz.core.kv_cache import causal_self_attention, generate, kv_cache_bytes, step_flops


def test_toy_layer_is_seeded_and_fits_the_sentence():
    x, p = toy_layer()
    x2, p2 = toy_layer()
    np.testing.assert_array_equal(x, x2)
    np.testing.assert_array_equal(p.W_k, p2.W_k)
    assert x.shape == (len(SENTENCE), 16) and p.n_heads == p.n_kv_heads == 4


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_package_generation_equals_the_causal_layer(n_kv):
    x, p = toy_layer()
    layer = shared_kv(p, n_kv)
    out, cache = generate(x, layer)
    full, _ = causal_self_attention(x, layer)
    assert np.abs(out - full).max() < 1e-12
    assert cache.k.size + cache.v.size == 2 * len(SENTENCE) * n_kv * 4


def test_shared_kv_keeps_queries_and_averages_kv():
    x, p = toy_layer()
    g = shared_kv(p, 1)
    np.testing.assert_array_equal(g.W_q, p.W_q)
    np.testing.assert_allclose(g.W_k, p.W_k.reshape(16, 4, 4).mean(axis=1))
    assert shared_kv(p, 4).W_v.shape == p.W_v.shape


def test_page_plain_numpy_steps_equal_the_package():
    x, p = toy_layer()
    T, H = len(x), p.n_heads
    K_buf, V_buf = np.zeros((H, T, 4)), np.zeros((H, T, 4))
    steps = np.array([cached_step(x[t], K_buf, V_buf, t, p.W_q, p.W_k, p.W_v, p.W_o, H) for t in range(T)])
    reruns = np.array([uncached_step(x[:t + 1], p.W_q, p.W_k, p.W_v, p.W_o, H) for t in range(T)])
    full, _ = causal_self_attention(x, p)
    np.testing.assert_allclose(steps, full, rtol=0, atol=1e-12)
    np.testing.assert_allclose(reruns, full, rtol=0, atol=1e-12)


def test_time_generation_reports_both_ways_and_their_agreement():
    r = time_generation(T=16, d_model=16, n_heads=2, repeats=1)
    assert set(r) == {"cached_ms_per_token", "uncached_ms_per_token", "ratio", "max_diff"}
    assert r["max_diff"] < 1e-12 and r["cached_ms_per_token"] > 0
    assert r["ratio"] == pytest.approx(r["uncached_ms_per_token"] / r["cached_ms_per_token"])


def test_rerun_is_the_sum_of_the_cached_steps():
    """The page counts a rerun of the prefix under the causal mask as rows 0..t, row i meeting i + 1
    keys: the sum of cached steps 0..t (its cumsum), below core's dense count (t + 1 full rows) and
    about half of it late; at the plot's right end the rerun's slope is about 1.8, the cached one's 0.9."""
    cached = np.array([step_flops(64, 4, t) for t in range(1024)], dtype=float)
    rerun = np.cumsum(cached)
    for t in (0, 1, 15, 255, 1023):
        assert rerun[t] == sum(step_flops(64, 4, i) for i in range(t + 1))
        assert rerun[t] <= step_flops(64, 4, t, cached=False) == (t + 1) * cached[t]
    assert 0.5 < rerun[-1] / (1024 * cached[-1]) < 0.6
    slope = lambda ys: np.log(ys[-1] / ys[-2]) / np.log(1024 / 1023)
    assert round(slope(rerun), 1) == 1.8 and round(slope(cached), 1) == 0.9


LLAMA2_7B = ModelConfig("Llama-2-7B", "meta-llama/Llama-2-7b-hf", 32, 32, 32, 128, 4096, 6.74e9)


def test_cache_table_follows_the_formula():
    gqa = ModelConfig("Llama-3-8B", "meta-llama/Meta-Llama-3-8B", 32, 32, 8, 128, 8192, 8.03e9)
    rows = cache_table([LLAMA2_7B, gqa], n_tokens=4096)
    assert rows[0]["per_token"] == 512 * 2 ** 10 and rows[0]["context"] == 2 * 2 ** 30
    assert rows[0]["per_token"] == 4 * rows[1]["per_token"]      # 32 vs 8 K/V heads
    assert rows[0]["context"] / rows[0]["weights"] == pytest.approx(0.159, abs=1e-3)
    assert rows[1]["context"] == kv_cache_bytes(32, 8, 128, 4096)


def test_cache_table_stops_at_the_models_own_context():
    gpt2 = ModelConfig("GPT-2 small", "openai-community/gpt2", 12, 12, 12, 64, 1024, 124e6)
    row = cache_table([gpt2, LLAMA2_7B], n_tokens=4096)[0]
    assert row["tokens"] == 1024 and row["context"] == kv_cache_bytes(12, 12, 64, 1024)


def test_a_two_layer_stack_with_one_cache_per_layer_equals_training():
    """The page's stack: layer 1 caches projections of layer 0's outputs; step by step = all at once."""
    from qkv_viz.core.kv_cache import KVCache, decode_step
    x, l1 = toy_layer()
    l2 = toy_layer(seed=12)[1]
    full = causal_self_attention(causal_self_attention(x, l1)[0], l2)[0]
    caches = [KVCache(4, 4), KVCache(4, 4)]
    steps = np.array([decode_step(decode_step(x_t, caches[0], l1)[0], caches[1], l2)[0] for x_t in x])
    assert np.abs(steps - full).max() < 1e-12
    assert not np.allclose(caches[1].k, caches[0].k)


def test_time_generation_samples_uncached_steps():
    r = time_generation(T=32, d_model=16, n_heads=2, repeats=1, uncached_steps=5)
    assert r["max_diff"] < 1e-12 and r["uncached_ms_per_token"] > 0


def test_the_stepper_model_is_the_pages_model():
    """trained_writer (the stepper's default) gives the weights of the page's training cell."""
    import json
    import math
    import pathlib

    import torch
    import torch.nn.functional as F
    from qkv_viz.chapters.ch11_generation.generation import PROMPT, SENTENCES, VOCAB, trained_writer, write
    nb = json.loads((pathlib.Path(__file__).parents[3] / "notebooks" / "11_generating_text.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    start = next(i for i, s in enumerate(cells) if "SENTENCES = " in s)      # data and to_heads, then
    cell = cells[start] + "\n" + next(s for s in cells[start:] if "def train(" in s)   # the training function
    page = {"np": np, "torch": torch, "F": F, "math": math, "print": lambda *a: None}
    exec(cell, page)
    assert list(VOCAB) == page["VOCAB"] and list(SENTENCES) == page["SENTENCES"]
    assert "n_kv" not in cell and "enable_gqa" not in cell   # plain multi-head: GQA comes later on the page
    E, p = trained_writer()                          # the page's writer; its one-K/V-head retrain is the package's
    assert p.n_heads == page["H"] and p.n_kv_heads == page["H"]
    _, (E_page, *W_page) = page["train"]()
    for name, W in zip(("W_q", "W_k", "W_v", "W_o"), W_page):
        np.testing.assert_allclose(getattr(p, name), W, rtol=0, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(E, E_page, rtol=0, atol=1e-12)
    assert write(*trained_writer(), VOCAB, PROMPT)[0] == SENTENCES[1].split()


def test_the_trained_writer_learned_its_two_sentences_and_head_0_reads_the_subject():
    """The page: loss at its floor ln 2 / 6; both prompts written right; at step 4 (the second
    'the') head 0 puts most of its weight on the subject, three tokens back (0.95 from the page's
    prompt "the dog"); one shared K/V head
    writes something else (the page prints it)."""
    from qkv_viz.chapters.ch11_generation.generation import SENTENCES, VOCAB, shared_kv, trained_writer, write

    E, p = trained_writer()
    for sentence in SENTENCES:
        words, weights, logits = write(E, p, VOCAB, sentence.split()[:2])
        assert " ".join(words) == sentence
        assert np.argmax(weights[0, 4]) == 1 and weights[0, 4, 1] > (0.9 if words[1] == "dog" else 0.8), weights[0, 4]
        target = np.array([VOCAB.index(w) for w in words[1:]])
        z = logits[:-1] - logits[:-1].max(axis=1, keepdims=True)
        nll = -(z[np.arange(6), target] - np.log(np.exp(z).sum(axis=1)))
        assert nll[1:].max() < 0.05 and abs(nll[0] - np.log(2)) < 0.05   # only 'the' -> cat/dog is a coin toss
        assert write(E, shared_kv(p, 1), VOCAB, sentence.split()[:2])[0] != words


def test_rope_keys_turned_once_as_they_enter_the_cache_give_the_training_pass():
    """The page's RoPE cell: keys turned by their own position when cached, the query by t."""
    from qkv_viz.core.positions import apply_rope

    def softmax(s, axis=-1):                        # the page's: -inf (hidden keys) allowed
        w = np.exp(s - s.max(axis=axis, keepdims=True))
        return w / w.sum(axis=axis, keepdims=True)

    x, layer = toy_layer()
    T, H = x.shape[0], layer.n_heads
    d_k = x.shape[1] // H
    Q, K, V = ((x @ W).reshape(T, H, d_k).transpose(1, 0, 2) for W in (layer.W_q, layer.W_k, layer.W_v))
    scores = apply_rope(Q) @ apply_rope(K).swapaxes(1, 2) / np.sqrt(d_k)
    training = softmax(np.where(np.tri(T, dtype=bool), scores, -np.inf), axis=-1) @ V
    cache = np.zeros((H, 0, d_k))
    for t in range(T):
        cache = np.concatenate([cache, apply_rope(K[:, t:t + 1], [t])], axis=1)
        row = softmax(apply_rope(Q[:, t:t + 1], [t]) @ cache.swapaxes(1, 2) / np.sqrt(d_k), axis=-1) @ V[:, :t + 1]
        np.testing.assert_allclose(row[:, 0], training[:, t], atol=1e-12)
    # turning the values too would change the outputs: the page's "values are not turned" matters
    assert np.abs(softmax(np.where(np.tri(T, dtype=bool), scores, -np.inf), axis=-1) @ apply_rope(V) - training).max() > 1e-3


def test_the_pages_lines_are_the_package_functions():
    """Chapter 11 writes the cache formula and the K/V averaging in numpy; they are cache_table's
    bytes per token and group_kv_heads (shared_kv) on the page's layer."""
    from qkv_viz.core.kv_cache import group_kv_heads

    gqa = ModelConfig("gqa", "x", n_layers=32, n_heads=32, n_kv_heads=8, head_dim=128, max_tokens=8192, params=8e9)
    for m in (LLAMA2_7B, gqa):
        per_token = 2 * m.n_layers * m.n_kv_heads * m.head_dim * 2        # the page's line
        row = cache_table([m], n_tokens=4096)[0]
        assert row["per_token"] == per_token and row["context"] == per_token * min(4096, m.max_tokens)
    _, layer0 = toy_layer()
    n_q, w_head = 4, 4
    for n_kv in (4, 2, 1):
        W = layer0.W_k
        page = W.reshape(len(W), n_kv, n_q // n_kv, w_head).mean(axis=2).reshape(len(W), n_kv * w_head)
        np.testing.assert_array_equal(page, group_kv_heads(W, n_q, n_kv))
        np.testing.assert_array_equal(page, shared_kv(layer0, n_kv).W_k)


def test_a_writer_trained_with_one_kv_head_writes_both_sentences():
    """The page's retrain: one K/V head for both query heads, trained from the start, writes both
    sentences (the averaged one does not, test above); its W_k, W_v have d_k columns."""
    from qkv_viz.chapters.ch11_generation.generation import SENTENCES, VOCAB, trained_writer, write

    E, p = trained_writer(n_kv_heads=1)
    assert p.n_kv_heads == 1 and p.W_k.shape == (6, 4) and p.W_v.shape == (6, 4) and p.W_q.shape == (6, 8)
    for sentence in SENTENCES:
        assert " ".join(write(E, p, VOCAB, sentence.split()[:2])[0]) == sentence
    import pytest
    with pytest.raises(ValueError, match="n_kv_heads"):
        trained_writer(n_kv_heads=3, steps=1)


@pytest.mark.parametrize("n_kv", [2, 1])
def test_every_seed_0_to_19_writes_both_sentences(n_kv):
    """The page's training cell invites "try another seed": any seed 0..19 learns both sentences (and so does the
    one-K/V-head retrain, trained_writer(n_kv_heads=1)): each seed's writer writes both, greedily, and its loss is at the floor ln 2 / 6."""
    import torch
    import torch.nn.functional as F
    from qkv_viz.chapters.ch11_generation.generation import SENTENCES, VOCAB, trained_writer, write

    ids = torch.tensor([[VOCAB.index(w) for w in s.split()] for s in SENTENCES])
    for seed in range(20):
        E, p = trained_writer(seed=seed, n_kv_heads=n_kv)
        for sentence in SENTENCES:
            assert " ".join(write(E, p, VOCAB, sentence.split()[:2])[0]) == sentence, (seed, sentence)
        x = torch.tensor(E)[ids]                                        # (2, 7, d_model)
        out = np.stack([causal_self_attention(xi.numpy(), p)[0] for xi in x])   # (2, 7, d_model)
        logits = torch.tensor(out @ E.T)
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).item()
        assert loss < np.log(2) / 6 + 0.01, (seed, loss)


def test_the_pages_step_and_sampler_use_the_cache_and_write_the_sentences():
    """The page's step() (one token: project q, k, v; append k, v; softmax of q against the cache; weighted values),
    run from empty caches, gives write()'s outputs; its sampler at temperature 1 draws only the two sentences,
    and the same seed draws the same sentences."""
    import json
    import pathlib

    from qkv_viz.chapters.ch11_generation.generation import SENTENCES, VOCAB, trained_writer, write

    nb = json.loads((pathlib.Path(__file__).parents[3] / "notebooks" / "11_generating_text.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    step_cell = next(s for s in cells if s.startswith("def step("))
    sample_cell = next(s for s in cells if "def sample(" in s)
    sample_def = sample_cell[sample_cell.index("def sample("):sample_cell.index("rng = ")]
    E, p = trained_writer()

    def softmax(s):
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        return w / w.sum(axis=-1, keepdims=True)

    page = {"np": np, "softmax": softmax, "E": E, "W_q": p.W_q, "W_k": p.W_k, "W_v": p.W_v, "W_o": p.W_o,
            "H": p.n_heads, "d_k": p.W_q.shape[1] // p.n_heads, "VOCAB": list(VOCAB),
            "ID": {w: i for i, w in enumerate(VOCAB)}}
    exec(step_cell + "\n" + sample_def, page)
    words, _, logits = write(E, p, VOCAB, SENTENCES[1].split()[:2])
    K = V = np.zeros((page["H"], 0, page["d_k"]))
    for i, w in enumerate(words):
        out, K, V, weights = page["step"](E[VOCAB.index(w)], K, V)
        np.testing.assert_allclose(out @ E.T, logits[i], atol=1e-9)
        assert K.shape == V.shape == (page["H"], i + 1, page["d_k"]) and weights.shape == (page["H"], 1, i + 1)
    drawn = [page["sample"](1, np.random.default_rng(0)) for _ in range(2)]
    assert drawn[0] == drawn[1] and drawn[0] in SENTENCES
    rng = np.random.default_rng(1)
    assert {page["sample"](1, rng) for _ in range(20)} <= set(SENTENCES)


def test_writer_loss_is_torchs_training_loss_and_sees_the_averaged_head_fail():
    """writer_loss (the page prints it for the one-K/V-head writer) is the training cell's cross-entropy, in numpy:
    at the floor ln 2 / 6 for both trained writers, well above it for the averaged K/V head that writes 'the cat sat .'."""
    import torch
    import torch.nn.functional as F
    from qkv_viz.chapters.ch11_generation.generation import SENTENCES, VOCAB, shared_kv, trained_writer, writer_loss

    E, p = trained_writer()
    ids = torch.tensor([[VOCAB.index(w) for w in s.split()] for s in SENTENCES])
    out = np.stack([causal_self_attention(E[row], p)[0] for row in ids.numpy()])     # (2, 7, d_model)
    logits = torch.tensor(out @ E.T)
    torch_loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten()).item()
    assert abs(writer_loss(E, p) - torch_loss) < 1e-12
    assert abs(writer_loss(*trained_writer(n_kv_heads=1)) - np.log(2) / 6) < 0.01
    assert writer_loss(E, shared_kv(p, 1)) > np.log(2) / 6 + 0.1
