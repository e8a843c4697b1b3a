"""The scaling explorer: Python's side (vectors, validation, mime bundle) and the
browser's maths run in Node against the math core (the browser test repeats it in Chromium)."""
import base64
import json
import re

import numpy as np
import pytest
import traitlets

from browser_harness import node_path, run_js
from qkv_viz import scaled_dot_product_attention, summarize
from qkv_viz.chapters.ch04_scaling import explorer as E
from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer
from qkv_viz.viz.canvas import module_source, static_html

needs_node = pytest.mark.skipif(node_path() is None, reason="node is not installed")


def drawn(seed, n, n_heads=1, head=0):
    """Independent draw: the documented float32 N(0, 1) of shape (2, H, n, D_MAX)."""
    wide = np.random.default_rng(seed).standard_normal((2, n_heads, n, E.D_MAX), dtype=np.float32)
    return wide[0, head], wide[1, head]  # (n, D_MAX) each


def test_sends_the_documented_vectors_as_float32():
    ex = scaling_explorer(n=8, seed=3, n_heads=2, head=1)
    q, k = drawn(3, 8, 2, 1)
    np.testing.assert_array_equal(np.frombuffer(ex.q, "<f4").reshape(8, E.D_MAX), q)
    np.testing.assert_array_equal(np.frombuffer(ex.k, "<f4").reshape(8, E.D_MAX), k)


def test_new_seed_or_n_sends_new_vectors():
    ex = scaling_explorer(n=8)
    old = ex.q
    ex.seed = 5
    assert ex.q != old and ex.error == ""
    np.testing.assert_array_equal(np.frombuffer(ex.q, "<f4").reshape(8, -1), drawn(5, 8)[0])
    ex.query = 7
    ex.n = 4
    assert len(ex.q) == 4 * E.D_MAX * 4 and ex.query == 3  # the followed row stays on screen


def test_python_numbers_are_the_math_cores():
    ex = scaling_explorer(n=12, d_k=256, scale=False, temperature=0.5, seed=1)
    q, k = (a[:, :256].astype(np.float64) for a in drawn(1, 12))
    _, weights = scaled_dot_product_attention(q, k, k, scale=False, temperature=0.5)
    np.testing.assert_allclose(ex.weights, weights, rtol=0, atol=1e-15)
    assert ex.metrics["max_weight"] == pytest.approx(summarize(ex.scores, weights)["max_weight"])


@pytest.mark.parametrize("name, value", [
    ("d_k", 3), ("d_k", 2048), ("temperature", 0.0), ("temperature", float("nan")), ("temperature", -1.0),
    ("metric", "nope"), ("query", 99), ("query", -1), ("n", 0), ("n", 5000), ("seed", -1),
    ("head", 1), ("head", -1), ("n_heads", 3)])
def test_every_trait_refuses_what_it_cannot_show_and_the_picture_stays(name, value):
    ex = scaling_explorer(n=8, d_k=16, seed=2)
    before = (ex.settings, ex.q, ex.weights.copy())
    with pytest.raises(traitlets.TraitError, match=name):
        setattr(ex, name, value)
    assert ex.settings == before[0] and ex.q == before[1]
    np.testing.assert_array_equal(ex.weights, before[2])
    assert ex.static_png().startswith(b"\x89PNG")


def test_bad_constructor_arguments_are_named():
    with pytest.raises(ValueError, match="metric"):
        scaling_explorer(metric="nope")
    with pytest.raises(ValueError, match="query"):
        scaling_explorer(n=8, query=99)


def test_still_labels_say_scaled_or_not_and_number_keys_from_0():
    for scale in (True, False):
        fig = scaling_explorer(n=16, scale=scale, query=3).still()
        titles = [ax.get_title() for ax in fig.axes]
        assert any("query 3" in t and ("(scaled)" if scale else "(not scaled)") in t for t in titles)
        assert not any("d_k" in t.replace("$d_k$", "").replace("{d_k}$", "") for t in titles), titles
        labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
        assert labels[0] == "0" and len(labels) <= 5


def test_mime_bundle_has_widget_html_and_png():
    data, _ = scaling_explorer(n=8)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert base64.b64decode(data["image/png"]).startswith(b"\x89PNG")
    html = data["text/html"]
    assert '<script type="module">' in html and "function render" in html
    assert not re.search(r"(src|href)=\"?https?:", html), "the fragment must not load anything"
    assert "http://" not in html and "https://" not in html


def test_static_fragment_embeds_the_data_and_disables_python_controls():
    ex = scaling_explorer(n=8, seed=2)
    html = static_html(ex, png=b"png")
    state = json.loads(re.search(r'type="application/json"[^>]*>(.*?)</script>', html, re.S).group(1))
    assert state["static"] is True and state["n"] == 8 and state["seed"] == 2
    assert base64.b64decode(state["q"]["__b64__"]) == ex.q


def test_fragment_cannot_be_closed_by_a_sentence():
    ex = scaling_explorer(n=4)
    ex.metric = "entropy"
    html = static_html(ex, png=b"")
    assert html.count("</script>") == 2  # the data block and the module, nothing else


