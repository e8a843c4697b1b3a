"""Chapter 1 checkers: every solution passes, every placeholder is "no answer yet",
typical mistakes are named precisely, and no hint gives the answer away."""
import numpy as np
import pytest

from qkv_viz.chapters.ch01_library import exercises as ch01
from qkv_viz.chapters.ch01_library import solutions
from qkv_viz.chapters.ch01_library.library import DEMO_QUERY, demo_library, soft_lookup


def stub(query, keys, values, temperature):
    raise NotImplementedError  # the notebook's placeholder


CHECKS = [  # (checker, solution)
    (ch01.check_soft_lookup, solutions.soft_lookup),
    (ch01.check_new_query_weights, solutions.NEW_QUERY_WEIGHTS),
    (ch01.check_robot_chefs_weight, solutions.ROBOT_CHEFS_WEIGHT),
    (ch01.check_doubled_query_temperature, solutions.DOUBLED_QUERY_TEMPERATURE),
    (ch01.check_determiner_key, solutions.DETERMINER_KEY),
]


@pytest.mark.parametrize("check, solution", CHECKS)
def test_every_solution_passes_its_checker(check, solution):
    fb = check(solution)
    assert fb and not fb.pending, fb.message


@pytest.mark.parametrize("check, placeholder", [(c, None) for c, _ in CHECKS]
                         + [(ch01.check_soft_lookup, stub)])
def test_placeholders_are_no_answer_yet_not_errors(check, placeholder):
    fb = check(placeholder)
    assert not fb and fb.pending
    assert "No answer yet" in repr(fb) and "✘" not in repr(fb)


@pytest.mark.parametrize("seed", range(5))
def test_soft_lookup_solution_passes_on_any_fresh_cases(seed):
    assert ch01.check_soft_lookup(solutions.soft_lookup, seed=seed)


def _stable(scores, t):
    e = np.exp((scores - scores.max()) / t)
    return e / e.sum()


MISTAKES = {  # a reader's wrong function -> words the feedback must contain
    "temperature ignored": (lambda q, k, v, t: (_stable(k @ q, 1.0) @ v, _stable(k @ q, 1.0)),
                            "temperature is ignored"),
    "times temperature": (lambda q, k, v, t: (_stable(k @ q * t * t, t) @ v, _stable(k @ q * t * t, t)),
                          "multiplied the scores by the temperature"),
    "rows not summing to 1": (lambda q, k, v, t: (np.exp(k @ q / t) @ v, np.exp(k @ q / t)),
                              "sum to"),
    "naive exp overflows": (lambda q, k, v, t: ((np.exp(k @ q / t) / np.exp(k @ q / t).sum()) @ v,
                                                np.exp(k @ q / t) / np.exp(k @ q / t).sum()),
                            "subtract the largest score"),
    "extra sqrt(d_k)": (lambda q, k, v, t: (_stable(k @ q / np.sqrt(len(q)), t) @ v,
                                           _stable(k @ q / np.sqrt(len(q)), t)), "sqrt(d_k)"),
    "plain average": (lambda q, k, v, t: (v.mean(axis=0), _stable(k @ q, t)), "plain average"),
    "swapped results": (lambda q, k, v, t: solutions.soft_lookup(q, k, v, t)[::-1], "swapped"),
    "only the output": (lambda q, k, v, t: solutions.soft_lookup(q, k, v, t)[0], "return both"),
    "blends the keys": (lambda q, k, v, t: (_stable(k @ q, t) @ k, _stable(k @ q, t)), "shape"),
    "forgot return": (lambda q, k, v, t: None, "forget `return`"),
    "crashes": (lambda q, k, v, t: np.reshape(q, (7, 7, 7)), "raised ValueError"),
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_soft_lookup_mistakes_are_named(name):
    fn, words = MISTAKES[name]
    fb = ch01.check_soft_lookup(fn, seed=0)
    assert not fb and not fb.pending
    assert words in fb.message, fb.message


def test_conceptual_answers_refuse_the_numbers_the_page_prints():
    lib = demo_library()
    printed_weights = soft_lookup(DEMO_QUERY, lib, 1.0)[1]  # the page prints these
    assert not ch01.check_new_query_weights(printed_weights)
    assert not ch01.check_new_query_weights(np.full(5, 0.2))
    assert not ch01.check_new_query_weights([0.1, 0.2])
    robot = lib.titles.index("Robot Chefs")
    for t in (0.3, 1.0):  # temperatures whose weights the page prints
        assert not ch01.check_robot_chefs_weight(soft_lookup(DEMO_QUERY, lib, t)[1][robot])
    for wrong in (1.0, 0.5, 4.0, -2.0, "two"):
        assert not ch01.check_doubled_query_temperature(wrong)


def test_hints_do_not_give_the_answer():
    answer = f"{solutions.ROBOT_CHEFS_WEIGHT:.2f}"
    assert answer not in ch01.check_robot_chefs_weight(0.5).message
    fb = ch01.check_new_query_weights(np.full(5, 0.2))
    assert all(f"{w:.2f}" not in fb.message for w in solutions.NEW_QUERY_WEIGHTS if w > 0.05)
    msg = ch01.check_doubled_query_temperature(1.0).message
    assert "temperature 2" not in msg and "2.0" not in msg and "divid" not in msg


def test_exercises_ask_for_cases_the_page_does_not_print():
    assert not np.allclose(ch01.NEW_QUERY, DEMO_QUERY)
    assert ch01.NEW_TEMPERATURE not in (0.1, 0.3, 1, 3, 10, 1e6)  # the notebook's table


def test_determiner_key_needs_cat_to_read_the_strictly_most():
    tokens = ch01.toy_sentence()[0]
    cat, the = tokens.index("cat"), tokens.index("the")
    w = ch01.toy_weights_with_determiner_key(solutions.DETERMINER_KEY)
    assert w[cat].argmax() == the and np.allclose(w.sum(axis=1), 1)
    # the page's own key (0, 0), a tie with "sat" (0, 2), and a noun-ish key all fail, naming the rival
    for wrong in ([0.0, 0.0], [0.0, 2.0], [5.0, 0.0]):
        fb = ch01.check_determiner_key(wrong)
        assert not fb and not fb.pending and '"sat"' in fb.message, fb.message
    for malformed in ([1.0, 2.0, 3.0], "two", [np.nan, 3.0]):
        fb = ch01.check_determiner_key(malformed)
        assert not fb and not fb.pending
    assert "3" not in ch01.check_determiner_key([0.0, 0.0]).message.split("Hint")[1]
