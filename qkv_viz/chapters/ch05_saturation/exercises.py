"""Chapter 5 exercises: the saturation bug (score spread, symptoms, a diagnosis)."""
from __future__ import annotations

import numpy as np

from qkv_viz.core.attention import attention_scores
from qkv_viz.core.diagnostics import score_std
from qkv_viz.core.projections import init_projection, project
from qkv_viz.chapters.feedback import Feedback, check_close

NO_ANSWER = "Replace None with your answer, then run the cell again."
SYMPTOMS = ("uniform", "one-hot")
VERDICTS = ("saturated", "uniform", "healthy")


def check_score_std(answer, d_k: int = 512) -> Feedback:
    """Std of unscaled scores q . k at initialisation when q and k have unit-variance entries."""
    if answer is None:
        return Feedback(False, NO_ANSWER)
    return check_close(answer, np.sqrt(d_k), rtol=0.03, atol=0.0,
                       hint=f"q . k adds up {d_k} independent products of variance 1; "
                            "variances of independent terms add, and the std is a square root.")


def check_symptoms(missing_scale, tiny_logits) -> Feedback:
    """Which attention rows does each cause give: "uniform" or "one-hot"?"""
    if missing_scale is None or tiny_logits is None:
        return Feedback(False, NO_ANSWER)
    answers = [str(a).strip().lower() for a in (missing_scale, tiny_logits)]
    if any(a not in SYMPTOMS for a in answers):
        return Feedback(False, f"Answer each with one of {SYMPTOMS}.")
    if answers == ["one-hot", "uniform"]:
        return Feedback(True, "Missing 1/sqrt(d_k) at large d_k spreads the scores far apart; "
                              "tiny logits leave them all about equal.")
    return Feedback(False, "Not both right. Hint: softmax of scores that are all about equal, "
                           "versus softmax of scores tens of units apart; look at the step-0 "
                           "heatmaps of the runs above.")


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
    """Diagnose ``mystery_scores(seed)``: "saturated", "uniform" or "healthy"."""
    from qkv_viz.chapters.ch05_saturation.saturation import diagnose  # torch is only needed here

    if answer is None:
        return Feedback(False, NO_ANSWER)
    answer = str(answer).strip().lower()
    if answer not in VERDICTS:
        return Feedback(False, f"Answer with one of {VERDICTS}.")
    if answer == diagnose(mystery_scores(seed)):
        return Feedback(True, f"The spread of the scores (row std {score_std(mystery_scores(seed)).mean():.2g}) "
                              "gives it away.")
    return Feedback(False, "Hint: compute qkv_viz.score_std(scores).mean() and softmax a row; "
                           "compare with the step-0 numbers of the three runs above.")
