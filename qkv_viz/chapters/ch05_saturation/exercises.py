"""Chapter 5 exercises: write one Adam step, size the control run's initialisation, diagnose a model.

Each ``check_*`` returns a ``Feedback``: right or wrong plus a precise hint, never
the answer. Answer cells start with ``None``; a function whose body still
returns ``None`` is "no answer yet", not an error. Worked solutions:
``qkv_viz.chapters.ch05_saturation.solutions``.
"""
from __future__ import annotations

import numpy as np

from qkv_viz.chapters.ch05_saturation.saturation import diagnose
from qkv_viz.chapters.feedback import Feedback, check_close, check_function, no_answer
from qkv_viz.core.attention import attention_scores
from qkv_viz.core.diagnostics import score_std
from qkv_viz.core.projections import init_projection, project

VERDICTS = ("saturated", "uniform", "healthy")
D_MODEL_EX2, D_K_EX2, X_STD_EX2 = 64, 128, 2.0  # exercise 2: a width and inputs the chapter did not train
STUB = "No answer yet: your function still returns None. Write its body, then run the cell again."


# ---------------------------------------------------------------- exercise 1: one Adam step
def adam_step_reference(w, g, m, v, t, lr, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8):
    """One Adam update (torch.optim.Adam's defaults): returns (new w, new m, new v), each w's shape."""
    m = b1 * m + (1 - b1) * g  # running mean of the gradient
    v = b2 * v + (1 - b2) * g * g  # running mean of its square
    m_hat, v_hat = m / (1 - b1 ** t), v / (1 - b2 ** t)  # undo the bias towards the zero start
    return w - lr * m_hat / (np.sqrt(v_hat) + eps), m, v


def adam_cases(n: int = 5, seed=None) -> list:
    """(w, g, m, v, t, lr): random shapes, gradients of very different sizes, t = 1 first."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(n):
        shape = tuple(int(s) for s in rng.integers(2, 6, size=2))
        g = rng.normal(size=shape) * 10.0 ** rng.integers(-3, 3)  # sizes from 1e-3 to 1e2
        m = 0.0 * g if i == 0 else 0.5 * rng.normal(size=shape) * np.abs(g).mean()
        v = 0.0 * g if i == 0 else rng.uniform(0.1, 2.0, size=shape) * (g ** 2).mean()
        cases.append((rng.normal(size=shape), g, m, v, 1 if i == 0 else int(rng.integers(2, 50)),
                      float(rng.choice([1e-3, 1e-2]))))
    return cases


def _diagnose_adam(got, want, case):
    w, g, m, v, t, lr = case
    new_w = np.asarray(got[0], dtype=float)
    if np.allclose(new_w, want[0]):
        return None
    m1, v1 = 0.9 * m + 0.1 * g, 0.999 * v + 0.001 * g * g
    variants = {
        "no bias correction: divide m by (1 - b1**t) and v by (1 - b2**t) before using them":
            w - lr * m1 / (np.sqrt(v1) + 1e-8),
        "the step uses the raw gradient g; Adam steps along the running mean m_hat":
            w - lr * g / (np.sqrt(v1 / (1 - 0.999 ** t)) + 1e-8),
        "the step is divided by v_hat; divide by its square root (plus eps)":
            w - lr * (m1 / (1 - 0.9 ** t)) / (v1 / (1 - 0.999 ** t) + 1e-8),
        "the update has the wrong sign: w moves AGAINST the gradient (w - lr * ...)":
            2 * w - want[0],
        "that is plain gradient descent (w - lr * g): Adam divides by the gradient's running size":
            w - lr * g,
    }
    for message, wrong in variants.items():
        if np.allclose(new_w, wrong):
            return message + f" (case with t = {t})."
    return None


def check_adam_step(fn, seed=None) -> Feedback:
    """Exercise 1: ``fn(w, g, m, v, t, lr)`` returns (new w, new m, new v) of one Adam step."""
    cases = adam_cases(seed=seed)
    if callable(fn):
        try:
            if fn(*cases[0]) is None:
                return Feedback(False, STUB, pending=True)
        except Exception:  # noqa: BLE001 - check_function reports the reader's error precisely
            pass
    return check_function(fn, adam_step_reference, cases, name="your adam_step", diagnose=_diagnose_adam)


# ---------------------------------------------------------------- exercise 2: the control's init
def control_init_std_for(d_model: int, d_k: int, x_std: float = 1.0) -> float:
    """Init std of W_q, W_k giving unscaled scores std 1, for inputs x whose entries have std ``x_std``.

    An entry of q = x W_q has variance d_model * x_std^2 * std^2; q . k adds d_k products, so
    Var(q . k) = d_k * (d_model * x_std^2 * std^2)^2 = 1  =>  std = 1 / (x_std * sqrt(d_model) * d_k^(1/4)).
    """
    return 1.0 / (x_std * np.sqrt(d_model) * d_k ** 0.25)


def _start_spread(std: float) -> float:
    """Std of the unscaled scores at step 0 with init ``std``, for exercise 2's sizes and inputs."""
    return D_MODEL_EX2 * X_STD_EX2 ** 2 * std ** 2 * np.sqrt(D_K_EX2)


