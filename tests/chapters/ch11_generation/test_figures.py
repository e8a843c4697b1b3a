"""Chapter 11's step-cost figure draws the counted FLOPs of both ways."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from qkv_viz.chapters.ch11_generation.figures import plot_step_costs  # noqa: E402
from qkv_viz.core.kv_cache import step_flops  # noqa: E402


def test_lines_are_the_counted_flops():
    """The chapter passes its counted FLOPs (cached, recompute K and V, rerun the prefix); the figure
    draws exactly those against the prefix length t + 1 on log-log axes, one legend entry each, each
    line labelled with its slope at the right end (rerun steeper than recompute); the cached count is core's step_flops."""
    t = np.arange(50)
    cached = [step_flops(64, 4, int(s)) for s in t]
    recompute = [c + int(s) * 4 * 64 * 64 for c, s in zip(cached, t)]
    rerun = [step_flops(64, 4, int(s), cached=False) for s in t]
    fig, ax = plt.subplots()
    lines = plot_step_costs(t, {"cached": cached, "recompute": recompute, "rerun": rerun}, title="x", ax=ax)
    assert len(lines) == 3
    np.testing.assert_array_equal(lines[0].get_xdata(), t + 1)
    for line, ys in zip(lines, (cached, recompute, rerun)):
        assert list(line.get_ydata()) == ys
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log" and len(ax.get_legend().get_texts()) == 3
    slopes = [float(a.get_text().removeprefix("slope ")) for a in ax.texts]
    x = t + 1
    expected = [np.log(ys[-1] / ys[-2]) / np.log(x[-1] / x[-2]) for ys in (cached, recompute, rerun)]
    np.testing.assert_allclose(slopes, expected, atol=0.051)
    assert slopes[1] < slopes[2]
    assert recompute[-1] < rerun[-1] and recompute[-1] - recompute[-2] == (64 + 1) * (cached[-1] - cached[-2])  # 4d(d+1) vs 4d
    plt.close(fig)
    import pytest
    with pytest.raises(ValueError, match="costs"):
        plot_step_costs(t, {"cached": cached[:-1]})
    with pytest.raises(ValueError, match="positive"):
        plot_step_costs(t, {"cached": [0] * len(t)})


def test_the_steppers_still_draws_the_step_and_every_text_is_legible():
    from qkv_viz.chapters.ch11_generation.figures import plot_generation_step
    from qkv_viz.chapters.ch11_generation.generation import PROMPT, VOCAB, trained_writer, shared_kv, write
    from qkv_viz.core.kv_cache import generate
    from qkv_viz.viz import style

    E, params = trained_writer()
    for n_kv in (2, 1):
        layer = shared_kv(params, n_kv)
        words, weights, logits = write(E, layer, VOCAB, PROMPT)
        assert (" ".join(words) == "the dog sat on the rug .") == (n_kv == 2)   # one K/V head writes worse
        step = min(4, len(words) - 1)                                   # one K/V head may write fewer tokens
        cache = generate(E[[VOCAB.index(w) for w in words[:step + 1]]], layer)[1]
        fig = plt.figure()
        im_w, im_k, im_v, title = plot_generation_step(words, weights, logits, cache, VOCAB, step, 1, len(PROMPT),
                                                       fig=fig)
        shown = im_w.get_array()
        np.testing.assert_allclose(shown[step, :step + 1], weights[1, step, :step + 1])
        assert np.ma.getmaskarray(shown)[step + 1:].all()                  # later rows not yet written
        k_rows = cache.k.swapaxes(0, 1).reshape(step + 1, -1)
        np.testing.assert_allclose(im_k.get_array()[:step + 1], k_rows)   # one column per coordinate per K/V head
        assert im_k.get_array().shape[1] == n_kv * cache.k.shape[-1]
        want = VOCAB[int(np.argmax(logits[step]))]
        assert (f'"{want}", the next token' if step < len(words) - 1 else "the sentence ends") in title.get_text()
        sizes = [t.get_fontsize() for ax in fig.axes for t in ax.texts + ax.get_xticklabels() + ax.get_yticklabels()]
        assert min(sizes + [title.get_fontsize()]) >= style.MIN_FONT_PT
        plt.close(fig)
    import pytest
    with pytest.raises(ValueError, match="step"):
        plot_generation_step(words, weights, logits, cache, VOCAB, len(words), 1, len(PROMPT))
