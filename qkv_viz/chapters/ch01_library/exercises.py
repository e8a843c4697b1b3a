"""Chapter 1 exercises: the library analogy (demo library, demo query)."""
from __future__ import annotations

from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library, hard_lookup, soft_lookup
from qkv_viz.chapters.feedback import Feedback, check_close

NO_ANSWER = "Replace None with your answer, then run the cell again."


def check_hard_pick(answer) -> Feedback:
    """Which book (title, or its index 0..4) does a hard lookup return for the demo query?"""
    lib = demo_library()
    best = hard_lookup(DEMO_QUERY, lib)
    hint = ("compute query . key for every book and take the largest; "
            "the temperature -> 0 end of the slider shows the same pick.")
    if answer is None:
        return Feedback(False, NO_ANSWER)
    if isinstance(answer, str):
        if answer.strip().lower() == lib.titles[best].lower():
            return Feedback(True, "That is the book with the largest score.")
        if answer.strip().lower() not in (t.lower() for t in lib.titles):
            return Feedback(False, f"That is not a title in the library. Hint: {hint}")
        return Feedback(False, f"That book scores lower than another one. Hint: {hint}")
    if isinstance(answer, int) and not isinstance(answer, bool):
        if answer == best:
            return Feedback(True, "That is the book with the largest score.")
        return Feedback(False, f"Index {answer} is not the top-scoring book. Hint: {hint}")
    return Feedback(False, f"Give a title (str) or an index (int). Hint: {hint}")


def check_hot_weight(answer) -> Feedback:
    """At a huge temperature (say 1e6), what weight does each of the five books get?"""
    lib = demo_library()
    if answer is None:
        return Feedback(False, NO_ANSWER)
    expected = soft_lookup(DEMO_QUERY, lib, 1e6)[1][0]
    return check_close(answer, expected, rtol=0, atol=1e-3,
                       hint="dividing the scores by a huge number makes them all nearly 0; "
                            "what does softmax give for equal scores?")


def check_blend(answer) -> Feedback:
    """The blended value (3 numbers) that soft attention returns at temperature 1."""
    lib = demo_library()
    if answer is None:
        return Feedback(False, NO_ANSWER)
    expected = soft_lookup(DEMO_QUERY, lib, 1.0)[0]
    return check_close(answer, expected, rtol=0, atol=5e-3,
                       hint="weights = softmax(keys @ query); the output is weights @ values, "
                            "a vector of length 3.")
