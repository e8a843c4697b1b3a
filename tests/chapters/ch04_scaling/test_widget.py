import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from qkv_viz.chapters.ch04_scaling import explorer as E  # noqa: E402
from qkv_viz import scaled_dot_product_attention, summarize  # noqa: E402
from qkv_viz.chapters.ch04_scaling.widget import pick_backend, scaling_explorer  # noqa: E402

BACKENDS = ["png", "ipympl"]  # an ipympl Canvas works without a kernel (dummy comm)


def expected_weights(n, d_k, scale=True, temperature=1.0, seed=0, n_heads=1, head=0):
    """Independent computation: the documented draw, then the math core."""
    wide = np.random.default_rng(seed).standard_normal((2, n_heads, n, E.D_MAX), dtype=np.float32)
    q = wide[0, :, :, :d_k].astype(np.float64)  # (H, n, d_k)
    k = wide[1, :, :, :d_k].astype(np.float64)
    scores = q @ k.swapaxes(-1, -2) * (1 / np.sqrt(d_k) if scale else 1.0)  # (H, n, n)
    _, weights = scaled_dot_product_attention(q, k, k, scale=scale, temperature=temperature)
    return scores[head], weights[head]


def assert_shows(ex, **settings):
    scores, weights = expected_weights(**settings)
    np.testing.assert_allclose(ex.image.get_array(), weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ex.scores, scores, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ex.weights, ex.image.get_array())
    ref = summarize(scores, weights)
    for key, value in ref.items():
        assert ex.metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("backend", BACKENDS)
def test_controls_drive_the_picture(backend):
    ex = scaling_explorer(n=8, d_k=4, backend=backend)
    assert ex.backend == backend
    assert_shows(ex, n=8, d_k=4)
    ex.d_k.value = 256
    assert_shows(ex, n=8, d_k=256)
    ex.scale.value = False
    assert_shows(ex, n=8, d_k=256, scale=False)
    assert "not scaled" in ex.scale.description and "no scaling" in ex.readouts.value
    ex.temperature.value = 2.5
    assert_shows(ex, n=8, d_k=256, scale=False, temperature=2.5)
    ex.seed.value = 7
    assert_shows(ex, n=8, d_k=256, scale=False, temperature=2.5, seed=7)
    ex.n.value = 20
    assert ex.image.get_array().shape == (20, 20)
    assert ex.image.get_extent() == [-0.5, 19.5, 19.5, -0.5]
    assert_shows(ex, n=20, d_k=256, scale=False, temperature=2.5, seed=7)
    assert ex.message.value == ""
    assert ex.image.get_clim() == (0.0, 1.0)


def test_heads_and_large_n_path():
    ex = scaling_explorer(n=520, d_k=16, n_heads=3, backend="png")  # n > KEEP_WEIGHTS_N: weights not kept
    assert ex.head.options == (0, 1, 2)
    ex.head.value = 2
    assert_shows(ex, n=520, d_k=16, n_heads=3, head=2)
    ex.d_k.value = 1
    assert_shows(ex, n=520, d_k=1, n_heads=3, head=2)
    assert "heatmap shows" in ex.readouts.value  # 520 cells > the heatmap's pixels


def test_readouts_and_curves_match_diagnostics():
    ex = scaling_explorer(n=12, d_k=64, backend="png")
    html = ex.readouts.value
    assert f"{ex.metrics['max_weight']:.3f}" in html and "of 12" in html
    for i, d_k in enumerate(E.D_KS[::3]):
        for scale, col in ((True, "scaled"), (False, "unscaled")):
            scores, weights = expected_weights(12, d_k, scale)
            ref = summarize(scores, weights)
            j = E.D_KS.index(d_k)
            for key in E.METRICS:
                assert ex.curves[key][col][j] == pytest.approx(ref[key], rel=1e-9), (key, d_k)
    # the marker sits on the current point of the drawn curve
    assert ex.view.marker.get_xdata()[0] == 64
    assert ex.view.marker.get_ydata()[0] == pytest.approx(ex.metrics["max_weight"])
    ex.metric.value = "score_std"
    np.testing.assert_allclose(ex.view.line_unscaled.get_ydata(), ex.curves["score_std"]["unscaled"])
    assert ex.view.ax_m.get_yscale() == "log"


@pytest.mark.parametrize("control, bad", [("temperature", -1.0), ("temperature", 0.0),
                                          ("n", 0), ("n", 5000), ("seed", -3)])
def test_bad_values_show_a_message_and_keep_the_picture(control, bad):
    ex = scaling_explorer(n=6, d_k=8, backend="png")
    before = ex.image.get_array().copy()
    png_before = ex.canvas.value
    getattr(ex, control).value = bad
    named = {"temperature": "temperature", "n": "sequence length n", "seed": "seed"}[control]
    assert named in ex.message.value
    np.testing.assert_array_equal(ex.image.get_array(), before)
    assert ex.canvas.value == png_before
    assert ex.settings[control] != bad
    ex.d_k.value = 32  # other controls still checked against the bad value: still refused
    assert ex.message.value != ""
    getattr(ex, control).value = {"temperature": 1.0, "n": 6, "seed": 0}[control]
    assert ex.message.value == ""
    assert_shows(ex, n=6, d_k=32)