def check_control_init_std(answer) -> Feedback:
    """Exercise 2: init std of W_q, W_k (d_model 64, inputs of std 2) giving unscaled scores std 1 at d_k = 128."""
    if answer is None:
        return no_answer()
    expected = control_init_std_for(D_MODEL_EX2, D_K_EX2, X_STD_EX2)
    fb = check_close(answer, expected, rtol=0.02, atol=0.0,
                     hint="an entry of q = x W_q has variance d_model * Var(x) * std^2; q . k adds d_k products, "
                          "so Var(q . k) = d_k * (d_model * Var(x) * std^2)^2. Set it to 1 and solve for std.")
    if fb.correct or fb.pending:
        return fb
    try:
        std = float(answer)
    except (TypeError, ValueError):
        return fb
    note = ""
    if np.isclose(std, control_init_std_for(D_MODEL_EX2, D_K_EX2), rtol=0.02):
        note = "That is the std for inputs of variance 1; here each entry of x has variance 4. "
    return Feedback(False, f"With that std the unscaled scores would start with std {_start_spread(std):.3g}, "
                           "not 1. " + note + fb.message)


# ---------------------------------------------------------------- exercise 3: a mystery model
def mystery_scores(seed: int = 5) -> np.ndarray:
    """Scores (16, 16) from a model the exercise asks you to diagnose (seeded).

    16 tokens with unit-variance embeddings (d_model 256) projected by W_q, W_k
    (256, 64) from an initialisation you are not told, then scaled by 1/sqrt(d_k).
    """
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((16, 256))  # (T, d_model)
    W_q = init_projection(256, 64, seed=seed + 1, std=0.01)  # (d_model, d_k)
    W_k = init_projection(256, 64, seed=seed + 2, std=0.01)
    return attention_scores(project(x, W_q), project(x, W_k), scale=True)  # (T, T)


def check_mystery(answer, seed: int = 5) -> Feedback:
    """Exercise 3: diagnose ``mystery_scores(seed)``: "saturated", "uniform" or "healthy"."""
    if answer is None:
        return no_answer()
    answer = str(answer).strip().lower()
    if answer not in VERDICTS:
        return Feedback(False, f"Answer with one of {VERDICTS}.")
    if answer == diagnose(mystery_scores(seed)):
        return Feedback(True, f"The spread of the scores (row std {score_std(mystery_scores(seed)).mean():.2g}) "
                              "gives it away.")
    return Feedback(False, "Hint: compute qkv_viz.score_std(scores).mean() and softmax a row; "
                           "compare with the step-0 numbers of the runs above.")
