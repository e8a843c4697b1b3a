"""Chapter 7's mask explorer: Python's side, and the browser's maths (Node) against the core."""
import base64
import json

import numpy as np
import pytest

from browser_harness import node_path, run_js
from qkv_viz import causal_mask, masked_softmax
from qkv_viz.chapters.ch07_masks.widget import mask_widget
from qkv_viz.viz.canvas import module_source

TOKENS = ["a", "b", "c", "d"]


def _scores(seed=0, T=4, S=4):
    return np.random.default_rng(seed).normal(scale=2.0, size=(T, S))


def test_mask_combines_causal_padding_and_clicks():
    w = mask_widget(_scores(), TOKENS, TOKENS)
    np.testing.assert_array_equal(w.mask, causal_mask(4))
    w.n_real = 2
    w.clicked = [i == 1 * 4 + 0 for i in range(16)]  # hide key 0 for query 1
    expected = causal_mask(4) & (np.arange(4) < 2)[None, :]
    expected[1, 0] = False
    np.testing.assert_array_equal(w.mask, expected)
    np.testing.assert_allclose(w.weights, masked_softmax(_scores(), expected))
    w.causal = False
    assert w.mask[0, 1] and not w.mask[0, 2]


def test_bad_input_is_refused_and_bundle_has_a_picture():
    with pytest.raises(ValueError, match="labels"):
        mask_widget(_scores(), TOKENS[:3], TOKENS)
    with pytest.raises(ValueError, match="n_real"):
        mask_widget(_scores(), TOKENS, TOKENS, n_real=5)
    data, _ = mask_widget(_scores(), TOKENS, TOKENS)._repr_mimebundle_()
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    assert "masks" in data["text/html"]


@pytest.mark.skipif(node_path() is None, reason="node is not installed")
@pytest.mark.parametrize("seed, T, S, causal, n_real", [(0, 4, 4, True, 4), (1, 5, 7, True, 6),
                                                       (2, 6, 3, False, 2), (3, 4, 4, True, 0)])
def test_browser_weights_equal_the_core(seed, T, S, causal, n_real):
    scores = _scores(seed, T, S) * 100  # large scores: the shift must happen
    clicked = np.random.default_rng(seed + 10).random((T, S)) < 0.2
    clicked[0] = True                   # one row hidden by hand: a fully masked row
    got = run_js(module_source("masks.js"), f"""
      const mask = maskOf({T}, {S}, {str(causal).lower()}, {n_real}, {json.dumps(clicked.ravel().tolist())});
      const w = maskedSoftmaxRows(Float64Array.from({json.dumps(scores.ravel().tolist())}), mask, {T}, {S});
      return {{mask: Array.from(mask), w: Array.from(w)}};""")
    mask = (np.arange(S)[None, :] < n_real) & ~clicked
    if causal:
        mask &= causal_mask(T, S)
    np.testing.assert_array_equal(np.array(got["mask"], dtype=bool).reshape(T, S), mask)
    np.testing.assert_allclose(np.array(got["w"]).reshape(T, S), masked_softmax(scores, mask), rtol=0, atol=1e-12)


def test_bad_mask_controls_are_refused_and_the_weights_stay():
    import traitlets
    w = mask_widget(np.zeros((4, 4)), TOKENS, TOKENS, n_real=3)
    weights = w.weights.copy()
    for name, value in (("n_real", 5), ("n_real", -1), ("clicked", [True] * 15), ("tokens_k", ["a", "b"]),
                        ("T", 3)):
        with pytest.raises(traitlets.TraitError, match=f"^{name} = "):
            setattr(w, name, value)
    np.testing.assert_array_equal(w.weights, weights)
    w.n_real = np.int64(4)  # numpy integers count
    assert w.n_real == 4 and w.weights[3, 3] > 0