def test_png_backend_sends_a_new_frame_per_step():
    ex = scaling_explorer(n=16, d_k=1, backend="png")
    first = ex.canvas.value
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    draws = ex.view.draws
    ex.d_k.value = 1024
    ex.scale.value = False
    assert ex.view.draws == draws + 2
    assert ex.canvas.value != first


@pytest.mark.parametrize("backend", BACKENDS)
def test_blitted_frame_equals_a_full_redraw(backend):
    ex = scaling_explorer(n=10, d_k=2, backend=backend)
    ex.d_k.value = 512  # blit: background + image + marker
    canvas = ex.figure.canvas
    blitted = np.asarray(canvas.buffer_rgba()).copy()
    canvas.draw()
    np.testing.assert_array_equal(np.asarray(canvas.buffer_rgba()), blitted)


def test_ipympl_canvas_is_bare_and_pushes_frames():
    ex = scaling_explorer(n=16, backend="ipympl")
    # `import ipympl` switches pyplot to ipympl unless prevented; the book's static
    # figures must stay static (here: Agg, set at the top of this module)
    assert "ipympl" not in matplotlib.get_backend()
    canvas = ex.canvas
    assert not canvas.header_visible and not canvas.footer_visible
    assert canvas.toolbar_visible is False and canvas.resizable is False
    # without a browser view the whole frame lives in the widget state, as a data: URL
    assert canvas._data_url.startswith("data:image/png;base64,")
    assert tuple(canvas._size) == tuple(ex.figure.bbox.size)
    sent = []
    canvas.send_binary = sent.append
    ex.d_k.value = 2
    assert len(sent) == 1 and sent[0][:4] == b"\x89PNG"
    assert canvas._image_mode == "diff"  # only changed pixels travel


def test_css_classes_layout_and_display():
    ex = scaling_explorer(backend="png")
    classes = {name: getattr(ex, name)._dom_classes for name in
               ("d_k", "scale", "readouts", "canvas", "message", "widget")}
    assert "qkv-dk-slider" in classes["d_k"] and "qkv-scale-toggle" in classes["scale"]
    assert "qkv-readouts" in classes["readouts"] and "qkv-heatmap" in classes["canvas"]
    assert "qkv-message" in classes["message"] and "qkv-explorer" in classes["widget"]
    assert ex.head.layout.display == "none"  # one head: nothing to choose
    bundle = ex._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == ex.widget.model_id


def test_no_pyplot_figure_is_left_behind():
    before = set(plt.get_fignums())
    ex = scaling_explorer(backend="png")
    ex.d_k.value = 8
    assert set(plt.get_fignums()) == before
    ex.close()


def test_backend_choice_and_construction_errors():
    assert pick_backend("auto") == "png"  # plain pytest: no kernel
    assert pick_backend("inline") == "png" and pick_backend("ipympl") == "ipympl"
    with pytest.raises(ValueError, match="backend"):
        pick_backend("qt")
    with pytest.raises(ValueError, match="d_k"):
        scaling_explorer(d_k=100)
    with pytest.raises(ValueError, match="n_heads"):
        scaling_explorer(n_heads=9)


def test_draw_uses_prefix_columns_of_one_wide_draw():
    q8, k8 = E.draw_qk(3, 2, 5, 8)
    q1024, k1024 = E.draw_qk(3, 2, 5, 1024)
    assert q8.shape == (2, 5, 8) and q8.dtype == np.float64
    np.testing.assert_array_equal(q8, q1024[..., :8])
    np.testing.assert_array_equal(k8, k1024[..., :8])
    assert not np.array_equal(q8, k8)


def test_auto_picks_ipympl_inside_a_kernel():
    """Executed by a real Jupyter kernel (nbclient): "auto" must choose ipympl there."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    code = ("from qkv_viz.chapters.ch04_scaling.widget import scaling_explorer\n"
            "ex = scaling_explorer(n=8, d_k=2)\n"
            "ex.d_k.value = 128\n"
            "print(ex.backend, type(ex.canvas).__mro__[1].__name__, ex.image.get_array().shape, "
            "repr(ex.message.value))\n"
            "ex")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nbclient.NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert text.split() == ["ipympl", "Canvas", "(8,", "8)", "''"]
    shown = [o for o in outputs if o.output_type == "execute_result"]
    assert "application/vnd.jupyter.widget-view+json" in shown[0].data


def test_a_tiny_temperature_is_the_hard_lookup_not_an_error():
    ex = scaling_explorer(n=6, d_k=8, backend="png")
    ex.temperature.value = 1e-310
    assert ex.message.value == ""
    weights = ex.image.get_array()
    np.testing.assert_array_equal(weights.max(axis=-1), 1.0)  # one-hot rows
