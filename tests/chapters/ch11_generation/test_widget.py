"""Chapter 11's generation stepper: Python's side, and the browser's maths (Node) against the core."""
import base64

import numpy as np
import pytest

from browser_harness import node_path, run_js
from qkv_viz.chapters.ch11_generation.generation import PROMPT, VOCAB, trained_writer, shared_kv, write
from qkv_viz.chapters.ch11_generation.widget import GenerationFigure, generation_widget
from qkv_viz.core.kv_cache import group_kv_heads
from qkv_viz.viz.canvas import module_source


def test_the_stepper_runs_the_pages_model_and_follows_the_controls():
    w = generation_widget()
    assert w.n_heads == 2 and w.n_kv_heads == 2
    assert w.words == ["the", "dog", "sat", "on", "the", "rug", "."]
    assert w.weights.shape == (1,) and w.weights[0] == 1.0      # token 0 sees only itself
    w.step, w.head = 4, 0                                       # the second "the": head 0 finds "dog"
    assert np.argmax(w.weights) == 1 and w.weights[1] > 0.9
    assert VOCAB[int(np.argmax(w.logits))] == "rug"
    d_k = w._params.W_k.shape[1] // 2
    assert w.cache_numbers == 2 * 5 * 2 * d_k and w.cache.k.shape == (2, 5, d_k)
    w.n_kv_heads = 1                                            # averaged keys and values: it writes less well
    assert w.words[:2] == ["the", "dog"] and w.words != ["the", "dog", "sat", "on", "the", "rug", "."]
    assert w.cache_numbers == 2 * (w.step + 1) * 1 * d_k             # its sentence may be shorter


def test_bad_input_is_refused_and_bundle_has_a_picture():
    E, p = trained_writer()
    with pytest.raises(ValueError, match="vocab"):
        GenerationFigure(VOCAB[:3], E, p, PROMPT)
    with pytest.raises(ValueError, match="divide"):
        GenerationFigure(VOCAB, E, p, PROMPT, n_kv_heads=3)
    with pytest.raises(ValueError, match="step"):
        GenerationFigure(VOCAB, E, p, PROMPT, step=7)
    with pytest.raises(ValueError, match="head"):
        GenerationFigure(VOCAB, E, p, PROMPT, head=2)
    with pytest.raises(ValueError, match="multi-head"):
        GenerationFigure(VOCAB, E, shared_kv(p, 1), PROMPT)
    with pytest.raises(ValueError, match="prompt"):
        write(E, p, VOCAB, ["bird"])
    with pytest.raises(ValueError, match="both"):
        generation_widget(E=E)
    data, _ = generation_widget()._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert "generation" in data["text/html"]


@pytest.mark.skipif(node_path() is None, reason="node is not installed")
@pytest.mark.parametrize("n_kv", [2, 1])
def test_browser_generation_equals_the_core(n_kv):
    E, p = trained_writer()
    d, H = E.shape[1], 2
    dh = p.W_q.shape[1] // H
    arr = lambda a: "Float64Array.from(" + str(np.ravel(a).tolist()) + ")"
    got = run_js(module_source("generation.js"), f"""
      const s = generationState({arr(E)}, {arr(p.W_q)}, {arr(p.W_k)}, {arr(p.W_v)}, {arr(p.W_o)}, {len(VOCAB)}, {d}, {H},
                                {n_kv}, {dh}, {[VOCAB.index(w) for w in PROMPT]}, {VOCAB.index(".")}, 10);
      const g = groupHeads({arr(p.W_v)}, {d}, {H}, {n_kv}, {dh});
      return {{ids: s.ids, weights: Array.from(s.weights), logits: Array.from(s.logits), k: Array.from(s.k),
               v: Array.from(s.v), g: Array.from(g), n: cacheNumbers(3, {n_kv}, {dh})}};""")
    layer = shared_kv(p, n_kv)
    words, weights, logits = write(E, layer, VOCAB, PROMPT)
    T = len(words)
    assert [VOCAB[i] for i in got["ids"]] == words
    np.testing.assert_allclose(np.array(got["weights"]).reshape(H, T, T), weights, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.array(got["logits"]).reshape(T, len(VOCAB)), logits, rtol=0, atol=1e-12)
    x = E[[VOCAB.index(w) for w in words]]
    np.testing.assert_allclose(np.array(got["g"]).reshape(d, n_kv * dh), group_kv_heads(p.W_v, H, n_kv), atol=1e-14)
    np.testing.assert_allclose(np.array(got["k"]).reshape(T, n_kv * dh), x @ layer.W_k, atol=1e-12)
    np.testing.assert_allclose(np.array(got["v"]).reshape(T, n_kv * dh), x @ layer.W_v, atol=1e-12)
    assert got["n"] == 2 * 4 * n_kv * dh


def test_still_picture_follows_the_step_the_head_and_the_kv_heads():
    """The saved picture is the step on screen, not a fixed summary."""
    pics = {(s, h, g): generation_widget(step=s, head=h, n_kv_heads=g).static_png()
            for s, h, g in ((1, 0, 2), (4, 0, 2), (4, 1, 2), (3, 1, 1))}
    assert len(set(pics.values())) == 4
    assert all(p.startswith(b"\x89PNG") for p in pics.values())


def test_bad_controls_are_refused_and_fewer_kv_heads_keep_the_step_on_the_sentence():
    """As generation.js: where one K/V head writes a shorter sentence (from the prompt "the dog"), the step
    moves to its last token; a step past the sentence, a head or a K/V count the model lacks are refused."""
    import traitlets
    w = generation_widget(step=6)
    w1 = generation_widget(n_kv_heads=1)
    short = len(w1.words)
    assert short < 7, w1.words
    for name, value, why in (("step", 7, "the sentence has 7 tokens: choose 0..6"),
                             ("head", 2, "there are 2 query heads"), ("n_kv_heads", 3, "choose one of 1, 2")):
        with pytest.raises(traitlets.TraitError, match=f"^{name} = {value}, but .*{why}"):
            setattr(w, name, value)
    assert (w.step, w.head, w.n_kv_heads) == (6, 0, 2)
    w.n_kv_heads = 1
    assert len(w.words) == short and w.step == short - 1 and w.weights.shape == (short,)
    with pytest.raises(traitlets.TraitError, match="fixed when the figure is built"):
        w.vocab = VOCAB[::-1]
