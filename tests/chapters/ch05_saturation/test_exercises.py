"""Chapter 5 exercises: each worked solution passes its checker, each placeholder is "no answer yet",
and typical mistakes get a precise message."""
import numpy as np
import pytest
import torch

from qkv_viz.chapters.ch05_saturation import exercises as ch05
from qkv_viz.chapters.ch05_saturation import solutions as sol
from qkv_viz.chapters.ch05_saturation.saturation import Adam, diagnose


def _stub(*args):
    return None  # the answer cell as the reader finds it


def test_solutions_pass_their_checkers():
    for _ in range(3):  # fresh random cases on every call
        assert ch05.check_adam_step(sol.adam_step)
    assert ch05.check_control_init_std(sol.CONTROL_INIT_STD_128)
    assert ch05.check_mystery(sol.MYSTERY)


@pytest.mark.parametrize("check", [ch05.check_adam_step, ch05.check_control_init_std, ch05.check_mystery])
def test_placeholder_is_pending(check):
    fb = check(None)
    assert not fb.correct and fb.pending and "No answer yet" in fb.message


def test_stub_function_is_pending():
    fb = ch05.check_adam_step(_stub)
    assert not fb.correct and fb.pending


def test_reference_adam_step_is_torchs_adam():
    """The checker's truth is the package's Adam (which test_saturation ties to torch.optim.Adam)."""
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(4, 3))
    p = torch.tensor(w0, requires_grad=True)
    opt = Adam([p], lr=1e-2)
    w, m, v = w0.copy(), np.zeros_like(w0), np.zeros_like(w0)
    for t in range(1, 6):
        g = rng.normal(size=(4, 3)) * 10.0 ** (t - 3)
        p.grad = torch.tensor(g)
        opt.step()
        w, m, v = ch05.adam_step_reference(w, g, m, v, t, 1e-2)
        np.testing.assert_allclose(p.detach().numpy(), w, rtol=1e-12, atol=1e-12)


def test_first_adam_step_moves_every_entry_by_lr():
    g = np.array([[1e-4, -3.0], [250.0, -0.02]])
    w, _, _ = ch05.adam_step_reference(np.zeros_like(g), g, 0 * g, 0 * g, 1, 1e-3)
    np.testing.assert_allclose(w, -1e-3 * np.sign(g), rtol=1e-4)


def _no_bias_correction(w, g, m, v, t, lr):
    m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
    return w - lr * m / (np.sqrt(v) + 1e-8), m, v


def _no_sqrt(w, g, m, v, t, lr):
    m, v = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
    return w - lr * (m / (1 - 0.9 ** t)) / (v / (1 - 0.999 ** t) + 1e-8), m, v


@pytest.mark.parametrize("wrong, says", [
    (_no_bias_correction, "no bias correction"),
    (_no_sqrt, "square root"),
    (lambda w, g, m, v, t, lr: (w - lr * g, m, v), "plain gradient descent"),
    (lambda w, g, m, v, t, lr: (2 * w - sol.adam_step(w, g, m, v, t, lr)[0],) + sol.adam_step(w, g, m, v, t, lr)[1:],
     "wrong sign"),
    (lambda w, g, m, v, t, lr: sol.adam_step(w, g, m, v, t, lr)[0], "returned 1 value"),
])
def test_adam_mistakes_are_named(wrong, says):
    fb = ch05.check_adam_step(wrong, seed=0)
    assert not fb.correct and not fb.pending
    assert says in fb.message, fb.message


def test_control_init_std_wrong_answers_say_the_resulting_spread():
    default = 1 / np.sqrt(64)  # the usual init: with inputs of variance 4, scores would have std 4 sqrt(128)
    fb = ch05.check_control_init_std(default)
    assert not fb.correct and f"{4 * np.sqrt(128):.3g}" in fb.message
    assert format(sol.CONTROL_INIT_STD_128, ".3g") not in fb.message
    assert not ch05.check_control_init_std("small").correct


def test_control_init_std_unit_input_answer_is_told_about_the_inputs():
    from qkv_viz.chapters.ch05_saturation.saturation import control_init_std
    unit = control_init_std(64, 128)  # the chapter's formula, for unit-variance inputs
    fb = ch05.check_control_init_std(unit)
    assert not fb.correct and "variance 4" in fb.message and f"{4:.3g}" in fb.message


def test_control_init_std_for_gives_unit_spread():
    rng = np.random.default_rng(0)
    std = ch05.control_init_std_for(64, 128, x_std=2.0)
    x = 2.0 * rng.standard_normal((400, 64))  # (n, d_model), entries of variance 4
    q = x @ (std * rng.standard_normal((64, 128)))  # (n, 64) @ (64, 128) -> (n, 128)
    k = x @ (std * rng.standard_normal((64, 128)))
    assert np.std(q @ k.T) == pytest.approx(1.0, rel=0.1)  # (n, 128) @ (128, n) -> (n, n)
    assert ch05.control_init_std_for(64, 128) == pytest.approx(2 * std)


def test_mystery_is_judged_by_diagnose():
    truth = diagnose(ch05.mystery_scores())
    assert truth == sol.MYSTERY
    assert not any(ch05.check_mystery(v) for v in ch05.VERDICTS if v != truth)
    wrong = ch05.check_mystery("neither")
    assert not wrong and "one of" in wrong.message