@needs_node
@pytest.mark.parametrize("n, temperature", [(16, 1.0), (64, 0.1), (7, 3.0)])
def test_browser_maths_equal_the_core_on_every_d_k(n, temperature):
    q, k = drawn(0, n)
    b64 = base64.b64encode(np.concatenate([q, k]).tobytes()).decode()
    got = run_js(module_source("explorer.js"), f"""
      const raw = Uint8Array.from(atob("{b64}"), (c) => c.charCodeAt(0));
      const qk = new Float32Array(raw.buffer), n = {n}, D = {E.D_MAX};
      const dots = allDots(qk.subarray(0, n * D), qk.subarray(n * D), n, D, {list(E.D_KS)});
      const out = [];
      for (const [t, dk] of {list(E.D_KS)}.entries()) for (const scale of [true, false]) {{
        const r = stepNumbers(dots[t], n, dk, scale, {temperature});
        out.push({{dk, scale, weights: Array.from(r.weights), metrics: summarize(r.scores, r.weights, n, n)}});
      }}
      return out;""")
    for case in got:
        _, weights, metrics = E.head_attention(0, 1, n, case["dk"], case["scale"], temperature)
        np.testing.assert_allclose(np.reshape(case["weights"], (n, n)), weights, rtol=0, atol=1e-9)
        for key, value in metrics.items():
            assert case["metrics"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), (case["dk"], key)


@needs_node
def test_browser_softmax_is_stable_and_one_hot_for_huge_scores():
    got = run_js(module_source("explorer.js"), """
      const w = softmaxRows(Float64Array.from([1e6, 0, -1e6, 1e6 - 50]), 1, 4, 1e-300);
      return Array.from(w);""")
    assert got == [1.0, 0.0, 0.0, 0.0]


def test_still_shows_the_query_scores_and_the_readouts_with_the_pages_names():
    from qkv_viz.chapters.ch04_scaling.widget import READOUT_LABELS
    ex = scaling_explorer(n=16, d_k=256, scale=False, query=3)
    fig = ex.still()
    titles = [ax.get_title() for ax in fig.axes]
    assert any("query 3's scores" in t for t in titles), titles
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    for label in READOUT_LABELS.values():
        assert label in texts, label
    one = ex.scores[3]
    bars = [ax for ax in fig.axes if "scores" in ax.get_title()][0].patches
    np.testing.assert_allclose([b.get_height() for b in bars], one)
    assert f"{ex.metrics['grad_norm']:.3g}" in texts


def test_the_browser_uses_the_same_names_as_python():
    from qkv_viz.chapters.ch04_scaling.widget import METRIC_LABELS, READOUT_LABELS
    js = module_source("explorer.js").replace("\\u2016", "\u2016")  # the JS writes \u2016 for ‖
    for label in [*METRIC_LABELS.values(), *READOUT_LABELS.values()]:
        assert label in js, label


def test_a_numpy_index_moves_the_explorer_and_messages_say_what_is_allowed():
    """``ex.query = np.argmax(...)`` is how a reader points at a row: numpy integers are taken;
    a refusal names the trait, the value and the allowed range."""
    ex = scaling_explorer(n=8, d_k=16, seed=2)
    ex.query = np.argmax(ex.weights[:, 0])
    assert type(ex.query) is int and ex.query == int(np.argmax(ex.weights[:, 0]))
    with pytest.raises(traitlets.TraitError, match=r"^query = 99, but there are 8 tokens: choose 0\.\.7$"):
        ex.query = 99
    with pytest.raises(traitlets.TraitError, match=r"^d_k = 3, but d_k is a power of two: choose one of 1, 2, 4"):
        ex.d_k = 3
    with pytest.raises(traitlets.TraitError, match=r"^n_heads = 3, but it is fixed when the figure is built"):
        ex.n_heads = 3


def test_the_still_reads_max_weight_against_the_uniform_row():
    from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer
    fig = scaling_explorer(n=16, d_k=256, scale=False).still()
    curve_ax = fig.axes[3]
    uniform = [ln for ln in curve_ax.lines if ln.get_label() == "_uniform"]
    assert len(uniform) == 1 and uniform[0].get_ydata()[0] == 1 / 16
    assert "uniform row: 1/16" in [t.get_text() for t in curve_ax.texts]
    no_line = scaling_explorer(n=16, d_k=256, scale=False, metric="score_std").still().axes[3]
    assert not [ln for ln in no_line.lines if ln.get_label().startswith("uniform")]   # only for max weight


@pytest.mark.parametrize("metric", ["max_weight", "score_std", "grad_norm"])
def test_the_stills_legend_sits_above_the_curves_not_on_them(metric):
    from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer
    fig = scaling_explorer(n=16, d_k=256, scale=False, metric=metric).still()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = FigureCanvasAgg(fig)
    canvas.draw()                                                  # constrained layout places the legend
    curve_ax = fig.axes[3]
    renderer = canvas.get_renderer()
    legend_box = curve_ax.get_legend().get_window_extent(renderer)
    axes_box = curve_ax.get_window_extent(renderer)
    assert legend_box.y0 >= axes_box.y1 - 1                       # wholly above the plotting area
